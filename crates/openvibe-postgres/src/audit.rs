//! The audit trail on PostgreSQL: record changes are written by the
//! triggers of migration 0005 in the changing transaction; searches and
//! refusals go through [`AuditWriter`], a buffer written in batches so that
//! a read never waits on a write; [`PgAuditLog`] reads the trail.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    AuditEntry, AuditLog, AuditOp, AuditQuery, AuditStatus, CHAIN_GENESIS, CallerContext,
    ChainHead, ChainReport, ChainWalk, ERASURE_AUDIT_KIND, ErasureSubject, REDACTION_AUDIT_KIND,
    Redaction, StoreError, VerifyChain, check_chain_reader, mentions_regex,
};
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::error::{corrupt, store_error};
use crate::rows::col;
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{begin, fetch_committed};

/// `new(pool)` and `with_audit(writer)` of a store holding `pool` and `audit`.
macro_rules! audited_store {
    ($store:ident) => {
        impl $store {
            /// A store over `pool` (migrated: see [`crate::migrate`]), with an
            /// audit writer of its own.
            pub fn new(pool: PgPool) -> Self {
                Self {
                    audit: AuditWriter::new(pool.clone()),
                    pool,
                }
            }

            $crate::audit::audited_store!(@with_audit);
        }
    };
    (@with_audit) => {
        /// Write searches and refusals through `audit` (shared with other
        /// stores) instead of a writer of its own.
        #[must_use]
        pub fn with_audit(mut self, audit: AuditWriter) -> Self {
            self.audit = audit;
            self
        }
    };
}
pub(crate) use audited_store;

/// Entries buffered before a batch is written without waiting for the timer.
pub const AUDIT_BATCH: usize = 256;
/// How long a buffered entry waits at most (while the process runs).
pub const AUDIT_INTERVAL: Duration = Duration::from_millis(500);

#[derive(Debug)]
struct Inner {
    pool: PgPool,
    pending: Mutex<Vec<AuditEntry>>,
    timer: std::sync::Once,
}

/// Appends search and refusal entries in batches: at [`AUDIT_BATCH`]
/// entries, every [`AUDIT_INTERVAL`] while entries wait, and on
/// [`AuditWriter::flush`]. A crash loses at most the entries of the last
/// interval; record changes are never in this buffer (triggers write them
/// with the change). Cheap to clone.
#[derive(Debug, Clone)]
pub struct AuditWriter {
    inner: Arc<Inner>,
    enabled: bool,
}

