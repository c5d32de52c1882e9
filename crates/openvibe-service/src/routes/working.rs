//! Working memory: sessions, plans, task and plan contexts, plan state.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use openvibe_api::dto::{AtomicAppend, AtomicIncrement, Deleted, DeletedCount, SetState};
use openvibe_api::paths;
use openvibe_protocols::{
    NewPlan, NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanUpdate, Session,
    SessionDeleted, SessionQuery, StateEntry, TaskContext,
};

use super::{Answer, Api, AppState, not_found, on};
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::{Body, Params, Record};
use crate::openapi::Op;

pub(super) fn routes(api: Api) -> Api {
    use Method as M;
    api
        // sessions
        .op(
            Op::new(
                M::POST,
                paths::SESSIONS,
                "createSession",
                "Create a session",
            )
            .body::<NewSession>()
            .returns::<Session>(),
            on(&M::POST, create_session),
        )
        .op(
            Op::new(
                M::GET,
                paths::SESSIONS,
                "listSessions",
                "Sessions, newest first, a page at a time",
            )
            .query::<SessionQuery>()
            .returns::<Page<Session>>(),
            on(&M::GET, list_sessions),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/sessions/{id}",
                "getSession",
                "A session",
            )
            .returns::<Session>(),
            on(&M::GET, get_session),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/sessions/{id}",
                "deleteSession",
                "Delete a session; its plans stay, detached",
            )
            .returns::<SessionDeleted>(),
            on(&M::DELETE, delete_session),
        )
        // plans
        .op(
            Op::new(M::POST, paths::PLANS, "createPlan", "Create a plan")
                .body::<NewPlan>()
                .returns::<Plan>(),
            on(&M::POST, create_plan),
        )
        .op(
            Op::new(
                M::GET,
                paths::PLANS,
                "listPlans",
                "Plans, newest first, filtered by status and session, a page at a time",
            )
            .query::<PlanQuery>()
            .returns::<Page<Plan>>(),
            on(&M::GET, list_plans),
        )
        .op(
            Op::new(M::GET, "/v1/memory/plans/{id}", "getPlan", "A plan").returns::<Plan>(),
            on(&M::GET, get_plan),
        )
        .op(
            Op::new(
                M::PUT,
                "/v1/memory/plans/{id}",
                "updatePlan",
                "Change a plan's status, goal data or response event",
            )
            .body::<PlanUpdate>()
            .returns::<Plan>(),
            on(&M::PUT, update_plan),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/plans/{id}",
                "deletePlan",
                "Delete a plan with its context and state; sub-plans stay, detached",
            )
            .returns::<PlanDeleted>(),
            on(&M::DELETE, delete_plan),
        )
        // task context
        .op(
            Op::new(
                M::POST,
                paths::TASK_CONTEXT,
                "storeTaskContext",
                "Store a task's context (a worker that delegated sub-tasks)",
            )
            .body::<TaskContext>()
            .returns::<TaskContext>(),
            on(&M::POST, store_task_context),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/task-context/{id}",
                "getTaskContext",
                "A task's context",
            )
            .returns::<TaskContext>(),
            on(&M::GET, get_task_context),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/task-context/{id}",
                "deleteTaskContext",
                "Delete a task's context",
            )
            .returns::<Deleted>(),
            on(&M::DELETE, delete_task_context),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/task-context/by-subtask/{id}",
                "getTaskBySubtask",
                "The task that delegated a sub-task",
            )
            .returns::<TaskContext>(),
            on(&M::GET, get_task_by_subtask),
        )
        // plan context
        .op(
            Op::new(
                M::POST,
                paths::PLAN_CONTEXT,
                "storePlanContext",
                "Store a plan's context (a planner's state machine)",
            )
            .body::<PlanContext>()
            .returns::<PlanContext>(),
            on(&M::POST, store_plan_context),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/plan-context/{id}",
                "getPlanContext",
                "A plan's context",
            )
            .returns::<PlanContext>(),
            on(&M::GET, get_plan_context),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/plan-context/by-correlation/{id}",
                "getPlanByCorrelation",
                "The plan context waiting for a correlation id",
            )
            .returns::<PlanContext>(),
            on(&M::GET, get_plan_by_correlation),
        )
        // plan state
        .op(
            Op::new(
                M::GET,
                "/v1/memory/working/{plan_id}",
                "listPlanState",
                "Every key of a plan's working memory",
            )
            .returns::<Vec<StateEntry>>(),
            on(&M::GET, list_state),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/working/{plan_id}",
                "deletePlanState",
                "Delete every key of a plan's working memory",
            )
            .returns::<DeletedCount>(),
            on(&M::DELETE, clear_state),
        )
        .op(
            Op::new(
                M::PUT,
                "/v1/memory/working/{plan_id}/{key}",
                "setPlanState",
                "Set one key (optimistic locking with expect)",
            )
            .body::<SetState>()
            .returns::<StateEntry>(),
            on(&M::PUT, set_state),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/working/{plan_id}/{key}",
                "getPlanState",
                "One key",
            )
            .returns::<StateEntry>(),
            on(&M::GET, get_state),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/working/{plan_id}/{key}",
                "deletePlanStateKey",
                "Delete one key",
            )
            .returns::<Deleted>(),
            on(&M::DELETE, delete_state),
        )
        .op(
            Op::new(
                M::POST,
                paths::ATOMIC_APPEND,
                "atomicAppend",
                "Append to a list, atomically (no lost update)",
            )
            .body::<AtomicAppend>(),
            on(&M::POST, atomic_append),
        )
        .op(
            Op::new(
                M::POST,
                paths::ATOMIC_INCREMENT,
                "atomicIncrement",
                "Add to a counter, atomically (no lost update)",
            )
            .body::<AtomicIncrement>()
            .returns::<StateEntry>(),
            on(&M::POST, atomic_increment),
        )
}

async fn create_session(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(b): Record<NewSession>,
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
    Record(b): Record<NewPlan>,
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
    Record(b): Record<PlanUpdate>,
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
    Record(b): Record<TaskContext>,
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
    Record(b): Record<PlanContext>,
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
