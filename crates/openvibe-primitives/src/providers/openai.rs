//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`):
//! OpenAI itself, Ollama, vLLM, llama.cpp's server, LM Studio, ...

use async_trait::async_trait;
use openvibe_protocols::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, MessageContent, MessageRole,
    StopReason, ToolChoice,
};
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::ProviderConfig;
use super::http::{HttpClient, secret_header};

const PROVIDER: &str = "openai";
const KEY_VAR: &str = "OPENAI_API_KEY";
const BASE_URL_VAR: &str = "OPENAI_BASE_URL";
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An [`LlmProvider`] for any OpenAI-compatible chat-completions server.
///
/// `base_url` includes the version prefix (`https://api.openai.com/v1`,
/// `http://localhost:11434/v1` for Ollama). The request's model name is sent
/// unchanged unless [`with_model`](Self::with_model) forces one.
///
/// ```no_run
/// use openvibe_primitives::{OpenAiProvider, ProviderConfig};
/// use openvibe_protocols::{LlmProvider, LlmRequest};
/// # async fn demo() -> Result<(), openvibe_protocols::LlmError> {
/// let ollama = OpenAiProvider::new(ProviderConfig::new("http://localhost:11434/v1"))?
///     .with_model("llama3.1:8b");
/// let answer = ollama.call(&LlmRequest::new("haiku", "Say hi")).await?;
/// println!("{}", answer.content);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    http: HttpClient,
    model: Option<String>,
    token_field: TokenLimitField,
}

/// Which request field carries `LlmRequest::max_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TokenLimitField {
    /// `max_completion_tokens` for the models that require it (OpenAI's
    /// reasoning models: `o1…`, `o3…`, `o4…`, `gpt-5…`), `max_tokens` for
    /// every other model (and most compatible servers).
    #[default]
    Auto,
    /// Always `max_tokens`.
    MaxTokens,
    /// Always `max_completion_tokens`.
    MaxCompletionTokens,
}

impl TokenLimitField {
    /// Whether a request for `model` sends `max_completion_tokens`.
    pub fn completion_tokens_for(self, model: &str) -> bool {
        match self {
            Self::MaxTokens => false,
            Self::MaxCompletionTokens => true,
            Self::Auto => {
                let m = model
                    .rsplit('/')
                    .next()
                    .unwrap_or(model)
                    .to_ascii_lowercase();
                ["o1", "o3", "o4", "gpt-5"]
                    .iter()
                    .any(|p| m == *p || m.starts_with(&format!("{p}-")))
            }
        }
    }
}

/// The configuration of an OpenAI-compatible server from `var`
/// (`std::env::var` in production): `OPENAI_BASE_URL` (default
/// `https://api.openai.com/v1`) and `OPENAI_API_KEY` (optional); blank
/// values count as unset.
pub(super) fn openai_config(var: impl Fn(&str) -> Option<String>) -> ProviderConfig {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let base_url = set(BASE_URL_VAR).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
    let mut config = ProviderConfig::new(base_url);
    config.api_key = set(KEY_VAR).map(|k| k.trim().to_owned());
    config
}

/// The HTTP client for an OpenAI-compatible server: `Authorization: Bearer
/// <key>` when a key is configured (the key hint is `OPENAI_API_KEY`).
pub(super) fn openai_client(
    provider: &'static str,
    config: &ProviderConfig,
) -> Result<HttpClient, LlmError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = &config.api_key {
        let value = secret_header(provider, "authorization", &format!("Bearer {key}"))?;
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    HttpClient::new(provider, KEY_VAR, config, headers)
}

impl OpenAiProvider {
    /// The provider configured from the environment: `OPENAI_API_KEY`
    /// (optional; no `Authorization` header without it) and
    /// `OPENAI_BASE_URL` (optional, default `https://api.openai.com/v1`).
    ///
    /// # Errors
    /// [`LlmError::Config`] when the base URL is invalid.
    pub fn from_env() -> Result<Self, LlmError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        Self::new(openai_config(var))
    }

    /// The provider with an explicit configuration. `base_url` includes the
    /// version prefix, e.g. `http://localhost:11434/v1`.
    ///
    /// # Errors
    /// [`LlmError::Config`] when the base URL is invalid or the key cannot be
    /// sent as an HTTP header.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let http = openai_client(PROVIDER, &config)?;
        Ok(Self {
            http,
            model: None,
            token_field: TokenLimitField::Auto,
        })
    }

    /// Send the token limit in `field` (default [`TokenLimitField::Auto`]).
    #[must_use]
    pub fn with_token_limit_field(mut self, field: TokenLimitField) -> Self {
        self.token_field = field;
        self
    }

    /// Send every request to `model`, whatever model the request names (for
    /// local servers whose models are not Claude names).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The base URL requests go to (without a trailing slash).
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// The model forced by [`with_model`](Self::with_model), if any.
    pub fn forced_model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

/// The request body of `POST /chat/completions`.
#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

impl<'a> ChatBody<'a> {
    fn new(request: &'a LlmRequest, model: &'a str, field: TokenLimitField) -> Self {
        let completion = field.completion_tokens_for(model);
        Self {
            model,
            messages: chat_messages(request),
            max_tokens: (!completion).then_some(request.max_tokens),
            max_completion_tokens: completion.then_some(request.max_tokens),
            temperature: request.temperature,
            tools: request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.input_schema,
                        }
                    })
                })
                .collect(),
            tool_choice: request.tool_choice.as_ref().map(|choice| match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Any => json!("required"),
                ToolChoice::Tool { name } => {
                    json!({"type": "function", "function": {"name": name}})
                }
            }),
        }
    }
}

