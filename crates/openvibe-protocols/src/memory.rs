//! V1 key/value memory and the error type shared by every memory store.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What went wrong in a memory store. Shared by every store trait so that
/// callers handle one vocabulary whatever the backend.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The record does not exist (or is not visible to the caller).
    #[error("{kind} `{id}` not found")]
    NotFound {
        /// Record kind (`fact`, `episode`, ...).
        kind: &'static str,
        /// Record id.
        id: String,
    },
    /// The caller may not do this; nothing was changed.
    #[error("{principal} may not {operation}: {reason}")]
    Unauthorized {
        /// Who asked.
        principal: String,
        /// What was asked (`delete fact f1`, ...).
        operation: String,
        /// Why it was refused.
        reason: String,
    },
    /// The input is malformed; nothing was written.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The offending field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A concurrent change won (optimistic locking); reload and retry.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The backend failed (database error, poisoned lock, ...).
    #[error("memory backend error: {0}")]
    Backend(String),
}

impl StoreError {
    /// Shorthand for [`StoreError::InvalidInput`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// One remembered item of V1 key/value memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Key within the namespace.
    pub key: String,
    /// The remembered text.
    pub content: String,
    /// Namespace (normally a role id).
    pub namespace: String,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
}

/// V1 memory: namespaced key/value recall. A role without structured agent
/// memory recalls from this into its prompts.
#[async_trait]
pub trait MemoryProvider: Send + Sync {
    /// Store `content` under `namespace`/`key`, replacing any previous value.
    async fn store(&self, namespace: &str, key: &str, content: &str) -> Result<(), StoreError>;

    /// Entries of `namespace` matching `query` (every query term must occur,
    /// case-insensitively; an empty query matches everything), at most `limit`.
    async fn recall(
        &self,
        namespace: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, StoreError>;

    /// Delete `namespace`/`key`. Returns whether something was deleted.
    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError>;
}
