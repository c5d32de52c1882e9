//! Extractors whose rejections are [`Failure`]s: JSON bodies and query
//! strings, checked against their operation in the OpenAPI document, named
//! by a JSON pointer when malformed.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use openvibe_api::{ErrorBody, ErrorCode};
use serde::de::DeserializeOwned;

use crate::contract::{self, Part};
use crate::error::Failure;

/// A JSON body: malformed JSON is a 400; a body its operation's schema in
/// the OpenAPI document refuses (a wrong type, an unknown or missing
/// field, an empty string where text is required, ...) is a 400 whose
/// `pointer` says where ([`crate::contract`]); a body the type then does
/// not read is a 400 too; a body over the limit is a 413.
#[derive(Debug, Clone)]
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Failure;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        checked_json(req, state)
            .await
            .and_then(|v| from_value(&v))
            .map(Body)
    }
}

/// The request's body as JSON, checked against its operation's schema,
/// with integral numbers (`10.0`) as integers.
async fn checked_json<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<serde_json::Value, Failure> {
    let method = req.method().as_str().to_owned();
    let path = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            Failure::new(ErrorCode::PayloadTooLarge, rejection.body_text())
        } else {
            Failure::body(ErrorBody::malformed("", rejection.body_text()))
        }
    })?;
    let mut value: serde_json::Value = parse(&bytes)?;
    contract::integral(&mut value);
    if let Some(path) = path {
        contract::check(Part::Body, &method, &path, &value)?;
    }
    Ok(value)
}

/// `bytes` as a `T`, or a 400 naming where it is wrong.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Failure> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(malformed)
}

/// A body that does not read as its type: a 400 whose pointer says where.
fn malformed(e: serde_path_to_error::Error<serde_json::Error>) -> Failure {
    let pointer = pointer(e.path());
    let inner = e.into_inner();
    let message = if pointer.is_empty() {
        format!("the body is not valid: {inner}")
    } else {
        format!("`{pointer}`: {inner}")
    };
    Failure::body(ErrorBody::malformed(pointer, message))
}

/// A serde path as a JSON pointer (`/items/0/name`).
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out.push_str(&contract::pointer_token(key));
            }
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// Query-string parameters, checked against the operation's parameters in
/// the OpenAPI document (each read as its schema's type) and then read as
/// `T`; a malformed one is a 400 naming it.
#[derive(Debug, Clone)]
pub struct Params<T>(pub T);

impl<S, T> FromRequestParts<S> for Params<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let method = parts.method.as_str();
        let query = parts.uri.query().unwrap_or_default();
        let path = parts
            .extensions
            .get::<MatchedPath>()
            .map(MatchedPath::as_str);
        let value = match path {
            Some(path) => {
                let value = contract::query_object(method, path, query);
                contract::check(Part::Query, method, path, &value)?;
                value
            }
            None => contract::query_object(method, "", query),
        };
        serde_path_to_error::deserialize(&value)
            .map(Params)
            .map_err(|e| {
                let name = pointer(e.path());
                let name = name.trim_start_matches('/');
                Failure::body(ErrorBody::malformed(
                    format!("?{name}"),
                    format!("query parameter `{name}`: {}", e.into_inner()),
                ))
            })
    }
}

/// `value` as a `T`, or a 400 naming where it is wrong (as [`parse`]).
fn from_value<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, Failure> {
    serde_path_to_error::deserialize(value).map_err(malformed)
}
