//! Tools: named, described, schema-typed async functions the model may call.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use openvibe_protocols::ToolDefinition;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A tool the model can call from an [`AgentNode`](crate::AgentNode).
///
/// Write one with the [`tool`](crate::tool) attribute macro — the doc comment
/// becomes the description and the argument types the schema:
///
/// ```
/// use openvibe_primitives::{tool, Tool};
///
/// /// Look up a company in the CRM.
/// #[tool(params(name = "Company name, e.g. Acme"))]
/// async fn lookup_company(name: String, max_results: Option<u32>) -> Result<String, std::io::Error> {
///     Ok(format!("{name}: 200 employees ({} max)", max_results.unwrap_or(1)))
/// }
///
/// let tool = LookupCompany;
/// assert_eq!(tool.name(), "lookup_company");
/// assert_eq!(tool.description(), "Look up a company in the CRM.");
/// assert_eq!(tool.input_schema()["required"], serde_json::json!(["name"]));
/// ```
///
/// or with [`FnTool`] from a closure, or by implementing the trait by hand
/// (for tools that hold a client or other state).
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by (unique within a node).
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments: `{"type": "object", "properties": ..., "required": [...]}`.
    fn input_schema(&self) -> Value;

    /// The authority action this tool performs (e.g. `send_email`), if any.
    /// Under a role, a declared action is checked against the role's
    /// authority before the tool runs.
    fn action(&self) -> Option<&str> {
        None
    }

    /// Whether calls to this tool may run concurrently with other calls of
    /// the same turn. Tools with side effects that must be ordered return false.
    fn parallel_safe(&self) -> bool {
        true
    }

    /// Run the tool. An error is shown to the model as an `is_error` result.
    async fn call(&self, input: Value) -> Result<String, ToolError>;

    /// What the provider is told about the tool.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            input_schema: self.input_schema(),
        }
    }
}

/// A tool failure; its message is what the model sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What went wrong, in words the model can act on.
    pub message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The arguments did not match the tool's schema.
    pub fn invalid_arguments(tool: &str, error: impl fmt::Display) -> Self {
        Self::new(format!("invalid arguments for tool `{tool}`: {error}"))
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// Decision of a [`ToolGate`] about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDecision {
    /// Run the tool.
    Allow,
    /// Do not run it; the reason is returned to the model as an error result.
    Deny(String),
}

/// Decides whether a tool call that declares an action may run
/// (implemented by roles from their authority configuration).
#[async_trait]
pub trait ToolGate: Send + Sync {
    /// Check one call of `tool`, which performs `action` with `input`.
    async fn check(&self, tool: &str, action: &str, input: &Value) -> ToolDecision;

    /// Call `call_id` of `tool` ran and answered `content` (what the model
    /// sees): the gate's owner may act on a result (a role reports the
    /// metrics it names, once per call id). Called for every tool that
    /// answered without an error, whether or not it declares an action.
    /// Default: nothing.
    async fn ran(&self, tool: &str, call_id: &str, content: &str) {
        let _ = (tool, call_id, content);
    }
}

/// The JSON schema of `T` in the shape LLM providers accept as a tool's input
/// schema: subschemas inlined, no `$schema`/`title`, and `type: object`,
/// `properties` and `required` always present.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        map.entry("type").or_insert_with(|| Value::from("object"));
        map.entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        map.entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
    }
    value
}

/// Turn a tool's return value into the text the model sees: strings as they
/// are, anything else as JSON.
pub fn tool_output<T: Serialize>(value: T) -> Result<String, ToolError> {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => Ok(text),
        Ok(other) => Ok(other.to_string()),
        Err(e) => Err(ToolError::new(format!("tool output is not JSON: {e}"))),
    }
}

