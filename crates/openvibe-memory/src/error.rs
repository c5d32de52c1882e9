//! The memory crate's one error type.

use openvibe_protocols::{LlmError, StoreError};

/// What went wrong in the memory core.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A store refused or failed (not found, unauthorized, invalid input, backend).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model call made by `reflect` failed; nothing was stored.
    #[error("reflection failed: {0}")]
    Llm(#[from] LlmError),
    /// The model's reflection output is not a JSON list of insights
    /// (bare, or inside a ```json fence); nothing was stored.
    #[error(
        "the model's reflection output is not a JSON list of insights ({reason}); it began: {excerpt:?}"
    )]
    MalformedReflection {
        /// Why it could not be used.
        reason: String,
        /// The first characters of the output.
        excerpt: String,
    },
    /// The model's answer on how two statements relate names no relation
    /// (`{"relation": "duplicate" | "refines" | "contradicts" | "unrelated"}`).
    #[error(
        "the model's answer names no relation between the two statements; it began: {excerpt:?}"
    )]
    MalformedRelation {
        /// The first characters of the answer.
        excerpt: String,
    },
    /// A memory-filesystem path is malformed; nothing was read or written.
    #[error("invalid memory path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given (shortened when very long).
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A memory-filesystem path cannot be written (identity, references, unknown roots).
    #[error("memory path {path:?} is read-only: {reason}")]
    ReadOnlyPath {
        /// The normalised path.
        path: String,
        /// Why.
        reason: String,
    },
}

impl From<MemoryError> for StoreError {
    /// For the protocol traits (`MemoryProvider`, `EpisodeSink`,
    /// `ContextAssembler`), whose error is [`StoreError`].
    fn from(error: MemoryError) -> Self {
        match error {
            MemoryError::Store(e) => e,
            MemoryError::InvalidPath { path, reason } => {
                StoreError::invalid("path", format!("{path:?}: {reason}"))
            }
            MemoryError::ReadOnlyPath { path, reason } => {
                StoreError::invalid("path", format!("{path:?} is read-only: {reason}"))
            }
            MemoryError::Llm(e) => {
                let transient = e.is_transient();
                StoreError::backend_from(format!("reflection failed: {e}"), transient, e)
            }
            other => StoreError::backend(other.to_string()),
        }
    }
}
