//! `AnthropicProvider` against a local mock of the Messages API.

// Test helpers outside `#[test]` functions may unwrap too: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use insta::assert_json_snapshot;
use openvibe_primitives::{AnthropicProvider, ProviderConfig};
use openvibe_protocols::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, Message, MessageRole, StopReason, ToolChoice,
    ToolDefinition,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockBuilder, MockServer, Request, ResponseTemplate};

const HAIKU: &str = "claude-haiku-4-5-20251001";

fn config(base_url: &str) -> ProviderConfig {
    support::quick_config(base_url, Some("sk-ant-test"))
}

fn provider(server: &MockServer) -> AnthropicProvider {
    AnthropicProvider::new(config(&server.uri())).unwrap()
}

fn text_answer(text: &str) -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": HAIKU,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 5}
    })
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn messages() -> MockBuilder {
    Mock::given(method("POST")).and(path("/v1/messages"))
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

#[tokio::test]
async fn plain_text_reply() {
    let server = MockServer::start().await;
    messages()
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("Hello!")))
        .expect(1)
        .mount(&server)
        .await;

    let answer = provider(&server)
        .call(&LlmRequest::new("haiku", "Say hello").max_tokens(100))
        .await
        .unwrap();

    assert_eq!(answer.content, "Hello!");
    assert_eq!((answer.tokens_in, answer.tokens_out), (12, 5));
    assert_eq!(answer.model, HAIKU);
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.raw_content, vec![ContentBlock::text("Hello!")]);

    let sent = requests(&server).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].url.path(), "/v1/messages");
    let body: Value = sent[0].body_json().unwrap();
    // The alias is resolved; empty system, tools and tool_choice are omitted.
    assert_eq!(
        body,
        json!({
            "model": HAIKU,
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "Say hello"}]
        })
    );
}

#[tokio::test]
async fn tool_use_round_trip_with_two_calls() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": HAIKU,
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 30, "output_tokens": 20}
        })))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    messages()
        .respond_with(
            ResponseTemplate::new(200).set_body_json(text_answer("Paris 20°C, Rome 25°C.")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let llm = provider(&server);
    let weather = ToolDefinition {
        name: "weather".into(),
        description: "Current weather of a city.".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    };
    let mut request = LlmRequest::new("haiku", "Weather in Paris and Rome?").tools(vec![weather]);

    let first = llm.call(&request).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert_eq!(first.content, "Checking both.");
    let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["toolu_1", "toolu_2"]);
    assert_eq!(first.tool_calls[1].input, json!({"city": "Rome"}));

    request.messages.push(Message::blocks(
        MessageRole::Assistant,
        first.raw_content.clone(),
    ));
    request.messages.push(Message::blocks(
        MessageRole::User,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: "20°C".into(),
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "toolu_2".into(),
                content: "25°C".into(),
                is_error: false,
            },
        ],
    ));
    let second = llm.call(&request).await.unwrap();
    assert_eq!(second.content, "Paris 20°C, Rome 25°C.");
    assert_eq!(second.stop_reason, StopReason::EndTurn);

    let sent = requests(&server).await;
    assert_eq!(sent.len(), 2);
    let body: Value = sent[1].body_json().unwrap();
    assert_eq!(body["tools"][0]["name"], "weather");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["city"])
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}
        ]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "20°C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "25°C"}
        ]})
    );
}

#[tokio::test]
async fn overloaded_529_is_retried_then_succeeds() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(529).set_body_json(error_body("overloaded_error", "Overloaded")),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("made it")))
        .expect(1)
        .mount(&server)
        .await;

    let answer = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap();
    assert_eq!(answer.content, "made it");
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn rate_limit_honours_retry_after_seconds() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(error_body("rate_limit_error", "Slow down")),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("ok")))
        .expect(1)
        .mount(&server)
        .await;

    let started = Instant::now();
    let answer = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(answer.content, "ok");
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn retry_after_beyond_the_limit_fails_at_once() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "120")
                .set_body_json(error_body("rate_limit_error", "Slow down")),
        )
        .expect(1)
        .mount(&server)
        .await;

    let started = Instant::now();
    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    match err {
        LlmError::RateLimited {
            retry_after,
            attempts,
            message,
            ..
        } => {
            assert_eq!(retry_after, Some(Duration::from_secs(120)));
            assert_eq!(attempts, 1);
            assert!(message.contains("Slow down"), "{message}");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test]
async fn rate_limit_exhaustion_reports_attempts() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(429).set_body_json(error_body("rate_limit_error", "Slow down")),
        )
        .expect(3)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            LlmError::RateLimited {
                attempts: 3,
                retry_after: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_transient());
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_without_retry() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(error_body("authentication_error", "invalid x-api-key")),
        )
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::Auth {
            provider: "anthropic".into(),
            status: 401,
            message: "invalid x-api-key".into(),
            key_hint: "ANTHROPIC_API_KEY".into(),
        }
    );
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"));
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(400).set_body_json(error_body(
            "invalid_request_error",
            "max_tokens: must be positive",
        )))
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi").max_tokens(0))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::BadRequest {
            provider: "anthropic".into(),
            status: 400,
            message: "max_tokens: must be positive".into(),
        }
    );
}

