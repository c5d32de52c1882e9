//! [`MemoryAssembler::recall_evidence`]: what an agent's memory holds about
//! one question, for a decision (seed 001, V3: "confidence assessment:
//! query L3 insights + L2 similar episodes"; V4: "beliefs influence all
//! future decisions").
//!
//! Evidence is found by meaning: the hybrid retrieval ranks the candidates
//! (full text, fused with vector similarity when the assembler has an
//! embedder), and each record found is weighed by how similar it is to the
//! question. The question's domain is a boost, not a gate: a record of
//! another domain counts at [`OTHER_DOMAIN_WEIGHT`] of its similarity.

use openvibe_protocols::{
    Belief, Episode, EpisodeQuery, Insight, InsightQuery, InsightStatus, Retriever, RetrieverScore,
};
use openvibe_retrieval::FUSION;

use crate::{MemoryAssembler, MemoryError};

/// The tag of the episodes that record decisions themselves: they are the
/// agent's reasoning, not evidence of how its actions went, so evidence
/// leaves them out.
pub const DECISION_TAG: &str = "decision";

/// Run results that report the run went against what was decided: an
/// outcome `status` of these (a tool's result may say so, e.g.
/// `{"status": "stalled", ...}`).
pub const SETBACK_STATUSES: &[&str] = &["missed", "stalled", "lost", "declined", "blocked"];

/// The tag of an episode whose run went against what was decided.
pub const SETBACK_TAG: &str = "setback";

/// The tag of an episode that records a person's rejection of a proposal.
pub const REJECTED_TAG: &str = "rejected";

/// Whether `episode` went against what was decided: it failed (tagged
/// `failed`/`failure`, or its outcome's `status` is `failed` or `error`, or
/// it has an `error`), its result was a setback (tagged [`SETBACK_TAG`], or
/// a status of [`SETBACK_STATUSES`]), or it records a person's rejection
/// (tagged [`REJECTED_TAG`], or status `rejected`).
pub fn went_against(episode: &Episode) -> bool {
    let tagged = episode.tags.iter().any(|t| {
        matches!(t.as_str(), "failed" | "failure") || t == SETBACK_TAG || t == REJECTED_TAG
    });
    let status = episode
        .outcome
        .get("status")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|s| {
            matches!(s, "failed" | "error" | "rejected") || SETBACK_STATUSES.contains(&s)
        });
    tagged || status || episode.outcome.get("error").is_some_and(|e| !e.is_null())
}

/// What a record of another domain than the question's counts for, as a
/// share of its similarity (its own domain: 1).
pub const OTHER_DOMAIN_WEIGHT: f64 = 0.75;

/// Below this cosine a record the vectors alone found is no evidence.
pub const MIN_EVIDENCE_SIMILARITY: f32 = 0.3;

/// From this cosine up a record the vectors found is fully similar (its
/// similarity rises linearly from [`MIN_EVIDENCE_SIMILARITY`] to here).
pub const FULL_EVIDENCE_SIMILARITY: f32 = 0.6;

/// A record recalled as evidence, with how much it bears on the question
/// and why it was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Weighed<T> {
    /// The record.
    pub record: T,
    /// Its similarity to the question (`0..=1`): the larger of its BM25
    /// score over the best one's and its vector similarity (the cosine,
    /// from [`MIN_EVIDENCE_SIMILARITY`] = 0 to [`FULL_EVIDENCE_SIMILARITY`]
    /// = 1), times [`OTHER_DOMAIN_WEIGHT`] when it is of another domain.
    pub similarity: f64,
    /// Why it was chosen: the retrievers that found it (rank and score)
    /// and its domain.
    pub why: String,
}

/// The beliefs, insights and episodes most relevant to a question, most
/// relevant first. Only records the hybrid retrieval finds (by full text,
/// or by vector when the assembler has an embedder, at least
/// [`MIN_EVIDENCE_SIMILARITY`] similar) are in it: a record that shares
/// nothing with the question is no evidence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Active L4 beliefs, of any domain.
    pub beliefs: Vec<Weighed<Belief>>,
    /// Active L3 insights.
    pub insights: Vec<Weighed<Insight>>,
    /// L2 episodes (decision records left out).
    pub episodes: Vec<Weighed<Episode>>,
    /// The candidates' episodes that went against what was decided
    /// ([`went_against`]), newest first, relevant or not: a decision weighs
    /// those that were decided on the evidence it cites.
    pub adverse: Vec<Episode>,
}

/// Where to look for evidence and how much to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceQuery {
    /// The question, in words (an event's summary).
    pub text: String,
    /// The question's domain: its records count fully, others at
    /// [`OTHER_DOMAIN_WEIGHT`] (empty: every domain counts fully).
    pub domain: String,
    /// At most this many insights.
    pub insights: usize,
    /// At most this many episodes.
    pub episodes: usize,
    /// At most this many beliefs.
    pub beliefs: usize,
}

