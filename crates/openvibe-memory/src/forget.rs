//! Running an erasure ([`forget`]) and recording it in the audit trail:
//! that it happened (who, when, the subject, counts per kind), with the
//! entries that quoted the subject redacted by
//! [`AuditLog::redact`](openvibe_protocols::AuditLog::redact) in a way the
//! hash chain records. The driver over the backends' two steps
//! ([`NamespaceAdmin::erasure_counts`], [`NamespaceAdmin::erase`]); the
//! rules it applies are the contract's.

use openvibe_protocols::{
    AuditEntry, AuditLog, AuditOp, CallerContext, DERIVED_KINDS, ERASURE_AUDIT_KIND, ErasureCount,
    ErasureReport, ErasureSubject, KindErasure, NamespaceAdmin, StoreError, check_erasure,
};
use serde_json::{Value, json};

/// How [`forget`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForgetOptions {
    /// Records per batch (one transaction each).
    pub batch: usize,
    /// Only count.
    pub dry_run: bool,
}

impl Default for ForgetOptions {
    fn default() -> Self {
        Self {
            batch: 500,
            dry_run: false,
        }
    }
}

/// Erase everything about `subject` in the caller's tenant, batch by
/// batch (`progress` hears the records deleted so far and the total
/// matched), then count again and record the erasure in the audit trail
/// (the entries quoting the subject redacted first). Privileged callers
/// only. A run stopped part way is resumed by running it again.
pub async fn forget(
    admin: &dyn NamespaceAdmin,
    audit: &dyn AuditLog,
    ctx: &CallerContext,
    subject: &ErasureSubject,
    options: ForgetOptions,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<ErasureReport, StoreError> {
    check_erasure(ctx, subject, Some(options.batch))?;
    let before = admin.erasure_counts(ctx, subject).await?;
    let total: u64 = before
        .iter()
        .filter(|c| !DERIVED_KINDS.contains(&c.kind.as_str()))
        .map(|c| c.records)
        .sum();
    let mut deleted: Vec<ErasureCount> = before
        .iter()
        .map(|c| ErasureCount {
            kind: c.kind.clone(),
            records: 0,
        })
        .collect();
    progress(0, total);
    if !options.dry_run {
        let mut done = 0;
        loop {
            let batch = admin.erase(ctx, subject, options.batch).await?;
            let n: u64 = batch.iter().map(|c| c.records).sum();
            if n == 0 {
                break;
            }
            for c in batch {
                match deleted.iter_mut().find(|d| d.kind == c.kind) {
                    Some(d) => d.records += c.records,
                    None => deleted.push(c),
                }
            }
            done += n;
            progress(done.min(total), total);
        }
    }
    let after = admin.erasure_counts(ctx, subject).await?;
    let audit_redacted = audit.redact(ctx, subject, options.dry_run).await?;
    let count = |list: &[ErasureCount], kind: &str| {
        list.iter()
            .find(|c| c.kind == kind)
            .map_or(0, |c| c.records)
    };
    let kinds: Vec<KindErasure> = before
        .iter()
        .map(|c| KindErasure {
            kind: c.kind.clone(),
            matched: c.records,
            deleted: count(&deleted, &c.kind),
            after: count(&after, &c.kind),
        })
        .collect();
    let report = ErasureReport {
        tenant_id: ctx.tenant_id().to_owned(),
        subject: subject.clone(),
        dry_run: options.dry_run,
        kinds,
        audit_redacted,
    };
    if !options.dry_run {
        let (field, value) = subject.parts();
        let mut entry = AuditEntry::new(ctx, AuditOp::Delete, ERASURE_AUDIT_KIND);
        let counts: serde_json::Map<String, Value> = report
            .kinds
            .iter()
            .map(|k| {
                (
                    k.kind.clone(),
                    json!({ "deleted": k.deleted, "after": k.after }),
                )
            })
            .collect();
        entry.filters = Some(json!({
            "subject": { field: value },
            "kinds": counts,
            "audit_redacted": audit_redacted,
        }));
        audit.append(ctx, entry).await?;
    }
    Ok(report)
}
