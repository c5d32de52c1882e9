//! [`NamespaceAdmin`] on PostgreSQL: counts by `GROUP BY`, moves in
//! batches of one `UPDATE` each (the audit triggers record every moved row
//! as an update).

use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, CallerContext, DERIVED_KINDS, ErasureCount, ErasureSubject, NamespaceAdmin,
    NamespaceCount, NamespaceScope, StoreError, Sweep, check_erasure, mentions_regex,
};
use openvibe_protocols::{
    ERASURE_KINDS, KINDS, KindSpec, check_admin, check_label, cleanup_scope, kind_spec,
};
use sqlx::PgPool;
use sqlx::Row;
use tracing::Instrument;

use crate::audit::AuditWriter;
use crate::error::store_error;
use crate::rows::col;
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{INCLUDE_EXPIRED, begin, begin_then};

/// [`NamespaceAdmin`] over a pool.
#[derive(Debug, Clone)]
pub struct PgNamespaceAdmin {
    pool: PgPool,
    audit: AuditWriter,
}

crate::audit::audited_store!(PgNamespaceAdmin);

/// The governance columns of every table, left out of what a subject's
/// entity is looked for in (as `record_content` leaves them out in memory).
const NOT_CONTENT: &str = "'{id,tenant_id,namespace,project_id,owner,classification,source,\
                           created_at,updated_at,expires_at}'::text[]";

/// The jsonpath that finds a string naming `entity` (as `mentions` does).
fn entity_path(entity: &str) -> String {
    let regex = mentions_regex(entity)
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    format!("lax $.** ? (@ like_regex \"{regex}\" flag \"i\")")
}

/// Append the condition that the row `alias` of `kind` is about `subject`.
fn about(sql: &mut Sql, alias: &str, kind: &str, subject: &ErasureSubject) {
    let content = |sql: &mut Sql, alias: &str, entity: &str| {
        sql.push(&format!(
            "jsonb_path_exists(to_jsonb({alias}) - {NOT_CONTENT}, "
        ))
        .bind(entity_path(entity))
        .push("::jsonpath)");
    };
    sql.push("(");
    match subject {
        ErasureSubject::Owner(owner) => {
            sql.push(&format!("{alias}.owner = ")).bind(owner.clone());
        }
        ErasureSubject::Namespace(ns) => {
            sql.push(&format!("{alias}.namespace = ")).bind(ns.clone());
        }
        ErasureSubject::Entity(entity) => {
            content(sql, alias, entity);
            if kind == "plan" {
                for (table, column) in [
                    ("plan_contexts", "context"),
                    ("plan_state", "value"),
                    ("plan_state_items", "item"),
                ] {
                    sql.push(&format!(
                        " OR EXISTS (SELECT 1 FROM {table} c WHERE c.tenant_id = {alias}.tenant_id \
                         AND c.plan_id = {alias}.id AND "
                    ));
                    if table == "plan_contexts" {
                        content(sql, "c", entity);
                    } else {
                        sql.push(&format!("jsonb_path_exists(c.{column}, "))
                            .bind(entity_path(entity))
                            .push("::jsonpath)");
                    }
                    sql.push(")");
                }
            }
        }
    }
    if kind == "raw_call" {
        // The raw calls behind an episode about the subject go with it.
        sql.push(&format!(
            " OR EXISTS (SELECT 1 FROM episodes e WHERE e.tenant_id = {alias}.tenant_id \
             AND e.id = {alias}.episode_id AND "
        ));
        about(sql, "e", "episode", subject);
        sql.push(")");
    }
    sql.push(")");
}

