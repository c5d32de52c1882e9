//! Goals: objectives, their decomposition, daily priorities and metric
//! reports (`/v1/memory/goals`, `/v1/memory/priorities`,
//! `/v1/memory/metrics`). A CRM webhook reports a metric with a key whose
//! policy grants `write` in the goal's namespace.

use axum::Json;
use axum::extract::{Path, State};
use openvibe_api::dto::{Decompose, PrioritiesOf};
use openvibe_api::endpoints as E;
use openvibe_protocols::{
    Goal, GoalProgress, GoalQuery, MetricReport, Page, Priorities, ReportQuery,
};

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api.route(&E::PUT_GOAL, put)
        .route(&E::GET_GOAL, get)
        .route(&E::QUERY_GOALS, query)
        .route(&E::DECOMPOSE_GOAL, decompose)
        .route(&E::GOAL_PROGRESS, progress)
        .route(&E::PUT_PRIORITIES, put_priorities)
        .route(&E::GET_PRIORITIES, priorities)
        .route(&E::REPORT_METRIC, report)
        .route(&E::QUERY_REPORTS, reports)
}

async fn reports(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<ReportQuery>,
) -> Answer<Page<MetricReport>> {
    Ok(Json(s.stores.goals.reports(&ctx, &q).await?))
}

async fn put(State(s): State<AppState>, Ctx(ctx): Ctx, Body(g): Body<Goal>) -> Answer<Goal> {
    Ok(Json(s.stores.goals.put(&ctx, g).await?))
}

async fn get(State(s): State<AppState>, Ctx(ctx): Ctx, Path(id): Path<String>) -> Answer<Goal> {
    let found = s.stores.goals.get(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("goal", &id))?))
}

async fn query(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<GoalQuery>,
) -> Answer<Page<Goal>> {
    Ok(Json(s.stores.goals.list(&ctx, &q).await?))
}

async fn decompose(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(d): Body<Decompose>,
) -> Answer<Goal> {
    let goal = s
        .stores
        .goals
        .decompose(&ctx, &id, &d.fingerprint, d.initiatives)
        .await?;
    Ok(Json(goal))
}

async fn progress(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<GoalProgress> {
    let found = s.stores.goals.progress(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("goal", &id))?))
}

async fn put_priorities(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(p): Body<Priorities>,
) -> Answer<Priorities> {
    Ok(Json(s.stores.goals.put_priorities(&ctx, p).await?))
}

async fn priorities(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<PrioritiesOf>,
) -> Answer<Priorities> {
    let found = s.stores.goals.priorities(&ctx, &q.role_id, q.day).await?;
    let id = Priorities::id_of(&q.role_id, q.day);
    Ok(Json(found.ok_or_else(|| not_found("priorities", &id))?))
}

async fn report(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(r): Body<MetricReport>,
) -> Answer<MetricReport> {
    Ok(Json(s.stores.goals.report(&ctx, r).await?))
}
