//! In-memory full-text retrieval: an inverted index scored by the shared
//! BM25 of [`openvibe_retrieval`], and the vector list beside it.

use std::collections::{BTreeMap, HashMap};

use crate::rows::Row;
use openvibe_retrieval::{
    Bm25Doc, CorpusStats, EXPANSION, TermCounts, VectorGraph, VectorNode, VectorSearch, bm25_rank,
    bm25_rank_weighted, cosine, top_by_score,
};

/// An inverted index over one tenant's documents of one kind, its
/// postings filed by who may read them (as PostgreSQL's
/// `knowledge_postings`): a search visits only its readers' postings.
/// Documents are numbered, postings are sorted numbers, and a search asks
/// `keep` once per document (of its record's row) however many of its
/// rounds name it.
#[derive(Debug, Default, Clone)]
pub(crate) struct TextIndex {
    /// By number; `None`: a free number.
    docs: Vec<Option<Doc>>,
    /// By number: each document's row and length, dense (a round reads
    /// them of every candidate).
    heads: Vec<(Row, u32)>,
    numbers: HashMap<String, u32>,
    free: Vec<u32>,
    /// Term → reader → (number, term frequency) of the documents holding
    /// it, sorted by number.
    postings: HashMap<String, HashMap<String, Vec<(u32, u32)>>>,
    stats: CorpusStats,
}

#[derive(Debug, Clone)]
struct Doc {
    id: String,
    counts: TermCounts,
    /// Who its postings are filed under.
    reader: String,
}

impl TextIndex {
    /// Index `text` as document `id` at row `row` (replacing what `id`
    /// had), its postings filed under `reader`.
    pub(crate) fn insert(&mut self, id: &str, row: Row, text: &str, reader: &str) {
        self.remove(id);
        let counts = TermCounts::of(text);
        let number = match self.free.pop() {
            Some(n) => n,
            None => {
                self.docs.push(None);
                u32::try_from(self.docs.len() - 1).unwrap_or(u32::MAX)
            }
        };
        for (term, tf) in counts.terms.iter().zip(&counts.tfs) {
            let list = self
                .postings
                .entry(term.clone())
                .or_default()
                .entry(reader.to_owned())
                .or_default();
            if let Err(at) = list.binary_search_by_key(&number, |p| p.0) {
                list.insert(at, (number, *tf));
            }
        }
        self.stats.docs += 1;
        self.stats.total_len += u64::from(counts.len);
        self.numbers.insert(id.to_owned(), number);
        if self.heads.len() <= number as usize {
            self.heads.resize(number as usize + 1, (Row::MAX, 0));
        }
        self.heads[number as usize] = (row, counts.len);
        if let Some(place) = self.docs.get_mut(number as usize) {
            *place = Some(Doc {
                id: id.to_owned(),
                counts,
                reader: reader.to_owned(),
            });
        }
    }

    fn doc(&self, number: u32) -> Option<&Doc> {
        self.docs.get(number as usize).and_then(Option::as_ref)
    }

