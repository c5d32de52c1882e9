//! Ranked retrieval, defined once for every backend: the text analyzer,
//! BM25 scoring, and reciprocal rank fusion of several retrievers' lists.
//!
//! Backends find candidates their own way (an inverted index in memory, a
//! postings table in Postgres, HNSW for vectors) but score and fuse them with
//! the functions here, so the same data and query rank the same on every
//! backend.
//!
//! - **Analyzer** ([`analyze`]): lowercase runs of alphanumerics, English
//!   stop words dropped, each word reduced to its Snowball (Porter 2) stem,
//!   so that "researching" finds "research"; a calendar date adds a day
//!   and a month term (`d20230707`, `m202307`), so a question naming a
//!   day finds what was said that day whichever way it was written, and
//!   relative dates ("last Friday") resolved against the first day a text
//!   names add the terms of the day, ISO week or month they mean.
//! - **BM25** ([`Bm25`]): the Robertson–Spärck Jones weight with `k1 = 1.2`,
//!   `b = 0.75`. Collection statistics (document count, mean length) are the
//!   tenant's; document frequencies count only the documents the caller
//!   may read and the query's filters keep.
//! - **Expansion** ([`Expansion`]): pseudo-relevance feedback adds the
//!   first round's most characteristic terms to the query (idf counted
//!   among the first round's best 100: [`Expansion::select_from`]).
//! - **Fusion** ([`fuse`]): weighted reciprocal rank fusion,
//!   `score = Σ weight / (k + rank)` ([`FUSION`]: `k = 5`, full text 1,
//!   vector 0.5), ties broken by [`RankKey`].
//!
//! `docs/retrieval.md` has the measurements behind each constant.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// How a query finds its results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RetrievalMode {
    /// Full text only (BM25 over the analyzed text); needs a text.
    FullText,
    /// Vector similarity only (cosine); needs an embedding or a text and an
    /// embedder.
    Vector,
    /// Both, fused by reciprocal rank ([`fuse`]). Without a text it is a
    /// vector search; without an embedding or embedder, a full-text one.
    #[default]
    Hybrid,
}

/// Which retriever found a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Retriever {
    /// BM25 over the analyzed text.
    FullText,
    /// Cosine similarity of embeddings.
    Vector,
}

impl Retriever {
    /// The name used in traces and output (`full_text`, `vector`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FullText => "full_text",
            Self::Vector => "vector",
        }
    }
}

impl std::fmt::Display for Retriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one retriever said about a result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RetrieverScore {
    /// The retriever.
    pub retriever: Retriever,
    /// Its rank in that retriever's list (1 = best).
    pub rank: u32,
    /// Its score there: BM25 for full text, cosine similarity for vectors.
    pub score: f32,
}

/// English stop words: function words that carry no topic (the common
/// list of the NLTK and Lucene English analyzers).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "don",
    "ll",
    "re",
    "ve",
    "d",
    "m",
];

fn is_stop_word(word: &str) -> bool {
    static SET: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
        .contains(word)
}

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
}

/// The longest term kept (longer words are cut to this many bytes, on a
/// character boundary).
pub const MAX_TERM_LEN: usize = 64;

/// The words the analyzer reads: lowercase runs of alphanumerics, in
/// order, stop words kept (date recognition reads "of", "last", "the").
pub(super) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The analyzed terms of `text`, in order, repeats kept: lowercase runs of
/// alphanumerics, stop words dropped, each stemmed (Snowball English);
/// then a day term and a month term for each calendar date ("7 July, 2023",
/// "July 7, 2023", "2023-07-07": `d20230707`, `m202307`), a month term
/// for each month with its year ("July 2023"), and the day, ISO week and
/// month terms of relative dates resolved against the first day the text
/// names ("last Friday", "two weeks ago"; see the `dates` module).
///
/// ```
/// use openvibe_protocols::memory::analyze;
/// assert_eq!(analyze("What is she researching? Research!"), vec!["research", "research"]);
/// assert_eq!(analyze("LGBTQ support groups"), vec!["lgbtq", "support", "group"]);
/// assert_eq!(
///     analyze("Hiked on July 7, 2023"),
///     vec!["hike", "juli", "7", "2023", "d20230707", "m202307"],
/// );
/// ```
pub fn analyze(text: &str) -> Vec<String> {
    let words = words(text);
    let mut terms = Vec::new();
    for lower in &words {
        if is_stop_word(lower) {
            continue;
        }
        let mut term = stemmer().stem(lower).into_owned();
        if term.len() > MAX_TERM_LEN {
            let mut end = MAX_TERM_LEN;
            while !term.is_char_boundary(end) {
                end -= 1;
            }
            term.truncate(end);
        }
        terms.push(term);
    }
    terms.extend(super::dates::date_terms(&words));
    terms
}

