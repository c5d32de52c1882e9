//! Beliefs (L4 of the memory pyramid, seed 001 V4): what a role holds true
//! once a person approved it ([`BeliefStore`]). A belief comes from the
//! role's insights (L3), and through them from its episodes (L2) and raw
//! calls (L1): the full provenance chain. Its status moves
//!
//! ```text
//! proposed ──approve──▶ active ──retire, or superseded──▶ retired
//!     └──────reject────▶ rejected
//! ```
//!
//! and never back. Approving a belief that `supersedes` an active one
//! retires that one in the same atomic step, both kept and linked
//! (`superseded_by`). Who approves is [`CallerContext::may_approve`] (the
//! `approve` right; never one's own). Every transition is audited (an
//! `update` entry whose `filters` name it).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::proposals::{ADOPT_BELIEF_ACTION, ADOPT_BELIEF_TOOL, belief_proposal_id};
use super::{CallerContext, Page, Proposal, RecordMeta, StoreError, Verdict};
use crate::Action;

/// The kind name of beliefs (audit entries, errors, retention).
pub const BELIEF_KIND: &str = "belief";

/// The most beliefs one list returns.
pub const MAX_BELIEF_PAGE: usize = 1000;

/// The most insights one belief cites.
pub const MAX_BELIEF_INSIGHTS: usize = 100;

crate::vocabulary! {
    /// Where a belief stands.
    #[derive(Default)]
    pub enum BeliefStatus {
        /// Waiting for a person.
        #[default]
        Proposed = "proposed",
        /// Approved: it shapes the role's prompts and decisions.
        Active = "active",
        /// Rejected, with a reason.
        Rejected = "rejected",
        /// No longer held (retired, or superseded by a newer belief).
        Retired = "retired",
    }
}

/// A belief of a role. Fields marked *store* are set by the store; values
/// given are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Belief {
    /// Unique within the tenant (the store generates one when empty).
    #[serde(default)]
    pub id: String,
    /// Governance metadata: the owner is the role that proposed it.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The role that holds it.
    pub role_id: String,
    /// What it holds true.
    pub statement: String,
    /// The domain it is about (clearance applies to it).
    #[serde(default)]
    pub domain: String,
    /// How sure, `0..=1`.
    pub confidence: f64,
    /// A constraint: an action it bears on is proposed to a person rather
    /// than taken.
    #[serde(default)]
    pub constraint: bool,
    /// The insights it came from (L3; through them its episodes and raw
    /// calls).
    #[serde(default)]
    pub insight_ids: Vec<String>,
    /// How much evidence the insights had when it was proposed.
    #[serde(default)]
    pub evidence: u32,
    /// The active belief it replaces, when approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The active belief on the same subject it refines: approved, both
    /// hold, unless the person approving chooses to supersede that one
    /// ([`Verdict::supersede`]); then it is cleared and `supersedes`
    /// names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refines: Option<String>,
    /// 1, or one more than the belief it supersedes (*store*).
    #[serde(default)]
    pub version: u32,
    /// Where it stands (*store*).
    #[serde(default)]
    pub status: BeliefStatus,
    /// The belief that superseded it (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Who approved, rejected or retired it (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    /// Why (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A verdict on a belief carries no action (a belief is adopted, not run):
/// the rule [`Belief::decide_as`] applies, and the wire's belief verdict
/// checks before it is sent.
pub fn check_belief_verdict(verdict: &Verdict) -> Result<(), StoreError> {
    if verdict.action.is_some() {
        return Err(StoreError::invalid(
            "action",
            "a verdict on a belief takes no action",
        ));
    }
    Ok(())
}

impl Belief {
    /// A proposed belief of `role_id`.
    pub fn new(role_id: impl Into<String>, statement: impl Into<String>, confidence: f64) -> Self {
        Self {
            id: String::new(),
            meta: RecordMeta::default(),
            role_id: role_id.into(),
            statement: statement.into(),
            domain: String::new(),
            confidence,
            constraint: false,
            insight_ids: Vec::new(),
            evidence: 0,
            supersedes: None,
            refines: None,
            version: 0,
            status: BeliefStatus::Proposed,
            superseded_by: None,
            decided_by: None,
            decided_at: None,
            reason: None,
        }
    }