    /// The document ids its documents and postings name (one per
    /// posting: an erasure's report counts those whose record is gone).
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        let posted = self
            .postings
            .values()
            .flat_map(HashMap::values)
            .flatten()
            .map(|(n, _)| self.doc(*n).map_or("", |d| d.id.as_str()));
        self.numbers.keys().map(String::as_str).chain(posted)
    }

    /// Forget document `id`.
    pub(crate) fn remove(&mut self, id: &str) {
        let Some(number) = self.numbers.remove(id) else {
            return;
        };
        let Some(doc) = self.docs.get_mut(number as usize).and_then(Option::take) else {
            return;
        };
        if let Some(head) = self.heads.get_mut(number as usize) {
            *head = (Row::MAX, 0);
        }
        for term in &doc.counts.terms {
            if let Some(readers) = self.postings.get_mut(term) {
                if let Some(list) = readers.get_mut(&doc.reader) {
                    if let Ok(at) = list.binary_search_by_key(&number, |p| p.0) {
                        list.remove(at);
                    }
                    if list.is_empty() {
                        readers.remove(&doc.reader);
                    }
                }
                if readers.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        self.free.push(number);
        self.stats.docs -= 1;
        self.stats.total_len -= u64::from(doc.counts.len);
    }

    /// The best `limit` documents for `terms` among those filed under one
    /// of `readers` that `keep` accepts (asked of their rows, it gives
    /// their ranking key, or `None` to leave one out), as `(key, BM25
    /// score)`, best first, ties by key; the query is expanded by
    /// pseudo-relevance feedback ([`EXPANSION`]) first.
    pub(crate) fn rank<K: Ord + Clone>(
        &self,
        terms: &[String],
        readers: &[&str],
        keep: impl Fn(Row) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        // What `keep` said of each document seen, across both rounds.
        let mut kept: Kept<K> = Kept::default();
        let first = self.candidates(terms, readers, &keep, &mut kept);
        let best = bm25_rank(terms, self.stats, first.docs(&kept), EXPANSION.pool);
        let best: Vec<&TermCounts> = best
            .iter()
            .filter_map(|((_, n), _)| Some(&self.doc(*n)?.counts))
            .collect();
        let added = EXPANSION.select_from(terms, &best);
        let weighted = EXPANSION.weighted(terms, &added);
        let all: Vec<String> = weighted.iter().map(|(t, _)| t.clone()).collect();
        let second = self.candidates(&all, readers, &keep, &mut kept);
        bm25_rank_weighted(&weighted, self.stats, second.docs(&kept), limit)
            .into_iter()
            .map(|((key, _), score)| (key.clone(), score))
            .collect()
    }

    /// The documents holding any of `terms`, filed under one of
    /// `readers`, that `keep` accepts (asked once per document: `kept`
    /// remembers), in number order, with their term frequencies read off
    /// the postings.
    fn candidates<K>(
        &self,
        terms: &[String],
        readers: &[&str],
        keep: &impl Fn(Row) -> Option<K>,
        kept: &mut Kept<K>,
    ) -> Candidates {
        // (term's place, tf) of every posting of the terms, and a key per
        // posting (its document's number, then its place in `posted`):
        // sorting plain integers groups each document's postings.
        let mut posted: Vec<(usize, u32)> = Vec::new();
        let mut keys: Vec<u64> = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            if let Some(filed) = self.postings.get(term) {
                for reader in readers {
                    if let Some(list) = filed.get(*reader) {
                        for &(n, tf) in list {
                            keys.push(u64::from(n) << 32 | posted.len() as u64);
                            posted.push((i, tf));
                        }
                    }
                }
            }
        }
        keys.sort_unstable();
        let width = terms.len();
        let mut out = Candidates {
            width,
            numbers: Vec::new(),
            lens: Vec::new(),
            tfs: Vec::new(),
        };
        for group in keys.chunk_by(|a, b| a >> 32 == b >> 32) {
            #[allow(clippy::cast_possible_truncation)]
            let n = (group[0] >> 32) as u32;
            let Some(&(row, len)) = self.heads.get(n as usize) else {
                continue;
            };
            let accepted = kept.entry(n).or_insert_with(|| keep(row)).is_some();
            if !accepted {
                continue;
            }
            out.numbers.push(n);
            out.lens.push(len);
            let start = out.tfs.len();
            out.tfs.resize(start + width, 0);
            for key in group {
                #[allow(clippy::cast_possible_truncation)]
                if let Some(&(i, tf)) = posted.get((key & u64::from(u32::MAX)) as usize) {
                    out.tfs[start + i] = tf;
                }
            }
        }
        out
    }
}

/// What `keep` said of each document number a search saw.
type Kept<K> = HashMap<u32, Option<K>, foldhash::fast::RandomState>;

/// A round's candidates: numbers, lengths, and term frequencies (a row of
/// `width` per candidate, in the query's term order).
struct Candidates {
    width: usize,
    numbers: Vec<u32>,
    lens: Vec<u32>,
    tfs: Vec<u32>,
}

/// One candidate's row, as BM25 reads it.
struct TfRow<'a> {
    len: u32,
    tfs: &'a [u32],
}

impl Bm25Doc for TfRow<'_> {
    fn length(&self) -> u32 {
        self.len
    }

    fn tf(&self, i: usize, _: &str) -> u32 {
        self.tfs.get(i).copied().unwrap_or(0)
    }
}

impl Candidates {
    /// Each candidate's key (borrowed from `kept`, with its number) and row.
    fn docs<'a, K>(
        &'a self,
        kept: &'a Kept<K>,
    ) -> impl Iterator<Item = ((&'a K, u32), TfRow<'a>)> + 'a {
        let width = self.width.max(1);
        self.numbers
            .iter()
            .zip(&self.lens)
            .zip(self.tfs.chunks(width).chain(std::iter::repeat(&[][..])))
            .filter_map(move |((n, len), tfs)| {
                let key = kept.get(n)?.as_ref()?;
                Some(((key, *n), TfRow { len: *len, tfs }))
            })
    }
}

