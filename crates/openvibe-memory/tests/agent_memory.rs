//! Ported from the seed's tests/test_agent_memory.py, plus reflection edge
//! cases, idempotent publishing, V1 deletes and the episode sink.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::Utc;
use openvibe_memory::{AgentMemory, ClearanceProfile, MemoryError, WorkspaceMemory};
use openvibe_protocols::{
    CallerContext, Classification, Episode, EpisodeQuery, EpisodeSink, FactQuery, Insight,
    InsightQuery, LlmError, LlmProvider, LlmRequest, LlmResponse, MemoryProvider, StoreError,
};
use serde_json::json;

/// A model that always answers with the same text and counts its calls.
struct FakeLlm {
    answer: Result<String, LlmError>,
    calls: AtomicUsize,
    last: Mutex<Option<LlmRequest>>,
}

impl FakeLlm {
    fn answering(text: impl Into<String>) -> Self {
        Self {
            answer: Ok(text.into()),
            calls: AtomicUsize::new(0),
            last: Mutex::new(None),
        }
    }

    fn failing(error: LlmError) -> Self {
        Self {
            answer: Err(error),
            calls: AtomicUsize::new(0),
            last: Mutex::new(None),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl LlmProvider for FakeLlm {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.last.lock().unwrap() = Some(request.clone());
        self.answer.clone().map(LlmResponse::text)
    }
}

fn make_episode(id: &str, domain: &str, output: &str) -> Episode {
    Episode {
        id: id.into(),
        agent_id: "cro".into(),
        operator_id: "test_op".into(),
        node_name: "test".into(),
        timestamp: Utc::now(),
        action: "test_action".into(),
        input_summary: "input".into(),
        output_summary: output.into(),
        duration_ms: 100,
        tokens_in: 10,
        tokens_out: 20,
        domain: domain.into(),
        ..Episode::default()
    }
}

// --- Episode recording ---

#[tokio::test]
async fn test_record_episode() {
    let mem = AgentMemory::new("cro");
    let mut ep = make_episode("ep1", "revenue", "result");
    ep.agent_id = String::new();
    mem.record_episode(ep).await.unwrap();
    let results = mem.recall_episodes(EpisodeQuery::new()).await.unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].agent_id, "cro"); // auto-set
}

#[tokio::test]
async fn test_recall_episodes_by_domain() {
    let mem = AgentMemory::new("cro");
    mem.record_episode(make_episode("ep1", "revenue", "result"))
        .await
        .unwrap();
    mem.record_episode(make_episode("ep2", "marketing", "result"))
        .await
        .unwrap();
    let results = mem
        .recall_episodes(EpisodeQuery::new().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
}

// --- Insight storage ---

#[tokio::test]
async fn test_store_and_recall_insights() {
    let mem = AgentMemory::new("cro");
    let ins = Insight::new("ins1", "", "Webinar leads convert 2x", 0.8)
        .evidence(3)
        .domain("revenue");
    mem.store_insight(ins).await.unwrap();
    let results = mem
        .recall_insights(InsightQuery::new().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].agent_id, "cro"); // auto-set
}

