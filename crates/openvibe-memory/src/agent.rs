//! Agent memory: an agent's episodes (L2) and insights (L3), reflection
//! (L2 → L3 with an LLM), publishing insights to the workspace, and V1
//! key/value compatibility.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use openvibe_protocols::AuditLog;
use openvibe_protocols::promotion::{AutoPromote, Promotion, promote_insight};
use openvibe_protocols::{
    Belief, BeliefQuery, BeliefStatus, BeliefStore, CallerContext, Episode, EpisodeQuery,
    EpisodeSink, EpisodicStore, Fact, FactQuery, Insight, InsightQuery, InsightStatus,
    InsightStore, LlmProvider, LlmRequest, MemoryEntry, MemoryProvider, Observed, Page, RawCall,
    RawCallQuery, RawLogStore, RecordVectors, StoreError, content_hash, truncate_chars,
};
use serde_json::Value;
use tracing::Instrument;

use crate::access::ClearanceProfile;
use crate::error::MemoryError;
use crate::raw_writer::{RawLogConfig, RawLogWriter};
use crate::subject::{Relation, SubjectScore, Subjects};
use crate::workspace::WorkspaceMemory;
use openvibe_in_memory::{InMemoryEpisodicStore, InMemoryInsightStore, InMemoryRawLog};

/// Confidence threshold `publish_to_workspace` is usually called with.
pub const DEFAULT_PUBLISH_CONFIDENCE: f64 = 0.5;

/// At most this many insights are published by one `publish_to_workspace` call
/// (the most confident first).
pub const PUBLISH_LIMIT: usize = 1000;

/// How `reflect` asks the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectOptions {
    /// Text put before the reflection instructions (e.g. the role's soul).
    pub role_context: String,
    /// Model name or alias (default `sonnet`).
    pub model: String,
    /// Sampling temperature (default 0.3).
    pub temperature: f32,
    /// How many recent episodes the prompt shows (default 50).
    pub episode_limit: usize,
    /// How a new insight's subject is compared with the agent's insights
    /// (default by words; a role with an embedder compares by meaning).
    pub subjects: Subjects,
    /// Ask the model how a new insight stands to the insight most on its
    /// subject ([`Relation`]), and strengthen that one only when the model
    /// says it is a duplicate (default off: only a restatement in the
    /// same terms strengthens, see [`SubjectScore::duplicate`]).
    pub check_with_model: bool,
    /// Only episodes after this time: the newest a previous reflection
    /// saw ([`ReflectionReport::newest`]), so that a reflection never
    /// re-reads what it has seen (default: none, the latest
    /// `episode_limit`).
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

/// How many of the agent's most confident insights a new insight is
/// compared with by meaning (when [`ReflectOptions::check_with_model`]).
pub const REFLECT_SUBJECT_CANDIDATES: usize = 50;

impl Default for ReflectOptions {
    fn default() -> Self {
        Self {
            role_context: String::new(),
            model: "sonnet".to_owned(),
            temperature: 0.3,
            episode_limit: 50,
            subjects: Subjects::by_words(),
            check_with_model: false,
            since: None,
        }
    }
}

/// What one `reflect` call did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReflectionReport {
    /// Episodes shown to the model (0: the model was not called).
    pub episodes_considered: usize,
    /// New insights, as stored.
    pub created: Vec<Insight>,
    /// Existing insights a similar new one strengthened, as updated.
    pub strengthened: Vec<Insight>,
    /// The raw calls (L1) behind the episodes considered, newest first:
    /// what every insight of this reflection cites (at most
    /// [`MAX_RAW_PAGE`](openvibe_protocols::MAX_RAW_PAGE)).
    pub cited_calls: Vec<String>,
    /// Items of the model's list that were not usable, with the reason.
    pub skipped: Vec<String>,
    /// The time of the newest episode considered (what the next
    /// reflection's [`ReflectOptions::since`] starts after).
    pub newest: Option<chrono::DateTime<chrono::Utc>>,
}

impl ReflectionReport {
    /// Created and strengthened insights together.
    pub fn insights(&self) -> impl Iterator<Item = &Insight> {
        self.created.iter().chain(&self.strengthened)
    }
}