/// A document's analyzed text: its distinct terms (sorted) with their
/// counts, and its length in terms. What backends index for BM25.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermCounts {
    /// Distinct terms, sorted.
    pub terms: Vec<String>,
    /// `tfs[i]`: how often `terms[i]` occurs.
    pub tfs: Vec<u32>,
    /// How many terms the text has (repeats counted).
    pub len: u32,
}

impl TermCounts {
    /// The term counts of `text` (see [`analyze`]).
    pub fn of(text: &str) -> Self {
        let all = analyze(text);
        let len = u32::try_from(all.len()).unwrap_or(u32::MAX);
        let mut counts: HashMap<String, u32> = HashMap::new();
        for term in all {
            *counts.entry(term).or_default() += 1;
        }
        let mut pairs: Vec<(String, u32)> = counts.into_iter().collect();
        pairs.sort_unstable();
        let (terms, tfs) = pairs.into_iter().unzip();
        Self { terms, tfs, len }
    }

    /// How often `term` occurs (0 when it does not).
    pub fn tf(&self, term: &str) -> u32 {
        self.terms
            .binary_search_by(|t| t.as_str().cmp(term))
            .map_or(0, |i| self.tfs[i])
    }
}

/// A candidate document as BM25 sees it ([`bm25_rank_weighted`]): its
/// length and how often each query term occurs in it. [`TermCounts`] is
/// one; a backend that reads only the query terms' postings may keep a
/// compact form that knows a term by its place in the query.
pub trait Bm25Doc {
    /// How many terms the document has (repeats counted).
    fn length(&self) -> u32;
    /// How often the query's `i`-th term, `term`, occurs (0 when it does
    /// not).
    fn tf(&self, i: usize, term: &str) -> u32;
}

impl Bm25Doc for TermCounts {
    fn length(&self) -> u32 {
        self.len
    }

    fn tf(&self, _: usize, term: &str) -> u32 {
        TermCounts::tf(self, term)
    }
}

impl<T: Bm25Doc + ?Sized> Bm25Doc for &T {
    fn length(&self) -> u32 {
        (**self).length()
    }

    fn tf(&self, i: usize, term: &str) -> u32 {
        (**self).tf(i, term)
    }
}

/// The distinct analyzed terms of a query, in order of first appearance.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in analyze(text) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// BM25 parameters and scoring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation (0: none, 1: full).
    pub b: f64,
}

/// The parameters every backend uses.
pub const BM25: Bm25 = Bm25 { k1: 1.2, b: 0.75 };

impl Bm25 {
    /// Inverse document frequency of a term in `df` of `docs` documents
    /// (never negative).
    pub fn idf(&self, docs: u64, df: u64) -> f64 {
        let (n, df) = (docs.max(df) as f64, df as f64);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// One term's contribution: `idf` weighted by its count `tf` in a
    /// document of `len` terms, where documents average `avg_len`.
    pub fn term_score(&self, idf: f64, tf: u32, len: u32, avg_len: f64) -> f64 {
        if tf == 0 {
            return 0.0;
        }
        let tf = f64::from(tf);
        let norm = if avg_len > 0.0 {
            1.0 - self.b + self.b * f64::from(len) / avg_len
        } else {
            1.0
        };
        idf * tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
    }
}

/// Collection statistics for BM25: how many documents, how many terms in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CorpusStats {
    /// Documents.
    pub docs: u64,
    /// Terms over all documents.
    pub total_len: u64,
}

