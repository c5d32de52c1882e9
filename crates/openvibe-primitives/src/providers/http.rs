//! The HTTP plumbing shared by the providers: one `reqwest::Client` per
//! provider, one JSON POST with retries, backoff and `retry-after`, and the
//! mapping of HTTP failures onto [`LlmError`].

use std::error::Error as _;
use std::time::Duration;

use openvibe_protocols::{LlmError, truncate_chars};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument as _;

use super::{ProviderConfig, RetryPolicy};

/// How many characters of a response body an error message quotes.
const EXCERPT_CHARS: usize = 200;

/// A JSON-over-HTTP client for one provider.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    /// Provider name used in errors and logs (`anthropic`, `openai`).
    provider: &'static str,
    /// Where the credentials come from (`ANTHROPIC_API_KEY`), for auth errors.
    key_hint: &'static str,
    /// Base URL without a trailing slash.
    base_url: String,
    /// Sent with every request (credentials, API version).
    headers: HeaderMap,
    timeout: Duration,
    retry: RetryPolicy,
}

impl HttpClient {
    /// Build the client: validates the base URL and builds one `reqwest::Client`
    /// with the configured timeouts.
    pub(crate) fn new(
        provider: &'static str,
        key_hint: &'static str,
        config: &ProviderConfig,
        headers: HeaderMap,
    ) -> Result<Self, LlmError> {
        let base_url = config.base_url.trim_end_matches('/').to_owned();
        match reqwest::Url::parse(&base_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            Ok(url) => {
                return Err(LlmError::Config(format!(
                    "{provider}: base URL `{base_url}` has scheme `{}`; use an http:// or https:// URL",
                    url.scheme()
                )));
            }
            Err(e) => {
                return Err(LlmError::Config(format!(
                    "{provider}: base URL `{base_url}` is not a valid URL ({e}); use e.g. https://host[:port][/path]"
                )));
            }
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| {
                LlmError::Config(format!(
                    "{provider}: could not build the HTTP client: {}",
                    error_chain(&e)
                ))
            })?;
        Ok(Self {
            client,
            provider,
            key_hint,
            base_url,
            headers,
            timeout: config.timeout,
            retry: config.retry.clone(),
        })
    }

    /// The provider name used in errors.
    pub(crate) fn provider(&self) -> &'static str {
        self.provider
    }

    /// The base URL (no trailing slash).
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// POST `body` as JSON to `{base_url}{path}` and decode a 2xx answer as
    /// `T`, retrying transient failures according to the retry policy.
    pub(crate) async fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        model: &str,
        body: &impl Serialize,
    ) -> Result<T, LlmError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            LlmError::Other(format!(
                "{}: could not serialize the request body: {e}",
                self.provider
            ))
        })?;
        let url = format!("{}{path}", self.base_url);
        let max_attempts = self.retry.max_retries.saturating_add(1);
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let span = tracing::debug_span!(
                "llm_http",
                provider = self.provider,
                model = model,
                attempt = attempt
            );
            let failure = match self.attempt(&url, bytes.clone()).instrument(span).await {
                Ok(text) => return self.decode(&text),
                Err(failure) => failure,
            };
            if !failure.is_retryable() || attempt >= max_attempts {
                return Err(failure.into_error(self, attempt));
            }
            let wait = match failure.retry_after() {
                Some(asked) if asked > self.retry.max_retry_after => {
                    tracing::warn!(
                        provider = self.provider,
                        model,
                        attempt,
                        retry_after_ms = duration_ms(asked),
                        max_retry_after_ms = duration_ms(self.retry.max_retry_after),
                        "llm request: server asked to wait longer than allowed; giving up"
                    );
                    return Err(LlmError::RateLimited {
                        provider: self.provider.to_owned(),
                        retry_after: Some(asked),
                        message: format!(
                            "{}; the server asked to wait {:.1}s, more than the allowed {:.1}s",
                            failure.message(),
                            asked.as_secs_f64(),
                            self.retry.max_retry_after.as_secs_f64()
                        ),
                        attempts: attempt,
                    });
                }
                Some(asked) => asked,
                None => backoff(&self.retry, attempt),
            };
            tracing::warn!(
                provider = self.provider,
                model,
                attempt,
                max_attempts,
                wait_ms = duration_ms(wait),
                reason = %failure.summary(),
                "llm request failed; retrying"
            );
            tracing::debug!(provider = self.provider, model, attempt, detail = %failure.describe(), "llm request failure");
            tokio::time::sleep(wait).await;
        }
    }

    /// One HTTP attempt: the body text of a 2xx answer, or why it failed.
    async fn attempt(&self, url: &str, body: Vec<u8>) -> Result<String, Failure> {
        let response = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(Failure::transport)?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let text = response.text().await.map_err(Failure::transport)?;
        tracing::debug!(
            status = status.as_u16(),
            bytes = text.len(),
            "llm http answer"
        );
        if status.is_success() {
            // Some gateways answer 200 with `{"error": {...}}` and nothing
            // else: an upstream failure, not an answer.
            if let Some(message) = error_in_success(&text) {
                return Err(Failure::Status {
                    status: StatusCode::BAD_GATEWAY,
                    error_type: None,
                    message: format!("the server answered 200 with an error: {message}"),
                    retry_after,
                });
            }
            return Ok(text);
        }
        let (error_type, message) = error_details(status, &text);
        Err(Failure::Status {
            status,
            error_type,
            message,
            retry_after,
        })
    }

    fn decode<T: DeserializeOwned>(&self, text: &str) -> Result<T, LlmError> {
        serde_json::from_str(text).map_err(|e| decode_error(self.provider, &e.to_string(), text))
    }
}