impl MemoryAssembler {
    /// The agent's active beliefs and insights and its episodes most
    /// relevant to `query.text` (see [`Evidence`]). The candidates are its
    /// active beliefs (at most [`MAX_PROMPT_BELIEFS`](crate::MAX_PROMPT_BELIEFS)),
    /// and the most confident insights and newest episodes of the
    /// question's domain and of every domain, so the cost is bounded
    /// whatever the memory's size.
    pub async fn recall_evidence(&self, query: &EvidenceQuery) -> Result<Evidence, MemoryError> {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let mut evidence = Evidence::default();
        if query.insights > 0 {
            let mut pool = Vec::new();
            for domain in domains(&query.domain) {
                let found = self
                    .memory()
                    .recall_insights(InsightQuery {
                        domain: some(domain),
                        status: Some(InsightStatus::Active),
                        limit: FUSION.candidates(query.insights),
                        ..InsightQuery::default()
                    })
                    .await?;
                merge(&mut pool, found, |i: &Insight| &i.id);
            }
            evidence.insights = self
                .weigh(query, pool, |i: &Insight| &i.domain, query.insights)
                .await;
        }
        if query.episodes > 0 {
            let mut pool = Vec::new();
            for domain in domains(&query.domain) {
                let found: Vec<Episode> = self
                    .memory()
                    .recall_episodes(EpisodeQuery {
                        domain: some(domain),
                        limit: FUSION.candidates(query.episodes),
                        ..EpisodeQuery::default()
                    })
                    .await?
                    .into_iter()
                    .filter(|e| !e.tags.iter().any(|t| t == DECISION_TAG))
                    .collect();
                merge(&mut pool, found, |e: &Episode| &e.id);
            }
            evidence.adverse = pool.iter().filter(|e| went_against(e)).cloned().collect();
            evidence
                .adverse
                .sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(&b.id)));
            evidence.episodes = self
                .weigh(query, pool, |e: &Episode| &e.domain, query.episodes)
                .await;
        }
        if query.beliefs > 0 {
            let beliefs = self.memory().active_beliefs(None).await?;
            evidence.beliefs = self
                .weigh(query, beliefs, |b: &Belief| &b.domain, query.beliefs)
                .await;
        }
        Ok(evidence)
    }

    /// `pool` ranked by the hybrid retrieval, each found record weighed
    /// (see [`Weighed::similarity`]), the `limit` most similar first.
    async fn weigh<T: openvibe_protocols::EmbeddingText>(
        &self,
        query: &EvidenceQuery,
        pool: Vec<T>,
        domain_of: impl Fn(&T) -> &str,
        limit: usize,
    ) -> Vec<Weighed<T>> {
        let size = pool.len();
        let ranked = self.relevant(Some(&query.text), pool, size).await;
        let score = |retrievers: &[RetrieverScore], which: Retriever| {
            retrievers
                .iter()
                .find(|r| r.retriever == which)
                .map(|r| f64::from(r.score))
        };
        let best_text = ranked
            .iter()
            .filter_map(|(_, r)| score(r, Retriever::FullText))
            .fold(0.0_f64, f64::max);
        let mut weighed: Vec<Weighed<T>> = ranked
            .into_iter()
            .filter_map(|(record, retrievers)| {
                let by_text = score(&retrievers, Retriever::FullText)
                    .filter(|_| best_text > 0.0)
                    .map(|s| s / best_text);
                let by_vector = score(&retrievers, Retriever::Vector)
                    .filter(|s| *s >= f64::from(MIN_EVIDENCE_SIMILARITY))
                    .map(|s| {
                        let (low, high) = (
                            f64::from(MIN_EVIDENCE_SIMILARITY),
                            f64::from(FULL_EVIDENCE_SIMILARITY),
                        );
                        ((s - low) / (high - low)).clamp(0.0, 1.0)
                    });
                let similarity = match (by_text, by_vector) {
                    (None, None) => return None,
                    (a, b) => a.unwrap_or(0.0).max(b.unwrap_or(0.0)),
                };
                let domain = domain_of(&record);
                let own = query.domain.is_empty() || domain == query.domain;
                let weight = if own { 1.0 } else { OTHER_DOMAIN_WEIGHT };
                let found = retrievers
                    .iter()
                    .map(|r| {
                        let what = if r.retriever == Retriever::Vector {
                            "cosine"
                        } else {
                            "bm25"
                        };
                        format!("{} #{} ({what} {:.2})", r.retriever, r.rank, r.score)
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let place = if own {
                    if domain.is_empty() {
                        "no domain".to_owned()
                    } else {
                        format!("its domain `{domain}`")
                    }
                } else {
                    format!("domain `{domain}` (counts {OTHER_DOMAIN_WEIGHT})")
                };
                Some(Weighed {
                    record,
                    similarity: (similarity * weight).clamp(0.0, 1.0),
                    why: format!("{found}; {place}"),
                })
            })
            .collect();
        // Most similar first; the hybrid ranking breaks ties (stable sort).
        weighed.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
        weighed.truncate(limit);
        weighed
    }
}

/// The domains candidates are drawn from: the question's, then every one.
fn domains(domain: &str) -> Vec<&str> {
    if domain.is_empty() {
        vec![""]
    } else {
        vec![domain, ""]
    }
}

/// Add `found` to `pool`, leaving out records already in it.
fn merge<T>(pool: &mut Vec<T>, found: Vec<T>, id: impl Fn(&T) -> &String) {
    let mut seen: std::collections::HashSet<String> = pool.iter().map(|t| id(t).clone()).collect();
    pool.extend(found.into_iter().filter(|t| seen.insert(id(t).clone())));
}
