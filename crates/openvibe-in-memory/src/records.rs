//! [`InMemoryRecords`]: the in-memory store of one record kind, written
//! once for facts, episodes and insights ([`RecordStore`], and
//! [`RevisableStore`] for the kinds that change), with the insight
//! extension ([`InsightStore`]) beside it.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    CallerContext, EmbeddingText, Episode, Fact, Insight, InsightStatus, InsightStore, Observed,
    PendingText, RecordQuery, RecordStore, RecordVector, RevisableRecord, RevisableStore,
    STRENGTHEN_STEP, StoreError, StoredRecord, Sweep, observe_with,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::{Maintained, Pass, Swept};
use crate::index::Indexed;
use crate::span::store_span;
use crate::tables::{Mode, Tables};
use crate::vectors::{VectorTable, embed_written};

/// A record kind the in-memory stores keep: a [`StoredRecord`] the index
/// knows how to walk.
pub trait InMemoryRecord: StoredRecord + Indexed {}
impl<R: StoredRecord + Indexed> InMemoryRecord for R {}

/// The in-memory store of one record kind: per-tenant tables indexed by
/// entity, domain, tag, text term and order (confidence and recency for
/// facts and insights, time for episodes; agent for episodes and
/// insights), clearance applied inside the index walk.
///
/// [`InMemoryFactStore`], [`InMemoryEpisodicStore`] and
/// [`InMemoryInsightStore`] name it per kind.
pub struct InMemoryRecords<R: InMemoryRecord> {
    tables: Tables<R>,
    vectors: Option<Arc<VectorTable>>,
}

/// In-memory facts ([`FactStore`](openvibe_protocols::FactStore)).
pub type InMemoryFactStore = InMemoryRecords<Fact>;
/// In-memory episodes ([`EpisodicStore`](openvibe_protocols::EpisodicStore)).
pub type InMemoryEpisodicStore = InMemoryRecords<Episode>;
/// In-memory insights ([`InsightStore`]).
pub type InMemoryInsightStore = InMemoryRecords<Insight>;

impl<R: InMemoryRecord> Default for InMemoryRecords<R> {
    fn default() -> Self {
        Self {
            tables: Tables::default(),
            vectors: None,
        }
    }
}

impl<R: InMemoryRecord> std::fmt::Debug for InMemoryRecords<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryRecords")
            .field("kind", &<R as EmbeddingText>::KIND)
            .finish_non_exhaustive()
    }
}

impl<R: InMemoryRecord> InMemoryRecords<R> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores) instead of a trail of its own.
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.tables.set_audit(audit);
        self
    }

    /// The trail this store audits into.
    pub fn audit(&self) -> Arc<InMemoryAuditLog> {
        self.tables.audit_log()
    }

    /// Number of records over all tenants.
    pub fn len(&self) -> Result<usize, StoreError> {
        self.tables.len()
    }

    /// Whether the store holds no records at all.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }

    /// Write `record` (creating it when `mode` allows), then embed it.
    async fn write(&self, ctx: &CallerContext, record: R, mode: Mode) -> Result<R, StoreError> {
        let stored = self.tables.write_record(ctx, record, mode)?;
        embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    // What namespace administration, snapshots and vectors need.

    /// The records `sweep` (or `also`) takes: counted, or at most a batch
    /// deleted with their vectors; their ids.
    pub(crate) fn sweep_ids(
        &self,
        ctx: &CallerContext,
        sweep: &Sweep,
        also: &dyn Fn(&R) -> bool,
        pass: Pass,
    ) -> Result<Vec<String>, StoreError> {
        let ids = self.tables.sweep(ctx, sweep, also, pass)?;
        if let (Pass::Delete(_), Some(table)) = (pass, &self.vectors) {
            for id in &ids {
                table.forget(ctx.tenant_id(), <R as EmbeddingText>::KIND, id);
            }
        }
        Ok(ids)
    }

    /// Vectors of `ctx`'s tenant whose record is gone.
    pub(crate) fn orphan_vectors(&self, ctx: &CallerContext) -> Result<u64, StoreError> {
        let Some(table) = &self.vectors else {
            return Ok(0);
        };
        let ids = table.ids(ctx.tenant_id(), <R as EmbeddingText>::KIND);
        let mut orphans = 0;
        for id in ids {
            if !self.tables.has(ctx.tenant_id(), &id)? {
                orphans += 1;
            }
        }
        Ok(orphans)
    }

    pub(crate) fn restore(&self, records: Vec<R>) -> Result<usize, StoreError> {
        self.tables.restore(records)
    }

    pub(crate) fn all(&self) -> Result<Vec<R>, StoreError> {
        self.tables.all()
    }

    /// Keep vectors of what this store writes in `vectors`.
    pub(crate) fn set_vectors(&mut self, vectors: Option<Arc<VectorTable>>) {
        self.vectors = vectors;
    }

    /// The records `ids` `ctx` may read, with their current vectors.
    pub(crate) fn current_vectors(
        &self,
        ctx: &CallerContext,
        ids: &[String],
    ) -> Result<Vec<RecordVector>, StoreError> {
        let Some(table) = &self.vectors else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for id in ids {
            if let Some(rec) = self.tables.get(ctx, id)?
                && let Some(vector) = table.current(
                    ctx.tenant_id(),
                    <R as EmbeddingText>::KIND,
                    id,
                    rec.text_hash(),
                )
            {
                out.push(RecordVector {
                    id: id.clone(),
                    vector,
                });
            }
        }
        Ok(out)
    }

    /// Up to `limit` records of `ctx`'s tenant without a current vector.
    pub(crate) fn pending_vectors(
        &self,
        ctx: &CallerContext,
        limit: usize,
    ) -> Result<Vec<PendingText>, StoreError> {
        let Some(table) = &self.vectors else {
            return Ok(Vec::new());
        };
        let tenant = ctx.tenant_id();
        let recs = self.tables.pick_in(
            tenant,
            |r| !table.is_current(tenant, <R as EmbeddingText>::KIND, r.id(), r.text_hash()),
            limit,
        )?;
        Ok(recs.iter().filter_map(PendingText::of).collect())
    }

    /// (with a current vector, all) records of `ctx`'s tenant.
    pub(crate) fn vector_counts(&self, ctx: &CallerContext) -> Result<(u64, u64), StoreError> {
        let tenant = ctx.tenant_id();
        let all = self.tables.count_in(tenant, |_| true)?;
        let Some(table) = &self.vectors else {
            return Ok((0, all));
        };
        let embedded = self.tables.count_in(tenant, |r| {
            table.is_current(tenant, <R as EmbeddingText>::KIND, r.id(), r.text_hash())
        })?;
        Ok((embedded, all))
    }
}

