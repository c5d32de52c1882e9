//! Delegation (seed 001, V4): a role asks the owner of a domain for
//! something through a space, and waits for the answer.
//!
//! ```text
//! CRO ── delegate("marketing", "write_case_study", {...}) ──▶ space "team"
//!                                                              │ routed to the owner of `marketing`
//! CMO's loop ◀── the request becomes an event (perceive) ──────┘
//!   decide (its own engine, beliefs, authority) → act (its Content Engine,
//!   a proposal, or nothing) → observe: the answer goes back in the thread
//! CRO ◀── await_answer: the final answer (done, refused, failed) ──┘
//! ```
//!
//! The asker posts a typed request ([`Role::delegate`]); the owning role's
//! [`CognitiveLoop`](crate::CognitiveLoop) reads the requests addressed to
//! it from the space ([`CognitiveLoop::run`](crate::CognitiveLoop::run) feeds
//! them in), decides on each like on any event ([`request_event`]): the
//! task names one of its workflows or tools, which its authority and
//! decision engine gate. Its observe stage answers in the request's thread:
//! `done` with the output, `refused` with the reason, `failed`, or
//! `proposed`/`escalated` while a person decides (the final answer follows
//! when the approved proposal ran). The asker waits for the final answer
//! ([`Role::await_answer`], with a timeout and a typed error), or does both
//! in one call ([`Role::ask`]), which is what an action whose target is
//! [`ActionTarget::Delegate`](openvibe_protocols::ActionTarget::Delegate) and a
//! [`DelegateNode`](openvibe_primitives::DelegateNode) in a workflow run.
//!
//! Request and answer ids are derived from what asked (the event, the
//! proposal, the workflow run), so a retried or resumed step posts the same
//! message again (the space returns the stored one) and nothing runs twice.

use std::sync::Arc;
use std::time::Duration;

use openvibe_primitives::delegation_id;
use openvibe_protocols::{
    ActOutcome, Action, AnswerStatus, DecisionEvent, DelegationAnswer, LoopTrace, MAX_WAIT_MS,
    MessageBody, MessageQuery, Outcome, SpaceMessage, SpaceStore, StoreError,
};
use serde_json::{Value, json};

use crate::{Error, Role};

/// How often, in milliseconds, a wait for an answer looks at the proposal
/// a person is deciding on (its rejection ends the wait).
const PROPOSAL_CHECK_MS: u64 = 2_000;

/// How long [`Role::ask`] waits for an answer unless told otherwise.
pub const DEFAULT_DELEGATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The key of a delegated event's data that says where it came from
/// (`{"space", "request", "from"}`).
pub const DELEGATION_KEY: &str = "delegation";

/// A request a role posted, to wait on ([`Role::await_answer`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    /// The space it was posted in.
    pub space_id: String,
    /// The request as stored (its `to` says who it was routed to; `escalated`
    /// when no member owned the domain and it went to the space's people).
    pub request: SpaceMessage,
}

impl Delegation {
    /// The request's id (its thread's).
    pub fn id(&self) -> &str {
        &self.request.id
    }
}

/// Where a delegated event came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The space.
    pub space_id: String,
    /// The request message's id.
    pub request: String,
    /// Its author (an owner key): the answer goes to it.
    pub from: String,
}

impl Origin {
    /// The origin an event's data names ([`DELEGATION_KEY`]), when it is a
    /// delegated request's event.
    pub fn of(event: &DecisionEvent) -> Option<Self> {
        let d = event.data.get(DELEGATION_KEY)?;
        let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Self {
            space_id: text("space")?,
            request: text("request")?,
            from: text("from")?,
        })
    }
}

/// The id of the event a request message becomes in its owner's loop.
pub fn request_event_id(space_id: &str, message_id: &str) -> String {
    format!("space:{space_id}:{message_id}")
}

