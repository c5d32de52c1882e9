//! [`PgSpaceStore`]: spaces in PostgreSQL (tables `spaces`,
//! `space_messages`, `space_cursors`, migration 0023).
//!
//! A post locks its space's row (`SELECT … FOR UPDATE` within the caller's
//! read rule), numbers the messages from the space's head and appends them
//! with the new head in one statement, so a space has one total order
//! whoever posts, from whichever process. The table's trigger sends
//! `NOTIFY openvibe_spaces` with the new head; a reader waiting in
//! [`SpaceStore::messages`] is woken through one `LISTEN` connection per
//! store ([`Waker`]) and reads the log again: the log is the truth, the
//! notification only a wake-up (a lost one costs at most
//! [`RECHECK`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, MESSAGE_KIND, Member, MessageBody, MessageQuery, Page,
    PageQuery, SPACE_KIND, Space, SpaceMessage, SpaceQuery, SpaceStore, StoreError, check_caller,
    member_change, merge_posted, space_not_found, split_reposts, store_time, table_of,
};
use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgRow};
use tokio::sync::{Notify, watch};
use tracing::Instrument;

use crate::access::push_readable_in;
use crate::audit::AuditWriter;
use crate::error::store_error;
use crate::kept::{self, KeptRow};
use crate::records::{GOVERNED_FIXED, Record, end_read, fetch_all, fetch_page, governed_cols};
use crate::rows::{col, columns, decode_meta, to_i64};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{Tx, begin};

/// The channel the messages' trigger notifies.
const CHANNEL: &str = "openvibe_spaces";

/// How long a waiting reader sleeps at most before it reads the log again
/// without a wake-up (the listener's connection may have dropped one).
pub const RECHECK: Duration = Duration::from_secs(1);

const SPACE_COLS: &[&str] = governed_cols!["title", "domain", "members", "head"];

const MESSAGE_COLS: &[&str] = governed_cols![
    "space_id",
    "seq",
    "thread",
    "domain",
    "recipients",
    "escalated",
    "body",
];

fn corrupt(kind: &str, id: &str, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("{kind} `{id}` has a malformed {what}: {e}"))
}

fn seq_of(kind: &str, id: &str, row: &PgRow, name: &str) -> Result<u64, StoreError> {
    let v: i64 = col(row, name)?;
    u64::try_from(v).map_err(|e| corrupt(kind, id, name, e))
}

impl Record for Space {
    const KIND: &'static str = SPACE_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = SPACE_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "members, member_keys, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let members: Value = col(row, "members")?;
        Ok(Space {
            meta: decode_meta(SPACE_KIND, &id, row)?,
            title: col(row, "title")?,
            domain: col(row, "domain")?,
            members: serde_json::from_value(members)
                .map_err(|e| corrupt(SPACE_KIND, &id, "members", e))?,
            head: seq_of(SPACE_KIND, &id, row, "head")?,
            id,
        })
    }
}

impl Record for SpaceMessage {
    const KIND: &'static str = MESSAGE_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = MESSAGE_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let body: Value = col(row, "body")?;
        Ok(SpaceMessage {
            meta: decode_meta(MESSAGE_KIND, &id, row)?,
            space_id: col(row, "space_id")?,
            seq: seq_of(MESSAGE_KIND, &id, row, "seq")?,
            thread: col(row, "thread")?,
            domain: col(row, "domain")?,
            to: col(row, "recipients")?,
            escalated: col(row, "escalated")?,
            body: serde_json::from_value::<MessageBody>(body)
                .map_err(|e| corrupt(MESSAGE_KIND, &id, "body", e))?,
            id,
        })
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, StoreError> {
    serde_json::to_value(value)
        .map_err(|e| StoreError::backend(format!("a space record does not serialise: {e}")))
}

fn member_keys(space: &Space) -> Vec<String> {
    space.members.iter().map(|m| m.principal.clone()).collect()
}

impl KeptRow for Space {
    const INSERTED: &'static str = "title, domain, members, member_keys";

    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.push(", ")
            .bind(self.title.clone())
            .push(", ")
            .bind(self.domain.clone())
            .push(", ")
            .bind(to_json(&self.members)?)
            .push(", ")
            .bind(member_keys(self));
        Ok(())
    }

    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.bind(to_json(&self.members)?)
            .push(", ")
            .bind(member_keys(self))
            .push(", ")
            .bind(self.meta.updated_at);
        Ok(())
    }
}

