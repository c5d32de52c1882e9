//! Proposals: a durable, governed record of what waits for a person
//! ([`ProposalStore`]).
//!
//! A role's `Propose` and `Escalate` decisions, and tool calls whose
//! authority is `needs_approval`, become proposals. A person with the
//! `approve` right ([`CallerContext::may_approve`]) approves or rejects one;
//! the runtime then **claims** an approved proposal (one claim succeeds,
//! whoever races) and records how its action went. The status moves
//!
//! ```text
//! pending ──approve──▶ approved ──claim, finish──▶ executed | failed
//!    │ └────reject───▶ rejected
//!    └──deadline passes──▶ expired
//! ```
//!
//! and never back. A rejected or expired proposal is never claimed, so its
//! action never runs. Every transition is audited (an `update` entry whose
//! `filters` name the transition, the status before and after, and the
//! reason).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallerContext, Page, RecordMeta, StoreError};
use crate::{Action, Decision, Outcome};

/// The kind name of proposals (audit entries, errors, retention).
pub const PROPOSAL_KIND: &str = "proposal";

/// The most proposals one list returns.
pub const MAX_PROPOSAL_PAGE: usize = 1000;

crate::vocabulary! {
    /// Where a proposal stands.
    #[derive(Default)]
    pub enum ProposalStatus {
        /// Waiting for a person.
        #[default]
        Pending = "pending",
        /// Approved: its action runs once (see [`Proposal::claimed_by`]).
        Approved = "approved",
        /// Rejected, with a reason: it never runs.
        Rejected = "rejected",
        /// Nobody decided before its deadline: it never runs.
        Expired = "expired",
        /// Its action ran.
        Executed = "executed",
        /// Its action ran and failed (or was interrupted).
        Failed = "failed",
    }
}

