//! A record/replay embedder: record a real model's sentence vectors once
//! into a cassette file (JSON lines), then replay them offline — the
//! embedding counterpart of [`RecordReplayProvider`](super::RecordReplayProvider).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use openvibe_protocols::{EmbedError, Embedder, truncate_chars};
use serde::{Deserialize, Serialize};

use super::replay::lock;

/// One line of an embedding cassette: the model, the text and its vector
/// (each float's IEEE-754 bits as 8 lowercase hex digits: exact, whatever
/// the platform's float printing).
#[derive(Serialize, Deserialize)]
struct Entry {
    model: String,
    text: String,
    vector: String,
}

enum Mode {
    Record {
        inner: Arc<dyn Embedder>,
        /// The texts in the file already (loaded when recording starts), so
        /// each text is written once; held while appending, so concurrent
        /// calls never interleave lines.
        written: Mutex<Option<HashSet<String>>>,
    },
    Replay {
        vectors: HashMap<String, Vec<f32>>,
        model: String,
        dimensions: usize,
    },
}

/// An [`Embedder`] that records another embedder's vectors into a cassette
/// file, or replays them from it, so that an example or a test ranks memory
/// by the meaning a real model gave it, offline and identically on every
/// machine.
///
/// A cassette is a JSON-lines file, one `{"model", "text", "vector"}` object
/// per text, each text once. Recording appends the texts the file does not
/// hold yet (delete it to re-record from scratch). Replaying a text that was
/// never recorded is [`EmbedError::NotRecorded`]; a cassette whose lines name
/// two models or two vector sizes is refused when it is loaded.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use openvibe_primitives::testing::RecordReplayEmbedder;
/// use openvibe_protocols::Embedder;
///
/// let cassette = r#"{"model":"m","text":"hello","vector":"3f80000000000000"}"#;
/// let replay = RecordReplayEmbedder::replay_str(cassette, "inline")?;
/// assert_eq!((replay.model_id(), replay.dimensions()), ("m", 2));
/// assert_eq!(replay.embed(&["hello".to_owned()]).await?, [[1.0, 0.0]]);
/// assert!(replay.embed(&["goodbye".to_owned()]).await.is_err());
/// # Ok::<(), openvibe_protocols::EmbedError>(())
/// # }).unwrap();
/// ```
pub struct RecordReplayEmbedder {
    cassette: PathBuf,
    mode: Mode,
}

impl RecordReplayEmbedder {
    /// Forward every call to `inner` and append each text not in `cassette`
    /// yet with its vector (the file and its parent directories are created
    /// on the first new text). Errors of `inner` are passed through and
    /// nothing is recorded for them.
    pub fn record(inner: Arc<dyn Embedder>, cassette: impl Into<PathBuf>) -> Self {
        Self {
            cassette: cassette.into(),
            mode: Mode::Record {
                inner,
                written: Mutex::new(None),
            },
        }
    }

    /// Answer from a recorded cassette; never calls a model.
    ///
    /// # Errors
    /// [`EmbedError::Model`] naming the file when it cannot be read or is
    /// not a cassette (see [`RecordReplayEmbedder::replay_str`]).
    pub fn replay(cassette: impl Into<PathBuf>) -> Result<Self, EmbedError> {
        let cassette = cassette.into();
        let text = std::fs::read_to_string(&cassette).map_err(|e| {
            EmbedError::Model(format!(
                "could not read embedding cassette {}: {e}; record it first with RecordReplayEmbedder::record",
                cassette.display()
            ))
        })?;
        Self::replay_str(&text, cassette)
    }

