//! The full example, replayed: the raw log holds every call the cassette
//! answered (same requests, same answers), each node's calls link to its
//! episode, and the reflection cites them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use openvibe::RoleRuntime;
use openvibe::full_example::{self, CASSETTE};
use openvibe::memory::{Decisions, in_memory_stores};
use openvibe::primitives::testing::{RecordReplayProvider, request_key};
use openvibe::protocols::LlmResponse;

fn config() -> std::path::PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"))
        .join("examples/full")
}

#[tokio::test]
async fn the_raw_log_holds_every_call_the_cassette_answered() {
    let llm = RecordReplayProvider::replay_str(CASSETTE, "examples/full/cassette.jsonl").unwrap();
    let runtime = RoleRuntime::new(Arc::new(llm))
        .with_embedder(Arc::new(full_example::embeddings().unwrap()))
        .with_stores(in_memory_stores());
    let run = full_example::run(&config(), runtime).await.unwrap();

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
    // The CRO's two node runs (the case study is the CMO's).
    assert_eq!(lineage.episodes.len(), 2);
    assert_eq!(lineage.raw_calls.len(), node_calls);
    // The two weeks in the CRO's loop: reflections learn beliefs a person
    // approves; the first is superseded by the second.
    let stores = run.runtime.stores().cloned().unwrap();
    let ann = openvibe::protocols::CallerContext::user("ann")
        .with_clearance(openvibe::protocols::Clearance::unrestricted());
    // As in `openvibe demo --full`: the large discount is approved and runs.
    for proposal in run.decisions.iter().filter_map(|h| h.proposal.as_ref()) {
        stores
            .decide_proposal(
                &ann,
                &proposal.id,
                &openvibe::protocols::Verdict::approve("strategic account"),
            )
            .await
            .unwrap();
        run.runtime.run_approved(&proposal.id).await.unwrap();
    }
    let days = full_example::run_two_weeks(&run, |belief| {
        let stores = stores.clone();
        let ann = ann.clone();
        async move {
            stores
                .decide_belief(
                    &ann,
                    &belief.id,
                    &openvibe::protocols::Verdict {
                        supersede: belief.refines.is_some(),
                        constraint: belief.refines.is_some(),
                        ..openvibe::protocols::Verdict::approve("seen it")
                    },
                )
                .await
                .map(|b| b.status.to_string())
                .map_err(|e| e.to_string())
        }
    })
    .await
    .unwrap();
    let proposed: Vec<_> = days.iter().flat_map(|d| &d.proposed).collect();
    assert_eq!(
        proposed.len(),
        2,
        "one belief, then the one that follows it"
    );
    assert_eq!(
        proposed[1].0.refines.as_deref(),
        Some(proposed[0].0.id.as_str()),
        "without the model's check it refines; the person approves it superseding"
    );
    let cited = days
        .iter()
        .filter_map(|d| d.trace.decision.as_ref())
        .filter(|d| {
            d.confidence
                .evidence
                .iter()
                .any(|e| e.id == proposed[0].0.id)
        })
        .count();
    assert!(
        cited >= 3,
        "the decisions after the approval cite the belief"
    );
    // Day 12, a renewal in the `customer` domain worded with none of the
    // second belief's words: the belief (a constraint, of `revenue`) is
    // found by meaning alone and caps the act it would have been.
    let renewal = days.iter().find(|d| d.day == 12).unwrap();
    let decision = renewal.trace.decision.as_ref().unwrap();
    assert_eq!(decision.event.domain, "customer");
    assert_eq!(decision.outcome, openvibe::protocols::Outcome::Propose);
    let belief = decision
        .confidence
        .evidence
        .iter()
        .find(|e| e.id == proposed[1].0.id)
        .expect("the renewal cites the second belief");
    assert!(belief.constraint);
    assert!(
        belief.why.starts_with("vector #") && !belief.why.contains("full_text"),
        "found by meaning only: {}",
        belief.why
    );
    assert!(
        decision.reason.contains("is a constraint"),
        "{}",
        decision.reason
    );
    let [(moved, without)] = renewal.moved_by.as_slice() else {
        panic!("the belief moved the renewal: {:?}", renewal.moved_by);
    };
    assert_eq!(moved, &proposed[1].0.id);
    assert_eq!(without.outcome, openvibe::protocols::Outcome::Act);
    // Every call of both roles: the CRO's, and the CMO's case study.
    let query = openvibe::protocols::RawCallQuery::new().limit(100);
    let mut all_calls = Vec::new();
    for role in ["cro", "cmo"] {
        let pyramid = run.runtime.get_role(role).unwrap().pyramid().unwrap();
        let calls = openvibe::protocols::Page::all(|cursor| {
            let query = match cursor {
                Some(cursor) => query.clone().cursor(cursor),
                None => query.clone(),
            };
            let pyramid = pyramid.clone();
            async move { pyramid.raw(query).await }
        })
        .await
        .unwrap();
        assert!(calls.iter().all(|c| c.agent_id == role));
        all_calls.extend(calls);
    }

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
    for call in &all_calls {
        let key = request_key(&call.request);
        let response = call.response.clone().expect("every call was answered");
        assert!(logged.insert(key, response).is_none(), "each request once");
    }
    assert_eq!(
        logged, cassette,
        "the raw log holds exactly the cassette's calls"
    );
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