/// What waits for a person: an action a role proposes, or an event it
/// escalates. Fields marked *store* are set by the store; values given are
/// ignored on create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Proposal {
    /// Unique id within the tenant (a decision's id; the store generates
    /// one when empty).
    #[serde(default)]
    pub id: String,
    /// Governance metadata: the owner is the proposing role's principal.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The role that proposes.
    pub role_id: String,
    /// The domain it belongs to (clearance applies to it).
    #[serde(default)]
    pub domain: String,
    /// What it is about, for the person deciding.
    pub summary: String,
    /// `propose` (an action to approve) or `escalate` (a person chooses).
    pub outcome: Outcome,
    /// The decision behind it (its four steps and evidence), when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The action that runs once approved (an escalation gets one when a
    /// person approves it with one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The person it is assigned to (an owner key, `user:ann`), when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// After this instant a pending proposal is expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// Where it stands (*store*).
    #[serde(default)]
    pub status: ProposalStatus,
    /// Who approved or rejected it (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    /// Why (*store*, from the verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who claimed its execution (*store*): one claim succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// When (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<DateTime<Utc>>,
    /// When its execution finished (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// What the action returned (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Proposal {
    /// A pending proposal of `role_id` to run `action`.
    pub fn new(role_id: impl Into<String>, summary: impl Into<String>, action: Action) -> Self {
        Self::bare(
            role_id.into(),
            summary.into(),
            Outcome::Propose,
            Some(action),
        )
    }

    /// A pending escalation of `role_id`: a person chooses what to do.
    pub fn escalation(role_id: impl Into<String>, summary: impl Into<String>) -> Self {
        Self::bare(role_id.into(), summary.into(), Outcome::Escalate, None)
    }

    /// The proposal of a `Propose` or `Escalate` decision (its id, domain,
    /// summary and action).
    pub fn from_decision(decision: &Decision) -> Self {
        let event = &decision.event;
        let summary = if event.summary.is_empty() {
            event.kind.clone()
        } else {
            event.summary.clone()
        };
        let action = match decision.outcome {
            Outcome::Escalate => None,
            _ => event.action.clone(),
        };
        let mut p = Self::bare(decision.role_id.clone(), summary, decision.outcome, action);
        p.id.clone_from(&decision.id);
        p.domain.clone_from(&event.domain);
        p.decision = Some(decision.clone());
        p
    }

    fn bare(role_id: String, summary: String, outcome: Outcome, action: Option<Action>) -> Self {
        Self {
            id: String::new(),
            meta: RecordMeta::default(),
            role_id,
            domain: String::new(),
            summary,
            outcome,
            decision: None,
            action,
            assignee: None,
            deadline: None,
            status: ProposalStatus::Pending,
            decided_by: None,
            decided_at: None,
            reason: None,
            claimed_by: None,
            claimed_at: None,
            finished_at: None,
            result: None,
            error: None,
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

    /// Assign it to a person (an owner key such as `user:ann`).
    #[must_use]
    pub fn assignee(mut self, assignee: impl Into<String>) -> Self {
        self.assignee = Some(assignee.into());
        self
    }

    /// Expire it at `deadline` unless decided before.
    #[must_use]
    pub fn deadline(mut self, deadline: DateTime<Utc>) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Set the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// Its status as of `now`: a pending proposal past its deadline is
    /// expired, whether or not the store has written that yet.
    pub fn status_at(&self, now: DateTime<Utc>) -> ProposalStatus {
        match (self.status, self.deadline) {
            (ProposalStatus::Pending, Some(deadline)) if deadline <= now => ProposalStatus::Expired,
            (status, _) => status,
        }
    }

    /// This proposal as a reader sees it at `now` (its status
    /// [as of then](Self::status_at)): what every backend answers.
    #[must_use]
    pub fn as_of(mut self, now: DateTime<Utc>) -> Self {
        self.status = self.status_at(now);
        self
    }

    /// Reset the store-maintained fields of a new proposal.
    pub fn prepare_new(&mut self) {
        self.status = ProposalStatus::Pending;
        self.decided_by = None;
        self.decided_at = None;
        self.reason = None;
        self.claimed_by = None;
        self.claimed_at = None;
        self.finished_at = None;
        self.result = None;
        self.error = None;
    }

    /// Whether `other` proposes the same thing (creating a proposal twice
    /// with one id returns the first when they do).
    pub fn same_request(&self, other: &Self) -> bool {
        self.role_id == other.role_id
            && self.summary == other.summary
            && self.outcome == other.outcome
            && self.action == other.action
            && self.domain == other.domain
    }

    /// `verdict` on this proposal as of `now`, checked: it must be pending
    /// (else [`StoreError::Conflict`] naming its status); a rejection needs
    /// a reason; an approval of an escalation needs an action, and an
    /// approval may not change a proposed action. Returns the proposal as
    /// decided by `by`.
    fn decided(&self, verdict: &Verdict, by: &str, now: DateTime<Utc>) -> Result<Self, StoreError> {
        let status = self.status_at(now);
        if status != ProposalStatus::Pending {
            return Err(StoreError::conflict(format!(
                "proposal `{}` is {status}, not pending: it was decided already or its deadline passed",
                self.id
            )));
        }
        verdict.validate()?;
        if verdict.supersede && self.belief_id().is_none() {
            return Err(StoreError::conflict(format!(
                "supersede: proposal `{}` adopts no belief, so there is nothing to supersede",
                self.id
            )));
        }
        if verdict.constraint && self.belief_id().is_none() {
            return Err(StoreError::conflict(format!(
                "constraint: proposal `{}` adopts no belief, so there is no belief to make a constraint",
                self.id
            )));
        }
        let mut next = self.clone();
        if verdict.approve {
            match (&self.action, &verdict.action) {
                // What the stored proposal is refuses these: conflicts.
                (None, None) => {
                    return Err(StoreError::conflict(
                        "action: approving an escalation needs the action to take",
                    ));
                }
                (Some(proposed), Some(given)) if proposed != given => {
                    return Err(StoreError::conflict(
                        "action: an approval may not change the proposed action (reject it and \
                         propose another)",
                    ));
                }
                (None, Some(given)) => next.action = Some(given.clone()),
                _ => {}
            }
            next.status = ProposalStatus::Approved;
        } else {
            next.status = ProposalStatus::Rejected;
        }
        next.decided_by = Some(by.to_owned());
        next.decided_at = Some(now);
        next.reason = (!verdict.reason.trim().is_empty()).then(|| verdict.reason.clone());
        next.meta.updated_at = now;
        Ok(next)
    }

    /// This proposal claimed for execution by `by` at `now`: it must be
    /// approved and unclaimed, else [`StoreError::Conflict`].
    fn claimed(&self, by: &str, now: DateTime<Utc>) -> Result<Self, StoreError> {
        if self.status != ProposalStatus::Approved {
            return Err(StoreError::conflict(format!(
                "proposal `{}` is {}: only an approved proposal runs",
                self.id,
                self.status_at(now)
            )));
        }
        if let Some(other) = &self.claimed_by {
            return Err(StoreError::conflict(format!(
                "proposal `{}` was claimed by {other} already: it runs once",
                self.id
            )));
        }
        let mut next = self.clone();
        next.claimed_by = Some(by.to_owned());
        next.claimed_at = Some(now);
        next.meta.updated_at = now;
        Ok(next)
    }

    /// This proposal with its execution's `outcome` recorded at `now`: it
    /// must be claimed and unfinished, else [`StoreError::Conflict`].
    fn finished(
        &self,
        outcome: &Result<Value, String>,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        if self.status != ProposalStatus::Approved || self.claimed_by.is_none() {
            return Err(StoreError::conflict(format!(
                "proposal `{}` is {} and {}: only a claimed, approved proposal finishes",
                self.id,
                self.status,
                if self.claimed_by.is_some() {
                    "claimed"
                } else {
                    "unclaimed"
                }
            )));
        }
        let mut next = self.clone();
        match outcome {
            Ok(result) => {
                next.status = ProposalStatus::Executed;
                next.result = Some(result.clone());
            }
            Err(error) => {
                next.status = ProposalStatus::Failed;
                next.error = Some(crate::truncate_chars(error, MAX_ERROR_CHARS).to_owned());
            }
        }
        next.finished_at = Some(now);
        next.meta.updated_at = now;
        Ok(next)
    }

    /// `ctx`'s `verdict` on this proposal at `now`, checked: `ctx` must be
    /// allowed to approve it ([`CallerContext::may_approve`]); it must be
    /// pending (else [`StoreError::Conflict`] naming its status); a
    /// rejection needs a reason; approving an escalation needs the action,
    /// and an approval may not change a proposed action. What every backend
    /// runs under its lock.
    pub fn decide_as(
        &self,
        ctx: &CallerContext,
        verdict: &Verdict,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.may_approve(&self.meta, &format!("decide proposal {}", self.id))?;
        self.decided(verdict, &ctx.owner_key(), now)
    }

    /// `ctx` claims this proposal's execution at `now`: `ctx` must be
    /// allowed to change it (the proposing role, or a manager), and it must
    /// be approved and unclaimed, else [`StoreError::Conflict`]: one claim
    /// wins.
    pub fn claim_as(&self, ctx: &CallerContext, now: DateTime<Utc>) -> Result<Self, StoreError> {
        ctx.require_change(
            &self.meta,
            super::Change::Write,
            format!("claim proposal {}", self.id),
        )?;
        self.claimed(&ctx.owner_key(), now)
    }

    /// `ctx` records how the action went at `now` (`executed` with the
    /// result, or `failed` with the error): `ctx` must be allowed to change
    /// it, a result is a bounded JSON value, and it must be claimed and
    /// unfinished, else [`StoreError::Conflict`].
    pub fn finish_as(
        &self,
        ctx: &CallerContext,
        outcome: &Result<Value, String>,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.require_change(
            &self.meta,
            super::Change::Write,
            format!("finish proposal {}", self.id),
        )?;
        if let Ok(value) = outcome {
            super::check_json("result", value)?;
        }
        self.finished(outcome, now)
    }

    /// The transition from `before` to this proposal, as its audit entry
    /// names it: `approve`, `reject`, `claim`, `executed`, `failed`,
    /// `expire` (or `update`).
    pub fn transition_from(&self, before: &Self) -> &'static str {
        match (before.status, self.status) {
            (ProposalStatus::Pending, ProposalStatus::Approved) => "approve",
            (ProposalStatus::Pending, ProposalStatus::Rejected) => "reject",
            (ProposalStatus::Pending, ProposalStatus::Expired) => "expire",
            (ProposalStatus::Approved, ProposalStatus::Executed) => "executed",
            (ProposalStatus::Approved, ProposalStatus::Failed) => "failed",
            (ProposalStatus::Approved, ProposalStatus::Approved)
                if before.claimed_by.is_none() && self.claimed_by.is_some() =>
            {
                "claim"
            }
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
        })
    }
}

