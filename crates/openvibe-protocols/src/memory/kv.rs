//! V1 key/value memory: namespaced recall for roles without structured memory.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::StoreError;

/// One remembered item of V1 key/value memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
