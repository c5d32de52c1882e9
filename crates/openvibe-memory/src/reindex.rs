//! [`Reindex`]: embedding what waits for a vector, in the background,
//! over any backend's [`RecordVectors`](openvibe_protocols::RecordVectors).

use std::sync::Arc;

use openvibe_protocols::{CallerContext, StoreError};

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
        openvibe_protocols::check_vector_admin(&ctx, "embed pending records", Some(batch))?;
        let status = vectors.vector_status(&ctx).await?;
        if status.model.is_none() {
            return Err(openvibe_protocols::no_embedder());
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
            .map_err(|e| StoreError::backend_from("the reindex task failed", false, e))?
    }
}
