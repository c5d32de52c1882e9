//! Health, the OpenAPI document, the audit trail, namespaces, promotion.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use openvibe_api::dto::{
    DeleteExpired, DeletedCount, EmbedPending, Embedded, Erase, Health, MoveNamespace, Moved,
    Promote, RedactAudit, Redacted, SearchMemory, VectorLookup,
};
use openvibe_api::endpoints as E;
use openvibe_protocols::{
    AuditEntry, AuditQuery, ErasureCount, ErasureSubject, Fact, NamespaceCount, RecordVector,
    VectorStatus,
};

use super::api::Api;
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api.route(&E::HEALTHZ, healthz)
        .route(&E::READYZ, readyz)
        .route(&E::OPENAPI, openapi)
        .route(&E::WHOAMI, whoami)
        .route(&E::APPEND_AUDIT, append_audit)
        .route(&E::QUERY_AUDIT, query_audit)
        .route(&E::FLUSH_AUDIT, flush_audit)
        .route(&E::VERIFY_AUDIT, verify_audit)
        .route(&E::AUDIT_ANCHOR, audit_anchor)
        .route(&E::NAMESPACE_COUNTS, namespace_counts)
        .route(&E::MOVE_NAMESPACE, move_namespace)
        .route(&E::DELETE_EXPIRED, delete_expired)
        .route(&E::ERASURE_COUNTS, erasure_counts)
        .route(&E::ERASE, erase)
        .route(&E::REDACT_AUDIT, redact_audit)
        .route(&E::RECORD_VECTORS, record_vectors)
        .route(&E::VECTOR_STATUS, vector_status)
        .route(&E::EMBED_PENDING, embed_pending)
        .route(&E::PROMOTE, promote)
        .route(&E::SEARCH_MEMORY, search)
}

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

async fn append_audit(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(entry): Body<AuditEntry>,
) -> Result<StatusCode, Failure> {
    s.stores.audit.append(&ctx, entry).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn query_audit(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(query): Body<AuditQuery>,
) -> Result<Json<Vec<AuditEntry>>, Failure> {
    Ok(Json(s.stores.audit.query(&ctx, &query).await?))
}

async fn verify_audit(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(v): Body<openvibe_protocols::VerifyChain>,
) -> Result<Json<openvibe_protocols::ChainReport>, Failure> {
    Ok(Json(s.stores.audit.verify(&ctx, &v).await?))
}

async fn audit_anchor(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
) -> Result<Json<openvibe_protocols::ChainHead>, Failure> {
    Ok(Json(s.stores.audit.anchor(&ctx).await?))
}

async fn flush_audit(State(s): State<AppState>, Ctx(_): Ctx) -> Result<StatusCode, Failure> {
    s.stores.audit.flush().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn namespace_counts(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
) -> Result<Json<Vec<NamespaceCount>>, Failure> {
    Ok(Json(s.stores.admin.namespace_counts(&ctx).await?))
}

async fn move_namespace(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(m): Body<MoveNamespace>,
) -> Result<Json<Moved>, Failure> {
    let moved = s
        .stores
        .admin
        .move_namespace(&ctx, &m.kind, &m.from, &m.to, m.batch)
        .await?;
    Ok(Json(Moved { moved }))
}

async fn delete_expired(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(d): Body<DeleteExpired>,
) -> Result<Json<DeletedCount>, Failure> {
    let deleted_count = s.stores.admin.delete_expired(&ctx, d.batch).await?;
    Ok(Json(DeletedCount { deleted_count }))
}

async fn erasure_counts(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(subject): Body<ErasureSubject>,
) -> Result<Json<Vec<ErasureCount>>, Failure> {
    Ok(Json(s.stores.admin.erasure_counts(&ctx, &subject).await?))
}

async fn erase(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(e): Body<Erase>,
) -> Result<Json<Vec<ErasureCount>>, Failure> {
    Ok(Json(s.stores.admin.erase(&ctx, &e.subject, e.batch).await?))
}

async fn redact_audit(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(r): Body<RedactAudit>,
) -> Result<Json<Redacted>, Failure> {
    let redacted = s.stores.audit.redact(&ctx, &r.subject, r.dry_run).await?;
    Ok(Json(Redacted { redacted }))
}

async fn record_vectors(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(l): Body<VectorLookup>,
) -> Result<Json<Vec<RecordVector>>, Failure> {
    Ok(Json(
        s.stores
            .vectors
            .vectors(&ctx, &l.model, &l.kind, &l.ids)
            .await?,
    ))
}

async fn vector_status(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
) -> Result<Json<VectorStatus>, Failure> {
    Ok(Json(s.stores.vectors.vector_status(&ctx).await?))
}

async fn embed_pending(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(e): Body<EmbedPending>,
) -> Result<Json<Embedded>, Failure> {
    let embedded = s.stores.vectors.embed_pending(&ctx, e.batch).await?;
    Ok(Json(Embedded { embedded }))
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
