//! `WorkflowState` (seed 002's facade over plan-scoped working memory) on
//! every backend and over the wire: in memory, on PostgreSQL, and through
//! the remote client against a service over each. Seed 002's cases:
//! sequential operations, fresh reads (two instances see each other's
//! writes at once), the action history, `delete`, `get_all`, `clear` and
//! `cleanup`, and knowledge privacy through it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "../../openvibe-postgres/tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use openvibe_memory::{ACTION_HISTORY, WorkflowState};
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{CallerContext, KnowledgeQuery, NewKnowledge, NewPlan, Stores};
use serde_json::json;

const DIMENSIONS: usize = 16;

async fn cases(stores: Stores) {
    let alice = CallerContext::user("alice").with_tenant("t1");
    let bob = CallerContext::user("bob").with_tenant("t1");
    let plan = stores
        .working
        .create_plan(
            &alice,
            NewPlan {
                goal_event: "research.goal".into(),
                ..NewPlan::default()
            },
        )
        .await
        .unwrap();
    let state = |ctx: &CallerContext| {
        WorkflowState::new(stores.working.clone(), ctx.clone(), plan.id.clone())
            .with_knowledge(stores.knowledge.clone())
    };
    let planner = state(&alice);
    // A second instance over the same plan: a worker's handler.
    let worker = state(&alice);

    // Sequential operations; every read is fresh (no instance caches).
    assert_eq!(planner.get("topic").await.unwrap(), None);
    planner.set("topic", json!("LLM memory")).await.unwrap();
    assert_eq!(
        worker.get("topic").await.unwrap(),
        Some(json!("LLM memory"))
    );
    worker.set("topic", json!("agent memory")).await.unwrap();
    assert_eq!(
        planner.get("topic").await.unwrap(),
        Some(json!("agent memory"))
    );

    // The action history: appends from both instances, oldest first.
    planner.record_action("research.requested").await.unwrap();
    worker.record_action("research.completed").await.unwrap();
    assert_eq!(
        planner.get_action_history().await.unwrap(),
        vec!["research.requested", "research.completed"]
    );

    // get_all: every key, the history among them.
    worker.set("draft", json!({"words": 120})).await.unwrap();
    let all = planner.get_all().await.unwrap();
    assert_eq!(
        all.keys().cloned().collect::<Vec<_>>(),
        vec![ACTION_HISTORY, "draft", "topic"]
    );
    assert_eq!(all["draft"], json!({"words": 120}));

    // Versioned writes: a stale version is refused and changes nothing.
    let (_, version) = planner.get_versioned("draft").await.unwrap().unwrap();
    worker
        .set_if_version("draft", json!({"words": 200}), version)
        .await
        .unwrap();
    assert!(
        planner
            .set_if_version("draft", json!({"words": 1}), version)
            .await
            .is_err()
    );
    assert_eq!(
        worker.get("draft").await.unwrap(),
        Some(json!({"words": 200}))
    );
    assert_eq!(planner.increment("retries", 2).await.unwrap(), 2);
    assert_eq!(worker.increment("retries", 1).await.unwrap(), 3);

    // delete: one key, true once.
    assert!(worker.delete("draft").await.unwrap());
    assert!(!planner.delete("draft").await.unwrap());
    assert_eq!(planner.get("draft").await.unwrap(), None);

    // Someone else's plan is not theirs to read or write.
    let intruder = state(&bob);
    assert!(intruder.get("topic").await.is_err() || intruder.get("topic").await.unwrap().is_none());
    assert!(intruder.set("topic", json!("mine")).await.is_err());
    assert_eq!(
        planner.get("topic").await.unwrap(),
        Some(json!("agent memory"))
    );

    // Knowledge through it: private to its owner unless public, tagged
    // with the plan.
    let private = planner
        .store_knowledge(NewKnowledge::new("alice's private research notes"))
        .await
        .unwrap();
    assert_eq!(private.plan_id.as_deref(), Some(plan.id.as_str()));
    assert!(!private.is_public);
    let query = KnowledgeQuery {
        include_public: false,
        ..KnowledgeQuery::by_text("research notes")
    };
    let mine = planner.query_knowledge(&query).await.unwrap();
    assert_eq!(mine.len(), 1);
    assert!(!mine[0].knowledge.is_public);
    let bobs = WorkflowState::new(stores.working.clone(), bob.clone(), "none")
        .with_knowledge(stores.knowledge.clone());
    let seen = bobs
        .query_knowledge(&KnowledgeQuery::by_text("research notes"))
        .await
        .unwrap();
    assert!(
        seen.is_empty(),
        "bob sees alice's private knowledge: {seen:?}"
    );

    // clear and cleanup: every key goes, the history too.
    assert_eq!(worker.get_all().await.unwrap().len(), 3);
    planner.clear().await.unwrap();
    assert!(worker.get_all().await.unwrap().is_empty());
    assert!(worker.get_action_history().await.unwrap().is_empty());
    worker.set("status", json!("completed")).await.unwrap();
    worker.record_action("done").await.unwrap();
    assert_eq!(planner.cleanup().await.unwrap(), 2);
    assert_eq!(planner.cleanup().await.unwrap(), 0);
}

fn embedder() -> Arc<HashEmbedder> {
    Arc::new(HashEmbedder::new(DIMENSIONS))
}

async fn postgres() -> Option<Stores> {
    openvibe_memory_testkit::skip::database_url()?;
    Some(
        common::fresh_stores()
            .await
            .with_embedder(embedder())
            .await
            .unwrap()
            .stores(),
    )
}

#[tokio::test]
async fn workflow_state_in_memory() {
    cases(openvibe_memory::in_memory_stores_with_embedder(embedder())).await;
}

#[tokio::test]
async fn workflow_state_over_the_wire_in_memory() {
    let stores = openvibe_memory::in_memory_stores_with_embedder(embedder());
    cases(support::remote_over(stores).await).await;
}

#[tokio::test]
async fn workflow_state_on_postgres() {
    if let Some(stores) = postgres().await {
        cases(stores).await;
    }
}

#[tokio::test]
async fn workflow_state_over_the_wire_on_postgres() {
    if let Some(stores) = postgres().await {
        cases(support::remote_over(stores).await).await;
    }
}