impl AuditWriter {
    /// A writer into `pool`'s `audit_log`.
    pub fn new(pool: PgPool) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool,
                pending: Mutex::new(Vec::new()),
                timer: std::sync::Once::new(),
            }),
            enabled: true,
        }
    }

    /// This writer, recording (`true`, the default) or dropping every
    /// entry. Record changes are audited by the database either way.
    #[must_use]
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Queue the entry `build` makes, building it only when this writer
    /// records (a search's filters are serialised for nothing otherwise).
    pub fn record_with(&self, build: impl FnOnce() -> AuditEntry) {
        if self.enabled {
            self.record(build());
        }
    }

    /// Queue `entry` (never blocks on the database).
    pub fn record(&self, entry: AuditEntry) {
        if !self.enabled {
            return;
        }
        let full = match self.inner.pending.lock() {
            Ok(mut pending) => {
                pending.push(entry);
                pending.len() >= AUDIT_BATCH
            }
            Err(_) => return,
        };
        self.start_timer();
        if full && let Ok(handle) = tokio::runtime::Handle::try_current() {
            let writer = self.clone();
            handle.spawn(async move {
                if let Err(e) = writer.flush().await {
                    tracing::warn!(error = %e, "audit batch not written");
                }
            });
        }
    }

    /// Queue the refusal entry of `operation` on `kind` `id` when `result`
    /// is an authorization error; pass `result` through.
    pub fn refusal<T>(
        &self,
        ctx: &CallerContext,
        operation: AuditOp,
        kind: &str,
        id: &str,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Some(entry) = openvibe_protocols::refusal_entry(ctx, operation, kind, id, &result) {
            self.record(entry);
        }
        result
    }

    /// The background flush, started with the first entry (it needs the
    /// runtime) and ended when the last writer is dropped.
    fn start_timer(&self) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        self.inner.timer.call_once(|| {
            handle.spawn(async move {
                loop {
                    tokio::time::sleep(AUDIT_INTERVAL).await;
                    let Some(inner) = weak.upgrade() else { break };
                    let writer = AuditWriter {
                        inner,
                        enabled: true,
                    };
                    if let Err(e) = writer.flush().await {
                        tracing::warn!(error = %e, "audit batch not written");
                    }
                }
            });
        });
    }

    /// Write every queued entry now, one transaction per tenant. Entries
    /// of a failed batch are queued again.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let batch = match self.inner.pending.lock() {
            Ok(mut pending) => std::mem::take(&mut *pending),
            Err(_) => return Err(StoreError::backend("the audit buffer lock is poisoned")),
        };
        if batch.is_empty() {
            return Ok(());
        }
        let mut tenants: Vec<&str> = batch.iter().map(|e| e.tenant_id.as_str()).collect();
        tenants.sort_unstable();
        tenants.dedup();
        for tenant in tenants {
            let entries: Vec<&AuditEntry> =
                batch.iter().filter(|e| e.tenant_id == tenant).collect();
            if let Err(e) = write_batch(&self.inner.pool, tenant, &entries).await {
                if let Ok(mut pending) = self.inner.pending.lock() {
                    pending.extend(entries.into_iter().cloned());
                }
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Insert `entries` (all of `tenant`) in one statement.
async fn write_batch(
    pool: &PgPool,
    tenant: &str,
    entries: &[&AuditEntry],
) -> Result<(), StoreError> {
    let ctx = CallerContext::system().with_tenant(tenant);
    let mut tx = begin(pool, &ctx).await?;
    insert_sql(tenant, entries)?
        .build()?
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
    tx.commit().await.map_err(store_error)
}

/// The `INSERT` of `entries` of `tenant` (the link trigger chains them).
fn insert_sql(tenant: &str, entries: &[&AuditEntry]) -> Result<Sql, StoreError> {
    // PostgreSQL text holds no NUL: an entry quoting one (a filter, a
    // reason) is still recorded, with U+FFFD in its place.
    let text = |f: fn(&AuditEntry) -> Option<String>| -> Vec<Option<String>> {
        entries
            .iter()
            .map(|e| f(e).map(|s| without_nul(&s)))
            .collect()
    };
    let mut sql = Sql::new(
        "INSERT INTO audit_log (tenant_id, at, principal, operation, record_kind, namespace, \
         project_id, record_id, filters, top_k, status, reason, source, tool) SELECT ",
    );
    sql.bind(tenant.to_owned())
        .push(
            ", u.at, u.principal, u.operation, u.kind, u.namespace, u.project_id, u.record_id, \
             u.filters::jsonb, u.top_k, u.status, u.reason, u.source, u.tool FROM unnest(",
        )
        .bind(entries.iter().map(|e| e.at).collect::<Vec<DateTime<Utc>>>())
        .push("::timestamptz[], ")
        .bind(text(|e| Some(e.principal.clone())))
        .push("::text[], ")
        .bind(text(|e| Some(e.operation.as_str().to_owned())))
        .push("::text[], ")
        .bind(text(|e| Some(e.kind.clone())))
        .push("::text[], ")
        .bind(text(|e| e.namespace.clone()))
        .push("::text[], ")
        .bind(text(|e| e.project_id.clone()))
        .push("::text[], ")
        .bind(text(|e| e.record_id.clone()))
        .push("::text[], ")
        .bind(
            entries
                .iter()
                .map(|e| e.filters.as_ref().map(|f| json_without_nul(f).to_string()))
                .collect::<Vec<Option<String>>>(),
        )
        .push("::text[], ")
        .bind(
            entries
                .iter()
                .map(|e| e.top_k.map(|k| i64::try_from(k).unwrap_or(i64::MAX)))
                .collect::<Vec<Option<i64>>>(),
        )
        .push("::int8[], ")
        .bind(text(|e| Some(e.status.as_str().to_owned())))
        .push("::text[], ")
        .bind(text(|e| e.reason.clone()))
        .push("::text[], ")
        .bind(text(|e| e.source.clone()))
        .push("::text[], ")
        .bind(text(|e| e.tool.clone()))
        .push(
            "::text[]) AS u(at, principal, operation, kind, namespace, project_id, record_id, \
             filters, top_k, status, reason, source, tool)",
        );
    Ok(sql)
}

/// `text` with each NUL replaced by U+FFFD.
fn without_nul(text: &str) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text.to_owned()
    }
}

