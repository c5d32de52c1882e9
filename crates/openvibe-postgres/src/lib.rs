//! # openvibe-postgres — the PostgreSQL + pgvector memory backend
//!
//! Implements the memory contract of [`openvibe_protocols`] — [`FactStore`],
//! [`EpisodicStore`], [`InsightStore`] and the V1
//! [`MemoryProvider`](openvibe_protocols::MemoryProvider) — on an
//! [`sqlx::PgPool`], with the same semantics as the in-memory stores of
//! `openvibe-memory` (it runs the same conformance suite,
//! `openvibe-memory-testkit`). It depends on the contract only:
//!
//! - every filter, the clearance rule (domain clearance, public records,
//!   owner reads own, project isolation, tenant), the order and the limit
//!   are evaluated **in SQL**; no rows are fetched to be filtered in Rust;
//! - every statement runs in a transaction that first sets the
//!   transaction-local `openvibe.tenant_id`, which the tables' row-level
//!   security policies (`FORCE`d, so they bind the owning app role too)
//!   compare with each row's `tenant_id`;
//! - access tracking is one `UPDATE … RETURNING`, never read-modify-write;
//! - text queries use a `tsvector` of the record's [`text_terms`](openvibe_protocols::text_terms)
//!   with prefix queries (`'term':*`), so matching agrees with every backend.
//!
//! Swapping the in-memory backend is one line: `PgStores::stores()` is the
//! same [`Stores`] set `openvibe_memory::in_memory_stores()` returns, so
//! `RoleRuntime::with_stores`, `MemoryGateway::with_stores` and every
//! memory type take either. Used directly, through the contract:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use openvibe_protocols::{CallerContext, Fact, FactQuery};
//! let pg = openvibe_postgres::PgStores::connect("postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe").await?;
//! let stores = pg.stores(); // openvibe_protocols::Stores
//! let cro = CallerContext::agent("cro").with_tenant("acme");
//! stores.facts.store(&cro, Fact::new("f1", "Acme renews in May")).await?;
//! let found = stores.facts.query(&cro, &FactQuery::new().text("renews")).await?;
//! assert_eq!(found.len(), 1);
//! # Ok(()) }
//! ```
//!
//! The schema lives in the workspace's top-level `migrations/` and is
//! embedded here ([`MIGRATOR`]); [`PgStores::connect`] applies it, and so
//! does `cargo xtask db migrate`.

mod access;
mod admin;
mod audit;
mod batch;
mod beliefs;
mod contexts;
mod episodes;
mod error;
mod facts;
mod goals;
mod group;
mod identity;
mod inbox;
mod insights;
mod kept;
mod kv;
mod plan_state;
mod proposals;
mod query;
mod raw;
mod record_store;
mod records;
mod rows;
mod semantic;
mod spaces;
mod span;
mod sql;
mod text;
mod tx;
mod vectors;
mod working;

use std::str::FromStr;
use std::sync::Arc;

use openvibe_protocols::{
    AuditLog, BeliefStore, CallerContext, Embedder, EpisodicStore, FactStore, GoalStore,
    InsightStore, KnowledgeStore, ProposalStore, RawLogStore, RecordVectors, StoreError, Stores,
    WorkingStore,
};
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

pub use admin::{PgNamespaceAdmin, purge_tenant};
pub use audit::{AUDIT_BATCH, AUDIT_INTERVAL, AuditWriter, PgAuditLog};
pub use beliefs::PgBeliefStore;
pub use error::PgError;
pub use goals::PgGoalStore;
pub use inbox::PgInboxStore;
pub use kv::PgMemoryProvider;
pub use openvibe_protocols::{MAX_LABEL_LEN, MAX_SEARCH_BYTES, MAX_WORD_LEN};
pub use proposals::PgProposalStore;
pub use raw::PgRawLog;
pub use record_store::{PgEpisodicStore, PgFactStore, PgInsightStore, PgRecord, PgRecords};
pub use semantic::PgKnowledgeStore;
pub use spaces::{PgSpaceStore, RECHECK};
pub use vectors::PgVectors;
pub use working::PgWorkingStore;

/// The workspace's `migrations/`, embedded at build time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Apply the pending migrations to `pool`'s database (in the first schema
/// of its `search_path`). Idempotent: applied migrations are skipped.
pub async fn migrate(pool: &PgPool) -> Result<(), PgError> {
    MIGRATOR.run(pool).await.map_err(PgError::Migrate)
}

/// Default pool size of [`PgStores::connect`].
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// How long a store call waits for a free connection before it fails with
/// `StoreError::Timeout` (see [`pool_options`]).
pub const DEFAULT_ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long one statement may run before PostgreSQL cancels it and the call
/// fails with `StoreError::Timeout` (see [`connect_options`]).
pub const DEFAULT_STATEMENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Pool options the stores are tuned for: no liveness ping before every
/// acquire (a broken connection surfaces as a transient `Backend` error and
/// is dropped by the pool, which opens a new one for the next call),
/// `max_connections` connections, and [`DEFAULT_ACQUIRE_TIMEOUT`].
pub fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .test_before_acquire(false)
        .acquire_timeout(DEFAULT_ACQUIRE_TIMEOUT)
}

