//! The in-memory audit trail: entries appended under the lock of the
//! change they record (so a change and its entry appear together), read
//! through [`AuditLog`].

use std::sync::Mutex;

use async_trait::async_trait;
use openvibe_protocols::{AuditEntry, AuditLog, AuditQuery, CallerContext, StoreError};

/// [`AuditLog`] in memory, shared by the stores of one
/// [`in_memory_stores`](crate::in_memory_stores) set.
#[derive(Debug, Default)]
pub struct InMemoryAuditLog {
    entries: Mutex<Vec<AuditEntry>>,
}

impl InMemoryAuditLog {
    /// An empty trail.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append `entry`, numbered after the last one.
    pub fn record(&self, mut entry: AuditEntry) {
        if let Ok(mut entries) = self.entries.lock() {
            entry.seq = entries.len() as u64 + 1;
            entries.push(entry);
        }
    }

    /// Append the refusal of `operation` on `kind` `id`, when `result` is
    /// an authorization error; pass `result` through.
    pub fn refusal<T>(
        &self,
        ctx: &CallerContext,
        operation: openvibe_protocols::AuditOp,
        kind: &str,
        id: &str,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Some(entry) = openvibe_protocols::refusal_entry(ctx, operation, kind, id, &result) {
            self.record(entry);
        }
        result
    }

    /// How many entries the trail holds (all tenants).
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    /// Whether the trail is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl AuditLog for InMemoryAuditLog {
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let _span = crate::span::store_span("audit", "query", ctx);
        let q = query.for_caller(ctx);
        let after = q.after()?;
        let entries = self
            .entries
            .lock()
            .map_err(|_| StoreError::backend("the audit trail lock is poisoned"))?;
        let mut found: Vec<AuditEntry> = entries
            .iter()
            .filter(|e| {
                e.tenant_id == ctx.tenant_id()
                    && q.matches(e)
                    && after.is_none_or(|(at, seq)| (e.at, e.seq) < (at, seq))
            })
            .cloned()
            .collect();
        found.sort_by_key(|e| std::cmp::Reverse((e.at, e.seq)));
        found.truncate(q.limit);
        Ok(found)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn append(&self, ctx: &CallerContext, entry: AuditEntry) -> Result<(), StoreError> {
        self.record(entry.stamped(ctx));
        Ok(())
    }
}
