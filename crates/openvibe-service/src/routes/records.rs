//! Facts, episodes and insights (one set of handlers for every record
//! kind, routed from each kind's rows of the endpoint table), the raw log
//! and semantic knowledge.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use openvibe_api::dto::{
    AppendRaw, DeletedCount, EmbeddingModel, MaybeInsight, PruneRaw, SimilarInsight, Strengthen,
    Touch, Touched,
};
use openvibe_api::endpoints::{self as E, RecordEndpoints, RevisableEndpoints};
use openvibe_protocols::{
    EmbeddingText, Episode, Fact, Insight, Knowledge, KnowledgeHit, KnowledgeQuery, NewKnowledge,
    Observed, Page, RawCall, RawCallQuery,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::Body;
use crate::state::AppState;

/// A record kind the routes serve: its rows of the table, and its bodies
/// and queries as JSON with schemas.
pub(super) trait Served:
    RecordEndpoints<Query: Serialize + DeserializeOwned + JsonSchema>
    + Serialize
    + DeserializeOwned
    + JsonSchema
{
}

impl<R> Served for R where
    R: RecordEndpoints<Query: Serialize + DeserializeOwned + JsonSchema>
        + Serialize
        + DeserializeOwned
        + JsonSchema
{
}

/// Store, get, query and delete of record kind `R`.
fn record_routes<R: Served>(api: Api) -> Api {
    api.route(&R::STORE, store::<R>)
        .route(&R::GET, get::<R>)
        .route(&R::DELETE, delete::<R>)
        .route(&R::QUERY, query::<R>)
}

/// Update and touch of record kind `R`.
fn revisable_routes<R: Served + RevisableEndpoints>(api: Api) -> Api {
    api.route(&R::UPDATE, update::<R>)
        .route(&R::TOUCH, touch::<R>)
}

async fn store<R: Served>(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(record): Body<R>,
) -> Answer<R> {
    Ok(Json(s.stores.records::<R>().store(&ctx, record).await?))
}

async fn get<R: Served>(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<R> {
    let found = s.stores.records::<R>().get(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| {
        not_found(<R as EmbeddingText>::KIND, &id)
    })?))
}

async fn delete<R: Served>(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Result<StatusCode, Failure> {
    s.stores.records::<R>().delete(&ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn query<R: Served>(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<R::Query>,
) -> Answer<Vec<R>> {
    Ok(Json(s.stores.records::<R>().query(&ctx, &q).await?))
}

async fn update<R: Served + RevisableEndpoints>(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(record): Body<R>,
) -> Answer<R> {
    same_id(&id, record.record_id())?;
    Ok(Json(s.stores.revisable::<R>().update(&ctx, record).await?))
}

async fn touch<R: Served + RevisableEndpoints>(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(t): Body<Touch>,
) -> Answer<Touched> {
    let touched = s.stores.revisable::<R>().touch(&ctx, &t.ids).await?;
    Ok(Json(Touched { touched }))
}

pub(super) fn routes(api: Api) -> Api {
    let api = record_routes::<Fact>(api);
    let api = revisable_routes::<Fact>(api);
    let api = record_routes::<Episode>(api);
    let api = record_routes::<Insight>(api);
    let api = revisable_routes::<Insight>(api);
    api
        // the raw log
        .route(&E::APPEND_RAW_CALLS, append_raw)
        .route(&E::GET_RAW_CALL, get_raw)
        .route(&E::QUERY_RAW_CALLS, query_raw)
        .route(&E::PRUNE_RAW_CALLS, prune_raw)
        // the insight extension
        .route(&E::SIMILAR_INSIGHT, similar_insight)
        .route(&E::STRENGTHEN_INSIGHT, strengthen_insight)
        .route(&E::OBSERVE_INSIGHT, observe_insight)
        // semantic knowledge
        .route(&E::STORE_KNOWLEDGE, store_knowledge)
        .route(&E::QUERY_KNOWLEDGE, query_knowledge)
        .route(&E::SEARCH_KNOWLEDGE, query_knowledge)
        .route(&E::EMBEDDING_MODEL, embedding_model)
        .route(&E::GET_KNOWLEDGE, get_knowledge)
        .route(&E::DELETE_KNOWLEDGE, delete_knowledge)
}

async fn append_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<AppendRaw>,
) -> Answer<Vec<RawCall>> {
    Ok(Json(s.stores.raw.append(&ctx, b.calls).await?))
}

async fn get_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<RawCall> {
    let call = s.stores.raw.get(&ctx, &id).await?;
    Ok(Json(call.ok_or_else(|| not_found("raw_call", &id))?))
}

async fn query_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<RawCallQuery>,
) -> Answer<Page<RawCall>> {
    Ok(Json(s.stores.raw.query(&ctx, &q).await?))
}

async fn prune_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<PruneRaw>,
) -> Answer<DeletedCount> {
    let deleted_count = s.stores.raw.prune(&ctx, &b.agent_id, &b.retention).await?;
    Ok(Json(DeletedCount { deleted_count }))
}

async fn similar_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<SimilarInsight>,
) -> Answer<MaybeInsight> {
    let insight = s
        .stores
        .insights
        .find_similar(&ctx, &q.agent_id, &q.content)
        .await?;
    Ok(Json(MaybeInsight { insight }))
}

async fn strengthen_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(b): Body<Strengthen>,
) -> Answer<Insight> {
    Ok(Json(
        s.stores
            .insights
            .strengthen(&ctx, &id, &b.episode_ids)
            .await?,
    ))
}

async fn observe_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(insight): Body<Insight>,
) -> Answer<Observed> {
    Ok(Json(s.stores.insights.observe(&ctx, insight).await?))
}

async fn store_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(k): Body<NewKnowledge>,
) -> Answer<Knowledge> {
    Ok(Json(s.stores.knowledge.store_knowledge(&ctx, k).await?))
}

async fn query_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<KnowledgeQuery>,
) -> Answer<Vec<KnowledgeHit>> {
    Ok(Json(s.stores.knowledge.query_knowledge(&ctx, &q).await?))
}

async fn embedding_model(State(s): State<AppState>, Ctx(_): Ctx) -> Json<EmbeddingModel> {
    let (model, dimensions) = s.stores.knowledge.embedding_model();
    Json(EmbeddingModel {
        model: model.to_owned(),
        dimensions,
    })
}

async fn get_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Knowledge> {
    let k = s.stores.knowledge.get_knowledge(&ctx, &id).await?;
    Ok(Json(k.ok_or_else(|| not_found("knowledge", &id))?))
}

async fn delete_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Result<StatusCode, Failure> {
    s.stores.knowledge.delete_knowledge(&ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A body's id must match the path's: another is a conflict (409), not
/// malformed input, since no schema can say that two places agree.
fn same_id(path: &str, body: &str) -> Result<(), Failure> {
    if path == body {
        Ok(())
    } else {
        Err(openvibe_protocols::StoreError::conflict(format!(
            "the body's id `{body}` is not the path's `{path}`"
        ))
        .into())
    }
}