/// One agent's memory over an episodic and an insight store, optionally
/// connected to a workspace.
///
/// Cheap to clone (stores are shared). Every store call is made with the
/// agent's [`CallerContext`] (by default `CallerContext::agent(agent_id)`),
/// so the agent owns what it writes.
#[derive(Clone)]
pub struct AgentMemory {
    agent_id: String,
    ctx: CallerContext,
    workspace: Option<WorkspaceMemory>,
    episodes: Arc<dyn EpisodicStore>,
    insights: Arc<dyn InsightStore>,
    audit: Option<Arc<dyn AuditLog>>,
    auto_promote: Option<AutoPromote>,
    raw: Arc<dyn RawLogStore>,
    raw_config: RawLogConfig,
    /// Made on first use from the fields above (reset when one changes).
    raw_writer: Arc<OnceLock<RawLogWriter>>,
    /// The vectors the stores keep of their records, when known.
    vectors: Option<Arc<dyn RecordVectors>>,
    /// Beliefs (L4).
    beliefs: Arc<dyn BeliefStore>,
}

impl std::fmt::Debug for AgentMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentMemory")
            .field("agent_id", &self.agent_id)
            .field("ctx", &self.ctx)
            .field("workspace", &self.workspace.is_some())
            .finish_non_exhaustive()
    }
}

/// The most active beliefs a prompt shows (and the decision engine weighs).
pub const MAX_PROMPT_BELIEFS: usize = 100;

impl AgentMemory {
    /// Memory of `agent_id` over fresh in-memory stores, without a workspace.
    pub fn new(agent_id: impl Into<String>) -> Self {
        let agent_id = agent_id.into();
        Self {
            ctx: CallerContext::agent(agent_id.clone()),
            agent_id,
            workspace: None,
            episodes: Arc::new(InMemoryEpisodicStore::new()),
            insights: Arc::new(InMemoryInsightStore::new()),
            audit: None,
            auto_promote: None,
            raw: Arc::new(InMemoryRawLog::new()),
            raw_config: RawLogConfig::default(),
            raw_writer: Arc::default(),
            vectors: None,
            beliefs: Arc::new(openvibe_in_memory::InMemoryBeliefStore::new()),
        }
    }

    /// Keep beliefs (L4) in `store` (e.g. a Postgres backend's).
    #[must_use]
    pub fn with_beliefs(mut self, store: Arc<dyn BeliefStore>) -> Self {
        self.beliefs = store;
        self
    }

    /// The belief store.
    pub fn belief_store(&self) -> &Arc<dyn BeliefStore> {
        &self.beliefs
    }

    /// Propose a belief of this agent (its `role_id` set to the agent's):
    /// it waits for a person ([`BeliefStore::decide`]).
    pub async fn propose_belief(&self, mut belief: Belief) -> Result<Belief, MemoryError> {
        belief.role_id.clone_from(&self.agent_id);
        Ok(self.beliefs.propose(&self.ctx, belief).await?)
    }

    /// This agent's active beliefs (of `domain` when given), newest first,
    /// at most [`MAX_PROMPT_BELIEFS`].
    pub async fn active_beliefs(&self, domain: Option<&str>) -> Result<Vec<Belief>, MemoryError> {
        let mut query = BeliefQuery::new()
            .status(BeliefStatus::Active)
            .role(self.agent_id.clone())
            .limit(MAX_PROMPT_BELIEFS);
        query.domain = domain.map(str::to_owned);
        Ok(self.beliefs.list(&self.ctx, &query).await?.items)
    }

    /// Every belief of this agent, whatever its status, newest first (all
    /// pages).
    pub async fn all_beliefs(&self) -> Result<Vec<Belief>, MemoryError> {
        let query = BeliefQuery::new()
            .role(self.agent_id.clone())
            .limit(openvibe_protocols::MAX_BELIEF_PAGE);
        Ok(Page::all(|cursor| {
            let mut query = query.clone();
            query.cursor = cursor;
            async move { self.beliefs.list(&self.ctx, &query).await }
        })
        .await?)
    }

    /// This agent's active beliefs of `domain` about the same subject as
    /// `statement`, as `subjects` judges (by meaning with an embedder, by
    /// words without), the most alike first.
    pub async fn beliefs_about(
        &self,
        statement: &str,
        domain: &str,
        subjects: &Subjects,
    ) -> Result<Vec<Belief>, MemoryError> {
        let beliefs = self.active_beliefs(Some(domain)).await?;
        let texts: Vec<&str> = beliefs.iter().map(|b| b.statement.as_str()).collect();
        let scores = subjects.score_all(statement, &texts).await;
        let mut scored: Vec<(f32, Belief)> = beliefs
            .into_iter()
            .zip(scores)
            .filter(|(_, score)| score.same_subject(subjects.thresholds()))
            .map(|(b, score)| (score.closeness(), b))
            .collect();
        scored.sort_by(|(a, _), (b, _)| b.total_cmp(a));
        Ok(scored.into_iter().map(|(_, b)| b).collect())
    }