/// The event the request `m` (addressed to `role`) becomes in the role's
/// loop, or `None` when `m` is no request: kind `delegation.<task>`, in
/// the request's domain, its input the event's data (with where it came
/// from, [`DELEGATION_KEY`]), and the action the task names among the
/// role's workflows and tools ([`Role::task_action`]; none: the decision
/// has nothing to run, and the answer says so).
pub fn request_event(role: &Role, m: &SpaceMessage) -> Option<DecisionEvent> {
    let MessageBody::Request(r) = &m.body else {
        return None;
    };
    let domain = m.domain.clone().unwrap_or_else(|| role.home_domain());
    let mut data = match &r.input {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    data.insert(
        DELEGATION_KEY.to_owned(),
        json!({"space": m.space_id, "request": m.id, "from": m.meta.owner}),
    );
    let entity = r
        .input
        .get("entity")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut event = DecisionEvent::new(
        request_event_id(&m.space_id, &m.id),
        format!("delegation.{}", r.task),
        domain,
    )
    .summary(request_summary(&r.task, &r.input, &m.meta.owner));
    event.entity = entity;
    event.data = Value::Object(data);
    event.action = role.task_action(&r.task, r.input.clone());
    Some(event)
}

/// What a request is about, in words (the text the owner's memory is
/// searched with for evidence): the task's words, the input's `summary`
/// when it has one, and who asks.
fn request_summary(task: &str, input: &Value, from: &str) -> String {
    let words = task.replace(['_', '.', '-'], " ");
    match input.get("summary").and_then(Value::as_str) {
        Some(about) => format!("{words}: {about} (asked by {from})"),
        None => format!("{words} (asked by {from})"),
    }
}

fn space_error(role: &Role, source: StoreError) -> Error {
    Error::Space {
        role: role.role_id().to_owned(),
        source,
    }
}

impl Role {
    /// Talk through `store`'s spaces (a runtime with stores gives its
    /// roles its own).
    #[must_use]
    pub fn with_spaces(mut self, store: Arc<dyn SpaceStore>) -> Self {
        self.spaces = Some(store);
        self
    }

    /// Delegate in, and take requests from, the space `space_id`.
    #[must_use]
    pub fn in_space(mut self, space_id: impl Into<String>) -> Self {
        self.space = Some(space_id.into());
        self
    }

    /// The role's space store and space, when it has both.
    pub fn space(&self) -> Option<(&Arc<dyn SpaceStore>, &str)> {
        Some((self.spaces.as_ref()?, self.space.as_deref()?))
    }

    fn require_space(&self) -> Result<(&Arc<dyn SpaceStore>, &str), Error> {
        self.space().ok_or_else(|| Error::NoSpace {
            role: self.role_id().to_owned(),
        })
    }

    /// The action a delegated `task` names for this role: a run of the
    /// workflow of that name of one of its operators (its input the
    /// initial state), else a call of its tool of that name; `None` when
    /// it has neither.
    pub fn task_action(&self, task: &str, input: Value) -> Option<Action> {
        if let Some(op) = self
            .operators()
            .iter()
            .find(|op| op.workflow_ids().contains(&task))
        {
            return Some(Action::workflow(task, op.id(), task, input));
        }
        self.all_tools()
            .iter()
            .any(|t| t.name() == task)
            .then(|| Action::tool(task, task, input))
    }

    /// Post a request for the owner of `to_domain` in the role's space:
    /// do `task` with `input` (a JSON object). A new request each call
    /// (see [`Role::delegate_as`] for one that a retry repeats).
    pub async fn delegate(
        &self,
        to_domain: &str,
        task: &str,
        input: Value,
    ) -> Result<Delegation, Error> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.delegate_as(&id, to_domain, task, input).await
    }

    /// [`Role::delegate`] with the request's id: posting the same id again
    /// returns the stored request (a retried step asks once).
    pub async fn delegate_as(
        &self,
        request_id: &str,
        to_domain: &str,
        task: &str,
        input: Value,
    ) -> Result<Delegation, Error> {
        let (store, space) = self.require_space()?;
        let span =
            tracing::info_span!("delegate", role = %self.role_id(), to = %to_domain, task = %task);
        let _entered = span.enter();
        let request = SpaceMessage::request(to_domain, task, input).id(request_id);
        let request = store
            .post(&self.proposal_context(), space, request)
            .await
            .map_err(|e| space_error(self, e))?;
        Ok(Delegation {
            space_id: space.to_owned(),
            request,
        })
    }

    /// Wait for the final answer to `delegation` (interim `proposed` and
    /// `escalated` answers are logged and waited past), at most `timeout`:
    /// [`Error::DelegationTimeout`] when none came. When the owner's
    /// proposal is rejected (or expires) and this role can read it, the wait
    /// ends with a `refused` answer carrying the person's reason.
    pub async fn await_answer(
        &self,
        delegation: &Delegation,
        timeout: Duration,
    ) -> Result<DelegationAnswer, Error> {
        let (store, _) = self.require_space()?;
        let ctx = self.proposal_context();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut after = 0;
        // The proposal an interim answer names: while a person decides, its
        // status is looked at every few seconds, so a rejection (or a
        // deadline that passed) ends the wait with a refusal.
        let mut pending: Option<String> = None;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let most = if pending.is_some() {
                PROPOSAL_CHECK_MS
            } else {
                MAX_WAIT_MS
            };
            let wait = u64::try_from(left.as_millis())
                .unwrap_or(u64::MAX)
                .min(most);
            let query = MessageQuery::after(after)
                .thread(delegation.id())
                .for_me()
                .wait_ms(wait);
            let found = store
                .messages(&ctx, &delegation.space_id, &query)
                .await
                .map_err(|e| space_error(self, e))?;
            for m in found {
                after = m.seq;
                if let MessageBody::Answer(a) = m.body
                    && a.request == delegation.id()
                {
                    if a.status.is_final() {
                        return Ok(a);
                    }
                    tracing::info!(role = %self.role_id(), request = %a.request, status = a.status.as_str(), "delegation pending a person");
                    pending = a.proposal.clone().or(pending);
                }
            }
            if let Some(refused) = self.refused_proposal(delegation, pending.as_deref()).await {
                return Ok(refused);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::DelegationTimeout {
                    role: self.role_id().to_owned(),
                    request: delegation.id().to_owned(),
                    waited: timeout,
                });
            }
        }
    }

    /// The refusal a person gave (or a deadline made) on `proposal`, the
    /// owner's proposal for `delegation`, when this role can read it and it
    /// was rejected or expired; `None` otherwise (still pending, approved,
    /// or not readable: the final answer then comes in the thread).
    async fn refused_proposal(
        &self,
        delegation: &Delegation,
        proposal: Option<&str>,
    ) -> Option<DelegationAnswer> {
        let store = self.proposals()?;
        let found = store
            .get(&self.proposal_context(), proposal?)
            .await
            .ok()??;
        let reason = match found.status {
            openvibe_protocols::ProposalStatus::Rejected => format!(
                "{} rejected it: {}",
                found.decided_by.as_deref().unwrap_or("a person"),
                found.reason.as_deref().unwrap_or("no reason given")
            ),
            openvibe_protocols::ProposalStatus::Expired => {
                "nobody decided on it before its deadline".to_owned()
            }
            _ => return None,
        };
        Some(DelegationAnswer {
            request: delegation.id().to_owned(),
            status: AnswerStatus::Refused,
            output: Value::Null,
            reason: Some(reason),
            proposal: Some(found.id),
        })
    }

    /// Delegate and wait ([`Role::delegate_as`], [`Role::await_answer`]):
    /// the output of a `done` answer; a refusal is
    /// [`Error::DelegationRefused`] and a failure [`Error::DelegationFailed`],
    /// each with the owner's reason.
    pub async fn ask(
        &self,
        request_id: &str,
        to_domain: &str,
        task: &str,
        input: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let delegation = self.delegate_as(request_id, to_domain, task, input).await?;
        let answer = self.await_answer(&delegation, timeout).await?;
        let reason = || answer.reason.clone().unwrap_or_default();
        match answer.status {
            AnswerStatus::Done => Ok(answer.output),
            AnswerStatus::Failed => Err(Error::DelegationFailed {
                role: self.role_id().to_owned(),
                domain: to_domain.to_owned(),
                task: task.to_owned(),
                reason: reason(),
            }),
            _ => Err(Error::DelegationRefused {
                role: self.role_id().to_owned(),
                domain: to_domain.to_owned(),
                task: task.to_owned(),
                reason: reason(),
            }),
        }
    }

    /// Run an action whose target is [`ActionTarget::Delegate`]: ask the
    /// owner of its domain to do the action (its name the task, its input
    /// the request's), under a request id made of `key` (what asked).
    pub(crate) async fn run_delegated(
        &self,
        action: &Action,
        domain: &str,
        key: &str,
    ) -> Result<Value, Error> {
        let id = delegation_id("dl", &[self.role_id(), key, &action.action]);
        self.ask(
            &id,
            domain,
            &action.action,
            action.input.clone(),
            DEFAULT_DELEGATION_TIMEOUT,
        )
        .await
    }

    /// Answer the delegated request `trace`'s event came from (when it came
    /// from one), in its thread, from what the loop did: `done` with the
    /// output, `failed`, `proposed`/`escalated` with the proposal, else
    /// `refused` with the decision's reason. The answer's id is derived
    /// from the request, so answering again posts nothing new. Returns the
    /// status given.
    pub async fn answer_delegation(
        &self,
        trace: &LoopTrace,
    ) -> Result<Option<AnswerStatus>, Error> {
        let Some(origin) = Origin::of(&trace.event) else {
            return Ok(None);
        };
        let mut answer = DelegationAnswer {
            request: origin.request.clone(),
            status: AnswerStatus::Refused,
            output: Value::Null,
            reason: None,
            proposal: None,
        };
        match (&trace.decision, &trace.act) {
            _ if trace.failed.is_some() => {
                answer.status = AnswerStatus::Failed;
                answer.reason = trace.failed.clone();
            }
            (_, Some(ActOutcome::Ran { output, .. })) => {
                answer.status = AnswerStatus::Done;
                answer.output = output.clone();
            }
            (_, Some(ActOutcome::Failed { error, .. })) => {
                answer.status = AnswerStatus::Failed;
                answer.reason = Some(error.clone());
            }
            (Some(d), Some(ActOutcome::Proposed { proposal_id })) => {
                answer.status = if d.outcome == Outcome::Escalate {
                    AnswerStatus::Escalated
                } else {
                    AnswerStatus::Proposed
                };
                answer.proposal = Some(proposal_id.clone());
                answer.reason = Some(d.reason.clone());
            }
            (Some(d), _) if trace.event.action.is_none() => {
                answer.reason = Some(format!(
                    "{} has no workflow or tool for `{}` ({})",
                    self.role_id(),
                    trace.event.kind.trim_start_matches("delegation."),
                    d.reason
                ));
            }
            (Some(d), _) => answer.reason = Some(d.reason.clone()),
            (None, _) => {
                answer.status = AnswerStatus::Failed;
                answer.reason = trace.failed.clone();
            }
        }
        let status = answer.status;
        self.post_answer(&origin, answer, "answer").await?;
        Ok(Some(status))
    }

    /// Answer, once its proposal ran, the delegated request a proposal's
    /// decision came from: `done` with `result`'s output, else `failed`.
    pub(crate) async fn answer_proposal(
        &self,
        proposal: &openvibe_protocols::Proposal,
    ) -> Result<(), Error> {
        let Some(origin) = proposal
            .decision
            .as_ref()
            .and_then(|d| Origin::of(&d.event))
        else {
            return Ok(());
        };
        let answer = match (&proposal.result, &proposal.error) {
            (_, Some(error)) => DelegationAnswer {
                request: origin.request.clone(),
                status: AnswerStatus::Failed,
                output: Value::Null,
                reason: Some(error.clone()),
                proposal: Some(proposal.id.clone()),
            },
            (result, None) => DelegationAnswer {
                request: origin.request.clone(),
                status: AnswerStatus::Done,
                output: result.clone().unwrap_or(Value::Null),
                reason: proposal.reason.clone(),
                proposal: Some(proposal.id.clone()),
            },
        };
        self.post_answer(&origin, answer, "final").await
    }

    async fn post_answer(
        &self,
        origin: &Origin,
        answer: DelegationAnswer,
        which: &str,
    ) -> Result<(), Error> {
        let store = self.spaces.as_ref().ok_or_else(|| Error::NoSpace {
            role: self.role_id().to_owned(),
        })?;
        let mut m = SpaceMessage::text("")
            .id(delegation_id("ans", &[&origin.request, which]))
            .in_thread(origin.request.clone())
            .to(origin.from.clone());
        m.body = MessageBody::Answer(answer);
        store
            .post(&self.proposal_context(), &origin.space_id, m)
            .await
            .map_err(|e| space_error(self, e))?;
        Ok(())
    }
}

