//! Memory assembly: scope → context text for a system prompt.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::EmbeddingText;
use openvibe_protocols::promotion::one_per_lineage;
use openvibe_protocols::{
    ContextAssembler, Embedder, EpisodeQuery, Fact, FactQuery, InsightQuery, InsightStatus,
    MemoryScope, RetrieverScore, StoreError,
};
use openvibe_retrieval::{Candidate, FUSION, rank_candidates_with};

use crate::access::ClearanceProfile;
use crate::agent::AgentMemory;
use crate::error::MemoryError;

/// Counts the tokens of a piece of text.
///
/// The assembler counts each item (and each separator) on its own and adds
/// the counts up, so a counter whose counts are sub-additive (like the
/// default, which rounds up) never lets the whole exceed the budget.
pub trait TokenCounter: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
}

impl<F> TokenCounter for F
where
    F: Fn(&str) -> usize + Send + Sync,
{
    fn count(&self, text: &str) -> usize {
        self(text)
    }
}

/// The default token estimate: one token per 4 characters, rounded up.
pub fn approx_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// [`approx_tokens`] as a [`TokenCounter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApproxTokenCounter;

impl TokenCounter for ApproxTokenCounter {
    fn count(&self, text: &str) -> usize {
        approx_tokens(text)
    }
}

/// How many records of each kind the assembler loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssemblyLimits {
    /// Insights (default 5).
    pub insights: usize,
    /// Workspace facts (default 10).
    pub facts: usize,
    /// Recent episodes (default 3).
    pub episodes: usize,
}

impl Default for AssemblyLimits {
    fn default() -> Self {
        Self {
            insights: 5,
            facts: 10,
            episodes: 3,
        }
    }
}

/// What kind of record a [`Recalled`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecallKind {
    /// An active belief of the agent (`## Beliefs`).
    Belief,
    /// An insight of the agent (`## Insights`).
    Insight,
    /// A workspace fact (`## Context`).
    Fact,
    /// An episode of the agent (`## Recent Activity`).
    Episode,
}

impl RecallKind {
    /// `belief`, `insight`, `fact` or `episode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Belief => "belief",
            Self::Insight => "insight",
            Self::Fact => "fact",
            Self::Episode => "episode",
        }
    }
}

/// One record the assembler put into a prompt, and what found it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recalled {
    /// Its kind.
    pub kind: RecallKind,
    /// Its id.
    pub id: String,
    /// The text shown (an insight's or fact's content, an episode's output summary).
    pub content: String,
    /// The retrievers that ranked it for the scope's query, with their
    /// ranks and scores; empty when the scope's filters alone selected it
    /// (no query, an episode, or a slot no ranked record took).
    pub retrievers: Vec<RetrieverScore>,
}

/// The context text of one assembly and the records in it, in text order.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Assembly {
    /// The context text (empty when nothing applies).
    pub text: String,
    /// The records the text shows.
    pub recalled: Vec<Recalled>,
}

/// Called with every assembly a [`MemoryAssembler`] makes (to show or trace
/// what memory went into a prompt).
pub type RecallObserver = Arc<dyn Fn(&Assembly) + Send + Sync>;

/// Builds the memory context of a prompt from an agent's memory:
///
/// 1. `## Beliefs`: the agent's active beliefs (L4, approved by a person)
///    of the scope's domain (all of them when the scope names none);
/// 2. `## Insights`: the agent's active insights for the scope;
/// 3. `## Context`: workspace facts for the scope the agent's clearance can
///    read (clearance applied in the store);
/// 4. `## Recent Activity`: the agent's episodes for the scope, newest first.
///
/// Without a query in the scope, insights come most confident first and
/// facts in fact order. With one, the scope's filters select a pool of
/// candidates of each kind (the first
/// [`Fusion::candidates`](openvibe_retrieval::Fusion::candidates) in that order)
/// and hybrid retrieval ranks them for the query: BM25 over the pool and,
/// with an embedder ([`with_embedder`](Self::with_embedder)), cosine
/// similarity, fused as the stores fuse ([`rank_candidates`](openvibe_retrieval::rank_candidates)). The best come
/// first; slots the ranking leaves free are filled with the rest of the
/// pool in its order. An embedder that fails leaves full text alone (with a
/// warning in the log), never a failed prompt.
///
/// The token budget is enforced at item boundaries: an item that does not
/// fit is dropped whole (later, shorter items may still fit); text is never
/// cut inside a word or a character. A section header appears only with at
/// least one item. Nothing to say gives `""`. Facts that make it into the
/// text are counted as accessed.
#[derive(Clone)]
pub struct MemoryAssembler {
    memory: AgentMemory,
    clearance: ClearanceProfile,
    counter: Arc<dyn TokenCounter>,
    limits: AssemblyLimits,
    embedder: Option<Arc<dyn Embedder>>,
    cache: Option<Arc<RecallCache>>,
    observer: Option<RecallObserver>,
}

