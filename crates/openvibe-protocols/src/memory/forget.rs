//! Running an erasure ([`forget`]) and recording it in the audit trail:
//! that it happened (who, when, the subject, counts per kind), with the
//! entries that quoted the subject redacted by [`AuditLog::redact`] in a
//! way the hash chain records.

use serde_json::{Value, json};

use super::{
    AuditEntry, AuditLog, AuditOp, CallerContext, DERIVED_KINDS, ERASURE_AUDIT_KIND, ErasureCount,
    ErasureReport, ErasureSubject, KindErasure, NamespaceAdmin, REDACTED_REASON,
    REDACTION_AUDIT_KIND, StoreError, check_admin, mentions, redacted_filters,
};

/// `Ok` when `ctx` may run an erasure of `subject` (privileged), the
/// subject names something, and a batch (when given) is at least 1: the
/// checks every backend's `erasure_counts` and `erase` make first.
pub fn check_erasure(
    ctx: &CallerContext,
    subject: &ErasureSubject,
    batch: Option<usize>,
) -> Result<(), StoreError> {
    check_admin(ctx, "erase a subject", None)?;
    subject.check()?;
    if batch == Some(0) {
        return Err(StoreError::invalid("batch", "must be at least 1"));
    }
    Ok(())
}

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

/// Whether the audit entry `entry` quotes `subject` (its filters or its
/// reason), so that an erasure of it redacts the entry. Entries recording
/// erasures and redactions keep their subject (what was erased is kept).
pub fn quotes_subject(entry: &AuditEntry, subject: &ErasureSubject) -> bool {
    if entry.kind == ERASURE_AUDIT_KIND || entry.kind == REDACTION_AUDIT_KIND {
        return false;
    }
    if entry.filters.as_ref() == Some(&redacted_filters()) {
        return false;
    }
    let value = subject.parts().1;
    let quoted = |text: &str| match subject {
        ErasureSubject::Entity(_) => mentions(text, value),
        _ => text.contains(value),
    };
    entry
        .filters
        .as_ref()
        .is_some_and(|f| quoted(&f.to_string()))
        || entry.reason.as_deref().is_some_and(quoted)
}

/// `entry` as redaction leaves it: quoted filters and reason replaced.
pub fn redact_entry(entry: &AuditEntry) -> AuditEntry {
    let mut out = entry.clone();
    if out.filters.is_some() {
        out.filters = Some(redacted_filters());
    }
    if out.reason.is_some() {
        out.reason = Some(REDACTED_REASON.to_owned());
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_erasures() {
        let ctx = CallerContext::system();
        let subject = ErasureSubject::Entity("acme".into());
        let mut e = AuditEntry::new(&ctx, AuditOp::Search, "fact");
        e.filters = Some(json!({"text": "deals with Acme"}));
        assert!(quotes_subject(&e, &subject));
        let r = redact_entry(&e);
        assert_eq!(r.filters, Some(redacted_filters()));
        assert!(!quotes_subject(&r, &subject));
        e.kind = ERASURE_AUDIT_KIND.into();
        assert!(!quotes_subject(&e, &subject));
    }
}