/// Connection options from a URL, with a statement cache large enough for
/// every filter combination the stores prepare and
/// [`DEFAULT_STATEMENT_TIMEOUT`] unless the URL sets its own
/// (`?options=-c%20statement_timeout%3D5s`).
pub fn connect_options(url: &str) -> Result<PgConnectOptions, PgError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(PgError::Config)?
        .statement_cache_capacity(512);
    if url.contains("statement_timeout") {
        return Ok(options);
    }
    Ok(options.options([(
        "statement_timeout",
        format!("{}ms", DEFAULT_STATEMENT_TIMEOUT.as_millis()),
    )]))
}

/// Every store on one pool. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PgStores {
    pool: PgPool,
    facts: Arc<PgFactStore>,
    episodes: Arc<PgEpisodicStore>,
    insights: Arc<PgInsightStore>,
    working: Arc<PgWorkingStore>,
    knowledge: Arc<PgKnowledgeStore>,
    raw: Arc<PgRawLog>,
    proposals: Arc<PgProposalStore>,
    goals: Arc<PgGoalStore>,
    beliefs: Arc<PgBeliefStore>,
    spaces: Arc<PgSpaceStore>,
    inbox: Arc<PgInboxStore>,
    audit: Arc<PgAuditLog>,
    vectors: Arc<PgVectors>,
    writer: AuditWriter,
}

/// The embedding model of a store without an embedder, and its side table
/// (created by the first migration).
pub const DEFAULT_EMBEDDING_MODEL: (&str, usize, &str) =
    ("all-MiniLM-L6-v2", 384, "embeddings_all_minilm_l6_v2");

impl PgStores {
    /// Connect to `url` (e.g. `postgres://openvibe_app:…@127.0.0.1:54329/openvibe`)
    /// with [`DEFAULT_MAX_CONNECTIONS`] connections and apply the pending
    /// migrations.
    pub async fn connect(url: &str) -> Result<Self, PgError> {
        let pool = pool_options(DEFAULT_MAX_CONNECTIONS)
            .connect_with(connect_options(url)?)
            .await
            .map_err(PgError::Connect)?;
        migrate(&pool).await?;
        Ok(Self::from_pool(pool))
    }

    /// Stores on an existing pool whose searches and refusals are audited
    /// (`true`, what [`PgStores::from_pool`] does) or not. Record changes
    /// are audited by the database's triggers either way.
    pub fn from_pool_audited(pool: PgPool, search_audit: bool) -> Self {
        let writer = AuditWriter::new(pool.clone()).enabled(search_audit);
        Self::build(pool, writer)
    }

    /// Stores on an existing pool, as it is (no migration: see [`migrate`]).
    /// Knowledge needs embeddings of [`DEFAULT_EMBEDDING_MODEL`]'s size; see
    /// [`PgStores::with_embedder`] to have the store compute them.
    pub fn from_pool(pool: PgPool) -> Self {
        Self::from_pool_audited(pool, true)
    }

    fn build(pool: PgPool, writer: AuditWriter) -> Self {
        let (model, dimensions, table) = DEFAULT_EMBEDDING_MODEL;
        Self {
            facts: Arc::new(PgFactStore::new(pool.clone()).with_audit(writer.clone())),
            episodes: Arc::new(PgEpisodicStore::new(pool.clone()).with_audit(writer.clone())),
            insights: Arc::new(PgInsightStore::new(pool.clone()).with_audit(writer.clone())),
            working: Arc::new(PgWorkingStore::new(pool.clone())),
            knowledge: Arc::new(
                PgKnowledgeStore::new(
                    pool.clone(),
                    model.to_owned(),
                    dimensions,
                    table.to_owned(),
                    None,
                )
                .with_audit(writer.clone()),
            ),
            raw: Arc::new(PgRawLog::new(pool.clone()).with_audit(writer.clone())),
            proposals: Arc::new(PgProposalStore::new(pool.clone()).with_audit(writer.clone())),
            goals: Arc::new(PgGoalStore::new(pool.clone()).with_audit(writer.clone())),
            beliefs: Arc::new(PgBeliefStore::new(pool.clone()).with_audit(writer.clone())),
            spaces: Arc::new(PgSpaceStore::new(pool.clone()).with_audit(writer.clone())),
            inbox: Arc::new(PgInboxStore::new(pool.clone()).with_audit(writer.clone())),
            audit: Arc::new(PgAuditLog::new(pool.clone(), writer.clone())),
            vectors: Arc::new(PgVectors::new(
                pool.clone(),
                model.to_owned(),
                table.to_owned(),
                None,
            )),
            writer,
            pool,
        }
    }

