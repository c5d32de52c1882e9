//! The OpenAPI 3.1 document, generated from the endpoint table
//! ([`openvibe_api::endpoints`], which the router serves exactly): each
//! endpoint names its request, query and response types, whose JSON Schemas
//! (draft 2020-12, as OpenAPI 3.1 uses) `schemars` derives from the types.

use openvibe_api::ErrorBody;
use openvibe_api::endpoints::{self, Operation};
use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// The OpenAPI operation object of `op`.
fn operation(op: &Operation, generator: &mut SchemaGenerator) -> Value {
    let mut parameters: Vec<Value> = path_params(op.path)
        .map(|name| {
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
        })
        .collect();
    if let Some(query) = op.query {
        let schema = query(generator);
        parameters.extend(query_params(schema, generator.definitions()));
    }
    if !op.public {
        parameters.push(json!({"$ref": "#/components/parameters/Project"}));
    }
    let tag = op
        .path
        .trim_start_matches("/v1/memory/")
        .split('/')
        .next()
        .unwrap_or("")
        .trim_start_matches('/');
    let mut out = Map::new();
    out.insert("operationId".into(), json!(op.operation_id));
    out.insert("summary".into(), json!(op.summary));
    out.insert("tags".into(), json!([tag]));
    if !parameters.is_empty() {
        out.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(body) = op.body {
        out.insert(
            "requestBody".into(),
            json!({"required": true, "content": {"application/json": {"schema": body(generator)}}}),
        );
    }
    let mut responses = Map::new();
    match op.response {
        Some(response) => responses.insert(
            "200".into(),
            json!({"description": "OK", "content": {"application/json": {"schema": response(generator)}}}),
        ),
        None => responses.insert("204".into(), json!({"description": "Done, no content"})),
    };
    let error = generator.subschema_for::<ErrorBody>();
    responses.insert(
        "default".into(),
        json!({
            "description": "An error: 400 malformed or invalid, 401 no or unknown API key, \
                            403 refused by policy, 404 not found, 409 conflict, 413 too large, \
                            503 saturated (see retry-after), 504 timed out",
            "content": {"application/json": {"schema": error}}
        }),
    );
    out.insert("responses".into(), Value::Object(responses));
    if op.public {
        out.insert("security".into(), json!([]));
    }
    Value::Object(out)
}

/// The `{name}` segments of `path`.
fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// A struct's fields as query parameters (`schema` refers to its definition).
fn query_params(schema: Schema, definitions: &Map<String, Value>) -> Vec<Value> {
    let definition = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .and_then(|name| definitions.get(name))
        .cloned()
        .unwrap_or_else(|| schema.to_value());
    let required: Vec<&str> = definition
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    definition
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| {
                    let mut schema = schema.clone();
                    let description = schema
                        .as_object_mut()
                        .and_then(|o| o.remove("description"))
                        .unwrap_or(Value::Null);
                    let mut param = json!({
                        "name": name,
                        "in": "query",
                        "required": required.contains(&name.as_str()),
                        "schema": schema,
                    });
                    if !description.is_null() {
                        param["description"] = description;
                    }
                    param
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The service's OpenAPI 3.1 document, as a governed server serves it
/// (every operation but the public ones needs an API key).
///
/// It is exact: the server validates every JSON body and query string
/// against its operation's schema in this document before reading it
/// (so what the document refuses, the server refuses), and the document
/// states the server's own checks (empty strings, ranges, cursors, times),
/// so what it allows, the server takes. `cargo xtask api-fuzz` checks both
/// with a property-based tester.
pub fn openapi_document() -> Value {
    static DOCUMENT: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOCUMENT.get_or_init(build_document).clone()
}

/// The document a development-mode server serves: the same, without the
/// API key it does not ask for.
pub fn development_document() -> Value {
    let mut doc = openapi_document();
    if let Some(doc) = doc.as_object_mut() {
        // No key; a caller may be stated.
        doc.insert("security".into(), json!([{}, {"caller": []}]));
        if let Some(Value::Object(schemes)) = doc
            .get_mut("components")
            .and_then(|c| c.get_mut("securitySchemes"))
        {
            schemes.remove("apiKey");
        }
    }
    if let Some(Value::Object(paths)) = doc.get_mut("paths") {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in item.values_mut().filter_map(Value::as_object_mut) {
                op.remove("security");
            }
        }
    }
    doc
}

/// `doc` stating the embedding model's `dimensions` where a request gives
/// an embedding (the store refuses any other length).
pub fn with_model(mut doc: Value, dimensions: usize) -> Value {
    for (schema, property) in [
        ("NewKnowledge", "embedding"),
        ("KnowledgeQuery", "embedding"),
    ] {
        let pointer = format!("/components/schemas/{schema}/properties/{property}");
        if let Some(Value::Object(p)) = doc.pointer_mut(&pointer) {
            p.insert("minItems".into(), json!(dimensions));
            p.insert("maxItems".into(), json!(dimensions));
        }
    }
    doc
}

fn build_document() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    });
    let mut generator = settings.into_generator();
    let mut paths = Map::new();
    for op in endpoints::all() {
        let operation = operation(&op, &mut generator);
        let item = paths
            .entry(op.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(op.method.as_str().to_ascii_lowercase(), operation);
        }
    }
    generator.subschema_for::<openvibe_api::Caller>();
    let mut schemas = generator.take_definitions(true);
    crate::rules::add_json_schemas(&mut schemas);
    // A rule that finds no property is caught by `rules`' own test.
    let _missed = crate::rules::constrain(&mut schemas);
    close_objects(&mut schemas);
    let _missed = crate::rules::relate(&mut schemas);
    // Query parameters again, from the definitions as the rules left them.
    for op in endpoints::all() {
        let Some(query) = op.query else { continue };
        let params = query_params(query(&mut generator), &schemas);
        let method = op.method.as_str().to_ascii_lowercase();
        if let Some(Value::Array(list)) = paths
            .get_mut(op.path)
            .and_then(|item| item.get_mut(&method))
            .and_then(|o| o.get_mut("parameters"))
        {
            list.retain(|p| p.get("in").and_then(Value::as_str) != Some("query"));
            list.splice(0..0, params);
        }
    }
    link_created_records(&mut paths, &schemas);
    for value in schemas.values_mut().chain(paths.values_mut()) {
        plain_descriptions(value);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "openvibe memory service",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A governed memory shared by agents, people and machines: facts, episodes, \
                            insights, sessions, plans, task and plan contexts, plan-scoped working \
                            memory, semantic knowledge, the audit trail. Every request is governed \
                            as the caller its API key names.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "apiKey": {"type": "http", "scheme": "bearer"},
                "caller": {
                    "type": "apiKey",
                    "in": "header",
                    "name": openvibe_api::CALLER_HEADER,
                    "description": "The caller a trusted runtime's key acts for: JSON of the \
                                    `Caller` schema (non-ASCII characters escaped). An ordinary \
                                    key may state only its own identity (to name a project); any \
                                    other is 403. In development mode it states the caller.",
                },
            },
            "parameters": {
                "Project": {
                    "name": openvibe_api::PROJECT_HEADER,
                    "in": "header",
                    "required": false,
                    "description": "The project the request works in: one the API key's `projects` \
                                    grant (any for a trusted key), else 403. None: no project.",
                    "schema": {"type": "string"},
                }
            },
        },
        "security": [{"apiKey": []}, {"apiKey": [], "caller": []}],
    })
}