/// How long one read of the feed waits for a request.
const FEED_WAIT_MS: u64 = 10_000;

/// Feed the requests routed to `role` in its space to `take` until `stop`
/// turns true: from the role's cursor, each request (not the role's own)
/// becomes its event ([`request_event`]), and the cursor moves past a page
/// only once `take` took every request of it (at least once: a crash in
/// between hands them to `take` again, which dedups by event id). An error
/// of the store or of `take` is retried with a growing pause. What the
/// cognitive loop runs in process (`take` pushes into the loop) and a
/// Temporal worker runs (`take` starts the event's workflow).
pub async fn feed_requests<F, Fut>(
    role: &Role,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut take: F,
) where
    F: FnMut(DecisionEvent) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let Some((store, space)) = role.space() else {
        return;
    };
    let ctx = role.proposal_context();
    let me = ctx.owner_key();
    let mut cursor: Option<u64> = None;
    let mut pause = Duration::from_millis(100);
    loop {
        if *stop.borrow() {
            return;
        }
        let step = async {
            let after = match cursor {
                Some(c) => c,
                None => store.cursor(&ctx, space).await.map_err(|e| e.to_string())?,
            };
            cursor = Some(after);
            let query = MessageQuery::after(after)
                .for_me()
                .limit(100)
                .wait_ms(FEED_WAIT_MS);
            let found = store
                .messages(&ctx, space, &query)
                .await
                .map_err(|e| e.to_string())?;
            let Some(last) = found.last().map(|m| m.seq) else {
                return Ok::<(), String>(());
            };
            for m in found.iter().filter(|m| m.meta.owner != me) {
                if let Some(event) = request_event(role, m) {
                    take(event).await?;
                }
            }
            cursor = Some(
                store
                    .ack(&ctx, space, last)
                    .await
                    .map_err(|e| e.to_string())?,
            );
            Ok(())
        };
        tokio::select! {
            _ = stop.changed() => return,
            done = step => match done {
                Ok(()) => pause = Duration::from_millis(100),
                Err(e) => {
                    tracing::warn!(role = %role.role_id(), space = %space, error = %e, "feeding the space's requests failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            },
        }
    }
}

impl crate::CognitiveLoop {
    /// Feed the requests routed to `role` in its space into its loop until
    /// `stop` turns true ([`feed_requests`]): each is journaled by the loop
    /// before the cursor moves past it; a full loop is waited for.
    pub(crate) async fn feed_space(&self, role: &Role, stop: tokio::sync::watch::Receiver<bool>) {
        feed_requests(role, stop, |event| async move {
            self.push_until_taken(role.role_id(), event).await;
            Ok(())
        })
        .await;
    }

    /// Push `event` into `role_id`'s loop, waiting while its queue is full;
    /// an event the loop refuses otherwise is logged and dropped (it would
    /// be refused again).
    async fn push_until_taken(&self, role_id: &str, event: DecisionEvent) {
        loop {
            match self
                .push(
                    role_id,
                    event.clone(),
                    openvibe_protocols::EventSource::Space,
                )
                .await
            {
                Ok(_) => return,
                Err(Error::LoopFull { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => {
                    tracing::warn!(role = %role_id, event = %event.id, error = %e, "a delegated request was not taken into the loop");
                    return;
                }
            }
        }
    }
}