#[tokio::test]
async fn test_recall_insights_by_query() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(
        Insight::new("ins1", "cro", "VP sponsor predicts conversion", 0.9).evidence(5),
    )
    .await
    .unwrap();
    mem.store_insight(Insight::new("ins2", "cro", "Email timing matters", 0.7).evidence(2))
        .await
        .unwrap();
    let results = mem
        .recall_insights(InsightQuery::new().text("VP sponsor"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
}

// --- Reflect (L2 → L3) ---

#[tokio::test]
async fn test_reflect_extracts_insights() {
    let mem = AgentMemory::new("cro");
    mem.record_episode(make_episode("ep1", "revenue", "lead qualified at 85"))
        .await
        .unwrap();
    mem.record_episode(make_episode("ep2", "revenue", "lead qualified at 90"))
        .await
        .unwrap();

    let fake_llm = FakeLlm::answering(
        json!([
            {"content": "High scores predict conversion", "confidence": 0.7,
             "domain": "revenue", "tags": ["qualification"]},
        ])
        .to_string(),
    );

    let report = mem.reflect(&fake_llm).await.unwrap();
    assert_eq!(report.created.len(), 1);
    assert_eq!(report.created[0].content, "High scores predict conversion");

    // Insight is stored
    let stored = mem.recall_insights(InsightQuery::new()).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].domain, "revenue");
    assert_eq!(stored[0].tags, vec!["qualification"]);
    let mut sources = stored[0].source_episode_ids.clone();
    sources.sort();
    assert_eq!(sources, vec!["ep1", "ep2"], "lineage to the episodes shown");

    // The prompt was built from the recent episodes.
    let request = fake_llm.last.lock().unwrap().clone().unwrap();
    let prompt = request.first_user_text();
    assert!(
        prompt.contains("- [revenue] test_action: lead qualified at 85"),
        "{prompt}"
    );
    assert!(request.system.contains("JSON array"));
    assert_eq!(request.model, "sonnet");
    assert_eq!(request.temperature, Some(0.3));
}

#[tokio::test]
async fn test_reflect_strengthens_existing() {
    let mem = AgentMemory::new("cro");
    // Pre-existing insight
    mem.store_insight(
        Insight::new("ins1", "cro", "High scores predict conversion", 0.5).evidence(2),
    )
    .await
    .unwrap();
    mem.record_episode(make_episode("ep1", "revenue", "another high score"))
        .await
        .unwrap();

    let fake_llm = FakeLlm::answering(
        json!([
            {"content": "high scores predict conversion", "confidence": 0.7,
             "domain": "", "tags": []},
        ])
        .to_string(),
    );

    let report = mem.reflect(&fake_llm).await.unwrap();
    assert!(report.created.is_empty());
    assert_eq!(report.strengthened.len(), 1);

    let stored = mem.recall_insights(InsightQuery::new()).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].confidence, 0.6); // 0.5 + 0.1
    assert_eq!(stored[0].evidence_count, 3);
    assert!(stored[0].last_confirmed.is_some());
}

#[tokio::test]
async fn test_reflect_no_episodes() {
    let mem = AgentMemory::new("cro");
    let fake_llm = FakeLlm::answering("[]");
    let result = mem.reflect(&fake_llm).await.unwrap();
    assert!(result.created.is_empty() && result.strengthened.is_empty());
    assert_eq!(result.episodes_considered, 0);
    assert_eq!(fake_llm.calls(), 0);
}

#[tokio::test]
async fn reflect_strengthening_caps_at_one() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(Insight::new(
        "ins1",
        "cro",
        "High scores predict conversion",
        0.95,
    ))
    .await
    .unwrap();
    mem.record_episode(make_episode("ep1", "revenue", "x"))
        .await
        .unwrap();
    let fake_llm = FakeLlm::answering(r#"[{"content": "High scores predict conversion"}]"#);
    mem.reflect(&fake_llm).await.unwrap();
    let stored = mem.get_insight("ins1").await.unwrap().unwrap();
    assert_eq!(stored.confidence, 1.0);
    mem.reflect(&fake_llm).await.unwrap();
    assert_eq!(
        mem.get_insight("ins1").await.unwrap().unwrap().confidence,
        1.0
    );
    assert_eq!(
        mem.get_insight("ins1")
            .await
            .unwrap()
            .unwrap()
            .evidence_count,
        3
    );
}

#[tokio::test]
async fn reflect_reads_fenced_output_and_reports_bad_items() {
    let mem = AgentMemory::new("cro");
    mem.record_episode(make_episode("ep1", "revenue", "x"))
        .await
        .unwrap();
    let answer = "Here is what I found:\n```json\n[\n  {\"content\": \"Fenced insight\", \"confidence\": 0.6},\n  {\"confidence\": 0.9},\n  \"just text\"\n]\n```";
    let report = mem.reflect(&FakeLlm::answering(answer)).await.unwrap();
    assert_eq!(report.created.len(), 1);
    assert_eq!(report.created[0].content, "Fenced insight");
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
}

