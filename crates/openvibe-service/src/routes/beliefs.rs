//! Beliefs (L4): what a role holds true once a person approved it
//! (`/v1/memory/beliefs`).

use axum::Json;
use axum::extract::{Path, State};
use openvibe_api::dto::RetireBelief;
use openvibe_api::endpoints as E;
use openvibe_protocols::{Belief, BeliefQuery, Page, Verdict};

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api.route(&E::PROPOSE_BELIEF, propose)
        .route(&E::GET_BELIEF, get)
        .route(&E::QUERY_BELIEFS, query)
        .route(&E::DECIDE_BELIEF, decide)
        .route(&E::RETIRE_BELIEF, retire)
}

async fn propose(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<Belief>,
) -> Answer<Belief> {
    Ok(Json(s.stores.beliefs.propose(&ctx, b).await?))
}

async fn get(State(s): State<AppState>, Ctx(ctx): Ctx, Path(id): Path<String>) -> Answer<Belief> {
    let found = s.stores.beliefs.get(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("belief", &id))?))
}

async fn query(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<BeliefQuery>,
) -> Answer<Page<Belief>> {
    Ok(Json(s.stores.beliefs.list(&ctx, &q).await?))
}

async fn decide(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(v): Body<Verdict>,
) -> Answer<Belief> {
    Ok(Json(s.stores.decide_belief(&ctx, &id, &v).await?))
}

async fn retire(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(r): Body<RetireBelief>,
) -> Answer<Belief> {
    Ok(Json(s.stores.beliefs.retire(&ctx, &id, &r.reason).await?))
}
