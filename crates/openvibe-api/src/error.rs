//! [`ErrorBody`]: what every failed request answers, and its mapping to and
//! from [`StoreError`].

use openvibe_protocols::RECORD_KINDS;
use openvibe_protocols::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What went wrong, one code per HTTP status the service uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: the body is not the JSON this route takes (`pointer` names where).
    MalformedRequest,
    /// 400: a value breaks a rule of the store (`field` names it).
    InvalidInput,
    /// 422: the values are each well formed but disagree with each other,
    /// by a rule no schema states (`field` names the one at fault).
    InconsistentInput,
    /// 401: no API key, or an unknown one.
    Unauthenticated,
    /// 403: the policy refuses the caller (`reason` says which rule).
    Forbidden,
    /// 404: no such record, or none the caller may see.
    NotFound,
    /// 409: a write lost a race or broke a uniqueness rule; nothing changed.
    Conflict,
    /// 413: the body is larger than the service accepts.
    PayloadTooLarge,
    /// 503: the service is saturated or the database briefly unavailable;
    /// retry after `retry-after` seconds.
    Unavailable,
    /// 504: the request or a statement ran past its time limit.
    Timeout,
    /// 500: anything else.
    Internal,
}

impl ErrorCode {
    /// The HTTP status.
    pub fn status(self) -> u16 {
        match self {
            Self::MalformedRequest | Self::InvalidInput => 400,
            Self::InconsistentInput => 422,
            Self::Unauthenticated => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::Conflict => 409,
            Self::PayloadTooLarge => 413,
            Self::Unavailable => 503,
            Self::Timeout => 504,
            Self::Internal => 500,
        }
    }
}

/// The error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApiError {
    /// What went wrong.
    pub code: ErrorCode,
    /// A sentence for people.
    pub message: String,
    /// The offending field (`invalid_input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Where in the body (`malformed_request`): a JSON pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// The rule that refused (`forbidden`) or why a field is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who was refused (`forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// What was refused (`forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The record kind (`not_found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The record id (`not_found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Whether retrying may succeed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transient: bool,
    /// The request's id (also in the `x-request-id` header and the logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// The body of every error response: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ApiError,
}

impl ErrorBody {
    /// An error with only a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error: ApiError {
                code,
                message: message.into(),
                field: None,
                pointer: None,
                reason: None,
                principal: None,
                operation: None,
                kind: None,
                id: None,
                transient: matches!(code, ErrorCode::Unavailable | ErrorCode::Timeout),
                request_id: None,
            },
        }
    }

    /// A body that is not what the route takes: `pointer` is where.
    pub fn malformed(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let mut body = Self::new(ErrorCode::MalformedRequest, message);
        body.error.pointer = Some(pointer.into());
        body
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.error.code.status()
    }

    /// What a store error answers.
    pub fn from_store(err: &StoreError) -> Self {
        let mut body;
        match err {
            StoreError::NotFound { kind, id } => {
                body = Self::new(ErrorCode::NotFound, err.to_string());
                body.error.kind = Some((*kind).to_owned());
                body.error.id = Some(id.clone());
            }
            StoreError::Unauthorized {
                principal,
                operation,
                reason,
            } => {
                body = Self::new(ErrorCode::Forbidden, err.to_string());
                body.error.principal = Some(principal.clone());
                body.error.operation = Some(operation.clone());
                body.error.reason = Some(reason.clone());
            }
            StoreError::InvalidInput { field, reason } => {
                body = Self::new(ErrorCode::InvalidInput, err.to_string());
                body.error.field = Some(field.clone());
                body.error.reason = Some(reason.clone());
            }
            StoreError::Inconsistent { field, reason } => {
                body = Self::new(ErrorCode::InconsistentInput, err.to_string());
                body.error.field = Some(field.clone());
                body.error.reason = Some(reason.clone());
            }
            StoreError::Conflict { message, .. } => {
                body = Self::new(ErrorCode::Conflict, message.clone());
            }
            StoreError::Timeout { message, .. } => {
                body = Self::new(ErrorCode::Timeout, message.clone());
            }
            StoreError::Backend {
                message, transient, ..
            } => {
                body = Self::new(
                    if *transient {
                        ErrorCode::Unavailable
                    } else {
                        ErrorCode::Internal
                    },
                    message.clone(),
                );
            }
            _ => body = Self::new(ErrorCode::Internal, err.to_string()),
        }
        body
    }

    /// The store error a client reports for this body (the inverse of
    /// [`ErrorBody::from_store`] for every store error).
    pub fn into_store_error(self) -> StoreError {
        let e = self.error;
        let or = |v: Option<String>| v.unwrap_or_default();
        match e.code {
            ErrorCode::NotFound => StoreError::NotFound {
                kind: static_kind(e.kind.as_deref().unwrap_or("record")),
                id: or(e.id),
            },
            ErrorCode::Forbidden => StoreError::Unauthorized {
                principal: or(e.principal),
                operation: or(e.operation),
                reason: e.reason.unwrap_or(e.message),
            },
            ErrorCode::InvalidInput => StoreError::InvalidInput {
                field: or(e.field),
                reason: e.reason.unwrap_or(e.message),
            },
            ErrorCode::InconsistentInput => StoreError::Inconsistent {
                field: or(e.field),
                reason: e.reason.unwrap_or(e.message),
            },
            ErrorCode::MalformedRequest => StoreError::InvalidInput {
                field: e.pointer.unwrap_or_else(|| "body".into()),
                reason: e.message,
            },
            ErrorCode::PayloadTooLarge => StoreError::invalid("body", e.message),
            ErrorCode::Conflict => StoreError::conflict(e.message),
            ErrorCode::Timeout => StoreError::Timeout {
                message: e.message,
                source: None,
            },
            ErrorCode::Unavailable => StoreError::Backend {
                message: e.message,
                transient: true,
                source: None,
            },
            ErrorCode::Unauthenticated => StoreError::Unauthorized {
                principal: "anonymous".into(),
                operation: "use the memory service".into(),
                reason: e.message,
            },
            ErrorCode::Internal => StoreError::backend(e.message),
        }
    }
}

/// The record kinds a `not_found` may name, as the `&'static str`
/// [`StoreError::NotFound`] holds; others read as `record`.
fn static_kind(kind: &str) -> &'static str {
    const OTHERS: [&str; 6] = [
        "plan_context",
        "state",
        "entry",
        "memory_entry",
        "raw_call",
        "record",
    ];
    RECORD_KINDS
        .iter()
        .chain(OTHERS.iter())
        .find(|k| **k == kind)
        .copied()
        .unwrap_or("record")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_error_round_trips() {
        let errors = [
            StoreError::NotFound {
                kind: "plan",
                id: "p1".into(),
            },
            StoreError::Unauthorized {
                principal: "agent:a".into(),
                operation: "write fact `f`".into(),
                reason: "no write right".into(),
            },
            StoreError::invalid("content", "too long"),
            StoreError::conflict("expected version 2, found 3"),
            StoreError::Timeout {
                message: "statement timeout".into(),
                source: None,
            },
            StoreError::Backend {
                message: "connection reset".into(),
                transient: true,
                source: None,
            },
            StoreError::backend("disk full"),
        ];
        for err in errors {
            let body = ErrorBody::from_store(&err);
            let json = serde_json::to_string(&body).unwrap_or_default();
            let back: ErrorBody = serde_json::from_str(&json).unwrap_or(body);
            assert_eq!(back.into_store_error(), err, "{json}");
        }
    }
}