#[async_trait]
impl<R: InMemoryRecord> RecordStore<R> for InMemoryRecords<R> {
    async fn store(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError> {
        self.write(ctx, record, Mode::Upsert).await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<R>, StoreError> {
        self.tables.get(ctx, id)
    }

    async fn query(&self, ctx: &CallerContext, query: &R::Query) -> Result<Vec<R>, StoreError> {
        let filter = query.filter()?;
        self.tables.search(ctx, query, &filter)
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.tables.delete(ctx, id)?;
        if let Some(table) = &self.vectors {
            table.forget(ctx.tenant_id(), <R as EmbeddingText>::KIND, id);
        }
        Ok(())
    }
}

#[async_trait]
impl<R: InMemoryRecord + RevisableRecord> RevisableStore<R> for InMemoryRecords<R> {
    async fn update(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError> {
        self.write(ctx, record, Mode::Update).await
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        self.tables.touch(ctx, ids)
    }
}

#[async_trait]
impl InsightStore for InMemoryRecords<Insight> {
    async fn find_similar(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        content: &str,
    ) -> Result<Option<Insight>, StoreError> {
        let _span = store_span(<Insight as EmbeddingText>::KIND, "find_similar", ctx);
        let guard = self.tables.read()?;
        let Some(table) = guard.get(ctx.tenant_id()) else {
            return Ok(None);
        };
        Ok(table.most_similar(ctx, content, |i: &Insight| {
            i.agent_id == agent_id && i.status == InsightStatus::Active
        }))
    }

    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError> {
        // Read, change and write under one write lock: atomic.
        self.tables.modify(ctx, id, |insight, now| {
            insight.confidence = (insight.confidence + STRENGTHEN_STEP).min(1.0);
            // Saturating at PostgreSQL's bigint, as that backend does.
            insight.evidence_count = insight
                .evidence_count
                .saturating_add(1)
                .min(i64::MAX.unsigned_abs());
            insight.last_confirmed = Some(now);
            for episode in episode_ids {
                if !insight.source_episode_ids.contains(episode) {
                    insight.source_episode_ids.push(episode.clone());
                }
            }
        })
    }

    async fn observe(&self, ctx: &CallerContext, insight: Insight) -> Result<Observed, StoreError> {
        // Create and strengthen are each atomic under the write lock.
        observe_with(
            insight,
            |insight| self.write(ctx, insight, Mode::Create),
            |id, episodes| async move { self.strengthen(ctx, &id, &episodes).await },
        )
        .await
    }
}

/// Namespace maintenance of a record kind: its indexed tables'.
#[async_trait]
impl<R: InMemoryRecord> Maintained for InMemoryRecords<R> {
    fn keeps(&self, kind: &str) -> bool {
        kind == <R as EmbeddingText>::KIND
    }

    fn counts(
        &self,
        ctx: &CallerContext,
        _kind: &str,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        self.tables.namespace_counts(ctx)
    }

    fn move_namespace(
        &self,
        ctx: &CallerContext,
        _kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        self.tables.move_namespace(ctx, from, to, batch)
    }

    async fn sweep(
        &self,
        ctx: &CallerContext,
        _kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        Ok(self.sweep_ids(ctx, swept.sweep, &|_| false, pass)?.len() as u64)
    }
}
