//! The crate's error type.

/// A governance file that cannot be used. Nothing is loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The file is malformed or inconsistent: where and why.
    #[error("{path}:{line}:{column}: {key}: {message}")]
    Config {
        /// The file (as named by the caller).
        path: String,
        /// 1-based line (0: unknown).
        line: usize,
        /// 1-based column (0: unknown).
        column: usize,
        /// The offending key, as a path (`session_keys[2].regex`).
        key: String,
        /// What is wrong.
        message: String,
    },
}
