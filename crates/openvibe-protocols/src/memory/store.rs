//! The structured-memory store traits and [`Stores`], one set of them:
//! [`RecordStore`] (and [`RevisableStore`]) once for every record kind,
//! [`FactStore`], [`EpisodicStore`] and [`InsightStore`] naming them per kind.
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
    AuditLog, CallerContext, EmbeddingText, Episode, EpisodeQuery, Fact, FactQuery, Governed,
    Insight, InsightQuery, KnowledgeStore, Observed, RawLogStore, RecordMeta, RecordQuery,
    StoreError, WorkingStore,
};

/// A record kind kept by a [`RecordStore`]: [`Fact`], [`Episode`] and
/// [`Insight`]. Its name is [`EmbeddingText::KIND`] (`fact`, …), used in
/// errors, audit entries and spans.
pub trait StoredRecord: Governed + EmbeddingText + Clone + Send + Sync + 'static {
    /// What [`RecordStore::query`] takes for this kind.
    type Query: RecordQuery;
    /// The record's governance metadata, to change before a write (a
    /// backend stamps the caller's source on it: [`CallerContext::stamp`]).
    fn meta_mut(&mut self) -> &mut RecordMeta;
    /// This kind's store in a set of stores ([`Stores::records`]).
    fn store_in(stores: &Stores) -> &dyn RecordStore<Self>;
}

/// A record kind that changes after it is written ([`Fact`], [`Insight`]):
/// its store also updates and counts accesses ([`RevisableStore`]).
/// Episodes are append-mostly and have neither.
pub trait RevisableRecord: StoredRecord {
    /// This kind's store in a set of stores ([`Stores::revisable`]).
    fn revisable_in(stores: &Stores) -> &dyn RevisableStore<Self>;
}

impl StoredRecord for Fact {
    type Query = FactQuery;
    fn meta_mut(&mut self) -> &mut RecordMeta {
        &mut self.meta
    }
    fn store_in(stores: &Stores) -> &dyn RecordStore<Self> {
        &*stores.facts
    }
}
impl StoredRecord for Episode {
    type Query = EpisodeQuery;
    fn meta_mut(&mut self) -> &mut RecordMeta {
        &mut self.meta
    }
    fn store_in(stores: &Stores) -> &dyn RecordStore<Self> {
        &*stores.episodes
    }
}
impl StoredRecord for Insight {
    type Query = InsightQuery;
    fn meta_mut(&mut self) -> &mut RecordMeta {
        &mut self.meta
    }
    fn store_in(stores: &Stores) -> &dyn RecordStore<Self> {
        &*stores.insights
    }
}
impl RevisableRecord for Fact {
    fn revisable_in(stores: &Stores) -> &dyn RevisableStore<Self> {
        &*stores.facts
    }
}
impl RevisableRecord for Insight {
    fn revisable_in(stores: &Stores) -> &dyn RevisableStore<Self> {
        &*stores.insights
    }
}

/// The store of one record kind: what facts, episodes and insights share,
/// so that a backend writes each operation once, for every kind.
///
/// See the module documentation for the caller-context rules every
/// implementation enforces.
#[async_trait]
pub trait RecordStore<R: StoredRecord>: Send + Sync {
    /// Insert `record`, or replace the record with the same id (which the
    /// caller must be allowed to modify; its owner, `created_at` and access
    /// statistics are kept). An empty id gets a generated one. Returns the
    /// record as stored.
    async fn store(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError>;

    /// The record `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<R>, StoreError>;

    /// Readable records matching `query`, ordered as documented on the
    /// query type ([`FactQuery`], [`EpisodeQuery`], [`InsightQuery`]).
    async fn query(&self, ctx: &CallerContext, query: &R::Query) -> Result<Vec<R>, StoreError>;

    /// Delete a record. [`StoreError::NotFound`] when it does not exist (or
    /// is not readable), [`StoreError::Unauthorized`] when the caller may
    /// not modify it.
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;
}

/// The store of a record kind that changes after it is written (facts,
/// insights): replacing a record and counting accesses.
#[async_trait]
pub trait RevisableStore<R: RevisableRecord>: RecordStore<R> {
    /// Replace an existing record. [`StoreError::NotFound`] when it does
    /// not exist (or is not readable), [`StoreError::Unauthorized`] when
    /// the caller may not modify it.
    async fn update(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError>;

    /// Count the readable records among `ids` as accessed; returns how many were.
    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError>;
}

/// Shared, classified facts (workspace memory): [`RevisableStore`] of
/// [`Fact`], implemented by every type that is one.
pub trait FactStore: RevisableStore<Fact> {}
impl<T: RevisableStore<Fact> + ?Sized> FactStore for T {}

/// L2 episodes (one per node run): [`RecordStore`] of [`Episode`].
/// Append-mostly: no update.
pub trait EpisodicStore: RecordStore<Episode> {}
impl<T: RecordStore<Episode> + ?Sized> EpisodicStore for T {}

/// L3 insights (patterns distilled from episodes): [`RevisableStore`] of
/// [`Insight`], and what reflection needs besides.
#[async_trait]
pub trait InsightStore: RevisableStore<Insight> {
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