#[tokio::test]
async fn not_found_is_a_bad_request_without_retry() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(404).set_body_json(error_body("not_found_error", "model: nope")),
        )
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("nope", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::BadRequest { status: 404, message, .. } if message == "model: nope"),
        "{err:?}"
    );
}

#[tokio::test]
async fn malformed_body_is_a_decode_error() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_string("not json"))
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    match err {
        LlmError::Decode { provider, message } => {
            assert_eq!(provider, "anthropic");
            assert!(message.contains("not json"), "{message}");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

#[tokio::test]
async fn json_of_the_wrong_shape_is_a_decode_error() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"choices": []})))
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Decode { message, .. } if message.contains("content") && message.contains("choices")),
        "{err:?}"
    );
}

#[tokio::test]
async fn slow_server_times_out_without_retry() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(text_answer("too late"))
                .set_delay(Duration::from_secs(2)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&server.uri());
    config.timeout = Duration::from_millis(200);
    let llm = AnthropicProvider::new(config).unwrap();

    let started = Instant::now();
    let err = llm.call(&LlmRequest::new("haiku", "hi")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert_eq!(
        err,
        LlmError::Timeout {
            provider: "anthropic".into(),
            after: Duration::from_millis(200),
        }
    );
}

#[tokio::test]
async fn overload_exhaustion_reports_every_attempt() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(529).set_body_json(error_body("overloaded_error", "Overloaded")),
        )
        .expect(3)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::Overloaded {
            provider: "anthropic".into(),
            status: 529,
            message: "Overloaded".into(),
            attempts: 3,
        }
    );
}

#[tokio::test]
async fn overloaded_503_is_overloaded_and_plain_503_a_server_error() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(503).set_body_json(error_body("overloaded_error", "Overloaded")),
        )
        .up_to_n_times(3)
        .expect(3)
        .mount(&server)
        .await;
    messages()
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream unavailable"))
        .expect(3)
        .mount(&server)
        .await;
    let llm = provider(&server);

    let err = llm.call(&LlmRequest::new("haiku", "hi")).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Overloaded {
                status: 503,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let err = llm.call(&LlmRequest::new("haiku", "hi")).await.unwrap_err();
    match err {
        LlmError::Server {
            status,
            attempts,
            message,
            ..
        } => {
            assert_eq!((status, attempts), (503, 3));
            assert!(message.contains("upstream unavailable"), "{message}");
        }
        other => panic!("expected Server, got {other:?}"),
    }
}

#[tokio::test]
async fn unreachable_server_is_a_network_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let llm = AnthropicProvider::new(config(&format!("http://127.0.0.1:{port}"))).unwrap();
    let err = llm.call(&LlmRequest::new("haiku", "hi")).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::Network { provider, .. } if provider == "anthropic"),
        "{err:?}"
    );
}

fn snapshot_request() -> LlmRequest {
    let mut request = LlmRequest::new("sonnet", "What is the weather in Paris and in Atlantis?")
        .system("You are a weather assistant.")
        .temperature(0.2)
        .max_tokens(512)
        .tools(vec![
            ToolDefinition {
                name: "weather".into(),
                description: "Current weather of a city.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                }),
            },
            ToolDefinition {
                name: "time".into(),
                description: "Local time in a timezone.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"tz": {"type": "string"}},
                    "required": ["tz"]
                }),
            },
        ]);
    request.tool_choice = Some(ToolChoice::Auto);
    request.messages.push(Message::blocks(
        MessageRole::Assistant,
        vec![
            ContentBlock::text("Let me check."),
            ContentBlock::ToolUse {
                id: "toolu_paris".into(),
                name: "weather".into(),
                input: json!({"city": "Paris"}),
            },
            ContentBlock::ToolUse {
                id: "toolu_atlantis".into(),
                name: "weather".into(),
                input: json!({"city": "Atlantis"}),
            },
        ],
    ));
    request.messages.push(Message::blocks(
        MessageRole::User,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "toolu_paris".into(),
                content: "18°C, cloudy".into(),
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "toolu_atlantis".into(),
                content: "unknown city: Atlantis".into(),
                is_error: true,
            },
        ],
    ));
    request
}

#[tokio::test]
async fn request_body_snapshot() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("Paris: 18°C.")))
        .expect(1)
        .mount(&server)
        .await;

    provider(&server).call(&snapshot_request()).await.unwrap();

    let body: Value = requests(&server).await[0].body_json().unwrap();
    assert_json_snapshot!("anthropic_request_body", body);
}
