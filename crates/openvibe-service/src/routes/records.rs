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
use openvibe_api::endpoints::{NoContent, RecordEndpoints, RevisableEndpoints};
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
    knowledge_ops(insight_ops(raw_ops(api)))
}

openvibe_api::store_wire!(RawLogStore => super::api::serve_store);
openvibe_api::store_wire!(InsightStore => super::api::serve_store);
openvibe_api::store_wire!(KnowledgeStore => super::api::serve_store);

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
