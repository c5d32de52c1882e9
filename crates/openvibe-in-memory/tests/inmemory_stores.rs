//! Ported from the seed's tests/test_inmemory_stores.py. Context-free seed
//! calls use `CallerContext::system()`. The seed's `*_implements_protocol`
//! tests are a compile-time fact here (`_implement_the_protocols` below).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use openvibe_in_memory::{InMemoryEpisodicStore, InMemoryFactStore, InMemoryInsightStore};
use openvibe_protocols::{
    CallerContext, Episode, EpisodeQuery, EpisodicStore, Fact, FactQuery, FactStore, Insight,
    InsightQuery, InsightStore, RecordStore, RevisableStore,
};

fn ctx() -> CallerContext {
    CallerContext::system()
}

/// The in-memory stores are the store traits' objects: checked by compiling.
fn _implement_the_protocols() -> (
    Arc<dyn FactStore>,
    Arc<dyn EpisodicStore>,
    Arc<dyn InsightStore>,
) {
    (
        Arc::new(InMemoryFactStore::new()),
        Arc::new(InMemoryEpisodicStore::new()),
        Arc::new(InMemoryInsightStore::new()),
    )
}

// --- FactStore ---

#[tokio::test]
async fn test_fact_store_and_get() {
    let store = InMemoryFactStore::new();
    let f = Fact::new("f1", "Acme has 200 employees")
        .entity("acme")
        .domain("customer");
    store.store(&ctx(), f).await.unwrap();
    let result = store.get(&ctx(), "f1").await.unwrap();
    let result = result.expect("stored fact");
    assert_eq!(result.content, "Acme has 200 employees");
}

#[tokio::test]
async fn test_fact_store_get_missing() {
    let store = InMemoryFactStore::new();
    assert!(store.get(&ctx(), "missing").await.unwrap().is_none());
}

#[tokio::test]
async fn test_fact_store_query_by_entity() {
    let store = InMemoryFactStore::new();
    store
        .store(
            &ctx(),
            Fact::new("f1", "Acme info")
                .entity("acme")
                .domain("customer"),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            Fact::new("f2", "Beta info")
                .entity("beta")
                .domain("customer"),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &FactQuery::new().entity("acme"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].id, "f1");
}

#[tokio::test]
async fn test_fact_store_query_by_domain() {
    let store = InMemoryFactStore::new();
    store
        .store(&ctx(), Fact::new("f1", "Revenue data").domain("revenue"))
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            Fact::new("f2", "Marketing data").domain("marketing"),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &FactQuery::new().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].id, "f1");
}

#[tokio::test]
async fn test_fact_store_query_by_tags() {
    let store = InMemoryFactStore::new();
    store
        .store(
            &ctx(),
            Fact::new("f1", "Qualified lead").tags(["qualification", "lead"]),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            Fact::new("f2", "Competitor info").tags(["competitor"]),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &FactQuery::new().tags(["qualification"]))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].id, "f1");
}

#[tokio::test]
async fn test_fact_store_query_by_text() {
    let store = InMemoryFactStore::new();
    store
        .store(&ctx(), Fact::new("f1", "VP sponsor predicts conversion"))
        .await
        .unwrap();
    store
        .store(&ctx(), Fact::new("f2", "Cold email has low response"))
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &FactQuery::new().text("VP sponsor"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].id, "f1");
}

#[tokio::test]
async fn test_fact_store_query_min_confidence() {
    let store = InMemoryFactStore::new();
    store
        .store(&ctx(), Fact::new("f1", "High confidence").confidence(0.9))
        .await
        .unwrap();
    store
        .store(&ctx(), Fact::new("f2", "Low confidence").confidence(0.3))
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &FactQuery::new().min_confidence(0.5))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].id, "f1");
}

#[tokio::test]
async fn test_fact_store_query_limit() {
    let store = InMemoryFactStore::new();
    for i in 0..20 {
        store
            .store(&ctx(), Fact::new(format!("f{i}"), format!("fact {i}")))
            .await
            .unwrap();
    }
    let results = store
        .query(&ctx(), &FactQuery::new().limit(5))
        .await
        .unwrap();
    assert_eq!(results.len(), 5);
}

#[tokio::test]
async fn test_fact_store_update() {
    let store = InMemoryFactStore::new();
    let mut f = Fact::new("f1", "Original");
    store.store(&ctx(), f.clone()).await.unwrap();
    f.content = "Updated".into();
    store.update(&ctx(), f).await.unwrap();
    let result = store.get(&ctx(), "f1").await.unwrap().unwrap();
    assert_eq!(result.content, "Updated");
}

#[tokio::test]
async fn test_fact_store_delete() {
    let store = InMemoryFactStore::new();
    store
        .store(&ctx(), Fact::new("f1", "To delete"))
        .await
        .unwrap();
    store.delete(&ctx(), "f1").await.unwrap();
    assert!(store.get(&ctx(), "f1").await.unwrap().is_none());
}

// --- EpisodicStore ---

struct Ep<'a> {
    agent_id: &'a str,
    entity: &'a str,
    domain: &'a str,
    ts: Option<DateTime<Utc>>,
}

impl Default for Ep<'_> {
    fn default() -> Self {
        Self {
            agent_id: "cro",
            entity: "",
            domain: "",
            ts: None,
        }
    }
}

fn make_episode(id: &str, e: Ep<'_>) -> Episode {
    Episode {
        id: id.into(),
        agent_id: e.agent_id.into(),
        operator_id: "test_op".into(),
        node_name: "test_node".into(),
        timestamp: e.ts.unwrap_or_else(Utc::now),
        action: "test_action".into(),
        input_summary: "input".into(),
        output_summary: "output".into(),
        duration_ms: 100,
        tokens_in: 10,
        tokens_out: 20,
        entity: e.entity.into(),
        domain: e.domain.into(),
        ..Episode::default()
    }
}

