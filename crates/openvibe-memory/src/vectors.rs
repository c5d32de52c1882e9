//! Record vectors in memory ([`RecordVectors`] of the in-memory stores):
//! one [`VectorTable`] per set of stores, keyed by (tenant, kind, id), each
//! vector kept with the hash of the text it embeds. The fact, insight and
//! episode stores embed what they write through it (best effort); the
//! admin reads and fills it. Knowledge keeps its vector inside the record.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use openvibe_protocols::memory::embed_checked;
use openvibe_protocols::{CallerContext, Embedder, EmbeddingText, StoreError};

use crate::index::Indexed;

type Key = (String, &'static str, String);

/// The vectors of one model.
pub(crate) struct VectorTable {
    embedder: Arc<dyn Embedder>,
    entries: RwLock<HashMap<Key, (String, Vec<f32>)>>,
}

/// A record waiting for its vector.
pub(crate) struct Pending {
    pub kind: &'static str,
    pub id: String,
    pub hash: String,
    pub text: String,
}

impl Pending {
    /// `rec` as one, when the store has hashed its text.
    pub(crate) fn of<R: EmbeddingText + Indexed>(rec: &R) -> Option<Self> {
        Some(Self {
            kind: <R as EmbeddingText>::KIND,
            id: rec.id().to_owned(),
            hash: rec.text_hash()?.to_owned(),
            text: rec.embedding_text().into_owned(),
        })
    }
}

impl VectorTable {
    pub(crate) fn new(embedder: Arc<dyn Embedder>) -> Self {
        Self {
            embedder,
            entries: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn model(&self) -> &str {
        self.embedder.model_id()
    }

    fn key(tenant: &str, kind: &'static str, id: &str) -> Key {
        (tenant.to_owned(), kind, id.to_owned())
    }

    /// The vector of `(tenant, kind, id)` when it embeds the text hashed `hash`.
    pub(crate) fn current(
        &self,
        tenant: &str,
        kind: &'static str,
        id: &str,
        hash: Option<&str>,
    ) -> Option<Vec<f32>> {
        let hash = hash?;
        let entries = self.entries.read().ok()?;
        entries
            .get(&Self::key(tenant, kind, id))
            .filter(|(h, _)| h == hash)
            .map(|(_, v)| v.clone())
    }

    /// Whether `(tenant, kind, id)` has a vector of the text hashed `hash`.
    pub(crate) fn is_current(
        &self,
        tenant: &str,
        kind: &'static str,
        id: &str,
        hash: Option<&str>,
    ) -> bool {
        let Some(hash) = hash else { return false };
        self.entries
            .read()
            .map(|e| {
                e.get(&Self::key(tenant, kind, id))
                    .is_some_and(|(h, _)| h == hash)
            })
            .unwrap_or(false)
    }

    /// Embed `pending` of `tenant` in one embedder call and keep the vectors.
    pub(crate) async fn embed(
        &self,
        tenant: &str,
        pending: Vec<Pending>,
    ) -> Result<u64, StoreError> {
        let texts: Vec<String> = pending.iter().map(|p| p.text.clone()).collect();
        let vectors = embed_checked(self.embedder.as_ref(), &texts).await?;
        let mut entries = self
            .entries
            .write()
            .map_err(|_| StoreError::backend("the vector table's lock is poisoned"))?;
        let n = pending.len() as u64;
        for (p, vector) in pending.into_iter().zip(vectors) {
            entries.insert(Self::key(tenant, p.kind, &p.id), (p.hash, vector));
        }
        Ok(n)
    }

    /// Drop the vector of a deleted record.
    pub(crate) fn forget(&self, tenant: &str, kind: &'static str, id: &str) {
        if let Ok(mut entries) = self.entries.write() {
            entries.remove(&Self::key(tenant, kind, id));
        }
    }
}

/// Embed what a store just wrote, when it has vectors: best effort. A
/// failure leaves the records without a current vector (a warning in the
/// log) for [`RecordVectors::embed_pending`](openvibe_protocols::RecordVectors::embed_pending).
pub(crate) async fn embed_written<R: EmbeddingText + Indexed>(
    vectors: Option<&VectorTable>,
    ctx: &CallerContext,
    written: &[&R],
) {
    let Some(table) = vectors else { return };
    let pending: Vec<Pending> = written.iter().filter_map(|r| Pending::of(*r)).collect();
    if pending.is_empty() {
        return;
    }
    if let Err(e) = table.embed(ctx.tenant_id(), pending).await {
        tracing::warn!(
            kind = <R as EmbeddingText>::KIND,
            model = table.model(),
            transient = e.is_transient(),
            "embedding on write failed; the record is stored and waits for a reindex"
        );
        tracing::debug!(error = %e, "embedding on write failed");
    }
}

/// How far a [`Reindex`] has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReindexProgress {
    /// Records embedded so far.
    pub embedded: u64,
    /// Records that were waiting when it started (more may be written meanwhile).
    pub pending_at_start: u64,
}

/// A reindex running in the background ([`Reindex::spawn`]): it embeds
/// the records of one tenant that lack a current vector of the store's
/// model, batch by batch ([`RecordVectors::embed_pending`](openvibe_protocols::RecordVectors::embed_pending)), until none
/// waits, without rewriting a record. What a model change needs: point the
/// stores at the new embedder, spawn this, and go on serving (vector
/// search finds each record from the moment its batch is in).
///
/// ```
/// use std::sync::Arc;
/// use openvibe_memory::{Reindex, in_memory_stores_with_embedder};
/// use openvibe_protocols::testing::HashEmbedder;
/// use openvibe_protocols::CallerContext;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), openvibe_protocols::StoreError> {
/// let stores = in_memory_stores_with_embedder(Arc::new(HashEmbedder::new(8)));
/// let reindex = Reindex::spawn(stores.vectors.clone(), CallerContext::system(), 64).await?;
/// assert_eq!(reindex.finish().await?, 0, "nothing waits in fresh stores");
/// # Ok(()) }
/// ```
pub struct Reindex {
    progress: tokio::sync::watch::Receiver<ReindexProgress>,
    task: tokio::task::JoinHandle<Result<u64, StoreError>>,
}

impl std::fmt::Debug for Reindex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reindex")
            .field("progress", &*self.progress.borrow())
            .finish_non_exhaustive()
    }
}

