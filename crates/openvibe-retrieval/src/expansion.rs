//! Pseudo-relevance feedback: the terms a first round lends the query.

/// Maps and sets keyed by terms, hashed with foldhash: a query's expansion
/// looks up every term of its hundred best documents.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

use crate::analyzer::TermCounts;
use crate::bm25::{BM25, CorpusStats};

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
        let mut idfs: HashMap<&str, f64> = HashMap::default();
        for counts in feedback.into_iter().take(self.docs) {
            for (term, &tf) in counts.terms.iter().zip(&counts.tfs) {
                // A date term is never lent: the feedback documents often
                // share one (a conversation's day), and adding it would
                // narrow a query that named no date to that day.
                if query.contains(term) || crate::dates::is_date_term(term) {
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
        let pool: HashSet<&str> = feedback
            .iter()
            .flat_map(|c| c.terms.iter().map(String::as_str))
            .filter(|t| !query.iter().any(|q| q == t))
            .collect();
        let mut df: HashMap<&str, u64> = HashMap::default();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::query_terms;

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
}
