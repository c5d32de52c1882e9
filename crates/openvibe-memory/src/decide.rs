//! Deciding what waits for a person: a proposal and, when it is a
//! belief's, the belief with it; a belief and its pending proposal with it.
//! Every edge that decides (HTTP, MCP, the console, the CLI, a role's
//! runtime) calls these, so a person approves a belief in the inbox like
//! any proposal and the two never disagree. Orchestration over two stores
//! of the contract, so it lives here, in the memory layer, not in the
//! contract.

use async_trait::async_trait;
use openvibe_protocols::{
    Belief, BeliefStatus, BeliefStore, CallerContext, Proposal, ProposalStatus, ProposalStore,
    StoreError, Stores, Verdict, belief_proposal_id,
};

/// Decide proposal `id` as `ctx`; when it is a belief's proposal, decide
/// the belief first with the same verdict (approving makes it active,
/// exactly once). Every edge that decides a proposal calls this, so a
/// person approves a belief in the inbox like any proposal. A belief that
/// was already decided the same way (a retry after a crash between the two
/// steps) is not an error; a second decision of the proposal is
/// [`StoreError::Conflict`], as for any proposal.
pub async fn decide_proposal(
    proposals: &dyn ProposalStore,
    beliefs: &dyn BeliefStore,
    ctx: &CallerContext,
    id: &str,
    verdict: &Verdict,
) -> Result<Proposal, StoreError> {
    let belief = match proposals.get(ctx, id).await? {
        // A proposal decided already: its conflict, the belief untouched.
        Some(p) if p.status == ProposalStatus::Pending => p.belief_id().map(str::to_owned),
        _ => None,
    };
    let Some(belief) = belief else {
        return proposals.decide(ctx, id, verdict).await;
    };
    let fresh = decide_belief_step(beliefs, ctx, &belief, verdict).await?;
    match proposals.decide(ctx, id, verdict).await {
        // The same call decided it on a server (a remote store's edge).
        Err(StoreError::Conflict { .. }) if fresh => proposals
            .get(ctx, id)
            .await?
            .filter(|p| p.decided_by.as_deref() == Some(ctx.owner_key().as_str()))
            .ok_or_else(|| StoreError::conflict(format!("proposal `{id}` was decided already"))),
        other => other,
    }
}

/// Decide belief `id` as `ctx` ([`BeliefStore::decide`]), then its
/// proposal ([`belief_proposal_id`]) with the same verdict when one is
/// pending: approving a belief from the CLI or MCP clears it from the inbox.
pub async fn decide_belief(
    proposals: &dyn ProposalStore,
    beliefs: &dyn BeliefStore,
    ctx: &CallerContext,
    id: &str,
    verdict: &Verdict,
) -> Result<Belief, StoreError> {
    let decided = beliefs.decide(ctx, id, verdict).await?;
    match proposals
        .decide(ctx, &belief_proposal_id(id), verdict)
        .await
    {
        Ok(_) | Err(StoreError::NotFound { .. } | StoreError::Conflict { .. }) => Ok(decided),
        Err(e) => Err(e),
    }
}

/// Decide the belief of a belief's proposal: `true` when this call decided
/// it, `false` when it was decided the same way before.
async fn decide_belief_step(
    beliefs: &dyn BeliefStore,
    ctx: &CallerContext,
    id: &str,
    verdict: &Verdict,
) -> Result<bool, StoreError> {
    match beliefs.decide(ctx, id, verdict).await {
        Ok(_) => Ok(true),
        Err(e @ StoreError::Conflict { .. }) => {
            let wanted = if verdict.approve {
                BeliefStatus::Active
            } else {
                BeliefStatus::Rejected
            };
            match beliefs.get(ctx, id).await? {
                Some(b) if b.status == wanted => Ok(false),
                _ => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// [`decide_proposal`] and [`decide_belief`] on a set of stores: what every
/// edge calls (`stores.decide_proposal(&ctx, id, &verdict)`).
#[async_trait]
pub trait Decisions {
    /// Decide a proposal, and the belief of a belief's proposal with it
    /// ([`decide_proposal`]).
    async fn decide_proposal(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Proposal, StoreError>;

    /// Decide a belief, and its pending proposal with it
    /// ([`decide_belief`]).
    async fn decide_belief(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError>;
}

#[async_trait]
impl Decisions for Stores {
    async fn decide_proposal(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Proposal, StoreError> {
        decide_proposal(&*self.proposals, &*self.beliefs, ctx, id, verdict).await
    }

    async fn decide_belief(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        decide_belief(&*self.proposals, &*self.beliefs, ctx, id, verdict).await
    }
}
