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
    /// Records (beliefs, insights or episodes, by id) to leave out, as if
    /// memory did not hold them: a what-if.
    pub without: Vec<String>,
}

impl MemoryAssembler {
    /// The agent's active beliefs and insights and its episodes most
    /// relevant to `query.text` (see [`Evidence`]). The candidates are its
    /// active beliefs (at most [`MAX_PROMPT_BELIEFS`](crate::MAX_PROMPT_BELIEFS)),
    /// and the most confident insights and newest episodes of the
    /// question's domain and of every domain, so the cost is bounded
    /// whatever the memory's size.
    pub async fn recall_evidence(&self, query: &EvidenceQuery) -> Result<Evidence, MemoryError> {
        let mut evidence = Evidence::default();
        let limit = FUSION.candidates(query.insights);
        if query.insights > 0 {
            let pool = candidates(
                &query.domain,
                limit,
                |i: &Insight| &i.domain,
                |i: &Insight| &i.id,
                |domain| {
                    self.memory().recall_insights(InsightQuery {
                        domain,
                        status: Some(InsightStatus::Active),
                        limit,
                        ..InsightQuery::default()
                    })
                },
            )
            .await?;
            let pool = leave_out(pool, &query.without, |i: &Insight| &i.id);
            evidence.insights = self
                .weigh(query, pool, |i: &Insight| &i.domain, query.insights)
                .await;
        }
        if query.episodes > 0 {
            let limit = FUSION.candidates(query.episodes);
            let mut pool = candidates(
                &query.domain,
                limit,
                |e: &Episode| &e.domain,
                |e: &Episode| &e.id,
                |domain| {
                    self.memory().recall_episodes(EpisodeQuery {
                        domain,
                        limit,
                        ..EpisodeQuery::default()
                    })
                },
            )
            .await?;
            pool.retain(|e| {
                !e.tags.iter().any(|t| t == DECISION_TAG) && !query.without.contains(&e.id)
            });
            evidence.adverse = pool.iter().filter(|e| went_against(e)).cloned().collect();
            evidence
                .adverse
                .sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(&b.id)));
            evidence.episodes = self
                .weigh(query, pool, |e: &Episode| &e.domain, query.episodes)
                .await;
        }
        if query.beliefs > 0 {
            let beliefs = leave_out(
                self.memory().active_beliefs(None).await?,
                &query.without,
                |b: &Belief| &b.id,
            );
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
        // Each found record's similarity first; only the `limit` kept are
        // explained (the `why` strings are most of the cost otherwise).
        let mut found: Vec<(T, Vec<RetrieverScore>, f64, bool)> = ranked
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
                Some((
                    record,
                    retrievers,
                    (similarity * weight).clamp(0.0, 1.0),
                    own,
                ))
            })
            .collect();
        // Most similar first; the hybrid ranking breaks ties (stable sort).
        found.sort_by(|a, b| b.2.total_cmp(&a.2));
        found.truncate(limit);
        found
            .into_iter()
            .map(|(record, retrievers, similarity, own)| {
                let by = retrievers
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
                let domain = domain_of(&record);
                let place = if own {
                    if domain.is_empty() {
                        "no domain".to_owned()
                    } else {
                        format!("its domain `{domain}`")
                    }
                } else {
                    format!("domain `{domain}` (counts {OTHER_DOMAIN_WEIGHT})")
                };
                Weighed {
                    record,
                    similarity,
                    why: format!("{by}; {place}"),
                }
            })
            .collect()
    }
}

/// `pool` without the records whose ids are in `without`.
fn leave_out<T>(mut pool: Vec<T>, without: &[String], id: impl Fn(&T) -> &String) -> Vec<T> {
    if !without.is_empty() {
        pool.retain(|t| !without.contains(id(t)));
    }
    pool
}

