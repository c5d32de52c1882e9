//! Record vectors in memory ([`RecordVectors`] of the in-memory stores):
//! one [`VectorTable`] per set of stores, keyed by (tenant, kind, id), each
//! vector kept with the hash of the text it embeds. The fact, insight and
//! episode stores embed what they write through it (best effort); the
//! admin reads and fills it. Knowledge keeps its vector inside the record.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use openvibe_protocols::{CallerContext, Embedder, EmbeddingText, StoreError};
use openvibe_protocols::{PendingText, embed_checked};

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

    /// The record ids of `tenant`'s vectors of `kind`.
    pub(crate) fn ids(&self, tenant: &str, kind: &str) -> Vec<String> {
        self.entries
            .read()
            .ok()
            .and_then(|e| {
                e.get(tenant)
                    .and_then(|t| t.get(kind))
                    .map(|ids| ids.keys().cloned().collect())
            })
            .unwrap_or_default()
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
