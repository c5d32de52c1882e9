//! [`MemoryPyramid`]: one handle over a role's memory, level by level.
//!
//! | level | what | written by |
//! |---|---|---|
//! | L1 raw log | every LLM call, as sent and answered ([`RawCall`]) | the role-aware LLM, automatically |
//! | L2 episodes | one structured record per node run ([`Episode`]) | the nodes, at every completion (real time) |
//! | L3 insights | patterns distilled from episodes ([`Insight`]) | [`MemoryPyramid::reflect`] (daily, on the reflection schedule) |
//! | L4 beliefs | what the role holds true once a person approved it ([`Belief`]) | the learn step proposes, a person approves |
//! | workspace | facts shared with other roles ([`Fact`]) | [`MemoryPyramid::publish`] |
//!
//! Each level links to the one below: a belief names its insights, an
//! insight its source episodes, a raw call the episode its node run
//! became, so [`MemoryPyramid::trace`] walks an insight back to the calls
//! it rests on and [`MemoryPyramid::trace_belief`] a belief through its
//! insights to them.

use openvibe_protocols::{
    Belief, BeliefQuery, Episode, EpisodeQuery, Fact, FactQuery, Insight, InsightQuery,
    LlmProvider, Page, RawCall, RawCallQuery,
};

use crate::agent::{AgentMemory, ReflectOptions, ReflectionReport};
use crate::error::MemoryError;

/// What [`MemoryPyramid::distill`] did: L2 → L3, then L3 → the workspace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distillation {
    /// The reflection (L2 → L3).
    pub reflection: ReflectionReport,
    /// The facts published to the workspace.
    pub published: Vec<Fact>,
}

/// An insight with what it rests on: its source episodes (L2) and their
/// raw calls (L1).
#[derive(Debug, Clone, PartialEq)]
pub struct Lineage {
    /// The insight.
    pub insight: Insight,
    /// Its source episodes that the caller can still read, newest first.
    pub episodes: Vec<Episode>,
    /// The raw calls of those episodes, newest first.
    pub raw_calls: Vec<RawCall>,
}

/// A belief with what it rests on: the lineage of each of its insights
/// that the caller can still read (L3 → L2 → L1).
#[derive(Debug, Clone, PartialEq)]
pub struct BeliefLineage {
    /// The belief.
    pub belief: Belief,
    /// Its insights, each with its episodes and raw calls, in the order
    /// the belief names them.
    pub insights: Vec<Lineage>,
}

impl BeliefLineage {
    /// Every raw call under the belief, newest first, each once.
    pub fn raw_calls(&self) -> Vec<&RawCall> {
        let mut calls: Vec<&RawCall> = Vec::new();
        for lineage in &self.insights {
            for call in &lineage.raw_calls {
                if !calls.iter().any(|c| c.id == call.id) {
                    calls.push(call);
                }
            }
        }
        calls.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(&b.id)));
        calls
    }
}

/// One role's memory pyramid (L1 raw log, L2 episodes, L3 insights, L4 beliefs) and
/// its workspace, over an [`AgentMemory`]. Cheap to clone.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use openvibe_memory::{AgentMemory, MemoryPyramid, WorkspaceMemory};
/// use openvibe_protocols::{CallOrigin, Episode, LlmError, LlmRequest, LlmResponse, RawCall, RawCallQuery};
/// # struct Reflector;
/// # #[async_trait::async_trait]
/// # impl openvibe_protocols::LlmProvider for Reflector {
/// #     async fn call(&self, _: &LlmRequest) -> Result<LlmResponse, LlmError> {
/// #         Ok(LlmResponse::text(r#"[{"content": "Acme-sized leads score high", "confidence": 0.9}]"#))
/// #     }
/// # }
///
/// let pyramid = MemoryPyramid::new(AgentMemory::new("cro").with_workspace(WorkspaceMemory::new()));
///
/// // L1 and L2, as a node run leaves them (the role-aware LLM and the node
/// // do this by themselves).
/// let episode = pyramid
///     .record_episode(Episode { action: "qualify_lead".into(), output_summary: "Acme scored 85".into(), ..Episode::default() })
///     .await?;
/// let mut request = LlmRequest::new("sonnet", "Score Acme");
/// request.origin = Some(CallOrigin { episode_id: episode.id.clone(), ..CallOrigin::default() });
/// pyramid.log_call(RawCall::new("cro", chrono::Utc::now(), 900, request, Ok(LlmResponse::text("85")))).await;
///
/// // L2 → L3 → workspace: what the daily reflection runs.
/// let done = pyramid.distill(&Reflector, 0.5).await?; // any LlmProvider
///
/// assert_eq!(done.reflection.created.len(), 1);
/// assert_eq!(done.published.len(), 1);
///
/// // L3 → L2 → L1.
/// let lineage = pyramid.trace(&done.reflection.created[0].id).await?;
/// assert_eq!(lineage.episodes[0].id, episode.id);
/// assert_eq!(lineage.raw_calls[0].episode_id.as_deref(), Some(episode.id.as_str()));
/// assert_eq!(pyramid.raw(RawCallQuery::new()).await?.items.len(), 1);
/// # Ok::<(), openvibe_memory::MemoryError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct MemoryPyramid {
    memory: AgentMemory,
}

impl MemoryPyramid {
    /// The pyramid over `memory`.
    pub fn new(memory: AgentMemory) -> Self {
        Self { memory }
    }

