//! [`PgInboxStore`]: the durable event inbox in PostgreSQL (table
//! `inbox_events`, migration 0033). A lease is one statement: the oldest
//! free events of the roles, locked `FOR UPDATE SKIP LOCKED` within the
//! caller's rights, so processes leasing at once never wait on each other
//! and never take one event twice. Renewing and finishing lock the row and
//! run the contract's status machine; the table's trigger audits every
//! transition with its name.

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, DecisionEvent, EventSource, INBOX_KIND, InboxEvent,
    InboxOutcome, InboxQuery, InboxStatus, InboxStore, LeaseRequest, LoopTrace, Page, PageQuery,
    Renewal, StoreError, check_caller, lease_end, store_time, table_of,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgRow};
use tracing::Instrument;

use crate::access::{push_changeable, push_readable_in};
use crate::audit::AuditWriter;
use crate::kept::{self, KeptRow};
use crate::records::{GOVERNED_FIXED, Record, fetch_page, governed_cols};
use crate::rows::{col, columns, decode_meta};
use crate::span::span;
use crate::sql::Sql;

/// The durable event inbox in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgInboxStore {
    pool: PgPool,
    audit: AuditWriter,
    pushes: Arc<Pushes>,
}

impl PgInboxStore {
    /// A store over `pool` (migrated: see [`crate::migrate`]), with an
    /// audit writer of its own.
    pub fn new(pool: PgPool) -> Self {
        Self {
            audit: AuditWriter::new(pool.clone()),
            pool,
            pushes: Arc::new(Pushes::default()),
        }
    }

    crate::audit::audited_store!(@with_audit);
}

/// The channel every insert into `inbox_events` notifies (migration 0035).
pub const INBOX_CHANNEL: &str = "openvibe_inbox";

/// How long the listener waits for a notification before it checks that
/// its store is still there.
const LISTEN_CHECK: Duration = Duration::from_secs(5);

/// The pushes the store heard of: counted by one listener task per store
/// (started by the first [`InboxStore::pushes`], on one pooled connection,
/// ending when the store is dropped). A lost connection counts as a push,
/// since pushes may have gone unheard while it was down.
#[derive(Debug)]
struct Pushes {
    count: tokio::sync::watch::Sender<u64>,
    started: AtomicBool,
}

impl Default for Pushes {
    fn default() -> Self {
        Self {
            count: tokio::sync::watch::Sender::new(0),
            started: AtomicBool::new(false),
        }
    }
}

impl Pushes {
    fn heard(&self) {
        self.count.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl PgInboxStore {
    /// Start listening for pushes, once, when a runtime is there to run
    /// the listener.
    fn listen(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.pushes.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let pool = self.pool.clone();
        let pushes = Arc::downgrade(&self.pushes);
        runtime.spawn(async move {
            loop {
                let listening = async {
                    let mut listener = PgListener::connect_with(&pool).await?;
                    listener.listen(INBOX_CHANNEL).await?;
                    Ok::<_, sqlx::Error>(listener)
                };
                let listener = listening.await.inspect_err(|e| {
                    tracing::warn!(error = %e, "listening for inbox pushes failed; polling until it works");
                });
                let Ok(mut listener) = listener else {
                    tokio::time::sleep(LISTEN_CHECK).await;
                    if pushes.upgrade().is_none() || pool.is_closed() {
                        return;
                    }
                    continue;
                };
                loop {
                    let Some(pushes) = pushes.upgrade() else {
                        return;
                    };
                    match tokio::time::timeout(LISTEN_CHECK, listener.try_recv()).await {
                        Err(_) => {}
                        // A push, or a lost connection (reconnected on the
                        // next call): either way, look.
                        Ok(Ok(_)) => pushes.heard(),
                        Ok(Err(e)) => {
                            pushes.heard();
                            if pool.is_closed() {
                                return;
                            }
                            tracing::debug!(error = %e, "the inbox listener's connection failed; listening again");
                            break;
                        }
                    }
                }
            }
        });
    }
}

const COLS: &[&str] = governed_cols![
    "role_id",
    "domain",
    "event",
    "origin",
    "status",
    "holder",
    "lease_until",
    "attempts",
    "finished_at",
    "note",
    "trace",
];

fn corrupt(id: &str, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("inbox event `{id}` has a malformed {what}: {e}"))
}

impl Record for InboxEvent {
    const KIND: &'static str = INBOX_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str =
        "status, holder, lease_until, attempts, finished_at, note, trace, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let event: Value = col(row, "event")?;
        let origin: String = col(row, "origin")?;
        let status: String = col(row, "status")?;
        let attempts: i32 = col(row, "attempts")?;
        Ok(InboxEvent {
            meta: decode_meta(INBOX_KIND, &id, row)?,
            role_id: col(row, "role_id")?,
            domain: col(row, "domain")?,
            event: serde_json::from_value::<DecisionEvent>(event)
                .map_err(|e| corrupt(&id, "event", e))?,
            origin: serde_json::from_value::<EventSource>(Value::String(origin))
                .map_err(|e| corrupt(&id, "origin", e))?,
            status: InboxStatus::parse(&status).ok_or_else(|| corrupt(&id, "status", &status))?,
            holder: col(row, "holder")?,
            lease_until: col(row, "lease_until")?,
            attempts: u32::try_from(attempts).unwrap_or(0),
            finished_at: col(row, "finished_at")?,
            note: col(row, "note")?,
            trace: col::<Option<Value>>(row, "trace")?
                .map(serde_json::from_value::<LoopTrace>)
                .transpose()
                .map_err(|e| corrupt(&id, "trace", e))?,
            id,
        })
    }
}