    /// Replay a cassette given as text (e.g. embedded with `include_str!`);
    /// `name` identifies it in error messages.
    ///
    /// # Errors
    /// [`EmbedError::Model`] naming the cassette and line when a line is not
    /// an entry, its vector is not hex floats, or it names another model or
    /// vector size than the first line; and when the cassette is empty.
    pub fn replay_str(text: &str, name: impl Into<PathBuf>) -> Result<Self, EmbedError> {
        let cassette = name.into();
        let fail = |line: usize, message: String| {
            EmbedError::Model(format!(
                "embedding cassette {} line {line}: {message}; fix or re-record the cassette",
                cassette.display()
            ))
        };
        let mut vectors = HashMap::new();
        let mut shape: Option<(String, usize)> = None;
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(line)
                .map_err(|e| fail(index + 1, format!("not a recorded vector ({e})")))?;
            let vector = decode(&entry.vector).ok_or_else(|| {
                fail(
                    index + 1,
                    "the vector is not a run of 8-digit hex floats".to_owned(),
                )
            })?;
            match &shape {
                None => shape = Some((entry.model.clone(), vector.len())),
                Some((model, size)) if *model != entry.model || *size != vector.len() => {
                    return Err(fail(
                        index + 1,
                        format!(
                            "model `{}` with {} dimensions, while the first line has `{model}` with {size}",
                            entry.model,
                            vector.len()
                        ),
                    ));
                }
                Some(_) => {}
            }
            vectors.insert(entry.text, vector);
        }
        let Some((model, dimensions)) = shape else {
            return Err(EmbedError::Model(format!(
                "embedding cassette {} holds no vectors; record it first with RecordReplayEmbedder::record",
                cassette.display()
            )));
        };
        Ok(Self {
            cassette,
            mode: Mode::Replay {
                vectors,
                model,
                dimensions,
            },
        })
    }

    /// The cassette file.
    pub fn cassette(&self) -> &Path {
        &self.cassette
    }

    /// True when replaying, false when recording.
    pub fn is_replaying(&self) -> bool {
        matches!(self.mode, Mode::Replay { .. })
    }

    /// Append the entries of `texts` not written yet.
    fn append(
        &self,
        written: &Mutex<Option<HashSet<String>>>,
        model: &str,
        texts: &[String],
        vectors: &[Vec<f32>],
    ) -> Result<(), EmbedError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            EmbedError::Model(format!(
                "could not {what} embedding cassette {}: {e}",
                self.cassette.display()
            ))
        };
        let mut written = lock(written);
        let seen = written.get_or_insert_with(|| {
            std::fs::read_to_string(&self.cassette)
                .map(|text| {
                    text.lines()
                        .filter_map(|line| serde_json::from_str::<Entry>(line).ok())
                        .map(|entry| entry.text)
                        .collect()
                })
                .unwrap_or_default()
        });
        let mut lines = String::new();
        for (text, vector) in texts.iter().zip(vectors) {
            if !seen.insert(text.clone()) {
                continue;
            }
            let entry = Entry {
                model: model.to_owned(),
                text: text.clone(),
                vector: encode(vector),
            };
            lines.push_str(
                &serde_json::to_string(&entry).map_err(|e| fail("serialize an entry for", &e))?,
            );
            lines.push('\n');
        }
        if lines.is_empty() {
            return Ok(());
        }
        super::replay::append_to(&self.cassette, &lines).map_err(|(what, e)| fail(what, &e))
    }
}

/// Each float's bits as 8 hex digits.
fn encode(vector: &[f32]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(vector.len() * 8);
    for x in vector {
        let _ = write!(out, "{:08x}", x.to_bits());
    }
    out
}

/// [`encode`]'s floats back, or `None` when `hex` is not such a run.
fn decode(hex: &str) -> Option<Vec<f32>> {
    if !hex.len().is_multiple_of(8) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(8)
        .map(|i| {
            let digits = hex.get(i..i + 8)?;
            u32::from_str_radix(digits, 16).ok().map(f32::from_bits)
        })
        .collect()
}

#[async_trait]
impl Embedder for RecordReplayEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.mode {
            Mode::Record { inner, written } => {
                let vectors = inner.embed(texts).await?;
                self.append(written, inner.model_id(), texts, &vectors)?;
                Ok(vectors)
            }
            Mode::Replay { vectors, .. } => texts
                .iter()
                .map(|text| {
                    vectors
                        .get(text)
                        .cloned()
                        .ok_or_else(|| EmbedError::NotRecorded {
                            text: truncate_chars(text, 80).to_owned(),
                            cassette: self.cassette.display().to_string(),
                        })
                })
                .collect(),
        }
    }

    fn dimensions(&self) -> usize {
        match &self.mode {
            Mode::Record { inner, .. } => inner.dimensions(),
            Mode::Replay { dimensions, .. } => *dimensions,
        }
    }

    fn model_id(&self) -> &str {
        match &self.mode {
            Mode::Record { inner, .. } => inner.model_id(),
            Mode::Replay { model, .. } => model,
        }
    }
}