impl CorpusStats {
    /// Mean document length (0 for an empty corpus).
    pub fn avg_len(&self) -> f64 {
        if self.docs == 0 {
            0.0
        } else {
            self.total_len as f64 / self.docs as f64
        }
    }
}

/// Score candidates by BM25: `candidates` are `(key, term counts)` of every
/// document the caller may read that holds at least one query term (their
/// number per term is its document frequency); returns the best `limit`
/// as `(key, score)`, highest first, ties by key.
///
/// The key identifies a document and orders ties; backends use
/// [`RankKey`] (newest first, then id) so that every backend breaks ties
/// alike.
pub fn bm25_rank<K, D, I>(
    terms: &[String],
    stats: CorpusStats,
    candidates: I,
    limit: usize,
) -> Vec<(K, f32)>
where
    K: Ord + Clone,
    D: Bm25Doc,
    I: IntoIterator<Item = (K, D)>,
{
    let weighted: Vec<(String, f64)> = terms.iter().map(|t| (t.clone(), 1.0)).collect();
    bm25_rank_weighted(&weighted, stats, candidates, limit)
}

/// [`bm25_rank`] with a weight per query term (an expanded query: see
/// [`Expansion`]); candidates must hold at least one of the terms.
///
/// A key is cloned only for the documents that score; a backend may rank
/// by borrowed keys and own only the best.
pub fn bm25_rank_weighted<K, D, I>(
    terms: &[(String, f64)],
    stats: CorpusStats,
    candidates: I,
    limit: usize,
) -> Vec<(K, f32)>
where
    K: Ord + Clone,
    D: Bm25Doc,
    I: IntoIterator<Item = (K, D)>,
{
    let candidates: Vec<(K, D)> = candidates.into_iter().collect();
    let mut df = vec![0u64; terms.len()];
    // Every candidate's counts in one row-major matrix (one allocation).
    let mut tfs = Vec::with_capacity(candidates.len() * terms.len());
    for (_, doc) in &candidates {
        for (i, (t, _)) in terms.iter().enumerate() {
            let tf = doc.tf(i, t);
            if tf > 0 {
                df[i] += 1;
            }
            tfs.push(tf);
        }
    }
    let idf: Vec<f64> = df
        .iter()
        .zip(terms)
        .map(|(&d, (_, weight))| weight * BM25.idf(stats.docs, d))
        .collect();
    let avg = stats.avg_len();
    let scored = candidates
        .iter()
        .zip(tfs.chunks(terms.len().max(1)))
        .filter_map(|((key, doc), tfs)| {
            let len = doc.length();
            let score: f64 = tfs
                .iter()
                .zip(&idf)
                .map(|(&tf, &idf)| BM25.term_score(idf, tf, len, avg))
                .sum();
            let score = score as f32;
            (score > 0.0).then(|| (key.clone(), score))
        })
        .collect();
    top_by_score(scored, limit)
}

/// Pseudo-relevance feedback (RM3-style query expansion): the best
/// [`Expansion::docs`] documents of a first BM25 round lend their most
/// characteristic terms to the query, which is then scored again.
///
/// It finds what the query's words miss ("What does Melanie do to destress?"
/// finds the turn about running once the first round's turns bring in
/// "run" and "clear"); the original terms keep weight 1, the expansion
/// terms share [`Expansion::weight`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expansion {
    /// How many first-round documents give terms.
    pub docs: usize,
    /// How many terms are added at most.
    pub terms: usize,
    /// The added terms' total weight (each gets `weight / terms`).
    pub weight: f64,
    /// How many of the first round's best documents count a feedback
    /// term's document frequency ([`Expansion::select_from`]).
    pub pool: usize,
}

/// The expansion every backend uses (measured on LoCoMo, see
/// `docs/retrieval.md`).
pub const EXPANSION: Expansion = Expansion {
    docs: 5,
    terms: 10,
    weight: 2.0,
    pool: 100,
};