/// The most characters of an execution error a proposal keeps.
pub const MAX_ERROR_CHARS: usize = 4_000;

/// A person's answer to a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// Approve (`true`) or reject (`false`).
    pub approve: bool,
    /// Why (required to reject).
    #[serde(default)]
    pub reason: String,
    /// The action to take, when approving an escalation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Approving a belief that refines an active one (or that belief's
    /// proposal): retire the refined one too, as the approved belief
    /// supersedes it. Only on such an approval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub supersede: bool,
    /// Approving a belief (or its proposal) as a constraint: an action the
    /// belief bears on is then proposed to a person, never taken alone.
    /// Only on such an approval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constraint: bool,
}

impl Verdict {
    /// Approve, for `reason`.
    pub fn approve(reason: impl Into<String>) -> Self {
        Self {
            approve: true,
            reason: reason.into(),
            action: None,
            supersede: false,
            constraint: false,
        }
    }

    /// This approval of a belief that refines another also retires that
    /// one ([`Verdict::supersede`]).
    #[must_use]
    pub fn superseding(mut self) -> Self {
        self.supersede = true;
        self
    }

    /// This approval of a belief makes it a constraint
    /// ([`Verdict::constraint`]).
    #[must_use]
    pub fn as_constraint(mut self) -> Self {
        self.constraint = true;
        self
    }

