//! Memory assembly: scope → context text for a system prompt.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    ContextAssembler, EpisodeQuery, FactQuery, InsightQuery, InsightStatus, MemoryScope, StoreError,
};

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

/// Builds the memory context of a prompt from an agent's memory:
///
/// 1. `## Insights`: the agent's active insights for the scope, most confident first;
/// 2. `## Context`: workspace facts for the scope the agent's clearance can
///    read (clearance applied in the store), in fact order;
/// 3. `## Recent Activity`: the agent's episodes for the scope, newest first.
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
}

impl std::fmt::Debug for MemoryAssembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAssembler")
            .field("memory", &self.memory)
            .field("clearance", &self.clearance)
            .field("limits", &self.limits)
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
        }
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

    /// The context text for `scope` within `token_budget` tokens.
    pub async fn assemble_context(
        &self,
        scope: &MemoryScope,
        token_budget: usize,
    ) -> Result<String, MemoryError> {
        let facts_query = FactQuery::from_scope(scope);
        let insights_query = InsightQuery {
            entity: facts_query.entity.clone(),
            domain: facts_query.domain.clone(),
            tags: facts_query.tags.clone(),
            text: facts_query.text.clone(),
            status: Some(InsightStatus::Active),
            limit: self.limits.insights,
            ..InsightQuery::default()
        };
        // A scope about one entity also gets the general knowledge of its
        // domain (records that name no entity), after the specific records.
        let about_entity = facts_query.entity.is_some();
        let mut insights = self.memory.recall_insights(insights_query.clone()).await?;
        if about_entity && insights.len() < self.limits.insights {
            let general = InsightQuery {
                entity: None,
                general: true,
                limit: self.limits.insights - insights.len(),
                ..insights_query
            };
            insights.extend(self.memory.recall_insights(general).await?);
        }
        let facts = if self.limits.facts > 0 {
            let specific = facts_query.clone().limit(self.limits.facts);
            let mut facts = self.memory.workspace_facts(&specific).await?;
            if about_entity && facts.len() < self.limits.facts {
                let general = FactQuery {
                    entity: None,
                    general: true,
                    limit: self.limits.facts - facts.len(),
                    ..specific
                };
                facts.extend(self.memory.workspace_facts(&general).await?);
            }
            facts
        } else {
            Vec::new()
        };
        let episodes = self
            .memory
            .recall_episodes(EpisodeQuery {
                entity: facts_query.entity.clone(),
                domain: facts_query.domain.clone(),
                tags: facts_query.tags.clone(),
                limit: self.limits.episodes,
                ..EpisodeQuery::default()
            })
            .await?;

        let mut out = Builder::new(&*self.counter, token_budget);
        out.section(
            "## Insights",
            insights
                .iter()
                .map(|i| format!("- {} (confidence: {:.1})", i.content, i.confidence)),
        );
        // A fact that repeats an insight shown above (e.g. the agent's own
        // published insight) adds nothing; skip it.
        let shown: Vec<&str> = insights.iter().map(|i| i.content.as_str()).collect();
        let facts: Vec<&openvibe_protocols::Fact> = facts
            .iter()
            .filter(|f| !shown.contains(&f.content.as_str()))
            .collect();
        let included = out.section(
            "## Context",
            facts.iter().map(|f| format!("- {}", f.content)),
        );
        out.section(
            "## Recent Activity",
            episodes
                .iter()
                .map(|e| format!("- {}: {}", e.action, e.output_summary)),
        );
        if !included.is_empty() {
            let ids: Vec<String> = included
                .iter()
                .filter_map(|i| facts.get(*i))
                .map(|f| f.id.clone())
                .collect();
            self.memory.touch_workspace_facts(&ids).await?;
        }
        Ok(out.text)
    }
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
