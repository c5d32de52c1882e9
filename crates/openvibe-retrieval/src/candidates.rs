//! Ranking a set of documents already in hand (the candidates a query's
//! filters selected) with the same retrievers and fusion as the stores.
//!
//! The stores rank against their whole collection through their indexes;
//! this ranks a bounded set: BM25 with the set's own statistics, cosine
//! similarity where vectors are given, combined by [`combine`]. The memory
//! assembler uses it to order the facts and insights a scope selects by
//! relevance to the scope's query.

use std::sync::{Arc, Mutex, PoisonError};

use openvibe_protocols::{Generations, Retriever};

use crate::analyzer::{TermCounts, query_terms};
use crate::bm25::{CorpusStats, bm25_rank};
use crate::fusion::{Fused, combine, top_by_score};
use crate::vector::cosine;

/// One candidate: its text and, when known, its embedding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate<'a> {
    /// The text ranked by full text.
    pub text: &'a str,
    /// Its embedding (same model as the query's), for the vector retriever.
    pub vector: Option<&'a [f32]>,
}

/// Rank `candidates` for `query` (and its embedding, when given): the best
/// `limit` as indexes into `candidates`, best first, each with what every
/// retriever that found it said. Full text finds the candidates sharing an
/// analyzed term with the query; the vector retriever finds every candidate
/// with a vector of the query vector's size. Candidates neither finds are
/// left out; ties go to the earlier candidate.
///
/// ```
/// use openvibe_protocols::Retriever;
/// use openvibe_retrieval::{Candidate, rank_candidates};
/// let texts = ["Docker runs containers", "Guido created Python", "Python packaging"];
/// let candidates: Vec<Candidate> =
///     texts.iter().map(|t| Candidate { text: t, vector: None }).collect();
/// let ranked = rank_candidates("python", None, &candidates, 10);
/// let order: Vec<usize> = ranked.iter().map(|f| f.id).collect();
/// assert_eq!(order, [2, 1], "both name Python; the shorter text ranks first");
/// assert_eq!(ranked[0].retrievers[0].retriever, Retriever::FullText);
/// ```
pub fn rank_candidates(
    query: &str,
    query_vector: Option<&[f32]>,
    candidates: &[Candidate<'_>],
    limit: usize,
) -> Vec<Fused<usize>> {
    rank_candidates_with(query, query_vector, candidates, limit, None)
}

/// [`rank_candidates`], the candidates' analyzed texts taken from `cache`
/// when it holds them (and kept in it): the same ranking, without
/// analyzing again a text seen recently.
pub fn rank_candidates_with(
    query: &str,
    query_vector: Option<&[f32]>,
    candidates: &[Candidate<'_>],
    limit: usize,
    cache: Option<&TermCache>,
) -> Vec<Fused<usize>> {
    let mut lists = Vec::new();
    let terms = query_terms(query);
    if !terms.is_empty() {
        let counts: Vec<Arc<TermCounts>> = match cache {
            Some(cache) => cache.all(candidates.iter().map(|c| c.text)),
            None => candidates
                .iter()
                .map(|c| Arc::new(TermCounts::of(c.text)))
                .collect(),
        };
        let stats = CorpusStats {
            docs: counts.len() as u64,
            total_len: counts.iter().map(|c| u64::from(c.len)).sum(),
        };
        let ranked = bm25_rank(
            &terms,
            stats,
            counts.iter().map(AsRef::as_ref).enumerate(),
            candidates.len(),
        );
        if !ranked.is_empty() {
            lists.push((Retriever::FullText, ranked));
        }
    }
    if let Some(q) = query_vector.filter(|q| !q.is_empty()) {
        let scored: Vec<(usize, f32)> = candidates
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let v = c.vector.filter(|v| v.len() == q.len())?;
                Some((i, cosine(q, v)))
            })
            .collect();
        if !scored.is_empty() {
            lists.push((Retriever::Vector, top_by_score(scored, candidates.len())));
        }
    }
    if lists.is_empty() {
        return Vec::new();
    }
    combine(lists, limit)
}

/// Analyzed texts kept for reuse ([`rank_candidates_with`]): at most
/// `capacity` (two generations, recently used ones kept). A role keeps one
/// for its lifetime, so the records it recalls again and again are
/// analyzed once.
pub struct TermCache {
    capacity: usize,
    kept: Mutex<Generations<Arc<TermCounts>>>,
}

