//! `OpenAiProvider` against a local mock of an OpenAI-compatible server.

// Test helpers outside `#[test]` functions may unwrap too: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use insta::assert_json_snapshot;
use openvibe_primitives::{OpenAiProvider, ProviderConfig};
use openvibe_protocols::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, Message, MessageRole, StopReason, ToolChoice,
    ToolDefinition,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockBuilder, MockServer, Request, ResponseTemplate};

fn config(base_url: &str) -> ProviderConfig {
    support::quick_config(base_url, Some("sk-test"))
}

/// The provider pointed at the mock, with the `/v1` prefix in the base URL
/// like a real OpenAI-compatible server.
fn provider(server: &MockServer) -> OpenAiProvider {
    OpenAiProvider::new(config(&format!("{}/v1", server.uri()))).unwrap()
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28}
    })
}

fn text_answer(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

fn chat() -> MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

#[tokio::test]
async fn plain_text_reply() {
    let server = MockServer::start().await;
    chat()
        .and(header("authorization", "Bearer sk-test"))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("Hello!")))
        .expect(1)
        .mount(&server)
        .await;

    let answer = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "Say hello").max_tokens(100))
        .await
        .unwrap();

    assert_eq!(answer.content, "Hello!");
    assert_eq!((answer.tokens_in, answer.tokens_out), (21, 7));
    assert_eq!(answer.model, "gpt-4o-mini-2024-07-18");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.raw_content, vec![ContentBlock::text("Hello!")]);

    let sent = requests(&server).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].url.path(), "/v1/chat/completions");
    let body: Value = sent[0].body_json().unwrap();
    // The model is passed through unchanged; no system message when the
    // system prompt is empty; no tools.
    assert_eq!(
        body,
        json!({
            "model": "gpt-4o-mini",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "Say hello"}]
        })
    );
}

#[tokio::test]
async fn without_a_key_no_authorization_is_sent_and_with_model_forces_the_model() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "llama3.1:8b",
            "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}]
        })))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&format!("{}/v1/", server.uri()));
    config.api_key = None;
    let llm = OpenAiProvider::new(config)
        .unwrap()
        .with_model("llama3.1:8b");

    let answer = llm.call(&LlmRequest::new("haiku", "hi")).await.unwrap();
    assert_eq!(answer.content, "hi");
    assert_eq!(answer.stop_reason, StopReason::MaxTokens);
    assert_eq!((answer.tokens_in, answer.tokens_out), (0, 0));

    let sent = requests(&server).await;
    assert!(sent[0].headers.get("authorization").is_none());
    let body: Value = sent[0].body_json().unwrap();
    assert_eq!(body["model"], "llama3.1:8b");
}

#[tokio::test]
async fn tool_use_round_trip_with_two_calls() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}
                ]
            }),
            "tool_calls",
        )))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    chat()
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
    let mut request =
        LlmRequest::new("gpt-4o-mini", "Weather in Paris and Rome?").tools(vec![weather]);

    let first = llm.call(&request).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert_eq!(first.content, "");
    let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    assert_eq!(first.tool_calls[0].input, json!({"city": "Paris"}));
    assert_eq!(first.tool_calls[1].input, json!({"city": "Rome"}));
    // The assistant turn, ready to go back into the conversation.
    assert_eq!(
        first.raw_content,
        vec![
            ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "weather".into(),
                input: json!({"city": "Paris"}),
            },
            ContentBlock::ToolUse {
                id: "call_2".into(),
                name: "weather".into(),
                input: json!({"city": "Rome"}),
            },
        ]
    );

    request.messages.push(Message::blocks(
        MessageRole::Assistant,
        first.raw_content.clone(),
    ));
    request.messages.push(Message::blocks(
        MessageRole::User,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "20°C".into(),
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "call_2".into(),
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
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "weather");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], Value::Null);
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(messages[1]["tool_calls"][1]["id"], "call_2");
    let args: Value = serde_json::from_str(
        messages[1]["tool_calls"][1]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"city": "Rome"}));
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "20°C"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "25°C"})
    );
}

#[tokio::test]
async fn invalid_tool_arguments_are_kept_as_a_string() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({
                "role": "assistant",
                "content": "Calling.",
                "tool_calls": [{"id": "call_x", "type": "function",
                                "function": {"name": "weather", "arguments": "{city: Paris"}}]
            }),
            "tool_calls",
        )))
        .mount(&server)
        .await;

    let answer = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap();
    assert_eq!(answer.content, "Calling.");
    assert_eq!(answer.tool_calls[0].input, json!("{city: Paris"));
    assert_eq!(answer.raw_content[0], ContentBlock::text("Calling."));
}