impl std::fmt::Debug for MemoryAssembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAssembler")
            .field("memory", &self.memory)
            .field("clearance", &self.clearance)
            .field("limits", &self.limits)
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .finish_non_exhaustive()
    }
}

impl MemoryAssembler {
    /// An assembler over `memory`, reading with `clearance` (the memory's
    /// principal, tenant and project with this clearance).
    pub fn new(memory: AgentMemory, clearance: ClearanceProfile) -> Self {
        Self {
            memory: memory.with_clearance(&clearance),
            clearance,
            counter: Arc::new(ApproxTokenCounter),
            limits: AssemblyLimits::default(),
            embedder: None,
            cache: None,
            observer: None,
        }
    }

    /// Keep the candidates' analyzed texts and vectors in `cache` (one
    /// that outlives the assembler, as a role's does): a record recalled
    /// again is neither analyzed nor looked up again. The ranking is the
    /// same.
    #[must_use]
    pub fn with_recall_cache(mut self, cache: Arc<RecallCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Count tokens with `counter` instead of the 4-characters estimate.
    #[must_use]
    pub fn with_token_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Load this many records of each kind.
    #[must_use]
    pub fn with_limits(mut self, limits: AssemblyLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Rank by vector similarity too, embedding the query and the candidates
    /// with `embedder`. Candidates are embedded at assembly time: put a
    /// [`CachedEmbedder`](openvibe_protocols::CachedEmbedder) that outlives
    /// the assembler in front of the model so each text is embedded once.
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Call `observer` with every assembly.
    #[must_use]
    pub fn with_observer(mut self, observer: RecallObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The agent memory it assembles from.
    pub fn memory(&self) -> &AgentMemory {
        &self.memory
    }

    /// The context text for `scope` within `token_budget` tokens.
    pub async fn assemble_context(
        &self,
        scope: &MemoryScope,
        token_budget: usize,
    ) -> Result<String, MemoryError> {
        Ok(self.assemble_recalled(scope, token_budget).await?.text)
    }

    /// The context text for `scope` within `token_budget` tokens, with the
    /// records it shows and the retrievers that found each.
    pub async fn assemble_recalled(
        &self,
        scope: &MemoryScope,
        token_budget: usize,
    ) -> Result<Assembly, MemoryError> {
        let mut facts_query = FactQuery::from_scope(scope);
        // With a query, ranking replaces the every-term text filter.
        let query = facts_query.text.take();
        let pool = |limit: usize| match query {
            Some(_) => FUSION.candidates(limit),
            None => limit,
        };
        let insights_query = InsightQuery {
            entity: facts_query.entity.clone(),
            domain: facts_query.domain.clone(),
            tags: facts_query.tags.clone(),
            status: Some(InsightStatus::Active),
            limit: pool(self.limits.insights),
            ..InsightQuery::default()
        };
        // A scope about one entity also gets the general knowledge of its
        // domain (records that name no entity), after the specific records.
        let about_entity = facts_query.entity.is_some();
        let insights = async {
            let found = self.memory.recall_insights(insights_query.clone()).await?;
            let mut insights = self
                .relevant(query.as_deref(), found, self.limits.insights)
                .await;
            if about_entity && insights.len() < self.limits.insights {
                let general = InsightQuery {
                    entity: None,
                    general: true,
                    ..insights_query
                };
                let found = self.memory.recall_insights(general).await?;
                let left = self.limits.insights - insights.len();
                insights.extend(self.relevant(query.as_deref(), found, left).await);
            }
            Ok::<_, MemoryError>(insights)
        };
        let facts = async {
            if self.limits.facts == 0 {
                return Ok(Vec::new());
            }
            let specific = facts_query.clone().limit(pool(self.limits.facts));
            let found = self.memory.workspace_facts(&specific).await?;
            let mut facts = self
                .relevant(query.as_deref(), found, self.limits.facts)
                .await;
            if about_entity && facts.len() < self.limits.facts {
                let general = FactQuery {
                    entity: None,
                    general: true,
                    ..specific
                };
                let found = self.memory.workspace_facts(&general).await?;
                let left = self.limits.facts - facts.len();
                facts.extend(self.relevant(query.as_deref(), found, left).await);
            }
            // A fact and its promoted copies are one memory: the one in
            // the agent's own namespace (seed 004's merge + dedupe).
            Ok::<_, MemoryError>(one_per_lineage(self.memory.context(), facts, |(f, _)| f))
        };
        let episodes = self.memory.recall_episodes(EpisodeQuery {
            entity: facts_query.entity.clone(),
            domain: facts_query.domain.clone(),
            tags: facts_query.tags.clone(),
            limit: self.limits.episodes,
            ..EpisodeQuery::default()
        });
        let beliefs = self.memory.active_beliefs(facts_query.domain.as_deref());
        // The four sources are independent: asked at once, an assembly on a
        // backend with round trips (PostgreSQL, the remote client) waits for
        // the longest of them, not for their sum.
        let (insights, facts, episodes, beliefs) =
            tokio::try_join!(insights, facts, episodes, beliefs)?;
        let mut out = Builder::new(&*self.counter, token_budget);
        let mut recalled = Vec::new();
        // Beliefs first: what a person approved outranks what was inferred.
        let shown = out.section(
            "## Beliefs",
            beliefs.iter().map(|b| {
                let constraint = if b.constraint { ", a constraint" } else { "" };
                format!(
                    "- {} (confidence: {:.1}{constraint})",
                    b.statement, b.confidence
                )
            }),
        );
        recalled.extend(
            shown
                .iter()
                .filter_map(|&n| beliefs.get(n))
                .map(|b| Recalled {
                    kind: RecallKind::Belief,
                    id: b.id.clone(),
                    content: b.statement.clone(),
                    retrievers: Vec::new(),
                }),
        );
        let shown = out.section(
            "## Insights",
            insights
                .iter()
                .map(|(i, _)| format!("- {} (confidence: {:.1})", i.content, i.confidence)),
        );
        recalled.extend(
            shown
                .iter()
                .filter_map(|&n| insights.get(n))
                .map(|(i, r)| Recalled {
                    kind: RecallKind::Insight,
                    id: i.id.clone(),
                    content: i.content.clone(),
                    retrievers: r.clone(),
                }),
        );
        // A fact that repeats an insight shown above (e.g. the agent's own
        // published insight) adds nothing; skip it.
        let repeated: Vec<&str> = insights.iter().map(|(i, _)| i.content.as_str()).collect();
        let facts: Vec<&(Fact, Vec<RetrieverScore>)> = facts
            .iter()
            .filter(|(f, _)| !repeated.contains(&f.content.as_str()))
            .collect();
        let included = out.section(
            "## Context",
            facts.iter().map(|(f, _)| format!("- {}", f.content)),
        );
        recalled.extend(
            included
                .iter()
                .filter_map(|&n| facts.get(n))
                .map(|(f, r)| Recalled {
                    kind: RecallKind::Fact,
                    id: f.id.clone(),
                    content: f.content.clone(),
                    retrievers: r.clone(),
                }),
        );
        let shown = out.section(
            "## Recent Activity",
            episodes
                .iter()
                .map(|e| format!("- {}: {}", e.action, e.output_summary)),
        );
        recalled.extend(
            shown
                .iter()
                .filter_map(|&n| episodes.get(n))
                .map(|e| Recalled {
                    kind: RecallKind::Episode,
                    id: e.id.clone(),
                    content: e.output_summary.clone(),
                    retrievers: Vec::new(),
                }),
        );
        if !included.is_empty() {
            let ids: Vec<String> = included
                .iter()
                .filter_map(|i| facts.get(*i))
                .map(|(f, _)| f.id.clone())
                .collect();
            self.memory.touch_workspace_facts(&ids).await?;
        }
        for r in &recalled {
            tracing::debug!(
                kind = r.kind.as_str(),
                id = %r.id,
                retrievers = %describe_retrievers(&r.retrievers),
                "recalled into the prompt"
            );
        }
        let assembly = Assembly {
            text: out.text,
            recalled,
        };
        if let Some(observer) = &self.observer {
            observer(&assembly);
        }
        Ok(assembly)
    }

    /// `pool` ordered for `query`, at most `limit`: the records hybrid
    /// retrieval ranks (best first, with what found them), then the rest in
    /// pool order. Without a query, the pool's first `limit` as they come.
    pub(crate) async fn relevant<T: EmbeddingText>(
        &self,
        query: Option<&str>,
        pool: Vec<T>,
        limit: usize,
    ) -> Vec<(T, Vec<RetrieverScore>)> {
        let Some(query) = query.filter(|_| !pool.is_empty()) else {
            return pool
                .into_iter()
                .take(limit)
                .map(|t| (t, Vec::new()))
                .collect();
        };
        let vectors = self.embed(query, &pool).await;
        let (query_vector, vectors) = match &vectors {
            Some((q, v)) => (Some(q.as_slice()), v.as_slice()),
            None => (None, &[][..]),
        };
        let texts: Vec<_> = pool.iter().map(EmbeddingText::embedding_text).collect();
        let candidates: Vec<Candidate<'_>> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| Candidate {
                text,
                vector: vectors
                    .get(i)
                    .and_then(Option::as_ref)
                    .map(|v| v.as_slice()),
            })
            .collect();
        let ranked = rank_candidates_with(
            query,
            query_vector,
            &candidates,
            limit,
            self.cache.as_deref().map(|c| &c.terms),
        );
        drop(candidates);
        drop(texts);
        let mut slots: Vec<Option<T>> = pool.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(limit.min(slots.len()));
        for fused in ranked {
            if let Some(t) = slots.get_mut(fused.id).and_then(Option::take) {
                out.push((t, fused.retrievers));
            }
        }
        out.extend(
            slots
                .into_iter()
                .flatten()
                .take(limit.saturating_sub(out.len()))
                .map(|t| (t, Vec::new())),
        );
        out
    }

    /// The query's vector and each record's (`None` for one that has
    /// none), or `None` without an embedder or when it fails (full text
    /// still ranks). Records use the vector the recall cache keeps of their
    /// text, else the one their store keeps (embedded on write); only the
    /// query and records without either are embedded now, in one call.
    async fn embed<T: EmbeddingText>(
        &self,
        query: &str,
        pool: &[T],
    ) -> Option<(Vec<f32>, Vec<Option<Arc<Vec<f32>>>>)> {
        let embedder = self.embedder.as_ref()?;
        let texts: Vec<_> = pool.iter().map(EmbeddingText::embedding_text).collect();
        let mut out: Vec<Option<Arc<Vec<f32>>>> = match &self.cache {
            Some(cache) => cache.vectors_of(texts.iter().map(AsRef::as_ref)),
            None => vec![None; pool.len()],
        };
        let ids: Vec<String> = (0..pool.len())
            .filter(|i| out[*i].is_none())
            .map(|i| pool[i].record_id().to_owned())
            .collect();
        let mut stored = if ids.is_empty() {
            std::collections::HashMap::new()
        } else {
            self.memory
                .stored_vectors(embedder.model_id(), T::KIND, &ids)
                .await
        };
        for (i, slot) in out.iter_mut().enumerate() {
            if slot.is_none()
                && let Some(vector) = stored.remove(pool[i].record_id())
            {
                let vector = Arc::new(vector);
                if let Some(cache) = &self.cache {
                    cache.keep_vector(&texts[i], vector.clone());
                }
                *slot = Some(vector);
            }
        }
        let missing: Vec<usize> = (0..pool.len()).filter(|i| out[*i].is_none()).collect();
        let all: Vec<String> = std::iter::once(query.to_owned())
            .chain(missing.iter().map(|i| texts[*i].clone().into_owned()))
            .collect();
        match embedder.embed(&all).await {
            Ok(vectors) if vectors.len() == all.len() => {
                let mut vectors = vectors.into_iter();
                let q = vectors.next()?;
                for (i, vector) in missing.into_iter().zip(vectors) {
                    let vector = Arc::new(vector);
                    if let Some(cache) = &self.cache {
                        cache.keep_vector(&texts[i], vector.clone());
                    }
                    out[i] = Some(vector);
                }
                Some((q, out))
            }
            Ok(vectors) => {
                tracing::warn!(
                    model = embedder.model_id(),
                    asked = all.len(),
                    got = vectors.len(),
                    "the embedder answered the wrong number of vectors; ranking by full text only"
                );
                None
            }
            Err(error) => {
                tracing::warn!(
                    model = embedder.model_id(),
                    %error,
                    "embedding failed; ranking by full text only"
                );
                None
            }
        }
    }
}

/// What a role keeps between recalls to rank its candidates faster: their
/// analyzed texts ([`TermCache`](openvibe_retrieval::TermCache)) and their
/// vectors, by text (one embedding model per cache: the role's). Bounded
/// (two generations of half the capacity each); the ranking is the same
/// with or without it.
pub struct RecallCache {
    terms: openvibe_retrieval::TermCache,
    capacity: usize,
    vectors: std::sync::Mutex<openvibe_protocols::Generations<Arc<Vec<f32>>>>,
}

impl RecallCache {
    /// Keep up to `capacity` analyzed texts and as many vectors.
    pub fn new(capacity: usize) -> Self {
        Self {
            terms: openvibe_retrieval::TermCache::new(capacity),
            capacity: capacity.max(2),
            vectors: std::sync::Mutex::new(openvibe_protocols::Generations::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, openvibe_protocols::Generations<Arc<Vec<f32>>>> {
        self.vectors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The vector kept of each of `texts`, when one is.
    fn vectors_of<'t>(&self, texts: impl Iterator<Item = &'t str>) -> Vec<Option<Arc<Vec<f32>>>> {
        let half = self.capacity / 2;
        let mut kept = self.lock();
        texts.map(|t| kept.get(t, half)).collect()
    }

    fn keep_vector(&self, text: &str, vector: Arc<Vec<f32>>) {
        let half = self.capacity / 2;
        self.lock().insert(text.to_owned(), vector, half);
    }

    /// How many analyzed texts and vectors it holds.
    pub fn len(&self) -> (usize, usize) {
        (self.terms.len(), self.lock().len())
    }
}

impl std::fmt::Debug for RecallCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecallCache")
            .field("capacity", &self.capacity)
            .field("entries", &self.len())
            .finish()
    }
}

/// `full_text #1, vector #3`, or `scope filters` when no retriever ranked it.
pub fn describe_retrievers(retrievers: &[RetrieverScore]) -> String {
    if retrievers.is_empty() {
        return "scope filters".to_owned();
    }
    retrievers
        .iter()
        .map(|r| format!("{} #{}", r.retriever, r.rank))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Accumulates sections within a token budget.
struct Builder<'c> {
    counter: &'c dyn TokenCounter,
    budget: usize,
    used: usize,
    text: String,
}

impl<'c> Builder<'c> {
    fn new(counter: &'c dyn TokenCounter, budget: usize) -> Self {
        Self {
            counter,
            budget,
            used: 0,
            text: String::new(),
        }
    }

