//! In-memory full-text retrieval: an inverted index scored by the shared
//! BM25 of [`openvibe_retrieval`], and the vector list beside it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use openvibe_retrieval::{
    CorpusStats, EXPANSION, TermCounts, VectorGraph, VectorNode, VectorSearch, bm25_rank,
    bm25_rank_weighted, cosine, top_by_score,
};

/// An inverted index over one tenant's documents of one kind, its
/// postings filed by who may read them (as PostgreSQL's
/// `knowledge_postings`): a search visits only its readers' postings.
#[derive(Debug, Default, Clone)]
pub(crate) struct TextIndex {
    /// Id → term counts and the reader its postings are filed under.
    docs: HashMap<String, (TermCounts, String)>,
    /// Term → reader → ids of the documents holding it.
    postings: HashMap<String, HashMap<String, BTreeSet<String>>>,
    stats: CorpusStats,
}

impl TextIndex {
    /// Index `text` as document `id` (replacing what `id` had), its
    /// postings filed under `reader`.
    pub(crate) fn insert(&mut self, id: &str, text: &str, reader: &str) {
        self.remove(id);
        let counts = TermCounts::of(text);
        for term in &counts.terms {
            self.postings
                .entry(term.clone())
                .or_default()
                .entry(reader.to_owned())
                .or_default()
                .insert(id.to_owned());
        }
        self.stats.docs += 1;
        self.stats.total_len += u64::from(counts.len);
        self.docs.insert(id.to_owned(), (counts, reader.to_owned()));
    }