/// Wakes readers waiting for a space's next message: one `LISTEN`
/// connection per store, started by the first reader that waits, and a
/// watch channel per space someone waits on.
#[derive(Debug)]
struct Waker {
    waiters: Mutex<HashMap<(String, String), watch::Sender<u64>>>,
    /// `true` once the listener listens (a reader subscribed before it
    /// reads, so no wake-up between its read and its wait is lost).
    ready: watch::Sender<bool>,
    started: std::sync::Once,
    shutdown: Arc<Notify>,
}

impl Default for Waker {
    fn default() -> Self {
        Self {
            waiters: Mutex::default(),
            ready: watch::Sender::new(false),
            started: std::sync::Once::new(),
            shutdown: Arc::new(Notify::new()),
        }
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.shutdown.notify_one();
    }
}

impl Waker {
    /// A receiver that changes when the space `(tenant, space)` may have
    /// a new message; the listener is started (and listening) first.
    async fn subscribe(
        self: &Arc<Self>,
        pool: &PgPool,
        tenant: &str,
        space: &str,
    ) -> watch::Receiver<u64> {
        self.started.call_once(|| {
            let (weak, pool, shutdown) =
                (Arc::downgrade(self), pool.clone(), self.shutdown.clone());
            tokio::spawn(listen(weak, pool, shutdown));
        });
        let mut ready = self.ready.subscribe();
        // A listener that cannot connect leaves readers to the recheck.
        let _ = tokio::time::timeout(RECHECK, ready.wait_for(|r| *r)).await;
        let mut waiters = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        waiters.retain(|_, tx| tx.receiver_count() > 0);
        waiters
            .entry((tenant.to_owned(), space.to_owned()))
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    fn wake(&self, key: Option<&(String, String)>) {
        let waiters = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        match key {
            Some(key) => {
                if let Some(tx) = waiters.get(key) {
                    tx.send_modify(|n| *n = n.wrapping_add(1));
                }
            }
            None => {
                for tx in waiters.values() {
                    tx.send_modify(|n| *n = n.wrapping_add(1));
                }
            }
        }
    }
}

/// The listener: `LISTEN openvibe_spaces` on a connection of its own,
/// waking the space each notification names; on a lost connection it
/// wakes every reader (they read the log again) and reconnects. Ends when
/// its store is dropped or its pool closed.
async fn listen(waker: Weak<Waker>, pool: PgPool, shutdown: Arc<Notify>) {
    loop {
        let connected = async {
            let mut l = PgListener::connect_with(&pool).await?;
            l.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(l)
        };
        let mut listener = tokio::select! {
            () = shutdown.notified() => return,
            l = connected => match l {
                Ok(l) => l,
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "space listener cannot connect; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            },
        };
        let Some(w) = waker.upgrade() else { return };
        w.ready.send_replace(true);
        w.wake(None);
        drop(w);
        loop {
            let next = tokio::select! {
                () = shutdown.notified() => return,
                n = listener.try_recv() => n,
            };
            let Some(w) = waker.upgrade() else { return };
            match next {
                Ok(Some(n)) => match serde_json::from_str::<(String, String, i64)>(n.payload()) {
                    Ok((tenant, space, _head)) => w.wake(Some(&(tenant, space))),
                    Err(_) => w.wake(None),
                },
                // The connection dropped (and reconnects): anything sent
                // meanwhile is lost, so everyone reads again.
                Ok(None) => w.wake(None),
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "space listener lost its connection");
                    w.ready.send_replace(false);
                    w.wake(None);
                    break;
                }
            }
        }
    }
}

/// Spaces in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgSpaceStore {
    pool: PgPool,
    audit: AuditWriter,
    waker: Arc<Waker>,
}

impl PgSpaceStore {
    /// A store over `pool` (migrated: see [`crate::migrate`]), with an
    /// audit writer of its own.
    pub fn new(pool: PgPool) -> Self {
        Self {
            audit: AuditWriter::new(pool.clone()),
            waker: Arc::default(),
            pool,
        }
    }

    crate::audit::audited_store!(@with_audit);