#[tokio::test]
async fn reflect_malformed_output_is_an_error_and_stores_nothing() {
    let mem = AgentMemory::new("cro");
    mem.record_episode(make_episode("ep1", "revenue", "x"))
        .await
        .unwrap();
    for bad in [
        "I could not find any patterns.",
        r#"{"content": "not a list"}"#,
        "[{\"content\": ",
    ] {
        let err = mem.reflect(&FakeLlm::answering(bad)).await.unwrap_err();
        assert!(
            matches!(err, MemoryError::MalformedReflection { .. }),
            "{err}"
        );
    }
    assert!(
        mem.recall_insights(InsightQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn reflect_model_failure_is_an_error() {
    let mem = AgentMemory::new("cro");
    mem.record_episode(make_episode("ep1", "revenue", "x"))
        .await
        .unwrap();
    let llm = FakeLlm::failing(LlmError::Other("boom".into()));
    let err = mem.reflect(&llm).await.unwrap_err();
    assert!(matches!(err, MemoryError::Llm(_)), "{err}");
    assert!(err.to_string().contains("boom"));
}

// --- Publish to workspace ---

#[tokio::test]
async fn test_publish_to_workspace() {
    let ws = WorkspaceMemory::new();
    let mem = AgentMemory::new("cro").with_workspace(ws);
    mem.store_insight(Insight::new("ins1", "cro", "High confidence insight", 0.9).evidence(5))
        .await
        .unwrap();
    mem.store_insight(Insight::new("ins2", "cro", "Low confidence", 0.3).evidence(1))
        .await
        .unwrap();

    let published = mem.publish_to_workspace(0.5).await.unwrap();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].content, "High confidence insight");
    assert_eq!(published[0].meta.source, "cro");
}

#[tokio::test]
async fn test_publish_no_workspace() {
    let mem = AgentMemory::new("cro");
    let result = mem
        .publish_to_workspace(openvibe_memory::DEFAULT_PUBLISH_CONFIDENCE)
        .await
        .unwrap();
    assert!(result.is_empty());
}

#[tokio::test]
async fn publishing_twice_does_not_duplicate() {
    let ws = WorkspaceMemory::new();
    let mem = AgentMemory::new("cro").with_workspace(ws.clone());
    mem.store_insight(
        Insight::new("ins1", "cro", "High confidence insight", 0.9).domain("revenue"),
    )
    .await
    .unwrap();
    let first = mem.publish_to_workspace(0.5).await.unwrap();
    let second = mem.publish_to_workspace(0.5).await.unwrap();
    assert_eq!(first[0].id, second[0].id);
    let reader = ClearanceProfile::new("ceo").with_domain("revenue", Classification::Restricted);
    let facts = ws
        .query(&reader, FactQuery::new().limit(100))
        .await
        .unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(
        facts[0].external_id.as_deref(),
        Some("insight:ins1"),
        "lineage"
    );
    assert_eq!(facts[0].meta.owner, "agent:cro");
    assert_eq!(facts[0].meta.classification, Classification::Internal);
    // A changed insight republishes in place.
    let mut ins = mem.get_insight("ins1").await.unwrap().unwrap();
    ins.content = "Refined insight".into();
    mem.store_insight(ins).await.unwrap();
    mem.publish_to_workspace(0.5).await.unwrap();
    let facts = ws
        .query(&reader, FactQuery::new().limit(100))
        .await
        .unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].content, "Refined insight");
}

// --- V1 backward compat ---

#[tokio::test]
async fn test_v1_compat_store_and_recall() {
    let mem = AgentMemory::new("cro");
    mem.store("cro", "k1", "webinar leads convert 2x")
        .await
        .unwrap();
    let results = mem.recall("cro", "webinar", 10).await.unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, "webinar leads convert 2x");
    assert_eq!(results[0].key, "k1");
    assert_eq!(results[0].namespace, "cro");
}

