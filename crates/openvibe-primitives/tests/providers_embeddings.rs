//! `OpenAiEmbedder` against a local mock of an OpenAI-compatible
//! `/v1/embeddings` server: the wire format, batching, answer checks, the
//! providers' retry rules, and the content cache in front of it.

// Test helpers outside `#[test]` functions may unwrap too: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use insta::assert_json_snapshot;
use openvibe_primitives::OpenAiEmbedder;
use openvibe_protocols::{CachedEmbedder, EmbedError, Embedder, LlmError};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockBuilder, MockServer, Request, Respond, ResponseTemplate};

const DIMS: usize = 3;

fn embedder(server: &MockServer) -> OpenAiEmbedder {
    let config = support::quick_config(&format!("{}/v1", server.uri()), Some("sk-test"));
    OpenAiEmbedder::new(config, "text-embedding-3-small", DIMS).unwrap()
}

fn embeddings() -> MockBuilder {
    Mock::given(method("POST")).and(path("/v1/embeddings"))
}

/// The vector the fake model gives a text: its length, its first byte, 1.
fn vector_of(text: &str) -> Vec<f32> {
    vec![
        text.len() as f32,
        f32::from(text.bytes().next().unwrap_or(0)),
        1.0,
    ]
}

/// Answers like OpenAI: one item per input with its index, listed in reverse
/// order (the index, not the position, says which input it belongs to).
struct FakeModel;

impl Respond for FakeModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let inputs: Vec<String> = serde_json::from_value(body["input"].clone()).unwrap();
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": vector_of(text)}))
            .collect();
        data.reverse();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": data,
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 5, "total_tokens": 5}
        }))
    }
}

fn answer(vectors: &[Value]) -> ResponseTemplate {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, v)| json!({"object": "embedding", "index": index, "embedding": v}))
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": data}))
}

fn texts(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn batches_go_out_in_the_wire_format_and_come_back_in_input_order() {
    let server = MockServer::start().await;
    embeddings()
        .and(header("authorization", "Bearer sk-test"))
        .and(header("content-type", "application/json"))
        .respond_with(FakeModel)
        .expect(2)
        .mount(&server)
        .await;
    let input = texts(&["alpha", "be", "gamma ray"]);
    let vectors = embedder(&server)
        .with_batch_size(2)
        .embed(&input)
        .await
        .unwrap();
    let expected: Vec<Vec<f32>> = input.iter().map(|t| vector_of(t)).collect();
    assert_eq!(vectors, expected);
    let sent = bodies(&server).await;
    assert_json_snapshot!("embeddings_request_body", sent[0]);
    assert_eq!(sent[1]["input"], json!(["gamma ray"]));
}

#[tokio::test]
async fn nothing_to_embed_sends_nothing() {
    let server = MockServer::start().await;
    embeddings()
        .respond_with(FakeModel)
        .expect(0)
        .mount(&server)
        .await;
    assert!(embedder(&server).embed(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn shortened_vectors_are_requested_and_named_apart() {
    let server = MockServer::start().await;
    embeddings().respond_with(FakeModel).mount(&server).await;
    let e = embedder(&server).with_requested_dimensions();
    assert_eq!(e.model_id(), "text-embedding-3-small@3");
    e.embed(&texts(&["x"])).await.unwrap();
    assert_eq!(bodies(&server).await[0]["dimensions"], json!(3));
}

#[tokio::test]
async fn overload_and_rate_limits_are_retried_like_the_llm_providers() {
    let server = MockServer::start().await;
    embeddings()
        .respond_with(
            ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "busy"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    embeddings()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "5")
                .set_body_json(json!({"error": {"message": "slow down", "type": "rate_limit"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    embeddings().respond_with(FakeModel).mount(&server).await;
    let vectors = embedder(&server).embed(&texts(&["ok"])).await.unwrap();
    assert_eq!(vectors, [vector_of("ok")]);
    assert_eq!(
        bodies(&server).await.len(),
        3,
        "two failures, then the answer"
    );
}

#[tokio::test]
async fn retries_stop_at_the_policy_and_say_so() {
    let server = MockServer::start().await;
    embeddings()
        .respond_with(
            ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "boom"}})),
        )
        .expect(3)
        .mount(&server)
        .await;
    let err = embedder(&server).embed(&texts(&["x"])).await.unwrap_err();
    assert!(
        matches!(
            &err,
            EmbedError::Provider(LlmError::Server { status: 500, attempts: 3, message, .. }) if message == "boom"
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn bad_credentials_and_bad_requests_are_not_retried() {
    let server = MockServer::start().await;
    embeddings()
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let err = embedder(&server).embed(&texts(&["x"])).await.unwrap_err();
    assert!(
        matches!(&err, EmbedError::Provider(LlmError::Auth { status: 401, key_hint, .. }) if key_hint == "OPENAI_API_KEY"),
        "{err:?}"
    );
    assert!(
        !format!("{err} {err:?}").contains("sk-test"),
        "the key never shows"
    );

    let server = MockServer::start().await;
    embeddings()
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "'$.input' is invalid", "type": "invalid_request_error"}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let err = embedder(&server).embed(&texts(&[""])).await.unwrap_err();
    assert!(
        matches!(
            &err,
            EmbedError::Provider(LlmError::BadRequest { status: 400, .. })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn answers_that_do_not_fit_the_request_are_refused() {
    let cases: Vec<(ResponseTemplate, &str)> = vec![
        (answer(&[json!([1.0, 2.0])]), "2 dimensions, expected 3"),
        (
            answer(&[json!([1.0, 2.0, 3.0]), json!([1.0, 2.0, 3.0])]),
            "asked for 1 embeddings, got 2",
        ),
        (answer(&[json!([1e39, 0.0, 0.0])]), "number out of range"),
        (
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"index": 4, "embedding": [1.0, 2.0, 3.0]}]})),
            "index 4 is out of range",
        ),
        (
            ResponseTemplate::new(200).set_body_string("{\"data\": [{\"index\""),
            "could not decode",
        ),
    ];
    for (template, expected) in cases {
        let server = MockServer::start().await;
        embeddings()
            .respond_with(template)
            .expect(1)
            .mount(&server)
            .await;
        let err = embedder(&server).embed(&texts(&["x"])).await.unwrap_err();
        assert!(err.to_string().contains(expected), "{expected}: {err}");
    }

    let server = MockServer::start().await;
    embeddings()
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [
            {"index": 0, "embedding": [1.0, 2.0, 3.0]},
            {"index": 0, "embedding": [1.0, 2.0, 3.0]}
        ]})))
        .mount(&server)
        .await;
    let err = embedder(&server)
        .embed(&texts(&["x", "y"]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("index 0 repeats"), "{err}");
}

#[tokio::test]
async fn the_cache_in_front_never_sends_a_text_twice() {
    let server = MockServer::start().await;
    embeddings().respond_with(FakeModel).mount(&server).await;
    let cached = CachedEmbedder::new(Arc::new(embedder(&server)), 1_000);
    let first = cached.embed(&texts(&["a", "b", "a"])).await.unwrap();
    let second = cached.embed(&texts(&["b", "c"])).await.unwrap();
    assert_eq!(first, [vector_of("a"), vector_of("b"), vector_of("a")]);
    assert_eq!(second, [vector_of("b"), vector_of("c")]);
    let inputs: Vec<Value> = bodies(&server)
        .await
        .iter()
        .map(|b| b["input"].clone())
        .collect();
    assert_eq!(inputs, [json!(["a", "b"]), json!(["c"])]);
}
