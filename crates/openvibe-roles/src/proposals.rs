//! What a role does with proposals: it files them (a `Propose` or
//! `Escalate` decision, a tool call that needs approval) and, once a person
//! approved one, runs its action **once**: claim (one claim wins, whoever
//! races), run, record how it went.
//!
//! A runtime that stops between a person's approval and the claim leaves
//! the proposal `approved` and unclaimed: [`Role::resume_proposals`] runs it
//! on the next start. One that stops between the claim and the finish
//! cannot know whether the action ran: the proposal is marked `failed`
//! ([`INTERRUPTED`]) and never runs again (at most once; a person decides
//! whether to propose it anew).

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Decision, Outcome, Proposal, ProposalQuery, ProposalStatus, StoreError,
};

use crate::{Error, Role};

/// The error a proposal claimed by a runtime that stopped before it
/// finished gets: whether its action ran is unknown, so it does not run again.
pub const INTERRUPTED: &str = "interrupted: the runtime stopped after claiming this proposal and before recording how its action went; it is not run again (at most once)";

/// How many overdue proposals one [`Role::resume_proposals`] records
/// expired (the next call records more).
pub const EXPIRE_BATCH: usize = 1_000;

/// What [`Role::resume_proposals`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Resumed {
    /// Approved proposals whose action ran now (executed or failed).
    pub ran: Vec<Proposal>,
    /// Proposals claimed by an earlier process that never finished them,
    /// now `failed` ([`INTERRUPTED`]).
    pub interrupted: Vec<String>,
    /// Pending proposals past their deadline, now recorded `expired`.
    pub expired: u64,
}

impl Resumed {
    /// Whether nothing was left to do.
    pub fn is_empty(&self) -> bool {
        self.ran.is_empty() && self.interrupted.is_empty() && self.expired == 0
    }
}

impl Error {
    /// Whether this is a proposal store's conflict: the proposal was decided
    /// or claimed already (a racing approver or runtime won).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Error::Proposal {
                source: StoreError::Conflict { .. },
                ..
            }
        )
    }
}

fn store_error(id: &str) -> impl FnOnce(StoreError) -> Error + '_ {
    move |source| Error::Proposal {
        id: id.to_owned(),
        source,
    }
}

impl Role {
    /// The caller context the role files and runs its proposals as: its
    /// agent memory's (tenant, project, clearance), else the role as an
    /// agent in the default tenant.
    pub fn proposal_context(&self) -> CallerContext {
        self.agent_memory().map_or_else(
            || CallerContext::agent(self.role_id().to_owned()),
            |m| m.context().clone(),
        )
    }

    fn proposal_store(
        &self,
    ) -> Result<&std::sync::Arc<dyn openvibe_protocols::ProposalStore>, Error> {
        self.proposals().ok_or_else(|| Error::NoProposals {
            role: self.role_id().to_owned(),
        })
    }

    /// File the proposal of a `Propose` or `Escalate` decision (its id is
    /// the decision's: filing it twice returns the first); an escalation is
    /// assigned to the role's [escalation assignee](Role::escalate_to).
    pub async fn propose(&self, decision: &Decision) -> Result<Proposal, Error> {
        let store = self.proposal_store()?;
        if !matches!(decision.outcome, Outcome::Propose | Outcome::Escalate) {
            return Err(Error::InvalidEvent {
                field: "outcome".into(),
                message: format!(
                    "only a propose or escalate decision becomes a proposal, not {}",
                    decision.outcome
                ),
            });
        }
        let mut proposal = Proposal::from_decision(decision);
        if decision.outcome == Outcome::Escalate {
            proposal.assignee = self.escalation_assignee().map(str::to_owned);
        }
        store
            .create(&self.proposal_context(), proposal)
            .await
            .map_err(store_error(&decision.id))
    }

    /// Run the approved proposal `id` once: claim it (of runtimes racing,
    /// one wins; the others get a conflict, [`Error::is_conflict`]), run its
    /// action with the approval ([`Role::execute`]), record the result in
    /// the proposal (`executed` or `failed`) and, for a decision's
    /// proposal, the run as an episode. A pending, rejected or expired
    /// proposal is a conflict and nothing runs.
    pub async fn run_approved(&self, id: &str) -> Result<Proposal, Error> {
        let store = self.proposal_store()?;
        let ctx = self.proposal_context();
        let claimed = store.claim(&ctx, id).await.map_err(store_error(id))?;
        let span = tracing::info_span!("proposal", role = %self.role_id(), proposal = %id);
        let _entered = span.enter();
        let Some(action) = claimed.action.clone() else {
            // An approval always carries an action (the store checks it).
            let finished = store
                .finish(&ctx, id, Err("approved without an action".to_owned()))
                .await
                .map_err(store_error(id))?;
            return Ok(finished);
        };
        let result = match claimed.belief_id() {
            // A belief's proposal: the approval made the belief active.
            Some(belief) => self.confirm_belief(belief).await,
            None => self.execute_as(&action, true, Some(id)).await,
        };
        if let Some(decision) = &claimed.decision {
            self.record_run(decision, &action, &result).await?;
        }
        let outcome = result.map_err(|e| e.to_string());
        let finished = store
            .finish(&ctx, id, outcome)
            .await
            .map_err(store_error(id))?;
        // A delegated request's proposal: its asker gets the final answer.
        self.answer_proposal(&finished).await?;
        Ok(finished)
    }