/// A tool made from a closure over typed arguments.
///
/// ```
/// use openvibe_primitives::{FnTool, Tool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Args { a: i64, b: i64 }
///
/// let add = FnTool::new("add", "Add two integers.", |args: Args| async move {
///     Ok::<_, std::convert::Infallible>(args.a + args.b)
/// });
/// # tokio_test_block(async {
/// assert_eq!(add.call(serde_json::json!({"a": 2, "b": 3})).await.unwrap(), "5");
/// # });
/// # fn tokio_test_block<F: std::future::Future<Output = ()>>(f: F) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
pub struct FnTool<A, F> {
    name: String,
    description: String,
    schema: Value,
    action: Option<String>,
    parallel_safe: bool,
    f: F,
    _args: PhantomData<fn(A)>,
}

impl<A, F> FnTool<A, F> {
    /// A tool named `name` that runs `f` on arguments parsed as `A`.
    pub fn new<Fut, O, E>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        F: Fn(A) -> Fut,
        Fut: Future<Output = Result<O, E>>,
        O: Serialize,
        E: fmt::Display,
    {
        Self {
            name: name.into(),
            description: description.into(),
            schema: input_schema_for::<A>(),
            action: None,
            parallel_safe: true,
            f,
            _args: PhantomData,
        }
    }

    /// Declare the authority action this tool performs.
    #[must_use]
    pub fn action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// Mark calls of this tool as needing to run one at a time.
    #[must_use]
    pub fn sequential(mut self) -> Self {
        self.parallel_safe = false;
        self
    }
}

#[async_trait]
impl<A, F, Fut, O, E> Tool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, E>> + Send,
    O: Serialize,
    E: fmt::Display,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn action(&self) -> Option<&str> {
        self.action.as_deref()
    }

    fn parallel_safe(&self) -> bool {
        self.parallel_safe
    }

    async fn call(&self, input: Value) -> Result<String, ToolError> {
        let args: A = serde_json::from_value(input)
            .map_err(|e| ToolError::invalid_arguments(&self.name, e))?;
        match (self.f)(args).await {
            Ok(out) => tool_output(out),
            Err(e) => Err(ToolError::new(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Inner,
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        x: f64,
    }

    #[test]
    fn schema_is_inlined_and_has_required() {
        let schema = input_schema_for::<Nested>();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$schema").is_none());
        assert!(schema.get("$defs").is_none(), "{schema}");
        assert_eq!(schema["properties"]["inner"]["type"], "object");
        assert_eq!(schema["required"], json!(["inner", "tags"]));
    }

    #[derive(Deserialize, JsonSchema)]
    struct NoArgs {}

    #[test]
    fn empty_argument_struct_still_lists_properties_and_required() {
        let schema = input_schema_for::<NoArgs>();
        assert_eq!(schema["properties"], json!({}));
        assert_eq!(schema["required"], json!([]));
    }

    #[tokio::test]
    async fn fn_tool_reports_bad_arguments_and_errors() {
        #[derive(Deserialize, JsonSchema)]
        struct Args {
            n: u32,
        }
        let t = FnTool::new("half", "Halve an even number.", |a: Args| async move {
            if a.n.is_multiple_of(2) {
                Ok(json!({"half": a.n / 2}))
            } else {
                Err(format!("{} is odd", a.n))
            }
        })
        .action("compute");
        assert_eq!(t.call(json!({"n": 4})).await.unwrap(), r#"{"half":2}"#);
        assert_eq!(
            t.call(json!({"n": 3})).await.unwrap_err().message,
            "3 is odd"
        );
        let bad = t.call(json!({"n": "four"})).await.unwrap_err();
        assert!(
            bad.message.starts_with("invalid arguments for tool `half`"),
            "{bad}"
        );
        assert_eq!(Tool::action(&t), Some("compute"));
        assert_eq!(t.definition().name, "half");
    }

    #[test]
    fn tool_output_keeps_strings_raw() {
        assert_eq!(tool_output("plain").unwrap(), "plain");
        assert_eq!(tool_output(json!([1, 2])).unwrap(), "[1,2]");
        assert_eq!(tool_output(7).unwrap(), "7");
    }
}
