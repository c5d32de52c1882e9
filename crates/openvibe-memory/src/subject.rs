//! Whether two statements are about the same subject, and whether one only
//! restates the other: by meaning (sentence vectors) and by words (the
//! analyzer's terms) together.
//!
//! Reflection merges a new insight into an existing one only when it is a
//! [`SubjectScore::duplicate`] of it (a refinement or a contradiction is
//! never merged: it is stored beside it); the learn step proposes a belief
//! on the same subject as an active one as superseding or refining it.
//! `cargo xtask eval subjects` measures [`Subjects::same_subject`] on
//! labelled statement pairs (`crates/openvibe-eval/data/`).

use std::sync::Arc;

use openvibe_protocols::{Embedder, LlmProvider, LlmRequest, json_candidates, truncate_chars};
use openvibe_retrieval::{cosine, query_terms};
use tracing::Instrument;

use crate::MemoryError;

/// How a newer statement stands to an older one on the same subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relation {
    /// It says the same (merging them loses nothing).
    Duplicate,
    /// It narrows or adds to the older one, which still holds.
    Refines,
    /// Both cannot be true now.
    Contradicts,
    /// Another subject after all.
    Unrelated,
}

impl Relation {
    /// The relation's name as the model answers it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duplicate => "duplicate",
            Self::Refines => "refines",
            Self::Contradicts => "contradicts",
            Self::Unrelated => "unrelated",
        }
    }

    /// A relation by name (`agrees` is read as `duplicate`).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "duplicate" | "agrees" | "same" => Some(Self::Duplicate),
            "refines" => Some(Self::Refines),
            "contradicts" => Some(Self::Contradicts),
            "unrelated" => Some(Self::Unrelated),
            _ => None,
        }
    }

    /// The question put to a model: how `new` stands to `old`, answered as
    /// JSON `{"relation": "duplicate" | "refines" | "contradicts" | "unrelated"}`.
    pub fn request(model: &str, old: &str, new: &str) -> LlmRequest {
        LlmRequest::new(
            model,
            format!(
                "Held: {old}\nNew finding: {new}\n\nHow does the new finding stand to what is held? \
                 duplicate: it says the same; refines: it narrows or adds to it, and both hold; \
                 contradicts: both cannot be true now; unrelated: another subject. \
                 Answer with JSON: {{\"relation\": \"duplicate\"}} (or refines, contradicts, unrelated)."
            ),
        )
        .system("You compare a new finding with what a role already holds.")
        .temperature(0.0)
    }

    /// The relation in a model's answer: `{"relation": name}`, or the
    /// older `{"contradicts": true|false}` (false reads as `refines`).
    pub fn from_answer(text: &str) -> Option<Self> {
        for candidate in json_candidates(text) {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(candidate) else {
                continue;
            };
            if let Some(found) = value
                .get("relation")
                .and_then(serde_json::Value::as_str)
                .and_then(Self::parse)
            {
                return Some(found);
            }
            if let Some(contradicts) = value
                .get("contradicts")
                .and_then(serde_json::Value::as_bool)
            {
                return Some(if contradicts {
                    Self::Contradicts
                } else {
                    Self::Refines
                });
            }
        }
        None
    }

    /// Ask `llm` how `new` stands to `old` ([`Relation::request`]); an
    /// answer that names no relation is [`MemoryError::MalformedRelation`].
    pub async fn ask(
        llm: &dyn LlmProvider,
        model: &str,
        old: &str,
        new: &str,
    ) -> Result<Self, MemoryError> {
        let request = Self::request(model, old, new);
        let span = tracing::info_span!("llm_call", purpose = "relation", model = %request.model);
        let response = llm.call(&request).instrument(span).await?;
        Self::from_answer(&response.content).ok_or_else(|| MemoryError::MalformedRelation {
            excerpt: truncate_chars(&response.content, 120).to_owned(),
        })
    }
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How alike two statements are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubjectScore {
    /// Analyzed terms (stemmed, stop words dropped) the two share.
    pub shared_terms: usize,
    /// `shared_terms` over the shorter statement's terms (`0..=1`).
    pub overlap: f32,
    /// `shared_terms` over the union of their terms (`0..=1`).
    pub jaccard: f32,
    /// The cosine of their sentence vectors, when an embedder is set.
    pub similarity: Option<f32>,
    /// Whether exactly one of the two negates (`not`, `no longer`, …).
    pub negation_differs: bool,
    /// Whether their analyzed terms are the same, in the same order (they
    /// differ at most in case, stop words, punctuation and inflection).
    pub same_terms: bool,
}

