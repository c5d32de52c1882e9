//! What a record write sets from the caller rather than the input: its
//! identity (tenant, owner, namespace, project), its expiry capped by
//! retention, and the governed columns of batch inserts.

use chrono::{DateTime, Utc};
use openvibe_protocols::{CallerContext, Placement, RecordMeta, Retention, StoreError};
use sqlx::{Postgres, Transaction};

use crate::error::store_error;
use crate::sql::Sql;

/// Bind the identity of a new record, `tenant_id, id, namespace,
/// project_id, owner, created_at, updated_at` (tenant and owner from the
/// caller, namespace and project from its `placement`, both times `now`),
/// each followed by `", "`.
pub(crate) fn push_new_identity(
    sql: &mut Sql,
    ctx: &CallerContext,
    placement: &Placement,
    id: String,
    now: DateTime<Utc>,
) {
    push_identity(sql, ctx, placement, id, now);
    sql.push(", ").bind(now).push(", ");
}

/// A record's tenant, id, namespace, project, owner (the caller's) and
/// creation time, comma-separated.
pub(crate) fn push_identity(
    sql: &mut Sql,
    ctx: &CallerContext,
    placement: &Placement,
    id: String,
    created_at: DateTime<Utc>,
) {
    push_owned_identity(sql, ctx, placement, id);
    sql.push(", ").bind(created_at);
}

/// A record's tenant, id, namespace, project and owner (the caller's),
/// comma-separated: [`push_identity`] without its time, for a record
/// whose time the statement takes (a metric report's, in its stream's
/// order).
pub(crate) fn push_owned_identity(
    sql: &mut Sql,
    ctx: &CallerContext,
    placement: &Placement,
    id: String,
) {
    sql.bind(ctx.tenant_id().to_owned())
        .push(", ")
        .bind(id)
        .push(", ")
        .bind(placement.namespace.clone())
        .push(", ")
        .bind(placement.project_id.clone())
        .push(", ")
        .bind(ctx.owner_key());
}

/// `DELETE FROM <table> WHERE tenant_id = <caller's> AND id = <id>` in
/// `tx` (access already decided); returns how many rows went.
pub(crate) async fn delete_row(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    table: &str,
    id: &str,
) -> Result<u64, StoreError> {
    let mut delete = Sql::new(&format!("DELETE FROM {table} WHERE tenant_id = "));
    delete
        .bind(ctx.tenant_id().to_owned())
        .push(" AND id = ")
        .bind(id.to_owned());
    let done = delete
        .build()?
        .execute(&mut **tx)
        .await
        .map_err(store_error)?;
    Ok(done.rows_affected())
}

/// The longest retention SQL is given (about 317 years): longer rules
/// are refused by the governance configuration long before.
const MAX_RETENTION_SECS: u64 = 10_000_000_000;

/// The `expires_at` of a changed record as SQL on the row aliased `a`:
/// `given`, capped by the caller's retention for `kind` counted from the
/// row's `created_at` in the row's namespace (what
/// [`CallerContext::expiry`] computes in Rust for a new record).
pub(crate) fn push_expiry(
    sql: &mut Sql,
    ctx: &CallerContext,
    kind: &str,
    given: Option<DateTime<Utc>>,
    a: &str,
) {
    let rules: Vec<&Retention> = ctx
        .grants()
        .map(|g| {
            g.retention_rules()
                .iter()
                .filter(|r| r.kind.as_deref().is_none_or(|k| k == kind))
                .collect()
        })
        .unwrap_or_default();
    if rules.is_empty() {
        sql.bind(given).push("::timestamptz");
        return;
    }
    let namespaces: Vec<Option<String>> = rules.iter().map(|r| r.namespace.clone()).collect();
    let secs: Vec<i64> = rules
        .iter()
        .map(|r| i64::try_from(r.keep_secs.min(MAX_RETENTION_SECS)).unwrap_or(i64::MAX))
        .collect();
    sql.push("least(")
        .bind(given)
        .push(&format!(
            "::timestamptz, {a}created_at + (SELECT min(r.k) FROM unnest("
        ))
        .bind(namespaces)
        .push("::text[], ")
        .bind(secs)
        .push(&format!(
            "::bigint[]) AS r(n, k) WHERE r.n IS NULL OR r.n = {a}namespace) * interval '1 second')"
        ));
}

