//! Operations every record table shares: get, delete, touch, running a
//! query, and explaining a change that matched no row.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    AuditOp, CallerContext, Change, Page, RecordMeta, StoreError, check_fixed_namespace,
    page_cursor, parse_cursor,
};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Row, Transaction};
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::audit::AuditWriter;
use crate::error::store_error;
use crate::group::{Answer, Groups, Key, RowFn, Spec, Turn};
use crate::identity::{check_given_expiry, push_expiry, push_identity};
use crate::rows::columns;
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{Run, begin, context_settings, write_replacing_expired};

/// A record type stored in one table keyed by `(tenant_id, id)`.
pub trait Record: Sized + Send + Unpin + 'static {
    /// Record kind for errors (`fact`, `episode`, `insight`).
    const KIND: &'static str;
    /// Its table.
    const TABLE: &'static str;
    /// The columns a record is read from.
    const COLS: &'static [&'static str];
    /// Whether it has access statistics (`access_count`, `last_accessed`).
    const TRACKED: bool;
    /// The columns fixed at insert (identity, placement, owner, creation
    /// time, and access statistics when tracked), comma-separated.
    const FIXED: &'static str;
    /// The columns a write sets from the record (all but identity, owner,
    /// placement, creation time and access statistics), comma-separated.
    const MUTABLE: &'static str;
    /// Decode one row (selected with [`Record::COLS`]).
    fn decode(row: &PgRow) -> Result<Self, StoreError>;
}

/// Whether a write may create a record or must find an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `store`: insert, or replace a record the caller may change.
    Upsert,
    /// `update`: replace an existing record only.
    Update,
    /// Insert only: an existing record with the id is a conflict
    /// (`InsightStore::observe`).
    Create,
}

pub(crate) fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}

/// Run `sql` in `tx` and decode every row, in the order the SQL gives.
pub(crate) async fn fetch_all<R: Record>(
    tx: &mut Transaction<'static, Postgres>,
    sql: Sql,
) -> Result<Vec<R>, StoreError> {
    let rows = sql
        .build()?
        .fetch_all(&mut **tx)
        .await
        .map_err(store_error)?;
    rows.iter().map(R::decode).collect()
}

/// Run `sql` in `tx` and decode the row it returns, if any.
pub(crate) async fn fetch_optional<R: Record>(
    tx: &mut Transaction<'static, Postgres>,
    sql: Sql,
) -> Result<Option<R>, StoreError> {
    let row = sql
        .build()?
        .fetch_optional(&mut **tx)
        .await
        .map_err(store_error)?;
    row.as_ref().map(R::decode).transpose()
}

/// End a transaction that only read: dropping it queues a `ROLLBACK`
/// that sqlx sends ahead of the connection's next statement, so a read
/// costs two round trips (begin + statement), not three.
pub(crate) fn end_read(tx: Transaction<'static, Postgres>) {
    drop(tx);
}

/// Run a statement confined to the caller's tenant and decode its rows;
/// `writes`: it changes rows (access tracking), so commit.
pub(crate) async fn read<R: Record>(
    pool: &PgPool,
    ctx: &CallerContext,
    sql: Sql,
    writes: bool,
) -> Result<Vec<R>, StoreError> {
    let mut tx = begin(pool, ctx).await?;
    let found = fetch_all(&mut tx, sql).await?;
    if writes {
        tx.commit().await.map_err(store_error)?;
    } else {
        end_read(tx);
    }
    Ok(found)
}

/// The record `id`, when the caller may read it.
pub(crate) async fn get<R: Record>(
    pool: &PgPool,
    ctx: &CallerContext,
    id: &str,
) -> Result<Option<R>, StoreError> {
    async {
        let sql = select_readable::<R>(ctx, id, false);
        let mut tx = begin(pool, ctx).await?;
        let found = fetch_optional(&mut tx, sql).await?;
        end_read(tx);
        Ok(found)
    }
    .instrument(span(R::KIND, "get", ctx))
    .await
}

