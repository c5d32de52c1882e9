//! Namespace administration: what maintenance tools (the CLI's
//! `namespaces ls` and `namespaces migrate`) need and agents never get.
//! Privileged callers only.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::kinds::{Select, count, names};
use super::{CallerContext, Change, ErasureCount, ErasureSubject, NamespaceScope, StoreError};

/// The record kinds that live in namespaces (the kind registry's
/// namespaced kinds, [`KINDS`](crate::KINDS)).
pub const RECORD_KINDS: [&str; N_RECORD] = names(Select::Namespaced);
const N_RECORD: usize = count(Select::Namespaced);

/// The record kinds that can expire ([`RecordMeta::expires_at`](crate::RecordMeta::expires_at)):
/// the long-lived ones (the kind registry's expiring kinds). Working
/// memory ends with its plan or session.
pub const EXPIRING_KINDS: [&str; N_EXPIRING] = names(Select::Expiring);
const N_EXPIRING: usize = count(Select::Expiring);

/// How many records of one kind one namespace holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamespaceCount {
    /// The record kind (one of [`RECORD_KINDS`]).
    pub kind: String,
    /// The namespace (`""`: records written before namespaces).
    pub namespace: String,
    /// How many.
    pub records: u64,
}

/// Namespace maintenance on a backend.
#[async_trait]
pub trait NamespaceAdmin: Send + Sync {
    /// Records per kind and namespace in the caller's tenant, sorted by
    /// kind then namespace.
    async fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError>;

    /// Move at most `batch` records of `kind` from namespace `from` to `to`
    /// in the caller's tenant; returns how many moved (0: none left). Each
    /// batch is one transaction and each moved record is audited as an
    /// update, so a migration run batch by batch can stop and resume.
    async fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError>;

    /// Delete at most `batch` expired records ([`EXPIRING_KINDS`]) in the
    /// caller's tenant, whoever owns them, in the namespaces of
    /// [`cleanup_scope`] (which refuses callers without a right to clean
    /// up) and the projects the caller sees (its own, and none); returns
    /// how many went (0: none left). One transaction per call;
    /// each deleted record is audited as a delete.
    async fn delete_expired(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError>;

    /// How many records of each of [`ERASURE_KINDS`](crate::ERASURE_KINDS)
    /// in the caller's tenant are about `subject` (expired ones included:
    /// they are still stored), then the derived rows of
    /// [`DERIVED_KINDS`](crate::DERIVED_KINDS) left without their record
    /// (0 on a sound backend). Privileged callers only.
    async fn erasure_counts(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
    ) -> Result<Vec<ErasureCount>, StoreError>;

    /// Delete at most `batch` records about `subject` in the caller's
    /// tenant, kinds in the order of [`ERASURE_KINDS`](crate::ERASURE_KINDS),
    /// with their derived data (vectors, postings, dependent rows), each
    /// audited as a delete; returns how many went per kind (none: nothing
    /// left). One transaction per call, so a run can stop and resume.
    /// Privileged callers only.
    async fn erase(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        batch: usize,
    ) -> Result<Vec<ErasureCount>, StoreError>;
}

/// Where `ctx` may delete expired records, whoever owns them: everywhere
/// when privileged; in the namespaces where its grants give it `manage`
/// and `delete`. Anyone else (an ungoverned caller, or one that manages no
/// namespace, like the seed's restricted IDE caller) may not run a cleanup.
/// A `batch` of 0 is refused as invalid input.
pub fn cleanup_scope(ctx: &CallerContext, batch: usize) -> Result<NamespaceScope, StoreError> {
    if batch == 0 {
        return Err(StoreError::invalid("batch", "must be at least 1"));
    }
    if ctx.is_privileged() {
        return Ok(NamespaceScope::All);
    }
    let managed = ctx
        .grants()
        .map(|g| g.managed(Change::Delete))
        .unwrap_or_default();
    if managed.is_empty() {
        return Err(ctx.unauthorized(
            "delete expired records",
            "a cleanup deletes others' records: it needs the manage and delete rights in a \
             namespace, or a privileged caller",
        ));
    }
    Ok(NamespaceScope::only(managed))
}

/// `Ok` when `ctx` may administer namespaces (privileged), and `kind` is
/// one of [`RECORD_KINDS`] (when given).
pub fn check_admin(
    ctx: &CallerContext,
    operation: &str,
    kind: Option<&str>,
) -> Result<(), StoreError> {
    if !ctx.is_privileged() {
        return Err(ctx.unauthorized(
            operation,
            "namespace administration is for privileged (maintenance) callers only",
        ));
    }
    if let Some(kind) = kind
        && !RECORD_KINDS.contains(&kind)
    {
        return Err(StoreError::invalid(
            "kind",
            format!(
                "`{kind}` is not a record kind ({})",
                RECORD_KINDS.join(", ")
            ),
        ));
    }
    Ok(())
}