    /// Keep the raw log (L1) in `store` (e.g. a Postgres backend's).
    #[must_use]
    pub fn with_raw_log(mut self, store: Arc<dyn RawLogStore>) -> Self {
        self.raw = store;
        self.raw_writer = Arc::default();
        self
    }

    /// Batch, retain and redact the raw log as `config` says.
    #[must_use]
    pub fn with_raw_log_config(mut self, config: RawLogConfig) -> Self {
        self.raw_config = config;
        self.raw_writer = Arc::default();
        self
    }

    /// Audit promotions (publishing, automatic promotion) into `audit`.
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<dyn AuditLog>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Promote eligible insights to the workspace as they are stored
    /// (see [`AutoPromote`]; off unless `policy.enabled`).
    #[must_use]
    pub fn with_auto_promote(mut self, policy: AutoPromote) -> Self {
        self.auto_promote = policy.enabled.then_some(policy);
        self
    }

    /// Connect a workspace (for publishing, references and assembly).
    #[must_use]
    pub fn with_workspace(mut self, workspace: WorkspaceMemory) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// Use these stores (e.g. a Postgres backend's).
    #[must_use]
    pub fn with_stores(
        mut self,
        episodes: Arc<dyn EpisodicStore>,
        insights: Arc<dyn InsightStore>,
    ) -> Self {
        self.episodes = episodes;
        self.insights = insights;
        self
    }

    /// Read the vectors the stores keep of their records from `vectors`
    /// (the [`MemoryAssembler`](crate::MemoryAssembler) ranks with them
    /// instead of embedding every candidate).
    #[must_use]
    pub fn with_vectors(mut self, vectors: Arc<dyn RecordVectors>) -> Self {
        self.vectors = Some(vectors);
        self
    }

    /// The stored vectors of `model` for the records `ids` of `kind` this
    /// agent may read, by id: empty without vectors, for another model, or
    /// when the store fails (a warning: ranking then embeds what it needs).
    pub async fn stored_vectors(
        &self,
        model: &str,
        kind: &str,
        ids: &[String],
    ) -> std::collections::HashMap<String, Vec<f32>> {
        let Some(vectors) = &self.vectors else {
            return std::collections::HashMap::new();
        };
        if !openvibe_protocols::EMBEDDED_KINDS.contains(&kind) {
            // A kind kept without vectors (beliefs): nothing to read.
            return std::collections::HashMap::new();
        }
        let mut found = std::collections::HashMap::new();
        for chunk in ids.chunks(openvibe_protocols::MAX_VECTOR_IDS) {
            match vectors.vectors(&self.ctx, model, kind, chunk).await {
                Ok(got) => found.extend(got.into_iter().map(|v| (v.id, v.vector))),
                Err(e) => {
                    tracing::warn!(
                        kind,
                        transient = e.is_transient(),
                        "reading stored vectors failed"
                    );
                    tracing::debug!(error = %e, "reading stored vectors failed");
                }
            }
        }
        found
    }

    /// Call the stores as `ctx` (tenant, project, clearance of the agent).
    #[must_use]
    pub fn with_context(mut self, ctx: CallerContext) -> Self {
        self.ctx = ctx;
        self.raw_writer = Arc::default();
        self
    }

    /// Read with `clearance` (replacing the context's clearance; the
    /// principal, tenant and project stay).
    #[must_use]
    pub fn with_clearance(mut self, clearance: &ClearanceProfile) -> Self {
        self.ctx = self.ctx.with_clearance(clearance.clearance());
        self.raw_writer = Arc::default();
        self
    }

    /// The agent's id.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The context store calls are made with.
    pub fn context(&self) -> &CallerContext {
        &self.ctx
    }

    /// The connected workspace.
    pub fn workspace(&self) -> Option<&WorkspaceMemory> {
        self.workspace.as_ref()
    }

    /// The episodic store.
    pub fn episodic_store(&self) -> &Arc<dyn EpisodicStore> {
        &self.episodes
    }

    /// The insight store.
    pub fn insight_store(&self) -> &Arc<dyn InsightStore> {
        &self.insights
    }

    // --- the workspace, as this agent ---

    /// Workspace facts this agent can read matching `query` (access is
    /// counted only when the query asks for it). No workspace: none.
    pub async fn workspace_facts(&self, query: &FactQuery) -> Result<Vec<Fact>, MemoryError> {
        match &self.workspace {
            Some(ws) => ws.search_as(&self.ctx, query).await,
            None => Ok(Vec::new()),
        }
    }

    /// One workspace fact, if this agent can read it.
    pub async fn workspace_fact(&self, id: &str) -> Result<Option<Fact>, MemoryError> {
        match &self.workspace {
            Some(ws) => ws.get_as(&self.ctx, id).await,
            None => Ok(None),
        }
    }

