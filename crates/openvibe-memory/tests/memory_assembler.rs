//! Ported from the seed's tests/test_memory_assembler.py, plus budget,
//! clearance and token-counter cases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::Utc;
use openvibe_memory::{AgentMemory, ClearanceProfile, MemoryAssembler, WorkspaceMemory};
use openvibe_protocols::{
    CallerContext, Classification, ContextAssembler, DEFAULT_TOKEN_BUDGET, Episode, Fact, Insight,
    MemoryScope,
};

fn scope() -> MemoryScope {
    MemoryScope::default()
}

fn episode(id: &str, action: &str, output: &str) -> Episode {
    Episode {
        id: id.into(),
        agent_id: "cro".into(),
        operator_id: "test".into(),
        node_name: "qualify".into(),
        timestamp: Utc::now(),
        action: action.into(),
        input_summary: "Score Acme".into(),
        output_summary: output.into(),
        duration_ms: 100,
        tokens_in: 10,
        tokens_out: 20,
        ..Episode::default()
    }
}

#[tokio::test]
async fn test_assemble_insights() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(
        Insight::new("ins1", "cro", "VP sponsor predicts conversion", 0.9)
            .evidence(5)
            .domain("revenue"),
    )
    .await
    .unwrap();
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(mem, profile);
    let result = assembler
        .assemble(
            &MemoryScope {
                domain: Some("revenue".into()),
                ..scope()
            },
            DEFAULT_TOKEN_BUDGET,
        )
        .await
        .unwrap();
    assert!(result.contains("VP sponsor"));
    assert!(result.contains("Insights"));
    assert_eq!(
        result,
        "## Insights\n- VP sponsor predicts conversion (confidence: 0.9)"
    );
}

#[tokio::test]
async fn test_assemble_workspace_facts() {
    let ws = WorkspaceMemory::new();
    ws.store_fact(
        Fact::new("f1", "Acme has 200 employees")
            .entity("acme")
            .domain("customer")
            .classification(Classification::Public),
    )
    .await
    .unwrap();
    let mem = AgentMemory::new("cro").with_workspace(ws);
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(mem, profile);
    let result = assembler
        .assemble(
            &MemoryScope {
                entity: Some("acme".into()),
                ..scope()
            },
            DEFAULT_TOKEN_BUDGET,
        )
        .await
        .unwrap();
    assert!(result.contains("200 employees"));
}