/// `origin` as the table stores it (its serde name).
fn origin_name(origin: EventSource) -> Result<String, StoreError> {
    match serde_json::to_value(origin) {
        Ok(Value::String(name)) => Ok(name),
        other => Err(StoreError::backend(format!(
            "an event source does not serialise to a name: {other:?}"
        ))),
    }
}

impl KeptRow for InboxEvent {
    const INSERTED: &'static str = "role_id, domain, event, origin";

    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError> {
        let event = serde_json::to_value(&self.event)
            .map_err(|e| StoreError::backend(format!("an event does not serialise: {e}")))?;
        sql.push(", ")
            .bind(self.role_id.clone())
            .push(", ")
            .bind(self.domain.clone())
            .push(", ")
            .bind(event)
            .push(", ")
            .bind(origin_name(self.origin)?);
        Ok(())
    }

    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.bind(self.status.as_str())
            .push(", ")
            .bind(self.holder.clone())
            .push(", ")
            .bind(self.lease_until)
            .push(", ")
            .bind(i32::try_from(self.attempts).unwrap_or(i32::MAX))
            .push(", ")
            .bind(self.finished_at)
            .push(", ")
            .bind(self.note.clone())
            .push(", ")
            .bind(
                self.trace
                    .as_ref()
                    .map(serde_json::to_value)
                    .transpose()
                    .map_err(|e| StoreError::backend(format!("a trace does not serialise: {e}")))?,
            )
            .push(", ")
            .bind(self.meta.updated_at);
        Ok(())
    }
}