#[tokio::test]
async fn test_v1_compat_recall_empty() {
    let mem = AgentMemory::new("cro");
    let results = mem.recall("cro", "nothing", 10).await.unwrap();
    assert!(results.is_empty());
}

#[tokio::test]
async fn test_v1_compat_delete_noop() {
    let mem = AgentMemory::new("cro");
    // Deleting a missing key does not fail.
    assert!(!mem.delete("cro", "k1").await.unwrap());
}

#[tokio::test]
async fn v1_delete_really_deletes() {
    let mem = AgentMemory::new("cro");
    mem.store("cro", "k1", "webinar leads convert 2x")
        .await
        .unwrap();
    mem.store("cro", "k1", "webinar leads convert 3x")
        .await
        .unwrap();
    assert_eq!(
        mem.recall("cro", "", 10).await.unwrap().len(),
        1,
        "store replaces"
    );
    assert!(mem.delete("cro", "k1").await.unwrap());
    assert!(mem.recall("cro", "webinar", 10).await.unwrap().is_empty());
    assert!(!mem.delete("cro", "k1").await.unwrap());
}

// --- Episode sink ---

#[tokio::test]
async fn agent_memory_is_an_episode_sink() {
    let mem = AgentMemory::new("cro");
    let sink: Arc<dyn EpisodeSink> = Arc::new(mem.clone());
    let mut ep = make_episode("ep1", "revenue", "from a node");
    ep.agent_id = String::new();
    sink.record(ep).await.unwrap();
    let recalled = mem.recall_episodes(EpisodeQuery::new()).await.unwrap();
    assert_eq!(recalled.len(), 1);
    assert_eq!(recalled[0].agent_id, "cro");
    assert_eq!(recalled[0].meta.owner, "agent:cro");
    assert_eq!(recalled[0].meta.namespace, "cro");
}

#[tokio::test]
async fn agents_sharing_stores_see_only_their_own() {
    let stores = openvibe_memory::in_memory_stores();
    let cro = AgentMemory::new("cro").with_stores(stores.episodes.clone(), stores.insights.clone());
    let cmo = AgentMemory::new("cmo").with_stores(stores.episodes.clone(), stores.insights.clone());
    cro.record_episode(make_episode("ep1", "revenue", "x"))
        .await
        .unwrap();
    cro.store_insight(Insight::new("ins1", "", "cro insight", 0.9))
        .await
        .unwrap();
    assert!(
        cmo.recall_episodes(EpisodeQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        cmo.recall_insights(InsightQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(cmo.get_insight("ins1").await.unwrap().is_none());
}

/// An insight store whose `find_similar` answers only once two callers
/// asked (and then "nothing similar"): two reflections that see the same
/// new pattern at once, exactly.
struct RacingInsights {
    inner: Arc<dyn openvibe_protocols::InsightStore>,
    barrier: tokio::sync::Barrier,
}

#[async_trait]
impl openvibe_protocols::RecordStore<Insight> for RacingInsights {
    async fn store(&self, ctx: &CallerContext, record: Insight) -> Result<Insight, StoreError> {
        self.inner.store(ctx, record).await
    }
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Insight>, StoreError> {
        self.inner.get(ctx, id).await
    }
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &InsightQuery,
    ) -> Result<Vec<Insight>, StoreError> {
        self.inner.query(ctx, query).await
    }
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.inner.delete(ctx, id).await
    }
}

#[async_trait]
impl openvibe_protocols::RevisableStore<Insight> for RacingInsights {
    async fn update(&self, ctx: &CallerContext, record: Insight) -> Result<Insight, StoreError> {
        self.inner.update(ctx, record).await
    }
    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        self.inner.touch(ctx, ids).await
    }
}

#[async_trait]
impl openvibe_protocols::InsightStore for RacingInsights {
    async fn find_similar(
        &self,
        _ctx: &CallerContext,
        _agent_id: &str,
        _content: &str,
    ) -> Result<Option<Insight>, StoreError> {
        self.barrier.wait().await;
        Ok(None)
    }
    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError> {
        self.inner.strengthen(ctx, id, episode_ids).await
    }
    async fn observe(
        &self,
        ctx: &CallerContext,
        insight: Insight,
    ) -> Result<openvibe_protocols::Observed, StoreError> {
        self.inner.observe(ctx, insight).await
    }
}

