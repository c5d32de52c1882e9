//! The full example, replayed: the raw log holds every call the cassette
//! answered (same requests, same answers), each node's calls link to its
//! episode, and the reflection cites them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use openvibe::RoleRuntime;
use openvibe::full_example::{self, CASSETTE};
use openvibe::memory::in_memory_stores;
use openvibe::primitives::testing::{RecordReplayProvider, request_key};
use openvibe::protocols::LlmResponse;

fn config() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/full")
}

#[tokio::test]
async fn the_raw_log_holds_every_call_the_cassette_answered() {
    let llm = RecordReplayProvider::replay_str(CASSETTE, "examples/full/cassette.jsonl").unwrap();
    let runtime = RoleRuntime::new(Arc::new(llm)).with_stores(in_memory_stores());
    let run = full_example::run(&config(), runtime).await.unwrap();

    // The cassette: one answer per distinct request.
    let mut cassette: BTreeMap<String, LlmResponse> = BTreeMap::new();
    for line in CASSETTE.lines().filter(|l| !l.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let response = serde_json::from_value(entry["response"].clone()).unwrap();
        cassette.insert(entry["key"].as_str().unwrap().to_owned(), response);
    }
    assert_eq!(
        cassette.len(),
        CASSETTE.lines().filter(|l| !l.trim().is_empty()).count()
    );
    let mut logged: BTreeMap<String, LlmResponse> = BTreeMap::new();
    for call in &run.raw_calls {
        assert_eq!(call.agent_id, "cro");
        let key = request_key(&call.request);
        let response = call.response.clone().expect("every call was answered");
        assert!(logged.insert(key, response).is_none(), "each request once");
    }
    assert_eq!(
        logged, cassette,
        "the raw log holds exactly the cassette's calls"
    );

    // L2 → L1 and L3 → L1.
    for episode in &run.episodes {
        let calls = run
            .pyramid
            .memory()
            .raw_calls_of(&episode.id)
            .await
            .unwrap();
        assert!(!calls.is_empty(), "{}", episode.node_name);
        assert!(calls.iter().all(|c| c.node_name == episode.node_name));
    }
    let node_calls = run
        .raw_calls
        .iter()
        .filter(|c| c.episode_id.is_some())
        .count();
    assert_eq!(run.distillation.reflection.cited_calls.len(), node_calls);
    let first = &run.distillation.reflection.created[0];
    let lineage = run.pyramid.trace(&first.id).await.unwrap();
    assert_eq!(lineage.episodes.len(), 3);
    assert_eq!(lineage.raw_calls.len(), node_calls);
}

#[tokio::test]
async fn a_bad_configuration_is_a_positioned_error() {
    let dir = std::env::temp_dir().join(format!("openvibe-full-bad-{}", std::process::id()));
    full_example::write_config(&dir).unwrap();
    std::fs::write(
        dir.join("roles.yaml"),
        "roles:\n  - id: cro\n    operators: [revenue_ops, ghost_ops]\n",
    )
    .unwrap();
    let runtime = RoleRuntime::new(Arc::new(full_example::stand_in()));
    let err = full_example::run(&dir, runtime).await.unwrap_err();
    assert!(err.to_string().contains("ghost_ops"), "{err}");
    std::fs::write(dir.join("roles.yaml"), "roles:\n  - id: cro\n    sol: x\n").unwrap();
    let runtime = RoleRuntime::new(Arc::new(full_example::stand_in()));
    let err = full_example::run(&dir, runtime).await.unwrap_err();
    assert!(err.to_string().contains("roles.yaml:3:"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
