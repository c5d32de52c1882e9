//! The error type of this crate.

use openvibe_protocols::{LlmError, StateError, StoreError};

/// What can go wrong running a node.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model call failed.
    #[error("node `{node}`: LLM call failed: {source}")]
    Llm {
        /// The node.
        node: String,
        /// The provider's error.
        #[source]
        source: LlmError,
    },
    /// The state lacks what the node needs.
    #[error("node `{node}`: {source}")]
    State {
        /// The node.
        node: String,
        /// The state error.
        #[source]
        source: StateError,
    },
    /// Assembling memory context or recording the episode failed.
    #[error("node `{node}`: memory: {source}")]
    Memory {
        /// The node.
        node: String,
        /// The store error.
        #[source]
        source: StoreError,
    },
    /// The agent loop used all its turns without a final answer.
    #[error(
        "node `{node}`: the model still wanted tools after {max_turns} turns; raise max_turns or make the task smaller"
    )]
    MaxTurnsExceeded {
        /// The node.
        node: String,
        /// The limit that was hit.
        max_turns: u32,
    },
    /// The node is misconfigured (e.g. two tools with the same name).
    #[error("node `{node}`: {message}")]
    Config {
        /// The node.
        node: String,
        /// What is wrong.
        message: String,
    },
    /// A node's own work failed (a delegation refused or timed out, ...):
    /// the source is the layer's typed error.
    #[error("node `{node}`: {source}")]
    Failed {
        /// The node.
        node: String,
        /// What failed, typed (downcast it).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A test double's cassette could not be read or written.
    #[error("cassette {path}: {message}")]
    Cassette {
        /// The cassette file.
        path: String,
        /// What failed.
        message: String,
    },
}
