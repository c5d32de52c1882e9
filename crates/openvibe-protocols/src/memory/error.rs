//! [`StoreError`]: the one error vocabulary of every memory store.

use std::sync::Arc;

/// The underlying error of a [`StoreError`] (a database or I/O error),
/// shared so that the error stays `Clone`.
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in a memory store. Shared by every store trait so that
/// callers handle one vocabulary whatever the backend.
///
/// A backend failure keeps the error it came from ([`std::error::Error::source`])
/// and says whether retrying the same call can help ([`StoreError::is_transient`]).
/// Equality compares what the error says, not its source.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreError {
    /// The record does not exist (or is not visible to the caller).
    NotFound {
        /// Record kind (`fact`, `episode`, ...).
        kind: &'static str,
        /// Record id.
        id: String,
    },
    /// The caller may not do this; nothing was changed.
    Unauthorized {
        /// Who asked.
        principal: String,
        /// What was asked (`delete fact f1`, ...).
        operation: String,
        /// Why it was refused.
        reason: String,
    },
    /// The input is malformed; nothing was written.
    InvalidInput {
        /// The offending field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Each value is well formed but they disagree with each other (a key
    /// result whose target is its baseline, two key results with one id):
    /// a rule between fields that no schema of the wire can state, so the
    /// service answers it with 422 rather than 400. Nothing was written.
    Inconsistent {
        /// The field at fault.
        field: String,
        /// What it disagrees with.
        reason: String,
    },
    /// The write collides with existing data (a unique key, a stale version);
    /// nothing was written. Retrying the same call fails the same way: reload first.
    Conflict {
        /// What collided.
        message: String,
        /// The backend's error, when there is one.
        source: Option<ErrorSource>,
    },
    /// The call took too long: a statement ran past the backend's statement
    /// timeout (it was cancelled and its transaction rolled back), or no
    /// connection came free within the pool's acquire timeout. Nothing was
    /// written. Transient: retrying later may succeed.
    Timeout {
        /// What timed out.
        message: String,
        /// The backend's error, when there is one.
        source: Option<ErrorSource>,
    },
    /// The backend failed (database error, lost connection, poisoned lock, ...).
    Backend {
        /// What failed.
        message: String,
        /// Whether retrying the same call may succeed (a dropped connection,
        /// a pool timeout, a serialization failure), see [`StoreError::is_transient`].
        transient: bool,
        /// The backend's error, when there is one.
        source: Option<ErrorSource>,
    },
}

impl StoreError {
    /// Shorthand for [`StoreError::InvalidInput`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A permanent [`StoreError::Backend`] error without a source.
    pub fn backend(message: impl Into<String>) -> Self {
        Self::Backend {
            message: message.into(),
            transient: false,
            source: None,
        }
    }

    /// A [`StoreError::Backend`] error caused by `source`.
    pub fn backend_from(
        message: impl Into<String>,
        transient: bool,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Backend {
            message: message.into(),
            transient,
            source: Some(Arc::new(source)),
        }
    }

    /// Shorthand for [`StoreError::Inconsistent`].
    pub fn inconsistent(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Inconsistent {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Whether the input was refused, malformed or inconsistent
    /// ([`StoreError::InvalidInput`] or [`StoreError::Inconsistent`]).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Self::InvalidInput { .. } | Self::Inconsistent { .. })
    }

    /// A [`StoreError::Conflict`] without a source.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict {
            message: message.into(),
            source: None,
        }
    }

    /// Whether retrying the same call, unchanged, may succeed: a lost
    /// connection, an exhausted pool, a serialization failure or deadlock.
    /// Not found, refusals, invalid input and conflicts are permanent.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Backend {
                transient: true,
                ..
            } | Self::Timeout { .. }
        )
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { kind, id } => write!(f, "{kind} `{id}` not found"),
            Self::Unauthorized {
                principal,
                operation,
                reason,
            } => write!(f, "{principal} may not {operation}: {reason}"),
            Self::InvalidInput { field, reason } => write!(f, "invalid {field}: {reason}"),
            Self::Inconsistent { field, reason } => write!(f, "inconsistent {field}: {reason}"),
            Self::Conflict { message, .. } => write!(f, "conflict: {message}"),
            Self::Timeout { message, .. } => write!(f, "timed out: {message}"),
            Self::Backend { message, .. } => write!(f, "memory backend error: {message}"),
        }
    }
}

impl std::error::Error for StoreError {
    /// The backend's error itself (downcast it to the backend's type,
    /// e.g. `sqlx::Error`).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Conflict { source, .. }
            | Self::Timeout { source, .. }
            | Self::Backend { source, .. } => source
                .as_deref()
                .map(|s| s as &(dyn std::error::Error + 'static)),
            _ => None,
        }
    }
}

impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::NotFound { kind: a, id: b }, Self::NotFound { kind: c, id: d }) => {
                a == c && b == d
            }
            (
                Self::Unauthorized {
                    principal: a,
                    operation: b,
                    reason: c,
                },
                Self::Unauthorized {
                    principal: d,
                    operation: e,
                    reason: f,
                },
            ) => a == d && b == e && c == f,
            (
                Self::InvalidInput {
                    field: a,
                    reason: b,
                },
                Self::InvalidInput {
                    field: c,
                    reason: d,
                },
            )
            | (
                Self::Inconsistent {
                    field: a,
                    reason: b,
                },
                Self::Inconsistent {
                    field: c,
                    reason: d,
                },
            ) => a == c && b == d,
            (Self::Conflict { message: a, .. }, Self::Conflict { message: b, .. })
            | (Self::Timeout { message: a, .. }, Self::Timeout { message: b, .. }) => a == b,
            (
                Self::Backend {
                    message: a,
                    transient: b,
                    ..
                },
                Self::Backend {
                    message: c,
                    transient: d,
                    ..
                },
            ) => a == c && b == d,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn backend_errors_keep_their_source_and_transience() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = StoreError::backend_from("connection lost", true, io);
        assert!(e.is_transient());
        assert_eq!(e.to_string(), "memory backend error: connection lost");
        let source = e.source().map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("reset by peer"));
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionReset),
            "the source is the backend's own error type"
        );
        assert!(!StoreError::backend("lock poisoned").is_transient());
        assert!(StoreError::backend("x").source().is_none());
        assert!(!StoreError::conflict("duplicate id").is_transient());
        assert!(!StoreError::invalid("id", "empty").is_transient());
    }

    #[test]
    fn equality_ignores_the_source() {
        let a = StoreError::backend_from("down", true, std::fmt::Error);
        let b = StoreError::Backend {
            message: "down".into(),
            transient: true,
            source: None,
        };
        assert_eq!(a, b);
        assert_ne!(a, StoreError::backend("down"));
        assert_ne!(StoreError::conflict("x"), StoreError::backend("x"));
    }
}
