//! The structured-memory store traits and [`Stores`], one set of them.
//!
//! Every store-trait call takes a [`CallerContext`] first: who is asking
//! (tenant, principal), what they may read (clearance) and in which project.
//! Stores enforce it themselves, for every backend:
//!
//! - writes take `meta.tenant_id`, `meta.project_id` and (for new records)
//!   `meta.owner` from the caller; values in the input are ignored;
//! - reads only see the caller's tenant, records of no project or of the
//!   caller's project, and records the caller owns or is cleared for
//!   ([`CallerContext::can_read`]); clearance is applied *inside* the query,
//!   so `limit` readable records come back whenever that many exist;
//! - update and delete need ownership or a privileged caller
//!   ([`CallerContext::can_modify`]); a refused change modifies nothing.
//!
//! Records that exist but are not readable are reported exactly like
//! records that do not exist ([`StoreError::NotFound`] / `None`).

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    AuditLog, CallerContext, Episode, EpisodeQuery, Fact, FactQuery, Insight, InsightQuery,
    KnowledgeStore, RawLogStore, StoreError, WorkingStore,
};

/// Shared, classified facts (workspace memory).
///
/// See the module documentation for the caller-context rules every
/// implementation enforces.
#[async_trait]
pub trait FactStore: Send + Sync {
    /// Insert `fact`, or replace the fact with the same id (which the caller
    /// must be allowed to modify; its owner, `created_at` and access
    /// statistics are kept). An empty id gets a generated one. Returns the
    /// fact as stored.
    async fn store(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError>;

    /// The fact `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Fact>, StoreError>;

    /// Readable facts matching `query`, ordered as documented on [`FactQuery`].
    async fn query(&self, ctx: &CallerContext, query: &FactQuery) -> Result<Vec<Fact>, StoreError>;

    /// Replace an existing fact. [`StoreError::NotFound`] when it does not
    /// exist (or is not readable), [`StoreError::Unauthorized`] when the
    /// caller may not modify it.
    async fn update(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError>;

    /// Delete a fact (same errors as [`FactStore::update`]).
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;

    /// Count the readable facts among `ids` as accessed; returns how many were.
    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError>;
}

/// L2 episodes (one per node run). Append-mostly: no update.
#[async_trait]
pub trait EpisodicStore: Send + Sync {
    /// Insert `episode` (or replace the one with the same id, which the
    /// caller must be allowed to modify). An empty id gets a generated one.
    async fn store(&self, ctx: &CallerContext, episode: Episode) -> Result<Episode, StoreError>;

    /// The episode `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Episode>, StoreError>;

    /// Readable episodes matching `query`, newest first.
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &EpisodeQuery,
    ) -> Result<Vec<Episode>, StoreError>;

    /// Delete an episode ([`StoreError::NotFound`] / [`StoreError::Unauthorized`]).
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;
}

/// L3 insights (patterns distilled from episodes).
#[async_trait]
pub trait InsightStore: Send + Sync {
    /// Insert `insight`, or replace the one with the same id (as [`FactStore::store`]).
    async fn store(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError>;

    /// The insight `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Insight>, StoreError>;

    /// Readable insights matching `query`, ordered as documented on [`InsightQuery`].
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &InsightQuery,
    ) -> Result<Vec<Insight>, StoreError>;

    /// Replace an existing insight (as [`FactStore::update`]).
    async fn update(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError>;

    /// Delete an insight (as [`FactStore::delete`]).
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;

    /// The readable, active insight of `agent_id` most similar to `content`:
    /// the one sharing the most words (see [`text_terms`](crate::text_terms); whole words only)
    /// with it, at least `min(3, words in content)`; ties go to higher
    /// confidence, then lower id. `None` when nothing is similar enough.
    async fn find_similar(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        content: &str,
    ) -> Result<Option<Insight>, StoreError>;

    /// Count the readable insights among `ids` as accessed; returns how many were.
    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError>;

    /// Observe insight `id` again, atomically (no lost update when several
    /// reflections run at once): confidence + [`STRENGTHEN_STEP`] (at most
    /// 1.0), evidence + 1, `last_confirmed` = now, and `episode_ids` not yet
    /// among its sources appended to them. Errors as [`InsightStore::update`].
    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError>;
}

/// How much [`InsightStore::strengthen`] adds to an insight's confidence.
pub const STRENGTHEN_STEP: f64 = 0.1;

/// One set of stores, as a backend provides them (`openvibe_memory::in_memory_stores()`,
/// `PgStores::stores()`). Cheap to clone.
#[derive(Clone)]
pub struct Stores {
    /// Workspace facts.
    pub facts: Arc<dyn FactStore>,
    /// Episodes.
    pub episodes: Arc<dyn EpisodicStore>,
    /// Insights.
    pub insights: Arc<dyn InsightStore>,
    /// Working memory: sessions, plans, task and plan contexts, plan state.
    pub working: Arc<dyn WorkingStore>,
    /// Semantic memory.
    pub knowledge: Arc<dyn KnowledgeStore>,
    /// The L1 raw log of LLM calls.
    pub raw: Arc<dyn RawLogStore>,
    /// The audit trail the stores above write.
    pub audit: Arc<dyn AuditLog>,
    /// Namespace maintenance (privileged callers only).
    pub admin: Arc<dyn super::NamespaceAdmin>,
    /// The records' embeddings, kept beside them.
    pub vectors: Arc<dyn super::RecordVectors>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

/// The store traits are object-safe: used as `Arc<dyn Trait>`. A compile-time
/// fact, checked by compiling this function (no test needed).
fn _object_safe(
    _: &dyn FactStore,
    _: &dyn EpisodicStore,
    _: &dyn InsightStore,
    _: &dyn WorkingStore,
    _: &dyn KnowledgeStore,
    _: &dyn RawLogStore,
    _: &dyn super::AuditLog,
) {
}

/// [`super::RecordVectors`] is object-safe too.
fn _vectors_object_safe(_: &dyn super::RecordVectors) {}