    /// The space `id` locked (`lock`) or read in `tx`, when `ctx` may read
    /// it (a member, or privileged).
    async fn visible(
        tx: &mut Tx,
        ctx: &CallerContext,
        id: &str,
        lock: bool,
    ) -> Result<Space, StoreError> {
        kept::find::<Space>(tx, ctx, id, lock)
            .await?
            .ok_or_else(|| space_not_found(id))
    }

    /// Lock the readable space `id`, check `ctx` may change its members,
    /// apply `change` and write it back, audited as `transition` of
    /// `member`.
    async fn change_members(
        &self,
        ctx: &CallerContext,
        id: &str,
        transition: &str,
        member: &str,
        change: impl FnOnce(&Space) -> Result<Space, StoreError>,
    ) -> Result<Space, StoreError> {
        check_caller(ctx)?;
        let mut tx = begin(&self.pool, ctx).await?;
        let current = Self::visible(&mut tx, ctx, id, true).await?;
        current.require_manage(ctx)?;
        let mut next = change(&current)?;
        next.meta.updated_at = store_time();
        // The trigger names the change from a setting of this statement.
        let detail = member_change(transition, member).to_string();
        let mut sql = Sql::new("WITH said AS (SELECT set_config('openvibe.space_change', ");
        sql.bind(detail).push(&format!(
            ", true)) UPDATE spaces SET ({}) = (",
            Space::MUTABLE
        ));
        next.push_mutable(&mut sql)?;
        sql.push(") FROM said WHERE tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(" AND id = ")
            .bind(id.to_owned());
        sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(next)
    }

    async fn post_unaudited(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        messages: Vec<SpaceMessage>,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        check_caller(ctx)?;
        openvibe_protocols::check_batch(messages.len())?;
        let mut tx = begin(&self.pool, ctx).await?;
        let space = Self::visible(&mut tx, ctx, space_id, true).await?;
        space.require_post(ctx)?;
        let given: Vec<String> = messages
            .iter()
            .filter(|m| !m.id.is_empty())
            .map(|m| m.id.clone())
            .collect();
        let stored: HashMap<String, SpaceMessage> = if given.is_empty() {
            HashMap::new()
        } else {
            let mut sql = Sql::new(&format!(
                "SELECT {} FROM space_messages f WHERE f.tenant_id = ",
                columns(MESSAGE_COLS, "f.")
            ));
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = ANY(")
                .bind(given)
                .push("::text[])");
            fetch_all::<SpaceMessage>(&mut tx, sql)
                .await?
                .into_iter()
                .map(|m| (m.id.clone(), m))
                .collect()
        };
        let (known, mut fresh) =
            split_reposts(ctx, space_id, messages, |id| stored.get(id).cloned())?;
        let now = store_time();
        space.prepare_post(ctx, &mut fresh, now)?;
        let Some(last) = fresh.last() else {
            end_read(tx);
            return Ok(merge_posted(known, fresh));
        };
        let head = to_i64("head", last.seq)?;
        let first = &fresh[0];
        let mut ids = Vec::with_capacity(fresh.len());
        let mut seqs = Vec::with_capacity(fresh.len());
        let mut threads = Vec::with_capacity(fresh.len());
        let mut domains = Vec::with_capacity(fresh.len());
        let mut recipients = Vec::with_capacity(fresh.len());
        let mut escalated = Vec::with_capacity(fresh.len());
        let mut bodies = Vec::with_capacity(fresh.len());
        for m in &fresh {
            ids.push(m.id.clone());
            seqs.push(to_i64("seq", m.seq)?);
            threads.push(m.thread.clone());
            domains.push(m.domain.clone());
            recipients.push(to_json(&m.to)?);
            escalated.push(m.escalated);
            bodies.push(to_json(&m.body)?);
        }
        let mut sql = Sql::new(
            "WITH appended AS (INSERT INTO space_messages (tenant_id, id, space_id, seq, \
             namespace, project_id, owner, classification, source, created_at, updated_at, \
             expires_at, thread, domain, recipients, escalated, body) SELECT ",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(", u.id, ")
            .bind(space_id.to_owned())
            .push(", u.seq, ")
            .bind(first.meta.namespace.clone())
            .push(", ")
            .bind(first.meta.project_id.clone())
            .push(", ")
            .bind(first.meta.owner.clone())
            .push(", ")
            .bind(first.meta.classification.as_str())
            .push(", ")
            .bind(first.meta.source.clone())
            .push(", ")
            .bind(now)
            .push(", ")
            .bind(now)
            .push(", ")
            .bind(first.meta.expires_at)
            .push(
                ", u.thread, u.domain, ARRAY(SELECT jsonb_array_elements_text(u.rcpt)), \
                 u.esc, u.body FROM unnest(",
            )
            .bind(ids)
            .push("::text[], ")
            .bind(seqs)
            .push("::bigint[], ")
            .bind(threads)
            .push("::text[], ")
            .bind(domains)
            .push("::text[], ")
            .bind(recipients)
            .push("::jsonb[], ")
            .bind(escalated)
            .push("::boolean[], ")
            .bind(bodies)
            .push(
                "::jsonb[]) AS u(id, seq, thread, domain, rcpt, esc, body) RETURNING 1) \
                 UPDATE spaces SET head = ",
            )
            .bind(head)
            .push(" WHERE tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(" AND id = ")
            .bind(space_id.to_owned());
        sql.build()?
            .execute(&mut *tx)
            .await
            .map_err(|e| match store_error(e) {
                // Another space's message has one of these ids (and the
                // caller cannot read it).
                StoreError::Conflict { .. } => StoreError::conflict(
                    "a message with one of these ids exists and is another post",
                ),
                e => e,
            })?;
        tx.commit().await.map_err(store_error)?;
        Ok(merge_posted(known, fresh))
    }

    async fn read_messages(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        query: &MessageQuery,
        limit: usize,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        let mut tx = begin(&self.pool, ctx).await?;
        Self::visible(&mut tx, ctx, space_id, false).await?;
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM space_messages f WHERE f.tenant_id = ",
            columns(MESSAGE_COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.space_id = ")
            .bind(space_id.to_owned())
            .push(" AND f.seq > ")
            .bind(to_i64("after", query.after)?);
        if let Some(thread) = &query.thread {
            sql.push(" AND (f.id = ")
                .bind(thread.clone())
                .push(" OR f.thread = ")
                .bind(thread.clone())
                .push(")");
        }
        if query.for_me {
            sql.push(" AND (f.recipients = '{}' OR ")
                .bind(ctx.owner_key())
                .push(" = ANY(f.recipients))");
        }
        sql.push(" ORDER BY f.seq LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        let found = fetch_all::<SpaceMessage>(&mut tx, sql).await?;
        end_read(tx);
        Ok(found)
    }

    async fn list_unaudited(
        &self,
        ctx: &CallerContext,
        query: &SpaceQuery,
        limit: usize,
    ) -> Result<Page<Space>, StoreError> {
        let scope = ctx.list_scope(&query.namespaces);
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM spaces f WHERE f.tenant_id = ",
            columns(SPACE_COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
        push_readable_in(&mut sql, ctx, "f.", None, &scope);
        if !ctx.is_privileged() {
            sql.push(" AND f.member_keys @> ARRAY[")
                .bind(ctx.owner_key())
                .push("]::text[]");
        }
        fetch_page::<Space>(&self.pool, ctx, sql, limit, query.cursor.as_deref(), |s| {
            (s.meta.created_at, s.id.as_str())
        })
        .await
    }

    async fn ack_unaudited(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        seq: u64,
    ) -> Result<u64, StoreError> {
        let mut tx = begin(&self.pool, ctx).await?;
        let space = Self::visible(&mut tx, ctx, space_id, false).await?;
        let mut sql =
            Sql::new("INSERT INTO space_cursors (tenant_id, space_id, member, seq) VALUES (");
        sql.bind(ctx.tenant_id().to_owned())
            .push(", ")
            .bind(space_id.to_owned())
            .push(", ")
            .bind(ctx.owner_key())
            .push(", ")
            .bind(to_i64("seq", seq.min(space.head))?)
            .push(
                ") ON CONFLICT (tenant_id, space_id, member) DO UPDATE \
                 SET seq = GREATEST(space_cursors.seq, EXCLUDED.seq) RETURNING seq",
            );
        let row = sql
            .build()?
            .fetch_one(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        seq_of("cursor", space_id, &row, "seq")
    }

    async fn cursor_unaudited(
        &self,
        ctx: &CallerContext,
        space_id: &str,
    ) -> Result<u64, StoreError> {
        let mut tx = begin(&self.pool, ctx).await?;
        Self::visible(&mut tx, ctx, space_id, false).await?;
        let mut sql = Sql::new("SELECT seq FROM space_cursors WHERE tenant_id = ");
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND space_id = ")
            .bind(space_id.to_owned())
            .push(" AND member = ")
            .bind(ctx.owner_key());
        let row = sql
            .build()?
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        end_read(tx);
        row.map_or(Ok(0), |r| seq_of("cursor", space_id, &r, "seq"))
    }
}

#[async_trait]
impl SpaceStore for PgSpaceStore {
    async fn create(&self, ctx: &CallerContext, space: Space) -> Result<Space, StoreError> {
        let id = space.id.clone();
        let create = kept::create(
            &self.pool,
            ctx,
            "create",
            space,
            |s| s.prepare_new(ctx),
            |_| {},
        );
        kept::audited(
            &self.audit,
            ctx,
            SPACE_KIND,
            AuditOp::Insert,
            "create",
            &id,
            create,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Space>, StoreError> {
        check_caller(ctx)?;
        let found = crate::records::get::<Space>(&self.pool, ctx, id).await?;
        Ok(found.filter(|s| s.readable_by(ctx)))
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &SpaceQuery,
    ) -> Result<Page<Space>, StoreError> {
        check_caller(ctx)?;
        let limit = query.checked_limit()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, SPACE_KIND, query, &query.namespaces, limit));
        self.list_unaudited(ctx, query, limit)
            .instrument(span(SPACE_KIND, "list", ctx))
            .await
    }

    async fn add_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        member: Member,
    ) -> Result<Space, StoreError> {
        let who = member.principal.clone();
        let add = self.change_members(ctx, space_id, "add_member", &who, |s| s.with_member(member));
        kept::audited(
            &self.audit,
            ctx,
            SPACE_KIND,
            AuditOp::Update,
            "add_member",
            space_id,
            add,
        )
        .await
    }

    async fn remove_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        principal: &str,
    ) -> Result<Space, StoreError> {
        let remove = self.change_members(ctx, space_id, "remove_member", principal, |s| {
            s.without_member(principal)
        });
        kept::audited(
            &self.audit,
            ctx,
            SPACE_KIND,
            AuditOp::Update,
            "remove_member",
            space_id,
            remove,
        )
        .await
    }

    async fn post_all(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        messages: Vec<SpaceMessage>,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        let post = self.post_unaudited(ctx, space_id, messages);
        kept::audited(
            &self.audit,
            ctx,
            MESSAGE_KIND,
            AuditOp::Insert,
            "post",
            space_id,
            post,
        )
        .await
    }

    async fn messages(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        query: &MessageQuery,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        async {
            check_caller(ctx)?;
            let (limit, wait) = query.checked()?;
            if wait.is_zero() {
                return self.read_messages(ctx, space_id, query, limit).await;
            }
            let deadline = tokio::time::Instant::now() + wait;
            // Subscribe before reading: a post committed after the read
            // wakes this reader.
            let mut woken = self
                .waker
                .subscribe(&self.pool, ctx.tenant_id(), space_id)
                .await;
            loop {
                woken.borrow_and_update();
                let found = self.read_messages(ctx, space_id, query, limit).await?;
                let now = tokio::time::Instant::now();
                if !found.is_empty() || now >= deadline {
                    return Ok(found);
                }
                let until = deadline.min(now + RECHECK);
                if let Ok(Err(_)) = tokio::time::timeout_at(until, woken.changed()).await {
                    // No wake-ups (cannot happen while subscribed): poll.
                    tokio::time::sleep_until(until).await;
                }
            }
        }
        .instrument(span(MESSAGE_KIND, "messages", ctx))
        .await
    }

    async fn ack(&self, ctx: &CallerContext, space_id: &str, seq: u64) -> Result<u64, StoreError> {
        check_caller(ctx)?;
        self.ack_unaudited(ctx, space_id, seq)
            .instrument(span(SPACE_KIND, "ack", ctx))
            .await
    }

    async fn cursor(&self, ctx: &CallerContext, space_id: &str) -> Result<u64, StoreError> {
        check_caller(ctx)?;
        self.cursor_unaudited(ctx, space_id)
            .instrument(span(SPACE_KIND, "cursor", ctx))
            .await
    }
}