#[tokio::test]
async fn server_error_is_retried_then_succeeds() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(529).set_body_json(error_body("overloaded", "try later")),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("made it")))
        .expect(1)
        .mount(&server)
        .await;

    let answer = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap();
    assert_eq!(answer.content, "made it");
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn rate_limit_honours_retry_after_seconds() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(error_body("rate_limit_exceeded", "Slow down")),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("ok")))
        .expect(1)
        .mount(&server)
        .await;

    let started = Instant::now();
    let answer = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
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
async fn rate_limit_honours_retry_after_ms() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "300")
                .insert_header("retry-after", "4")
                .set_body_json(error_body("rate_limit_exceeded", "Slow down")),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("ok")))
        .expect(1)
        .mount(&server)
        .await;

    let started = Instant::now();
    provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(280) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_without_retry() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(401).set_body_json(error_body(
            "invalid_request_error",
            "Incorrect API key provided",
        )))
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::Auth {
            provider: "openai".into(),
            status: 401,
            message: "Incorrect API key provided".into(),
            key_hint: "OPENAI_API_KEY".into(),
        }
    );
}

#[tokio::test]
async fn forbidden_is_an_auth_error_without_retry() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(403).set_body_string("forbidden"))
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Auth { status: 403, .. }), "{err:?}");
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(400).set_body_json(error_body(
            "invalid_request_error",
            "Invalid schema for function 'weather'",
        )))
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::BadRequest {
            provider: "openai".into(),
            status: 400,
            message: "Invalid schema for function 'weather'".into(),
        }
    );
}

#[tokio::test]
async fn unprocessable_is_a_bad_request_without_retry() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(422).set_body_json(json!({"detail": "messages: field required"})),
        )
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::BadRequest { status: 422, message, .. } if message == "messages: field required"),
        "{err:?}"
    );
}

#[tokio::test]
async fn malformed_body_is_a_decode_error() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_string("not json"))
        .expect(1)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    match err {
        LlmError::Decode { provider, message } => {
            assert_eq!(provider, "openai");
            assert!(message.contains("not json"), "{message}");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

#[tokio::test]
async fn empty_choices_is_a_decode_error() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"choices": []})))
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Decode { message, .. } if message.contains("choices")),
        "{err:?}"
    );
}

#[tokio::test]
async fn slow_server_times_out_without_retry() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(text_answer("too late"))
                .set_delay(Duration::from_secs(2)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&format!("{}/v1", server.uri()));
    config.timeout = Duration::from_millis(200);
    let llm = OpenAiProvider::new(config).unwrap();

    let started = Instant::now();
    let err = llm
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert_eq!(
        err,
        LlmError::Timeout {
            provider: "openai".into(),
            after: Duration::from_millis(200),
        }
    );
}

#[tokio::test]
async fn server_error_exhaustion_reports_every_attempt() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(503).set_body_json(error_body("server_error", "unavailable")),
        )
        .expect(3)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::Server {
            provider: "openai".into(),
            status: 503,
            message: "unavailable".into(),
            attempts: 3,
        }
    );
}

#[tokio::test]
async fn overload_exhaustion_reports_every_attempt() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(529).set_body_string(""))
        .expect(3)
        .mount(&server)
        .await;

    let err = provider(&server)
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Overloaded {
                status: 529,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn retries_can_be_disabled() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(500).set_body_json(error_body("server_error", "boom")))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = config(&format!("{}/v1", server.uri()));
    config.retry.max_retries = 0;

    let err = OpenAiProvider::new(config)
        .unwrap()
        .call(&LlmRequest::new("gpt-4o-mini", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Server {
                status: 500,
                attempts: 1,
                ..
            }
        ),
        "{err:?}"
    );
}

fn snapshot_request() -> LlmRequest {
    let mut request = LlmRequest::new(
        "gpt-4o-mini",
        "What is the weather in Paris and in Atlantis?",
    )
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
                id: "call_paris".into(),
                name: "weather".into(),
                input: json!({"city": "Paris"}),
            },
            ContentBlock::ToolUse {
                id: "call_atlantis".into(),
                name: "weather".into(),
                input: json!({"city": "Atlantis"}),
            },
        ],
    ));
    request.messages.push(Message::blocks(
        MessageRole::User,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "call_paris".into(),
                content: "18°C, cloudy".into(),
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "call_atlantis".into(),
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
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("Paris: 18°C.")))
        .expect(1)
        .mount(&server)
        .await;

    provider(&server).call(&snapshot_request()).await.unwrap();

    let body: Value = requests(&server).await[0].body_json().unwrap();
    assert_json_snapshot!("openai_request_body", body);
}

#[tokio::test]
async fn tool_choice_variants_map_to_openai_values() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(text_answer("ok")))
        .expect(3)
        .mount(&server)
        .await;
    let llm = provider(&server);
    for choice in [
        ToolChoice::Any,
        ToolChoice::None,
        ToolChoice::Tool {
            name: "weather".into(),
        },
    ] {
        let mut request = LlmRequest::new("gpt-4o-mini", "hi");
        request.tool_choice = Some(choice);
        llm.call(&request).await.unwrap();
    }
    let sent: Vec<Value> = requests(&server)
        .await
        .iter()
        .map(|r| r.body_json::<Value>().unwrap()["tool_choice"].clone())
        .collect();
    assert_eq!(
        sent,
        [
            json!("required"),
            json!("none"),
            json!({"type": "function", "function": {"name": "weather"}})
        ]
    );
}