impl Expansion {
    /// The terms of the `feedback` documents (a first round's best) worth
    /// adding to `query`: each term not already in it, weighted by
    /// `Σ tf / len × idf` over the documents, where `df` gives a term's
    /// document frequency among the documents the caller may read. The best
    /// [`Expansion::terms`], ties by term.
    pub fn select<'a>(
        &self,
        query: &[String],
        feedback: impl IntoIterator<Item = &'a TermCounts>,
        stats: CorpusStats,
        df: impl Fn(&str) -> u64,
    ) -> Vec<String> {
        let mut weights: std::collections::BTreeMap<&str, f64> = std::collections::BTreeMap::new();
        // A term in several feedback documents: its frequency is looked up
        // once (in memory it is a walk of the term's postings).
        let mut idfs: HashMap<&str, f64> = HashMap::new();
        for counts in feedback.into_iter().take(self.docs) {
            for (term, &tf) in counts.terms.iter().zip(&counts.tfs) {
                // A date term is never lent: the feedback documents often
                // share one (a conversation's day), and adding it would
                // narrow a query that named no date to that day.
                if query.contains(term) || super::dates::is_date_term(term) {
                    continue;
                }
                let idf = *idfs
                    .entry(term.as_str())
                    .or_insert_with(|| BM25.idf(stats.docs, df(term).max(1)));
                *weights.entry(term.as_str()).or_default() +=
                    f64::from(tf) / f64::from(counts.len.max(1)) * idf;
            }
        }
        let mut ranked: Vec<(&str, f64)> = weights.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.0.cmp(b.0))
        });
        ranked
            .into_iter()
            .take(self.terms)
            .map(|(t, _)| t.to_owned())
            .collect()
    }

    /// The terms a first round's best documents lend the query, as
    /// [`Expansion::select`] picks them, with each term's document frequency
    /// counted among the round's `candidates` (every document the caller may
    /// read that the query's filters keep and that holds a query term, the
    /// `feedback` documents among them) instead of the whole collection.
    ///
    /// Every backend has the candidates in hand, so picking costs no
    /// further lookup however common a term is (counting a term that is in
    /// every document over everything the caller may read was the bulk of a
    /// hybrid query at 100,000 records), and a term the candidates mostly
    /// share (a speaker's name in a conversation) weighs little.
    pub fn select_among<'a>(
        &self,
        query: &[String],
        feedback: &[&'a TermCounts],
        candidates: impl IntoIterator<Item = &'a TermCounts>,
    ) -> Vec<String> {
        let feedback = &feedback[..feedback.len().min(self.docs)];
        let pool: std::collections::HashSet<&str> = feedback
            .iter()
            .flat_map(|c| c.terms.iter().map(String::as_str))
            .filter(|t| !query.iter().any(|q| q == t))
            .collect();
        let mut df: HashMap<&str, u64> = HashMap::new();
        let mut docs = 0u64;
        for counts in candidates {
            docs += 1;
            for term in &counts.terms {
                if let Some(&t) = pool.get(term.as_str()) {
                    *df.entry(t).or_default() += 1;
                }
            }
        }
        let stats = CorpusStats { docs, total_len: 0 };
        self.select(query, feedback.iter().copied(), stats, |t| {
            df.get(t).copied().unwrap_or(0)
        })
    }

    /// The terms the first round lends `query`: `ranked` is the first
    /// round's best [`Expansion::pool`] documents, best first (BM25 over the
    /// query's terms); the first [`Expansion::docs`] are the feedback, and a
    /// feedback term's document frequency is counted among all of `ranked`
    /// ([`Expansion::select_among`]).
    ///
    /// Only the best documents' whole term lists are needed, so a backend
    /// that finds candidates through postings of the query's terms reads no
    /// other document's; counting among every first-round candidate gave
    /// the same LoCoMo recall (`docs/retrieval.md`).
    pub fn select_from(&self, query: &[String], ranked: &[&'_ TermCounts]) -> Vec<String> {
        let ranked = &ranked[..ranked.len().min(self.pool.max(self.docs))];
        let feedback = &ranked[..ranked.len().min(self.docs)];
        self.select_among(query, feedback, ranked.iter().copied())
    }

    /// The expanded query: `query`'s terms at weight 1, then `added` at
    /// `weight / terms` each.
    pub fn weighted(&self, query: &[String], added: &[String]) -> Vec<(String, f64)> {
        let each = if self.terms == 0 {
            0.0
        } else {
            self.weight / self.terms as f64
        };
        query
            .iter()
            .map(|t| (t.clone(), 1.0))
            .chain(added.iter().map(|t| (t.clone(), each)))
            .collect()
    }
}

