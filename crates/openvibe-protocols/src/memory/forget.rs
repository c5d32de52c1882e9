//! The rules of an erasure every backend and the erasure driver (the
//! memory layer's `forget`) share: who may run one ([`check_erasure`]), and
//! which audit entries quote its subject and how they read once redacted
//! ([`quotes_subject`], [`redact_entry`]; [`AuditLog::redact`](super::AuditLog::redact)).

use super::{
    AuditEntry, CallerContext, ERASURE_AUDIT_KIND, ErasureSubject, REDACTED_REASON,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AuditOp;
    use serde_json::json;

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