    /// Approve an escalation with the action to take.
    pub fn approve_with(action: Action, reason: impl Into<String>) -> Self {
        Self {
            approve: true,
            reason: reason.into(),
            action: Some(action),
            supersede: false,
            constraint: false,
        }
    }

    /// Reject, for `reason`.
    pub fn reject(reason: impl Into<String>) -> Self {
        Self {
            approve: false,
            reason: reason.into(),
            action: None,
            supersede: false,
            constraint: false,
        }
    }

    /// A rejection has a reason; a reason is a bounded text.
    pub fn validate(&self) -> Result<(), StoreError> {
        if !self.approve && self.reason.trim().is_empty() {
            return Err(StoreError::invalid("reason", "a rejection needs a reason"));
        }
        super::check_text("reason", &self.reason)?;
        if let Some(action) = &self.action {
            check_action("action", action)?;
        }
        if self.supersede && !self.approve {
            return Err(StoreError::invalid(
                "supersede",
                "only an approval supersedes a belief",
            ));
        }
        if self.constraint && !self.approve {
            return Err(StoreError::invalid(
                "constraint",
                "only an approval makes a belief a constraint",
            ));
        }
        Ok(())
    }
}

/// Filters of [`ProposalStore::list`]; results are newest first (creation
/// time, then id), a page at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ProposalQuery {
    /// Only proposals with this status (as of now: `pending` leaves out,
    /// and `expired` includes, pending proposals past their deadline).
    pub status: Option<ProposalStatus>,
    /// Only proposals of this role.
    pub role_id: Option<String>,
    /// Only proposals of this domain.
    pub domain: Option<String>,
    /// Only proposals assigned to this person (an owner key).
    pub assignee: Option<String>,
    /// Only proposals of these namespaces (empty: every namespace the
    /// caller may read: an approver's inbox spans them all).
    pub namespaces: Vec<String>,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
    /// At most this many (default 50, at most [`MAX_PROPOSAL_PAGE`]).
    pub limit: usize,
}