    /// Count the workspace facts among `ids` this agent can read as
    /// accessed; returns how many were.
    pub async fn touch_workspace_facts(&self, ids: &[String]) -> Result<usize, MemoryError> {
        match &self.workspace {
            Some(ws) => ws.touch_as(&self.ctx, ids).await,
            None => Ok(0),
        }
    }

    // --- L1: the raw log ---

    /// The raw log store.
    pub fn raw_store(&self) -> &Arc<dyn RawLogStore> {
        &self.raw
    }

    /// The writer that appends this agent's calls in the background (see
    /// [`RawLogWriter`] for batching and what a crash loses).
    pub fn raw_log(&self) -> &RawLogWriter {
        self.raw_writer.get_or_init(|| {
            RawLogWriter::new(
                self.raw.clone(),
                self.ctx.clone(),
                self.agent_id.clone(),
                self.raw_config.clone(),
            )
        })
    }

    /// Log one LLM call of this agent (appended in the background).
    pub async fn log_call(&self, call: RawCall) {
        self.raw_log().log(call).await;
    }

    /// Wait until every call logged so far is appended.
    pub async fn flush_raw_log(&self) {
        self.raw_log().flush().await;
    }

    /// A page of this agent's raw calls matching `query` (its `agent_id`
    /// is forced), newest first.
    pub async fn recall_raw(&self, query: RawCallQuery) -> Result<Page<RawCall>, MemoryError> {
        let query = RawCallQuery {
            agent_id: Some(self.agent_id.clone()),
            ..query
        };
        Ok(self.raw.query(&self.ctx, &query).await?)
    }

    /// The raw calls episode `episode_id` was made from (L2 → L1), newest first.
    pub async fn raw_calls_of(&self, episode_id: &str) -> Result<Vec<RawCall>, MemoryError> {
        self.raw_calls_behind(&[episode_id.to_owned()]).await
    }

    /// The raw calls behind `insight` (L3 → L2 → L1): those its source
    /// episodes were made from, newest first.
    pub async fn cite(&self, insight: &Insight) -> Result<Vec<RawCall>, MemoryError> {
        self.raw_calls_behind(&insight.source_episode_ids).await
    }

    async fn raw_calls_behind(&self, episode_ids: &[String]) -> Result<Vec<RawCall>, MemoryError> {
        if episode_ids.is_empty() {
            return Ok(Vec::new());
        }
        let query = RawCallQuery::new()
            .episodes(episode_ids.iter().cloned())
            .limit(openvibe_protocols::MAX_RAW_PAGE);
        Page::all(|cursor| {
            let query = match cursor {
                Some(cursor) => query.clone().cursor(cursor),
                None => query.clone(),
            };
            self.recall_raw(query)
        })
        .await
    }

    // --- L2: episodes ---

    /// Record an episode of this agent (`agent_id` is set; the namespace
    /// defaults to the agent id).
    pub async fn record_episode(&self, mut episode: Episode) -> Result<Episode, MemoryError> {
        episode.agent_id.clone_from(&self.agent_id);
        if episode.meta.namespace.is_empty() {
            episode.meta.namespace.clone_from(&self.agent_id);
        }
        Ok(self.episodes.store(&self.ctx, episode).await?)
    }

    /// This agent's episodes matching `query` (its `agent_id` is forced), newest first.
    pub async fn recall_episodes(&self, query: EpisodeQuery) -> Result<Vec<Episode>, MemoryError> {
        let query = query.agent(self.agent_id.clone());
        Ok(self.episodes.query(&self.ctx, &query).await?)
    }

    /// One of this agent's episodes.
    pub async fn get_episode(&self, id: &str) -> Result<Option<Episode>, MemoryError> {
        let found = self.episodes.get(&self.ctx, id).await?;
        Ok(found.filter(|e| e.agent_id == self.agent_id))
    }

    // --- L3: insights ---

    /// Store (insert or replace) an insight of this agent (`agent_id` is set).
    ///
    /// With automatic promotion on ([`AgentMemory::with_auto_promote`]) an
    /// eligible insight is also promoted to the workspace; a refused
    /// promotion is logged, not an error (the insight is stored).
    pub async fn store_insight(&self, mut insight: Insight) -> Result<Insight, MemoryError> {
        insight.agent_id.clone_from(&self.agent_id);
        if insight.meta.namespace.is_empty() {
            insight.meta.namespace.clone_from(&self.agent_id);
        }
        let stored = self.insights.store(&self.ctx, insight).await?;
        self.auto_promote(&stored).await;
        Ok(stored)
    }