/// The candidates of a question in `domain`: the first `limit` records of
/// that domain, then those of every domain (`fetch(None)`), each once, in
/// that order. The domain's own list is fetched only when other domains
/// took places among every domain's first `limit`: otherwise it is those
/// records of the domain, in the same order (the same sort, filtered), and
/// the second read is saved.
async fn candidates<T, F, Fut>(
    domain: &str,
    limit: usize,
    domain_of: impl Fn(&T) -> &str,
    id: impl Fn(&T) -> &String + Copy,
    fetch: F,
) -> Result<Vec<T>, MemoryError>
where
    F: Fn(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, MemoryError>>,
{
    let every = fetch(None).await?;
    if domain.is_empty() {
        return Ok(every);
    }
    let covered = every.len() < limit || every.iter().all(|t| domain_of(t) == domain);
    if covered {
        // The domain's own first, then the others, each in its order: what
        // the two reads would give, without copying a record.
        let (mut own, others): (Vec<T>, Vec<T>) =
            every.into_iter().partition(|t| domain_of(t) == domain);
        own.extend(others);
        return Ok(own);
    }
    let own = fetch(Some(domain.to_owned())).await?;
    let mut pool = Vec::with_capacity(own.len() + every.len());
    merge(&mut pool, own, id);
    merge(&mut pool, every, id);
    Ok(pool)
}

/// Add `found` to `pool`, leaving out records already in it.
fn merge<T>(pool: &mut Vec<T>, found: Vec<T>, id: impl Fn(&T) -> &String) {
    let mut seen: std::collections::HashSet<String> = pool.iter().map(|t| id(t).clone()).collect();
    pool.extend(found.into_iter().filter(|t| seen.insert(id(t).clone())));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// `(id, domain)` records, the store's order.
    fn store() -> Vec<(String, String)> {
        (0..6)
            .map(|i| {
                let domain = if i % 3 == 2 { "customer" } else { "revenue" };
                (format!("r{i}"), domain.to_owned())
            })
            .collect()
    }

    /// The candidates of `domain` with `limit`, from `records`, and how
    /// many reads it took.
    async fn drawn(
        records: Vec<(String, String)>,
        domain: &str,
        limit: usize,
    ) -> (Vec<String>, usize) {
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let pool = candidates(
            domain,
            limit,
            |r: &(String, String)| r.1.as_str(),
            |r: &(String, String)| &r.0,
            |only: Option<String>| {
                reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let found: Vec<(String, String)> = records
                    .iter()
                    .filter(|r| only.as_deref().is_none_or(|d| r.1 == d))
                    .take(limit)
                    .cloned()
                    .collect();
                async move { Ok::<_, MemoryError>(found) }
            },
        )
        .await
        .unwrap();
        (
            pool.into_iter().map(|r| r.0).collect(),
            reads.load(std::sync::atomic::Ordering::SeqCst),
        )
    }

    /// The domain's own records come first, then every domain's, each
    /// once; the domain's own read is saved when every domain's first
    /// `limit` hold no other domain's record or are all there is, and the
    /// pool is the same as with both reads.
    #[tokio::test]
    async fn the_domains_pool_is_read_only_when_others_took_places() {
        // Other domains among the first 3: both reads.
        let (pool, reads) = drawn(store(), "revenue", 3).await;
        assert_eq!(reads, 2);
        assert_eq!(pool, ["r0", "r1", "r3", "r2"]);
        // All there is within the limit: one read, the same order as two.
        let (pool, reads) = drawn(store(), "revenue", 10).await;
        assert_eq!(reads, 1);
        assert_eq!(pool, ["r0", "r1", "r3", "r4", "r2", "r5"]);
        // Only the domain's records among the first 2: one read.
        let (pool, reads) = drawn(store(), "revenue", 2).await;
        assert_eq!(reads, 1);
        assert_eq!(pool, ["r0", "r1"]);
        // No domain: every domain's, once.
        let (pool, reads) = drawn(store(), "", 3).await;
        assert_eq!((pool.len(), reads), (3, 1));
    }
}
