//! Extractors whose rejections are [`Failure`]s: JSON bodies named by a
//! JSON pointer when malformed, query strings.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use openvibe_api::{ErrorBody, ErrorCode};
use serde::de::DeserializeOwned;

use crate::error::Failure;

/// A JSON body: malformed JSON, a wrong type or an unknown field is a 400
/// whose `pointer` says where; a body over the limit is a 413.
#[derive(Debug, Clone)]
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Failure;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                Failure::new(ErrorCode::PayloadTooLarge, rejection.body_text())
            } else {
                Failure::body(ErrorBody::malformed("", rejection.body_text()))
            }
        })?;
        parse(&bytes).map(Body)
    }
}

/// `bytes` as a `T`, or a 400 naming where it is wrong.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Failure> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let pointer = pointer(e.path());
        let inner = e.into_inner();
        let message = if pointer.is_empty() {
            format!("the body is not valid: {inner}")
        } else {
            format!("`{pointer}`: {inner}")
        };
        Failure::body(ErrorBody::malformed(pointer, message))
    })
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
                out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// Query-string parameters; a malformed one is a 400.
#[derive(Debug, Clone)]
pub struct Params<T>(pub T);

impl<S, T> FromRequestParts<S> for Params<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|rejection| Failure::body(ErrorBody::malformed("?", rejection.body_text())))
    }
}

/// A JSON body of a protocol type, which (flattening its metadata) cannot
/// refuse unknown fields itself: parsed as [`Body`] does, then every
/// top-level key of the body must be a field the type has (a key whose
/// value is `null` is allowed: an absent optional field). A 400 names the
/// first unknown one.
#[derive(Debug, Clone)]
pub struct Record<T>(pub T);

impl<S, T> FromRequest<S> for Record<T>
where
    S: Send + Sync,
    T: DeserializeOwned + serde::Serialize,
{
    type Rejection = Failure;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Body(raw) = Body::<serde_json::Value>::from_request(req, state).await?;
        let value: T = parse(raw.to_string().as_bytes())?;
        if let serde_json::Value::Object(given) = &raw {
            let known = serde_json::to_value(&value)
                .map_err(|e| Failure::body(ErrorBody::malformed("", e.to_string())))?;
            let known = known.as_object();
            let unknown = given.iter().find(|(key, v)| {
                !v.is_null() && !known.is_some_and(|k| k.contains_key(key.as_str()))
            });
            if let Some((key, _)) = unknown {
                return Err(Failure::body(ErrorBody::malformed(
                    format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                    format!("unknown field `{key}`"),
                )));
            }
        }
        Ok(Self(value))
    }
}