    /// Promote `stored` to the workspace when automatic promotion is on and
    /// it is eligible; a refusal is logged, not an error.
    async fn auto_promote(&self, stored: &Insight) {
        if let (Some(policy), Some(workspace)) = (&self.auto_promote, &self.workspace)
            && policy.eligible_insight(stored)
        {
            let promotion = Promotion::automatic(policy.to.clone());
            if let Err(e) = promote_insight(
                self.insights.as_ref(),
                workspace.store().as_ref(),
                self.audit.as_deref(),
                &self.ctx,
                &stored.id,
                &promotion,
            )
            .await
            {
                tracing::warn!(insight = %stored.id, error = %e, "automatic promotion refused");
            }
        }
    }

    /// Observe the pattern `insight` names by its id
    /// ([`InsightStore::observe`]): create it (promoted like
    /// [`AgentMemory::store_insight`] when automatic promotion is on) or
    /// strengthen it.
    pub async fn observe_insight(&self, mut insight: Insight) -> Result<Observed, MemoryError> {
        insight.agent_id.clone_from(&self.agent_id);
        if insight.meta.namespace.is_empty() {
            insight.meta.namespace.clone_from(&self.agent_id);
        }
        let observed = self.insights.observe(&self.ctx, insight).await?;
        if observed.created {
            self.auto_promote(&observed.insight).await;
        }
        Ok(observed)
    }

    /// This agent's insights matching `query` (its `agent_id` is forced),
    /// most confident first.
    pub async fn recall_insights(&self, query: InsightQuery) -> Result<Vec<Insight>, MemoryError> {
        let query = query.agent(self.agent_id.clone());
        Ok(self.insights.query(&self.ctx, &query).await?)
    }

    /// One of this agent's insights.
    pub async fn get_insight(&self, id: &str) -> Result<Option<Insight>, MemoryError> {
        let found = self.insights.get(&self.ctx, id).await?;
        Ok(found.filter(|i| i.agent_id == self.agent_id))
    }

    // --- Reflection: L2 → L3 ---

    /// [`AgentMemory::reflect_with`] with default options.
    pub async fn reflect(&self, llm: &dyn LlmProvider) -> Result<ReflectionReport, MemoryError> {
        self.reflect_with(llm, &ReflectOptions::default()).await
    }

