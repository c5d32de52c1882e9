//! Hooks through which primitives use memory without depending on it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Episode, StoreError};

/// Token budget used when a node does not set one.
pub const DEFAULT_TOKEN_BUDGET: usize = 2000;

/// What a node's memory context is about, resolved against the workflow state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryScope {
    /// The entity (e.g. `acme_corp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// The domain (e.g. `revenue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Tags; a record matches when it has any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Free-text query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// Turns a [`MemoryScope`] into context text for a system prompt.
///
/// Implemented by the memory core's assembler; a node with a memory scope
/// appends what this returns to its system prompt.
#[async_trait]
pub trait ContextAssembler: Send + Sync {
    /// Context for `scope`, at most `token_budget` tokens; empty when nothing applies.
    async fn assemble(
        &self,
        scope: &MemoryScope,
        token_budget: usize,
    ) -> Result<String, StoreError>;
}

/// Receives the [`Episode`] of every node run (e.g. an agent's memory).
#[async_trait]
pub trait EpisodeSink: Send + Sync {
    /// Record one episode.
    async fn record(&self, episode: Episode) -> Result<(), StoreError>;
}