/// Where [`SubjectScore`] draws its lines. The defaults were chosen on the
/// tuning split of `crates/openvibe-eval/data/` (see `docs/decisions.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct SubjectThresholds {
    /// With vectors: the same subject when the similarity, less
    /// [`SubjectThresholds::overlap_discount`] × the overlap of terms, is
    /// at least this. A sentence model's cosine rises with the words two
    /// statements share whatever they say about them; the discount asks
    /// them to be alike beyond their common words.
    pub similar: f32,
    /// See [`SubjectThresholds::similar`].
    pub overlap_discount: f32,
    /// With vectors, the same subject also when they share at least
    /// [`SubjectThresholds::min_shared`] terms and this share of the
    /// shorter one's: most of their words (a close rewording, whose
    /// cosine the discount would otherwise cancel).
    pub most_words: f32,
    /// Words only: the same subject when they share this many terms …
    pub min_shared: usize,
    /// … and at least this share of the shorter one's terms.
    pub overlap: f32,
}

impl Default for SubjectThresholds {
    fn default() -> Self {
        Self {
            similar: 0.32,
            overlap_discount: 0.7,
            most_words: 0.6,
            min_shared: 2,
            overlap: 1.0 / 3.0,
        }
    }
}

impl SubjectScore {
    /// The score of two statements from their text and, when known, their
    /// sentence vectors (both, of one length, or the cosine is left out).
    pub fn of(a: &str, b: &str, vectors: Option<(&[f32], &[f32])>) -> Self {
        Self::of_analyzed(&Analyzed::new(a), &Analyzed::new(b), vectors)
    }

    fn of_analyzed(a: &Analyzed, b: &Analyzed, vectors: Option<(&[f32], &[f32])>) -> Self {
        let shared = a.terms.iter().filter(|t| b.terms.contains(t)).count();
        let shorter = a.terms.len().min(b.terms.len());
        let union = a.terms.len() + b.terms.len() - shared;
        let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f32 / d as f32 };
        Self {
            shared_terms: shared,
            overlap: ratio(shared, shorter),
            jaccard: ratio(shared, union),
            similarity: vectors
                .filter(|(x, y)| !x.is_empty() && x.len() == y.len())
                .map(|(x, y)| cosine(x, y)),
            negation_differs: a.negates != b.negates,
            same_terms: a.terms == b.terms,
        }
    }

    /// How alike, for ranking statements on one subject: the similarity
    /// when known, else the overlap of terms.
    pub fn closeness(&self) -> f32 {
        self.similarity.unwrap_or(self.overlap)
    }

    /// Whether they are about the same subject under `t`: by meaning when
    /// the similarity is known, else by shared terms.
    pub fn same_subject(&self, t: &SubjectThresholds) -> bool {
        match self.similarity {
            Some(s) => {
                s - t.overlap_discount * self.overlap >= t.similar
                    || (self.shared_terms >= t.min_shared && self.overlap >= t.most_words)
            }
            None => self.shared_terms >= t.min_shared && self.overlap >= t.overlap,
        }
    }

    /// Whether one only restates the other, so that merging them loses
    /// nothing, without asking a model: the same terms in the same order
    /// and neither negating alone. Meaning alone cannot tell: "invoices
    /// paid by card are disputed less" and "… more" are as alike to a
    /// sentence model as two rewordings (`docs/decisions.md`).
    pub fn duplicate(&self) -> bool {
        self.same_terms && !self.negation_differs
    }
}

/// A statement as [`SubjectScore`] reads it: its analyzed terms, and
/// whether it negates.
struct Analyzed {
    terms: Vec<String>,
    negates: bool,
}

impl Analyzed {
    fn new(text: &str) -> Self {
        Self {
            terms: query_terms(text),
            negates: negates(text),
        }
    }
}

/// Whether `text` negates: a negating word or a contraction ending in
/// `n't`.
fn negates(text: &str) -> bool {
    const NEGATIONS: &[&str] = &[
        "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot",
    ];
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(str::to_lowercase)
        .any(|w| NEGATIONS.contains(&w.as_str()) || w.ends_with("n't"))
}

/// Judges whether statements share a subject: by meaning with an embedder,
/// by words without one (or when embedding fails, which is logged).
/// Two are equal when they judge alike (the same thresholds and the same
/// embedder, or none).
#[derive(Clone, Default)]
pub struct Subjects {
    embedder: Option<Arc<dyn Embedder>>,
    thresholds: SubjectThresholds,
}

impl std::fmt::Debug for Subjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subjects")
            .field("by_meaning", &self.embedder.is_some())
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

