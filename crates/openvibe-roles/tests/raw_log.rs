//! The L1 raw log: every LLM call of a role's operators is logged by the
//! role-aware LLM with no change to user code, linked to its episode (L2),
//! cited by reflection (L3), redacted and retained as configured.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use openvibe_memory::{ClearanceProfile, RawLogConfig, in_memory_stores};
use openvibe_operators::Operator;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{AgentNode, FnTool, LlmNode, ScopeSpec};
use openvibe_protocols::{
    Classification, ContentBlock, EpisodeQuery, LlmError, LlmResponse, RawCallQuery, RawRetention,
    State, Stores,
};
use openvibe_roles::{Role, RoleRuntime};
use serde_json::json;

fn operators() -> Operator {
    let lookup = FnTool::new(
        "search_crm",
        "Search the CRM",
        |_q: serde_json::Value| async { Ok::<_, String>("Acme: 500 employees") },
    );
    Operator::new("revenue_ops")
        .node(
            LlmNode::new("qualify_lead", "You qualify leads.", |s: &State| {
                Ok(format!("Score: {}", s.require_str("lead")?))
            })
            .output_key("score")
            .memory_scope(ScopeSpec::new().domain("revenue").entity("acme")),
        )
        .node(
            AgentNode::new("enrich_lead", "You enrich leads.", |s: &State| {
                Ok(format!("Enrich: {}", s.require_str("lead")?))
            })
            .tool(lookup)
            .output_key("enriched"),
        )
        .sequence("qualify_lead", ["qualify_lead"])
        .unwrap()
        .sequence("enrich_lead", ["enrich_lead"])
        .unwrap()
}

fn cro() -> Role {
    Role::new("cro")
        .soul("You are the CRO.")
        .operator(operators())
        .clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        )
}

fn lead() -> State {
    [("lead", "Acme")].into_iter().collect()
}

fn runtime(llm: &ScriptedLlm, stores: &Stores, config: RawLogConfig) -> RoleRuntime {
    RoleRuntime::new(Arc::new(llm.clone()))
        .with_stores(stores.clone())
        .with_raw_log(config)
        .role(cro())
        .unwrap()
}

#[tokio::test]
async fn every_call_is_logged_and_linked_to_its_episode() {
    let llm = ScriptedLlm::new([
        LlmResponse::text(r#"{"score": 85}"#),
        LlmResponse::from_blocks(vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "search_crm".into(),
            input: json!({"q": "acme"}),
        }]),
        LlmResponse::text("Acme is a 500-person company."),
    ]);
    let stores = in_memory_stores();
    let rt = runtime(&llm, &stores, RawLogConfig::new());
    rt.activate("cro", "revenue_ops", "qualify_lead", lead())
        .await
        .unwrap();
    rt.activate("cro", "revenue_ops", "enrich_lead", lead())
        .await
        .unwrap();

    let memory = rt.get_role("cro").unwrap().agent_memory().unwrap().clone();
    // Flushed by the runtime: every call is in the log when activate returns.
    let raw = memory.recall_raw(RawCallQuery::new()).await.unwrap().items;
    assert_eq!(
        raw.len(),
        3,
        "one call for qualify_lead, two for the agent loop"
    );
    assert_eq!(memory.raw_log().stats().appended, 3);
    let sent = llm.requests();
    for call in &raw {
        assert_eq!(call.agent_id, "cro");
        assert_eq!(call.operator_id, "revenue_ops");
        assert_eq!(call.meta.owner, "agent:cro");
        assert_eq!(call.meta.namespace, "cro");
        assert!(call.request.system.starts_with("You are the CRO."));
        assert!(sent.iter().any(|r| r.messages == call.request.messages));
        assert!(call.response.is_some());
    }
    // L2 → L1: each episode names the calls it was made from.
    let episodes = memory.recall_episodes(EpisodeQuery::new()).await.unwrap();
    assert_eq!(episodes.len(), 2);
    for episode in &episodes {
        let calls = memory.raw_calls_of(&episode.id).await.unwrap();
        let expected = if episode.node_name == "enrich_lead" {
            2
        } else {
            1
        };
        assert_eq!(calls.len(), expected, "{}", episode.node_name);
        assert!(calls.iter().all(|c| c.node_name == episode.node_name));
        if episode.node_name == "qualify_lead" {
            assert_eq!(
                (calls[0].entity.as_str(), calls[0].domain.as_str()),
                ("acme", "revenue")
            );
        }
    }
    // The memory filesystem shows them under /raw/, newest first.
    let fs = rt.get_role("cro").unwrap().filesystem().unwrap().unwrap();
    let listing = fs.browse("/raw/").await.unwrap();
    assert_eq!(
        listing,
        raw.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
    );
    let text = fs.read(&format!("/raw/{}", raw[0].id)).await.unwrap();
    assert!(text.starts_with("revenue_ops/"), "{text}");
    assert!(text.contains("## Response"), "{text}");
}