    /// The document ids its documents and postings name (one per
    /// posting: an erasure's report counts those whose record is gone).
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.docs.keys().map(String::as_str).chain(
            self.postings
                .values()
                .flat_map(HashMap::values)
                .flatten()
                .map(String::as_str),
        )
    }

    /// Forget document `id`.
    pub(crate) fn remove(&mut self, id: &str) {
        let Some((counts, reader)) = self.docs.remove(id) else {
            return;
        };
        for term in &counts.terms {
            if let Some(readers) = self.postings.get_mut(term) {
                if let Some(ids) = readers.get_mut(&reader) {
                    ids.remove(id);
                    if ids.is_empty() {
                        readers.remove(&reader);
                    }
                }
                if readers.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        self.stats.docs -= 1;
        self.stats.total_len -= u64::from(counts.len);
    }

    /// The best `limit` documents for `terms` among those filed under one
    /// of `readers` that `keep` accepts (it gives their ranking key, or
    /// `None` to leave one out), as `(key, BM25 score)`, best first, ties
    /// by key; the query is expanded by pseudo-relevance feedback
    /// ([`EXPANSION`]) first.
    pub(crate) fn rank<K: Ord + Clone>(
        &self,
        terms: &[String],
        readers: &[&str],
        keep: impl Fn(&str) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        let first: BTreeMap<K, &TermCounts> = self
            .candidates(terms, readers, &keep)
            .into_iter()
            .collect();
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
        let candidates = self.candidates(&all, readers, &keep);
        bm25_rank_weighted(&weighted, self.stats, candidates, limit)
    }

    /// The documents holding any of `terms`, filed under one of `readers`,
    /// that `keep` accepts, as `(key, term counts)` in id order.
    fn candidates<K>(
        &self,
        terms: &[String],
        readers: &[&str],
        keep: &impl Fn(&str) -> Option<K>,
    ) -> Vec<(K, &TermCounts)> {
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        for term in terms {
            if let Some(filed) = self.postings.get(term) {
                for reader in readers {
                    if let Some(posting) = filed.get(*reader) {
                        ids.extend(posting.iter().map(String::as_str));
                    }
                }
            }
        }
        ids.into_iter()
            .filter_map(|id| Some((keep(id)?, &self.docs.get(id)?.0)))
            .collect()
    }
}

/// One tenant's knowledge embeddings: a [`VectorGraph`] (one contiguous
/// matrix of unit vectors and, past [`VectorSearch::exact_below`] rows, an
/// HNSW graph over them) and the record id of each node. The access check
/// runs inside the graph's walk (or on the exact scan's best rows, in
/// score order), so `limit` accepted records come back whenever that many
/// exist.
///
/// Vectors of another length than the first (a record stored without an
/// embedding) are kept aside and scored one by one.
#[derive(Debug, Default, Clone)]
pub(crate) struct VectorIndex {
    graph: Option<VectorGraph>,
    /// Node → record id (`None`: removed).
    ids: Vec<Option<String>>,
    slots: HashMap<String, VectorNode>,
    others: BTreeMap<String, Vec<f32>>,
}

impl VectorIndex {
    /// Index `vector` as record `id` (replacing what `id` had), searched
    /// per `search` (which the first vector fixes).
    pub(crate) fn insert(&mut self, id: &str, vector: &[f32], search: VectorSearch) {
        self.remove(id);
        if self.graph.is_none() && !vector.is_empty() {
            self.graph = Some(VectorGraph::new(vector.len(), search));
        }
        match &mut self.graph {
            Some(graph) if vector.len() == graph.dims() => {
                let node = graph.insert(vector);
                self.slots.insert(id.to_owned(), node);
                if self.ids.len() <= node as usize {
                    self.ids.resize(node as usize + 1, None);
                }
                self.ids[node as usize] = Some(id.to_owned());
            }
            _ => {
                self.others.insert(id.to_owned(), vector.to_vec());
            }
        }
    }

    /// The record ids it holds a vector of.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.ids
            .iter()
            .flatten()
            .map(String::as_str)
            .chain(self.others.keys().map(String::as_str))
    }

    /// Forget record `id`; rebuild without removed nodes once they
    /// outnumber the live ones.
    pub(crate) fn remove(&mut self, id: &str) {
        if self.others.remove(id).is_some() {
            return;
        }
        let (Some(node), Some(graph)) = (self.slots.remove(id), &mut self.graph) else {
            return;
        };
        graph.remove(node);
        if let Some(slot) = self.ids.get_mut(node as usize) {
            *slot = None;
        }
        if graph.needs_compaction() {
            let (fresh, map) = graph.compacted();
            let mut ids = vec![None; fresh.nodes()];
            for (old, new) in map.iter().enumerate() {
                if let (Some(new), Some(Some(id))) = (new, self.ids.get(old)) {
                    self.slots.insert(id.clone(), *new);
                    ids[*new as usize] = Some(id.clone());
                }
            }
            self.ids = ids;
            *graph = fresh;
        }
    }

    /// The best `limit` records by cosine similarity to `query` among those
    /// `keep` accepts (it gives their ranking key, or `None` to leave one
    /// out), as `(key, similarity)`, best first, ties by key: through the
    /// graph when it is built (the exact scan when the walk finds fewer
    /// than `limit`), else [`top_by_score`] over every accepted record,
    /// without the check on records that cannot make the list.
    pub(crate) fn nearest<K: Ord + Clone>(
        &self,
        query: &[f32],
        keep: impl Fn(&str) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        if limit == 0 {
            return Vec::new();
        }
        let mut found = self.graph.as_ref().map_or_else(Vec::new, |graph| {
            graph.nearest(
                query,
                |node| keep(self.ids.get(node as usize)?.as_deref()?),
                limit,
            )
        });
        if !self.others.is_empty() {
            found.extend(
                self.others
                    .iter()
                    .filter_map(|(id, v)| Some((keep(id)?, cosine(query, v)))),
            );
            found = top_by_score(found, limit);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index answers exactly what scoring every accepted record would:
    /// after inserts, replacements and removals, for any access rule and
    /// depth, ties (equal vectors) included; through the graph, the same
    /// number of accepted records and nearly the same ones.
    #[test]
    fn nearest_is_the_brute_force_top_k() {
        for search in [VectorSearch::EXACT, VectorSearch::APPROXIMATE.exact_below(1)] {
            let (mut same, mut total) = (0, 0);
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
                index.insert(&format!("r{i:03}"), &v, search);
                all.insert(format!("r{i:03}"), v);
            }
            for i in (0..300).step_by(7) {
                index.remove(&format!("r{i:03}"));
                all.remove(&format!("r{i:03}"));
            }
            index.remove("nothing");
            index.insert("r001", &[0.25; 8], search);
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
                let got = index.nearest(&query, keep, limit);
                assert_eq!(got.len(), want.len(), "{modulo} {limit}");
                assert!(got.iter().all(|(id, _)| keep(id).is_some()));
                if search.approximate {
                    // Ties are broken among what the walk found.
                    same += got
                        .iter()
                        .filter(|(id, s)| want.iter().any(|(w, t)| w == id || (s - t).abs() < 1e-6))
                        .count();
                    total += want.len();
                } else {
                    for ((id, s), (w, t)) in got.iter().zip(&want) {
                        assert_eq!(id, w, "{modulo} {limit}");
                        assert!((s - t).abs() < 1e-5, "{s} against {t}");
                    }
                }
            }
            assert!(same * 10 >= total * 9, "{same} of {total} through the graph");
            assert!(
                index
                    .nearest(&random, |id| Some(id.to_owned()), 0)
                    .is_empty()
            );
        }
    }

    #[test]
    fn the_index_follows_inserts_replacements_and_removals() {
        let mut index = TextIndex::default();
        index.insert("a", "red apples and green apples", "*");
        index.insert("b", "green pears", "user:b");
        index.insert("b", "yellow bananas", "user:b");
        index.insert("c", "green apples", "user:c");
        let terms = openvibe_retrieval::query_terms("green apple");
        let public = ["*"];
        let ranked = index.rank(&terms, &public, |id| Some(id.to_owned()), 10);
        assert_eq!(ranked.len(), 1, "b was replaced, c is not public: {ranked:?}");
        assert_eq!(ranked[0].0, "a");
        let ranked = index.rank(&terms, &["user:c", "*"], |id| Some(id.to_owned()), 10);
        assert_eq!(ranked.len(), 2, "c's own and the public: {ranked:?}");
        assert!(
            index
                .rank(&terms, &public, |id| (id != "a").then_some(()), 10)
                .is_empty()
        );
        index.remove("a");
        index.remove("a");
        index.remove("c");
        assert!(index.rank(&terms, &["*", "user:c"], |_| Some(()), 10).is_empty());
        assert_eq!(index.stats.docs, 1);
        assert_eq!(index.stats.total_len, 2);
        assert!(!index.postings.contains_key("appl"));
    }
}