    /// Set the id.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Set the domain.
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = domain.into();
        self
    }

    /// Cite the insights it came from, with their evidence.
    #[must_use]
    pub fn from_insights<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        ids: I,
        evidence: u32,
    ) -> Self {
        self.insight_ids = ids.into_iter().map(Into::into).collect();
        self.evidence = evidence;
        self
    }

    /// Propose it as replacing the active belief `id`.
    #[must_use]
    pub fn supersedes(mut self, id: impl Into<String>) -> Self {
        self.supersedes = Some(id.into());
        self
    }

    /// Propose it as refining the active belief `id` (a person approving
    /// it may choose to supersede that one).
    #[must_use]
    pub fn refines(mut self, id: impl Into<String>) -> Self {
        self.refines = Some(id.into());
        self
    }

    /// The belief it follows on its subject: the one it supersedes or
    /// refines.
    pub fn predecessor(&self) -> Option<&str> {
        self.supersedes.as_deref().or(self.refines.as_deref())
    }

    /// Mark it as a constraint.
    #[must_use]
    pub fn constraint(mut self) -> Self {
        self.constraint = true;
        self
    }

    /// Set the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// Reset the store-maintained fields of a new belief (version 1, or
    /// one more than its [`predecessor`](Self::predecessor)'s, `superseded`).
    pub fn prepare_new(&mut self, superseded: Option<&Belief>) {
        self.version = superseded.map_or(1, |b| b.version.saturating_add(1));
        self.status = BeliefStatus::Proposed;
        self.superseded_by = None;
        self.decided_by = None;
        self.decided_at = None;
        self.reason = None;
    }

    /// Whether `other` proposes the same thing (proposing twice with one id
    /// returns the first when they do).
    pub fn same_request(&self, other: &Self) -> bool {
        self.role_id == other.role_id
            && self.statement == other.statement
            && self.domain == other.domain
            && self.supersedes == other.supersedes
            && self.refines == other.refines
            && self.constraint == other.constraint
    }

    /// `ctx`'s `verdict` on this belief at `now`, checked: `ctx` must be
    /// allowed to approve it ([`CallerContext::may_approve`]); it must be
    /// proposed (else [`StoreError::Conflict`] naming its status); a
    /// rejection needs a reason; a verdict on a belief carries no action;
    /// an approval [as a constraint](Verdict::constraint) marks it one.
    /// What every backend runs under its lock.
    pub fn decide_as(
        &self,
        ctx: &CallerContext,
        verdict: &Verdict,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.may_approve(&self.meta, &format!("decide belief {}", self.id))?;
        verdict.validate()?;
        check_belief_verdict(verdict)?;
        if verdict.supersede && self.refines.is_none() {
            return Err(StoreError::conflict(format!(
                "supersede: belief `{}` refines no belief, so there is nothing to supersede",
                self.id
            )));
        }
        if self.status != BeliefStatus::Proposed {
            return Err(StoreError::conflict(format!(
                "belief `{}` is {}, not proposed: it was decided already",
                self.id, self.status
            )));
        }
        let mut next = self.clone();
        if verdict.supersede {
            // Checked above: it refines one.
            next.supersedes = next.refines.take();
        }
        next.constraint |= verdict.constraint;
        next.status = if verdict.approve {
            BeliefStatus::Active
        } else {
            BeliefStatus::Rejected
        };
        next.decided_by = Some(ctx.owner_key());
        next.decided_at = Some(now);
        next.reason = (!verdict.reason.trim().is_empty()).then(|| verdict.reason.clone());
        next.meta.updated_at = now;
        Ok(next)
    }

    /// This active belief retired at `now` by `by` because `reason` (or
    /// superseded by `successor`): it must be active, else
    /// [`StoreError::Conflict`].
    pub fn retired(
        &self,
        by: &str,
        reason: &str,
        successor: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        if self.status != BeliefStatus::Active {
            return Err(StoreError::conflict(format!(
                "belief `{}` is {}: only an active belief is retired or superseded",
                self.id, self.status
            )));
        }
        let mut next = self.clone();
        next.status = BeliefStatus::Retired;
        next.superseded_by = successor.map(str::to_owned);
        next.decided_by = Some(by.to_owned());
        next.decided_at = Some(now);
        next.reason = Some(reason.to_owned());
        next.meta.updated_at = now;
        Ok(next)
    }

    /// `ctx` retires this belief at `now` for `reason`: `ctx` must be
    /// allowed to approve it (retiring takes the same right as approving),
    /// the reason must not be empty, and it must be active.
    pub fn retire_as(
        &self,
        ctx: &CallerContext,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.may_approve(&self.meta, &format!("retire belief {}", self.id))?;
        if reason.trim().is_empty() {
            return Err(StoreError::invalid("reason", "retiring needs a reason"));
        }
        super::check_text("reason", reason)?;
        self.retired(&ctx.owner_key(), reason, None, now)
    }

    /// The transition from `before` to this belief, as its audit entry
    /// names it: `approve`, `reject`, `supersede`, `retire` (or `update`).
    pub fn transition_from(&self, before: &Self) -> &'static str {
        match (before.status, self.status) {
            (BeliefStatus::Proposed, BeliefStatus::Active) => "approve",
            (BeliefStatus::Proposed, BeliefStatus::Rejected) => "reject",
            (BeliefStatus::Active, BeliefStatus::Retired) if self.superseded_by.is_some() => {
                "supersede"
            }
            (BeliefStatus::Active, BeliefStatus::Retired) => "retire",
            _ => "update",
        }
    }

    /// The `filters` of the audit entry of the transition from `before`.
    pub fn transition_detail(&self, before: &Self) -> Value {
        serde_json::json!({
            "transition": self.transition_from(before),
            "from": before.status,
            "to": self.status,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
        })
    }
}