    /// Observe insight `id` again, atomically (no lost update when several
    /// reflections run at once): confidence + [`STRENGTHEN_STEP`] (at most
    /// 1.0), evidence + 1, `last_confirmed` = now, and `episode_ids` not yet
    /// among its sources appended to them. Errors as [`RevisableStore::update`].
    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError>;

    /// Observe the pattern `insight` names by its id (see
    /// [`Insight::pattern_id`]): create it when no insight has that id, else
    /// [`strengthen`](InsightStore::strengthen) the one that has with
    /// `insight.source_episode_ids`. Atomic per call: reflections that see
    /// the same new pattern at once create it exactly once and strengthen
    /// it once each, so no evidence is counted twice or lost. An empty id is
    /// [`StoreError::InvalidInput`]; other errors as [`RecordStore::store`] and
    /// `strengthen`.
    async fn observe(&self, ctx: &CallerContext, insight: Insight) -> Result<Observed, StoreError>;
}

/// [`InsightStore::observe`] from a backend's own insert-only `create` (a
/// [`StoreError::Conflict`] when the id exists) and its atomic
/// `strengthen`: the first observer creates the pattern, every later one
/// strengthens it. Correct as long as each step is atomic and an insight
/// disappears between them only by a delete (then the strengthen says
/// [`StoreError::NotFound`]).
pub async fn observe_with<C, S>(
    insight: Insight,
    create: impl FnOnce(Insight) -> C,
    strengthen: impl FnOnce(String, Vec<String>) -> S,
) -> Result<Observed, StoreError>
where
    C: Future<Output = Result<Insight, StoreError>>,
    S: Future<Output = Result<Insight, StoreError>>,
{
    let mut insight = insight;
    if insight.id.trim().is_empty() {
        // No id: the pattern's own, from its agent and content.
        insight.id = Insight::pattern_id(&insight.agent_id, &insight.content);
    }
    let (id, episodes) = (insight.id.clone(), insight.source_episode_ids.clone());
    match create(insight).await {
        Ok(insight) => Ok(Observed {
            insight,
            created: true,
        }),
        Err(StoreError::Conflict { .. }) => Ok(Observed {
            insight: strengthen(id, episodes).await?,
            created: false,
        }),
        Err(e) => Err(e),
    }
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
    /// What waits for a person: proposals and escalations.
    pub proposals: Arc<dyn super::ProposalStore>,
    /// Goals, their decomposition, daily priorities and metric reports.
    pub goals: Arc<dyn super::GoalStore>,
    /// Beliefs (L4): what roles hold true once a person approved it.
    pub beliefs: Arc<dyn super::BeliefStore>,
    /// Spaces: members and their ordered message logs.
    pub spaces: Arc<dyn super::SpaceStore>,
    /// The durable event inbox of the roles' cognitive loops.
    pub inbox: Arc<dyn super::InboxStore>,
}

impl Stores {
    /// The store of record kind `R` (facts, episodes or insights), for code
    /// written once for every kind.
    pub fn records<R: StoredRecord>(&self) -> &dyn RecordStore<R> {
        R::store_in(self)
    }

    /// The store of a record kind that changes after it is written (facts
    /// or insights), with `update` and `touch`.
    pub fn revisable<R: RevisableRecord>(&self) -> &dyn RevisableStore<R> {
        R::revisable_in(self)
    }
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

/// So are the generic record traits, for every kind.
fn _records_object_safe(_: &dyn RecordStore<Episode>, _: &dyn RevisableStore<Insight>) {}

/// [`super::RecordVectors`] is object-safe too.
fn _vectors_object_safe(_: &dyn super::RecordVectors) {}