/// Run `sql` (a `SELECT` of `R` on alias `f.` whose `WHERE` is open) one
/// page at a time, newest first: keyset `(f.created_at, f.id) < cursor`,
/// `limit + 1` rows fetched to know whether another page follows; `key` is
/// a record's `(created_at, id)`.
pub(crate) async fn fetch_page<R: Record>(
    pool: &PgPool,
    ctx: &CallerContext,
    mut sql: Sql,
    limit: usize,
    cursor: Option<&str>,
    key: impl Fn(&R) -> (DateTime<Utc>, &str),
) -> Result<Page<R>, StoreError> {
    if let Some(cursor) = cursor {
        let (micros, id) = parse_cursor(cursor)?;
        let at = DateTime::<Utc>::from_timestamp_micros(micros)
            .ok_or_else(|| StoreError::invalid("cursor", "its time is out of range"))?;
        sql.push(" AND (f.created_at, f.id) < (")
            .bind(at)
            .push(", ")
            .bind(id)
            .push(")");
    }
    let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    sql.push(" ORDER BY f.created_at DESC, f.id DESC LIMIT ")
        .bind(fetch);
    let mut tx = begin(pool, ctx).await?;
    let mut items = fetch_all::<R>(&mut tx, sql).await?;
    end_read(tx);
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = match items.last() {
        Some(last) if more => {
            let (at, id) = key(last);
            Some(page_cursor(at, id))
        }
        _ => None,
    };
    Ok(Page { items, next_cursor })
}

/// `SELECT <cols> FROM <table> f WHERE` the caller's readable row `id` of
/// its tenant, locked for update when `lock`.
pub(crate) fn select_readable<R: Record>(ctx: &CallerContext, id: &str, lock: bool) -> Sql {
    let mut sql = Sql::new(&format!(
        "SELECT {} FROM {} f WHERE f.tenant_id = ",
        columns(R::COLS, "f."),
        R::TABLE
    ));
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND f.id = ")
        .bind(id.to_owned())
        .push(" AND ");
    push_readable(&mut sql, ctx, "f.", None);
    if lock {
        sql.push(" FOR UPDATE");
    }
    sql
}

/// The columns fixed at insert of a governed record table keyed by
/// `(tenant_id, id)` (its [`Record::FIXED`]).
pub(crate) const GOVERNED_FIXED: &str = "tenant_id, id, namespace, project_id, owner, created_at";

/// The columns of a governed record table: its identity and governance
/// columns, then `$extra`.
macro_rules! governed_cols {
    ($($extra:literal),* $(,)?) => {
        &[
            "tenant_id", "id", "namespace", "project_id", "owner", "classification", "source",
            "created_at", "updated_at", "expires_at", $($extra),*
        ]
    };
}
pub(crate) use governed_cols;

/// Write one record in one statement: `store` (upsert) or `update`. Tenant,
/// id, owner and creation time come from the caller, namespace and project
/// from its placement of `namespace` ([`CallerContext::placement`]); all
/// are fixed at insert. `push_mutable` binds the values of
/// [`Record::MUTABLE`]. Only a record the caller may change (and, when
/// `namespace` is named, that lives there) is replaced; when nothing
/// matched, the transaction is rolled back and [`refusal`] says why.
/// Upserts of one caller that run at the same time share a transaction
/// ([`crate::group`]).
pub(crate) async fn write<R: Record>(
    stores: Writer<'_>,
    ctx: &CallerContext,
    target: Target<'_>,
    mode: Mode,
    push_mutable: impl Fn(&mut Sql) + Send + Sync + 'static,
) -> Result<R, StoreError> {
    let audited = match mode {
        Mode::Upsert | Mode::Create => AuditOp::Insert,
        Mode::Update => AuditOp::Update,
    };
    let id = target.id.clone();
    let result = write_unaudited::<R>(stores, ctx, target, mode, push_mutable).await;
    stores.audit.refusal(ctx, audited, R::KIND, &id, result)
}

/// What [`write()`] writes with: the pool, the audit writer and the upsert
/// groups of the store.
#[derive(Clone, Copy)]
pub(crate) struct Writer<'a> {
    pub(crate) pool: &'a PgPool,
    pub(crate) audit: &'a AuditWriter,
    pub(crate) groups: &'a Groups,
}