#[tokio::test]
async fn two_reflections_seeing_one_new_pattern_create_one_insight() {
    let stores = openvibe_memory::in_memory_stores();
    let racing = Arc::new(RacingInsights {
        inner: stores.insights.clone(),
        barrier: tokio::sync::Barrier::new(2),
    });
    let mem = AgentMemory::new("cro").with_stores(stores.episodes.clone(), racing);
    mem.record_episode(make_episode("ep1", "revenue", "vp sponsor, closed"))
        .await
        .unwrap();
    // Two wordings of one pattern: the same words.
    let first = FakeLlm::answering(
        json!([{"content": "VP sponsors close deals", "confidence": 0.6}]).to_string(),
    );
    let second = FakeLlm::answering(
        json!([{"content": "deals close: VP sponsors", "confidence": 0.6}]).to_string(),
    );
    let (a, b) = tokio::join!(mem.reflect(&first), mem.reflect(&second));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.created.len() + b.created.len(), 1, "created once");
    assert_eq!(a.strengthened.len() + b.strengthened.len(), 1);
    let stored = mem.recall_insights(InsightQuery::new()).await.unwrap();
    assert_eq!(stored.len(), 1, "one insight per pattern: {stored:?}");
    assert_eq!(stored[0].evidence_count, 2, "each reflection counted once");
}

#[tokio::test]
async fn a_belief_traces_back_to_the_raw_calls() {
    use openvibe_memory::MemoryPyramid;
    use openvibe_protocols::{Belief, CallOrigin, RawCall};
    let pyramid = MemoryPyramid::new(AgentMemory::new("cro"));
    let episode = pyramid
        .record_episode(make_episode("ep1", "revenue", "vp sponsor, closed"))
        .await
        .unwrap();
    let mut request = LlmRequest::new("sonnet", "Score Acme");
    request.origin = Some(CallOrigin {
        episode_id: episode.id.clone(),
        ..CallOrigin::default()
    });
    pyramid
        .log_call(RawCall::new(
            "cro",
            Utc::now(),
            900,
            request,
            Ok(LlmResponse::text("85")),
        ))
        .await;
    let llm = FakeLlm::answering(
        json!([{"content": "VP sponsors close deals", "confidence": 0.9}]).to_string(),
    );
    let reflected = pyramid
        .reflect(&llm, &openvibe_memory::ReflectOptions::default())
        .await
        .unwrap();
    let insight = &reflected.created[0];
    let belief = pyramid
        .memory()
        .propose_belief(
            Belief::new("cro", "VP sponsors close deals", 0.9)
                .from_insights([insight.id.clone()], 1),
        )
        .await
        .unwrap();
    let lineage = pyramid.trace_belief(&belief.id).await.unwrap();
    assert_eq!(lineage.belief.id, belief.id);
    assert_eq!(lineage.insights.len(), 1);
    assert_eq!(lineage.insights[0].insight.id, insight.id);
    assert_eq!(lineage.insights[0].episodes[0].id, "ep1");
    let calls = lineage.raw_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].episode_id.as_deref(), Some("ep1"));
    let listed = pyramid
        .beliefs(openvibe_protocols::BeliefQuery::new())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert!(matches!(
        pyramid.trace_belief("nope").await,
        Err(MemoryError::Store(StoreError::NotFound { .. }))
    ));
}

// --- Reflection merges only a restatement (issue 64) ---

async fn with_insight(content: &str) -> AgentMemory {
    let mem = AgentMemory::new("cro");
    mem.store_insight(Insight::new("ins1", "cro", content, 0.5).evidence(2))
        .await
        .unwrap();
    mem.record_episode(make_episode("ep1", "revenue", "a deal moved"))
        .await
        .unwrap();
    mem
}