/// The best `limit` of `(key, score)`, highest score first, ties by key.
pub fn top_by_score<K: Ord>(mut scored: Vec<(K, f32)>, limit: usize) -> Vec<(K, f32)> {
    let order = |a: &(K, f32), b: &(K, f32)| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    };
    if limit == 0 {
        return Vec::new();
    }
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, order);
        scored.truncate(limit);
    }
    scored.sort_by(order);
    scored
}

/// How [`fuse`] weighs the retrievers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The RRF constant: larger flattens the difference between ranks.
    pub k: f64,
    /// Weight of the full-text list.
    pub full_text: f64,
    /// Weight of the vector list.
    pub vector: f64,
    /// How many candidates the full-text list contributes, per result asked
    /// for (at least [`Fusion::MIN_CANDIDATES`]).
    pub depth: usize,
    /// How many candidates the vector list contributes, per result asked
    /// for (at least [`Fusion::MIN_VECTOR_CANDIDATES`]). Fewer than the
    /// full text's: at half the weight, for ten results a vector rank past
    /// the thirtieth scores below every full-text rank of the first fifty,
    /// so it can only nudge a record the full text found too; and on
    /// PostgreSQL the HNSW search costs in proportion to the list
    /// (docs/retrieval.md).
    pub vector_depth: usize,
}

impl Fusion {
    /// The fewest candidates the full-text list contributes.
    pub const MIN_CANDIDATES: usize = 50;
    /// The fewest candidates the vector list contributes.
    pub const MIN_VECTOR_CANDIDATES: usize = 30;

    /// How many candidates the full-text list contributes for `top_k`
    /// results.
    pub fn candidates(&self, top_k: usize) -> usize {
        top_k.saturating_mul(self.depth).max(Self::MIN_CANDIDATES)
    }

    /// How many candidates the vector list contributes for `top_k` results.
    pub fn vector_candidates(&self, top_k: usize) -> usize {
        top_k
            .saturating_mul(self.vector_depth)
            .max(Self::MIN_VECTOR_CANDIDATES)
    }

    fn weight(&self, retriever: Retriever) -> f64 {
        match retriever {
            Retriever::FullText => self.full_text,
            Retriever::Vector => self.vector,
        }
    }
}

/// The fusion every backend uses (measured on LoCoMo, see `docs/retrieval.md`).
pub const FUSION: Fusion = Fusion {
    k: 5.0,
    full_text: 1.0,
    vector: 0.5,
    depth: 5,
    vector_depth: 3,
};

/// How backends identify ranked documents: ties of score go to the newest
/// (`created_at` descending), then to the smallest id.
pub type RankKey = (std::cmp::Reverse<chrono::DateTime<chrono::Utc>>, String);

/// The [`RankKey`] of a record created at `created_at` with id `id`.
pub fn rank_key(created_at: chrono::DateTime<chrono::Utc>, id: &str) -> RankKey {
    (std::cmp::Reverse(created_at), id.to_owned())
}

/// A fused result: its key, fused score and what each retriever said.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<K> {
    /// The record's key.
    pub id: K,
    /// The fused score (higher is better).
    pub score: f32,
    /// Each retriever that found it, in [`Retriever`] order.
    pub retrievers: Vec<RetrieverScore>,
}