/// `value` with each NUL in a string or key replaced by U+FFFD.
fn json_without_nul(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(without_nul(s)),
        Value::Array(items) => Value::Array(items.iter().map(json_without_nul).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (without_nul(k), json_without_nul(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// [`AuditLog`] on PostgreSQL: reads `audit_log` (and flushes the writer first).
#[derive(Debug, Clone)]
pub struct PgAuditLog {
    pool: PgPool,
    writer: AuditWriter,
}

impl PgAuditLog {
    /// The trail in `pool`, flushing `writer` before each read.
    pub fn new(pool: PgPool, writer: AuditWriter) -> Self {
        Self { pool, writer }
    }
}

fn decode(row: &PgRow) -> Result<AuditEntry, StoreError> {
    let seq: i64 = col(row, "seq")?;
    let operation: String = col(row, "operation")?;
    let status: String = col(row, "status")?;
    let top_k: Option<i64> = col(row, "top_k")?;
    let id = seq.to_string();
    Ok(AuditEntry {
        seq: u64::try_from(seq).unwrap_or(0),
        at: col(row, "at")?,
        tenant_id: col(row, "tenant_id")?,
        principal: col(row, "principal")?,
        operation: AuditOp::parse(&operation)
            .ok_or_else(|| corrupt("audit entry", &id, format!("operation `{operation}`")))?,
        kind: col(row, "record_kind")?,
        namespace: col(row, "namespace")?,
        project_id: col(row, "project_id")?,
        record_id: col(row, "record_id")?,
        filters: col(row, "filters")?,
        top_k: top_k.and_then(|k| u64::try_from(k).ok()),
        status: if status == "refused" {
            AuditStatus::Refused
        } else {
            AuditStatus::Ok
        },
        reason: col(row, "reason")?,
        source: col(row, "source")?,
        tool: col(row, "tool")?,
        chain_seq: col::<Option<i64>>(row, "chain_seq")?
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0),
        prev_hash: col(row, "prev_hash")?,
        hash: col(row, "hash")?,
    })
}

/// The columns of an audit entry as [`decode`] reads them (hashes as hex).
const ENTRY_COLS: &str = "tenant_id, seq, at, principal, operation, record_kind, namespace, \
     project_id, record_id, filters, top_k, status, reason, source, tool, chain_seq, \
     encode(prev_hash, 'hex') AS prev_hash, encode(hash, 'hex') AS hash";

/// Redacted entries one redaction entry names.
const REDACTIONS_PER_ENTRY: usize = openvibe_protocols::REDACTIONS_PER_ENTRY;

/// Entries a chain walk reads per round trip.
const VERIFY_PAGE: i64 = 5_000;

#[async_trait]
impl AuditLog for PgAuditLog {
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        self.writer.flush().await?;
        let q = query.for_caller(ctx);
        let after = q.after()?;
        async {
            let mut sql = Sql::new(&format!(
                "SELECT {ENTRY_COLS} FROM audit_log WHERE tenant_id = "
            ));
            sql.bind(ctx.tenant_id().to_owned());
            if let Some(p) = &q.principal {
                sql.push(" AND principal = ").bind(p.clone());
            }
            if let Some(n) = &q.namespace {
                sql.push(" AND namespace = ").bind(n.clone());
            }
            if let Some(op) = q.operation {
                sql.push(" AND operation = ").bind(op.as_str());
            }
            if let Some(s) = q.since {
                sql.push(" AND at >= ").bind(s);
            }
            if let Some(u) = q.until {
                sql.push(" AND at < ").bind(u);
            }
            if let Some(k) = &q.kind {
                sql.push(" AND record_kind = ").bind(k.clone());
            }
            if let Some(r) = &q.record_id {
                sql.push(" AND record_id = ").bind(r.clone());
            }
            if let Some(st) = q.status {
                sql.push(" AND status = ").bind(st.as_str());
            }
            if let Some(after) = after {
                // Keyset paging in the chain's order, newest first.
                sql.push(" AND chain_seq < ")
                    .bind(i64::try_from(after).unwrap_or(i64::MAX));
            }
            // The order the trail was written in (issue 65): `at` is each
            // transaction's start, which racing writers do not keep. An
            // entry outside the chain (a break `verify` reports) comes first.
            sql.push(" ORDER BY chain_seq DESC NULLS FIRST, seq DESC LIMIT ")
                .bind(i64::try_from(q.limit).unwrap_or(i64::MAX));
            let mut tx = begin(&self.pool, ctx).await?;
            let rows = sql
                .build()?
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
            drop(tx);
            rows.iter().map(decode).collect()
        }
        .instrument(span("audit", "query", ctx))
        .await
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.writer.flush().await
    }

    async fn append(&self, ctx: &CallerContext, entry: AuditEntry) -> Result<(), StoreError> {
        let entry = entry.stamped(ctx);
        write_batch(&self.pool, ctx.tenant_id(), &[&entry]).await
    }

    async fn redact(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        dry_run: bool,
    ) -> Result<u64, StoreError> {
        check_chain_reader(ctx, "redact the audit trail")?;
        subject.check()?;
        self.writer.flush().await?;
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            // Each entry quoting the subject, with the hash its redacted
            // form computes to (PostgreSQL's own canonical encoding).
            let mut sql = Sql::new(
                "SELECT a.seq, a.chain_seq, encode(a.hash, 'hex') AS hash, \
                 encode(openvibe_audit_hash(jsonb_populate_record(a, jsonb_build_object(\
                 'filters', CASE WHEN a.filters IS NULL THEN NULL ELSE '{\"redacted\": true}'::jsonb END, \
                 'reason', CASE WHEN a.reason IS NULL THEN NULL ELSE 'redacted' END))), 'hex') \
                 AS redacted_hash FROM audit_log a WHERE a.chain_seq IS NOT NULL AND a.tenant_id = ",
            );
            sql.bind(ctx.tenant_id().to_owned()).push(&format!(
                " AND a.record_kind NOT IN ('{ERASURE_AUDIT_KIND}', '{REDACTION_AUDIT_KIND}') \
                 AND a.filters IS DISTINCT FROM '{{\"redacted\": true}}'::jsonb AND ("
            ));
            match subject {
                ErasureSubject::Entity(entity) => {
                    let re = mentions_regex(entity);
                    sql.push("a.filters::text ~* ")
                        .bind(re.clone())
                        .push(" OR a.reason ~* ")
                        .bind(re);
                }
                other => {
                    let value = other.parts().1.to_owned();
                    sql.push("strpos(a.filters::text, ")
                        .bind(value.clone())
                        .push(") > 0 OR strpos(a.reason, ")
                        .bind(value)
                        .push(") > 0");
                }
            }
            sql.push(") ORDER BY a.chain_seq");
            if !dry_run {
                sql.push(" FOR UPDATE");
            }
            let rows = sql
                .build()?
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
            let mut seqs = Vec::with_capacity(rows.len());
            let mut redactions = Vec::with_capacity(rows.len());
            for row in &rows {
                seqs.push(col::<i64>(row, "seq")?);
                redactions.push(Redaction {
                    chain_seq: u64::try_from(col::<i64>(row, "chain_seq")?).unwrap_or(0),
                    hash: col::<Option<String>>(row, "hash")?.unwrap_or_default(),
                    redacted_hash: col::<Option<String>>(row, "redacted_hash")?.unwrap_or_default(),
                });
            }
            if dry_run || redactions.is_empty() {
                return Ok(redactions.len() as u64);
            }
            let mut sql = Sql::new(
                "UPDATE audit_log SET \
                 filters = CASE WHEN filters IS NULL THEN NULL ELSE '{\"redacted\": true}'::jsonb END, \
                 reason = CASE WHEN reason IS NULL THEN NULL ELSE 'redacted' END \
                 WHERE tenant_id = ",
            );
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND seq = ANY(")
                .bind(seqs)
                .push("::int8[])");
            sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
            let entries: Vec<AuditEntry> = redactions
                .chunks(REDACTIONS_PER_ENTRY)
                .map(|chunk| Redaction::entry(ctx, subject, chunk).stamped(ctx))
                .collect();
            insert_sql(ctx.tenant_id(), &entries.iter().collect::<Vec<_>>())?
                .build()?
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            tx.commit().await.map_err(store_error)?;
            Ok(redactions.len() as u64)
        }
        .instrument(span("audit", "redact", ctx))
        .await
    }

    async fn verify(
        &self,
        ctx: &CallerContext,
        request: &VerifyChain,
    ) -> Result<ChainReport, StoreError> {
        check_chain_reader(ctx, "verify the audit chain")?;
        self.writer.flush().await?;
        async {
            // The redactions the chain records, read first: their entries
            // come after the entries they name.
            let mut sql = Sql::new(&format!(
                "SELECT {ENTRY_COLS} FROM audit_log WHERE record_kind = '{REDACTION_AUDIT_KIND}' \
                 AND tenant_id = "
            ));
            sql.bind(ctx.tenant_id().to_owned());
            let mut redactions = Vec::new();
            for row in fetch_committed(&self.pool, ctx, sql).await? {
                redactions.extend(Redaction::recorded_in(&decode(&row)?));
            }
            let mut walk =
                ChainWalk::new(ctx.tenant_id(), request.anchor.clone()).with_redactions(redactions);
            // An entry outside the chain (its trigger switched off, or a row
            // inserted by hand) is a break wherever it is.
            let mut sql =
                Sql::new("SELECT seq FROM audit_log WHERE chain_seq IS NULL AND tenant_id = ");
            sql.bind(ctx.tenant_id().to_owned())
                .push(" ORDER BY seq LIMIT 1");
            let loose = fetch_committed(&self.pool, ctx, sql).await?;
            if let Some(row) = loose.first() {
                walk.unchained(u64::try_from(col::<i64>(row, "seq")?).unwrap_or(0));
                return Ok(walk.finish());
            }
            // Where to start: the first entry at or after `since`.
            let mut after: i64 = match request.since {
                None => 0,
                Some(since) => {
                    let mut sql = Sql::new(
                        "SELECT min(chain_seq) - 1 AS start FROM audit_log WHERE tenant_id = ",
                    );
                    sql.bind(ctx.tenant_id().to_owned())
                        .push(" AND at >= ")
                        .bind(since);
                    let rows = fetch_committed(&self.pool, ctx, sql).await?;
                    let start = match rows.first() {
                        Some(row) => col::<Option<i64>>(row, "start")?,
                        None => None,
                    };
                    match start {
                        Some(start) => start.max(0),
                        // Nothing at or after `since`: nothing to walk.
                        None => return Ok(walk.finish()),
                    }
                }
            };
            loop {
                // Each entry with the hash PostgreSQL recomputes for it
                // (the same function the trigger wrote it with).
                let mut sql = Sql::new(&format!(
                    "SELECT {ENTRY_COLS}, encode(openvibe_audit_hash(a), 'hex') AS expected \
                     FROM audit_log a WHERE tenant_id = "
                ));
                sql.bind(ctx.tenant_id().to_owned())
                    .push(" AND chain_seq > ")
                    .bind(after)
                    .push(" ORDER BY chain_seq LIMIT ")
                    .bind(VERIFY_PAGE);
                let rows = fetch_committed(&self.pool, ctx, sql).await?;
                let mut going = true;
                for row in &rows {
                    let entry = decode(row)?;
                    let expected: Option<String> = col(row, "expected")?;
                    after = i64::try_from(entry.chain_seq).unwrap_or(i64::MAX);
                    if !walk.step(&entry, expected.as_deref().unwrap_or_default()) {
                        going = false;
                        break;
                    }
                }
                if !going || i64::try_from(rows.len()).unwrap_or(0) < VERIFY_PAGE {
                    break;
                }
            }
            Ok(walk.finish())
        }
        .instrument(span("audit", "verify", ctx))
        .await
    }

    async fn anchor(&self, ctx: &CallerContext) -> Result<ChainHead, StoreError> {
        check_chain_reader(ctx, "anchor the audit chain")?;
        self.writer.flush().await?;
        async {
            let mut sql = Sql::new(
                "SELECT chain_seq, encode(hash, 'hex') AS hash FROM audit_log WHERE tenant_id = ",
            );
            // The head is the last linked entry (migration 0025).
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1");
            let rows = fetch_committed(&self.pool, ctx, sql).await?;
            Ok(match rows.first() {
                Some(row) => ChainHead {
                    tenant_id: ctx.tenant_id().to_owned(),
                    chain_seq: u64::try_from(col::<i64>(row, "chain_seq")?).unwrap_or(0),
                    hash: col(row, "hash")?,
                },
                None => ChainHead {
                    tenant_id: ctx.tenant_id().to_owned(),
                    chain_seq: 0,
                    hash: CHAIN_GENESIS.to_owned(),
                },
            })
        }
        .instrument(span("audit", "anchor", ctx))
        .await
    }
}
