//! # openvibe-in-memory — the embedded default memory backend
//!
//! The memory contract of [`openvibe_protocols`] in process: every store
//! trait over indexed, tenant-isolated tables, with clearance, namespaces,
//! projects, ownership and expiry applied *inside* the index walk (so
//! `limit` readable records come back whenever that many exist), every
//! change audited under the change's lock, and ranked retrieval scored by
//! the ranking every backend shares ([`openvibe_retrieval`]). It sits
//! beside `openvibe-postgres` and `openvibe-remote` and runs the same
//! conformance suite (`openvibe-memory-testkit`).
//!
//! | part | store |
//! |---|---|
//! | facts, episodes, insights | [`InMemoryRecords`] ([`InMemoryFactStore`], [`InMemoryEpisodicStore`], [`InMemoryInsightStore`]) |
//! | working and semantic memory | [`InMemoryWorkingStore`] |
//! | the L1 raw log | [`InMemoryRawLog`] |
//! | the audit trail | [`InMemoryAuditLog`] |
//! | proposals | [`InMemoryProposalStore`] |
//! | spaces | [`InMemorySpaceStore`] |
//! | the durable event inbox | [`InMemoryInboxStore`] |
//! | namespaces, vectors, snapshot files | [`InMemoryAdmin`], [`MemorySnapshot`] |
//! | all of them, as one [`Stores`] set | [`in_memory_stores`], [`in_memory_stores_with_embedder`] |
//!
//! Nothing persists but what a [`MemorySnapshot`] writes.
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! # rt.block_on(async {
//! use openvibe_protocols::{CallerContext, Fact, FactQuery};
//!
//! let stores = openvibe_in_memory::in_memory_stores();
//! let cro = CallerContext::agent("cro").with_tenant("acme");
//! stores.facts.store(&cro, Fact::new("f1", "Acme renews in May")).await?;
//! let found = stores.facts.query(&cro, &FactQuery::new().text("renews")).await?;
//! assert_eq!(found.len(), 1);
//! # Ok::<(), openvibe_protocols::StoreError>(())
//! # }).unwrap();
//! ```

mod admin;
mod audit;
mod beliefs;
mod goals;
mod governed;
mod inbox;
mod index;
mod kinds;
mod proposals;
mod ranked;
mod raw;
mod records;
mod rows;
mod semantic;
mod spaces;
mod span;
mod tables;
mod vectors;
mod working;

use std::sync::Arc;

use openvibe_protocols::{Embedder, Stores};

pub use admin::{InMemoryAdmin, MemorySnapshot, SnapshotHandle};
pub use audit::InMemoryAuditLog;
pub use beliefs::InMemoryBeliefStore;
pub use goals::InMemoryGoalStore;
pub use inbox::InMemoryInboxStore;
pub use openvibe_retrieval::VectorSearch;
pub use proposals::InMemoryProposalStore;
pub use raw::{InMemoryRawLog, new_raw_id};
pub use records::{
    InMemoryEpisodicStore, InMemoryFactStore, InMemoryInsightStore, InMemoryRecord, InMemoryRecords,
};
pub use spaces::InMemorySpaceStore;
pub use working::{DEFAULT_EMBEDDING_MODEL, InMemoryWorkingStore};

/// Fresh, empty in-memory stores: the embedded default backend as a
/// [`Stores`] set (what `PgStores::stores()` is for PostgreSQL). Knowledge
/// needs embeddings of [`DEFAULT_EMBEDDING_MODEL`]'s size; see
/// [`in_memory_stores_with_embedder`] to have the store compute them.
pub fn in_memory_stores() -> Stores {
    InMemoryAdmin::over(InMemoryWorkingStore::new()).into_stores()
}

/// [`in_memory_stores`] whose semantic memory embeds with `embedder`, and
/// whose facts, insights and episodes get vectors when written.
pub fn in_memory_stores_with_embedder(embedder: Arc<dyn Embedder>) -> Stores {
    InMemoryAdmin::over(InMemoryWorkingStore::new().with_embedder(embedder)).into_stores()
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
