//! The LLM provider contract: one request in, one response out.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Short model names accepted everywhere a model is named, and what they mean.
///
/// This table is the only place aliases are defined; use [`resolve_model`].
pub const MODEL_ALIASES: &[(&str, &str)] = &[
    ("sonnet", "claude-sonnet-4-5-20250929"),
    ("haiku", "claude-haiku-4-5-20251001"),
    ("opus", "claude-opus-4-6"),
];

/// Resolve a model alias (`sonnet`, `haiku`, `opus`) to a full model id.
/// Any other name is returned unchanged.
///
/// ```
/// use openvibe_protocols::resolve_model;
/// assert_eq!(resolve_model("haiku"), "claude-haiku-4-5-20251001");
/// assert_eq!(resolve_model("llama3.1:8b"), "llama3.1:8b");
/// ```
pub fn resolve_model(name: &str) -> &str {
    MODEL_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, full)| full)
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The user (or the tool results returned on the user's behalf).
    User,
    /// The model.
    Assistant,
}

/// One block of message content, in the shape of the Anthropic Messages API
/// (`{"type": "text", ...}`, `{"type": "tool_use", ...}`, `{"type": "tool_result", ...}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool to be called.
    ToolUse {
        /// Provider-assigned id; the matching result must carry it.
        id: String,
        /// Name of the tool.
        name: String,
        /// Arguments, as a JSON value (normally an object).
        input: Value,
    },
    /// The result of a tool call, sent back to the model.
    ToolResult {
        /// The id of the `ToolUse` block this answers.
        tool_use_id: String,
        /// The tool's output (or the error message when `is_error`).
        content: String,
        /// True when the tool failed or was refused; the model can react to it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// The content of a message: plain text or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Structured blocks (text, tool use, tool results).
    Blocks(Vec<ContentBlock>),
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Message {
    /// Who wrote it.
    pub role: MessageRole,
    /// What it says.
    pub content: MessageContent,
}

impl Message {
    /// A user message with plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: MessageRole::User,
            content: MessageContent::Text(text.into()),
        }
    }

    /// An assistant message with plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: MessageRole::Assistant,
            content: MessageContent::Text(text.into()),
        }
    }

    /// A message made of blocks.
    pub fn blocks(role: MessageRole, blocks: Vec<ContentBlock>) -> Self {
        Self {
            role,
            content: MessageContent::Blocks(blocks),
        }
    }

    /// The text of the message: the text itself, or its text blocks joined.
    pub fn text(&self) -> String {
        match &self.content {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Blocks(blocks) => join_text(blocks),
        }
    }
}

fn join_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        if let ContentBlock::Text { text } = block {
            out.push_str(text);
        }
    }
    out
}

/// A tool the model may call: what the provider is told about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolDefinition {
    /// Unique name within one request.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (`{"type": "object", "properties": ..., "required": [...]}`).
    pub input_schema: Value,
}

/// How the model may use the tools it was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default when tools are given).
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call a tool.
    None,
    /// The model must call this tool.
    Tool {
        /// Name of the tool.
        name: String,
    },
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LlmRequest {
    /// The system prompt (may be empty).
    pub system: String,
    /// The conversation so far; the last message is normally the user's.
    pub messages: Vec<Message>,
    /// Model name or alias (see [`resolve_model`]).
    pub model: String,
    /// Upper bound on generated tokens.
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// How the tools may be used; `None` means the provider's default (auto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Where the call comes from (set by the node making it). Never sent to
    /// a provider; what the raw log (L1) records the call under.
    #[serde(skip)]
    pub origin: Option<CallOrigin>,
}

/// Which node of which operator makes an LLM call, and the episode its run
/// will be recorded as: how an L1 raw call links to its L2 episode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOrigin {
    /// The operator.
    pub operator_id: String,
    /// The node.
    pub node_name: String,
    /// The id of the episode the node's run is recorded as.
    pub episode_id: String,
    /// The entity the node's memory scope is about (empty: none).
    pub entity: String,
    /// The domain of the node's memory scope (empty: none).
    pub domain: String,
}

impl LlmRequest {
    /// Default `max_tokens` of a request.
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;

    /// A request for `model` with one user message.
    pub fn new(model: impl Into<String>, user_message: impl Into<String>) -> Self {
        Self {
            system: String::new(),
            messages: vec![Message::user(user_message)],
            model: model.into(),
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            temperature: None,
            tools: Vec::new(),
            tool_choice: None,
            origin: None,
        }
    }