#[tokio::test]
async fn test_episodic_store_and_query() {
    let store = InMemoryEpisodicStore::new();
    store
        .store(
            &ctx(),
            make_episode(
                "ep1",
                Ep {
                    agent_id: "cro",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            make_episode(
                "ep2",
                Ep {
                    agent_id: "cro",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            make_episode(
                "ep3",
                Ep {
                    agent_id: "cmo",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &EpisodeQuery::for_agent("cro"))
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
}

#[tokio::test]
async fn test_episodic_store_query_by_entity() {
    let store = InMemoryEpisodicStore::new();
    store
        .store(
            &ctx(),
            make_episode(
                "ep1",
                Ep {
                    entity: "acme",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            make_episode(
                "ep2",
                Ep {
                    entity: "beta",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &EpisodeQuery::for_agent("cro").entity("acme"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
}

#[tokio::test]
async fn test_episodic_store_query_by_domain() {
    let store = InMemoryEpisodicStore::new();
    store
        .store(
            &ctx(),
            make_episode(
                "ep1",
                Ep {
                    domain: "revenue",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            make_episode(
                "ep2",
                Ep {
                    domain: "marketing",
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &EpisodeQuery::for_agent("cro").domain("revenue"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
}

#[tokio::test]
async fn test_episodic_store_query_since() {
    let store = InMemoryEpisodicStore::new();
    let old = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let recent = Utc.with_ymd_and_hms(2026, 2, 15, 0, 0, 0).unwrap();
    store
        .store(
            &ctx(),
            make_episode(
                "ep1",
                Ep {
                    ts: Some(old),
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            make_episode(
                "ep2",
                Ep {
                    ts: Some(recent),
                    ..Ep::default()
                },
            ),
        )
        .await
        .unwrap();
    let since = Utc.with_ymd_and_hms(2026, 2, 1, 0, 0, 0).unwrap();
    let results = store
        .query(&ctx(), &EpisodeQuery::for_agent("cro").since(since))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].id, "ep2");
}

#[tokio::test]
async fn test_episodic_store_query_limit() {
    let store = InMemoryEpisodicStore::new();
    for i in 0..20 {
        store
            .store(&ctx(), make_episode(&format!("ep{i}"), Ep::default()))
            .await
            .unwrap();
    }
    let results = store
        .query(&ctx(), &EpisodeQuery::for_agent("cro").limit(5))
        .await
        .unwrap();
    assert_eq!(results.len(), 5);
}

// --- InsightStore ---

fn make_insight(id: &str, content: &str, confidence: f64) -> Insight {
    Insight::new(id, "cro", content, confidence).evidence(3)
}

#[tokio::test]
async fn test_insight_store_and_query() {
    let store = InMemoryInsightStore::new();
    store
        .store(
            &ctx(),
            make_insight("ins1", "Webinar leads convert 2x", 0.8),
        )
        .await
        .unwrap();
    store
        .store(&ctx(), make_insight("ins2", "Cold email low response", 0.8))
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &InsightQuery::for_agent("cro"))
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
}

#[tokio::test]
async fn test_insight_store_query_by_domain() {
    let store = InMemoryInsightStore::new();
    store
        .store(&ctx(), make_insight("ins1", "test", 0.8).domain("revenue"))
        .await
        .unwrap();
    store
        .store(
            &ctx(),
            make_insight("ins2", "test", 0.8).domain("marketing"),
        )
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &InsightQuery::for_agent("cro").domain("revenue"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
}

#[tokio::test]
async fn test_insight_store_query_by_text() {
    let store = InMemoryInsightStore::new();
    store
        .store(
            &ctx(),
            make_insight("ins1", "VP sponsor predicts conversion", 0.8),
        )
        .await
        .unwrap();
    store
        .store(&ctx(), make_insight("ins2", "Email timing matters", 0.8))
        .await
        .unwrap();
    let results = store
        .query(&ctx(), &InsightQuery::for_agent("cro").text("VP sponsor"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
}

#[tokio::test]
async fn test_insight_store_update() {
    let store = InMemoryInsightStore::new();
    let mut ins = make_insight("ins1", "test", 0.5);
    store.store(&ctx(), ins.clone()).await.unwrap();
    ins.confidence = 0.9;
    store.update(&ctx(), ins).await.unwrap();
    let results = store
        .query(&ctx(), &InsightQuery::for_agent("cro"))
        .await
        .unwrap();
    assert_eq!(results[0].confidence, 0.9);
}

#[tokio::test]
async fn test_insight_store_find_similar() {
    let store = InMemoryInsightStore::new();
    store
        .store(
            &ctx(),
            make_insight("ins1", "Webinar leads convert 2x vs cold inbound", 0.8),
        )
        .await
        .unwrap();
    let found = store
        .find_similar(&ctx(), "cro", "webinar leads convert")
        .await
        .unwrap();
    let found = found.expect("similar insight");
    assert_eq!(found.id, "ins1");
}

#[tokio::test]
async fn test_insight_store_find_similar_no_match() {
    let store = InMemoryInsightStore::new();
    store
        .store(&ctx(), make_insight("ins1", "Completely different", 0.8))
        .await
        .unwrap();
    let found = store
        .find_similar(&ctx(), "cro", "webinar leads")
        .await
        .unwrap();
    assert!(found.is_none());
}
