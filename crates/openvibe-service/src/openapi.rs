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
        parameters.extend(query_params(query(generator), generator));
    }
    if !op.public {
        parameters.extend([
            json!({"$ref": "#/components/parameters/Project"}),
            json!({"$ref": "#/components/parameters/Caller"}),
        ]);
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
fn query_params(schema: Schema, generator: &SchemaGenerator) -> Vec<Value> {
    let definition = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .and_then(|name| generator.definitions().get(name))
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

/// The service's OpenAPI 3.1 document.
pub fn openapi_document() -> Value {
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
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
            "parameters": {
                "Project": {
                    "name": openvibe_api::PROJECT_HEADER,
                    "in": "header",
                    "required": false,
                    "description": "The project the request works in: one the API key's `projects` \
                                    grant (any for a trusted key), else 403. None: no project.",
                    "schema": {"type": "string"},
                },
                "Caller": {
                    "name": openvibe_api::CALLER_HEADER,
                    "in": "header",
                    "required": false,
                    "description": "The caller a trusted runtime's key acts for (JSON: tenant, \
                                    principal, project, clearance, grants, source, tool). An \
                                    ordinary key may state only its own identity (to name a \
                                    project); any other is 403.",
                    "schema": {"type": "string"},
                },
            },
        },
        "security": [{"apiKey": []}],
    })
}
