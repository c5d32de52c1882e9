//! Provider faults beyond the plain error statuses: a connection reset in
//! the middle of the body, a truncated JSON answer, a 200 carrying an error
//! object, absurd `retry-after` values; and the token-limit field of
//! OpenAI's reasoning models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use openvibe_primitives::{OpenAiProvider, ProviderConfig, TokenLimitField};
use openvibe_protocols::{LlmError, LlmProvider, LlmRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(base_url: &str) -> ProviderConfig {
    support::quick_config(base_url, None)
}

fn answer(text: &str) -> Value {
    json!({
        "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
}

async fn mock() -> (MockServer, OpenAiProvider) {
    let server = MockServer::start().await;
    let provider = OpenAiProvider::new(config(&format!("{}/v1", server.uri()))).unwrap();
    (server, provider)
}

fn chat() -> wiremock::MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

/// A server whose first answer breaks off in the middle of the body (the
/// connection closes after half of the promised bytes); the second is whole.
#[tokio::test]
async fn a_connection_reset_mid_body_is_retried() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let good = answer("after the reset").to_string();
    let server = tokio::spawn(async move {
        for n in 0..2 {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 65536];
            let _ = socket.read(&mut buf).await.unwrap();
            let reply = if n == 0 {
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n{\"choices\": [{\"ind".to_owned()
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{good}",
                    good.len()
                )
            };
            socket.write_all(reply.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    let provider = OpenAiProvider::new(config(&format!("http://{addr}/v1"))).unwrap();
    let reply = provider.call(&LlmRequest::new("m", "hi")).await.unwrap();
    assert_eq!(reply.content, "after the reset");
    server.await.unwrap();
}

#[tokio::test]
async fn a_truncated_json_answer_is_a_decode_error_not_retried() {
    let (server, provider) = mock().await;
    chat()
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(r#"{"choices": [{"index": 0, "mess"#, "application/json"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let err = provider
        .call(&LlmRequest::new("m", "hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Decode { .. }), "{err:?}");
}

#[tokio::test]
async fn a_200_with_an_error_object_is_a_server_error_and_retried() {
    let (server, provider) = mock().await;
    chat()
        .respond_with(
            ResponseTemplate::new(200).set_body_json(
                json!({"error": {"message": "upstream model crashed", "code": 502}}),
            ),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer("recovered")))
        .expect(1)
        .mount(&server)
        .await;
    assert_eq!(
        provider
            .call(&LlmRequest::new("m", "hi"))
            .await
            .unwrap()
            .content,
        "recovered"
    );
    // Every attempt errs: a typed server error naming what the server said.
    let (server, provider) = mock().await;
    chat()
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"error": {"message": "upstream model crashed"}})),
        )
        .expect(3)
        .mount(&server)
        .await;
    match provider
        .call(&LlmRequest::new("m", "hi"))
        .await
        .unwrap_err()
    {
        LlmError::Server {
            message, attempts, ..
        } => {
            assert!(message.contains("upstream model crashed"), "{message}");
            assert_eq!(attempts, 3);
        }
        other => panic!("{other:?}"),
    }
}

/// `retry-after` values no server should send: negative (ignored: backoff),
/// a date in the past (no wait), a year away (beyond `max_retry_after`:
/// the call fails at once instead of sleeping for a year).
#[tokio::test]
async fn absurd_retry_after_values_are_capped() {
    for (value, retried) in [
        ("-30", true),
        ("Wed, 21 Oct 2015 07:28:00 GMT", true),
        ("31536000", false),
        ("Fri, 01 Jan 2100 00:00:00 GMT", false),
        ("soon", true),
    ] {
        let (server, provider) = mock().await;
        chat()
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", value)
                    .set_body_json(json!({"error": {"message": "slow down"}})),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
        chat()
            .respond_with(ResponseTemplate::new(200).set_body_json(answer("ok")))
            .mount(&server)
            .await;
        let started = Instant::now();
        let result = provider.call(&LlmRequest::new("m", "hi")).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{value}: waited {:?}",
            started.elapsed()
        );
        if retried {
            assert_eq!(result.unwrap().content, "ok", "{value}");
        } else {
            assert!(
                matches!(result, Err(LlmError::RateLimited { .. })),
                "{value}: {result:?}"
            );
        }
    }
}

async fn sent_body(provider: OpenAiProvider, server: &MockServer, model: &str) -> Value {
    chat()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer("ok")))
        .mount(server)
        .await;
    let mut request = LlmRequest::new(model, "hi");
    request.max_tokens = 321;
    provider.call(&request).await.unwrap();
    let sent = server.received_requests().await.unwrap();
    serde_json::from_slice(&sent.last().unwrap().body).unwrap()
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens() {
    for (model, field, completion) in [
        ("gpt-4o-mini", TokenLimitField::Auto, false),
        ("o3-mini", TokenLimitField::Auto, true),
        ("o1", TokenLimitField::Auto, true),
        ("openai/gpt-5-nano", TokenLimitField::Auto, true),
        ("llama3.1", TokenLimitField::MaxCompletionTokens, true),
        ("o4-mini", TokenLimitField::MaxTokens, false),
    ] {
        let (server, provider) = mock().await;
        let body = sent_body(provider.with_token_limit_field(field), &server, model).await;
        let (sent, absent) = if completion {
            ("max_completion_tokens", "max_tokens")
        } else {
            ("max_tokens", "max_completion_tokens")
        };
        assert_eq!(body[sent], 321, "{model}: {body}");
        assert!(body.get(absent).is_none(), "{model}: {body}");
    }
}
