//! `openvibe-eval subjects`: same-subject detection on labelled statement
//! pairs, by meaning (MiniLM vectors with the analyzer) and by words alone.
//!
//! A pair file is JSON lines `{"a": "...", "b": "...", "label": "..."}`,
//! labels `duplicate`, `refines`, `contradicts` (the same subject) or
//! `unrelated`. Prints `EVAL subjects_f1 <value>` (by meaning) with its
//! precision and recall, the same by words alone (`subjects_f1_words`),
//! how many contradictions would be merged as duplicates
//! (`subjects_merged_contradictions`, which must be 0), and the confusion
//! tables.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use openvibe_memory::{SubjectScore, SubjectThresholds};
use openvibe_protocols::Embedder;

/// The labels, in table order.
pub const LABELS: [&str; 4] = ["duplicate", "refines", "contradicts", "unrelated"];

/// One labelled pair.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub label: String,
}

/// The default pair files: the tuning split and the held-out split.
pub fn default_files() -> Vec<PathBuf> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    vec![
        data.join("subject-pairs.jsonl"),
        data.join("subject-pairs-holdout.jsonl"),
    ]
}

/// The pairs of `path`, checked: every line a pair with a known label.
pub fn read(path: &Path) -> Result<Vec<Pair>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut pairs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let pair: Pair = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not a pair: {e}", path.display(), n + 1))?;
        if !LABELS.contains(&pair.label.as_str()) {
            return Err(format!(
                "{}:{}: unknown label `{}` (duplicate, refines, contradicts, unrelated)",
                path.display(),
                n + 1,
                pair.label
            ));
        }
        pairs.push(pair);
    }
    Ok(pairs)
}

/// Counts of one method: per true label, how many were judged the same
/// subject, not, and merged as duplicates.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    same: [usize; 4],
    not: [usize; 4],
    merged: [usize; 4],
}

impl Tally {
    fn add(&mut self, label: &str, score: &SubjectScore, t: &SubjectThresholds) {
        let i = LABELS.iter().position(|l| *l == label).unwrap_or(3);
        if score.same_subject(t) {
            self.same[i] += 1;
        } else {
            self.not[i] += 1;
        }
        if score.duplicate() {
            self.merged[i] += 1;
        }
    }

    /// Precision, recall and F1 of "the same subject".
    pub fn prf(&self) -> (f64, f64, f64) {
        let tp: usize = self.same[..3].iter().sum();
        let fp = self.same[3];
        let fn_: usize = self.not[..3].iter().sum();
        let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        let p = ratio(tp, tp + fp);
        let r = ratio(tp, tp + fn_);
        let f = if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        };
        (p, r, f)
    }

    /// The confusion table, one row per true label.
    pub fn table(&self, title: &str) -> String {
        let mut out = format!(
            "{title}\n  {:<12} {:>6} {:>6} {:>7}\n",
            "label", "same", "not", "merged"
        );
        for (i, label) in LABELS.iter().enumerate() {
            out.push_str(&format!(
                "  {label:<12} {:>6} {:>6} {:>7}\n",
                self.same[i], self.not[i], self.merged[i]
            ));
        }
        out
    }
}

