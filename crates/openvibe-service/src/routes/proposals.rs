//! Proposals: what waits for a person (`/v1/memory/proposals`).

use axum::Json;
use axum::extract::{Path, State};
use openvibe_api::dto::{ExpireProposals, ExpiredCount, FinishProposal};
use openvibe_api::endpoints as E;
use openvibe_protocols::{Page, Proposal, ProposalQuery, Verdict};

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api.route(&E::CREATE_PROPOSAL, create)
        .route(&E::GET_PROPOSAL, get)
        .route(&E::QUERY_PROPOSALS, query)
        .route(&E::DECIDE_PROPOSAL, decide)
        .route(&E::CLAIM_PROPOSAL, claim)
        .route(&E::FINISH_PROPOSAL, finish)
        .route(&E::EXPIRE_PROPOSALS, expire)
}

async fn create(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(p): Body<Proposal>,
) -> Answer<Proposal> {
    Ok(Json(s.stores.proposals.create(&ctx, p).await?))
}

async fn get(State(s): State<AppState>, Ctx(ctx): Ctx, Path(id): Path<String>) -> Answer<Proposal> {
    let found = s.stores.proposals.get(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("proposal", &id))?))
}

async fn query(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<ProposalQuery>,
) -> Answer<Page<Proposal>> {
    Ok(Json(s.stores.proposals.list(&ctx, &q).await?))
}

async fn decide(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(v): Body<Verdict>,
) -> Answer<Proposal> {
    Ok(Json(s.stores.decide_proposal(&ctx, &id, &v).await?))
}

async fn claim(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Proposal> {
    Ok(Json(s.stores.proposals.claim(&ctx, &id).await?))
}

async fn finish(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(f): Body<FinishProposal>,
) -> Answer<Proposal> {
    let outcome = f.outcome()?;
    Ok(Json(s.stores.proposals.finish(&ctx, &id, outcome).await?))
}

async fn expire(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(e): Body<ExpireProposals>,
) -> Answer<ExpiredCount> {
    let expired = s.stores.proposals.expire_due(&ctx, e.limit).await?;
    Ok(Json(ExpiredCount { expired }))
}
