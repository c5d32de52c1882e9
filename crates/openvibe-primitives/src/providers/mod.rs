//! Model providers over HTTP: Anthropic's Messages API, OpenAI-compatible
//! chat completions and OpenAI-compatible embeddings, with timeouts, retries
//! and typed errors.
//!
//! - [`AnthropicProvider::from_env`] reads `ANTHROPIC_API_KEY` (required) and
//!   `ANTHROPIC_BASE_URL` (optional).
//! - [`OpenAiProvider::from_env`] reads `OPENAI_API_KEY` (optional) and
//!   `OPENAI_BASE_URL` (optional, default `https://api.openai.com/v1`); use
//!   [`OpenAiProvider::with_model`] to pin a local server's model.
//! - [`OpenAiEmbedder::from_env`] reads the same two variables for an
//!   OpenAI-compatible `/v1/embeddings` server.
//!
//! All three retry according to [`RetryPolicy`] and report failures as
//! [`LlmError`](openvibe_protocols::LlmError) variants that say what to do.

mod anthropic;
mod embeddings;
mod http;
mod openai;

pub use anthropic::AnthropicProvider;
pub use embeddings::OpenAiEmbedder;
pub use openai::{OpenAiProvider, TokenLimitField};

use std::time::Duration;

/// When and how often a failed request is retried.
///
/// Retried: HTTP 429, 500, 502, 503, 529 and connection failures. Never
/// retried: 400, 401, 403, 404, 413, 422 and timeouts (a timeout has already
/// used the caller's time budget).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Backoff before the first retry; doubles with each retry (with full jitter).
    pub initial_backoff: Duration,
    /// Upper bound of one backoff.
    pub max_backoff: Duration,
    /// The longest `retry-after` the client will honour by waiting; a longer
    /// one fails at once with [`LlmError::RateLimited`](openvibe_protocols::LlmError::RateLimited).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Settings shared by the HTTP providers.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// Base URL, e.g. `https://api.anthropic.com` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// API key; `None` sends no credentials (fine for local servers).
    pub api_key: Option<String>,
    /// Total time allowed for one HTTP attempt.
    pub timeout: Duration,
    /// Time allowed to establish a connection.
    pub connect_timeout: Duration,
    /// Retry behaviour.
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// A configuration for `base_url` with default timeouts and retries.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }
}
