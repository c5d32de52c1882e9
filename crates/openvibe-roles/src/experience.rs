//! What happened, as experience a role learns from (issue 64).
//!
//! - A person's **rejection** of one of the role's proposals becomes an
//!   episode (tagged [`REJECTED_TAG`], the reason in it) that reflection
//!   reads and decisions weigh against; the latest verdict on proposals of
//!   an action, when it is a rejection, stands ([`StandingRejection`]).
//! - A run whose **result was a setback** (a tool answering
//!   `{"status": "stalled", …}`, see [`SETBACK_STATUSES`]) is recorded as
//!   such, with the beliefs and insights its decision cited (`decided_on`),
//!   so that the next like decision weighs it against them.
//! - Either, and a failed run, is a **lesson**: the loop reflects and
//!   learns after it ([`Learning::after_setbacks`](crate::Learning)).

use std::collections::BTreeMap;

use openvibe_memory::{MemoryError, REJECTED_TAG, SETBACK_STATUSES};
use openvibe_protocols::{Episode, Proposal, ProposalQuery, ProposalStatus, truncate_chars};
use serde_json::{Value, json};

use crate::decision::StandingRejection;
use crate::{Error, Role};

/// How many of the role's newest proposals a decision reads the people's
/// verdicts from.
pub const VERDICT_HISTORY: usize = 50;

/// The episode id of the rejection of proposal `proposal_id`.
pub fn rejection_episode_id(proposal_id: &str) -> String {
    format!("rejected-{proposal_id}")
}

/// A run's result, read once: the setback status it reports (a JSON
/// object, or a JSON text of one, with a `status` among
/// [`SETBACK_STATUSES`]) and its text (its `result`, or `summary`, when it
/// has one, else the whole result).
pub fn read_result(output: &Value) -> (Option<String>, String) {
    let parsed = structured(output);
    let field = |key: &str| {
        parsed
            .as_deref()
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
    };
    let setback = field("status")
        .filter(|s| SETBACK_STATUSES.contains(s))
        .map(str::to_owned);
    let text = match (field("result").or_else(|| field("summary")), output) {
        (Some(text), _) => text.to_owned(),
        (None, Value::String(text)) => text.clone(),
        (None, other) => other.to_string(),
    };
    (setback, text)
}

/// A run's result as JSON: a text that is JSON parsed, any other value as
/// it is (`None`: a text that is not JSON).
fn structured(output: &Value) -> Option<std::borrow::Cow<'_, Value>> {
    match output {
        Value::String(text) => serde_json::from_str(text).ok().map(std::borrow::Cow::Owned),
        other => Some(std::borrow::Cow::Borrowed(other)),
    }
}

/// The episode that records `proposal`'s rejection.
fn rejection_episode(role_id: &str, proposal: &Proposal, action: &str) -> Episode {
    let by = proposal.decided_by.clone().unwrap_or_default();
    let reason = proposal.reason.clone().unwrap_or_default();
    let event = proposal.decision.as_ref().map(|d| &d.event);
    Episode {
        id: rejection_episode_id(&proposal.id),
        agent_id: role_id.to_owned(),
        operator_id: "people".to_owned(),
        node_name: "verdict".to_owned(),
        timestamp: proposal.decided_at.unwrap_or(proposal.meta.updated_at),
        action: action.to_owned(),
        input_summary: truncate_chars(
            &event.map_or_else(
                || proposal.summary.clone(),
                |e| format!("{}: {}", e.kind, e.summary),
            ),
            500,
        )
        .to_owned(),
        output_summary: truncate_chars(&format!("rejected by {by}: {reason}"), 500).to_owned(),
        outcome: json!({
            "status": "rejected",
            "proposal": proposal.id,
            "by": by,
            "reason": reason,
        }),
        entity: event.map(|e| e.entity.clone()).unwrap_or_default(),
        domain: proposal.domain.clone(),
        tags: vec![REJECTED_TAG.to_owned()],
        external_id: Some(format!("proposal:{}", proposal.id)),
        ..Episode::default()
    }
}

impl Role {
    /// The people's verdicts on the role's newest proposals (at most
    /// [`VERDICT_HISTORY`]; a belief's proposals left out): each rejection
    /// recorded once as an episode, and the rejections that stand, by
    /// action. Without a proposal store or agent memory: none.
    pub(crate) async fn observe_verdicts(
        &self,
    ) -> Result<BTreeMap<String, StandingRejection>, Error> {
        self.verdicts(true).await
    }

