//! [`NamespaceAdmin`] on PostgreSQL: counts by `GROUP BY`, moves in
//! batches of one `UPDATE` each (the audit triggers record every moved row
//! as an update).

use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, CallerContext, NamespaceAdmin, NamespaceCount, NamespaceScope, StoreError,
};
use openvibe_protocols::{check_admin, check_label, cleanup_scope};
use sqlx::PgPool;
use tracing::Instrument;

use crate::audit::AuditWriter;
use crate::error::store_error;
use crate::rows::col;
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{INCLUDE_EXPIRED, begin, begin_then};

/// The tables of the kinds that expire (`EXPIRING_KINDS`).
const EXPIRING_TABLES: [&str; 11] = [
    "facts",
    "episodes",
    "insights",
    "knowledge",
    "raw_calls",
    "proposals",
    "goals",
    "goal_priorities",
    "beliefs",
    "spaces",
    "space_messages",
];

/// Each record kind's table.
const TABLES: [(&str, &str); 14] = [
    ("fact", "facts"),
    ("episode", "episodes"),
    ("insight", "insights"),
    ("session", "sessions"),
    ("plan", "plans"),
    ("task_context", "task_contexts"),
    ("knowledge", "knowledge"),
    ("proposal", "proposals"),
    ("goal", "goals"),
    ("priorities", "goal_priorities"),
    ("metric", "metric_reports"),
    ("belief", "beliefs"),
    ("space", "spaces"),
    ("message", "space_messages"),
];

/// [`NamespaceAdmin`] over a pool.
#[derive(Debug, Clone)]
pub struct PgNamespaceAdmin {
    pool: PgPool,
    audit: AuditWriter,
}

crate::audit::audited_store!(PgNamespaceAdmin);

impl PgNamespaceAdmin {
    async fn delete_expired_in(
        &self,
        ctx: &CallerContext,
        scope: &NamespaceScope,
        batch: usize,
    ) -> Result<u64, StoreError> {
        // Expired rows are invisible until the transaction asks to see them.
        let mut tx = begin_then(&self.pool, ctx, Some(INCLUDE_EXPIRED)).await?;
        let mut deleted = 0;
        for table in EXPIRING_TABLES {
            let left = batch.saturating_sub(usize::try_from(deleted).unwrap_or(usize::MAX));
            if left == 0 {
                break;
            }
            let mut sql = Sql::new(&format!(
                "WITH batch AS MATERIALIZED (SELECT m.id FROM {table} m WHERE m.tenant_id = "
            ));
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND m.expires_at <= now()");
            if let NamespaceScope::Only(namespaces) = scope {
                sql.push(" AND m.namespace = ANY(")
                    .bind(namespaces.clone())
                    .push("::text[])");
            }
            sql.push(" LIMIT ")
                .bind(i64::try_from(left).unwrap_or(i64::MAX))
                .push(&format!(
                    " FOR UPDATE SKIP LOCKED) DELETE FROM {table} f USING batch WHERE f.tenant_id = "
                ))
                .bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = batch.id");
            let done = sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
            deleted += done.rows_affected();
        }
        tx.commit().await.map_err(store_error)?;
        Ok(deleted)
    }
}

#[async_trait]
impl NamespaceAdmin for PgNamespaceAdmin {
    async fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError> {
        check_admin(ctx, "count namespaces", None)?;
        async {
            let mut sql = Sql::new("");
            for (i, (kind, table)) in TABLES.iter().enumerate() {
                if i > 0 {
                    sql.push(" UNION ALL ");
                }
                sql.push(&format!(
                    "SELECT '{kind}'::text AS kind, namespace, count(*)::bigint AS records \
                     FROM {table} WHERE tenant_id = "
                ))
                .bind(ctx.tenant_id().to_owned())
                .push(" GROUP BY namespace");
            }
            sql.push(" ORDER BY kind, namespace");
            let mut tx = begin(&self.pool, ctx).await?;
            let rows = sql
                .build()?
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
            drop(tx);
            rows.iter()
                .map(|row| {
                    let records: i64 = col(row, "records")?;
                    Ok(NamespaceCount {
                        kind: col(row, "kind")?,
                        namespace: col(row, "namespace")?,
                        records: u64::try_from(records).unwrap_or(0),
                    })
                })
                .collect()
        }
        .instrument(span("namespace", "counts", ctx))
        .await
    }

    async fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        check_admin(ctx, "move records between namespaces", Some(kind))?;
        check_label("namespace", to)?;
        let table = TABLES
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, t)| *t)
            .ok_or_else(|| StoreError::invalid("kind", format!("`{kind}` is not a record kind")))?;
        async {
            // The batch is chosen once (a materialized CTE), locked, and
            // skips rows another migration holds.
            let mut sql = Sql::new(&format!(
                "WITH batch AS MATERIALIZED (SELECT m.id FROM {table} m WHERE m.tenant_id = "
            ));
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND m.namespace = ")
                .bind(from.to_owned())
                .push(" LIMIT ")
                .bind(i64::try_from(batch).unwrap_or(i64::MAX))
                .push(&format!(
                    " FOR UPDATE SKIP LOCKED) UPDATE {table} f SET namespace = "
                ))
                .bind(to.to_owned())
                .push(", updated_at = now() FROM batch WHERE f.tenant_id = ")
                .bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = batch.id");
            let mut tx = begin(&self.pool, ctx).await?;
            if kind == openvibe_protocols::METRIC_KIND {
                crate::goals::move_streams(&mut tx, ctx, from, to).await?;
            }
            let done = sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
            tx.commit().await.map_err(store_error)?;
            Ok(done.rows_affected())
        }
        .instrument(span("namespace", "move", ctx))
        .await
    }

    async fn delete_expired(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        let result = match cleanup_scope(ctx, batch) {
            Ok(scope) => {
                self.delete_expired_in(ctx, &scope, batch)
                    .instrument(span("expired", "delete_expired", ctx))
                    .await
            }
            Err(e) => Err(e),
        };
        self.audit
            .refusal(ctx, AuditOp::Delete, "expired", "", result)
    }
}

/// Delete every record of `tenant` (all kinds, working memory and
/// embeddings included) in one transaction, and return how many rows went.
///
/// The audit log is append-only and keeps its entries. For throwaway
/// tenants, such as the CLI demo's run on PostgreSQL; the caller must be
/// the system ([`CallerContext::system`]) or nothing is deleted.
pub async fn purge_tenant(pool: &PgPool, tenant: &str) -> Result<u64, StoreError> {
    let ctx = CallerContext::system().with_tenant(tenant);
    check_label("tenant_id", tenant)?;
    async {
        let mut tx = begin(pool, &ctx).await?;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND column_name = 'tenant_id' \
             AND table_name <> 'audit_log' ORDER BY table_name",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
        let mut deleted = 0;
        for table in tables {
            deleted += sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM \"{}\" WHERE tenant_id = $1",
                table.replace('"', "\"\"")
            )))
            .bind(tenant)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?
            .rows_affected();
        }
        tx.commit().await.map_err(store_error)?;
        Ok(deleted)
    }
    .instrument(span("tenant", "purge", &ctx))
    .await
}
