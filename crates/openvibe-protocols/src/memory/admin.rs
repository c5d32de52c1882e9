//! Namespace administration: what maintenance tools (the CLI's
//! `namespaces ls` and `namespaces migrate`) need and agents never get.
//! Privileged callers only.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{CallerContext, StoreError};

/// The record kinds that live in namespaces.
pub const RECORD_KINDS: [&str; 7] = [
    "fact",
    "episode",
    "insight",
    "session",
    "plan",
    "task_context",
    "knowledge",
];

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
