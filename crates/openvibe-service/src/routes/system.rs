//! Health, the OpenAPI document, who the caller is, promotion and search;
//! the audit trail, namespace maintenance and record vectors (served from
//! the wire of their store traits).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use openvibe_api::dto::{
    DeleteExpired, DeletedCount, EmbedPending, Embedded, Erase, Health, MoveNamespace, Moved,
    Promote, RedactAudit, Redacted, SearchMemory, VectorLookup,
};
use openvibe_api::endpoints::{self as E, NoContent};
use openvibe_protocols::{
    AuditEntry, AuditQuery, ChainHead, ChainReport, ErasureCount, ErasureSubject, Fact,
    NamespaceCount, RecordVector, VectorStatus, VerifyChain,
};

use super::api::Api;
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    let api = api
        .route(&E::HEALTHZ, healthz)
        .route(&E::READYZ, readyz)
        .route(&E::OPENAPI, openapi)
        .route(&E::WHOAMI, whoami)
        .route(&E::PROMOTE, promote)
        .route(&E::SEARCH_MEMORY, search);
    vector_ops(admin_ops(audit_ops(api)))
}

openvibe_api::store_wire!(AuditLog => super::api::serve_store);
openvibe_api::store_wire!(NamespaceAdmin => super::api::serve_store);
openvibe_api::store_wire!(RecordVectors => super::api::serve_store);

/// Who the caller is, as the service sees it (from its key).
async fn whoami(Ctx(ctx): Ctx) -> super::api::Answer<openvibe_api::Caller> {
    let mut caller = openvibe_api::Caller::from(&ctx);
    caller.tool = None;
    Ok(Json(caller))
}

async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    match (state.ready)().await {
        Ok(()) => (
            StatusCode::OK,
            Json(Health {
                status: "ok".into(),
            }),
        ),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Health {
                status: format!("not ready: {why}"),
            }),
        ),
    }
}

async fn openapi(State(s): State<AppState>) -> Json<serde_json::Value> {
    let doc = if s.access.is_open() {
        crate::openapi::development_document()
    } else {
        crate::openapi::openapi_document()
    };
    let (_, dimensions) = s.stores.knowledge.embedding_model();
    Json(crate::openapi::with_model(doc, dimensions))
}

async fn promote(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(p): Body<Promote>,
) -> Result<Json<Fact>, Failure> {
    Ok(Json(crate::edges::promote(&s.stores, &ctx, p).await?))
}

async fn search(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<SearchMemory>,
) -> Result<Json<Vec<Fact>>, Failure> {
    Ok(Json(crate::edges::search(&s.stores, &ctx, q).await?))
}
