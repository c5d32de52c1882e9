//! The served document is the validator: every JSON body and query string
//! is checked against its operation's schema in the OpenAPI document
//! ([`crate::openapi_document`]) before it is read, so a request the
//! document refuses (a wrong type, an unknown property, an array where an
//! object belongs, an empty string where one is required) is a 400 naming
//! where, and changes nothing. The document states the server's own checks
//! in turn, so what it allows the server takes.
//!
//! One validator per operation, compiled on first use against one registry
//! holding the document.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use jsonschema::{Draft, Registry, Resource, Validator};
use openvibe_api::ErrorBody;
use serde_json::{Map, Number, Value, json};

use crate::error::Failure;

/// The longest validator message a 400 repeats, in bytes.
const MAX_MESSAGE: usize = 400;

/// Where the document is registered.
const DOCUMENT_URI: &str = "urn:openvibe:openapi";

/// What a request carries that its operation's schema checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    /// An MCP tool's arguments.
    Arguments,
    /// The JSON body.
    Body,
    /// The query string, as an object of its parameters.
    Query,
    /// The stated caller's header (the `Caller` schema).
    Caller,
}

impl Part {
    /// What the part is, as a message's subject (`body is`).
    fn noun(self) -> &'static str {
        match self {
            Self::Arguments => "arguments are",
            Self::Body => "body is",
            Self::Query => "query string is",
            Self::Caller => "caller is",
        }
    }
}

/// A part of an operation: `(part, method, path template)`.
type Key = (Part, String, String);

struct Contract {
    registry: Registry,
    document: Value,
    validators: RwLock<HashMap<Key, Option<Arc<Validator>>>>,
}

fn contract() -> Option<&'static Contract> {
    static CONTRACT: OnceLock<Option<Contract>> = OnceLock::new();
    CONTRACT
        .get_or_init(|| {
            let document = crate::openapi::openapi_document();
            let registry =
                Registry::try_new(DOCUMENT_URI, Resource::from_contents(document.clone()))
                    .map_err(|e| tracing::error!("the OpenAPI document does not register: {e}"))
                    .ok()?;
            Some(Contract {
                registry,
                document,
                validators: RwLock::default(),
            })
        })
        .as_ref()
}

/// Check `value` against the schema of `part` of the operation `method`
/// `path` (a path template of the endpoint table); a request of a route
/// outside the table (none today) is not checked.
pub(crate) fn check(part: Part, method: &str, path: &str, value: &Value) -> Result<(), Failure> {
    let Some(validator) = validator(part, method, path) else {
        return Ok(());
    };
    refusal(&validator, part, value).map_or(Ok(()), |body| Err(Failure::body(body)))
}

/// Why `value` is not what `validator` takes (its first error, as a
/// malformed request naming the JSON pointer), or `None`.
pub(crate) fn refusal(validator: &Validator, part: Part, value: &Value) -> Option<ErrorBody> {
    let error = validator.iter_errors(value).next()?;
    let mut location = error.instance_path().to_string();
    // An unknown property is named itself, not the object holding it.
    if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected }
    | jsonschema::error::ValidationErrorKind::UnevaluatedProperties { unexpected } = error.kind()
        && let Some(first) = unexpected.first()
    {
        location = format!("{location}/{}", pointer_token(first));
    }
    // The validator quotes the value: a long one is not repeated back.
    let mut error = error.to_string();
    if error.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        error.truncate(end);
        error.push('…');
    }
    let (pointer, message) = match part {
        Part::Body | Part::Arguments if location.is_empty() => (
            String::new(),
            format!("the {} not valid: {error}", part.noun()),
        ),
        Part::Body => (location.clone(), format!("`{location}`: {error}")),
        Part::Arguments => (location.clone(), format!("argument `{location}`: {error}")),
        Part::Query => (
            format!("?{}", location.trim_start_matches('/')),
            format!(
                "query parameter `{}`: {error}",
                location.trim_start_matches('/')
            ),
        ),
        Part::Caller => (
            format!("header:{}", openvibe_api::CALLER_HEADER),
            format!(
                "the {} header is not a caller: `{location}`: {error}",
                openvibe_api::CALLER_HEADER
            ),
        ),
    };
    Some(ErrorBody::malformed(pointer, message))
}

/// A validator of the self-contained schema `schema` (an MCP tool's input
/// schema, its types in `$defs`), or `None` when it does not compile.
pub(crate) fn compile_schema(name: &str, schema: &Value) -> Option<Validator> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(schema)
        .map_err(|e| tracing::error!("the input schema of {name} does not compile: {e}"))
        .ok()
}

/// The compiled validator of one operation's part, if it has one.
fn validator(part: Part, method: &str, path: &str) -> Option<Arc<Validator>> {
    let contract = contract()?;
    let key = (part, method.to_ascii_lowercase(), path.to_owned());
    if let Some(found) = contract.validators.read().ok()?.get(&key) {
        return found.clone();
    }
    let compiled = compile(contract, part, &key.1, path).map(Arc::new);
    if let Ok(mut cache) = contract.validators.write() {
        cache.insert(key, compiled.clone());
    }
    compiled
}

