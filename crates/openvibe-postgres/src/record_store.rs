//! [`PgRecords`]: the store of one record kind on PostgreSQL, written once
//! for facts, episodes and insights ([`RecordStore`], and
//! [`RevisableStore`] for the kinds that change). Each kind says how it is
//! checked and bound ([`PgRecord`], in `facts.rs`, `episodes.rs` and
//! `insights.rs`, beside its batch insert); the insight extension is in
//! `insights.rs`.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, CallerContext, Episode, Fact, Governed, Insight, RecordQuery, RecordStore,
    RevisableRecord, RevisableStore, StoreError, StoredRecord,
};
use sqlx::PgPool;
use tracing::Instrument;

use crate::PgVectors;
use crate::audit::AuditWriter;
use crate::group::Groups;
use crate::query::{Ordering, select};
use crate::records::{self, Mode, Record, Target, Writer};
use crate::span::span;
use crate::sql::Sql;

/// A kind of the record stores ([`PgRecords`]): facts, episodes and
/// insights, each written by one statement whose values it binds.
pub trait PgRecord: Record + StoredRecord {
    /// How its queries order results and filter by time.
    const ORDER: Ordering;
    /// The record checked for writing, with what its statement binds
    /// besides it (its search terms, content hash, ...).
    type Prepared: Send + Sync + 'static;
    /// Check `record` for a write by `ctx` (an upsert gives an empty id a
    /// generated one).
    fn prepare(ctx: &CallerContext, record: Self, mode: Mode)
    -> Result<Self::Prepared, StoreError>;
    /// The record a prepared write carries.
    fn prepared(p: &Self::Prepared) -> &Self;
    /// Bind the values of the record's mutable columns, in order.
    fn push_mutable(sql: &mut Sql, p: &Self::Prepared);
}

/// The store of one record kind over a PostgreSQL pool. Clearance,
/// tenancy, projects, ordering and limits are applied in SQL; the tables
/// carry row-level security on the transaction's tenant. Upserts of one
/// caller that run at the same time share a transaction (group commit).
///
/// [`PgFactStore`], [`PgEpisodicStore`] and [`PgInsightStore`] name it per
/// kind; each adds a batched insert (`store_batch`).
pub struct PgRecords<R> {
    pub(crate) pool: PgPool,
    pub(crate) audit: AuditWriter,
    pub(crate) vectors: Option<Arc<PgVectors>>,
    groups: Groups,
    kind: std::marker::PhantomData<fn() -> R>,
}

/// Facts on PostgreSQL ([`FactStore`](openvibe_protocols::FactStore)).
pub type PgFactStore = PgRecords<Fact>;
/// Episodes on PostgreSQL ([`EpisodicStore`](openvibe_protocols::EpisodicStore)).
pub type PgEpisodicStore = PgRecords<Episode>;
/// Insights on PostgreSQL ([`InsightStore`](openvibe_protocols::InsightStore)).
pub type PgInsightStore = PgRecords<Insight>;

impl<R> Clone for PgRecords<R> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            audit: self.audit.clone(),
            vectors: self.vectors.clone(),
            groups: self.groups.clone(),
            kind: std::marker::PhantomData,
        }
    }
}

impl<R: PgRecord> std::fmt::Debug for PgRecords<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgRecords")
            .field("kind", &<R as Record>::KIND)
            .field("vectors", &self.vectors.is_some())
            .finish_non_exhaustive()
    }
}

impl<R: PgRecord> PgRecords<R> {
    /// A store over `pool` (migrated: see [`crate::migrate`]), with an
    /// audit writer of its own.
    pub fn new(pool: PgPool) -> Self {
        Self {
            audit: AuditWriter::new(pool.clone()),
            pool,
            vectors: None,
            groups: Groups::default(),
            kind: std::marker::PhantomData,
        }
    }

    /// Write searches and refusals through `audit` (shared with other
    /// stores) instead of a writer of its own.
    #[must_use]
    pub fn with_audit(mut self, audit: AuditWriter) -> Self {
        self.audit = audit;
        self
    }

    /// Embed what this store writes and keep the vectors in `vectors`'
    /// side table (best effort: see [`PgVectors`]).
    #[must_use]
    pub fn with_vectors(mut self, vectors: Arc<PgVectors>) -> Self {
        self.vectors = Some(vectors);
        self
    }

    fn writer(&self) -> Writer<'_> {
        Writer {
            pool: &self.pool,
            audit: &self.audit,
            groups: &self.groups,
        }
    }

    /// Write `record` in one statement (see [`records::write`]), then embed it.
    pub(crate) async fn write(
        &self,
        ctx: &CallerContext,
        mut record: R,
        mode: Mode,
    ) -> Result<R, StoreError> {
        ctx.stamp(record.meta_mut());
        let op = match mode {
            Mode::Upsert => "store",
            Mode::Update => "update",
            Mode::Create => "create",
        };
        let stored = async {
            let p = R::prepare(ctx, record, mode)?;
            let r = R::prepared(&p);
            let meta = Governed::meta(r);
            let namespace = meta.namespace.clone();
            let target = Target {
                id: r.record_id().to_owned(),
                namespace: &namespace,
                created_at: meta.created_at,
                expires_at: meta.expires_at,
            };
            records::write::<R>(self.writer(), ctx, target, mode, move |sql| {
                R::push_mutable(sql, &p);
            })
            .await
        }
        .instrument(span(<R as Record>::KIND, op, ctx))
        .await?;
        crate::vectors::embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }
}

#[async_trait]
impl<R: PgRecord> RecordStore<R> for PgRecords<R> {
    async fn store(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError> {
        self.write(ctx, record, Mode::Upsert).await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<R>, StoreError> {
        records::get(&self.pool, ctx, id).await
    }

    async fn query(&self, ctx: &CallerContext, query: &R::Query) -> Result<Vec<R>, StoreError> {
        let kind = <R as Record>::KIND;
        let filter = query.filter()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, kind, query, &filter.namespaces, filter.limit));
        let Some(sql) = select::<R>(ctx, &filter, &R::ORDER) else {
            return Ok(Vec::new());
        };
        records::read(&self.pool, ctx, sql, filter.track_access)
            .instrument(span(kind, "query", ctx))
            .await
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        records::delete::<R>(&self.pool, &self.audit, ctx, id).await
    }
}

#[async_trait]
impl<R: PgRecord + RevisableRecord> RevisableStore<R> for PgRecords<R> {
    async fn update(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError> {
        self.write(ctx, record, Mode::Update).await
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        records::touch::<R>(&self.pool, ctx, ids).await
    }
}
