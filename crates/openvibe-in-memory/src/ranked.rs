//! In-memory full-text retrieval: an inverted index scored by the shared
//! BM25 of [`openvibe_retrieval`], and the vector list beside it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use openvibe_retrieval::{
    CorpusStats, EXPANSION, TermCounts, bm25_rank, bm25_rank_weighted, cosine, top_by_score,
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

    /// The document ids its documents and postings name (one per
    /// posting: an erasure's report counts those whose record is gone).
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.docs
            .keys()
            .map(String::as_str)
            .chain(self.postings.values().flatten().map(String::as_str))
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
        let best = bm25_rank(
            terms,
            self.stats,
            first.iter().map(|(k, c)| (k.clone(), *c)),
            EXPANSION.pool,
        );
        let best: Vec<&TermCounts> = best
            .iter()
            .filter_map(|(k, _)| first.get(k).copied())
            .collect();
        let added = EXPANSION.select_from(terms, &best);
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

/// One tenant's knowledge embeddings in one contiguous matrix (a row per
/// record), so an exact search streams memory instead of chasing a pointer
/// per record; the access check runs only on the best rows, in score
/// order, until the list is full.
///
/// Rows of another length than the first (a record stored without an
/// embedding) are kept aside and scored one by one.
#[derive(Debug, Default, Clone)]
pub(crate) struct VectorIndex {
    dims: usize,
    rows: Vec<f32>,
    ids: Vec<String>,
    slots: HashMap<String, usize>,
    others: BTreeMap<String, Vec<f32>>,
}

impl VectorIndex {
    /// Index `vector` as record `id` (replacing what `id` had).
    pub(crate) fn insert(&mut self, id: &str, vector: &[f32]) {
        self.remove(id);
        if self.ids.is_empty() && !vector.is_empty() {
            self.dims = vector.len();
        }
        if vector.len() == self.dims && self.dims > 0 {
            self.slots.insert(id.to_owned(), self.ids.len());
            self.ids.push(id.to_owned());
            self.rows.extend_from_slice(vector);
        } else {
            self.others.insert(id.to_owned(), vector.to_vec());
        }
    }

    /// The record ids it holds a vector of.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.ids
            .iter()
            .map(String::as_str)
            .chain(self.others.keys().map(String::as_str))
    }

    /// Forget record `id` (the last row moves into its place).
    pub(crate) fn remove(&mut self, id: &str) {
        if self.others.remove(id).is_some() {
            return;
        }
        let Some(slot) = self.slots.remove(id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if slot != last {
            let (d, moved) = (self.dims, self.ids[last].clone());
            self.rows.copy_within(last * d..(last + 1) * d, slot * d);
            self.slots.insert(moved.clone(), slot);
            self.ids[slot] = moved;
        }
        self.ids.truncate(last);
        self.rows.truncate(last * self.dims);
    }

    /// The best `limit` records by cosine similarity to `query` among those
    /// `keep` accepts (it gives their ranking key, or `None` to leave one
    /// out), as `(key, similarity)`, best first, ties by key: exactly
    /// [`top_by_score`] over every accepted record, without the check on
    /// records that cannot make the list.
    pub(crate) fn nearest<K: Ord + Clone>(
        &self,
        query: &[f32],
        keep: impl Fn(&str) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        if limit == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(f32, &str)> = Vec::with_capacity(self.ids.len() + self.others.len());
        if self.dims > 0 {
            scored.extend(
                self.rows
                    .chunks_exact(self.dims)
                    .zip(&self.ids)
                    .map(|(row, id)| (cosine(query, row), id.as_str())),
            );
        }
        scored.extend(
            self.others
                .iter()
                .map(|(id, v)| (cosine(query, v), id.as_str())),
        );
        let by_score = |a: &(f32, &str), b: &(f32, &str)| {
            b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal)
        };
        // Walk the rows best first, a prefix at a time, checking access
        // until `limit` are accepted and the next score is lower than the
        // last of them (equal scores are all taken: the key orders ties).
        let mut accepted: Vec<(K, f32)> = Vec::new();
        let mut start = 0;
        let mut window = limit.saturating_mul(4).max(64);
        while start < scored.len() {
            let end = start.saturating_add(window).min(scored.len());
            let rest = &mut scored[start..];
            if end - start < rest.len() {
                rest.select_nth_unstable_by(end - start - 1, by_score);
            }
            let prefix = &mut scored[start..end];
            prefix.sort_unstable_by(by_score);
            for &(score, id) in prefix.iter() {
                if accepted.len() >= limit && score < accepted[limit - 1].1 {
                    return top_by_score(accepted, limit);
                }
                if let Some(key) = keep(id) {
                    accepted.push((key, score));
                }
            }
            start = end;
            window = window.saturating_mul(4);
        }
        top_by_score(accepted, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index answers exactly what scoring every accepted record would:
    /// after inserts, replacements and swap-removals, for any access rule
    /// and depth, ties (equal vectors) included.
    #[test]
    fn nearest_is_the_brute_force_top_k() {
        let mut rng = 7u64;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((rng >> 33) % 1000) as f32 / 1000.0 - 0.5
        };
        let mut index = VectorIndex::default();
        let mut all: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        for i in 0..300 {
            let v: Vec<f32> = if i % 50 == 7 {
                Vec::new()
            } else if i % 10 == 3 {
                vec![0.25; 8]
            } else {
                (0..8).map(|_| next()).collect()
            };
            index.insert(&format!("r{i:03}"), &v);
            all.insert(format!("r{i:03}"), v);
        }
        for i in (0..300).step_by(7) {
            index.remove(&format!("r{i:03}"));
            all.remove(&format!("r{i:03}"));
        }
        index.remove("nothing");
        index.insert("r001", &[0.25; 8]);
        all.insert("r001".into(), vec![0.25; 8]);
        let random: Vec<f32> = (0..8).map(|_| next()).collect();
        // The second query ties every `[0.25; 8]` row at the top (cosine 1),
        // so the list ends inside a group of equal scores.
        for (query, modulo, limit) in [(1, 10), (3, 5), (5, 50), (7, 1), (2, 400), (1000, 3)]
            .into_iter()
            .flat_map(|(m, l)| [(random.clone(), m, l), (vec![1.0; 8], m, l)])
        {
            let keep = |id: &str| {
                let n: usize = id[1..].parse().unwrap_or(0);
                n.is_multiple_of(modulo).then(|| id.to_owned())
            };
            let want = top_by_score(
                all.iter()
                    .filter_map(|(id, v)| Some((keep(id)?, cosine(&query, v))))
                    .collect(),
                limit,
            );
            assert_eq!(index.nearest(&query, keep, limit), want, "{modulo} {limit}");
        }
        assert!(
            index
                .nearest(&random, |id| Some(id.to_owned()), 0)
                .is_empty()
        );
    }

    #[test]
    fn the_index_follows_inserts_replacements_and_removals() {
        let mut index = TextIndex::default();
        index.insert("a", "red apples and green apples");
        index.insert("b", "green pears");
        index.insert("b", "yellow bananas");
        let terms = openvibe_retrieval::query_terms("green apple");
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