/// A `Decode` error quoting the start of the offending body.
fn decode_error(provider: &str, what: &str, body: &str) -> LlmError {
    LlmError::Decode {
        provider: provider.to_owned(),
        message: format!("{what}; body starts with: {:?}", excerpt(body)),
    }
}

/// Why one attempt failed.
#[derive(Debug)]
enum Failure {
    /// The server answered with a non-2xx status.
    Status {
        status: StatusCode,
        error_type: Option<String>,
        message: String,
        retry_after: Option<Duration>,
    },
    /// No complete answer within the client timeout.
    Timeout,
    /// The server could not be reached or the connection broke.
    Network { message: String, retryable: bool },
}

impl Failure {
    fn transport(error: reqwest::Error) -> Self {
        if error.is_timeout() {
            return Self::Timeout;
        }
        // Connection failures and broken connections are worth another try;
        // a request reqwest could not even build is not.
        let retryable = !error.is_builder() && !error.is_redirect();
        Self::Network {
            message: error_chain(&error),
            retryable,
        }
    }

    fn is_retryable(&self) -> bool {
        match self {
            Self::Status { status, .. } => matches!(status.as_u16(), 429 | 500 | 502 | 503 | 529),
            Self::Timeout => false,
            Self::Network { retryable, .. } => *retryable,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    fn message(&self) -> &str {
        match self {
            Self::Status { message, .. } | Self::Network { message, .. } => message,
            Self::Timeout => "timed out",
        }
    }

    /// What failed, without the server's or the network stack's text
    /// (which may quote the request or name its URL): for warnings.
    fn summary(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("HTTP {}", status.as_u16()),
            Self::Timeout => "timeout".to_owned(),
            Self::Network { .. } => "network".to_owned(),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Status {
                status, message, ..
            } => format!("HTTP {}: {message}", status.as_u16()),
            Self::Timeout => "timeout".to_owned(),
            Self::Network { message, .. } => format!("network: {message}"),
        }
    }

    fn into_error(self, client: &HttpClient, attempts: u32) -> LlmError {
        let provider = client.provider.to_owned();
        match self {
            Self::Timeout => LlmError::Timeout {
                provider,
                after: client.timeout,
            },
            Self::Network { message, .. } => LlmError::Network { provider, message },
            Self::Status {
                status,
                error_type,
                message,
                retry_after,
            } => {
                let code = status.as_u16();
                let overloaded = error_type
                    .as_deref()
                    .is_some_and(|t| t.to_ascii_lowercase().contains("overloaded"));
                match code {
                    401 | 403 => LlmError::Auth {
                        provider,
                        status: code,
                        message,
                        key_hint: client.key_hint.to_owned(),
                    },
                    429 => LlmError::RateLimited {
                        provider,
                        retry_after,
                        message,
                        attempts,
                    },
                    529 => LlmError::Overloaded {
                        provider,
                        status: code,
                        message,
                        attempts,
                    },
                    503 if overloaded => LlmError::Overloaded {
                        provider,
                        status: code,
                        message,
                        attempts,
                    },
                    500..=599 => LlmError::Server {
                        provider,
                        status: code,
                        message,
                        attempts,
                    },
                    // 400, 404, 413, 422 and every other status that is not a
                    // success: the request itself is at fault.
                    _ => LlmError::BadRequest {
                        provider,
                        status: code,
                        message,
                    },
                }
            }
        }
    }
}

/// Backoff before retry number `attempt` (1-based): full jitter over
/// `min(max_backoff, initial_backoff * 2^(attempt-1))`.
fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let exponent = attempt.saturating_sub(1).min(31);
    let ceiling = policy
        .initial_backoff
        .saturating_mul(1_u32 << exponent)
        .min(policy.max_backoff);
    ceiling.mul_f64(fastrand::f64())
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else
/// `retry-after` (seconds or an HTTP-date).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(HeaderName::from_bytes(name.as_bytes()).ok()?)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(wait) = non_negative_secs(ms / 1000.0)
    {
        return Some(wait);
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return non_negative_secs(secs);
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

fn non_negative_secs(secs: f64) -> Option<Duration> {
    if secs.is_finite() && secs >= 0.0 {
        Duration::try_from_secs_f64(secs).ok()
    } else {
        None
    }
}

/// The message of a 2xx body that is an error object and no answer
/// (`{"error": …}` without `choices` or `content`).
fn error_in_success(body: &str) -> Option<String> {
    if !body.trim_start().starts_with('{') || !body.contains("\"error\"") {
        return None;
    }
    let value: Value = serde_json::from_str(body).ok()?;
    let object = value.as_object()?;
    if !object.contains_key("error")
        || object.contains_key("choices")
        || object.contains_key("content")
        || object.get("error").is_some_and(Value::is_null)
    {
        return None;
    }
    Some(error_details(StatusCode::BAD_GATEWAY, body).1)
}

/// The error type and message of an error body.
///
/// Understands `{"error": {"type": .., "message": ..}}` (Anthropic, OpenAI and
/// most compatible servers), `{"error": "..."}`, `{"message": ".."}` and
/// `{"detail": ..}`; anything else is quoted as an excerpt.
fn error_details(status: StatusCode, body: &str) -> (Option<String>, String) {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let as_text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    if let Some(value) = &parsed {
        let error = value.get("error");
        let error_type = error
            .and_then(|e| e.get("type").or_else(|| e.get("code")))
            .and_then(as_text);
        let message = error
            .and_then(|e| match e {
                Value::String(s) => Some(s.clone()),
                e => e.get("message").and_then(as_text),
            })
            .or_else(|| value.get("message").and_then(as_text))
            .or_else(|| value.get("detail").and_then(as_text));
        if let Some(message) = message {
            let message = truncate_chars(&message, 4 * EXCERPT_CHARS).to_owned();
            return (error_type, message);
        }
    }
    let reason = status.canonical_reason().unwrap_or("error");
    if body.trim().is_empty() {
        (None, reason.to_owned())
    } else {
        (None, format!("{reason}: {:?}", excerpt(body)))
    }
}

/// The start of `body`, marked when cut.
fn excerpt(body: &str) -> String {
    let body = body.trim();
    let cut = truncate_chars(body, EXCERPT_CHARS);
    if cut.len() < body.len() {
        format!("{cut}…")
    } else {
        cut.to_owned()
    }
}

/// An error and its sources, joined (reqwest's top-level message alone is vague).
fn error_chain(error: &reqwest::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A header value that must not show up in logs or `Debug` output.
pub(crate) fn secret_header(
    provider: &str,
    name: &str,
    value: &str,
) -> Result<HeaderValue, LlmError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        LlmError::Config(format!(
            "{provider}: the API key for the `{name}` header contains characters not allowed in an HTTP header (a newline?); check the key"
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_millis_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));

        let mut h = HeaderMap::new();
        let when = chrono::Utc::now() + chrono::Duration::seconds(30);
        let date = when.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        h.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let wait = retry_after(&h).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );

        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("-3"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn backoff_is_jittered_below_an_exponential_ceiling() {
        let policy = RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(1),
        };
        for _ in 0..200 {
            assert!(backoff(&policy, 1) <= Duration::from_millis(100));
            assert!(backoff(&policy, 3) <= Duration::from_millis(400));
            assert!(backoff(&policy, 40) <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn error_bodies_yield_type_and_message() {
        let (t, m) = error_details(
            StatusCode::from_u16(529).unwrap(),
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(t.as_deref(), Some("overloaded_error"));
        assert_eq!(m, "Overloaded");
        let (t, m) = error_details(StatusCode::BAD_REQUEST, r#"{"error":"model not found"}"#);
        assert_eq!((t, m.as_str()), (None, "model not found"));
        let (_, m) = error_details(StatusCode::BAD_GATEWAY, "<html>bad gateway</html>");
        assert!(m.starts_with("Bad Gateway") && m.contains("<html>"), "{m}");
        let (_, m) = error_details(StatusCode::BAD_GATEWAY, "");
        assert_eq!(m, "Bad Gateway");
        let long = "x".repeat(1000);
        assert!(excerpt(&long).chars().count() <= EXCERPT_CHARS + 1);
    }
}
