//! V1 key/value memory ([`MemoryProvider`]) on PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Change, MemoryEntry, MemoryProvider, StoreError, content_hash,
};
use sqlx::{PgPool, Row};
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::error::store_error;
use crate::span::span;
use crate::sql::Sql;
use crate::text::{TextFilter, text_filter};
use crate::tx::begin;
use openvibe_protocols::check_caller;
use openvibe_protocols::{check_label, check_text, record_terms};

/// V1 key/value memory in the `memory_entries` table, as one caller
/// (the V1 trait carries no caller context: it is fixed at construction).
///
/// Entries are owned by the caller that first stored them; `store` over an
/// entry the caller may not change is `Unauthorized` and changes nothing.
/// `recall` returns readable entries of the namespace whose text contains
/// every query term (whole word or word prefix, case-insensitively), newest
/// first, then by key.
#[derive(Debug, Clone)]
pub struct PgMemoryProvider {
    pool: PgPool,
    ctx: CallerContext,
}

impl PgMemoryProvider {
    /// V1 memory over `pool`, used as `ctx`.
    pub fn new(pool: PgPool, ctx: CallerContext) -> Self {
        Self { pool, ctx }
    }

    /// The caller every call is made as.
    pub fn context(&self) -> &CallerContext {
        &self.ctx
    }

    /// Whether `namespace`/`key` exists and is readable (for explaining a
    /// refused change).
    async fn readable(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
        namespace: &str,
        key: &str,
    ) -> Result<Option<bool>, StoreError> {
        let ctx = &self.ctx;
        let mut sql = Sql::new("SELECT ");
        push_readable(&mut sql, ctx, "f.", None);
        sql.push(" AS readable FROM memory_entries f WHERE f.tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(" AND f.namespace = ")
            .bind(namespace.to_owned())
            .push(" AND f.key = ")
            .bind(key.to_owned());
        let row = sql
            .build()?
            .fetch_optional(&mut **tx)
            .await
            .map_err(store_error)?;
        Ok(row.map(|r| r.try_get::<bool, _>("readable").unwrap_or(false)))
    }
}

#[async_trait]
impl MemoryProvider for PgMemoryProvider {
    async fn store(&self, namespace: &str, key: &str, content: &str) -> Result<(), StoreError> {
        let ctx = &self.ctx;
        async {
            check_caller(ctx)?;
            check_label("namespace", namespace)?;
            check_label("key", key)?;
            check_text("content", content)?;
            let terms = record_terms(content);
            let mut sql = Sql::new(
                "INSERT INTO memory_entries AS f (tenant_id, namespace, key, content, project_id, \
                 owner, created_at, updated_at, content_hash, search) VALUES (",
            );
            sql.bind(ctx.tenant_id().to_owned())
                .push(", ")
                .bind(namespace.to_owned())
                .push(", ")
                .bind(key.to_owned())
                .push(", ")
                .bind(content.to_owned())
                .push(", ")
                .bind(ctx.project_id().map(str::to_owned))
                .push(", ")
                .bind(ctx.owner_key())
                .push(", now(), now(), ")
                .bind(content_hash(content))
                .push(", array_to_tsvector(")
                .bind(terms)
                .push(
                    "::text[])) ON CONFLICT (tenant_id, namespace, key) DO UPDATE SET \
                     (content, updated_at, content_hash, search) = \
                     (EXCLUDED.content, now(), EXCLUDED.content_hash, EXCLUDED.search) WHERE ",
                );
            push_changeable(&mut sql, ctx, "f.", Change::Write);
            sql.push(" RETURNING f.key");
            let mut tx = begin(&self.pool, ctx).await?;
            let stored = sql
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?;
            if stored.is_none() {
                let _ = tx.rollback().await;
                return Err(ctx.unauthorized(
                    format!("store memory entry {namespace}/{key}"),
                    "an entry with this key exists and belongs to someone else",
                ));
            }
            tx.commit().await.map_err(store_error)
        }
        .instrument(span("memory_entry", "store", ctx))
        .await
    }

    async fn recall(
        &self,
        namespace: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let ctx = &self.ctx;
        let text = text_filter(Some(query));
        if limit == 0 || matches!(text, TextFilter::Impossible) {
            return Ok(Vec::new());
        }
        async {
            let mut sql = Sql::new(
                "SELECT f.key, f.content, f.namespace, f.created_at FROM memory_entries f \
                 WHERE f.tenant_id = ",
            );
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND f.namespace = ")
                .bind(namespace.to_owned());
            if let TextFilter::Terms { all, .. } = &text {
                sql.push(" AND f.search @@ ")
                    .bind(all.clone())
                    .push("::tsquery");
            }
            sql.push(" AND ");
            push_readable(&mut sql, ctx, "f.", None);
            sql.push(" ORDER BY f.created_at DESC, f.key LIMIT ")
                .bind(i64::try_from(limit).unwrap_or(i64::MAX));
            let mut tx = begin(&self.pool, ctx).await?;
            let rows = sql
                .build()?
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
            crate::records::end_read(tx);
            rows.iter()
                .map(|row| {
                    let get = store_error;
                    Ok(MemoryEntry {
                        key: row.try_get("key").map_err(get)?,
                        content: row.try_get("content").map_err(get)?,
                        namespace: row.try_get("namespace").map_err(get)?,
                        created_at: row.try_get::<DateTime<Utc>, _>("created_at").map_err(get)?,
                    })
                })
                .collect()
        }
        .instrument(span("memory_entry", "recall", ctx))
        .await
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        let ctx = &self.ctx;
        async {
            let mut sql = Sql::new("DELETE FROM memory_entries f WHERE f.tenant_id = ");
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND f.namespace = ")
                .bind(namespace.to_owned())
                .push(" AND f.key = ")
                .bind(key.to_owned())
                .push(" AND ");
            push_changeable(&mut sql, ctx, "f.", Change::Delete);
            sql.push(" RETURNING f.key");
            let mut tx = begin(&self.pool, ctx).await?;
            let deleted = sql
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?;
            if deleted.is_some() {
                tx.commit().await.map_err(store_error)?;
                return Ok(true);
            }
            let readable = self.readable(&mut tx, namespace, key).await?;
            let _ = tx.rollback().await;
            match readable {
                Some(true) => Err(ctx.unauthorized(
                    format!("delete memory entry {namespace}/{key}"),
                    "it belongs to someone else",
                )),
                _ => Ok(false),
            }
        }
        .instrument(span("memory_entry", "delete", ctx))
        .await
    }
}