impl TermCache {
    /// Keep up to `capacity` analyzed texts (at least 2).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(2),
            kept: Mutex::new(Generations::default()),
        }
    }

    /// The term counts of each of `texts`, from the cache or analyzed now.
    pub fn all<'t>(&self, texts: impl Iterator<Item = &'t str>) -> Vec<Arc<TermCounts>> {
        let half = self.capacity / 2;
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        texts
            .map(|text| {
                kept.get(text, half).unwrap_or_else(|| {
                    let counts = Arc::new(TermCounts::of(text));
                    kept.insert(text.to_owned(), counts.clone(), half);
                    counts
                })
            })
            .collect()
    }

    /// How many analyzed texts it holds.
    pub fn len(&self) -> usize {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for TermCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermCache")
            .field("capacity", &self.capacity)
            .field("entries", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain<'a>(texts: &'a [&'a str]) -> Vec<Candidate<'a>> {
        texts
            .iter()
            .map(|t| Candidate {
                text: t,
                vector: None,
            })
            .collect()
    }

    #[test]
    fn full_text_alone_keeps_bm25_order_and_drops_non_matches() {
        let texts = [
            "the webinar drew logistics companies",
            "board forecast",
            "webinar leads with a VP contact qualify as tier A; webinar",
        ];
        let ranked = rank_candidates("webinar lead with a VP", None, &plain(&texts), 10);
        let order: Vec<usize> = ranked.iter().map(|f| f.id).collect();
        assert_eq!(order, [2, 0]);
        assert!(ranked.iter().all(|f| f.retrievers.len() == 1));
        assert!(rank_candidates("", None, &plain(&texts), 10).is_empty());
        assert!(rank_candidates("the of", None, &plain(&texts), 10).is_empty());
        assert_eq!(rank_candidates("webinar", None, &plain(&texts), 1).len(), 1);
    }

    /// The cache ranks as analysis does, and keeps what it analyzed.
    #[test]
    fn a_term_cache_ranks_the_same_and_analyzes_once() {
        let texts = [
            "the webinar drew logistics companies",
            "board forecast",
            "webinar leads with a VP contact qualify as tier A; webinar",
        ];
        let cache = TermCache::new(4);
        for _ in 0..2 {
            let cached =
                rank_candidates_with("webinar lead", None, &plain(&texts), 10, Some(&cache));
            assert_eq!(
                cached,
                rank_candidates("webinar lead", None, &plain(&texts), 10)
            );
        }
        assert_eq!(cache.len(), 3);
        // Bounded: two generations of half the capacity.
        let more: Vec<String> = (0..10).map(|i| format!("text {i}")).collect();
        let _ = cache.all(more.iter().map(String::as_str));
        assert!(cache.len() <= 4, "{}", cache.len());
    }

    #[test]
    fn vectors_find_what_words_miss_and_both_lists_are_fused() {
        let near = [1.0f32, 0.0];
        let far = [0.0f32, 1.0];
        let wrong_size = [1.0f32, 0.0, 0.0];
        let candidates = [
            Candidate {
                text: "no shared words",
                vector: Some(&near),
            },
            Candidate {
                text: "python packaging",
                vector: Some(&far),
            },
            Candidate {
                text: "python again",
                vector: Some(&wrong_size),
            },
        ];
        let ranked = rank_candidates("python", Some(&[1.0, 0.0]), &candidates, 10);
        let found: Vec<(usize, Vec<Retriever>)> = ranked
            .iter()
            .map(|f| (f.id, f.retrievers.iter().map(|r| r.retriever).collect()))
            .collect();
        // Candidate 1 is in both lists (full text #1 or #2, vector #2); 0 only
        // by vector (#1); 2 only by full text (its vector has the wrong size).
        assert_eq!(found.len(), 3);
        assert!(found.contains(&(0, vec![Retriever::Vector])));
        assert!(found.contains(&(1, vec![Retriever::FullText, Retriever::Vector])));
        assert!(found.contains(&(2, vec![Retriever::FullText])));
        assert_eq!(found[0].0, 1, "found by both, it leads");
    }
}
