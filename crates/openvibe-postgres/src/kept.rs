//! The governed-table kernel on PostgreSQL, written once for every kind
//! kept by id (proposals, goals, priorities, metric reports, beliefs,
//! spaces): a new record made ready and placed ([`ready_new`]), its
//! `INSERT … ON CONFLICT DO NOTHING` ([`insert_sql`]) and the idempotent
//! answer when its id is taken ([`insert_or_existing`], [`create`]), the
//! row locked within the caller's read rule and written back
//! ([`lock`], [`write_back`], [`transition`]), and one combinator that
//! runs a write in its span and audits its refusal ([`audited`]). A kind's
//! file holds its columns (a [`KeptRow`] impl), its own transitions and
//! its queries.

use std::future::Future;

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    AuditOp, CallerContext, KeptRecord, Placement, StoreError, check_caller, store_time,
};
use tracing::Instrument;

use crate::audit::AuditWriter;
use crate::error::store_error;
use crate::identity::{check_given_expiry, new_id, push_new_identity};
use crate::records::{Record, end_read, fetch_optional, not_found, select_readable};
use crate::rows::columns;
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{Tx, begin, begin_replacing_expired};

/// A kind kept by id on PostgreSQL: its table ([`Record`]), the contract's
/// rules ([`KeptRecord`]) and what its writes set.
pub(crate) trait KeptRow: Record + KeptRecord {
    /// The columns a new record's insert sets beyond its identity,
    /// placement, classification, source and expiry, comma-separated.
    const INSERTED: &'static str;

    /// Bind the values of [`KeptRow::INSERTED`], in its order, each
    /// preceded by `", "`.
    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError>;

    /// Bind the values of [`Record::MUTABLE`], in its order,
    /// comma-separated.
    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError>;
}

/// Where and when a new record goes: the caller's placement of it, its
/// expiry (capped by the caller's retention, for kinds that expire) and
/// the time of the write.
pub(crate) struct Placed {
    /// Namespace and project.
    pub(crate) placement: Placement,
    /// When it expires.
    pub(crate) expires_at: Option<DateTime<Utc>>,
    /// Now.
    pub(crate) now: DateTime<Utc>,
}

/// Make `record` a new record of `ctx`'s: the caller checked, an id
/// generated when it has none (for kinds whose ids the store may choose),
/// the caller's source stamped, the contract's checks passed (`check`,
/// which may also complete it: a space's members) and a given expiry
/// checked; then placed where `ctx` may put it (`verb` names the write in
/// a refusal: `create proposal p1`).
pub(crate) fn ready_new<R: Record + KeptRecord>(
    ctx: &CallerContext,
    record: &mut R,
    verb: &str,
    check: impl FnOnce(&mut R) -> Result<(), StoreError>,
) -> Result<Placed, StoreError> {
    check_caller(ctx)?;
    if R::GENERATED_ID && record.record_id().is_empty() {
        *record.id_mut() = new_id();
    }
    ctx.stamp(record.meta_mut());
    check(record)?;
    if R::expires() {
        check_given_expiry(record.meta().expires_at)?;
    }
    let now = store_time();
    let placement = ctx.placement(
        &record.meta().namespace,
        &format!("{verb} {} {}", <R as Record>::KIND, record.record_id()),
    )?;
    let expires_at = if R::expires() {
        ctx.expiry(
            <R as Record>::KIND,
            &placement.namespace,
            now,
            record.meta().expires_at,
        )?
    } else {
        None
    };
    Ok(Placed {
        placement,
        expires_at,
        now,
    })
}

/// `INSERT INTO <table> (…) VALUES (…) ON CONFLICT (tenant_id, id) DO
/// NOTHING RETURNING <cols>` of `record`, placed as `placed`.
pub(crate) fn insert_sql<R: KeptRow>(
    ctx: &CallerContext,
    placed: &Placed,
    record: &R,
) -> Result<Sql, StoreError> {
    let mut sql = Sql::new(&format!(
        "INSERT INTO {} (tenant_id, id, namespace, project_id, owner, created_at, updated_at, \
         classification, source, expires_at, {}) VALUES (",
        R::TABLE,
        R::INSERTED
    ));
    push_new_identity(
        &mut sql,
        ctx,
        &placed.placement,
        record.record_id().to_owned(),
        placed.now,
    );
    let meta = record.meta();
    sql.bind(meta.classification.as_str())
        .push(", ")
        .bind(meta.source.clone())
        .push(", ")
        .bind(placed.expires_at);
    record.push_inserted(&mut sql)?;
    sql.push(&format!(
        ") ON CONFLICT (tenant_id, id) DO NOTHING RETURNING {}",
        columns(R::COLS, "")
    ));
    Ok(sql)
}

/// Begin the transaction of a new `record`: the caller's, with an expired
/// record holding its id deleted first (an expired record is gone).
pub(crate) async fn begin_new<R: KeptRow>(
    pool: &sqlx::PgPool,
    ctx: &CallerContext,
    record: &R,
) -> Result<Tx, StoreError> {
    begin_replacing_expired(pool, ctx, R::TABLE, &[record.record_id().to_owned()]).await
}