/// A model answering from a script, in order, keeping the requests.
struct ScriptedLlm {
    answers: Mutex<std::collections::VecDeque<LlmResponse>>,
    asked: Mutex<Vec<LlmRequest>>,
}

impl ScriptedLlm {
    fn new(answers: impl IntoIterator<Item = LlmResponse>) -> Self {
        Self {
            answers: Mutex::new(answers.into_iter().collect()),
            asked: Mutex::new(Vec::new()),
        }
    }

    fn requests(&self) -> Vec<LlmRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl LlmProvider for ScriptedLlm {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.asked.lock().unwrap().push(request.clone());
        Ok(self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .expect("the script has an answer"))
    }
}

fn reflection_of(content: &str) -> LlmResponse {
    LlmResponse::text(json!([{"content": content, "confidence": 0.7}]).to_string())
}

#[tokio::test]
async fn a_contradiction_sharing_its_words_is_stored_beside_not_merged() {
    let mem = with_insight("Deals with a VP sponsor close within 30 days").await;
    let llm = FakeLlm::answering(
        json!([{"content": "Deals with a VP sponsor no longer close within 30 days", "confidence": 0.7}])
            .to_string(),
    );
    let report = mem.reflect(&llm).await.unwrap();
    assert_eq!((report.created.len(), report.strengthened.len()), (1, 0));
    let stored = mem.recall_insights(InsightQuery::new()).await.unwrap();
    assert_eq!(stored.len(), 2, "both stand");
    let old = stored.iter().find(|i| i.id == "ins1").unwrap();
    assert_eq!(old.evidence_count, 2, "the old one is not strengthened");
    assert_eq!(llm.calls(), 1, "no model check unless asked");
}

#[tokio::test]
async fn with_the_models_check_only_a_duplicate_strengthens() {
    use openvibe_memory::{ReflectOptions, Subjects};
    let options = ReflectOptions {
        subjects: Subjects::by_words(),
        check_with_model: true,
        ..ReflectOptions::default()
    };
    // A rewording the model calls a duplicate: strengthened.
    let mem = with_insight("Deals with a VP sponsor close within 30 days").await;
    let llm = ScriptedLlm::new([
        reflection_of("VP-sponsored deals close in under 30 days"),
        LlmResponse::text(r#"{"relation": "duplicate"}"#),
    ]);
    let report = mem.reflect_with(&llm, &options).await.unwrap();
    assert_eq!((report.created.len(), report.strengthened.len()), (0, 1));
    assert_eq!(report.strengthened[0].id, "ins1");
    let asked = serde_json::to_string(&llm.requests()[1]).unwrap();
    assert!(asked.contains("Held: Deals with a VP sponsor"), "{asked}");
    // The model says it contradicts: stored beside it.
    let mem = with_insight("Deals with a VP sponsor close within 30 days").await;
    let llm = ScriptedLlm::new([
        reflection_of("Since the price change, VP-sponsored deals take 90 days to close"),
        LlmResponse::text(r#"{"relation": "contradicts"}"#),
    ]);
    let report = mem.reflect_with(&llm, &options).await.unwrap();
    assert_eq!((report.created.len(), report.strengthened.len()), (1, 0));
    // Another subject: the model is not asked.
    let mem = with_insight("Deals with a VP sponsor close within 30 days").await;
    let llm = ScriptedLlm::new([reflection_of("Webinar signups peak on Tuesdays")]);
    let report = mem.reflect_with(&llm, &options).await.unwrap();
    assert_eq!(report.created.len(), 1);
    assert_eq!(llm.requests().len(), 1);
    // An answer naming no relation: a typed error.
    let mem = with_insight("Deals with a VP sponsor close within 30 days").await;
    let llm = ScriptedLlm::new([
        reflection_of("VP-sponsored deals close in under 30 days"),
        LlmResponse::text("perhaps"),
    ]);
    let err = mem.reflect_with(&llm, &options).await.unwrap_err();
    assert!(
        matches!(err, openvibe_memory::MemoryError::MalformedRelation { .. }),
        "{err}"
    );
}