    /// Show the model the agent's recent episodes and store the insights it
    /// names. An insight that only restates an existing one strengthens it
    /// instead: confidence + 0.1 (at most 1.0), evidence + 1,
    /// `last_confirmed` = now. "Only restates": the same terms in the same
    /// order ([`SubjectScore::duplicate`]), or, with
    /// [`ReflectOptions::check_with_model`], the model's
    /// [`Relation::Duplicate`] for the existing insight most on its subject
    /// ([`ReflectOptions::subjects`]: by meaning with an embedder). A
    /// refinement or a contradiction is stored beside the insight it
    /// refines or contradicts, never merged into it.
    ///
    /// No episodes: the model is not called and the report is empty.
    /// Output that is not a JSON list (bare or in a ```json fence) is
    /// [`MemoryError::MalformedReflection`] and nothing is stored; unusable
    /// items of a list are listed in [`ReflectionReport::skipped`].
    pub async fn reflect_with(
        &self,
        llm: &dyn LlmProvider,
        options: &ReflectOptions,
    ) -> Result<ReflectionReport, MemoryError> {
        let mut query = EpisodeQuery::new().limit(options.episode_limit);
        // After the newest seen (stores keep microseconds).
        query.since = options
            .since
            .map(|seen| seen + chrono::Duration::microseconds(1));
        let recent = self.recall_episodes(query).await?;
        let mut report = ReflectionReport {
            episodes_considered: recent.len(),
            newest: recent.iter().map(|e| e.timestamp).max(),
            ..ReflectionReport::default()
        };
        if recent.is_empty() {
            return Ok(report);
        }
        let episodes_text: Vec<String> = recent
            .iter()
            .map(|e| format!("- [{}] {}: {}", e.domain, e.action, e.output_summary))
            .collect();
        let system = format!(
            "{}\nYou are reflecting on recent work experiences.\n\
             Extract patterns and insights as a JSON array:\n\
             [{{\"content\": \"...\", \"confidence\": 0.0-1.0, \"domain\": \"...\", \"entity\": \"...\", \"tags\": [...]}}]",
            options.role_context
        );
        let user = format!(
            "Recent episodes:\n{}\n\nWhat patterns do you see?",
            episodes_text.join("\n")
        );
        let request = LlmRequest::new(options.model.clone(), user)
            .system(system)
            .temperature(options.temperature);
        let span = tracing::info_span!(
            "llm_call",
            purpose = "reflect",
            model = %request.model,
            tenant = self.ctx.tenant_id(),
            principal = %self.ctx.principal(),
            model_used = tracing::field::Empty,
            stop_reason = tracing::field::Empty,
            tokens_in = tracing::field::Empty,
            tokens_out = tracing::field::Empty,
        );
        let response = llm.call(&request).instrument(span.clone()).await?;
        span.record("model_used", response.model.as_str());
        span.record("stop_reason", tracing::field::debug(&response.stop_reason));
        span.record("tokens_in", response.tokens_in);
        span.record("tokens_out", response.tokens_out);
        let items = parse_reflection(&response.content)?;
        let source_ids: Vec<String> = recent.iter().map(|e| e.id.clone()).collect();
        // The raw calls behind the episodes: what the insights cite.
        self.flush_raw_log().await;
        let cited = self
            .recall_raw(
                RawCallQuery::new()
                    .episodes(source_ids.iter().cloned())
                    .limit(openvibe_protocols::MAX_RAW_PAGE),
            )
            .await?;
        report.cited_calls = cited.items.into_iter().map(|c| c.id).collect();
        for (index, item) in items.iter().enumerate() {
            let candidate = match insight_from_item(item) {
                Ok(insight) => insight,
                Err(reason) => {
                    report.skipped.push(format!("item {index}: {reason}"));
                    continue;
                }
            };
            match self.restated(llm, options, &candidate.content).await? {
                Some(existing) => {
                    // One atomic step in the store: concurrent reflections
                    // strengthen it once each.
                    let updated = self
                        .insights
                        .strengthen(&self.ctx, &existing.id, &source_ids)
                        .await?;
                    report.strengthened.push(updated);
                }
                None => {
                    // A new pattern is stored under its pattern id: two
                    // reflections that see it at once create it once, and
                    // the later one strengthens it.
                    let insight = Insight {
                        id: Insight::pattern_id(&self.agent_id, &candidate.content),
                        source_episode_ids: source_ids.clone(),
                        ..candidate
                    };
                    let observed = self.observe_insight(insight).await?;
                    if observed.created {
                        report.created.push(observed.insight);
                    } else {
                        report.strengthened.push(observed.insight);
                    }
                }
            }
        }
        tracing::debug!(
            agent = %self.agent_id,
            created = report.created.len(),
            strengthened = report.strengthened.len(),
            skipped = report.skipped.len(),
            "reflected"
        );
        Ok(report)
    }

    /// The existing insight `content` only restates, if any (see
    /// [`AgentMemory::reflect_with`]).
    async fn restated(
        &self,
        llm: &dyn LlmProvider,
        options: &ReflectOptions,
        content: &str,
    ) -> Result<Option<Insight>, MemoryError> {
        let by_words = self
            .insights
            .find_similar(&self.ctx, &self.agent_id, content)
            .await?;
        if let Some(existing) = &by_words
            && SubjectScore::of(content, &existing.content, None).duplicate()
        {
            return Ok(by_words);
        }
        if !options.check_with_model {
            return Ok(None);
        }
        let mut pool = self
            .recall_insights(
                InsightQuery::new()
                    .status(InsightStatus::Active)
                    .limit(REFLECT_SUBJECT_CANDIDATES),
            )
            .await?;
        if let Some(existing) = by_words
            && !pool.iter().any(|i| i.id == existing.id)
        {
            pool.push(existing);
        }
        let texts: Vec<&str> = pool.iter().map(|i| i.content.as_str()).collect();
        let scores = options.subjects.score_all(content, &texts).await;
        let thresholds = options.subjects.thresholds();
        let best = scores
            .iter()
            .enumerate()
            .filter(|(_, score)| score.same_subject(thresholds))
            .max_by(|(_, a), (_, b)| a.closeness().total_cmp(&b.closeness()))
            .map(|(i, _)| i);
        let Some(best) = best else {
            return Ok(None);
        };
        let existing = pool.swap_remove(best);
        let relation = Relation::ask(llm, &options.model, &existing.content, content).await?;
        tracing::debug!(existing = %existing.id, %relation, "reflection compared a same-subject insight");
        Ok((relation == Relation::Duplicate).then_some(existing))
    }

    // --- Sync: agent → workspace ---

