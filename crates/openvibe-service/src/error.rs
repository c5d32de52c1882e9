//! [`Failure`]: an error response.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openvibe_api::{ErrorBody, ErrorCode};
use openvibe_protocols::StoreError;

/// An error response: an [`ErrorBody`] with its status (503 also carries
/// `retry-after`).
#[derive(Debug, Clone)]
pub struct Failure(Box<ErrorBody>);

impl Failure {
    /// A failure with only a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::body(ErrorBody::new(code, message))
    }

    /// The failure `body` describes.
    pub fn body(body: ErrorBody) -> Self {
        Self(Box::new(body))
    }

    /// Its body.
    pub fn error_body(&self) -> &ErrorBody {
        &self.0
    }
}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        Self::body(ErrorBody::from_store(&err))
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            // The message may carry a backend's words (a database error, an
            // embedder's answer): at debug only.
            tracing::warn!(code = ?self.0.error.code, "request failed");
            tracing::debug!(code = ?self.0.error.code, message = %self.0.error.message, "request failed");
        } else {
            tracing::debug!(code = ?self.0.error.code, message = %self.0.error.message, "request refused");
        }
        let retry = self.0.error.code == ErrorCode::Unavailable;
        let mut response = (status, Json(*self.0)).into_response();
        if retry {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}