/// Fuse ranked lists (each best first) by weighted reciprocal rank; the
/// best `limit`, highest fused score first, ties by key.
pub fn fuse<K: Ord + Clone>(
    fusion: &Fusion,
    lists: &[(Retriever, Vec<(K, f32)>)],
    limit: usize,
) -> Vec<Fused<K>> {
    let mut by_id: std::collections::BTreeMap<&K, Fused<K>> = std::collections::BTreeMap::new();
    for (retriever, list) in lists {
        for (i, (id, score)) in list.iter().enumerate() {
            let rank = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let entry = by_id.entry(id).or_insert_with(|| Fused {
                id: id.clone(),
                score: 0.0,
                retrievers: Vec::new(),
            });
            entry.score += (fusion.weight(*retriever) / (fusion.k + f64::from(rank))) as f32;
            entry.retrievers.push(RetrieverScore {
                retriever: *retriever,
                rank,
                score: *score,
            });
        }
    }
    let mut fused: Vec<Fused<K>> = by_id.into_values().collect();
    for f in &mut fused {
        f.retrievers.sort_by_key(|r| r.retriever);
    }
    fused.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.id.cmp(&b.id))
    });
    fused.truncate(limit);
    fused
}

/// The final ranking of a query's retriever lists: one list keeps its
/// own scores (cut to `limit`), several are [`fuse`]d with [`FUSION`].
pub fn combine<K: Ord + Clone>(
    lists: Vec<(Retriever, Vec<(K, f32)>)>,
    limit: usize,
) -> Vec<Fused<K>> {
    if lists.len() == 1 {
        let (retriever, mut list) = lists
            .into_iter()
            .next()
            .unwrap_or((Retriever::Vector, Vec::new()));
        list.truncate(limit);
        single(retriever, list)
    } else {
        fuse(&FUSION, &lists, limit)
    }
}

