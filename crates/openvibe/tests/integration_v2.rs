//! The seed's tests/test_integration_v2.py, through the facade.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use openvibe::memory::InMemoryStore;
use openvibe::primitives::testing::ScriptedLlm;
use openvibe::protocols::{InsightQuery, LlmResponse, MemoryProvider};
use openvibe::{AgentMemory, Insight, MemoryFilesystem, Operator, Role, State, llm_node};

#[tokio::test]
async fn memory_filesystem_integration() {
    let agent_mem = AgentMemory::new("cro");
    agent_mem
        .store_insight(
            Insight::new("ins1", "cro", "Revenue insight", 0.9)
                .domain("revenue")
                .evidence(5),
        )
        .await
        .unwrap();
    let fs = MemoryFilesystem::new("cro", agent_mem.clone()).with_soul("You are the CRO.");

    let root = fs.browse("/").await.unwrap();
    assert!(root.contains(&"knowledge".to_string()));
    let soul = fs.read("/identity/soul.md").await.unwrap();
    assert!(soul.contains("CRO"));
    let results = fs.search("revenue insight", "/knowledge/").await.unwrap();
    assert!(!results.is_empty());
    fs.write("/knowledge/revenue/new-principle", "Test principle")
        .await
        .unwrap();
    let insights = agent_mem
        .recall_insights(InsightQuery::new().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(insights.len(), 2);
    assert_eq!(fs.traces().len(), 4);
}

#[tokio::test]
async fn v1_backward_compat() {
    let llm = ScriptedLlm::new([LlmResponse::text("v1 output")]);
    let memory = Arc::new(InMemoryStore::new());
    memory.store("simple", "m1", "V1 memory").await.unwrap();
    let op = Operator::new("simple")
        .node(llm_node("process", "You are simple.", |_| Ok("process".into())).output_key("out"))
        .sequence("process", ["process"])
        .unwrap();
    let role = Role::new("simple")
        .soul("Simple soul.")
        .operator(op)
        .with_llm(Arc::new(llm.clone()))
        .with_memory(memory);
    let result = role
        .get_operator("simple")
        .unwrap()
        .run_node("process", [("x", 1)].into_iter().collect::<State>())
        .await
        .unwrap();
    assert_eq!(result.get_str("out"), Some("v1 output"));
    let system = llm.last_request().unwrap().system;
    assert!(system.contains("Simple soul"), "{system}");
    assert!(system.contains("V1 memory"), "{system}");
}