    /// The agent (role) id.
    pub fn agent_id(&self) -> &str {
        self.memory.agent_id()
    }

    /// The agent memory underneath.
    pub fn memory(&self) -> &AgentMemory {
        &self.memory
    }

    // --- L1 ---

    /// Append one LLM call to the raw log (in the background; see
    /// [`RawLogWriter`](crate::RawLogWriter)). A role's LLM does it for every call.
    pub async fn log_call(&self, call: RawCall) {
        self.memory.log_call(call).await;
    }

    /// A page of the raw log, newest first (pending calls are appended first).
    pub async fn raw(&self, query: RawCallQuery) -> Result<Page<RawCall>, MemoryError> {
        self.memory.flush_raw_log().await;
        self.memory.recall_raw(query).await
    }

    // --- L2 ---

    /// Record an episode (a node does it at every completion).
    pub async fn record_episode(&self, episode: Episode) -> Result<Episode, MemoryError> {
        self.memory.record_episode(episode).await
    }

    /// Episodes matching `query`, newest first.
    pub async fn episodes(&self, query: EpisodeQuery) -> Result<Vec<Episode>, MemoryError> {
        self.memory.recall_episodes(query).await
    }

    // --- L3 ---

    /// Insights matching `query`, most confident first.
    pub async fn insights(&self, query: InsightQuery) -> Result<Vec<Insight>, MemoryError> {
        self.memory.recall_insights(query).await
    }

    /// L2 → L3: distill recent episodes into insights with `llm`.
    pub async fn reflect(
        &self,
        llm: &dyn LlmProvider,
        options: &ReflectOptions,
    ) -> Result<ReflectionReport, MemoryError> {
        self.memory.reflect_with(llm, options).await
    }

    // --- L4 ---

    /// The role's beliefs matching `query` (its role is forced), newest first.
    pub async fn beliefs(&self, query: BeliefQuery) -> Result<Page<Belief>, MemoryError> {
        let query = query.role(self.memory.agent_id().to_owned());
        Ok(self
            .memory
            .belief_store()
            .list(self.memory.context(), &query)
            .await?)
    }

    // --- the workspace ---

    /// Publish insights at least `min_confidence` confident to the workspace.
    pub async fn publish(&self, min_confidence: f64) -> Result<Vec<Fact>, MemoryError> {
        self.memory.publish_to_workspace(min_confidence).await
    }

    /// Workspace facts the role may read.
    pub async fn workspace_facts(&self, query: &FactQuery) -> Result<Vec<Fact>, MemoryError> {
        self.memory.workspace_facts(query).await
    }

    // --- across levels ---

    /// [`reflect`](Self::reflect) with default options, then
    /// [`publish`](Self::publish): the distillation the reflection schedule runs.
    pub async fn distill(
        &self,
        llm: &dyn LlmProvider,
        min_confidence: f64,
    ) -> Result<Distillation, MemoryError> {
        self.distill_with(llm, &ReflectOptions::default(), min_confidence)
            .await
    }

    /// [`distill`](Self::distill) with reflection options (e.g. the role's soul).
    pub async fn distill_with(
        &self,
        llm: &dyn LlmProvider,
        options: &ReflectOptions,
        min_confidence: f64,
    ) -> Result<Distillation, MemoryError> {
        let reflection = self.reflect(llm, options).await?;
        let published = self.publish(min_confidence).await?;
        Ok(Distillation {
            reflection,
            published,
        })
    }

    /// L4 → L3 → L2 → L1: belief `belief_id` with the lineage of each of
    /// its insights. [`MemoryError::Store`] `NotFound` when the belief is
    /// not the role's or not readable; an insight deleted since is left out.
    pub async fn trace_belief(&self, belief_id: &str) -> Result<BeliefLineage, MemoryError> {
        let not_found = || {
            MemoryError::Store(openvibe_protocols::StoreError::NotFound {
                kind: openvibe_protocols::BELIEF_KIND,
                id: belief_id.to_owned(),
            })
        };
        let belief = self
            .memory
            .belief_store()
            .get(self.memory.context(), belief_id)
            .await?
            .filter(|b| b.role_id == self.memory.agent_id())
            .ok_or_else(not_found)?;
        let mut insights = Vec::with_capacity(belief.insight_ids.len());
        for id in &belief.insight_ids {
            match self.trace(id).await {
                Ok(lineage) => insights.push(lineage),
                Err(MemoryError::Store(openvibe_protocols::StoreError::NotFound { .. })) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(BeliefLineage { belief, insights })
    }

    /// L3 → L2 → L1: insight `insight_id` with its source episodes and their
    /// raw calls. [`MemoryError::Store`] `NotFound` when the insight is not
    /// the agent's or not readable.
    pub async fn trace(&self, insight_id: &str) -> Result<Lineage, MemoryError> {
        let insight = self.memory.get_insight(insight_id).await?.ok_or_else(|| {
            MemoryError::Store(openvibe_protocols::StoreError::NotFound {
                kind: "insight",
                id: insight_id.to_owned(),
            })
        })?;
        let mut episodes = Vec::with_capacity(insight.source_episode_ids.len());
        for id in &insight.source_episode_ids {
            episodes.extend(self.memory.get_episode(id).await?);
        }
        episodes.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(&b.id)));
        self.memory.flush_raw_log().await;
        let raw_calls = self.memory.cite(&insight).await?;
        Ok(Lineage {
            insight,
            episodes,
            raw_calls,
        })
    }
}