/// Score every pair by words and by meaning; the `EVAL` lines, the tables,
/// and (when asked) one tab-separated line of features per pair.
pub async fn run(
    embedder: Arc<dyn Embedder>,
    pairs: &[Pair],
    t: &SubjectThresholds,
    mut dump: Option<&mut String>,
) -> Result<(Vec<String>, String), String> {
    let mut texts: Vec<String> = Vec::with_capacity(pairs.len() * 2);
    for pair in pairs {
        texts.push(pair.a.clone());
        texts.push(pair.b.clone());
    }
    let vectors = embedder.embed(&texts).await.map_err(|e| e.to_string())?;
    if vectors.len() != texts.len() {
        return Err(format!(
            "the embedder answered {} vectors for {} texts",
            vectors.len(),
            texts.len()
        ));
    }
    let (mut words, mut meaning) = (Tally::default(), Tally::default());
    for (i, pair) in pairs.iter().enumerate() {
        let by_meaning = SubjectScore::of(
            &pair.a,
            &pair.b,
            Some((&vectors[2 * i], &vectors[2 * i + 1])),
        );
        // The same terms, judged without the vectors.
        let by_words = SubjectScore {
            similarity: None,
            ..by_meaning
        };
        words.add(&pair.label, &by_words, t);
        meaning.add(&pair.label, &by_meaning, t);
        if let Some(dump) = dump.as_deref_mut() {
            dump.push_str(&format!(
                "{}\t{:.4}\t{}\t{:.4}\t{:.4}\t{}\t{}\t{}\n",
                pair.label,
                by_meaning.similarity.unwrap_or_default(),
                by_meaning.shared_terms,
                by_meaning.overlap,
                by_meaning.jaccard,
                u8::from(by_meaning.negation_differs),
                pair.a,
                pair.b
            ));
        }
    }
    let mut lines = Vec::new();
    for (suffix, tally) in [("", &meaning), ("_words", &words)] {
        let (p, r, f) = tally.prf();
        lines.push(format!("EVAL subjects_f1{suffix} {f:.4}"));
        lines.push(format!("EVAL subjects_precision{suffix} {p:.4}"));
        lines.push(format!("EVAL subjects_recall{suffix} {r:.4}"));
        lines.push(format!(
            "EVAL subjects_merged_contradictions{suffix} {}",
            tally.merged[2]
        ));
    }
    lines.push(format!("EVAL subjects_pairs {}", pairs.len()));
    let tables = format!(
        "{}{}",
        meaning.table("by meaning (all-MiniLM-L6-v2 + analyzer):"),
        words.table("by words (analyzer):")
    );
    Ok((lines, tables))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn all_pairs() -> Vec<Pair> {
        default_files()
            .iter()
            .flat_map(|f| read(f).unwrap())
            .collect()
    }

    #[test]
    fn the_labelled_set_has_every_label_and_300_pairs_at_least() {
        let pairs = all_pairs();
        assert!(pairs.len() >= 300, "{} pairs", pairs.len());
        for label in LABELS {
            let n = pairs.iter().filter(|p| p.label == label).count();
            assert!(n * 5 >= pairs.len(), "{label}: {n} of {}", pairs.len());
        }
    }

    #[test]
    fn a_bad_line_is_refused_with_its_place() {
        let dir = std::env::temp_dir().join(format!("ov-pairs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.jsonl");
        std::fs::write(&file, "{\"a\": \"x\", \"b\": \"y\", \"label\": \"same\"}\n").unwrap();
        let err = read(&file).unwrap_err();
        assert!(err.contains(":1: unknown label `same`"), "{err}");
        std::fs::write(&file, "{\"a\": \"x\"}\n").unwrap();
        assert!(read(&file).unwrap_err().contains(":1: not a pair"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The judge by meaning keeps its figures on both splits (a guard
    /// against regressions; `cargo xtask eval subjects` prints them), and
    /// merges no contradiction.
    #[tokio::test]
    async fn by_meaning_the_judge_keeps_its_figures() {
        let embedder: Arc<dyn Embedder> = Arc::new(
            openvibe_local_embed::LocalEmbedder::minilm()
                .expect("the local model (cargo xtask models fetch; test-all fetches it)"),
        );
        let pairs = all_pairs();
        let (lines, _) = run(embedder, &pairs, &SubjectThresholds::default(), None)
            .await
            .unwrap();
        let figure = |name: &str| -> f64 {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(&format!("EVAL {name} ")))
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(figure("subjects_f1") >= 0.88, "{lines:?}");
        assert!(
            figure("subjects_f1") > figure("subjects_f1_words") + 0.1,
            "{lines:?}"
        );
        assert_eq!(figure("subjects_merged_contradictions"), 0.0, "{lines:?}");
    }
}