    /// Embed with `embedder`: its model is registered (its side table with
    /// an HNSW index is created when new) and becomes the stores' model.
    /// Knowledge (and text queries) are embedded with it, and facts,
    /// insights and episodes get vectors when written (best effort; see
    /// [`PgVectors`]). Records written before, or under another model, wait
    /// for [`RecordVectors::embed_pending`]
    /// (`openvibe memory reindex`); no record is rewritten.
    pub async fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Result<Self, StoreError> {
        let model = embedder.model_id().to_owned();
        let dimensions = embedder.dimensions();
        let table = PgKnowledgeStore::register(&self.pool, &model, dimensions).await?;
        let vectors = Arc::new(PgVectors::new(
            self.pool.clone(),
            model.clone(),
            table.clone(),
            Some(embedder.clone()),
        ));
        let pool = self.pool.clone();
        let writer = self.writer.clone();
        self.facts = Arc::new(
            PgFactStore::new(pool.clone())
                .with_audit(writer.clone())
                .with_vectors(vectors.clone()),
        );
        self.episodes = Arc::new(
            PgEpisodicStore::new(pool.clone())
                .with_audit(writer.clone())
                .with_vectors(vectors.clone()),
        );
        self.insights = Arc::new(
            PgInsightStore::new(pool.clone())
                .with_audit(writer.clone())
                .with_vectors(vectors.clone()),
        );
        self.knowledge = Arc::new(
            PgKnowledgeStore::new(pool, model, dimensions, table, Some(embedder))
                .with_audit(writer),
        );
        self.vectors = vectors;
        Ok(self)
    }

    /// The record vectors.
    pub fn vectors(&self) -> Arc<PgVectors> {
        self.vectors.clone()
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Every store as a [`Stores`] set (what
    /// `openvibe_memory::in_memory_stores()` returns for the in-memory backend).
    pub fn stores(&self) -> Stores {
        Stores {
            facts: self.facts.clone() as Arc<dyn FactStore>,
            episodes: self.episodes.clone() as Arc<dyn EpisodicStore>,
            insights: self.insights.clone() as Arc<dyn InsightStore>,
            working: self.working.clone() as Arc<dyn WorkingStore>,
            knowledge: self.knowledge.clone() as Arc<dyn KnowledgeStore>,
            raw: self.raw.clone() as Arc<dyn RawLogStore>,
            audit: self.audit.clone() as Arc<dyn AuditLog>,
            admin: Arc::new(
                PgNamespaceAdmin::new(self.pool.clone()).with_audit(self.writer.clone()),
            ),
            vectors: self.vectors.clone() as Arc<dyn RecordVectors>,
            proposals: self.proposals.clone() as Arc<dyn ProposalStore>,
            goals: self.goals.clone() as Arc<dyn GoalStore>,
            beliefs: self.beliefs.clone() as Arc<dyn BeliefStore>,
            spaces: self.spaces.clone() as Arc<dyn openvibe_protocols::SpaceStore>,
            inbox: self.inbox.clone() as Arc<dyn openvibe_protocols::InboxStore>,
        }
    }

    /// The goal store.
    pub fn goals(&self) -> Arc<PgGoalStore> {
        self.goals.clone()
    }

    /// The proposal store.
    pub fn proposals(&self) -> Arc<PgProposalStore> {
        self.proposals.clone()
    }

    /// The audit trail.
    pub fn audit(&self) -> Arc<PgAuditLog> {
        self.audit.clone()
    }

    /// The working-memory store.
    pub fn working(&self) -> Arc<PgWorkingStore> {
        self.working.clone()
    }

    /// The semantic-memory store.
    pub fn knowledge(&self) -> Arc<PgKnowledgeStore> {
        self.knowledge.clone()
    }

    /// The fact store.
    pub fn facts(&self) -> Arc<PgFactStore> {
        self.facts.clone()
    }

    /// The episodic store (with its batched insert).
    pub fn episodes(&self) -> Arc<PgEpisodicStore> {
        self.episodes.clone()
    }

    /// The insight store.
    pub fn insights(&self) -> Arc<PgInsightStore> {
        self.insights.clone()
    }

    /// The raw log (L1).
    pub fn raw(&self) -> Arc<PgRawLog> {
        self.raw.clone()
    }

    /// V1 key/value memory used as the system of the default tenant.
    pub fn memory_provider(&self) -> PgMemoryProvider {
        self.memory_provider_as(CallerContext::system())
    }

    /// V1 key/value memory used as `ctx`.
    pub fn memory_provider_as(&self, ctx: CallerContext) -> PgMemoryProvider {
        PgMemoryProvider::new(self.pool.clone(), ctx)
    }
}

impl From<PgStores> for Stores {
    fn from(pg: PgStores) -> Self {
        pg.stores()
    }
}

/// Whether the database answers (`SELECT 1` on one pooled connection):
/// a readiness check.
pub async fn ping(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::query("SELECT 1")
        .execute(pool)
        .await
        .map(|_| ())
        .map_err(error::store_error)
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