/// `Ok` unless `given` (an `expires_at` asked for) is not in the future.
pub(crate) fn check_given_expiry(given: Option<DateTime<Utc>>) -> Result<(), StoreError> {
    match given {
        Some(at) if at <= Utc::now() => Err(StoreError::conflict(format!(
            "expires_at: {at} is not in the future"
        ))),
        _ => Ok(()),
    }
}

/// A fresh record id (as the in-memory store makes them).
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Bind the values of the governance columns every record table starts its
/// mutable columns with: `classification, domain, entity, tags, source,
/// updated_at` (the last is `now()`), followed by `", "`.
pub(crate) fn push_governed(
    sql: &mut Sql,
    meta: &RecordMeta,
    domain: &str,
    entity: &str,
    tags: &[String],
) {
    sql.bind(meta.classification.as_str())
        .push(", ")
        .bind(domain.to_owned())
        .push(", ")
        .bind(entity.to_owned())
        .push(", ")
        .bind(tags.to_vec())
        .push("::text[], ")
        .bind(meta.source.clone())
        .push(", now(), ");
}

/// The columns every batch insert starts its `unnest` arrays with:
/// `id, namespace, project_id, classification, domain, entity, tags (JSON
/// text), source, created_at, expires_at`, in that order.
#[derive(Default)]
pub(crate) struct GovernedColumns {
    ids: Vec<String>,
    namespaces: Vec<String>,
    projects: Vec<Option<String>>,
    classifications: Vec<&'static str>,
    domains: Vec<String>,
    entities: Vec<String>,
    tags: Vec<String>,
    sources: Vec<String>,
    created: Vec<DateTime<Utc>>,
    expires: Vec<Option<DateTime<Utc>>>,
}

impl GovernedColumns {
    /// Columns for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            ids: Vec::with_capacity(n),
            namespaces: Vec::with_capacity(n),
            projects: Vec::with_capacity(n),
            classifications: Vec::with_capacity(n),
            domains: Vec::with_capacity(n),
            entities: Vec::with_capacity(n),
            tags: Vec::with_capacity(n),
            sources: Vec::with_capacity(n),
            created: Vec::with_capacity(n),
            expires: Vec::with_capacity(n),
        }
    }

    /// Add one `kind` record's values (placed at `placement` by `ctx`,
    /// which decides when it expires).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        ctx: &CallerContext,
        kind: &str,
        id: String,
        placement: Placement,
        meta: RecordMeta,
        domain: String,
        entity: String,
        tags: Vec<String>,
    ) -> Result<(), StoreError> {
        self.expires.push(ctx.expiry(
            kind,
            &placement.namespace,
            meta.created_at,
            meta.expires_at,
        )?);
        self.ids.push(id);
        self.namespaces.push(placement.namespace);
        self.projects.push(placement.project_id);
        self.classifications.push(meta.classification.as_str());
        self.domains.push(domain);
        self.entities.push(entity);
        self.tags.push(serde_json::Value::from(tags).to_string());
        self.sources.push(meta.source);
        self.created.push(meta.created_at);
        Ok(())
    }

    /// The ids added so far.
    pub(crate) fn ids(&self) -> &[String] {
        &self.ids
    }

    /// When each record added so far expires.
    pub(crate) fn expires(&self) -> &[Option<DateTime<Utc>>] {
        &self.expires
    }

    /// Bind the ten arrays, each followed by its cast and `", "`.
    pub(crate) fn bind(self, sql: &mut Sql) {
        sql.bind(self.ids)
            .push("::text[], ")
            .bind(self.namespaces)
            .push("::text[], ")
            .bind(self.projects)
            .push("::text[], ")
            .bind(self.classifications)
            .push("::text[], ")
            .bind(self.domains)
            .push("::text[], ")
            .bind(self.entities)
            .push("::text[], ")
            .bind(self.tags)
            .push("::text[], ")
            .bind(self.sources)
            .push("::text[], ")
            .bind(self.created)
            .push("::timestamptz[], ")
            .bind(self.expires)
            .push("::timestamptz[], ");
    }
}