impl std::fmt::Debug for RecordReplayEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReplayEmbedder")
            .field("cassette", &self.cassette)
            .field(
                "mode",
                &if self.is_replaying() {
                    "replay"
                } else {
                    "record"
                },
            )
            .field("model", &self.model_id())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    /// A stand-in model: a text's vector is its length and its first byte.
    struct Lengths;

    #[async_trait]
    impl Embedder for Lengths {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|t| {
                    vec![
                        t.len() as f32,
                        f32::from(t.bytes().next().unwrap_or(0)) / 7.0,
                    ]
                })
                .collect())
        }
        fn dimensions(&self) -> usize {
            2
        }
        fn model_id(&self) -> &str {
            "lengths"
        }
    }

    fn texts(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[tokio::test]
    async fn what_was_recorded_replays_exactly_and_each_text_is_written_once() {
        let dir = std::env::temp_dir().join(format!("ov-embed-cassette-{}", std::process::id()));
        let path = dir.join("nested").join("embeddings.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        let recorder = RecordReplayEmbedder::record(Arc::new(Lengths), &path);
        let first = recorder
            .embed(&texts(&["alpha", "be", "alpha"]))
            .await
            .unwrap();
        // A second recorder over the same file adds only what is new.
        let again = RecordReplayEmbedder::record(Arc::new(Lengths), &path);
        again.embed(&texts(&["be", "gamma"])).await.unwrap();
        let lines = std::fs::read_to_string(&path).unwrap();
        assert_eq!(lines.lines().count(), 3, "{lines}");

        let replay = RecordReplayEmbedder::replay(&path).unwrap();
        assert!(replay.is_replaying());
        assert_eq!((replay.model_id(), replay.dimensions()), ("lengths", 2));
        assert_eq!(
            replay
                .embed(&texts(&["alpha", "be", "alpha"]))
                .await
                .unwrap(),
            first
        );
        let missing = replay.embed(&texts(&["gamma", "delta"])).await.unwrap_err();
        assert!(
            matches!(&missing, EmbedError::NotRecorded { text, .. } if text == "delta"),
            "{missing}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cassette_that_is_not_one_is_refused_with_its_line() {
        let err = |text: &str| {
            RecordReplayEmbedder::replay_str(text, "c.jsonl")
                .unwrap_err()
                .to_string()
        };
        assert!(err("").contains("holds no vectors"));
        assert!(err("{}\n").contains("line 1"));
        assert!(err(r#"{"model":"m","text":"a","vector":"3f80"}"#).contains("hex floats"));
        let two_models = concat!(
            r#"{"model":"m","text":"a","vector":"3f800000"}"#,
            "\n\n",
            r#"{"model":"n","text":"b","vector":"3f800000"}"#
        );
        assert!(err(two_models).contains("line 3: model `n`"));
        let two_sizes = concat!(
            r#"{"model":"m","text":"a","vector":"3f800000"}"#,
            "\n",
            r#"{"model":"m","text":"b","vector":"3f8000003f800000"}"#
        );
        assert!(err(two_sizes).contains("line 2"));
        assert!(RecordReplayEmbedder::replay("/nonexistent/c.jsonl").is_err());
    }

    proptest! {
        #[test]
        fn every_float_survives_the_cassette(bits in proptest::collection::vec(any::<u32>(), 0..40)) {
            let vector: Vec<f32> = bits.iter().copied().map(f32::from_bits).collect();
            let back = decode(&encode(&vector)).unwrap();
            let same: Vec<u32> = back.iter().map(|x| x.to_bits()).collect();
            prop_assert_eq!(same, bits);
        }

        #[test]
        fn decoding_never_panics(text in "\\PC{0,40}") {
            let _ = decode(&text);
        }
    }
}
