//! Record vectors in memory ([`RecordVectors`] of the in-memory stores):
//! one [`VectorTable`] per set of stores, keyed by (tenant, kind, id), each
//! vector kept with the hash of the text it embeds. The fact, insight and
//! episode stores embed what they write through it (best effort); the
//! admin reads and fills it. Knowledge keeps its vector inside the record.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use openvibe_protocols::memory::{PendingText, embed_checked};
use openvibe_protocols::{CallerContext, Embedder, EmbeddingText, StoreError};

/// A vector and the hash of the text it embeds.
type Entry = (String, Vec<f32>);
/// One tenant's entries: kind → record id → entry.
type TenantVectors = HashMap<&'static str, HashMap<String, Entry>>;

/// The vectors of one model: tenant → kind → record id → entry (looked up
/// by borrowed keys: a reindex scan checks every record).
pub(crate) struct VectorTable {
    embedder: Arc<dyn Embedder>,
    entries: RwLock<HashMap<String, TenantVectors>>,
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

    /// `f` of the entry of `(tenant, kind, id)` when it embeds the text hashed `hash`.
    fn with_current<T>(
        &self,
        tenant: &str,
        kind: &str,
        id: &str,
        hash: Option<&str>,
        f: impl FnOnce(&[f32]) -> T,
    ) -> Option<T> {
        let hash = hash?;
        let entries = self.entries.read().ok()?;
        let (h, vector) = entries.get(tenant)?.get(kind)?.get(id)?;
        (h == hash).then(|| f(vector))
    }

    /// The vector of `(tenant, kind, id)` when it embeds the text hashed `hash`.
    pub(crate) fn current(
        &self,
        tenant: &str,
        kind: &str,
        id: &str,
        hash: Option<&str>,
    ) -> Option<Vec<f32>> {
        self.with_current(tenant, kind, id, hash, <[f32]>::to_vec)
    }

    /// Whether `(tenant, kind, id)` has a vector of the text hashed `hash`.
    pub(crate) fn is_current(
        &self,
        tenant: &str,
        kind: &str,
        id: &str,
        hash: Option<&str>,
    ) -> bool {
        self.with_current(tenant, kind, id, hash, |_| ()).is_some()
    }

    /// Embed `pending` of `tenant` in one embedder call and keep the vectors.
    pub(crate) async fn embed(
        &self,
        tenant: &str,
        pending: Vec<PendingText>,
    ) -> Result<u64, StoreError> {
        let texts: Vec<String> = pending.iter().map(|p| p.text.clone()).collect();
        let vectors = embed_checked(self.embedder.as_ref(), &texts).await?;
        let mut entries = self
            .entries
            .write()
            .map_err(|_| StoreError::backend("the vector table's lock is poisoned"))?;
        let n = pending.len() as u64;
        let tenant = entries.entry(tenant.to_owned()).or_default();
        for (p, vector) in pending.into_iter().zip(vectors) {
            tenant
                .entry(p.kind)
                .or_default()
                .insert(p.id, (p.hash, vector));
        }
        Ok(n)
    }

    /// Drop the vector of a deleted record.
    pub(crate) fn forget(&self, tenant: &str, kind: &str, id: &str) {
        if let Ok(mut entries) = self.entries.write()
            && let Some(ids) = entries.get_mut(tenant).and_then(|t| t.get_mut(kind))
        {
            ids.remove(id);
        }
    }
}

/// Embed what a store just wrote, when it has vectors: best effort. A
/// failure leaves the records without a current vector (a warning in the
/// log) for [`RecordVectors::embed_pending`](openvibe_protocols::RecordVectors::embed_pending).
pub(crate) async fn embed_written<R: EmbeddingText>(
    vectors: Option<&VectorTable>,
    ctx: &CallerContext,
    written: &[&R],
) {
    let Some(table) = vectors else { return };
    let pending: Vec<PendingText> = written.iter().filter_map(|r| PendingText::of(*r)).collect();
    if pending.is_empty() {
        return;
    }
    if let Err(e) = table.embed(ctx.tenant_id(), pending).await {
        tracing::warn!(
            kind = R::KIND,
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
        openvibe_protocols::memory::check_vector_admin(&ctx, "embed pending records", Some(batch))?;
        let status = vectors.vector_status(&ctx).await?;
        if status.model.is_none() {
            return Err(openvibe_protocols::memory::no_embedder());
        }
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