impl PgNamespaceAdmin {
    /// One pass of `sweep` over every kind in one transaction: the rows
    /// it takes counted, or at most `batch` deleted (the tables' triggers
    /// audit each and drop its vectors and postings). The cleanup of
    /// expired records and an erasure both run through it.
    async fn sweep(
        &self,
        ctx: &CallerContext,
        sweep: &Sweep,
        delete: Option<usize>,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        // Expired rows are invisible until the transaction asks to see them.
        let mut tx = begin_then(&self.pool, ctx, Some(INCLUDE_EXPIRED)).await?;
        let mut out = Vec::new();
        let mut left = delete.unwrap_or(usize::MAX);
        for spec in ERASURE_KINDS.iter().filter_map(|k| kind_spec(k)) {
            let (kind, table) = (spec.name, spec.table);
            if left == 0 {
                break;
            }
            let mut cond = Sql::new("m.tenant_id = ");
            cond.bind(ctx.tenant_id().to_owned()).push(" AND ");
            match sweep {
                Sweep::Expired { scope, .. } => {
                    if !spec.expires {
                        continue;
                    }
                    cond.push("m.expires_at <= now()");
                    if let NamespaceScope::Only(namespaces) = scope {
                        cond.push(" AND m.namespace = ANY(")
                            .bind(namespaces.clone())
                            .push("::text[])");
                    }
                }
                Sweep::Subject(subject) => about(&mut cond, "m", kind, subject),
            }
            let mut sql = Sql::new("");
            let n = match delete {
                None => {
                    sql.push(&format!("SELECT count(*)::bigint FROM {table} m WHERE "))
                        .append(cond);
                    count(&mut tx, sql).await?
                }
                Some(_) => {
                    // The batch is chosen once (a materialized CTE), locked,
                    // and skips rows another run holds.
                    sql.push(&format!(
                        "WITH batch AS MATERIALIZED (SELECT m.ctid AS row FROM {table} m WHERE "
                    ))
                    .append(cond)
                    .push(" LIMIT ")
                    .bind(i64::try_from(left).unwrap_or(i64::MAX))
                    .push(&format!(
                        " FOR UPDATE SKIP LOCKED) DELETE FROM {table} f USING batch WHERE f.ctid = batch.row"
                    ));
                    let done = sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
                    if kind == openvibe_protocols::METRIC_KIND && done.rows_affected() > 0 {
                        // A running total goes with the last of its reports.
                        let mut streams =
                            Sql::new("DELETE FROM metric_streams s WHERE s.tenant_id = ");
                        streams.bind(ctx.tenant_id().to_owned()).push(
                            " AND NOT EXISTS (SELECT 1 FROM metric_reports r WHERE \
                             r.tenant_id = s.tenant_id AND r.namespace = s.namespace \
                             AND r.role_id = s.role_id AND r.metric = s.metric)",
                        );
                        streams
                            .build()?
                            .execute(&mut *tx)
                            .await
                            .map_err(store_error)?;
                    }
                    left = left.saturating_sub(
                        usize::try_from(done.rows_affected()).unwrap_or(usize::MAX),
                    );
                    done.rows_affected()
                }
            };
            out.push(ErasureCount {
                kind: kind.to_owned(),
                records: n,
            });
        }
        if delete.is_none() {
            out.extend(orphans(&mut tx, ctx).await?);
        }
        tx.commit().await.map_err(store_error)?;
        Ok(out)
    }
}

/// The count a `SELECT count(*)::bigint …` returns.
async fn count(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    sql: Sql,
) -> Result<u64, StoreError> {
    let n: i64 = sql
        .build()?
        .fetch_one(&mut **tx)
        .await
        .map_err(store_error)?
        .try_get(0)
        .map_err(store_error)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The derived rows of `ctx`'s tenant whose record is gone: vectors in
/// every model's table, and knowledge postings.
async fn orphans(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    ctx: &CallerContext,
) -> Result<Vec<ErasureCount>, StoreError> {
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT table_name FROM embedding_models ORDER BY model")
            .fetch_all(&mut **tx)
            .await
            .map_err(store_error)?;
    let mut vectors = 0u64;
    for table in tables {
        let mut sql = Sql::new(&format!(
            "SELECT count(*)::bigint FROM \"{}\" e WHERE e.tenant_id = ",
            table.replace('"', "\"\"")
        ));
        // (The key-value store's vectors, `memory_entry`, are keyed by
        // its own keys and are not an erasure's.)
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND NOT (e.record_kind = 'memory_entry' OR ");
        for (i, (kind, records)) in [
            ("fact", "facts"),
            ("episode", "episodes"),
            ("insight", "insights"),
            ("knowledge", "knowledge"),
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                sql.push(" OR ");
            }
            sql.push(&format!(
                "(e.record_kind = '{kind}' AND EXISTS (SELECT 1 FROM {records} r \
                 WHERE r.tenant_id = e.tenant_id AND r.id = e.record_id))"
            ));
        }
        sql.push(")");
        vectors += count(tx, sql).await?;
    }
    let mut sql =
        Sql::new("SELECT count(*)::bigint FROM knowledge_postings p WHERE p.tenant_id = ");
    sql.bind(ctx.tenant_id().to_owned()).push(
        " AND NOT EXISTS (SELECT 1 FROM knowledge k WHERE k.tenant_id = p.tenant_id AND k.id = p.id)",
    );
    let postings = count(tx, sql).await?;
    Ok(DERIVED_KINDS
        .into_iter()
        .zip([vectors, postings])
        .map(|(kind, records)| ErasureCount {
            kind: kind.to_owned(),
            records,
        })
        .collect())
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
            let namespaced = KINDS.iter().filter(|k| k.namespaced);
            for (
                i,
                KindSpec {
                    name: kind, table, ..
                },
            ) in namespaced.enumerate()
            {
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
        let table = kind_spec(kind)
            .filter(|k| k.namespaced)
            .map(|k| k.table)
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
            Ok(scope) => self
                .sweep(ctx, &Sweep::expired(scope), Some(batch))
                .instrument(span("expired", "delete_expired", ctx))
                .await
                .map(|counts| counts.iter().map(|c| c.records).sum()),
            Err(e) => Err(e),
        };
        self.audit
            .refusal(ctx, AuditOp::Delete, "expired", "", result)
    }

    async fn erasure_counts(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        check_erasure(ctx, subject, None)?;
        self.sweep(ctx, &Sweep::Subject(subject.clone()), None)
            .instrument(span("erasure", "erasure_counts", ctx))
            .await
    }

    async fn erase(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        batch: usize,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        check_erasure(ctx, subject, Some(batch))?;
        let counts = self
            .sweep(ctx, &Sweep::Subject(subject.clone()), Some(batch))
            .instrument(span("erasure", "erase", ctx))
            .await?;
        Ok(counts.into_iter().filter(|c| c.records > 0).collect())
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
