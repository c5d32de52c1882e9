//! BM25: the Robertson–Spärck Jones weight every backend scores full text with.

use crate::analyzer::TermCounts;
use crate::fusion::top_by_score;

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
/// [`RankKey`](crate::RankKey) (newest first, then id) so that every backend breaks ties
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
/// [`Expansion`](crate::Expansion)); candidates must hold at least one of the terms.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::query_terms;

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
}