/// A single retriever's list as fused results (scores and ranks kept).
pub fn single<K>(retriever: Retriever, list: Vec<(K, f32)>) -> Vec<Fused<K>> {
    list.into_iter()
        .enumerate()
        .map(|(i, (id, score))| Fused {
            id,
            score,
            retrievers: vec![RetrieverScore {
                retriever,
                rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
                score,
            }],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The term counts of each text.
    fn counts(texts: &[&str]) -> Vec<TermCounts> {
        texts.iter().map(|t| TermCounts::of(t)).collect()
    }

    #[test]
    fn expansion_never_lends_a_date_term() {
        let docs = counts(&[
            "Nate (7 July, 2023): the turtles love the new tank",
            "Joanna (7 July, 2023): turtles and a tank",
            "Nate (1 May, 2022): a movie night",
        ]);
        assert!(docs[0].tf("d20230707") == 1 && docs[0].tf("m202307") == 1);
        let ranked: Vec<&TermCounts> = docs.iter().collect();
        let all = Expansion {
            docs: 2,
            terms: 100,
            weight: 2.0,
            pool: 100,
        };
        let added = all.select_from(&query_terms("turtles"), &ranked);
        assert!(added.contains(&"tank".to_owned()), "{added:?}");
        assert!(
            !added
                .iter()
                .any(|t| t.starts_with("d2023") || t.starts_with("m2023")),
            "{added:?}"
        );
    }

    #[test]
    fn expansion_weighs_terms_by_their_frequency_among_the_candidates() {
        let docs = counts(&[
            "melanie went running to clear her head",
            "melanie painted a sunset",
            "melanie and the kids went camping",
            "caroline went running too",
        ]);
        let query = query_terms("melanie");
        let feedback: Vec<&TermCounts> = docs.iter().take(1).collect();
        let expansion = Expansion {
            docs: 5,
            terms: 2,
            weight: 2.0,
            pool: 100,
        };
        // "went" and "run" are in two of the four candidates, "clear" and
        // "head" in one: the rarer ones are the characteristic ones.
        let added = expansion.select_among(&query, &feedback, docs.iter());
        assert_eq!(added, ["clear", "head"]);
        // Only the feedback's terms are candidates for adding, never the query's.
        let all = Expansion {
            terms: 100,
            ..expansion
        }
        .select_among(&query, &feedback, docs.iter());
        assert_eq!(all, ["clear", "head", "run", "went"]);
        assert!(expansion.select_among(&query, &[], docs.iter()).is_empty());
        // From a ranked first round: the first `docs` lend terms, the first
        // `pool` count them. A document past the pool does not count.
        let first = counts(&[
            "melanie went running to clear her head",
            "melanie painted a sunset",
            "clear skies and a clear head for caroline",
        ]);
        let ranked: Vec<&TermCounts> = first.iter().collect();
        let pooled = Expansion {
            docs: 1,
            terms: 2,
            pool: 2,
            ..expansion
        };
        // Within two documents each feedback term is in one: ties by term.
        assert_eq!(pooled.select_from(&query, &ranked), ["clear", "head"]);
        // Within three, "clear" and "head" are in two: "run" and "went" are rarer.
        let wide = Expansion { pool: 3, ..pooled };
        assert_eq!(wide.select_from(&query, &ranked), ["run", "went"]);
        assert!(pooled.select_from(&query, &[]).is_empty());
    }

    #[test]
    fn the_analyzer_stems_and_drops_stop_words() {
        assert_eq!(
            analyze("When did Caroline go to the LGBTQ support group?"),
            vec!["carolin", "go", "lgbtq", "support", "group"]
        );
        assert!(analyze("the and of").is_empty());
        let long = "x".repeat(200);
        assert_eq!(analyze(&long)[0].len(), MAX_TERM_LEN);
        let counts = TermCounts::of("runs running ran, the runner runs");
        assert_eq!(counts.len, 5);
        assert_eq!(counts.tf("run"), 3);
        assert_eq!(counts.tf("absent"), 0);
        assert_eq!(query_terms("run runs ran"), vec!["run", "ran"]);
    }

    #[test]
    fn bm25_prefers_rare_terms_and_short_documents() {
        let a = TermCounts::of("apple banana");
        let b = TermCounts::of("apple cherry");
        let c = TermCounts::of("apple banana cherry date elderberry fig grape");
        let stats = CorpusStats {
            docs: 3,
            total_len: u64::from(a.len + b.len + c.len),
        };
        let terms = query_terms("apple cherry");
        let ranked = bm25_rank(&terms, stats, [("a", &a), ("b", &b), ("c", &c)], 10);
        assert_eq!(ranked[0].0, "b", "both terms, short: {ranked:?}");
        assert_eq!(ranked.len(), 3);
        assert!(ranked[1].1 > ranked[2].1 || ranked[1].0 == "c");
        // idf is never negative, even for a term in every document.
        assert!(BM25.idf(3, 3) > 0.0);
        assert!(BM25.idf(3, 1) > BM25.idf(3, 2));
        assert!(bm25_rank(&terms, stats, [("a", &a)], 0).is_empty());
    }

    #[test]
    fn fusion_rewards_agreement_and_keeps_sources() {
        let lists = vec![
            (
                Retriever::FullText,
                vec![("x".to_owned(), 9.0), ("y".to_owned(), 5.0)],
            ),
            (
                Retriever::Vector,
                vec![("y".to_owned(), 0.9), ("z".to_owned(), 0.8)],
            ),
        ];
        let fused = fuse(&FUSION, &lists, 10);
        assert_eq!(fused[0].id, "y", "found by both: {fused:?}");
        assert_eq!(fused[0].retrievers.len(), 2);
        assert_eq!(fused[0].retrievers[0].retriever, Retriever::FullText);
        assert_eq!(fused[0].retrievers[0].rank, 2);
        // x and z tie on rank 1 of one list... x is rank 1, z rank 2.
        assert_eq!(fused[1].id, "x");
        assert_eq!(fuse(&FUSION, &lists, 1).len(), 1);
        let one = single(Retriever::Vector, vec![("a", 0.5)]);
        assert_eq!(one[0].retrievers[0].rank, 1);
        assert_eq!(FUSION.candidates(1), Fusion::MIN_CANDIDATES);
        assert_eq!(FUSION.candidates(100), 500);
        assert_eq!(FUSION.vector_candidates(1), Fusion::MIN_VECTOR_CANDIDATES);
        assert_eq!(FUSION.vector_candidates(100), 300);
    }
}