    /// Set the system prompt.
    #[must_use]
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = system.into();
        self
    }

    /// Set the temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Set `max_tokens`.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Add tools.
    #[must_use]
    pub fn tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// The text of the first user message (what role-level memory recall keys on).
    pub fn first_user_text(&self) -> String {
        self.messages
            .iter()
            .find(|m| m.role == MessageRole::User)
            .map(Message::text)
            .unwrap_or_default()
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCall {
    /// Provider-assigned id.
    pub id: String,
    /// Name of the tool.
    pub name: String,
    /// Arguments.
    pub input: Value,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    EndTurn,
    /// The model wants tools called.
    ToolUse,
    /// The answer hit `max_tokens`.
    MaxTokens,
    /// A stop sequence was produced.
    StopSequence,
    /// Anything else the provider reported.
    #[serde(untagged)]
    Other(String),
}

/// The model's answer to one [`LlmRequest`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LlmResponse {
    /// The text of the answer (text blocks joined).
    pub content: String,
    /// Tool calls, in the order the model made them.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Input tokens billed.
    #[serde(default)]
    pub tokens_in: u64,
    /// Output tokens billed.
    #[serde(default)]
    pub tokens_out: u64,
    /// The model that answered (as reported by the provider).
    #[serde(default)]
    pub model: String,
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// The answer's content blocks as the provider returned them
    /// (what goes back into the conversation as the assistant turn).
    #[serde(default)]
    pub raw_content: Vec<ContentBlock>,
}

impl LlmResponse {
    /// A text answer (handy in tests and test doubles).
    pub fn text(content: impl Into<String>) -> Self {
        Self::from_blocks(vec![ContentBlock::text(content)])
    }

    /// Build a response from content blocks: `content`, `tool_calls` and
    /// `stop_reason` are derived from them; usage and model are left empty.
    pub fn from_blocks(blocks: Vec<ContentBlock>) -> Self {
        let tool_calls: Vec<ToolCall> = blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { id, name, input } => Some(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                }),
                _ => None,
            })
            .collect();
        Self {
            content: join_text(&blocks),
            stop_reason: if tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            },
            tool_calls,
            raw_content: blocks,
            ..Self::default()
        }
    }

    /// Set token usage.
    #[must_use]
    pub fn with_usage(mut self, tokens_in: u64, tokens_out: u64) -> Self {
        self.tokens_in = tokens_in;
        self.tokens_out = tokens_out;
        self
    }

    /// Set the model name.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }
}

/// What went wrong talking to a model. Every message says what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The provider rejected the credentials (HTTP 401/403). Not retried.
    #[error(
        "{provider} rejected the request's credentials (HTTP {status}): {message}; check the API key ({key_hint})"
    )]
    Auth {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// Where the key comes from, e.g. `ANTHROPIC_API_KEY`.
        key_hint: String,
    },
    /// Too many requests (HTTP 429), still refused after retrying.
    #[error(
        "{provider} is rate limiting requests (HTTP 429) after {attempts} attempt(s): {message}; slow down or raise the retry budget{}",
        retry_after.map(|d| format!(" (the server asked to wait {:.1}s)", d.as_secs_f64())).unwrap_or_default()
    )]
    RateLimited {
        /// Provider name.
        provider: String,
        /// The server's `retry-after`, when given.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The provider is overloaded (HTTP 529, or 503), still after retrying.
    #[error(
        "{provider} is overloaded (HTTP {status}) after {attempts} attempt(s): {message}; try again later"
    )]
    Overloaded {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The request was invalid (HTTP 400, 404, 413, 422). Not retried.
    #[error(
        "{provider} rejected the request as invalid (HTTP {status}): {message}; fix the request (model name, parameters, tool schemas)"
    )]
    BadRequest {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider failed (HTTP 5xx), still after retrying.
    #[error(
        "{provider} failed with a server error (HTTP {status}) after {attempts} attempt(s): {message}; try again later"
    )]
    Server {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The provider could not be reached.
    #[error("could not reach {provider}: {message}; check the base URL and the network")]
    Network {
        /// Provider name.
        provider: String,
        /// What failed.
        message: String,
    },
    /// No complete answer within the configured timeout.
    #[error(
        "{provider} did not answer within {:.1}s; raise the timeout or use a faster model",
        after.as_secs_f64()
    )]
    Timeout {
        /// Provider name.
        provider: String,
        /// The timeout that expired.
        after: Duration,
    },
    /// The provider answered with something that is not its documented format.
    #[error(
        "could not decode the answer of {provider}: {message}; is the base URL pointing at a compatible API?"
    )]
    Decode {
        /// Provider name.
        provider: String,
        /// What could not be decoded.
        message: String,
    },
    /// The provider is not configured correctly (missing key, bad URL).
    #[error("{0}")]
    Config(String),
    /// A replaying test double has no recorded answer for this request.
    #[error(
        "no recorded answer for request {key} ({summary}); re-record the cassette with a real provider"
    )]
    NotRecorded {
        /// The request's stable key.
        key: String,
        /// A short description of the request.
        summary: String,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl LlmError {
    /// True for errors a caller may sensibly retry later
    /// (rate limits, overload, server errors, network failures, timeouts).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Network { .. }
                | Self::Timeout { .. }
        )
    }
}