impl PgInboxStore {
    async fn list_unaudited(
        &self,
        ctx: &CallerContext,
        query: &InboxQuery,
        limit: usize,
    ) -> Result<Page<InboxEvent>, StoreError> {
        check_caller(ctx)?;
        let scope = ctx.list_scope(&query.namespaces);
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM inbox_events f WHERE f.tenant_id = ",
            columns(COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
        push_readable_in(&mut sql, ctx, "f.", None, &scope);
        if let Some(status) = query.status {
            sql.push(" AND f.status = ").bind(status.as_str());
        }
        if let Some(role) = &query.role_id {
            sql.push(" AND f.role_id = ").bind(role.clone());
        }
        fetch_page::<InboxEvent>(&self.pool, ctx, sql, limit, query.cursor.as_deref(), |e| {
            (e.meta.created_at, e.id.as_str())
        })
        .await
    }

    /// One statement: the oldest free events of the roles `ctx` may
    /// change, locked without waiting on another lease, leased and
    /// returned (the trigger audits each as `lease` or `take_over`).
    async fn lease_unaudited(
        &self,
        ctx: &CallerContext,
        request: &LeaseRequest,
    ) -> Result<Vec<InboxEvent>, StoreError> {
        check_caller(ctx)?;
        request.validate()?;
        let now = store_time();
        let until = lease_end(now, request.lease_ms);
        // The events are picked once (a materialized CTE): a subquery in
        // `WHERE id IN (…)` may run again for each row updated, and rows the
        // statement already updated count as skipped there, so its LIMIT
        // would not hold.
        // One round trip: the caller's settings and the statement together.
        let mut sql = Sql::one_trip(
            "WITH picked AS MATERIALIZED (SELECT f.id FROM inbox_events f WHERE f.tenant_id = ",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.role_id = ANY(")
            .bind(request.roles.clone())
            .push("::text[]) AND (f.status = 'pending' OR (f.status = 'leased' AND (f.lease_until IS NULL OR f.lease_until <= ")
            .bind(now)
            .push("))) AND (f.expires_at IS NULL OR f.expires_at > ")
            .bind(now)
            .push(") AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Write);
        sql.push(" ORDER BY f.created_at, f.id LIMIT ")
            .bind(i64::try_from(request.limit).unwrap_or(i64::MAX))
            .push(" FOR UPDATE SKIP LOCKED) UPDATE inbox_events e SET status = 'leased', holder = ")
            .bind(request.holder.clone())
            .push(", lease_until = ")
            .bind(until)
            .push(", attempts = e.attempts + 1, updated_at = ")
            .bind(now)
            .push(" FROM picked WHERE e.tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(&format!(
                " AND e.id = picked.id RETURNING {}",
                columns(COLS, "e.")
            ));
        let rows = crate::tx::one_trip(&self.pool, ctx, sql).await?;
        let mut leased = rows
            .iter()
            .map(InboxEvent::decode)
            .collect::<Result<Vec<_>, _>>()?;
        // RETURNING keeps no order: oldest first, as asked.
        leased.sort_by(|a, b| (a.meta.created_at, &a.id).cmp(&(b.meta.created_at, &b.id)));
        Ok(leased)
    }
}

#[async_trait]
impl InboxStore for PgInboxStore {
    async fn push(&self, ctx: &CallerContext, event: InboxEvent) -> Result<InboxEvent, StoreError> {
        let id = openvibe_protocols::inbox_event_id(&event.role_id, &event.event.id);
        let push = kept::create(
            &self.pool,
            ctx,
            "push",
            event,
            InboxEvent::check_new,
            InboxEvent::prepare_new,
        );
        kept::audited(
            &self.audit,
            ctx,
            INBOX_KIND,
            AuditOp::Insert,
            "push",
            &id,
            push,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<InboxEvent>, StoreError> {
        crate::records::get::<InboxEvent>(&self.pool, ctx, id).await
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &InboxQuery,
    ) -> Result<Page<InboxEvent>, StoreError> {
        let limit = query.checked_limit()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, INBOX_KIND, query, &query.namespaces, limit));
        self.list_unaudited(ctx, query, limit)
            .instrument(span(INBOX_KIND, "list", ctx))
            .await
    }

    async fn lease(
        &self,
        ctx: &CallerContext,
        request: &LeaseRequest,
    ) -> Result<Vec<InboxEvent>, StoreError> {
        self.lease_unaudited(ctx, request)
            .instrument(span(INBOX_KIND, "lease", ctx))
            .await
    }

    async fn renew(
        &self,
        ctx: &CallerContext,
        id: &str,
        renewal: &Renewal,
    ) -> Result<InboxEvent, StoreError> {
        let renew = kept::transition(&self.pool, ctx, id, |e: &InboxEvent, now| {
            e.renew_as(ctx, renewal, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            INBOX_KIND,
            AuditOp::Update,
            "renew",
            id,
            renew,
        )
        .await
    }

    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: &InboxOutcome,
    ) -> Result<InboxEvent, StoreError> {
        let finish = kept::transition(&self.pool, ctx, id, |e: &InboxEvent, now| {
            e.finish_as(ctx, outcome, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            INBOX_KIND,
            AuditOp::Update,
            "finish",
            id,
            finish,
        )
        .await
    }

    fn pushes(&self) -> Option<u64> {
        self.listen();
        Some(*self.pushes.count.borrow())
    }

    async fn wait_for_push(&self, seen: u64, timeout: Duration) {
        self.listen();
        let mut pushes = self.pushes.count.subscribe();
        let _ = tokio::time::timeout(timeout, pushes.wait_for(|n| *n != seen)).await;
    }
}