/// Run `insert` (from [`insert_sql`]) in `tx` and commit what it stored;
/// when the id is taken, answer the stored record if `ctx` may read it
/// and it asks for the same ([`KeptRecord::same_request`]), else the
/// kind's conflict ([`KeptRecord::id_taken`]).
pub(crate) async fn insert_or_existing<R: Record + KeptRecord>(
    mut tx: Tx,
    ctx: &CallerContext,
    insert: Sql,
    record: &R,
) -> Result<R, StoreError> {
    let created = fetch_optional::<R>(&mut tx, insert).await?;
    answer_insert(tx, ctx, created, record).await
}

/// Commit what an insert of `record` in `tx` stored (`created`); when it
/// stored nothing (the id is taken), roll back and answer as
/// [`insert_or_existing`] does.
pub(crate) async fn answer_insert<R: Record + KeptRecord>(
    mut tx: Tx,
    ctx: &CallerContext,
    created: Option<R>,
    record: &R,
) -> Result<R, StoreError> {
    if let Some(created) = created {
        tx.commit().await.map_err(store_error)?;
        return Ok(created);
    }
    let existing = fetch_optional::<R>(
        &mut tx,
        select_readable::<R>(ctx, record.record_id(), false),
    )
    .await?;
    end_read(tx);
    match existing {
        Some(e) if e.same_request(record) => Ok(e.read_at(store_time())),
        _ => Err(record.id_taken()),
    }
}

/// Store `record` as new (checked with `validate`, made ready with
/// `prepare`), or answer the record its id names ([`insert_or_existing`]).
pub(crate) async fn create<R: KeptRow>(
    pool: &sqlx::PgPool,
    ctx: &CallerContext,
    verb: &str,
    mut record: R,
    check: impl FnOnce(&mut R) -> Result<(), StoreError>,
    prepare: impl FnOnce(&mut R),
) -> Result<R, StoreError> {
    let placed = ready_new(ctx, &mut record, verb, check)?;
    prepare(&mut record);
    let insert = insert_sql(ctx, &placed, &record)?;
    let tx = begin_new(pool, ctx, &record).await?;
    insert_or_existing(tx, ctx, insert, &record).await
}

/// The record `id` of `ctx`'s tenant locked for update in `tx`, when `ctx`
/// may read it (not found otherwise).
pub(crate) async fn lock<R: Record + KeptRecord>(
    tx: &mut Tx,
    ctx: &CallerContext,
    id: &str,
) -> Result<R, StoreError> {
    find::<R>(tx, ctx, id, true)
        .await?
        .ok_or_else(|| not_found(<R as Record>::KIND, id))
}

/// The record `id` of `ctx`'s tenant in `tx`, locked for update when
/// `lock`, when `ctx` may read it ([`KeptRecord::readable_by`]: the SQL
/// read rule, and what the kind adds, a space's membership).
pub(crate) async fn find<R: Record + KeptRecord>(
    tx: &mut Tx,
    ctx: &CallerContext,
    id: &str,
    lock: bool,
) -> Result<Option<R>, StoreError> {
    Ok(fetch_optional::<R>(tx, select_readable::<R>(ctx, id, lock))
        .await?
        .filter(|r| r.readable_by(ctx)))
}

/// Write `record`'s [`Record::MUTABLE`] columns back in `tx`.
pub(crate) async fn write_back<R: KeptRow>(
    tx: &mut Tx,
    ctx: &CallerContext,
    record: &R,
) -> Result<(), StoreError> {
    let mut sql = Sql::new(&format!("UPDATE {} SET ({}) = (", R::TABLE, R::MUTABLE));
    record.push_mutable(&mut sql)?;
    sql.push(") WHERE tenant_id = ")
        .bind(ctx.tenant_id().to_owned())
        .push(" AND id = ")
        .bind(record.record_id().to_owned());
    sql.build()?.execute(&mut **tx).await.map_err(store_error)?;
    Ok(())
}

/// Lock the record `id` `ctx` may read, apply `change` (the contract's
/// rule, at the write's time), write what it gives back and commit: of
/// callers racing on one record, one wins and the others see its change.
/// The table's trigger audits the update.
pub(crate) async fn transition<R: KeptRow>(
    pool: &sqlx::PgPool,
    ctx: &CallerContext,
    id: &str,
    change: impl FnOnce(&R, DateTime<Utc>) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    check_caller(ctx)?;
    let mut tx = begin(pool, ctx).await?;
    let current = lock::<R>(&mut tx, ctx, id).await?;
    let now = store_time();
    let next = change(&current, now)?;
    write_back(&mut tx, ctx, &next).await?;
    tx.commit().await.map_err(store_error)?;
    Ok(next.read_at(now))
}

/// Run the write `op` (`name`: its span) on the record `id` of `kind` in
/// its span, and audit its refusal if it is refused (a change that
/// happens is audited by the table's trigger, in its transaction).
pub(crate) async fn audited<T>(
    audit: &AuditWriter,
    ctx: &CallerContext,
    kind: &'static str,
    op: AuditOp,
    name: &'static str,
    id: &str,
    write: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let result = write.instrument(span(kind, name, ctx)).await;
    audit.refusal(ctx, op, kind, id, result)
}
