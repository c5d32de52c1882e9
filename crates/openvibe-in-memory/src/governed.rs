//! Namespace maintenance written once for the stores that keep governed
//! records by id (proposals, beliefs): counts per namespace, moves and the
//! deletion of expired records, each change audited.

use std::collections::BTreeMap;

use chrono::Utc;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, NamespaceScope, RecordMeta, StoreError,
};

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

/// Delete at most `batch` expired records of `table` in `scope` (and the
/// projects `ctx` sees), each audited as a delete of `kind`; how many went.
pub(crate) fn delete_expired<T>(
    audit: &InMemoryAuditLog,
    ctx: &CallerContext,
    kind: &str,
    table: &mut BTreeMap<String, T>,
    meta: impl Fn(&T) -> &RecordMeta,
    scope: &NamespaceScope,
    batch: usize,
) -> u64 {
    let now = Utc::now();
    let expired: Vec<String> = table
        .iter()
        .filter(|(_, r)| {
            let m = meta(r);
            m.is_expired(now)
                && scope.contains(&m.namespace)
                && ctx.sees_project(m.project_id.as_deref())
        })
        .map(|(id, _)| id.clone())
        .take(batch)
        .collect();
    for id in &expired {
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
    expired.len() as u64
}