/// One tenant's knowledge embeddings filed by reader, as its postings are
/// ([`TextIndex`]): a [`VectorIndex`] for the public knowledge and one per
/// owner for their private knowledge. A search walks only the indexes of
/// the readers it names (the caller and the public), so a walk passes over
/// few records its caller may not read (on one graph of everything, a
/// reader of a third of the records walked about three times as far); the
/// access check still runs inside each walk (namespaces, projects, expiry,
/// the query's filters).
#[derive(Debug, Default, Clone)]
pub(crate) struct ReaderVectors {
    /// Reader → its index in `indexes`.
    numbers: HashMap<String, usize>,
    indexes: Vec<VectorIndex>,
    /// Record id → the number of the reader its vector is filed under.
    filed: HashMap<String, usize>,
}

impl ReaderVectors {
    /// Index `vector` as record `id` at row `row` readable by `reader`
    /// (replacing what `id` had, under whichever reader), searched per
    /// `search`.
    pub(crate) fn insert(
        &mut self,
        id: &str,
        row: Row,
        vector: &[f32],
        reader: &str,
        search: VectorSearch,
    ) {
        self.remove(id);
        let number = match self.numbers.get(reader) {
            Some(&n) => n,
            None => {
                self.indexes.push(VectorIndex::default());
                self.numbers
                    .insert(reader.to_owned(), self.indexes.len() - 1);
                self.indexes.len() - 1
            }
        };
        if let Some(index) = self.indexes.get_mut(number) {
            index.insert(id, row, vector, search);
            self.filed.insert(id.to_owned(), number);
        }
    }

    /// Forget record `id`.
    pub(crate) fn remove(&mut self, id: &str) {
        if let Some(index) = self
            .filed
            .remove(id)
            .and_then(|number| self.indexes.get_mut(number))
        {
            index.remove(id);
        }
    }

    /// The record ids it holds a vector of.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.indexes.iter().flat_map(VectorIndex::ids)
    }

    /// The best `limit` records readable by one of `readers` by cosine
    /// similarity to `query` among those `keep` accepts (see
    /// [`VectorIndex::nearest`]): the best `limit` of each reader's index,
    /// then the best `limit` of those.
    pub(crate) fn nearest<K: Ord + Clone>(
        &self,
        query: &[f32],
        readers: &[&str],
        keep: impl Fn(Row) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        let mut numbers: Vec<usize> = readers
            .iter()
            .filter_map(|r| self.numbers.get(*r).copied())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        let mut found = Vec::new();
        for index in numbers.iter().filter_map(|&n| self.indexes.get(n)) {
            found.extend(index.nearest(query, &keep, limit));
        }
        top_by_score(found, limit)
    }
}

/// One reader's knowledge embeddings (see [`ReaderVectors`]): a [`VectorGraph`] (one contiguous
/// matrix of unit vectors and, past [`VectorSearch::exact_below`] rows, an
/// HNSW graph over them) and the record id and row of each node. The access check
/// runs inside the graph's walk (or on the exact scan's best rows, in
/// score order), so `limit` accepted records come back whenever that many
/// exist.
///
/// Vectors of another length than the first (a record stored without an
/// embedding) are kept aside and scored one by one.
#[derive(Debug, Default, Clone)]
pub(crate) struct VectorIndex {
    graph: Option<VectorGraph>,
    /// Node → record id and row (`None`: removed).
    ids: Vec<Option<(String, Row)>>,
    slots: HashMap<String, VectorNode>,
    /// Record id → row and vector.
    others: BTreeMap<String, (Row, Vec<f32>)>,
}