    /// Publish this agent's active insights with at least `min_confidence`
    /// to the workspace as facts (most confident first, at most
    /// [`PUBLISH_LIMIT`]), through the promotion path
    /// ([`promote_insight`]): the caller must be allowed to write the
    /// workspace namespace, and publishing is idempotent (the fact of
    /// insight `i` has a fixed id and lineage `external_id = "insight:i"`;
    /// an unchanged insight is not written again). No workspace: nothing
    /// is published.
    pub async fn publish_to_workspace(
        &self,
        min_confidence: f64,
    ) -> Result<Vec<Fact>, MemoryError> {
        let Some(workspace) = &self.workspace else {
            return Ok(Vec::new());
        };
        let insights = self
            .recall_insights(
                InsightQuery::new()
                    .min_confidence(min_confidence)
                    .status(InsightStatus::Active)
                    .limit(PUBLISH_LIMIT),
            )
            .await?;
        let mut published = Vec::with_capacity(insights.len());
        let promotion = Promotion::to(WorkspaceMemory::NAMESPACE)
            .note(format!("published by {}", self.agent_id));
        for insight in insights {
            published.push(
                promote_insight(
                    self.insight_store().as_ref(),
                    workspace.store().as_ref(),
                    self.audit.as_deref(),
                    &self.ctx,
                    &insight.id,
                    &promotion,
                )
                .await?,
            );
        }
        Ok(published)
    }
}

/// Whether two statements are about the same subject, by the analyzer's
/// terms (stemmed, stop words dropped): they share at least two terms and
/// at least a third of the shorter one's. `Some(shared terms)` when they
/// are. [`Subjects`] judges by meaning too.
///
/// ```
/// use openvibe_memory::same_subject;
/// let old = "Deals with a VP sponsor close within 30 days";
/// let new = "Since the pricing change, VP-sponsored deals stall in procurement";
/// assert!(same_subject(old, new).is_some());
/// assert!(same_subject(old, "Webinar leads convert poorly").is_none());
/// ```
pub fn same_subject(a: &str, b: &str) -> Option<usize> {
    let score = SubjectScore::of(a, b, None);
    score
        .same_subject(&crate::SubjectThresholds::default())
        .then_some(score.shared_terms)
}

