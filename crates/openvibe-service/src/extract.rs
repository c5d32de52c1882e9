//! Extractors whose rejections are [`Failure`]s: JSON bodies named by a
//! JSON pointer when malformed, query strings.

use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock, RwLock};

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
/// refuse unknown fields itself: read in one pass (the bytes to a JSON
/// value, its keys checked against the type's fields, the value to the
/// type), as [`Body`] reads, and every top-level key of the body must be a
/// field the type has (a key whose value is `null` is allowed: an absent
/// optional field). A 400 names the first unknown one. The type's fields
/// are its JSON Schema's properties (flattened ones included), found once
/// per type.
#[derive(Debug, Clone)]
pub struct Record<T>(pub T);

impl<S, T> FromRequest<S> for Record<T>
where
    S: Send + Sync,
    T: DeserializeOwned + schemars::JsonSchema + 'static,
{
    type Rejection = Failure;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Body(raw) = Body::<serde_json::Value>::from_request(req, state).await?;
        if let serde_json::Value::Object(given) = &raw {
            let known = fields_of::<T>();
            let unknown = given
                .iter()
                .find(|(key, v)| !v.is_null() && !known.contains(key.as_str()));
            if let Some((key, _)) = unknown {
                return Err(Failure::body(ErrorBody::malformed(
                    format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                    format!("unknown field `{key}`"),
                )));
            }
        }
        from_value(&raw).map(Self)
    }
}

/// `value` as a `T`, or a 400 naming where it is wrong (as [`parse`]).
fn from_value<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, Failure> {
    serde_path_to_error::deserialize(value).map_err(malformed)
}

/// The top-level fields of `T`'s JSON form (its schema's properties,
/// flattened fields included), computed once per type.
fn fields_of<T: schemars::JsonSchema + 'static>() -> Arc<HashSet<String>> {
    type Cache = RwLock<HashMap<TypeId, Arc<HashSet<String>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    let id = TypeId::of::<T>();
    if let Some(fields) = cache.read().ok().and_then(|c| c.get(&id).cloned()) {
        return fields;
    }
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let fields: Arc<HashSet<String>> = Arc::new(
        schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default(),
    );
    if let Ok(mut c) = cache.write() {
        c.insert(id, fields.clone());
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::fields_of;

    #[test]
    fn a_records_fields_include_its_flattened_metadata() {
        let fields = fields_of::<openvibe_protocols::Fact>();
        for f in [
            "id",
            "content",
            "namespace",
            "owner",
            "expires_at",
            "confidence",
        ] {
            assert!(fields.contains(f), "{f} in {fields:?}");
        }
        assert!(!fields.contains("meta"));
        assert!(fields_of::<openvibe_protocols::FactQuery>().contains("text"));
    }
}