fn compile(contract: &Contract, part: Part, method: &str, path: &str) -> Option<Validator> {
    // A JSON pointer in a URI fragment: `{` and `}` percent-encoded.
    let escaped = pointer_token(path).replace('{', "%7B").replace('}', "%7D");
    let operation = format!("/paths/{escaped}/{method}");
    let schema = match part {
        Part::Body => {
            let pointer = format!("{operation}/requestBody/content/application~1json/schema");
            contract.document.pointer(&unescape(&pointer))?;
            json!({"$ref": format!("{DOCUMENT_URI}#{pointer}")})
        }
        Part::Query => query_schema(contract, &operation)?,
        Part::Caller => json!({"$ref": format!("{DOCUMENT_URI}#/components/schemas/Caller")}),
        // A tool's arguments have a schema of their own (`compile_schema`).
        Part::Arguments => return None,
    };
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .with_registry(contract.registry.clone())
        .build(&schema)
        .map_err(|e| tracing::error!("the schema of {method} {path} does not compile: {e}"))
        .ok()
}

/// `text` as one token of a JSON pointer (RFC 6901: `~` and `/` escaped).
pub(crate) fn pointer_token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

/// A fragment's pointer as a plain JSON pointer.
fn unescape(pointer: &str) -> String {
    pointer.replace("%7B", "{").replace("%7D", "}")
}

/// The operation's query parameters as one object schema (parameters the
/// document does not name are ignored, as HTTP servers do).
fn query_schema(contract: &Contract, operation: &str) -> Option<Value> {
    let parameters = contract
        .document
        .pointer(&unescape(&format!("{operation}/parameters")))?
        .as_array()?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (i, p) in parameters.iter().enumerate() {
        if p.get("in").and_then(Value::as_str) != Some("query") {
            continue;
        }
        let name = p.get("name").and_then(Value::as_str)?;
        properties.insert(
            name.to_owned(),
            json!({"$ref": format!("{DOCUMENT_URI}#{operation}/parameters/{i}/schema")}),
        );
        if p.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(Value::from(name));
        }
    }
    if properties.is_empty() {
        return None;
    }
    Some(json!({"type": "object", "properties": properties, "required": required}))
}

/// The query string's parameters as a JSON object, each value read as its
/// parameter's schema says (an integer, a number, a boolean, or text): a
/// value that does not read so stays text, for the schema to refuse.
pub(crate) fn query_object(method: &str, path: &str, query: &str) -> Value {
    // Borrowed from the document, which lives as long as the process.
    let types: &[Value] = contract()
        .and_then(|c| {
            let pointer = format!(
                "/paths/{}/{}/parameters",
                pointer_token(path),
                method.to_ascii_lowercase()
            );
            c.document.pointer(&pointer)?.as_array()
        })
        .map_or(&[], Vec::as_slice);
    let type_of = |name: &str| -> Vec<String> {
        types
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.pointer("/schema/type"))
            .map(|t| match t {
                Value::String(s) => vec![s.clone()],
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            })
            .unwrap_or_default()
    };
    let mut out = Map::new();
    for (name, raw) in form_urlencoded::parse(query.as_bytes()) {
        let types = type_of(&name);
        let has = |t: &str| types.iter().any(|x| x == t);
        let value = if has("integer") || has("number") {
            raw.parse::<i64>()
                .map(Value::from)
                .ok()
                .or_else(|| raw.parse::<u64>().map(Value::from).ok())
                .or_else(|| {
                    raw.parse::<f64>()
                        .ok()
                        .and_then(Number::from_f64)
                        .map(Value::Number)
                })
                .unwrap_or_else(|| Value::from(raw.as_ref()))
        } else if has("boolean") && (raw == "true" || raw == "false") {
            Value::Bool(raw == "true")
        } else {
            Value::from(raw.as_ref())
        };
        out.insert(name.into_owned(), value);
    }
    Value::Object(out)
}

/// Numbers written with a fraction of zero (`10.0`) as the integers they
/// are: JSON Schema counts them as integers, and so does the server.
pub(crate) fn integral(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                // Exactly representable in an i64 / u64 (below 2^63 / 2^64).
                if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                    *value = Value::from(f as i64);
                } else if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                    *value = Value::from(f as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral),
        Value::Object(fields) => fields.values_mut().for_each(integral),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_with_path_parameters_is_checked() {
        let path = openvibe_api::endpoints::UPDATE_PLAN.path;
        assert!(path.contains('{'));
        assert!(check(Part::Body, "PUT", path, &json!([null, null])).is_err());
        assert!(check(Part::Body, "PUT", path, &json!({"status": "completed"})).is_ok());
    }

    #[test]
    fn integral_floats_become_integers_and_others_stay() {
        let mut v = json!({"a": 10915020.0, "b": [1.5, -3.0], "c": "2.0", "d": 1e300});
        integral(&mut v);
        assert_eq!(
            v,
            json!({"a": 10915020, "b": [1.5, -3], "c": "2.0", "d": 1e300})
        );
    }

    #[test]
    fn a_body_is_checked_against_its_operation() {
        let path = openvibe_api::endpoints::STORE_FACT.path;
        assert!(check(Part::Body, "POST", path, &json!({"content": "x"})).is_ok());
        for bad in [
            json!([null, null]),
            json!({"content": "x", "nonsense": 1}),
            json!({"content": "x", "nonsense": null}),
            json!({"content": "x", "created_at": "2001-02-29T00:00:00Z"}),
        ] {
            assert!(check(Part::Body, "POST", path, &bad).is_err(), "{bad}");
        }
    }
}
