//! `RecordReplayProvider`: record a scripted provider into a cassette, replay it.

// Test helpers outside `#[test]` functions may unwrap too: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openvibe_primitives::testing::{RecordReplayProvider, ScriptedLlm, request_key};
use openvibe_protocols::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, StopReason,
};
use serde_json::{Value, json};

/// A fresh cassette path in a fresh directory under the system temp dir
/// (the directory does not exist yet: recording must create it).
fn cassette(name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir()
        .join(format!(
            "openvibe-record-replay-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ))
        .join("cassettes")
        .join(format!("{name}.jsonl"))
}

fn cleanup(path: &std::path::Path) {
    if let Some(dir) = path.parent().and_then(|p| p.parent()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn tool_answer() -> LlmResponse {
    LlmResponse::from_blocks(vec![
        ContentBlock::text("Looking it up."),
        ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "lookup".into(),
            input: json!({"q": "capital of France"}),
        },
    ])
    .with_usage(10, 4)
    .with_model("claude-haiku-4-5-20251001")
}

#[tokio::test]
async fn replay_answers_like_the_recording_without_the_inner_provider() {
    let path = cassette("basic");
    let inner = ScriptedLlm::new([
        tool_answer(),
        LlmResponse::text("Paris").with_usage(3, 1),
        LlmResponse::text("Paris, again").with_usage(3, 2),
    ]);
    let first = LlmRequest::new("haiku", "Capital of France?").system("Be brief.");
    let second = LlmRequest::new("haiku", "And say it once more");

    let recorder = RecordReplayProvider::record(Arc::new(inner.clone()), &path);
    assert!(!recorder.is_replaying());
    let recorded = vec![
        recorder.call(&first).await.unwrap(),
        recorder.call(&second).await.unwrap(),
        // The same request again gets a different answer: both are kept.
        recorder.call(&second).await.unwrap(),
    ];
    assert_eq!(inner.call_count(), 3);
    assert_eq!(recorded[0], tool_answer());

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["key"], request_key(&first));
    assert_eq!(lines[0]["request"]["system"], "Be brief.");
    assert_eq!(lines[1]["response"]["content"], "Paris");

    let replayer = RecordReplayProvider::replay(&path).unwrap();
    assert!(replayer.is_replaying());
    assert_eq!(replayer.cassette(), path.as_path());
    let replayed = vec![
        replayer.call(&first).await.unwrap(),
        replayer.call(&second).await.unwrap(),
        replayer.call(&second).await.unwrap(),
    ];
    assert_eq!(replayed, recorded);
    assert_eq!(replayed[0].stop_reason, StopReason::ToolUse);
    // Once exhausted, the last recorded answer repeats.
    assert_eq!(
        replayer.call(&second).await.unwrap().content,
        "Paris, again"
    );
    assert_eq!(replayer.call(&first).await.unwrap(), tool_answer());
    // The inner provider was never called again.
    assert_eq!(inner.call_count(), 3);

    cleanup(&path);
}

#[tokio::test]
async fn a_changed_request_is_not_recorded() {
    let path = cassette("miss");
    let recorder = RecordReplayProvider::record(
        Arc::new(ScriptedLlm::always(LlmResponse::text("ok"))),
        &path,
    );
    recorder
        .call(&LlmRequest::new("haiku", "original question"))
        .await
        .unwrap();

    let replayer = RecordReplayProvider::replay(&path).unwrap();
    let changed = LlmRequest::new(
        "haiku",
        "a different question, and a rather long one that goes on and on past eighty characters",
    );
    let err = replayer.call(&changed).await.unwrap_err();
    match &err {
        LlmError::NotRecorded { key, summary } => {
            assert_eq!(key, &request_key(&changed));
            assert!(summary.contains("haiku"), "{summary}");
            assert!(summary.contains("a different question"), "{summary}");
            assert!(!summary.contains("eighty characters"), "{summary}");
        }
        other => panic!("expected NotRecorded, got {other:?}"),
    }
    assert!(err.to_string().contains(&request_key(&changed)));
    // Any change counts, not only the text.
    let hotter = LlmRequest::new("haiku", "original question").temperature(0.9);
    assert!(matches!(
        replayer.call(&hotter).await,
        Err(LlmError::NotRecorded { .. })
    ));

    cleanup(&path);
}

#[tokio::test]
async fn inner_errors_pass_through_and_are_not_recorded() {
    let path = cassette("errors");
    let inner = ScriptedLlm::default();
    inner.push_error(LlmError::Other("boom".into()));
    inner.push(LlmResponse::text("fine"));
    let recorder = RecordReplayProvider::record(Arc::new(inner), &path);
    let request = LlmRequest::new("haiku", "hi");

    assert_eq!(
        recorder.call(&request).await.unwrap_err(),
        LlmError::Other("boom".into())
    );
    assert_eq!(recorder.call(&request).await.unwrap().content, "fine");

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1);

    cleanup(&path);
}

#[tokio::test]
async fn a_malformed_line_is_reported_with_its_number() {
    let path = cassette("broken");
    let recorder = RecordReplayProvider::record(
        Arc::new(ScriptedLlm::always(LlmResponse::text("ok"))),
        &path,
    );
    recorder
        .call(&LlmRequest::new("haiku", "one"))
        .await
        .unwrap();
    recorder
        .call(&LlmRequest::new("haiku", "two"))
        .await
        .unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push('\n'); // blank lines are fine
    text.push_str("{\"key\": \"abc\", \"request\": tru\n");
    std::fs::write(&path, text).unwrap();

    let err = RecordReplayProvider::replay(&path).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, LlmError::Other(_)), "{err:?}");
    assert!(message.contains("line 4"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");

    cleanup(&path);
}

#[tokio::test]
async fn a_missing_cassette_names_the_file() {
    let path = cassette("missing");
    let err = RecordReplayProvider::replay(&path).unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn an_unwritable_cassette_is_an_error_naming_the_path() {
    let path = cassette("blocked");
    // A file where the cassette's directory should be.
    let dir = path.parent().unwrap();
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(dir, "not a directory").unwrap();
    let recorder = RecordReplayProvider::record(
        Arc::new(ScriptedLlm::always(LlmResponse::text("ok"))),
        &path,
    );

    let err = recorder
        .call(&LlmRequest::new("haiku", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Other(m) if m.contains(&path.display().to_string())),
        "{err:?}"
    );

    cleanup(&path);
}

#[test]
fn request_key_is_stable_and_hex() {
    let request = LlmRequest::new("haiku", "hi");
    let key = request_key(&request);
    assert_eq!(key.len(), 16);
    assert!(
        key.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_eq!(key, request_key(&request.clone()));
    assert_ne!(key, request_key(&LlmRequest::new("sonnet", "hi")));
}