/// The checks of a new belief: bounded labels and text, a statement, a
/// confidence in `0..=1`, cited insights that are record ids (at most
/// [`MAX_BELIEF_INSIGHTS`]), and no belief superseding itself.
pub fn validate_belief(b: &Belief) -> Result<(), StoreError> {
    if !b.id.is_empty() {
        super::validate_record_id(&b.id)?;
    }
    if b.role_id.trim().is_empty() {
        return Err(StoreError::invalid("role_id", "must not be empty"));
    }
    super::check_label("role_id", &b.role_id)?;
    if b.statement.trim().is_empty() {
        return Err(StoreError::invalid("statement", "must not be empty"));
    }
    super::check_text("statement", &b.statement)?;
    if b.statement.len() > super::MAX_CONTENT_LEN {
        return Err(StoreError::invalid(
            "statement",
            format!("longer than {} bytes", super::MAX_CONTENT_LEN),
        ));
    }
    super::check_unit("confidence", b.confidence)?;
    if b.insight_ids.len() > MAX_BELIEF_INSIGHTS {
        return Err(StoreError::invalid(
            "insight_ids",
            format!("at most {MAX_BELIEF_INSIGHTS} insights"),
        ));
    }
    for id in &b.insight_ids {
        super::validate_record_id(id).map_err(|_| {
            StoreError::invalid("insight_ids", format!("`{id}` is not a record id"))
        })?;
    }
    for (field, old) in [("supersedes", &b.supersedes), ("refines", &b.refines)] {
        if let Some(old) = old {
            super::validate_record_id(old)?;
            if !b.id.is_empty() && old == &b.id {
                return Err(StoreError::inconsistent(
                    field,
                    "a belief does not follow itself",
                ));
            }
        }
    }
    if b.supersedes.is_some() && b.refines.is_some() {
        return Err(StoreError::inconsistent(
            "refines",
            "a belief supersedes or refines one belief, not both",
        ));
    }
    super::check_meta(&b.meta, "", &b.domain, &[])
}

/// Filters of [`BeliefStore::list`]; results are newest first (creation
/// time, then id), a page at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct BeliefQuery {
    /// Only beliefs with this status.
    pub status: Option<BeliefStatus>,
    /// Only beliefs of this role.
    pub role_id: Option<String>,
    /// Only beliefs of this domain.
    pub domain: Option<String>,
    /// Only beliefs of these namespaces (empty: every namespace the caller
    /// may read).
    pub namespaces: Vec<String>,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
    /// At most this many (default 50, at most [`MAX_BELIEF_PAGE`]).
    pub limit: usize,
}

impl Default for BeliefQuery {
    fn default() -> Self {
        Self {
            status: None,
            role_id: None,
            domain: None,
            namespaces: Vec::new(),
            cursor: None,
            limit: 50,
        }
    }
}

