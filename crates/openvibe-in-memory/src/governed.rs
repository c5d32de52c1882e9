//! Namespace maintenance written once for the stores that keep governed
//! records by id (proposals, beliefs): counts per namespace, moves and the
//! deletion of expired records, each change audited.

use std::collections::BTreeMap;

use chrono::Utc;
use openvibe_protocols::{AuditEntry, AuditOp, CallerContext, RecordMeta, StoreError, Sweep};

use crate::audit::InMemoryAuditLog;

/// Give a new record of `kind` `ctx`'s identity at `now` where `ctx` may
/// place it (`operation` names the write in a refusal): owner, tenant,
/// namespace and project from the caller, created and updated now, and its
/// expiry capped by the caller's retention (`expires`), or none.
pub(crate) fn place_new(
    ctx: &CallerContext,
    operation: &str,
    kind: &str,
    meta: &mut RecordMeta,
    now: chrono::DateTime<Utc>,
    expires: bool,
) -> Result<(), StoreError> {
    let placement = ctx.placement(&meta.namespace, operation)?;
    meta.expires_at = if expires {
        ctx.expiry(kind, &placement.namespace, now, meta.expires_at)?
    } else {
        None
    };
    meta.owner = ctx.owner_key();
    meta.tenant_id = ctx.tenant_id().to_owned();
    meta.namespace = placement.namespace;
    meta.project_id = placement.project_id;
    meta.created_at = now;
    meta.updated_at = now;
    Ok(())
}

/// How many of `records` (unexpired) each namespace holds.
pub(crate) fn counts<'a, T: 'a>(
    records: impl Iterator<Item = &'a T>,
    meta: impl Fn(&T) -> &RecordMeta,
) -> BTreeMap<String, u64> {
    let now = Utc::now();
    let mut counts = BTreeMap::new();
    for record in records {
        let m = meta(record);
        if !m.is_expired(now) {
            *counts.entry(m.namespace.clone()).or_insert(0) += 1;
        }
    }
    counts
}

/// Move at most `batch` of `records` (id, meta) from namespace `from` to
/// `to`, each audited as an update of `kind`; how many moved.
pub(crate) fn move_namespace<'a>(
    audit: &InMemoryAuditLog,
    ctx: &CallerContext,
    kind: &str,
    records: impl Iterator<Item = (&'a str, &'a mut RecordMeta)>,
    from: &str,
    to: &str,
    batch: usize,
) -> u64 {
    let now = openvibe_protocols::store_time();
    let mut moved = 0;
    for (id, meta) in records.filter(|(_, m)| m.namespace == from).take(batch) {
        meta.namespace = to.to_owned();
        meta.updated_at = now;
        audit.record(AuditEntry::change(ctx, AuditOp::Update, kind, id, meta));
        moved += 1;
    }
    moved
}

/// One pass of a sweep over a store: count what it takes, or delete at
/// most this many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Count (nothing changes).
    Count,
    /// Delete at most this many.
    Delete(usize),
}

impl Pass {
    /// How many records the pass may take.
    pub(crate) fn limit(self) -> usize {
        match self {
            Self::Count => usize::MAX,
            Self::Delete(n) => n,
        }
    }
}

/// The records of `table` that `sweep` takes for `ctx`: counted, or at
/// most a batch deleted, each audited as a delete of `kind`; how many.
pub(crate) fn sweep<T: serde::Serialize>(
    audit: &InMemoryAuditLog,
    ctx: &CallerContext,
    kind: &str,
    table: &mut BTreeMap<String, T>,
    meta: impl Fn(&T) -> &RecordMeta,
    sweep: &Sweep,
    pass: Pass,
) -> u64 {
    let taken: Vec<String> = table
        .iter()
        .filter(|(_, r)| sweep.takes_record(ctx, meta(r), r))
        .map(|(id, _)| id.clone())
        .take(pass.limit())
        .collect();
    if let Pass::Delete(_) = pass {
        for id in &taken {
            if let Some(gone) = table.remove(id) {
                audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Delete,
                    kind,
                    id,
                    meta(&gone),
                ));
            }
        }
    }
    taken.len() as u64
}
