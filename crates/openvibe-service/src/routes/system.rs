//! Health, the OpenAPI document, the audit trail, namespaces, promotion.

use axum::Json;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::IntoResponse;
use openvibe_api::dto::{
    DeleteExpired, DeletedCount, EmbedPending, Embedded, Health, MoveNamespace, Moved, Promote,
    VectorLookup,
};
use openvibe_api::paths;
use openvibe_protocols::memory::promotion::{Promotion, promote_fact, promote_insight};
use openvibe_protocols::{
    AuditEntry, AuditQuery, Fact, NamespaceCount, RecordVector, StoreError, VectorStatus,
};

use super::{Api, AppState, on};
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::{Body, Record};
use crate::openapi::Op;

pub(super) fn routes(api: Api) -> Api {
    use Method as M;
    api.op(
        Op::new(
            M::GET,
            paths::HEALTHZ,
            "healthz",
            "Liveness: the process answers",
        )
        .returns::<Health>()
        .public(),
        on(&M::GET, healthz),
    )
    .op(
        Op::new(
            M::GET,
            paths::READYZ,
            "readyz",
            "Readiness: the database answers (503 when not)",
        )
        .returns::<Health>()
        .public(),
        on(&M::GET, readyz),
    )
    .op(
        Op::new(M::GET, paths::OPENAPI, "openapi", "This document").public(),
        on(&M::GET, openapi),
    )
    .op(
        Op::new(
            M::POST,
            paths::AUDIT,
            "appendAudit",
            "Append an audit entry for an operation composed above the stores",
        )
        .body::<AuditEntry>(),
        on(&M::POST, append_audit),
    )
    .op(
        Op::new(
            M::POST,
            paths::AUDIT_QUERY,
            "queryAudit",
            "Audit entries, newest first (a non-privileged caller sees its own)",
        )
        .body::<AuditQuery>()
        .returns::<Vec<AuditEntry>>(),
        on(&M::POST, query_audit),
    )
    .op(
        Op::new(
            M::POST,
            paths::AUDIT_FLUSH,
            "flushAudit",
            "Write batched audit entries now",
        ),
        on(&M::POST, flush_audit),
    )
    .op(
        Op::new(
            M::GET,
            paths::NAMESPACES,
            "namespaceCounts",
            "Records per kind and namespace (privileged)",
        )
        .returns::<Vec<NamespaceCount>>(),
        on(&M::GET, namespace_counts),
    )
    .op(
        Op::new(
            M::POST,
            paths::NAMESPACES_MOVE,
            "moveNamespace",
            "Move one kind's records to another namespace (privileged, batched, audited)",
        )
        .body::<MoveNamespace>()
        .returns::<Moved>(),
        on(&M::POST, move_namespace),
    )
    .op(
        Op::new(
            M::POST,
            paths::EXPIRED_DELETE,
            "deleteExpired",
            "Delete one batch of expired records, whoever owns them, where the caller manages \
             the namespace (or everywhere when privileged); each deletion is audited",
        )
        .body::<DeleteExpired>()
        .returns::<DeletedCount>(),
        on(&M::POST, delete_expired),
    )
    .op(
        Op::new(
            M::POST,
            paths::VECTORS,
            "recordVectors",
            "The current vectors of a model for records the caller may read (the others are \
             left out)",
        )
        .body::<VectorLookup>()
        .returns::<Vec<RecordVector>>(),
        on(&M::POST, record_vectors),
    )
    .op(
        Op::new(
            M::GET,
            paths::VECTORS_STATUS,
            "vectorStatus",
            "The store's embedding model and, per kind, records with a current vector and \
             records waiting (privileged)",
        )
        .returns::<VectorStatus>(),
        on(&M::GET, vector_status),
    )
    .op(
        Op::new(
            M::POST,
            paths::VECTORS_EMBED,
            "embedPending",
            "Embed one batch of records waiting for a vector, without rewriting them \
             (privileged)",
        )
        .body::<EmbedPending>()
        .returns::<Embedded>(),
        on(&M::POST, embed_pending),
    )
    .op(
        Op::new(
            M::POST,
            paths::PROMOTE,
            "promote",
            "Promote a fact or insight into another namespace as a fact (audited)",
        )
        .body::<Promote>()
        .returns::<Fact>(),
        on(&M::POST, promote),
    )
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

async fn openapi() -> Json<serde_json::Value> {
    Json(crate::openapi::openapi_document())
}

async fn append_audit(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(entry): Record<AuditEntry>,
) -> Result<StatusCode, Failure> {
    s.stores.audit.append(&ctx, entry).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn query_audit(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(query): Record<AuditQuery>,
) -> Result<Json<Vec<AuditEntry>>, Failure> {
    Ok(Json(s.stores.audit.query(&ctx, &query).await?))
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
    let promotion = Promotion {
        to: p.to,
        mode: p.mode,
        note: p.note,
    };
    let audit = Some(s.stores.audit.as_ref());
    let fact = match p.kind.as_str() {
        "fact" => promote_fact(s.stores.facts.as_ref(), audit, &ctx, &p.id, &promotion).await?,
        "insight" => {
            promote_insight(
                s.stores.insights.as_ref(),
                s.stores.facts.as_ref(),
                audit,
                &ctx,
                &p.id,
                &promotion,
            )
            .await?
        }
        other => {
            return Err(StoreError::invalid(
                "kind",
                format!("`{other}` cannot be promoted (fact or insight)"),
            )
            .into());
        }
    };
    Ok(Json(fact))
}