impl Default for ProposalQuery {
    fn default() -> Self {
        Self {
            status: None,
            role_id: None,
            domain: None,
            assignee: None,
            namespaces: Vec::new(),
            cursor: None,
            limit: 50,
        }
    }
}

impl ProposalQuery {
    /// Every proposal, 50 a page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only those with `status`.
    #[must_use]
    pub fn status(mut self, status: ProposalStatus) -> Self {
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

    /// Only those assigned to `assignee`.
    #[must_use]
    pub fn assignee(mut self, assignee: impl Into<String>) -> Self {
        self.assignee = Some(assignee.into());
        self
    }

    /// Whether `p` (readable, of the tenant) matches the filters as of
    /// `now` (namespaces and the cursor are the store's).
    pub fn matches(&self, p: &Proposal, now: DateTime<Utc>) -> bool {
        self.status.is_none_or(|s| p.status_at(now) == s)
            && self.role_id.as_deref().is_none_or(|r| p.role_id == r)
            && self.domain.as_deref().is_none_or(|d| p.domain == d)
            && self
                .assignee
                .as_deref()
                .is_none_or(|a| p.assignee.as_deref() == Some(a))
    }
}

super::listed_by_creation!(Proposal);
super::page_query!(ProposalQuery => MAX_PROPOSAL_PAGE, cursor);

pub(crate) fn check_action(field: &str, action: &Action) -> Result<(), StoreError> {
    if action.action.trim().is_empty() {
        return Err(StoreError::invalid(
            format!("{field}.action"),
            "must not be empty",
        ));
    }
    super::check_label(&format!("{field}.action"), &action.action)?;
    if !action.input.is_object() {
        return Err(StoreError::invalid(
            format!("{field}.input"),
            "must be a JSON object",
        ));
    }
    Ok(())
}

/// The checks of a new proposal: id, role, summary and domain are bounded
/// labels and text; the outcome is `propose` (with an action) or
/// `escalate`; the decision, when given, is the same role's.
pub fn validate_proposal(p: &Proposal) -> Result<(), StoreError> {
    if !p.id.is_empty() {
        super::validate_record_id(&p.id)?;
    }
    if p.role_id.trim().is_empty() {
        return Err(StoreError::invalid("role_id", "must not be empty"));
    }
    super::check_label("role_id", &p.role_id)?;
    super::check_label("domain", &p.domain)?;
    if p.summary.trim().is_empty() {
        return Err(StoreError::invalid("summary", "must not be empty"));
    }
    super::check_text("summary", &p.summary)?;
    match (p.outcome, &p.action) {
        (Outcome::Propose, None) => {
            return Err(StoreError::inconsistent(
                "action",
                "a proposal to act needs its action (escalate otherwise)",
            ));
        }
        (Outcome::Act | Outcome::Refuse, _) => {
            return Err(StoreError::invalid(
                "outcome",
                "a proposal is `propose` or `escalate`",
            ));
        }
        _ => {}
    }
    if let Some(action) = &p.action {
        check_action("action", action)?;
        if matches!(&action.target, crate::ActionTarget::Tool { tool } if tool == ADOPT_BELIEF_TOOL)
            && p.belief_id().is_none()
        {
            return Err(StoreError::inconsistent(
                "action",
                "`openvibe.adopt_belief` is reserved to a belief's own proposal (bp_<belief id>, from the learn step)",
            ));
        }
    }
    if let Some(assignee) = &p.assignee {
        super::check_label("assignee", assignee)?;
    }
    if let Some(decision) = &p.decision
        && decision.role_id != p.role_id
    {
        return Err(StoreError::inconsistent(
            "decision",
            "the decision is another role's",
        ));
    }
    super::check_meta(&p.meta, "", &p.domain, &[])?;
    Ok(())
}

/// The tool a belief's proposal names: running it (once a person approved
/// the proposal) confirms the belief is active.
pub const ADOPT_BELIEF_TOOL: &str = "openvibe.adopt_belief";

/// The action name of a belief's proposal.
pub const ADOPT_BELIEF_ACTION: &str = "adopt_belief";

/// The id of the proposal that asks a person to approve belief `belief_id`.
pub fn belief_proposal_id(belief_id: &str) -> String {
    format!("bp_{belief_id}")
}

impl Proposal {
    /// The belief this proposal asks a person to approve, when it is a
    /// belief's proposal ([`Belief::to_proposal`](crate::Belief::to_proposal)).
    pub fn belief_id(&self) -> Option<&str> {
        let action = self.action.as_ref()?;
        let belief = match &action.target {
            crate::ActionTarget::Tool { tool } if tool == ADOPT_BELIEF_TOOL => {
                action.input.get("belief_id")?.as_str()?
            }
            _ => return None,
        };
        // Only the learn step's own proposal (`Belief::to_proposal`), never
        // a decision's that happens to name the tool.
        (self.decision.is_none() && self.id == belief_proposal_id(belief)).then_some(belief)
    }

