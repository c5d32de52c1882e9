//! Anthropic's Messages API (`POST {base_url}/v1/messages`).

use async_trait::async_trait;
use openvibe_protocols::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, StopReason, ToolChoice,
    ToolDefinition, resolve_model,
};
use reqwest::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ProviderConfig;
use super::http::{HttpClient, secret_header};

const PROVIDER: &str = "anthropic";
const KEY_VAR: &str = "ANTHROPIC_API_KEY";
const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

/// An [`LlmProvider`] for Anthropic's Messages API.
///
/// Model aliases (`sonnet`, `haiku`, `opus`) are resolved with
/// [`resolve_model`]. Transient failures (429, 5xx, 529, connection errors)
/// are retried according to [`ProviderConfig::retry`](super::ProviderConfig).
///
/// ```no_run
/// use openvibe_primitives::AnthropicProvider;
/// use openvibe_protocols::{LlmProvider, LlmRequest};
/// # async fn demo() -> Result<(), openvibe_protocols::LlmError> {
/// let llm = AnthropicProvider::from_env()?; // reads ANTHROPIC_API_KEY
/// let answer = llm.call(&LlmRequest::new("haiku", "Say hi")).await?;
/// println!("{}", answer.content);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    http: HttpClient,
}

impl AnthropicProvider {
    /// The provider configured from the environment: `ANTHROPIC_API_KEY`
    /// (required) and `ANTHROPIC_BASE_URL` (optional, default
    /// `https://api.anthropic.com`).
    ///
    /// # Errors
    /// [`LlmError::Config`] when `ANTHROPIC_API_KEY` is not set or the base
    /// URL is invalid.
    pub fn from_env() -> Result<Self, LlmError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let key = set(KEY_VAR).ok_or_else(|| {
            LlmError::Config(format!(
                "{KEY_VAR} is not set; export {KEY_VAR}=sk-ant-... (create a key at https://console.anthropic.com) \
                 or build the provider with AnthropicProvider::new(ProviderConfig)"
            ))
        })?;
        let base_url = set(BASE_URL_VAR).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let mut config = ProviderConfig::new(base_url);
        config.api_key = Some(key.trim().to_owned());
        Self::new(config)
    }

    /// The provider with an explicit configuration. `base_url` is the API
    /// root without `/v1` (e.g. `https://api.anthropic.com`); a missing
    /// `api_key` sends no `x-api-key` header (for gateways that add it).
    ///
    /// # Errors
    /// [`LlmError::Config`] when the base URL is invalid or the key cannot be
    /// sent as an HTTP header.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = &config.api_key {
            headers.insert("x-api-key", secret_header(PROVIDER, "x-api-key", key)?);
        }
        let http = HttpClient::new(PROVIDER, KEY_VAR, &config, headers)?;
        Ok(Self { http })
    }

    /// The base URL requests go to (without a trailing slash).
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }
}

/// The request body of `POST /v1/messages`.
#[derive(Serialize)]
struct MessagesBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: &'a [Message],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [ToolDefinition],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a ToolChoice>,
}

impl<'a> MessagesBody<'a> {
    fn new(request: &'a LlmRequest) -> Self {
        Self {
            model: resolve_model(&request.model),
            max_tokens: request.max_tokens,
            system: &request.system,
            messages: &request.messages,
            temperature: request.temperature,
            tools: &request.tools,
            tool_choice: request.tool_choice.as_ref(),
        }
    }
}

/// The answer of `POST /v1/messages`.
#[derive(Deserialize)]
struct MessagesResponse {
    content: Vec<WireBlock>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Usage,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// A content block of an answer; kinds we do not use (thinking, server tools)
/// are skipped.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        other => StopReason::Other(other.to_owned()),
    }
}

impl MessagesResponse {
    fn into_response(self, requested_model: &str) -> LlmResponse {
        let blocks = self
            .content
            .into_iter()
            .filter_map(|block| match block {
                WireBlock::Text { text } => Some(ContentBlock::Text { text }),
                WireBlock::ToolUse { id, name, input } => {
                    Some(ContentBlock::ToolUse { id, name, input })
                }
                WireBlock::Other => None,
            })
            .collect();
        let mut response = LlmResponse::from_blocks(blocks)
            .with_usage(self.usage.input_tokens, self.usage.output_tokens)
            .with_model(self.model.unwrap_or_else(|| requested_model.to_owned()));
        if let Some(reason) = self.stop_reason.as_deref() {
            response.stop_reason = stop_reason(reason);
        }
        response
    }
}

#[async_trait]
impl LlmProvider for AnthropicProvider {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let body = MessagesBody::new(request);
        let answer: MessagesResponse = self
            .http
            .post_json("/v1/messages", body.model, &body)
            .await?;
        Ok(answer.into_response(body.model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_requires_the_key_and_says_how_to_set_it() {
        let err = AnthropicProvider::from_vars(|_| None).unwrap_err();
        let LlmError::Config(message) = err else {
            panic!("expected a config error, got {err:?}");
        };
        assert!(message.contains("export ANTHROPIC_API_KEY"), "{message}");
        let blank = AnthropicProvider::from_vars(|_| Some("  ".into()));
        assert!(matches!(blank, Err(LlmError::Config(_))));
    }

    #[test]
    fn from_env_reads_key_and_base_url() {
        let p = AnthropicProvider::from_vars(|name| match name {
            "ANTHROPIC_API_KEY" => Some("sk-test".into()),
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9/".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(p.base_url(), "http://127.0.0.1:9");
        let default = AnthropicProvider::from_vars(|name| {
            (name == "ANTHROPIC_API_KEY").then(|| "sk-test".to_owned())
        })
        .unwrap();
        assert_eq!(default.base_url(), DEFAULT_BASE_URL);
        assert!(!format!("{default:?}").contains("sk-test"));
    }

    #[test]
    fn bad_base_url_is_a_config_error() {
        let err = AnthropicProvider::new(ProviderConfig::new("not a url")).unwrap_err();
        assert!(matches!(err, LlmError::Config(_)), "{err:?}");
    }

    #[test]
    fn unknown_blocks_are_skipped_and_stop_reasons_mapped() {
        let answer: MessagesResponse = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                {"type": "text", "text": "hi"}
            ],
            "model": "m",
            "stop_reason": "pause_turn",
            "usage": {"input_tokens": 3, "output_tokens": 4}
        }))
        .unwrap();
        let r = answer.into_response("requested");
        assert_eq!(r.content, "hi");
        assert_eq!(r.raw_content.len(), 1);
        assert_eq!(r.stop_reason, StopReason::Other("pause_turn".into()));
        assert_eq!((r.tokens_in, r.tokens_out), (3, 4));
    }
}