    /// [`observe_verdicts`](Self::observe_verdicts), recording the new
    /// rejections' episodes only when `record`.
    pub(crate) async fn verdicts(
        &self,
        record: bool,
    ) -> Result<BTreeMap<String, StandingRejection>, Error> {
        let (Some(proposals), Some(memory)) = (self.proposals(), self.agent_memory()) else {
            return Ok(BTreeMap::new());
        };
        let page = proposals
            .list(
                &self.proposal_context(),
                &ProposalQuery::new()
                    .role(self.role_id().to_owned())
                    .limit(VERDICT_HISTORY),
            )
            .await
            .map_err(MemoryError::from)?;
        let mut latest: BTreeMap<&str, &Proposal> = BTreeMap::new();
        for proposal in &page.items {
            let (Some(action), Some(at)) = (&proposal.action, proposal.decided_at) else {
                continue;
            };
            if proposal.belief_id().is_some() {
                continue;
            }
            if record && proposal.status == ProposalStatus::Rejected {
                let id = rejection_episode_id(&proposal.id);
                if self.experience.first_sight(&id) && memory.get_episode(&id).await?.is_none() {
                    memory
                        .record_episode(rejection_episode(self.role_id(), proposal, &action.action))
                        .await?;
                    self.experience.note_lesson();
                }
            }
            let newer = latest
                .get(action.action.as_str())
                .is_none_or(|seen| seen.decided_at.is_some_and(|t| t < at));
            if newer {
                latest.insert(action.action.as_str(), proposal);
            }
        }
        Ok(latest
            .into_iter()
            .filter(|(_, p)| p.status == ProposalStatus::Rejected)
            .map(|(action, p)| {
                (
                    action.to_owned(),
                    StandingRejection {
                        proposal_id: p.id.clone(),
                        episode_id: rejection_episode_id(&p.id),
                        by: p.decided_by.clone().unwrap_or_default(),
                        reason: p.reason.clone().unwrap_or_default(),
                    },
                )
            })
            .collect())
    }
}

/// What a role's process keeps of its experience between events: the
/// rejections recorded, the lessons not yet reflected on, the events since
/// the last reflection, and whether it is learning now (once at a time).
#[derive(Debug, Default)]
pub(crate) struct Experience {
    seen: std::sync::Mutex<std::collections::HashSet<String>>,
    lessons: std::sync::atomic::AtomicUsize,
    events: std::sync::atomic::AtomicU32,
    learning: std::sync::atomic::AtomicBool,
    reflected_until: std::sync::Mutex<Option<chrono::DateTime<chrono::Utc>>>,
}

impl Experience {
    /// The newest episode a reflection of the role read in this process.
    pub(crate) fn reflected_until(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.reflected_until.lock().ok().and_then(|t| *t)
    }

    /// A reflection read episodes up to `newest` (none: it read nothing).
    pub(crate) fn reflected(&self, newest: Option<chrono::DateTime<chrono::Utc>>) {
        if let (Ok(mut until), Some(newest)) = (self.reflected_until.lock(), newest) {
            *until = Some(until.map_or(newest, |t| t.max(newest)));
        }
    }

    /// Whether `id` is seen for the first time in this process.
    fn first_sight(&self, id: &str) -> bool {
        self.seen
            .lock()
            .map(|mut seen| seen.insert(id.to_owned()))
            .unwrap_or(true)
    }

    /// Something went against what was decided: reflect after this event.
    pub(crate) fn note_lesson(&self) {
        self.lessons
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// One more event; whether a reflection is due after it: a lesson
    /// waits (when `after_lessons`), or `every` events passed since the
    /// last reflection.
    pub(crate) fn due(&self, after_lessons: bool, every: Option<u32>) -> bool {
        use std::sync::atomic::Ordering;
        let events = self.events.fetch_add(1, Ordering::SeqCst) + 1;
        (after_lessons && self.lessons.load(Ordering::SeqCst) > 0)
            || every.is_some_and(|n| n > 0 && events >= n)
    }

    /// A reflection begins: the lessons and events so far are taken. `None`
    /// when one runs already for the role (learning runs once at a time);
    /// the guard ends it.
    pub(crate) fn begin(&self) -> Option<LearningGuard<'_>> {
        use std::sync::atomic::Ordering;
        self.learning
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .ok()?;
        self.lessons.store(0, Ordering::SeqCst);
        self.events.store(0, Ordering::SeqCst);
        Some(LearningGuard(self))
    }
}

/// A reflection of the role in progress; ends when dropped.
pub(crate) struct LearningGuard<'a>(&'a Experience);

impl Drop for LearningGuard<'_> {
    fn drop(&mut self) {
        self.0
            .learning
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}
