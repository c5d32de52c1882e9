//! The analyzer: text to the terms every backend indexes and searches.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::words::words;

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

/// How many stems each thread remembers (then it starts over).
pub const STEM_CACHE: usize = 65_536;

/// The term of a lowercase word: its Snowball stem, cut to
/// [`MAX_TERM_LEN`]. Stemming is most of the analyzer's cost and words
/// repeat (ranking candidates analyzes the same texts query after query),
/// so each thread remembers the stems it computed.
fn term_of(lower: &str) -> String {
    thread_local! {
        static STEMS: std::cell::RefCell<HashMap<String, String>> =
            std::cell::RefCell::new(HashMap::new());
    }
    STEMS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(term) = cache.get(lower) {
            return term.clone();
        }
        let mut term = stemmer().stem(lower).into_owned();
        if term.len() > MAX_TERM_LEN {
            let mut end = MAX_TERM_LEN;
            while !term.is_char_boundary(end) {
                end -= 1;
            }
            term.truncate(end);
        }
        if cache.len() >= STEM_CACHE {
            cache.clear();
        }
        cache.insert(lower.to_owned(), term.clone());
        term
    })
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
/// use openvibe_retrieval::analyze;
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
        terms.push(term_of(lower));
    }
    terms.extend(crate::dates::date_terms(&words));
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