#[tokio::test]
async fn failed_calls_are_logged_with_their_error() {
    let llm = ScriptedLlm::new([]);
    llm.push_error(LlmError::Other("provider down".into()));
    let stores = in_memory_stores();
    let rt = runtime(&llm, &stores, RawLogConfig::new());
    assert!(
        rt.activate("cro", "revenue_ops", "qualify_lead", lead())
            .await
            .is_err()
    );
    let memory = rt.get_role("cro").unwrap().agent_memory().unwrap().clone();
    let raw = memory.recall_raw(RawCallQuery::new()).await.unwrap().items;
    assert_eq!(raw.len(), 1);
    assert!(raw[0].response.is_none());
    assert!(raw[0].error.as_deref().unwrap().contains("provider down"));
}

#[tokio::test]
async fn redaction_runs_before_storage_and_retention_prunes() {
    let llm = ScriptedLlm::always(LlmResponse::text("Reach jane@acme.com"));
    let stores = in_memory_stores();
    let config = RawLogConfig::new()
        .redact(|call| {
            if let Some(response) = &mut call.response {
                response.content = response.content.replace("jane@acme.com", "[email]");
            }
        })
        .retention(RawRetention::default().max_calls(2))
        .prune_interval(Duration::ZERO);
    let rt = runtime(&llm, &stores, config);
    for _ in 0..4 {
        rt.activate("cro", "revenue_ops", "qualify_lead", lead())
            .await
            .unwrap();
    }
    let memory = rt.get_role("cro").unwrap().agent_memory().unwrap().clone();
    memory.flush_raw_log().await;
    let raw = memory.recall_raw(RawCallQuery::new()).await.unwrap().items;
    assert_eq!(raw.len(), 2, "pruned to the newest two");
    assert!(memory.raw_log().stats().pruned >= 2);
    for call in raw {
        assert_eq!(call.response.unwrap().content, "Reach [email]");
    }
}

#[tokio::test]
async fn reflection_cites_the_raw_calls_behind_its_insights() {
    let llm = ScriptedLlm::new([
        LlmResponse::text(r#"{"score": 85}"#),
        LlmResponse::text(r#"{"score": 40}"#),
    ]);
    let stores = in_memory_stores();
    let rt = runtime(&llm, &stores, RawLogConfig::new());
    for _ in 0..2 {
        rt.activate("cro", "revenue_ops", "qualify_lead", lead())
            .await
            .unwrap();
    }
    let memory = rt.get_role("cro").unwrap().agent_memory().unwrap().clone();
    let reflector = ScriptedLlm::new([LlmResponse::text(
        r#"[{"content": "Acme leads score high", "confidence": 0.8, "domain": "revenue"}]"#,
    )]);
    let report = memory.reflect(&reflector).await.unwrap();
    assert_eq!(report.created.len(), 1);
    let calls = memory.recall_raw(RawCallQuery::new()).await.unwrap().items;
    let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
    assert_eq!(report.cited_calls, ids);
    let cited = memory.cite(&report.created[0]).await.unwrap();
    assert_eq!(cited.iter().map(|c| c.id.clone()).collect::<Vec<_>>(), ids);
}
