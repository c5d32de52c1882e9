//! [`MemoryAssembler::recall_evidence`]: what an agent's memory holds about
//! one question, for a decision (seed 001, V3: "confidence assessment:
//! query L3 insights + L2 similar episodes").

use openvibe_protocols::{Belief, Episode, EpisodeQuery, Insight, InsightQuery, InsightStatus};
use openvibe_retrieval::{FUSION, query_terms};

use crate::{MemoryAssembler, MemoryError};

/// The tag of the episodes that record decisions themselves: they are the
/// agent's reasoning, not evidence of how its actions went, so evidence
/// leaves them out.
pub const DECISION_TAG: &str = "decision";

/// The insights and episodes most relevant to a question, most relevant
/// first. Only records the hybrid retrieval finds (by full text, or by
/// vector when the assembler has an embedder) are in it: a record that
/// shares nothing with the question is no evidence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Active L4 beliefs of the domain about the question (sharing at least
    /// one analyzed term with it), most shared terms first.
    pub beliefs: Vec<Belief>,
    /// Active L3 insights.
    pub insights: Vec<Insight>,
    /// L2 episodes (decision records left out).
    pub episodes: Vec<Episode>,
}

/// Where to look for evidence and how much to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceQuery {
    /// The question, in words (an event's summary).
    pub text: String,
    /// Only records of this domain (empty: any).
    pub domain: String,
    /// At most this many insights.
    pub insights: usize,
    /// At most this many episodes.
    pub episodes: usize,
}

impl MemoryAssembler {
    /// The agent's active insights and its episodes most relevant to
    /// `query.text`, ranked like prompt context (BM25 over the candidates,
    /// fused with vector similarity when an embedder is set). The
    /// candidates are the most confident insights and the newest episodes
    /// of the domain, so the cost is bounded whatever the
    /// memory's size.
    pub async fn recall_evidence(&self, query: &EvidenceQuery) -> Result<Evidence, MemoryError> {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let insights = if query.insights == 0 {
            Vec::new()
        } else {
            let found = self
                .memory()
                .recall_insights(InsightQuery {
                    domain: some(&query.domain),
                    status: Some(InsightStatus::Active),
                    limit: FUSION.candidates(query.insights),
                    ..InsightQuery::default()
                })
                .await?;
            self.relevant(Some(&query.text), found, query.insights)
                .await
                .into_iter()
                .filter(|(_, retrievers)| !retrievers.is_empty())
                .map(|(insight, _)| insight)
                .collect()
        };
        let episodes = if query.episodes == 0 {
            Vec::new()
        } else {
            let found: Vec<Episode> = self
                .memory()
                .recall_episodes(EpisodeQuery {
                    domain: some(&query.domain),
                    limit: FUSION.candidates(query.episodes),
                    ..EpisodeQuery::default()
                })
                .await?
                .into_iter()
                .filter(|e| !e.tags.iter().any(|t| t == DECISION_TAG))
                .collect();
            self.relevant(Some(&query.text), found, query.episodes)
                .await
                .into_iter()
                .filter(|(_, retrievers)| !retrievers.is_empty())
                .map(|(episode, _)| episode)
                .collect()
        };
        let beliefs = self.matching_beliefs(query).await?;
        Ok(Evidence {
            beliefs,
            insights,
            episodes,
        })
    }

    /// The agent's active beliefs of `query`'s domain that share analyzed
    /// terms with its text, most shared terms first (then newest).
    async fn matching_beliefs(&self, query: &EvidenceQuery) -> Result<Vec<Belief>, MemoryError> {
        let domain = (!query.domain.is_empty()).then_some(query.domain.as_str());
        let beliefs = self.memory().active_beliefs(domain).await?;
        if beliefs.is_empty() {
            return Ok(beliefs);
        }
        let asked = query_terms(&query.text);
        let mut scored: Vec<(usize, Belief)> = beliefs
            .into_iter()
            .map(|b| {
                let shared = query_terms(&b.statement)
                    .iter()
                    .filter(|t| asked.contains(t))
                    .count();
                (shared, b)
            })
            .filter(|(shared, _)| *shared > 0)
            .collect();
        scored.sort_by_key(|(shared, _)| std::cmp::Reverse(*shared));
        Ok(scored.into_iter().map(|(_, b)| b).collect())
    }
}
