//! In-memory full-text retrieval: an inverted index scored by the shared
//! BM25 of [`openvibe_protocols::memory::retrieval`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use openvibe_protocols::memory::{
    CorpusStats, EXPANSION, TermCounts, bm25_rank, bm25_rank_weighted,
};

/// An inverted index over one tenant's documents of one kind.
#[derive(Debug, Default, Clone)]
pub(crate) struct TextIndex {
    docs: HashMap<String, TermCounts>,
    /// Term → ids of the documents holding it.
    postings: HashMap<String, BTreeSet<String>>,
    stats: CorpusStats,
}

impl TextIndex {
    /// Index `text` as document `id` (replacing what `id` had).
    pub(crate) fn insert(&mut self, id: &str, text: &str) {
        self.remove(id);
        let counts = TermCounts::of(text);
        for term in &counts.terms {
            self.postings
                .entry(term.clone())
                .or_default()
                .insert(id.to_owned());
        }
        self.stats.docs += 1;
        self.stats.total_len += u64::from(counts.len);
        self.docs.insert(id.to_owned(), counts);
    }

    /// Forget document `id`.
    pub(crate) fn remove(&mut self, id: &str) {
        let Some(counts) = self.docs.remove(id) else {
            return;
        };
        for term in &counts.terms {
            if let Some(ids) = self.postings.get_mut(term) {
                ids.remove(id);
                if ids.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        self.stats.docs -= 1;
        self.stats.total_len -= u64::from(counts.len);
    }

    /// The best `limit` documents for `terms` among those `keep` accepts
    /// (it gives their ranking key, or `None` to leave one out), as
    /// `(key, BM25 score)`, best first, ties by key; the query is expanded
    /// by pseudo-relevance feedback ([`EXPANSION`]) first.
    pub(crate) fn rank<K: Ord + Clone>(
        &self,
        terms: &[String],
        keep: impl Fn(&str) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        let first: BTreeMap<K, &TermCounts> = self.candidates(terms, &keep).into_iter().collect();
        let feedback = bm25_rank(
            terms,
            self.stats,
            first.iter().map(|(k, c)| (k.clone(), *c)),
            EXPANSION.docs,
        );
        let feedback: Vec<&TermCounts> = feedback
            .iter()
            .filter_map(|(k, _)| first.get(k).copied())
            .collect();
        let added = EXPANSION.select_among(terms, &feedback, first.values().copied());
        let weighted = EXPANSION.weighted(terms, &added);
        let all: Vec<String> = weighted.iter().map(|(t, _)| t.clone()).collect();
        let candidates = self.candidates(&all, &keep);
        bm25_rank_weighted(&weighted, self.stats, candidates, limit)
    }

    /// The documents holding any of `terms` that `keep` accepts, as
    /// `(key, term counts)` in id order.
    fn candidates<K>(
        &self,
        terms: &[String],
        keep: &impl Fn(&str) -> Option<K>,
    ) -> Vec<(K, &TermCounts)> {
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        for term in terms {
            if let Some(posting) = self.postings.get(term) {
                ids.extend(posting.iter().map(String::as_str));
            }
        }
        ids.into_iter()
            .filter_map(|id| Some((keep(id)?, self.docs.get(id)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_follows_inserts_replacements_and_removals() {
        let mut index = TextIndex::default();
        index.insert("a", "red apples and green apples");
        index.insert("b", "green pears");
        index.insert("b", "yellow bananas");
        let terms = openvibe_protocols::memory::query_terms("green apple");
        let ranked = index.rank(&terms, |id| Some(id.to_owned()), 10);
        assert_eq!(ranked.len(), 1, "b was replaced: {ranked:?}");
        assert_eq!(ranked[0].0, "a");
        assert!(
            index
                .rank(&terms, |id| (id != "a").then_some(()), 10)
                .is_empty()
        );
        index.remove("a");
        index.remove("a");
        assert!(index.rank(&terms, |_| Some(()), 10).is_empty());
        assert_eq!(index.stats.docs, 1);
        assert_eq!(index.stats.total_len, 2);
        assert!(!index.postings.contains_key("appl"));
    }
}