/// The conversation in chat-completions form: the system prompt first, tool
/// results as `tool` messages, tool calls as the assistant's `tool_calls`.
fn chat_messages(request: &LlmRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        let blocks = match &message.content {
            MessageContent::Text(text) => {
                let role = match message.role {
                    MessageRole::User => "user",
                    MessageRole::Assistant => "assistant",
                };
                out.push(json!({"role": role, "content": text}));
                continue;
            }
            MessageContent::Blocks(blocks) => blocks,
        };
        let mut text = String::new();
        match message.role {
            MessageRole::Assistant => {
                let mut tool_calls = Vec::new();
                for block in blocks {
                    match block {
                        ContentBlock::Text { text: t } => text.push_str(t),
                        ContentBlock::ToolUse { id, name, input } => tool_calls.push(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": input.to_string()},
                        })),
                        // Not meaningful in an assistant turn.
                        ContentBlock::ToolResult { .. } => {}
                    }
                }
                let mut turn = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { Value::String(text) },
                });
                if !tool_calls.is_empty() {
                    turn["tool_calls"] = Value::Array(tool_calls);
                }
                out.push(turn);
            }
            MessageRole::User => {
                // Tool results must directly follow the assistant turn that
                // asked for them, so they go before any text of the same turn.
                for block in blocks {
                    match block {
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            let content = if *is_error {
                                format!("Error: {content}")
                            } else {
                                content.clone()
                            };
                            out.push(json!({
                                "role": "tool",
                                "tool_call_id": tool_use_id,
                                "content": content,
                            }));
                        }
                        ContentBlock::Text { text: t } => text.push_str(t),
                        // Not meaningful in a user turn.
                        ContentBlock::ToolUse { .. } => {}
                    }
                }
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
        }
    }
    out
}

/// The answer of `POST /chat/completions`.
#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChatMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChatMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Tool arguments: a JSON string to parse (kept as a string when it is not
/// JSON, so the tool call fails with a readable error later); some servers
/// send an object directly; no arguments mean `{}`.
fn parse_arguments(arguments: Value) -> Value {
    match arguments {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        Value::Null => json!({}),
        other => other,
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

impl ChatResponse {
    fn into_response(self, requested_model: &str) -> Option<LlmResponse> {
        let choice = self.choices.into_iter().next()?;
        let mut blocks = Vec::new();
        if let Some(text) = choice.message.content.filter(|t| !t.is_empty()) {
            blocks.push(ContentBlock::Text { text });
        }
        for (index, call) in choice
            .message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let id = call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}"));
            blocks.push(ContentBlock::ToolUse {
                id,
                name: call.function.name,
                input: parse_arguments(call.function.arguments),
            });
        }
        let (tokens_in, tokens_out) = self
            .usage
            .map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
        let mut response = LlmResponse::from_blocks(blocks)
            .with_usage(tokens_in, tokens_out)
            .with_model(self.model.unwrap_or_else(|| requested_model.to_owned()));
        if let Some(reason) = choice.finish_reason.as_deref() {
            response.stop_reason = stop_reason(reason);
        }
        Some(response)
    }
}

#[async_trait]
impl LlmProvider for OpenAiProvider {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let model = self.model.as_deref().unwrap_or(&request.model);
        let body = ChatBody::new(request, model, self.token_field);
        let answer: ChatResponse = self
            .http
            .post_json("/chat/completions", model, &body)
            .await?;
        answer.into_response(model).ok_or_else(|| LlmError::Decode {
            provider: self.http.provider().to_owned(),
            message: "the answer has an empty `choices` list".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_key_is_optional_and_base_url_defaults() {
        let p = OpenAiProvider::from_vars(|_| None).unwrap();
        assert_eq!(p.base_url(), DEFAULT_BASE_URL);
        let p = OpenAiProvider::from_vars(|name| match name {
            "OPENAI_BASE_URL" => Some("http://localhost:11434/v1/".into()),
            "OPENAI_API_KEY" => Some("sk-secret".into()),
            _ => None,
        })
        .unwrap()
        .with_model("llama3.1:8b");
        assert_eq!(p.base_url(), "http://localhost:11434/v1");
        assert_eq!(p.forced_model(), Some("llama3.1:8b"));
        assert!(!format!("{p:?}").contains("sk-secret"));
    }

    #[test]
    fn arguments_are_parsed_or_kept_as_a_string() {
        assert_eq!(parse_arguments(json!("{\"a\":1}")), json!({"a": 1}));
        assert_eq!(parse_arguments(json!("{oops")), json!("{oops"));
        assert_eq!(parse_arguments(json!("")), json!({}));
        assert_eq!(parse_arguments(json!({"b": 2})), json!({"b": 2}));
    }

    #[test]
    fn missing_tool_call_ids_are_made_up() {
        let answer: ChatResponse = serde_json::from_value(json!({
            "choices": [{
                "message": {"content": null, "tool_calls": [
                    {"function": {"name": "a", "arguments": "{}"}},
                    {"id": "", "function": {"name": "b", "arguments": "{}"}}
                ]},
                "finish_reason": "tool_calls"
            }]
        }))
        .unwrap();
        let r = answer.into_response("m").unwrap();
        let ids: Vec<_> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0", "call_1"]);
        assert_eq!((r.tokens_in, r.tokens_out), (0, 0));
        assert_eq!(r.model, "m");
    }
}
