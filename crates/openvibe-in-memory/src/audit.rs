//! The in-memory audit trail: entries appended under the lock of the
//! change they record (so a change and its entry appear together), read
//! through [`AuditLog`].

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditLog, AuditQuery, CHAIN_GENESIS, CallerContext, ChainHead, ChainReport,
    ChainWalk, ErasureSubject, Redaction, StoreError, VerifyChain, audit_chain_hash,
    check_chain_reader, quotes_subject, redact_entry,
};

/// [`AuditLog`] in memory, shared by the stores of one
/// [`in_memory_stores`](crate::in_memory_stores) set. Each tenant's entries
/// are chained as they are appended ([`audit_chain_hash`]).
#[derive(Debug, Default)]
pub struct InMemoryAuditLog {
    entries: Mutex<Trail>,
}

/// The entries, and each tenant's chain head (number, hash).
#[derive(Debug, Default)]
struct Trail {
    entries: Vec<AuditEntry>,
    heads: HashMap<String, (u64, String)>,
}

impl Trail {
    fn append(&mut self, mut entry: AuditEntry) {
        entry.seq = self.entries.len() as u64 + 1;
        let head = self
            .heads
            .entry(entry.tenant_id.clone())
            .or_insert_with(|| (0, CHAIN_GENESIS.to_owned()));
        entry.chain_seq = head.0 + 1;
        let hash = audit_chain_hash(&head.1, &entry);
        entry.prev_hash = Some(std::mem::replace(&mut head.1, hash.clone()));
        entry.hash = Some(hash);
        head.0 = entry.chain_seq;
        self.entries.push(entry);
    }
}

impl InMemoryAuditLog {
    /// An empty trail.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append `entry`, numbered after the last one and linked into its
    /// tenant's chain.
    pub fn record(&self, entry: AuditEntry) {
        if let Ok(mut trail) = self.entries.lock() {
            trail.append(entry);
        }
    }

    /// Change the entry at `seq` in place, bypassing the chain: what an
    /// attacker with the process's memory could do (for tests of
    /// [`AuditLog::verify`]).
    #[doc(hidden)]
    pub fn tamper(&self, seq: u64, change: impl FnOnce(&mut AuditEntry)) {
        if let Ok(mut trail) = self.entries.lock()
            && let Some(entry) = trail.entries.iter_mut().find(|e| e.seq == seq)
        {
            change(entry);
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
        self.entries.lock().map_or(0, |t| t.entries.len())
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
        let trail = self
            .entries
            .lock()
            .map_err(|_| StoreError::backend("the audit trail lock is poisoned"))?;
        let mut found: Vec<AuditEntry> = trail
            .entries
            .iter()
            .filter(|e| {
                e.tenant_id == ctx.tenant_id()
                    && q.matches(e)
                    && after.is_none_or(|after| e.chain_seq < after)
            })
            .cloned()
            .collect();
        found.sort_by_key(|e| std::cmp::Reverse(e.chain_seq));
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

    async fn verify(
        &self,
        ctx: &CallerContext,
        request: &VerifyChain,
    ) -> Result<ChainReport, StoreError> {
        let _span = crate::span::store_span("audit", "verify", ctx);
        check_chain_reader(ctx, "verify the audit chain")?;
        let trail = self
            .entries
            .lock()
            .map_err(|_| StoreError::backend("the audit trail lock is poisoned"))?;
        let redactions = trail
            .entries
            .iter()
            .filter(|e| e.tenant_id == ctx.tenant_id())
            .flat_map(Redaction::recorded_in);
        let mut walk =
            ChainWalk::new(ctx.tenant_id(), request.anchor.clone()).with_redactions(redactions);
        let mine = trail
            .entries
            .iter()
            .filter(|e| e.tenant_id == ctx.tenant_id())
            .skip_while(|e| request.since.is_some_and(|since| e.at < since));
        for entry in mine {
            let expected = audit_chain_hash(entry.prev_hash.as_deref().unwrap_or_default(), entry);
            if !walk.step(entry, &expected) {
                break;
            }
        }
        Ok(walk.finish())
    }

    async fn redact(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        dry_run: bool,
    ) -> Result<u64, StoreError> {
        let _span = crate::span::store_span("audit", "redact", ctx);
        check_chain_reader(ctx, "redact the audit trail")?;
        subject.check()?;
        let mut trail = self
            .entries
            .lock()
            .map_err(|_| StoreError::backend("the audit trail lock is poisoned"))?;
        let mut redactions = Vec::new();
        for entry in trail
            .entries
            .iter_mut()
            .filter(|e| e.tenant_id == ctx.tenant_id() && quotes_subject(e, subject))
        {
            let redacted = redact_entry(entry);
            redactions.push(Redaction::of(entry, &redacted));
            if !dry_run {
                // The entry keeps its hashes: the redaction entry vouches
                // for its new form.
                *entry = redacted;
            }
        }
        let n = redactions.len() as u64;
        if !dry_run {
            for chunk in redactions.chunks(openvibe_protocols::REDACTIONS_PER_ENTRY) {
                trail.append(Redaction::entry(ctx, subject, chunk).stamped(ctx));
            }
        }
        Ok(n)
    }

    async fn anchor(&self, ctx: &CallerContext) -> Result<ChainHead, StoreError> {
        let _span = crate::span::store_span("audit", "anchor", ctx);
        check_chain_reader(ctx, "anchor the audit chain")?;
        let trail = self
            .entries
            .lock()
            .map_err(|_| StoreError::backend("the audit trail lock is poisoned"))?;
        let (chain_seq, hash) = trail
            .heads
            .get(ctx.tenant_id())
            .cloned()
            .unwrap_or_else(|| (0, CHAIN_GENESIS.to_owned()));
        Ok(ChainHead {
            tenant_id: ctx.tenant_id().to_owned(),
            chain_seq,
            hash,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::AuditOp;

    #[tokio::test]
    async fn an_entry_changed_in_memory_breaks_the_chain_there() {
        let log = InMemoryAuditLog::new();
        let ctx = CallerContext::agent("cro").with_tenant("t1");
        for _ in 0..5 {
            log.record(AuditEntry::new(&ctx, AuditOp::Insert, "fact"));
        }
        let sys = CallerContext::system().with_tenant("t1");
        assert!(
            log.verify(&sys, &VerifyChain::default())
                .await
                .unwrap()
                .ok()
        );
        log.tamper(3, |e| e.principal = "user:mallory".into());
        let broken = log
            .verify(&sys, &VerifyChain::default())
            .await
            .unwrap()
            .broken
            .unwrap();
        assert_eq!((broken.chain_seq, broken.what.as_str()), (3, "hash"));
    }
}