/// Anything that can answer an [`LlmRequest`]: a hosted API, a local server,
/// a test double, or a wrapper around another provider.
///
/// Implementations must be cheap to share (`Arc<dyn LlmProvider>`) and safe to
/// call concurrently.
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// Send one request and wait for the complete answer.
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError>;
}

#[async_trait]
impl<T: LlmProvider + ?Sized> LlmProvider for Arc<T> {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        (**self).call(request).await
    }
}

/// Where JSON may be in a model's answer, most likely first: the whole
/// answer, the body of its first ```` ``` ```` fence, the span from its
/// first `[` to its last `]`, and from its first `{` to its last `}`.
/// What parsers of structured model output try in turn.
///
/// ```
/// use openvibe_protocols::json_candidates;
/// let answer = "Sure:\n```json\n[1, 2]\n```";
/// assert!(json_candidates(answer).contains(&"[1, 2]"));
/// ```
pub fn json_candidates(text: &str) -> Vec<&str> {
    let trimmed = text.trim();
    let mut candidates: Vec<&str> = vec![trimmed];
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let body = after.find('\n').map_or(after, |nl| &after[nl + 1..]);
        let body = body.find("```").map_or(body, |end| &body[..end]);
        candidates.push(body.trim());
    }
    for (open, close) in [('[', ']'), ('{', '}')] {
        if let (Some(start), Some(end)) = (trimmed.find(open), trimmed.rfind(close))
            && start < end
        {
            candidates.push(&trimmed[start..=end]);
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_resolve_in_one_place() {
        assert_eq!(resolve_model("sonnet"), "claude-sonnet-4-5-20250929");
        assert_eq!(resolve_model("opus"), "claude-opus-4-6");
        assert_eq!(resolve_model("gpt-4o-mini"), "gpt-4o-mini");
    }

    #[test]
    fn content_blocks_use_the_anthropic_wire_shape() {
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::ToolUse {
                id: "t1".into(),
                name: "search".into(),
                input: json!({"q": "x"}),
            },
            ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: "found".into(),
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "t2".into(),
                content: "boom".into(),
                is_error: true,
            },
        ];
        assert_eq!(
            serde_json::to_value(&blocks).unwrap(),
            json!([
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}},
                {"type": "tool_result", "tool_use_id": "t1", "content": "found"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": true},
            ])
        );
        let back: Vec<ContentBlock> =
            serde_json::from_value(serde_json::to_value(&blocks).unwrap()).unwrap();
        assert_eq!(back, blocks);
    }

    #[test]
    fn message_content_is_text_or_blocks() {
        let text: Message =
            serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!(text, Message::user("hi"));
        let blocks: Message = serde_json::from_value(
            json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        )
        .unwrap();
        assert_eq!(blocks.role, MessageRole::Assistant);
        assert_eq!(blocks.text(), "ab");
    }

    #[test]
    fn response_from_blocks_derives_text_and_tool_calls() {
        let r = LlmResponse::from_blocks(vec![
            ContentBlock::text("Let me look. "),
            ContentBlock::ToolUse {
                id: "a".into(),
                name: "one".into(),
                input: json!({}),
            },
            ContentBlock::ToolUse {
                id: "b".into(),
                name: "two".into(),
                input: json!({"k": 1}),
            },
        ]);
        assert_eq!(r.content, "Let me look. ");
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].input, json!({"k": 1}));
        assert_eq!(LlmResponse::text("x").stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn stop_reason_round_trips_unknown_values() {
        let other: StopReason = serde_json::from_value(json!("pause_turn")).unwrap();
        assert_eq!(other, StopReason::Other("pause_turn".into()));
        let tool: StopReason = serde_json::from_value(json!("tool_use")).unwrap();
        assert_eq!(tool, StopReason::ToolUse);
        assert_eq!(serde_json::to_value(&other).unwrap(), json!("pause_turn"));
    }

    #[test]
    fn errors_say_what_to_do() {
        let e = LlmError::Auth {
            provider: "anthropic".into(),
            status: 401,
            message: "invalid x-api-key".into(),
            key_hint: "ANTHROPIC_API_KEY".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains("401") && text.contains("ANTHROPIC_API_KEY"),
            "{text}"
        );
        assert!(!e.is_transient());
        let t = LlmError::Timeout {
            provider: "openai".into(),
            after: Duration::from_millis(1500),
        };
        assert!(t.to_string().contains("1.5s"));
        assert!(t.is_transient());
    }

    #[test]
    fn first_user_text_finds_the_user_turn() {
        let mut req = LlmRequest::new("haiku", "hello there");
        req.messages.insert(0, Message::assistant("ignored"));
        assert_eq!(req.first_user_text(), "hello there");
    }
}
