//! Working memory: sessions, plans, task and plan contexts, plan state.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use openvibe_api::dto::{AtomicAppend, AtomicIncrement, Deleted, DeletedCount, SetState};
use openvibe_api::endpoints as E;
use openvibe_protocols::{
    NewPlan, NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanUpdate, Session,
    SessionDeleted, SessionQuery, StateEntry, TaskContext,
};

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::{Body, Params};
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api
        // sessions
        .route(&E::CREATE_SESSION, create_session)
        .route(&E::LIST_SESSIONS, list_sessions)
        .route(&E::GET_SESSION, get_session)
        .route(&E::DELETE_SESSION, delete_session)
        // plans
        .route(&E::CREATE_PLAN, create_plan)
        .route(&E::LIST_PLANS, list_plans)
        .route(&E::GET_PLAN, get_plan)
        .route(&E::UPDATE_PLAN, update_plan)
        .route(&E::DELETE_PLAN, delete_plan)
        // task context
        .route(&E::STORE_TASK_CONTEXT, store_task_context)
        .route(&E::GET_TASK_CONTEXT, get_task_context)
        .route(&E::DELETE_TASK_CONTEXT, delete_task_context)
        .route(&E::GET_TASK_BY_SUBTASK, get_task_by_subtask)
        // plan context
        .route(&E::STORE_PLAN_CONTEXT, store_plan_context)
        .route(&E::GET_PLAN_CONTEXT, get_plan_context)
        .route(&E::GET_PLAN_BY_CORRELATION, get_plan_by_correlation)
        // plan state
        .route(&E::LIST_PLAN_STATE, list_state)
        .route(&E::DELETE_PLAN_STATE, clear_state)
        .route(&E::SET_PLAN_STATE, set_state)
        .route(&E::GET_PLAN_STATE, get_state)
        .route(&E::DELETE_PLAN_STATE_KEY, delete_state)
        .route(&E::ATOMIC_APPEND, atomic_append)
        .route(&E::ATOMIC_INCREMENT, atomic_increment)
}

async fn create_session(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<NewSession>,
) -> Answer<Session> {
    Ok(Json(s.stores.working.create_session(&ctx, b).await?))
}

async fn list_sessions(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Params(q): Params<SessionQuery>,
) -> Answer<Page<Session>> {
    Ok(Json(s.stores.working.list_sessions(&ctx, &q).await?))
}

async fn get_session(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Session> {
    let found = s.stores.working.get_session(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("session", &id))?))
}

async fn delete_session(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<SessionDeleted> {
    Ok(Json(s.stores.working.delete_session(&ctx, &id).await?))
}

async fn create_plan(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<NewPlan>,
) -> Answer<Plan> {
    Ok(Json(s.stores.working.create_plan(&ctx, b).await?))
}

async fn list_plans(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Params(q): Params<PlanQuery>,
) -> Answer<Page<Plan>> {
    Ok(Json(s.stores.working.list_plans(&ctx, &q).await?))
}

async fn get_plan(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Plan> {
    let found = s.stores.working.get_plan(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("plan", &id))?))
}

async fn update_plan(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(b): Body<PlanUpdate>,
) -> Answer<Plan> {
    Ok(Json(s.stores.working.update_plan(&ctx, &id, b).await?))
}

async fn delete_plan(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<PlanDeleted> {
    Ok(Json(s.stores.working.delete_plan(&ctx, &id).await?))
}

async fn store_task_context(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<TaskContext>,
) -> Answer<TaskContext> {
    Ok(Json(s.stores.working.store_task_context(&ctx, b).await?))
}

async fn get_task_context(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<TaskContext> {
    let found = s.stores.working.get_task_context(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("task_context", &id))?))
}

async fn delete_task_context(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Deleted> {
    let deleted = s.stores.working.delete_task_context(&ctx, &id).await?;
    Ok(Json(Deleted { deleted }))
}

async fn get_task_by_subtask(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<TaskContext> {
    let found = s.stores.working.get_task_by_subtask(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("task_context", &id))?))
}

async fn store_plan_context(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<PlanContext>,
) -> Answer<PlanContext> {
    Ok(Json(s.stores.working.store_plan_context(&ctx, b).await?))
}

async fn get_plan_context(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<PlanContext> {
    let found = s.stores.working.get_plan_context(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("plan_context", &id))?))
}

async fn get_plan_by_correlation(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<PlanContext> {
    let found = s.stores.working.get_plan_by_correlation(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("plan_context", &id))?))
}

async fn list_state(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(plan_id): Path<String>,
) -> Answer<Vec<StateEntry>> {
    Ok(Json(s.stores.working.list_state(&ctx, &plan_id).await?))
}

async fn clear_state(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(plan_id): Path<String>,
) -> Answer<DeletedCount> {
    let deleted_count = s.stores.working.clear_state(&ctx, &plan_id).await?;
    Ok(Json(DeletedCount { deleted_count }))
}

async fn set_state(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path((plan_id, key)): Path<(String, String)>,
    Body(b): Body<SetState>,
) -> Answer<StateEntry> {
    Ok(Json(
        s.stores
            .working
            .set_state(&ctx, &plan_id, &key, b.value, b.expect)
            .await?,
    ))
}

async fn get_state(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path((plan_id, key)): Path<(String, String)>,
) -> Answer<StateEntry> {
    let found = s.stores.working.get_state(&ctx, &plan_id, &key).await?;
    Ok(Json(found.ok_or_else(|| not_found("state", &key))?))
}

async fn delete_state(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path((plan_id, key)): Path<(String, String)>,
) -> Answer<Deleted> {
    let deleted = s.stores.working.delete_state(&ctx, &plan_id, &key).await?;
    Ok(Json(Deleted { deleted }))
}

async fn atomic_append(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<AtomicAppend>,
) -> Result<StatusCode, Failure> {
    s.stores
        .working
        .append_state(&ctx, &b.plan_id, &b.key, b.value)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn atomic_increment(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<AtomicIncrement>,
) -> Answer<StateEntry> {
    Ok(Json(
        s.stores
            .working
            .increment_state(&ctx, &b.plan_id, &b.key, b.by)
            .await?,
    ))
}