    /// The active belief that this belief's proposal's belief refines
    /// (its action's input names it): approving with
    /// [`Verdict::supersede`] retires that one.
    pub fn refined_belief(&self) -> Option<&str> {
        self.belief_id()?;
        self.action.as_ref()?.input.get("refines")?.as_str()
    }
}

/// Proposals: created by roles, decided by people, claimed once by the
/// runtime that runs them. Every backend enforces the caller-context rules
/// of the module documentation of [`RecordStore`](crate::RecordStore)
/// (tenant, namespace, project, clearance on the proposal's domain) and
/// audits every transition.
#[async_trait]
pub trait ProposalStore: Send + Sync {
    /// Create a pending proposal in `ctx`'s namespace (or the one it
    /// names, with the write right), owned by `ctx`. Creating one with the
    /// id of an existing proposal returns that one when it proposes the
    /// same thing (a role deciding an event twice), else
    /// [`StoreError::Conflict`].
    async fn create(&self, ctx: &CallerContext, proposal: Proposal)
    -> Result<Proposal, StoreError>;

    /// The proposal `id`, when `ctx` may read it (its status as of now).
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Proposal>, StoreError>;

    /// Readable proposals matching `query`, newest first, a page at a time.
    async fn list(
        &self,
        ctx: &CallerContext,
        query: &ProposalQuery,
    ) -> Result<Page<Proposal>, StoreError>;

    /// Approve or reject a pending proposal (atomically: of callers
    /// racing, one succeeds and the others get [`StoreError::Conflict`]).
    /// `ctx` must be allowed to approve it ([`CallerContext::may_approve`]).
    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Proposal, StoreError>;

    /// Claim an approved proposal's execution (atomically: one claim
    /// succeeds, every other is [`StoreError::Conflict`]). `ctx` must be
    /// allowed to change it (its owner, the proposing role, or a manager).
    async fn claim(&self, ctx: &CallerContext, id: &str) -> Result<Proposal, StoreError>;

    /// Record how a claimed proposal's action went: `executed` with its
    /// result, or `failed` with the error. Once.
    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: Result<Value, String>,
    ) -> Result<Proposal, StoreError>;

    /// Mark up to `limit` pending proposals past their deadline `expired`
    /// (each audited) where `ctx` may change them; returns how many.
    async fn expire_due(&self, ctx: &CallerContext, limit: usize) -> Result<u64, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    fn proposal() -> Proposal {
        Proposal::new(
            "cro",
            "Acme asks 20% off",
            Action::tool("give_discount", "apply_discount", json!({"pct": 20})),
        )
        .id("p1")
        .domain("revenue")
    }