#[tokio::test]
async fn test_assemble_recent_episodes() {
    let mem = AgentMemory::new("cro");
    mem.record_episode(episode("ep1", "qualify_lead", "Score: 85"))
        .await
        .unwrap();
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(mem, profile);
    let result = assembler
        .assemble(&scope(), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert!(result.contains("Recent Activity"));
    assert!(result.contains("qualify_lead"));
}

/// Insights come before facts come before episodes.
#[tokio::test]
async fn test_assemble_priority_order() {
    let ws = WorkspaceMemory::new();
    ws.store_fact(Fact::new("f1", "Fact content").classification(Classification::Public))
        .await
        .unwrap();
    let mem = AgentMemory::new("cro").with_workspace(ws);
    mem.store_insight(Insight::new("ins1", "cro", "Insight content", 0.9).evidence(5))
        .await
        .unwrap();
    mem.record_episode(episode("ep1", "test", "Episode content"))
        .await
        .unwrap();
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(mem, profile);
    let result = assembler
        .assemble(&scope(), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    // Insights section should come first
    let ins_pos = result.find("Insights").unwrap();
    let ctx_pos = result.find("Context").unwrap();
    let act_pos = result.find("Recent Activity").unwrap();
    assert!(ins_pos < ctx_pos && ctx_pos < act_pos);
    assert_eq!(
        result,
        "## Insights\n- Insight content (confidence: 0.9)\n\n## Context\n- Fact content\n\n## Recent Activity\n- test: Episode content"
    );
}

#[tokio::test]
async fn test_assemble_token_budget() {
    let mem = AgentMemory::new("cro");
    for i in 0..50 {
        mem.store_insight(Insight::new(
            format!("ins{i}"),
            "cro",
            format!("A very long insight number {i} ").repeat(20),
            0.9,
        ))
        .await
        .unwrap();
    }
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(mem, profile);
    let result = assembler.assemble(&scope(), 100).await.unwrap();
    assert!(result.chars().count() <= 100 * 4); // 4 chars per token
}

#[tokio::test]
async fn test_assemble_empty() {
    let mem = AgentMemory::new("cro");
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(mem, profile);
    let result = assembler
        .assemble(&scope(), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(result, "");
}

#[tokio::test]
async fn budget_drops_whole_items_and_never_splits_characters() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(Insight::new(
        "big",
        "cro",
        "日本語のとても長い洞察 ".repeat(40),
        0.9,
    ))
    .await
    .unwrap();
    mem.store_insight(Insight::new("small", "cro", "Short ünïcødé insight", 0.5))
        .await
        .unwrap();
    mem.record_episode(episode("ep1", "qualify", "Score: 85"))
        .await
        .unwrap();
    let assembler = MemoryAssembler::new(mem, ClearanceProfile::new("cro"));
    for budget in [0, 5, 10, 20, 40, 1000] {
        let result = assembler.assemble(&scope(), budget).await.unwrap();
        assert!(result.chars().count() <= budget * 4, "{budget}: {result}");
        // Every line is a header or a whole item.
        for line in result.lines().filter(|l| !l.is_empty()) {
            assert!(
                line.starts_with("## ")
                    || line == "- Short ünïcødé insight (confidence: 0.5)"
                    || line == "- qualify: Score: 85"
                    || line.starts_with("- 日本語") && line.ends_with("(confidence: 0.9)"),
                "{budget}: {line:?}"
            );
        }
    }
    let small = assembler.assemble(&scope(), 20).await.unwrap();
    assert_eq!(
        small,
        "## Insights\n- Short ünïcødé insight (confidence: 0.5)"
    );
    assert_eq!(assembler.assemble(&scope(), 0).await.unwrap(), "");
}

#[tokio::test]
async fn facts_are_clearance_filtered_and_tracked() {
    let ws = WorkspaceMemory::new();
    ws.store_fact(
        Fact::new("pub", "Public fact")
            .entity("acme")
            .classification(Classification::Public),
    )
    .await
    .unwrap();
    ws.store_fact(
        Fact::new("rev", "Confidential revenue fact")
            .entity("acme")
            .domain("revenue")
            .classification(Classification::Confidential),
    )
    .await
    .unwrap();
    let mem = AgentMemory::new("cmo").with_workspace(ws.clone());
    let acme = MemoryScope {
        entity: Some("acme".into()),
        ..scope()
    };
    let cmo = MemoryAssembler::new(mem.clone(), ClearanceProfile::new("cmo"));
    let text = cmo.assemble(&acme, DEFAULT_TOKEN_BUDGET).await.unwrap();
    assert_eq!(text, "## Context\n- Public fact");
    let cleared = MemoryAssembler::new(
        mem,
        ClearanceProfile::new("cmo").with_domain("revenue", Classification::Confidential),
    );
    let text = cleared.assemble(&acme, DEFAULT_TOKEN_BUDGET).await.unwrap();
    assert!(text.contains("Confidential revenue fact"));
    let stored = ws
        .get_as(&CallerContext::system(), "pub")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.access_count, 2, "assembled facts count as accessed");
}

#[tokio::test]
async fn token_counter_is_pluggable() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(Insight::new("a", "cro", "one two three", 0.9))
        .await
        .unwrap();
    mem.store_insight(Insight::new("b", "cro", "four five", 0.8))
        .await
        .unwrap();
    let words = |text: &str| text.split_whitespace().count();
    let assembler =
        MemoryAssembler::new(mem, ClearanceProfile::new("cro")).with_token_counter(words);
    // "## Insights\n" = 2 words, the items 6 and 5 words.
    let text = assembler.assemble(&scope(), 8).await.unwrap();
    assert_eq!(text, "## Insights\n- one two three (confidence: 0.9)");
    let text = assembler.assemble(&scope(), 7).await.unwrap();
    assert_eq!(
        text, "## Insights\n- four five (confidence: 0.8)",
        "the first does not fit, the second does"
    );
    let all = assembler.assemble(&scope(), 13).await.unwrap();
    assert!(all.contains("four five"));
    let shared: Arc<dyn ContextAssembler> = Arc::new(assembler);
    assert!(!shared.assemble(&scope(), 100).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_entity_scope_also_gets_the_domains_general_knowledge_after_the_specific() {
    let ws = WorkspaceMemory::new();
    for fact in [
        Fact::new("f1", "Acme renewed twice")
            .entity("acme")
            .domain("revenue"),
        Fact::new("f2", "Webinars drew 140 companies").domain("revenue"),
        Fact::new("f3", "Globex is evaluating competitors")
            .entity("globex")
            .domain("revenue"),
    ] {
        ws.store_fact(fact.classification(Classification::Public))
            .await
            .unwrap();
    }
    let mem = AgentMemory::new("cro").with_workspace(ws);
    for insight in [
        Insight::new(
            "i1",
            "cro",
            "Webinar leads with a VP contact are tier A",
            0.8,
        )
        .domain("revenue"),
        Insight::new("i2", "cro", "Acme needs legal review early", 0.6)
            .entity("acme")
            .domain("revenue"),
        Insight::new("i3", "cro", "Globex prefers annual billing", 0.9)
            .entity("globex")
            .domain("revenue"),
    ] {
        mem.store_insight(insight).await.unwrap();
    }
    let assembler = MemoryAssembler::new(mem, ClearanceProfile::new("cro"));
    let scope = MemoryScope {
        entity: Some("acme".into()),
        domain: Some("revenue".into()),
        ..MemoryScope::default()
    };
    let text = assembler
        .assemble(&scope, DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(
        text,
        "## Insights\n- Acme needs legal review early (confidence: 0.6)\n\
         - Webinar leads with a VP contact are tier A (confidence: 0.8)\n\n\
         ## Context\n- Acme renewed twice\n- Webinars drew 140 companies"
    );
}

#[tokio::test]
async fn a_published_insight_is_not_repeated_as_context() {
    let ws = WorkspaceMemory::new();
    let mem = AgentMemory::new("cro").with_workspace(ws);
    mem.store_insight(Insight::new("i1", "cro", "Webinar leads convert 2x", 0.9).domain("revenue"))
        .await
        .unwrap();
    assert_eq!(mem.publish_to_workspace(0.5).await.unwrap().len(), 1);
    let assembler = MemoryAssembler::new(
        mem,
        ClearanceProfile::new("cro").with_domain("revenue", Classification::Internal),
    );
    let scope = MemoryScope {
        domain: Some("revenue".into()),
        ..MemoryScope::default()
    };
    let text = assembler
        .assemble(&scope, DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(
        text,
        "## Insights\n- Webinar leads convert 2x (confidence: 0.9)"
    );
}