impl VectorIndex {
    /// Index `vector` as record `id` at row `row` (replacing what `id`
    /// had), searched per `search` (which the first vector fixes).
    pub(crate) fn insert(&mut self, id: &str, row: Row, vector: &[f32], search: VectorSearch) {
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
                self.ids[node as usize] = Some((id.to_owned(), row));
            }
            _ => {
                self.others.insert(id.to_owned(), (row, vector.to_vec()));
            }
        }
    }

    /// The record ids it holds a vector of.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.ids
            .iter()
            .flatten()
            .map(|(id, _)| id.as_str())
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
                if let (Some(new), Some(Some(entry))) = (new, self.ids.get(old)) {
                    self.slots.insert(entry.0.clone(), *new);
                    ids[*new as usize] = Some(entry.clone());
                }
            }
            self.ids = ids;
            *graph = fresh;
        }
    }

    /// The best `limit` records by cosine similarity to `query` among those
    /// `keep` accepts (asked of their rows, it gives their ranking key, or
    /// `None` to leave one out), as `(key, similarity)`, best first, ties
    /// by key: through the graph when it is built (the exact scan when
    /// the walk finds fewer than `limit`), else [`top_by_score`] over every
    /// accepted record, without the check on records that cannot make the
    /// list.
    pub(crate) fn nearest<K: Ord + Clone>(
        &self,
        query: &[f32],
        keep: impl Fn(Row) -> Option<K>,
        limit: usize,
    ) -> Vec<(K, f32)> {
        if limit == 0 {
            return Vec::new();
        }
        let mut found = self.graph.as_ref().map_or_else(Vec::new, |graph| {
            graph.nearest(
                query,
                |node| keep(self.ids.get(node as usize)?.as_ref()?.1),
                limit,
            )
        });
        if !self.others.is_empty() {
            found.extend(
                self.others
                    .iter()
                    .filter_map(|(_, (row, v))| Some((keep(*row)?, cosine(query, v)))),
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
        for search in [
            VectorSearch::EXACT,
            VectorSearch::APPROXIMATE.exact_below(1),
        ] {
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
                index.insert(&format!("r{i:03}"), i, &v, search);
                all.insert(format!("r{i:03}"), v);
            }
            for i in (0..300).step_by(7) {
                index.remove(&format!("r{i:03}"));
                all.remove(&format!("r{i:03}"));
            }
            index.remove("nothing");
            index.insert("r001", 1, &[0.25; 8], search);
            all.insert("r001".into(), vec![0.25; 8]);
            let random: Vec<f32> = (0..8).map(|_| next()).collect();
            // The second query ties every `[0.25; 8]` row at the top (cosine 1),
            // so the list ends inside a group of equal scores.
            for (query, modulo, limit) in [(1, 10), (3, 5), (5, 50), (7, 1), (2, 400), (1000, 3)]
                .into_iter()
                .flat_map(|(m, l)| [(random.clone(), m, l), (vec![1.0; 8], m, l)])
            {
                // Row `n` is record `r{n:03}`.
                let keep = |row: Row| row.is_multiple_of(modulo).then(|| format!("r{row:03}"));
                let row = |id: &str| id[1..].parse::<Row>().unwrap_or(0);
                let want = top_by_score(
                    all.iter()
                        .filter_map(|(id, v)| Some((keep(row(id))?, cosine(&query, v))))
                        .collect(),
                    limit,
                );
                let got = index.nearest(&query, keep, limit);
                assert_eq!(got.len(), want.len(), "{modulo} {limit}");
                assert!(got.iter().all(|(id, _)| keep(row(id)).is_some()));
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
            assert!(
                same * 10 >= total * 9,
                "{same} of {total} through the graph"
            );
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
        // Row `n` is record `ids[n]`.
        let ids = ["a", "b", "c", "d"];
        let id = |row: Row| Some(ids[row as usize].to_owned());
        index.insert("a", 0, "red apples and green apples", "*");
        index.insert("b", 1, "green pears", "user:b");
        index.insert("b", 1, "yellow bananas", "user:b");
        index.insert("c", 2, "green apples", "user:c");
        let terms = openvibe_retrieval::query_terms("green apple");
        let public = ["*"];
        let ranked = index.rank(&terms, &public, id, 10);
        assert_eq!(
            ranked.len(),
            1,
            "b was replaced, c is not public: {ranked:?}"
        );
        assert_eq!(ranked[0].0, "a");
        let ranked = index.rank(&terms, &["user:c", "*"], id, 10);
        assert_eq!(ranked.len(), 2, "c's own and the public: {ranked:?}");
        assert!(
            index
                .rank(&terms, &public, |row| (row != 0).then_some(()), 10)
                .is_empty()
        );
        index.remove("a");
        index.remove("a");
        index.remove("c");
        assert!(
            index
                .rank(&terms, &["*", "user:c"], |_| Some(()), 10)
                .is_empty()
        );
        assert_eq!(index.stats.docs, 1);
        assert_eq!(index.stats.total_len, 2);
        assert!(!index.postings.contains_key("appl"));
        assert_eq!(
            index.ids().collect::<Vec<_>>(),
            ["b", "b", "b"],
            "b and its two postings"
        );
        // A freed number is reused, and its old postings do not come back.
        index.insert("d", 3, "green pears", "*");
        let ranked = index.rank(&terms, &public, id, 10);
        assert_eq!(ranked.len(), 1);
        assert_eq!(ranked[0].0, "d");
    }
}