    #[test]
    fn the_status_machine_moves_forward_only() {
        let now = Utc::now();
        let p = proposal();
        assert!(p.claimed("agent:cro", now).is_err(), "pending does not run");
        let approved = p.decided(&Verdict::approve("ok"), "user:ann", now).unwrap();
        assert_eq!(approved.status, ProposalStatus::Approved);
        assert_eq!(approved.transition_from(&p), "approve");
        assert!(matches!(
            approved.decided(&Verdict::reject("no"), "user:bob", now),
            Err(StoreError::Conflict { .. })
        ));
        assert!(approved.finished(&Ok(json!(1)), now).is_err(), "unclaimed");
        let claimed = approved.claimed("agent:cro", now).unwrap();
        assert_eq!(claimed.transition_from(&approved), "claim");
        assert!(matches!(
            claimed.claimed("agent:cro", now),
            Err(StoreError::Conflict { .. })
        ));
        let done = claimed.finished(&Ok(json!("applied")), now).unwrap();
        assert_eq!(
            (done.status, done.transition_from(&claimed)),
            (ProposalStatus::Executed, "executed")
        );
        assert!(done.finished(&Ok(json!(2)), now).is_err(), "once");
        let failed = claimed.finished(&Err("timeout".into()), now).unwrap();
        assert_eq!(failed.status, ProposalStatus::Failed);
        assert_eq!(failed.error.as_deref(), Some("timeout"));
    }

    #[test]
    fn rejections_need_a_reason_and_escalations_an_action() {
        let now = Utc::now();
        let p = proposal();
        assert!(matches!(
            p.decided(&Verdict::reject(" "), "user:ann", now),
            Err(StoreError::InvalidInput { .. })
        ));
        let rejected = p
            .decided(&Verdict::reject("too much"), "user:ann", now)
            .unwrap();
        assert_eq!(rejected.reason.as_deref(), Some("too much"));
        assert!(
            rejected.claimed("agent:cro", now).is_err(),
            "a rejected proposal never runs"
        );
        let other = Action::tool("give_discount", "apply_discount", json!({"pct": 50}));
        assert!(
            p.decided(&Verdict::approve_with(other.clone(), "x"), "user:ann", now)
                .is_err()
        );
        let escalation = Proposal::escalation("cro", "what now?").id("p2");
        assert!(
            escalation
                .decided(&Verdict::approve("yes"), "user:ann", now)
                .is_err()
        );
        let chosen = escalation
            .decided(
                &Verdict::approve_with(other.clone(), "do this"),
                "user:ann",
                now,
            )
            .unwrap();
        assert_eq!(chosen.action, Some(other));
    }

    #[test]
    fn a_pending_proposal_past_its_deadline_is_expired() {
        let now = Utc::now();
        let p = proposal().deadline(now - Duration::seconds(1));
        assert_eq!(p.status_at(now), ProposalStatus::Expired);
        assert!(matches!(
            p.decided(&Verdict::approve("late"), "user:ann", now),
            Err(StoreError::Conflict { .. })
        ));
        let q = ProposalQuery::new().status(ProposalStatus::Expired);
        assert!(q.matches(&p, now));
        assert!(
            !ProposalQuery::new()
                .status(ProposalStatus::Pending)
                .matches(&p, now)
        );
    }

    #[test]
    fn new_proposals_are_checked() {
        assert!(validate_proposal(&proposal()).is_ok());
        let mut p = proposal();
        p.action = None;
        assert!(validate_proposal(&p).is_err(), "propose without an action");
        assert!(validate_proposal(&Proposal::escalation("cro", "help")).is_ok());
        assert!(validate_proposal(&Proposal::escalation("", "help")).is_err());
        assert!(validate_proposal(&Proposal::escalation("cro", " ")).is_err());
        let mut bad = proposal();
        bad.action = Some(Action::tool("give_discount", "t", json!([1])));
        assert!(validate_proposal(&bad).is_err());
    }
}