    /// What running an approved belief's proposal does: confirm the
    /// approval made the belief active (the person's decision did it,
    /// exactly once); its result names the belief.
    async fn confirm_belief(&self, id: &str) -> Result<serde_json::Value, Error> {
        let refuse = |message: String| Error::Action {
            role: self.role_id().to_owned(),
            action: openvibe_protocols::ADOPT_BELIEF_ACTION.to_owned(),
            message,
        };
        let memory = self
            .agent_memory()
            .ok_or_else(|| refuse("the role has no agent memory".into()))?;
        let belief = memory
            .belief_store()
            .get(&self.proposal_context(), id)
            .await
            .map_err(|e| refuse(e.to_string()))?
            .ok_or_else(|| refuse(format!("belief `{id}` not found")))?;
        if belief.status != openvibe_protocols::BeliefStatus::Active {
            return Err(refuse(format!(
                "belief `{id}` is {}, not active",
                belief.status
            )));
        }
        Ok(
            serde_json::json!({ "belief_id": belief.id, "status": belief.status, "version": belief.version }),
        )
    }

    /// Record that the claimed proposal `id` was interrupted: its claim's
    /// runtime stopped before recording how the action went, so whether it
    /// ran is unknown and it does not run again (`failed`, [`INTERRUPTED`]).
    /// A conflict when it is not claimed-and-unfinished.
    pub async fn mark_interrupted(&self, id: &str) -> Result<Proposal, Error> {
        self.proposal_store()?
            .finish(&self.proposal_context(), id, Err(INTERRUPTED.to_owned()))
            .await
            .map_err(store_error(id))
    }

    /// Record the role's pending proposals past their deadline `expired`
    /// (up to [`EXPIRE_BATCH`], audited; reads already show them so); how
    /// many.
    pub async fn expire_overdue_proposals(&self) -> Result<u64, Error> {
        self.proposal_store()?
            .expire_due(&self.proposal_context(), EXPIRE_BATCH)
            .await
            .map_err(store_error("(expire)"))
    }

    /// The role's approved proposals (claimed or not), oldest first: the
    /// order approvals run in.
    pub async fn approved_proposals(&self) -> Result<Vec<Proposal>, Error> {
        let store = self.proposal_store()?;
        let ctx = self.proposal_context();
        let query = ProposalQuery::new()
            .role(self.role_id())
            .status(ProposalStatus::Approved)
            .limit(100);
        let mut approved = openvibe_protocols::Page::all(|cursor| {
            let mut query = query.clone();
            query.cursor = cursor;
            let (store, ctx) = (store, &ctx);
            async move { store.list(ctx, &query).await }
        })
        .await
        .map_err(store_error("(list)"))?;
        approved.reverse();
        Ok(approved)
    }

    /// Catch up with the role's proposals: record pending ones past their
    /// deadline `expired` (audited; reads already show them so); run every
    /// approved, unclaimed one ([`Role::run_approved`]); mark `failed`
    /// ([`INTERRUPTED`]) every one claimed before `started` (by a process
    /// that stopped) and never finished. Call it when a runtime starts, and
    /// whenever approvals may have arrived. A proposal another runtime
    /// claims first is skipped.
    pub async fn resume_proposals(&self, started: DateTime<Utc>) -> Result<Resumed, Error> {
        let mut resumed = Resumed {
            expired: self.expire_overdue_proposals().await?,
            ..Resumed::default()
        };
        for p in self.approved_proposals().await? {
            match (&p.claimed_by, p.claimed_at) {
                (None, _) => match self.run_approved(&p.id).await {
                    Ok(done) => resumed.ran.push(done),
                    Err(e) if e.is_conflict() => {}
                    Err(e) => return Err(e),
                },
                (Some(_), Some(at)) if at < started => match self.mark_interrupted(&p.id).await {
                    Ok(_) => resumed.interrupted.push(p.id),
                    Err(e) if e.is_conflict() => {}
                    Err(e) => return Err(e),
                },
                _ => {}
            }
        }
        if !resumed.is_empty() {
            tracing::info!(
                role = %self.role_id(),
                ran = resumed.ran.len(),
                interrupted = resumed.interrupted.len(),
                expired = resumed.expired,
                "proposals resumed"
            );
        }
        Ok(resumed)
    }
}