    /// Add the items that fit; returns the indexes of those added.
    fn section(&mut self, header: &str, items: impl Iterator<Item = String>) -> Vec<usize> {
        let mut added = Vec::new();
        for (index, item) in items.enumerate() {
            let prefix = match (added.is_empty(), self.text.is_empty()) {
                (false, _) => "\n".to_owned(),
                (true, true) => format!("{header}\n"),
                (true, false) => format!("\n\n{header}\n"),
            };
            let cost = self
                .counter
                .count(&prefix)
                .saturating_add(self.counter.count(&item));
            if self.used.saturating_add(cost) > self.budget {
                continue;
            }
            self.used += cost;
            self.text.push_str(&prefix);
            self.text.push_str(&item);
            added.push(index);
        }
        added
    }
}

#[async_trait]
impl ContextAssembler for MemoryAssembler {
    async fn assemble(
        &self,
        scope: &MemoryScope,
        token_budget: usize,
    ) -> Result<String, StoreError> {
        Ok(self.assemble_context(scope, token_budget).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_tokens_rounds_up_per_char() {
        assert_eq!(approx_tokens(""), 0);
        assert_eq!(approx_tokens("abc"), 1);
        assert_eq!(approx_tokens("abcd"), 1);
        assert_eq!(approx_tokens("abcde"), 2);
        assert_eq!(approx_tokens("日本語日本"), 2, "characters, not bytes");
    }

    #[test]
    fn builder_drops_whole_items() {
        let counter = ApproxTokenCounter;
        let mut b = Builder::new(&counter, 10);
        let added = b.section(
            "## H",
            ["- a very long item that will not fit at all", "- ok"]
                .into_iter()
                .map(String::from),
        );
        assert_eq!(added, vec![1]);
        assert_eq!(b.text, "## H\n- ok");
        let none = b.section(
            "## Next",
            std::iter::once("- too long for what is left".to_owned()),
        );
        assert!(none.is_empty());
        assert!(!b.text.contains("## Next"), "no header without items");
    }
}