impl BeliefQuery {
    /// Every belief, 50 a page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only those with `status`.
    #[must_use]
    pub fn status(mut self, status: BeliefStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only those of `role_id`.
    #[must_use]
    pub fn role(mut self, role_id: impl Into<String>) -> Self {
        self.role_id = Some(role_id.into());
        self
    }

    /// Only those of `domain`.
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Whether `b` (readable) matches the filters (namespaces and the
    /// cursor are the store's).
    pub fn matches(&self, b: &Belief) -> bool {
        self.status.is_none_or(|s| b.status == s)
            && self.role_id.as_deref().is_none_or(|r| b.role_id == r)
            && self.domain.as_deref().is_none_or(|d| b.domain == d)
    }
}

super::listed_by_creation!(Belief);
super::page_query!(BeliefQuery => MAX_BELIEF_PAGE);

/// Beliefs: proposed by roles (the learn step), decided by people. Every
/// backend enforces the caller-context rules of the module documentation
/// of [`RecordStore`](crate::RecordStore) (tenant, namespace, project,
/// clearance on the belief's domain) and audits every transition.
#[async_trait]
pub trait BeliefStore: Send + Sync {
    /// Propose a belief in `ctx`'s namespace (or the one it names, with the
    /// write right), owned by `ctx`. A belief that `supersedes` another
    /// must name one `ctx` may read ([`StoreError::NotFound`] otherwise).
    /// Proposing one with the id of an existing belief returns that one
    /// when it proposes the same thing, else [`StoreError::Conflict`].
    async fn propose(&self, ctx: &CallerContext, belief: Belief) -> Result<Belief, StoreError>;

    /// The belief `id`, when `ctx` may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Belief>, StoreError>;

    /// Readable beliefs matching `query`, newest first, a page at a time.
    async fn list(
        &self,
        ctx: &CallerContext,
        query: &BeliefQuery,
    ) -> Result<Page<Belief>, StoreError>;

    /// Approve or reject a proposed belief (atomically: of callers racing,
    /// one succeeds and the others get [`StoreError::Conflict`]). Approving
    /// one that supersedes an active belief retires that one in the same
    /// step (a superseded belief that is no longer active is a conflict
    /// and nothing changes).
    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError>;

    /// Retire an active belief, for `reason` (the approve right, as for
    /// approving it).
    async fn retire(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError>;
}

impl Belief {
    /// The proposal that puts this (proposed) belief in front of a person:
    /// its id is [`belief_proposal_id`], its action [`ADOPT_BELIEF_TOOL`]
    /// with the belief's id, in the belief's namespace and domain.
    pub fn to_proposal(&self) -> Proposal {
        let summary = match (&self.supersedes, &self.refines) {
            (Some(old), _) => format!("Adopt belief (superseding {old}): {}", self.statement),
            (None, Some(old)) => format!(
                "Adopt belief (refining {old}; approve superseding to replace it): {}",
                self.statement
            ),
            (None, None) => format!("Adopt belief: {}", self.statement),
        };
        let mut proposal = Proposal::new(
            self.role_id.clone(),
            crate::truncate_chars(&summary, 400).to_owned(),
            Action::tool(
                ADOPT_BELIEF_ACTION,
                ADOPT_BELIEF_TOOL,
                match &self.refines {
                    Some(old) => serde_json::json!({ "belief_id": self.id, "refines": old }),
                    None => serde_json::json!({ "belief_id": self.id }),
                },
            ),
        )
        .id(belief_proposal_id(&self.id))
        .domain(self.domain.clone());
        proposal.meta.namespace.clone_from(&self.meta.namespace);
        proposal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn belief() -> Belief {
        Belief::new("cro", "Webinar leads close faster", 0.8)
            .id("b1")
            .domain("revenue")
            .from_insights(["i1", "i2"], 5)
    }

    #[test]
    fn the_status_machine_moves_forward_only() {
        let now = Utc::now();
        let ann = CallerContext::user("ann");
        let mut b = belief();
        b.prepare_new(None);
        b.meta.owner = "agent:cro".into();
        let active = b.decide_as(&ann, &Verdict::approve("ok"), now).unwrap();
        assert_eq!(active.status, BeliefStatus::Active);
        assert_eq!(active.transition_from(&b), "approve");
        assert!(matches!(
            active.decide_as(&ann, &Verdict::reject("no"), now),
            Err(StoreError::Conflict { .. })
        ));
        let retired = active
            .retired("user:ann", "superseded", Some("b2"), now)
            .unwrap();
        assert_eq!(retired.transition_from(&active), "supersede");
        assert!(retired.retired("user:ann", "again", None, now).is_err());
        assert!(
            b.decide_as(&ann, &Verdict::reject(" "), now).is_err(),
            "a reason"
        );
        let own = CallerContext::agent("cro");
        assert!(matches!(
            b.decide_as(&own, &Verdict::approve("mine"), now),
            Err(StoreError::Unauthorized { .. })
        ));
        assert!(b.retire_as(&ann, "stale", now).is_err(), "not active");
        assert_eq!(
            active
                .retire_as(&ann, "stale", now)
                .unwrap()
                .transition_from(&active),
            "retire"
        );
    }

    #[test]
    fn new_beliefs_are_checked() {
        assert!(validate_belief(&belief()).is_ok());
        assert!(validate_belief(&Belief::new("", "x", 0.5)).is_err());
        assert!(validate_belief(&Belief::new("cro", " ", 0.5)).is_err());
        assert!(validate_belief(&Belief::new("cro", "x", 1.5)).is_err());
        assert!(validate_belief(&belief().supersedes("b1")).is_err());
        assert!(validate_belief(&belief().from_insights(["a/b"], 1)).is_err());
    }
}
