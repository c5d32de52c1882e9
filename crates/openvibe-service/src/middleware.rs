//! Request id and logs, bounded concurrency, the time limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use openvibe_api::{ErrorBody, ErrorCode, REQUEST_ID_HEADER};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::error::Failure;

/// Error bodies larger than this are passed through untouched.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Give every request an id (the client's `x-request-id` when it is a
/// short printable token, a new UUID otherwise), run it in a span carrying
/// the id (so every log line of the request has it), log its end, and
/// return the id in the response header and in error bodies.
pub(crate) async fn request_id(req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 64
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        })
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned());
    let span = tracing::info_span!(
        "http_request",
        request_id = %id,
        method = %req.method(),
        route = %route,
        tenant = tracing::field::Empty,
        principal = tracing::field::Empty,
    );
    let started = Instant::now();
    let mut response = next.run(req).instrument(span.clone()).await;
    let status = response.status();
    span.in_scope(|| {
        tracing::info!(
            status = status.as_u16(),
            micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "request done"
        );
    });
    if status.is_client_error() || status.is_server_error() {
        response = with_request_id(response, &id).await;
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// `response` with `request_id` set in its error body (when it is one).
async fn with_request_id(response: Response, id: &str) -> Response {
    let (parts, body) = response.into_parts();
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !is_json {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BODY).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let body = match serde_json::from_slice::<ErrorBody>(&bytes) {
        Ok(mut error) => {
            error.error.request_id = Some(id.to_owned());
            serde_json::to_vec(&error).map_or(bytes, Into::into)
        }
        Err(_) => bytes,
    };
    let mut parts = parts;
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// Refuse a request with 503 and `retry-after` when `limit` requests are
/// already in flight (no queue: a saturated service says so at once).
pub(crate) async fn bounded(
    State(limit): State<Arc<Semaphore>>,
    req: Request,
    next: Next,
) -> Response {
    match limit.try_acquire() {
        Ok(_permit) => next.run(req).await,
        Err(_) => Failure::new(
            ErrorCode::Unavailable,
            "the service is at its limit of requests in flight; retry shortly",
        )
        .into_response(),
    }
}

/// End a request that runs past `limit` with 504 (its work is cancelled).
pub(crate) async fn time_limit(
    State(limit): State<Duration>,
    req: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => Failure::new(
            ErrorCode::Timeout,
            format!("the request ran past the service's limit of {limit:?}"),
        )
        .into_response(),
    }
}