/// What a write names: the record's id, the namespace asked for (empty:
/// the default, or keep), the creation time it carries and the expiry it
/// asks for (capped by the caller's retention).
pub(crate) struct Target<'a> {
    pub(crate) id: String,
    pub(crate) namespace: &'a str,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) expires_at: Option<DateTime<Utc>>,
}

async fn write_unaudited<R: Record>(
    stores: Writer<'_>,
    ctx: &CallerContext,
    target: Target<'_>,
    mode: Mode,
    push_mutable: impl Fn(&mut Sql) + Send + Sync + 'static,
) -> Result<R, StoreError> {
    let Target {
        id,
        namespace,
        created_at,
        expires_at,
    } = target;
    check_given_expiry(expires_at)?;
    let pool = stores.pool;
    if mode == Mode::Update {
        let mut sql = Sql::new(&format!(
            "UPDATE {} AS f SET ({}) = (",
            R::TABLE,
            R::MUTABLE
        ));
        push_mutable(&mut sql);
        sql.push("), expires_at = ");
        push_expiry(&mut sql, ctx, R::KIND, expires_at, "f.");
        sql.push(" WHERE f.tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(" AND f.id = ")
            .bind(id.clone())
            .push(" AND ");
        push_condition::<R>(&mut sql, ctx, namespace);
        let mut tx = begin(pool, ctx).await?;
        let stored = fetch_optional::<R>(&mut tx, sql).await?;
        return finish(tx, stored, ctx, &id, mode, namespace).await;
    }
    let placement = ctx.placement(namespace, &format!("store {} {id}", R::KIND))?;
    let expiry = ctx.expiry(R::KIND, &placement.namespace, created_at, expires_at)?;
    let row_ctx = ctx.clone();
    let row_id = id.clone();
    let row: RowFn = Arc::new(move |sql: &mut Sql| {
        sql.push("(");
        push_identity(sql, &row_ctx, &placement, row_id.clone(), created_at);
        // Access statistics start at zero.
        sql.push(if R::TRACKED { ", 0, NULL, " } else { ", " });
        push_mutable(sql);
        sql.push(", ").bind(expiry).push(")");
    });
    let tail_ctx = ctx.clone();
    let tail_namespace = namespace.to_owned();
    let tail: RowFn = if mode == Mode::Create {
        Arc::new(|sql: &mut Sql| {
            sql.push(&format!(
                " ON CONFLICT (tenant_id, id) DO NOTHING RETURNING {}",
                columns(R::COLS, "f.")
            ));
        })
    } else {
        Arc::new(move |sql: &mut Sql| {
            push_upsert_tail::<R>(sql, &tail_ctx, expires_at, &tail_namespace);
        })
    };
    let upsert = || async {
        let mut sql = Sql::new(&upsert_head::<R>());
        row(&mut sql);
        tail(&mut sql);
        let (tx, ran) = write_replacing_expired(
            pool,
            ctx,
            R::TABLE,
            std::slice::from_ref(&id),
            sql,
            Run::Optional,
        )
        .await?;
        let stored = ran.row()?.as_ref().map(R::decode).transpose()?;
        finish(tx, stored, ctx, &id, mode, namespace).await
    };
    // A create writes alone: a group's rows replace, not refuse.
    let key = if mode == Mode::Create {
        None
    } else {
        group_key::<R>(&tail, ctx)
    };
    let Some(key) = key else {
        return upsert().await;
    };
    let spec = || Spec {
        ctx: ctx.clone(),
        table: R::TABLE,
        kind: R::KIND,
        head: upsert_head::<R>(),
        tail: Arc::clone(&tail),
        decodes: decodes::<R>,
    };
    match stores.groups.join(pool, key, spec, &id, &row) {
        Turn::Lead(guard) => {
            let stored = upsert().await;
            drop(guard);
            stored
        }
        Turn::Follow(answer) => match answer.await {
            Ok(Answer::Written(row)) => R::decode(&row),
            Ok(Answer::Failed(e)) => Err(e),
            Ok(Answer::Alone(token)) => {
                let stored = upsert().await;
                drop(token);
                stored
            }
            Err(_) => upsert().await,
        },
    }
}

/// Whether `row` decodes as an `R`.
fn decodes<R: Record>(row: &PgRow) -> Result<(), StoreError> {
    R::decode(row).map(|_| ())
}

/// `INSERT INTO … VALUES ` of an upsert, before its rows.
fn upsert_head<R: Record>() -> String {
    format!(
        "INSERT INTO {} AS f ({}, {}, expires_at) VALUES ",
        R::TABLE,
        R::FIXED,
        R::MUTABLE
    )
}

/// An upsert after its rows: replace an existing record only when `ctx`
/// may change it ([`push_condition`]), with the expiry asked for (`given`)
/// capped by the caller's retention, and return the rows written.
fn push_upsert_tail<R: Record>(
    sql: &mut Sql,
    ctx: &CallerContext,
    given: Option<DateTime<Utc>>,
    namespace: &str,
) {
    let excluded: Vec<String> = R::MUTABLE
        .split(", ")
        .map(|c| format!("EXCLUDED.{c}"))
        .collect();
    sql.push(&format!(
        " ON CONFLICT (tenant_id, id) DO UPDATE SET ({}) = ({}), expires_at = ",
        R::MUTABLE,
        excluded.join(", ")
    ));
    push_expiry(sql, ctx, R::KIND, given, "f.");
    sql.push(" WHERE ");
    push_condition::<R>(sql, ctx, namespace);
}

/// Which existing record a write may replace (one `ctx` may change, in
/// `namespace` when one is named), then `RETURNING` its columns.
fn push_condition<R: Record>(sql: &mut Sql, ctx: &CallerContext, namespace: &str) {
    push_changeable(sql, ctx, "f.", Change::Write);
    if !namespace.is_empty() {
        sql.push(" AND f.namespace = ").bind(namespace.to_owned());
    }
    sql.push(&format!(" RETURNING {}", columns(R::COLS, "f.")));
}

/// The group an upsert with this `tail` joins: table, transaction settings
/// and the tail's text and values. `None` (write alone) when the tail has
/// a value without a literal.
fn group_key<R: Record>(tail: &RowFn, ctx: &CallerContext) -> Option<Key> {
    let mut probe = Sql::one_trip("");
    tail(&mut probe);
    let settings = context_settings(ctx).ok()?;
    Some(format!(
        "{}\u{0}{settings}\u{0}{}",
        R::TABLE,
        probe.fingerprint()?
    ))
}

/// Commit a write that returned its record, or roll back and say why it
/// matched nothing ([`refusal`]).
async fn finish<R: Record>(
    mut tx: Transaction<'static, Postgres>,
    stored: Option<R>,
    ctx: &CallerContext,
    id: &str,
    mode: Mode,
    namespace: &str,
) -> Result<R, StoreError> {
    let op = match mode {
        Mode::Upsert | Mode::Create => "store",
        Mode::Update => "change",
    };
    match stored {
        Some(stored) => {
            tx.commit().await.map_err(store_error)?;
            Ok(stored)
        }
        None => {
            let e = refusal::<R>(&mut tx, ctx, id, op, mode, namespace).await;
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// The change an operation verb (`store`, `change`, `delete`) makes.
pub(crate) fn change_of(operation: &str) -> Change {
    if operation == "delete" {
        Change::Delete
    } else {
        Change::Write
    }
}

/// Why a `change` of `id` (asking for `namespace`, empty: any) matched no
/// row: `NotFound` when it does not exist or is unreadable (and, for
/// `store`, does not exist), else the refusal of the rule that applies
/// ([`CallerContext::require_change`], [`check_fixed_namespace`]).
pub(crate) async fn refusal<R: Record>(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    id: &str,
    operation: &str,
    mode: Mode,
    namespace: &str,
) -> StoreError {
    let change = change_of(operation);
    let mut sql = Sql::new("SELECT f.owner, f.namespace, f.project_id, ");
    push_readable(&mut sql, ctx, "f.", None);
    sql.push(&format!(
        " AS readable FROM {} f WHERE f.tenant_id = ",
        R::TABLE
    ))
    .bind(ctx.tenant_id().to_owned())
    .push(" AND f.id = ")
    .bind(id.to_owned());
    let row = match sql.build() {
        Ok(q) => q.fetch_optional(&mut **tx).await.map_err(store_error),
        Err(e) => Err(e),
    };
    let (meta, readable) = match row {
        Err(e) => return e,
        Ok(None) => return not_found(R::KIND, id),
        Ok(Some(row)) => (
            RecordMeta {
                tenant_id: ctx.tenant_id().to_owned(),
                namespace: row.try_get("namespace").unwrap_or_default(),
                project_id: row.try_get("project_id").unwrap_or_default(),
                owner: row.try_get("owner").unwrap_or_default(),
                ..RecordMeta::default()
            },
            row.try_get::<bool, _>("readable").unwrap_or(false),
        ),
    };
    let operation = format!("{operation} {} {id}", R::KIND);
    match (readable, mode) {
        (false, Mode::Update) => not_found(R::KIND, id),
        (true, Mode::Create) => StoreError::conflict(format!("{} {id} already exists", R::KIND)),
        (false, Mode::Upsert | Mode::Create) => ctx.unauthorized(
            operation,
            "a record with this id exists and belongs to someone else",
        ),
        (true, _) => match ctx
            .require_change(&meta, change, operation)
            .and_then(|()| check_fixed_namespace(&meta.namespace, namespace, R::KIND, id))
        {
            Err(e) => e,
            // Changed between the statement and this look: say so.
            Ok(()) => StoreError::conflict(format!(
                "{} {id} changed while it was being written; retry",
                R::KIND
            )),
        },
    }
}

/// Delete `id` when the caller may read and change it.
pub(crate) async fn delete<R: Record>(
    pool: &PgPool,
    audit: &AuditWriter,
    ctx: &CallerContext,
    id: &str,
) -> Result<(), StoreError> {
    let result = async {
        let mut sql = Sql::new(&format!("DELETE FROM {} f WHERE f.tenant_id = ", R::TABLE));
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.id = ")
            .bind(id.to_owned())
            .push(" AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Delete);
        sql.push(" RETURNING f.id");
        let mut tx = begin(pool, ctx).await?;
        let deleted = sql
            .build()?
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        if deleted.is_none() {
            let e = refusal::<R>(&mut tx, ctx, id, "delete", Mode::Update, "").await;
            // Nothing changed; the transaction only read.
            let _ = tx.rollback().await;
            return Err(e);
        }
        tx.commit().await.map_err(store_error)
    }
    .instrument(span(R::KIND, "delete", ctx))
    .await;
    audit.refusal(ctx, AuditOp::Delete, R::KIND, id, result)
}

/// Count the readable records among `ids` as accessed (an id listed twice
/// counts twice); returns how many accesses were counted.
pub(crate) async fn touch<R: Record>(
    pool: &PgPool,
    ctx: &CallerContext,
    ids: &[String],
) -> Result<usize, StoreError> {
    if ids.is_empty() || !R::TRACKED {
        return Ok(0);
    }
    async {
        let mut sql = Sql::new("WITH c AS (SELECT u.id, count(*) AS n FROM unnest(");
        sql.bind(ids.to_vec())
            .push(&format!(
                "::text[]) AS u(id) GROUP BY u.id), \
                 t AS (UPDATE {} f SET access_count = f.access_count + c.n, last_accessed = now() \
                 FROM c WHERE f.tenant_id = ",
                R::TABLE
            ))
            .bind(ctx.tenant_id().to_owned())
            .push(" AND f.id = c.id AND ");
        push_readable(&mut sql, ctx, "f.", None);
        sql.push(" RETURNING c.n) SELECT COALESCE(sum(n), 0)::bigint AS touched FROM t");
        let mut tx = begin(pool, ctx).await?;
        let row = sql
            .build()?
            .fetch_one(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        let touched: i64 = row.try_get("touched").map_err(store_error)?;
        Ok(usize::try_from(touched).unwrap_or(0))
    }
    .instrument(span(R::KIND, "touch", ctx))
    .await
}
