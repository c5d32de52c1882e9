//! Each tool's input schema with the stores' rules, and the check of a
//! call's arguments against it.

use openvibe_api::ErrorBody;
use serde_json::Value;

use super::MemoryTools;

/// The input schema of the tool `tool` as rmcp gives it (`schemars`: the
/// arguments type at the root, the types it uses in `$defs`) with the
/// stores' rules: the tool's rows of `rules::TOOL_RULES`, the document's
/// rows for the types it uses, every object closed as the document's are
/// (`close_objects`), and the relations between properties. Returns the
/// schema and the rows for this tool that found no property.
pub(super) fn tool_schema(
    tool: &str,
    input: &serde_json::Map<String, Value>,
) -> (serde_json::Map<String, Value>, Vec<String>) {
    use crate::rules::{ARGUMENTS, retarget};
    let mut root = input.clone();
    let mut schemas = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => serde_json::Map::new(),
    };
    schemas.insert(ARGUMENTS.to_owned(), Value::Object(root));
    retarget(&mut schemas, "#/$defs/", "#/components/schemas/");
    crate::rules::add_json_schemas(&mut schemas);
    // The document's rows name the types they are about; most are absent.
    let _absent = crate::rules::constrain(&mut schemas);
    let missed = crate::rules::constrain_tool(tool, &mut schemas);
    crate::openapi::close_objects(&mut schemas);
    let _absent = crate::rules::relate(&mut schemas);
    retarget(&mut schemas, "#/components/schemas/", "#/$defs/");
    let mut root = match schemas.remove(ARGUMENTS) {
        Some(Value::Object(root)) => root,
        _ => serde_json::Map::new(),
    };
    root.insert("$defs".to_owned(), Value::Object(schemas));
    (root, missed)
}

/// Each tool's compiled input schema, by name.
fn argument_validators() -> &'static std::collections::HashMap<String, jsonschema::Validator> {
    static VALIDATORS: std::sync::OnceLock<
        std::collections::HashMap<String, jsonschema::Validator>,
    > = std::sync::OnceLock::new();
    VALIDATORS.get_or_init(|| {
        MemoryTools::router()
            .list_all()
            .into_iter()
            .filter_map(|tool| {
                let schema = Value::Object(tool.input_schema.as_ref().clone());
                crate::contract::compile_schema(&tool.name, &schema)
                    .map(|v| (tool.name.to_string(), v))
            })
            .collect()
    })
}

/// Why `arguments` are not what the tool `name` takes (as the HTTP API
/// refuses a body its document refuses), after integral floats are read
/// as the integers they are; `None` when they are.
pub(super) fn refused_arguments(name: &str, arguments: &mut Value) -> Option<ErrorBody> {
    let validator = argument_validators().get(name)?;
    crate::contract::integral(arguments);
    crate::contract::refusal(validator, crate::contract::Part::Arguments, arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_rule_finds_its_argument_and_every_schema_compiles() {
        let mut titles = Vec::new();
        for tool in MemoryTools::generated_router().list_all() {
            let (_, missed) = tool_schema(&tool.name, &tool.input_schema);
            assert!(missed.is_empty(), "{}: {missed:?}", tool.name);
            titles.push(tool.name.to_string());
        }
        for name in crate::rules::tool_rule_types() {
            assert!(titles.iter().any(|t| t == name), "no tool {name}");
        }
        assert_eq!(
            argument_validators().len(),
            MemoryTools::tools().len(),
            "every input schema compiles"
        );
    }

    #[test]
    fn arguments_are_checked_against_the_tools_schema() {
        let mut args = json!({"content": "  "});
        let body = refused_arguments("saveMemory", &mut args).unwrap();
        assert_eq!(body.error.pointer.as_deref(), Some("/content"));
        let mut args = json!({"content": "fine", "creator": "agent:x"});
        let body = refused_arguments("saveMemory", &mut args).unwrap();
        assert_eq!(body.error.pointer.as_deref(), Some("/creator"));
        let mut args = json!({"limit": 10.0, "status": "any"});
        assert!(refused_arguments("listProposals", &mut args).is_none());
        assert_eq!(args["limit"], json!(10));
        let mut args = json!({"status": "someday"});
        assert!(refused_arguments("listProposals", &mut args).is_some());
        let mut args = json!({"plan_id": "p1", "key": "", "value": 1});
        assert!(refused_arguments("setPlanState", &mut args).is_some());
    }
}