impl PartialEq for Subjects {
    fn eq(&self, other: &Self) -> bool {
        self.thresholds == other.thresholds
            && match (&self.embedder, &other.embedder) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

impl Subjects {
    /// By words only (the analyzer's terms).
    pub fn by_words() -> Self {
        Self::default()
    }

    /// By meaning: `embedder`'s sentence vectors with the analyzer's terms.
    pub fn by_meaning(embedder: Arc<dyn Embedder>) -> Self {
        Self {
            embedder: Some(embedder),
            thresholds: SubjectThresholds::default(),
        }
    }

    /// Use these thresholds.
    #[must_use]
    pub fn with_thresholds(mut self, thresholds: SubjectThresholds) -> Self {
        self.thresholds = thresholds;
        self
    }

    /// The thresholds in use.
    pub fn thresholds(&self) -> &SubjectThresholds {
        &self.thresholds
    }

    /// `statement` scored against each of `others` (one embedding call for
    /// all of them; `statement` analyzed once).
    pub async fn score_all(&self, statement: &str, others: &[&str]) -> Vec<SubjectScore> {
        let vectors = self.vectors(statement, others).await;
        let analyzed = Analyzed::new(statement);
        others
            .iter()
            .enumerate()
            .map(|(i, other)| {
                let pair = vectors
                    .as_ref()
                    .and_then(|v| Some((v.first()?.as_slice(), v.get(i + 1)?.as_slice())));
                SubjectScore::of_analyzed(&analyzed, &Analyzed::new(other), pair)
            })
            .collect()
    }

    /// `a` scored against `b`.
    pub async fn score(&self, a: &str, b: &str) -> SubjectScore {
        self.score_all(a, &[b])
            .await
            .pop()
            .unwrap_or_else(|| SubjectScore::of(a, b, None))
    }

    /// Whether `a` and `b` are about the same subject.
    pub async fn same_subject(&self, a: &str, b: &str) -> bool {
        self.score(a, b).await.same_subject(&self.thresholds)
    }

    /// The vectors of `statement` then `others`, or `None` without an
    /// embedder or when embedding fails (words still judge).
    async fn vectors(&self, statement: &str, others: &[&str]) -> Option<Vec<Vec<f32>>> {
        let embedder = self.embedder.as_ref()?;
        let mut texts = Vec::with_capacity(others.len() + 1);
        texts.push(statement.to_owned());
        texts.extend(others.iter().map(|s| (*s).to_owned()));
        match embedder.embed(&texts).await {
            Ok(vectors) if vectors.len() == texts.len() => Some(vectors),
            Ok(vectors) => {
                tracing::warn!(
                    asked = texts.len(),
                    got = vectors.len(),
                    "embedder answered the wrong number of vectors; judging subjects by words"
                );
                None
            }
            Err(error) => {
                tracing::warn!(%error, "embedding failed; judging subjects by words");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_alone_keep_the_analyzer_rule() {
        let t = SubjectThresholds::default();
        let old = "Deals with a VP sponsor close within 30 days";
        let new = "Since the pricing change, VP-sponsored deals stall in procurement";
        assert!(SubjectScore::of(old, new, None).same_subject(&t));
        assert!(!SubjectScore::of(old, "Webinar leads convert poorly", None).same_subject(&t));
    }

    #[test]
    fn a_negation_is_never_a_duplicate() {
        let t = SubjectThresholds::default();
        let a = "Webinar leads convert well";
        let b = "Webinar leads do not convert well";
        let score = SubjectScore::of(a, b, Some((&[1.0, 0.0], &[1.0, 0.0])));
        assert!(score.same_subject(&t));
        assert!(score.negation_differs);
        assert!(!score.duplicate());
        assert!(SubjectScore::of(a, "webinar lead converts well.", None).duplicate());
        assert!(!SubjectScore::of("card beats invoice", "invoice beats card", None).duplicate());
    }

    #[test]
    fn a_models_answer_names_the_relation() {
        assert_eq!(
            Relation::from_answer(r#"Sure: {"relation": "Refines"}"#),
            Some(Relation::Refines)
        );
        assert_eq!(
            Relation::from_answer(r#"{"contradicts": true}"#),
            Some(Relation::Contradicts)
        );
        assert_eq!(Relation::from_answer(r#"{"relation": "maybe"}"#), None);
        assert_eq!(Relation::from_answer("no JSON"), None);
    }

    #[test]
    fn vectors_of_another_length_are_left_out() {
        let score = SubjectScore::of("a b", "a b", Some((&[1.0], &[1.0, 0.0])));
        assert_eq!(score.similarity, None);
    }
}