/// Find the JSON list in a model's reflection output: the whole text, the
/// first fenced block (```json or ```), or the outermost `[...]`.
fn parse_reflection(text: &str) -> Result<Vec<Value>, MemoryError> {
    let candidates = openvibe_protocols::json_candidates(text);
    let mut reason = String::from("no JSON found");
    for candidate in candidates {
        match serde_json::from_str::<Value>(candidate) {
            Ok(Value::Array(items)) => return Ok(items),
            Ok(Value::Object(mut map)) => match map.remove("insights") {
                Some(Value::Array(items)) => return Ok(items),
                _ => reason = "a JSON object, not a list".to_owned(),
            },
            Ok(other) => reason = format!("JSON {}, not a list", json_kind(&other)),
            Err(e) => {
                if reason == "no JSON found" {
                    reason = e.to_string();
                }
            }
        }
    }
    Err(MemoryError::MalformedReflection {
        reason,
        excerpt: truncate_chars(text.trim(), 120).to_owned(),
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn insight_from_item(item: &Value) -> Result<Insight, String> {
    let Value::Object(map) = item else {
        return Err(format!("{} instead of an object", json_kind(item)));
    };
    let content = match map.get("content") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(_) => return Err("`content` is not a non-empty string".to_owned()),
        None => return Err("no `content`".to_owned()),
    };
    let confidence = match map.get("confidence") {
        None | Some(Value::Null) => 0.5,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.5),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("`confidence` {s:?} is not a number"))?,
        Some(other) => return Err(format!("`confidence` is {}", json_kind(other))),
    };
    if !confidence.is_finite() {
        return Err("`confidence` is not finite".to_owned());
    }
    let text = |key: &str| match map.get(key) {
        Some(Value::String(s)) => s.trim().to_owned(),
        _ => String::new(),
    };
    let tags = match map.get("tags") {
        Some(Value::Array(tags)) => tags
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    Ok(Insight {
        content,
        confidence: confidence.clamp(0.0, 1.0),
        evidence_count: 1,
        domain: text("domain"),
        entity: text("entity"),
        tags,
        ..Insight::default()
    })
}

/// The id V1 entries are stored under: deterministic per (namespace, key)
/// and always a valid record id.
fn v1_id(namespace: &str, key: &str) -> String {
    let hash = content_hash(&format!("{namespace}\u{0}{key}"));
    format!("v1_{}", hash.trim_start_matches("fnv1a64:"))
}

/// V1 key/value memory over the insight store: an entry is an insight of
/// agent `namespace` with confidence 1.0 whose `external_id` is the key.
#[async_trait]
impl MemoryProvider for AgentMemory {
    async fn store(&self, namespace: &str, key: &str, content: &str) -> Result<(), StoreError> {
        let mut insight = Insight::new(v1_id(namespace, key), namespace, content, 1.0);
        insight.external_id = Some(key.to_owned());
        insight.meta.namespace = namespace.to_owned();
        self.insights.store(&self.ctx, insight).await?;
        Ok(())
    }

    async fn recall(
        &self,
        namespace: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let found = self
            .insights
            .query(
                &self.ctx,
                &InsightQuery::for_agent(namespace).text(query).limit(limit),
            )
            .await?;
        Ok(found
            .into_iter()
            .map(|i| MemoryEntry {
                key: i.external_id.unwrap_or(i.id),
                content: i.content,
                namespace: namespace.to_owned(),
                created_at: i.meta.created_at,
            })
            .collect())
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        match self
            .insights
            .delete(&self.ctx, &v1_id(namespace, key))
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Nodes send their episodes here; `agent_id` is set to this agent's.
#[async_trait]
impl EpisodeSink for AgentMemory {
    async fn record(&self, episode: Episode) -> Result<(), StoreError> {
        self.record_episode(episode).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bare_fenced_and_wrapped_lists() {
        assert_eq!(parse_reflection(r#"[{"content": "a"}]"#).unwrap().len(), 1);
        let fenced =
            "Here you go:\n```json\n[{\"content\": \"a\"}, {\"content\": \"b\"}]\n```\nDone.";
        assert_eq!(parse_reflection(fenced).unwrap().len(), 2);
        let plain_fence = "```\n[]\n```";
        assert!(parse_reflection(plain_fence).unwrap().is_empty());
        assert_eq!(
            parse_reflection(r#"{"insights": [{"content": "x"}]}"#)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            parse_reflection("Patterns: [{\"content\": \"x\"}] hope it helps")
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn malformed_output_is_a_typed_error() {
        for bad in [
            "not json at all",
            "{\"content\": \"x\"}",
            "42",
            "```json\n[{\"content\": \n```",
            "",
        ] {
            match parse_reflection(bad) {
                Err(MemoryError::MalformedReflection { .. }) => {}
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn items_are_validated() {
        let ok = insight_from_item(&serde_json::json!({
            "content": " c ", "confidence": 1.7, "domain": "d", "tags": ["t", 3, ""]
        }))
        .unwrap();
        assert_eq!(ok.content, "c");
        assert_eq!(ok.confidence, 1.0);
        assert_eq!(ok.tags, vec!["t"]);
        assert_eq!(
            insight_from_item(&serde_json::json!({"content": "x"}))
                .unwrap()
                .confidence,
            0.5
        );
        assert_eq!(
            insight_from_item(&serde_json::json!({"content": "x", "confidence": "0.7"}))
                .unwrap()
                .confidence,
            0.7
        );
        assert!(insight_from_item(&serde_json::json!({"confidence": 0.7})).is_err());
        assert!(insight_from_item(&serde_json::json!({"content": ""})).is_err());
        assert!(insight_from_item(&serde_json::json!("text")).is_err());
        assert!(
            insight_from_item(&serde_json::json!({"content": "x", "confidence": [1]})).is_err()
        );
    }

    #[test]
    fn v1_ids_are_valid_and_distinct() {
        let a = v1_id("cro", "a/b");
        assert!(openvibe_protocols::validate_record_id(&a).is_ok());
        assert_ne!(v1_id("cro", "k"), v1_id("cmo", "k"));
        assert_eq!(v1_id("cro", "k"), v1_id("cro", "k"));
    }
}

/// V1 key/value memory in process (the source design's `InMemoryStore`):
/// namespaced entries, recalled by text terms (every term must occur; an
/// empty query recalls everything), newest first.
///
/// It is [`AgentMemory`]'s V1 implementation over its own in-memory stores,
/// so both recall alike.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use openvibe_memory::InMemoryStore;
/// use openvibe_protocols::MemoryProvider;
///
/// let memory = InMemoryStore::new();
/// memory.store("cro", "m1", "Webinar leads convert 2x").await?;
/// assert_eq!(memory.recall("cro", "webinar", 10).await?.len(), 1);
/// assert!(memory.recall("cmo", "", 10).await?.is_empty());
/// assert!(memory.delete("cro", "m1").await?);
/// # Ok::<(), openvibe_protocols::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct InMemoryStore(AgentMemory);

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self(AgentMemory::new("v1_memory"))
    }
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl MemoryProvider for InMemoryStore {
    async fn store(&self, namespace: &str, key: &str, content: &str) -> Result<(), StoreError> {
        self.0.store(namespace, key, content).await
    }

    async fn recall(
        &self,
        namespace: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        self.0.recall(namespace, query, limit).await
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        self.0.delete(namespace, key).await
    }
}
