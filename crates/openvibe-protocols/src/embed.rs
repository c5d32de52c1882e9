//! Text embeddings: the [`Embedder`] trait and [`CachedEmbedder`], which
//! never asks its model for the same text twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use crate::LlmError;

/// What went wrong computing embeddings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The embedding service could not be reached or refused the request.
    #[error("embedding request failed: {0}")]
    Request(String),
    /// An embedding service failed (the provider's typed error: credentials,
    /// rate limits, server errors, timeouts, undecodable answers).
    #[error("embedding request failed: {0}")]
    Provider(#[from] LlmError),
    /// The model could not be loaded or run.
    #[error("embedding model error: {0}")]
    Model(String),
    /// A recorded embedder (`RecordReplayEmbedder`) was asked for a text
    /// its cassette does not hold: re-record the cassette.
    #[error("no vector recorded for {text:?} in embedding cassette {cassette}; re-record it")]
    NotRecorded {
        /// The text (its first 80 characters).
        text: String,
        /// The cassette.
        cassette: String,
    },
    /// A vector of the wrong size came back.
    #[error("embedding has {got} dimensions, expected {expected}")]
    Dimensions {
        /// Expected size.
        expected: usize,
        /// Size received.
        got: usize,
    },
}

/// Turns texts into fixed-size vectors.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// One vector per input text, in order, each of [`Embedder::dimensions`] floats.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Size of every vector.
    fn dimensions(&self) -> usize;
    /// Identifies the model (vectors of different models never mix).
    fn model_id(&self) -> &str;
}

/// An [`Embedder`] that remembers what it embedded: a text already seen
/// (compared by content, exactly) is answered from memory, a batch that
/// repeats a text asks the model for it once, and only the texts not seen
/// yet reach the wrapped model, in one call.
///
/// The cache holds at most `capacity` vectors in two generations: when the
/// newer one is full it becomes the older one and the previous older one is
/// dropped, and a text found in the older generation moves back to the newer
/// one. That is least-recently-used eviction to within a factor of two, in
/// constant time. A failed model call caches nothing. Two calls that miss on
/// the same text at the same moment may both ask the model for it.
///
/// ```
/// use std::sync::Arc;
/// use openvibe_protocols::{CachedEmbedder, EmbedError, Embedder};
///
/// /// A stand-in model: the vector of a text is its length.
/// struct Lengths;
/// #[async_trait::async_trait]
/// impl Embedder for Lengths {
///     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
///     }
///     fn dimensions(&self) -> usize { 1 }
///     fn model_id(&self) -> &str { "lengths" }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), EmbedError> {
/// let cached = CachedEmbedder::new(Arc::new(Lengths), 10_000);
/// let texts = vec!["a".to_owned(), "bb".to_owned(), "a".to_owned()];
/// assert_eq!(cached.embed(&texts).await?, [[1.0], [2.0], [1.0]]);
/// cached.embed(&texts).await?;
/// let stats = cached.stats();
/// assert_eq!((stats.embedded, stats.hits, stats.entries), (2, 4, 2));
/// # Ok(()) }
/// ```
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    capacity: usize,
    cache: Mutex<Generations<Vec<f32>>>,
    hits: AtomicU64,
    embedded: AtomicU64,
}

/// What a [`CachedEmbedder`] has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CacheStats {
    /// Texts answered from the cache (including repeats within one batch).
    pub hits: u64,
    /// Texts the wrapped model embedded.
    pub embedded: u64,
    /// Vectors held now.
    pub entries: usize,
}

/// A bounded map from texts to what was computed of them, in two
/// generations: an entry is looked up in the newer, then the older (and
/// moved to the newer); when the newer holds `half` entries it becomes the
/// older and the oldest generation is dropped. At most `2 × half` entries,
/// recently used ones kept, without per-entry bookkeeping. What
/// [`CachedEmbedder`] keeps vectors in, and the retrieval crate's term
/// cache its analyzed texts.
#[derive(Debug)]
pub struct Generations<V> {
    newer: HashMap<String, V>,
    older: HashMap<String, V>,
}

impl<V> Default for Generations<V> {
    fn default() -> Self {
        Self {
            newer: HashMap::new(),
            older: HashMap::new(),
        }
    }
}

impl<V: Clone> Generations<V> {
    /// What is kept of `text`, when something is.
    pub fn get(&mut self, text: &str, half: usize) -> Option<V> {
        if let Some(v) = self.newer.get(text) {
            return Some(v.clone());
        }
        let (text, value) = self.older.remove_entry(text)?;
        self.insert(text, value.clone(), half);
        Some(value)
    }