/// Every `description` under `value` read as plain Markdown: the rustdoc
/// links the types' doc comments carry (`` [`Goal::fingerprint`] ``, with or
/// without a `(path)` target) become the code they name, which a reader of
/// the document can look up, instead of links into Rust paths.
fn plain_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(text) if key == "description" => *text = plain_links(text),
                    _ => plain_descriptions(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

/// `text` with each rustdoc link `` [`x`] `` or `` [`x`](target) `` as `` `x` ``.
fn plain_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        let Some(end) = rest[start..].find("`]").map(|e| start + e) else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(&rest[start + 1..end + 1]);
        rest = &rest[end + 2..];
        if rest.starts_with('(')
            && let Some(close) = rest.find(')')
        {
            rest = &rest[close + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// OpenAPI links from each operation that creates a record (`POST` to a
/// path without parameters, answering a schema with an `id`) to the
/// operations on that record (`<path>/{id}`, `<path>/{id}/decide`, ...),
/// with the id of its answer: what a client (and the API tester's stateful
/// phase) follows from create to get, decide and retire.
fn link_created_records(paths: &mut Map<String, Value>, schemas: &Map<String, Value>) {
    let answers_an_id = |op: &Value| {
        let schema = op.pointer("/responses/200/content/application~1json/schema");
        let name = schema
            .and_then(|s| s.get("$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next());
        name.and_then(|n| schemas.get(n))
            .and_then(|s| s.pointer("/properties/id"))
            .is_some()
    };
    let mut links: Vec<(String, String)> = Vec::new();
    for (create, item) in paths.iter() {
        let Some(post) = item.get("post") else {
            continue;
        };
        if create.contains('{') || !answers_an_id(post) {
            continue;
        }
        let record = format!("{create}/{{id}}");
        let below = format!("{record}/");
        for (path, target) in paths.iter() {
            if path != &record && !path.starts_with(&below) {
                continue;
            }
            let Some(target) = target.as_object() else {
                continue;
            };
            for op in target.values() {
                if let Some(id) = op.get("operationId").and_then(Value::as_str) {
                    links.push((create.clone(), id.to_owned()));
                }
            }
        }
    }
    for (create, operation_id) in links {
        let Some(Value::Object(response)) = paths
            .get_mut(&create)
            .and_then(|i| i.pointer_mut("/post/responses/200"))
        else {
            continue;
        };
        let links = response
            .entry("links")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(links) = links {
            links.insert(
                operation_id.clone(),
                json!({
                    "operationId": operation_id,
                    "parameters": {"id": "$response.body#/id"},
                }),
            );
        }
    }
}

/// Make every object schema of `schemas` (the components) say what the
/// server does with a property it does not know: refuse it. A schema with
/// `properties` and no `additionalProperties` gets `false`; one that also
/// refers to a base (`$ref` beside `properties`: an internally tagged
/// variant, whose tag is not the base's) gets `unevaluatedProperties:
/// false` instead, and the base it refers to stays open (the variant
/// closes it). Every `date-time` string also gets the pattern the server
/// reads times with ([`DATE_TIME_PATTERN`]).
pub(crate) fn close_objects(schemas: &mut Map<String, Value>) {
    let mut bases = std::collections::HashSet::new();
    for schema in schemas.values() {
        collect_bases(schema, &mut bases);
    }
    for (name, schema) in schemas.iter_mut() {
        // Errors are answers, not input: their messages may quote it.
        if name == "ApiError" || name == "ErrorBody" {
            continue;
        }
        close(schema, !bases.contains(name.as_str()));
    }
}

/// The names of the definitions a `$ref` beside `properties` refers to.
fn collect_bases(schema: &Value, bases: &mut std::collections::HashSet<String>) {
    match schema {
        Value::Object(o) => {
            if o.contains_key("properties")
                && let Some(name) = o
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                bases.insert(name.to_owned());
            }
            o.values().for_each(|v| collect_bases(v, bases));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_bases(v, bases)),
        _ => {}
    }
}

/// [`close_objects`] on one schema and its subschemas (`top`: this schema
/// may be closed; false for an open base's own top level).
fn close(schema: &mut Value, top: bool) {
    match schema {
        Value::Object(o) => {
            let composite = ["allOf", "anyOf", "oneOf", "$ref"]
                .iter()
                .any(|k| o.contains_key(*k));
            // Only a type's own object schema: a fragment a rule added
            // (`not`, an `anyOf` arm) names some properties, not all.
            if o.contains_key("properties")
                && o.get("type").and_then(Value::as_str) == Some("object")
                && !o.contains_key("additionalProperties")
                && !o.contains_key("unevaluatedProperties")
            {
                if o.contains_key("$ref") {
                    o.insert("unevaluatedProperties".into(), Value::Bool(false));
                } else if top && !composite {
                    o.insert("additionalProperties".into(), Value::Bool(false));
                }
            }
            if o.get("format").and_then(Value::as_str) == Some("date-time")
                && !o.contains_key("pattern")
            {
                o.insert("pattern".into(), Value::from(DATE_TIME_PATTERN));
            }
            // No NUL in any text or key: PostgreSQL text cannot hold one,
            // and every store refuses it.
            let is_string = match o.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            if is_string
                && !o.contains_key("pattern")
                && !o.contains_key("enum")
                && !o.contains_key("const")
            {
                o.insert("pattern".into(), Value::from(crate::rules::NO_NUL));
            }
            let is_map = o.get("type").and_then(Value::as_str) == Some("object")
                && !o.contains_key("properties")
                && o.get("additionalProperties")
                    .is_some_and(|a| a != &Value::Bool(false));
            if is_map && !o.contains_key("propertyNames") {
                o.insert(
                    "propertyNames".into(),
                    json!({"pattern": crate::rules::NO_NUL}),
                );
            }
            // Integers within their Rust type, as the server reads them.
            let bounds = match o.get("format").and_then(Value::as_str) {
                // PostgreSQL keeps counts as `bigint`: every backend's limit.
                Some("uint64" | "uint") => Some((json!(0), json!(i64::MAX))),
                Some("int64" | "int") => Some((json!(i64::MIN), json!(i64::MAX))),
                Some("uint32") => Some((json!(0), json!(u32::MAX))),
                Some("int32") => Some((json!(i32::MIN), json!(i32::MAX))),
                Some("uint16") => Some((json!(0), json!(u16::MAX))),
                Some("uint8") => Some((json!(0), json!(u8::MAX))),
                // `f32::MAX` as serde writes it (shortest digits), which
                // still reads back as `f32::MAX`.
                Some("float") => Some((json!(-3.402_823_5e38), json!(3.402_823_5e38))),
                _ => None,
            };
            if let Some((min, max)) = bounds {
                o.entry("minimum").or_insert(min);
                o.entry("maximum").or_insert(max);
            }
            for (key, value) in o.iter_mut() {
                match key.as_str() {
                    // Data, not schemas.
                    "default" | "examples" | "enum" | "const" | "required" => {}
                    // Maps of schemas.
                    "properties" | "$defs" | "patternProperties" | "dependentSchemas" => {
                        if let Value::Object(props) = value {
                            props.values_mut().for_each(|v| {
                                any_json_without_nul(v);
                                close(v, true);
                            });
                        }
                    }
                    _ => close(value, true),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| close(v, true)),
        _ => {}
    }
}

/// A property that takes any JSON takes JSON without a NUL in a string or
/// key (`check_json`): the `Json` component.
fn any_json_without_nul(schema: &mut Value) {
    const SHAPES: [&str; 8] = [
        "type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "not",
    ];
    match schema {
        Value::Bool(true) => *schema = json!({"$ref": "#/components/schemas/Json"}),
        Value::Object(o) if !SHAPES.iter().any(|k| o.contains_key(*k)) => {
            o.insert("$ref".into(), json!("#/components/schemas/Json"));
        }
        _ => {}
    }
}

/// The times the server reads (RFC 3339, as `chrono` parses them): a
/// calendar date that exists (29 February only in leap years), `T`, a
/// time of day to the second (no leap second), up to nine digits of a
/// fraction, and `Z` or an offset. Digits are `[0-9]`: a pattern's `\d`
/// also matches other scripts' digits in some testers.
pub const DATE_TIME_PATTERN: &str = concat!(
    "^(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])",
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)",
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))",
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)",
    "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?",
    "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
);

#[cfg(test)]
mod tests {

    #[test]
    fn rustdoc_links_read_as_code() {
        assert_eq!(
            super::plain_links(
                "see [`Goal::fingerprint`](openvibe_protocols::Goal::fingerprint), 0 to [`MAX`]."
            ),
            "see `Goal::fingerprint`, 0 to `MAX`."
        );
        assert_eq!(super::plain_links("no link [x] here"), "no link [x] here");
        assert_eq!(super::plain_links("open [`a"), "open [`a");
    }

    use super::*;

    #[test]
    fn every_rule_finds_its_property() {
        let doc = openapi_document();
        let mut schemas = doc["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(crate::rules::constrain(&mut schemas), Vec::<String>::new());
        assert_eq!(crate::rules::relate(&mut schemas), Vec::<String>::new());
    }

    #[test]
    fn the_development_document_asks_for_no_key() {
        let doc = development_document();
        assert_eq!(doc["security"], json!([{}, {"caller": []}]));
        assert!(doc.pointer("/components/securitySchemes/apiKey").is_none());
        let governed = openapi_document();
        assert_eq!(governed["security"][0], json!({"apiKey": []}));
    }
}