impl Reindex {
    /// Start reindexing `ctx`'s tenant (a privileged caller) in batches of
    /// `batch`. Fails at once, starting nothing, when `ctx` may not or the
    /// store has no embedder.
    pub async fn spawn(
        vectors: Arc<dyn openvibe_protocols::RecordVectors>,
        ctx: CallerContext,
        batch: usize,
    ) -> Result<Self, StoreError> {
        let status = vectors.vector_status(&ctx).await?;
        if status.model.is_none() {
            return Err(openvibe_protocols::memory::no_embedder());
        }
        openvibe_protocols::memory::check_vector_admin(&ctx, "embed pending records", Some(batch))?;
        let (tx, progress) = tokio::sync::watch::channel(ReindexProgress {
            embedded: 0,
            pending_at_start: status.pending(),
        });
        let task = tokio::spawn(async move {
            let mut embedded = 0;
            loop {
                let n = vectors.embed_pending(&ctx, batch).await?;
                if n == 0 {
                    return Ok(embedded);
                }
                embedded += n;
                tx.send_modify(|p| p.embedded = embedded);
            }
        });
        Ok(Self { progress, task })
    }

    /// Where it is now.
    pub fn progress(&self) -> ReindexProgress {
        *self.progress.borrow()
    }

    /// Wait for the next batch (or the end); `false` once it has ended.
    pub async fn changed(&mut self) -> bool {
        self.progress.changed().await.is_ok()
    }

    /// Wait for the end: how many records it embedded, or the error that
    /// stopped it (the batches before it are kept; running it again resumes).
    pub async fn finish(self) -> Result<u64, StoreError> {
        self.task
            .await
            .map_err(|e| StoreError::backend(format!("the reindex task failed: {e}")))?
    }
}
