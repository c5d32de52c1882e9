//! Ported from the seed's tests/test_memory_assembler.py, plus budget,
//! clearance and token-counter cases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::Utc;
use openvibe_memory::{
    AgentMemory, Assembly, AssemblyLimits, ClearanceProfile, MemoryAssembler, RecallKind,
    WorkspaceMemory, describe_retrievers,
};
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{
    CallerContext, Classification, ContextAssembler, DEFAULT_TOKEN_BUDGET, EmbedError, Embedder,
    Episode, Fact, Insight, MemoryScope, Retriever,
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

/// Workspace facts about pricing and webinars, and an assembler over them
/// that shows at most `facts` facts.
async fn ranked_assembler(facts: usize) -> MemoryAssembler {
    let ws = WorkspaceMemory::new();
    for (id, content) in [
        ("f1", "Acme renewed twice"),
        ("f2", "Webinars drew 140 companies this quarter"),
        ("f3", "Pricing changed in March"),
        (
            "f4",
            "Webinar attendance doubled after the route-planning talk",
        ),
    ] {
        ws.store_fact(
            Fact::new(id, content)
                .domain("revenue")
                .classification(Classification::Public),
        )
        .await
        .unwrap();
    }
    let mem = AgentMemory::new("cro").with_workspace(ws);
    MemoryAssembler::new(mem, ClearanceProfile::new("cro")).with_limits(AssemblyLimits {
        insights: 0,
        facts,
        episodes: 0,
    })
}

fn query_scope(query: &str) -> MemoryScope {
    MemoryScope {
        domain: Some("revenue".into()),
        query: Some(query.into()),
        ..MemoryScope::default()
    }
}

fn found(a: &Assembly) -> Vec<(String, Vec<Retriever>)> {
    a.recalled
        .iter()
        .map(|r| {
            (
                r.id.clone(),
                r.retrievers.iter().map(|s| s.retriever).collect(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_query_ranks_the_scope_by_relevance_and_says_what_found_each() {
    let assembler = ranked_assembler(2).await;
    let a = assembler
        .assemble_recalled(&query_scope("webinar attendance"), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(
        found(&a),
        [
            ("f4".to_owned(), vec![Retriever::FullText]),
            ("f2".to_owned(), vec![Retriever::FullText]),
        ]
    );
    assert_eq!(
        a.text,
        "## Context\n- Webinar attendance doubled after the route-planning talk\n\
         - Webinars drew 140 companies this quarter"
    );
    assert_eq!(a.recalled[0].retrievers[0].rank, 1);
    assert_eq!(
        describe_retrievers(&a.recalled[1].retrievers),
        "full_text #2"
    );
    assert_eq!(a.recalled[0].kind, RecallKind::Fact);
    // Without a query no retriever ranks: the scope's filters alone select.
    let plain = assembler
        .assemble_recalled(
            &MemoryScope {
                query: None,
                ..query_scope("")
            },
            DEFAULT_TOKEN_BUDGET,
        )
        .await
        .unwrap();
    assert_eq!(plain.recalled.len(), 2);
    assert!(plain.recalled.iter().all(|r| r.retrievers.is_empty()));
    assert_eq!(
        describe_retrievers(&plain.recalled[0].retrievers),
        "scope filters"
    );
}

#[tokio::test]
async fn slots_the_ranking_leaves_free_are_filled_from_the_scope() {
    // One fact names pricing: it leads, and the scope's other facts fill
    // the slots left (a query ranks, it no longer filters).
    let a = ranked_assembler(3)
        .await
        .assemble_recalled(&query_scope("pricing"), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    let found = found(&a);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0], ("f3".to_owned(), vec![Retriever::FullText]));
    assert!(found[1..].iter().all(|(_, r)| r.is_empty()), "{found:?}");
}

#[tokio::test]
async fn with_an_embedder_vectors_rank_too_and_a_failing_one_leaves_full_text() {
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(64));
    let assembler = ranked_assembler(4).await.with_embedder(embedder);
    let a = assembler
        .assemble_recalled(&query_scope("webinar attendance"), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    let found = found(&a);
    assert_eq!(found.len(), 4, "every candidate has a vector");
    assert_eq!(
        found[0],
        (
            "f4".to_owned(),
            vec![Retriever::FullText, Retriever::Vector]
        ),
        "found by both, it leads"
    );
    assert!(
        found.iter().any(|(_, r)| r == &[Retriever::Vector]),
        "some are found by their vector alone: {found:?}"
    );

    struct Down;
    #[async_trait::async_trait]
    impl Embedder for Down {
        async fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Err(EmbedError::Model("the model is down".into()))
        }
        fn dimensions(&self) -> usize {
            64
        }
        fn model_id(&self) -> &str {
            "down"
        }
    }
    let seen: Arc<std::sync::Mutex<Vec<Assembly>>> = Arc::default();
    let sink = seen.clone();
    let assembler = ranked_assembler(2)
        .await
        .with_embedder(Arc::new(Down))
        .with_observer(Arc::new(move |a: &Assembly| {
            sink.lock().unwrap().push(a.clone());
        }));
    let text = assembler
        .assemble(&query_scope("webinar attendance"), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert!(
        text.starts_with("## Context\n- Webinar attendance doubled"),
        "{text}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "the observer sees every assembly");
    assert_eq!(seen[0].text, text);
    assert!(seen[0].recalled.iter().all(|r| {
        r.retrievers
            .iter()
            .all(|s| s.retriever == Retriever::FullText)
    }));
}

/// Counts the texts it embeds.
struct Counting {
    inner: HashEmbedder,
    texts: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl Embedder for Counting {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        self.inner.embed(texts).await
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL
    }
}

#[tokio::test]
async fn stored_vectors_rank_without_embedding_the_candidates_again() {
    let counting = Arc::new(Counting {
        inner: HashEmbedder::new(64),
        texts: std::sync::atomic::AtomicUsize::new(0),
    });
    let stores = openvibe_memory::in_memory_stores_with_embedder(counting.clone());
    let gateway = openvibe_memory::MemoryGateway::new().with_stores(stores);
    let ws = gateway.workspace().unwrap();
    for (id, content) in [
        ("f1", "Acme renewed twice"),
        ("f2", "Webinars drew 140 companies this quarter"),
        (
            "f3",
            "Webinar attendance doubled after the route-planning talk",
        ),
    ] {
        ws.store_fact(
            Fact::new(id, content)
                .domain("revenue")
                .classification(Classification::Public),
        )
        .await
        .unwrap();
    }
    let written = counting.texts.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(written, 3, "each fact embedded once, on write");
    let profile = ClearanceProfile::new("cro");
    let assembler = MemoryAssembler::new(gateway.agent_memory("cro", &profile), profile)
        .with_embedder(counting.clone())
        .with_limits(AssemblyLimits {
            insights: 0,
            facts: 3,
            episodes: 0,
        });
    let a = assembler
        .assemble_recalled(&query_scope("webinar attendance"), DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(
        counting.texts.load(std::sync::atomic::Ordering::SeqCst) - written,
        1,
        "only the query is embedded at assembly time"
    );
    let found = found(&a);
    assert_eq!(
        found[0],
        (
            "f3".to_owned(),
            vec![Retriever::FullText, Retriever::Vector]
        )
    );
    assert!(found.iter().all(|(_, r)| r.contains(&Retriever::Vector)));
}

/// A recall cache that outlives the assembler (as a role's does) ranks as
/// the assembler alone does; the second time, no candidate is embedded
/// or analyzed again.
#[tokio::test]
async fn a_recall_cache_ranks_the_same_and_embeds_each_text_once() {
    let counting = Arc::new(Counting {
        inner: HashEmbedder::new(64),
        texts: std::sync::atomic::AtomicUsize::new(0),
    });
    let plain = ranked_assembler(4)
        .await
        .with_embedder(Arc::new(HashEmbedder::new(64)));
    let cache = Arc::new(openvibe_memory::RecallCache::new(100));
    let cached = ranked_assembler(4)
        .await
        .with_embedder(counting.clone())
        .with_recall_cache(cache.clone());
    let scope = query_scope("webinar attendance");
    let expected = plain
        .assemble_recalled(&scope, DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    let first = cached
        .assemble_recalled(&scope, DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(found(&first), found(&expected));
    assert_eq!(first.text, expected.text);
    assert_eq!(cache.len(), (4, 4), "4 candidates analyzed and embedded");
    let embedded = counting.texts.load(std::sync::atomic::Ordering::SeqCst);
    let again = cached
        .assemble_recalled(&scope, DEFAULT_TOKEN_BUDGET)
        .await
        .unwrap();
    assert_eq!(found(&again), found(&expected));
    assert_eq!(
        counting.texts.load(std::sync::atomic::Ordering::SeqCst),
        embedded + 1,
        "only the question is embedded again"
    );
}