    /// Keep `value` for `text`.
    pub fn insert(&mut self, text: String, value: V, half: usize) {
        if self.newer.len() >= half && !self.newer.contains_key(&text) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(text, value);
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl CachedEmbedder {
    /// Cache up to `capacity` vectors (at least 2) of `inner`.
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        Self {
            inner,
            capacity: capacity.max(2),
            cache: Mutex::new(Generations::default()),
            hits: AtomicU64::new(0),
            embedded: AtomicU64::new(0),
        }
    }

    /// Hits, texts embedded and entries held so far.
    pub fn stats(&self) -> CacheStats {
        let cache = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            embedded: self.embedded.load(Ordering::Relaxed),
            entries: cache.len(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<Vec<f32>>> {
        // The cache is consistent after every statement: a panic elsewhere
        // while it was held leaves nothing half-done.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn half(&self) -> usize {
        self.capacity / 2
    }
}

impl std::fmt::Debug for CachedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedEmbedder")
            .field("model", &self.inner.model_id())
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        // Texts to embed, each once, and where each goes in `out`.
        let mut missing: Vec<String> = Vec::new();
        let mut wanted: HashMap<&str, usize> = HashMap::new();
        let mut pending: Vec<(usize, usize)> = Vec::new();
        {
            let mut cache = self.lock();
            for (position, text) in texts.iter().enumerate() {
                let found = cache.get(text, self.half());
                if found.is_none() {
                    let next = missing.len();
                    let slot = *wanted.entry(text.as_str()).or_insert(next);
                    if slot == next {
                        missing.push(text.clone());
                    }
                    pending.push((position, slot));
                }
                out.push(found);
            }
        }
        let from_cache = texts.len() - missing.len();
        self.hits.fetch_add(from_cache as u64, Ordering::Relaxed);
        if !missing.is_empty() {
            let vectors = self.inner.embed(&missing).await?;
            let expected = self.inner.dimensions();
            if vectors.len() != missing.len() {
                return Err(EmbedError::Model(format!(
                    "{} answered {} vectors for {} texts",
                    self.inner.model_id(),
                    vectors.len(),
                    missing.len()
                )));
            }
            if let Some(bad) = vectors.iter().find(|v| v.len() != expected) {
                return Err(EmbedError::Dimensions {
                    expected,
                    got: bad.len(),
                });
            }
            self.embedded
                .fetch_add(missing.len() as u64, Ordering::Relaxed);
            for (position, slot) in pending {
                if let (Some(cell), Some(vector)) = (out.get_mut(position), vectors.get(slot)) {
                    *cell = Some(vector.clone());
                }
            }
            let mut cache = self.lock();
            for (text, vector) in missing.into_iter().zip(vectors) {
                cache.insert(text, vector, self.half());
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// Records every batch it is asked for; fails while `fail` is set.
    #[derive(Default)]
    struct Recorder {
        batches: Mutex<Vec<Vec<String>>>,
        fail: AtomicBool,
        short: AtomicBool,
    }

    #[async_trait]
    impl Embedder for Recorder {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            if self.fail.load(Ordering::Relaxed) {
                return Err(EmbedError::Model("down".into()));
            }
            self.batches.lock().unwrap().push(texts.to_vec());
            let take = if self.short.load(Ordering::Relaxed) {
                1
            } else {
                texts.len()
            };
            Ok(texts
                .iter()
                .take(take)
                .map(|t| vec![t.len() as f32, 1.0])
                .collect())
        }
        fn dimensions(&self) -> usize {
            2
        }
        fn model_id(&self) -> &str {
            "recorder"
        }
    }

    fn texts(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[tokio::test]
    async fn only_unseen_texts_reach_the_model_once_each() {
        let inner = Arc::new(Recorder::default());
        let cached = CachedEmbedder::new(inner.clone(), 100);
        let first = cached
            .embed(&texts(&["a", "bb", "a", "ccc"]))
            .await
            .unwrap();
        assert_eq!(first, [[1.0, 1.0], [2.0, 1.0], [1.0, 1.0], [3.0, 1.0]]);
        let second = cached.embed(&texts(&["ccc", "dddd", "bb"])).await.unwrap();
        assert_eq!(second, [[3.0, 1.0], [4.0, 1.0], [2.0, 1.0]]);
        assert!(cached.embed(&[]).await.unwrap().is_empty());
        assert_eq!(
            *inner.batches.lock().unwrap(),
            [texts(&["a", "bb", "ccc"]), texts(&["dddd"])]
        );
        assert_eq!(
            cached.stats(),
            CacheStats {
                hits: 3,
                embedded: 4,
                entries: 4
            }
        );
        assert_eq!((cached.dimensions(), cached.model_id()), (2, "recorder"));
    }

    #[tokio::test]
    async fn the_cache_stays_within_capacity_and_keeps_what_is_used() {
        let inner = Arc::new(Recorder::default());
        let cached = CachedEmbedder::new(inner.clone(), 4);
        for round in 0..50 {
            cached.embed(&texts(&["keep"])).await.unwrap();
            cached.embed(&[format!("t{round}")]).await.unwrap();
            assert!(cached.stats().entries <= 4, "{:?}", cached.stats());
        }
        let keep_embedded = inner
            .batches
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b.contains(&"keep".to_owned()))
            .count();
        assert_eq!(keep_embedded, 1, "a text used every round is never evicted");
        assert_eq!(cached.stats().embedded, 51);
    }

    #[tokio::test]
    async fn failures_and_bad_answers_cache_nothing() {
        let inner = Arc::new(Recorder::default());
        let cached = CachedEmbedder::new(inner.clone(), 10);
        inner.fail.store(true, Ordering::Relaxed);
        assert!(matches!(
            cached.embed(&texts(&["x"])).await,
            Err(EmbedError::Model(_))
        ));
        inner.fail.store(false, Ordering::Relaxed);
        inner.short.store(true, Ordering::Relaxed);
        let err = cached.embed(&texts(&["x", "y"])).await.unwrap_err();
        assert!(
            err.to_string().contains("answered 1 vectors for 2 texts"),
            "{err}"
        );
        assert_eq!(cached.stats().entries, 0);
        inner.short.store(false, Ordering::Relaxed);
        assert_eq!(cached.embed(&texts(&["x"])).await.unwrap(), [[1.0, 1.0]]);
    }
}
