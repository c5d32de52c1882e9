//! OpenAI-compatible embeddings (`POST {base_url}/embeddings`): OpenAI
//! itself, Ollama, vLLM, llama.cpp's server, LM Studio, text-embeddings-inference, ...

use async_trait::async_trait;
use openvibe_protocols::{EmbedError, Embedder, LlmError};
use serde::{Deserialize, Serialize};
use tracing::Instrument as _;

use super::ProviderConfig;
use super::http::HttpClient;
use super::openai::{openai_client, openai_config};

const PROVIDER: &str = "openai-embeddings";
/// Texts per request by default: well under OpenAI's 2,048 inputs per request
/// and small enough that one request stays within its token limit for
/// memory-sized texts.
const DEFAULT_BATCH: usize = 128;

/// An [`Embedder`] for any OpenAI-compatible `/v1/embeddings` server.
///
/// Texts are sent in batches ([`with_batch_size`](Self::with_batch_size),
/// default 128) one request after another, with the same timeouts, retries
/// (HTTP 429/500/502/503/529, connection failures; `retry-after` honoured)
/// and typed errors as [`OpenAiProvider`](crate::OpenAiProvider): a failure
/// comes back as [`EmbedError::Provider`] carrying the [`LlmError`]. Every
/// answer is checked: one vector per text, each of the configured size, of
/// finite `f32`s (the decoder refuses numbers out of range), or the call
/// fails and returns nothing.
///
/// ```no_run
/// use openvibe_primitives::{OpenAiEmbedder, ProviderConfig};
/// use openvibe_protocols::Embedder;
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let ollama = OpenAiEmbedder::new(
///     ProviderConfig::new("http://localhost:11434/v1"),
///     "nomic-embed-text",
///     768,
/// )?;
/// let vectors = ollama.embed(&["Docker is a container platform".to_owned()]).await?;
/// assert_eq!(vectors[0].len(), 768);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    http: HttpClient,
    model: String,
    model_id: String,
    dimensions: usize,
    /// Send `dimensions` in the request (models that can shorten their vectors).
    request_dimensions: bool,
    batch: usize,
}

impl OpenAiEmbedder {
    /// The embedder configured from the environment: `OPENAI_API_KEY`
    /// (optional; no `Authorization` header without it) and
    /// `OPENAI_BASE_URL` (optional, default `https://api.openai.com/v1`),
    /// for `model`, whose vectors have `dimensions` floats.
    ///
    /// # Errors
    /// [`LlmError::Config`] when the base URL is invalid or `dimensions` is 0.
    pub fn from_env(model: impl Into<String>, dimensions: usize) -> Result<Self, LlmError> {
        Self::from_vars(|name| std::env::var(name).ok(), model, dimensions)
    }

    fn from_vars(
        var: impl Fn(&str) -> Option<String>,
        model: impl Into<String>,
        dimensions: usize,
    ) -> Result<Self, LlmError> {
        Self::new(openai_config(var), model, dimensions)
    }

    /// The embedder with an explicit configuration. `base_url` includes the
    /// version prefix, e.g. `http://localhost:11434/v1`; `dimensions` is the
    /// size of the model's vectors (every answer is checked against it).
    ///
    /// # Errors
    /// [`LlmError::Config`] when the base URL is invalid, the key cannot be
    /// sent as an HTTP header, the model name is empty or `dimensions` is 0.
    pub fn new(
        config: ProviderConfig,
        model: impl Into<String>,
        dimensions: usize,
    ) -> Result<Self, LlmError> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(LlmError::Config(format!(
                "{PROVIDER}: the model name is empty; name the embedding model, e.g. text-embedding-3-small"
            )));
        }
        if dimensions == 0 {
            return Err(LlmError::Config(format!(
                "{PROVIDER}: model `{model}` was configured with 0 dimensions; give the size of its vectors (e.g. 1536)"
            )));
        }
        let http = openai_client(PROVIDER, &config)?;
        Ok(Self {
            http,
            model_id: model.clone(),
            model,
            dimensions,
            request_dimensions: false,
            batch: DEFAULT_BATCH,
        })
    }

    /// Ask the server for vectors of the configured size (the `dimensions`
    /// request field, for models that can shorten their vectors such as
    /// OpenAI's `text-embedding-3-*`). The model id becomes
    /// `<model>@<dimensions>`, so shortened vectors never mix with full ones.
    #[must_use]
    pub fn with_requested_dimensions(mut self) -> Self {
        self.request_dimensions = true;
        self.model_id = format!("{}@{}", self.model, self.dimensions);
        self
    }

    /// Send at most `texts` texts per request (at least 1).
    #[must_use]
    pub fn with_batch_size(mut self, texts: usize) -> Self {
        self.batch = texts.max(1);
        self
    }

    /// The base URL requests go to (without a trailing slash).
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// Embed one batch: one request, every answer checked.
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = EmbeddingsRequest {
            model: &self.model,
            input: texts,
            dimensions: self.request_dimensions.then_some(self.dimensions),
        };
        let answer: EmbeddingsResponse = self
            .http
            .post_json("/embeddings", &self.model, &body)
            .await?;
        self.vectors(answer, texts.len())
    }

    /// The answer's vectors in input order, or why they are not usable.
    fn vectors(
        &self,
        answer: EmbeddingsResponse,
        expected: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let decode = |message: String| {
            EmbedError::Provider(LlmError::Decode {
                provider: self.http.provider().to_owned(),
                message,
            })
        };
        if answer.data.len() != expected {
            return Err(decode(format!(
                "asked for {expected} embeddings, got {}",
                answer.data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, item) in answer.data.into_iter().enumerate() {
            // Servers that leave `index` out answer in input order.
            let index = item.index.unwrap_or(position);
            if item.embedding.len() != self.dimensions {
                return Err(EmbedError::Dimensions {
                    expected: self.dimensions,
                    got: item.embedding.len(),
                });
            }
            match slots.get_mut(index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                Some(Some(_)) => return Err(decode(format!("embedding index {index} repeats"))),
                None => {
                    return Err(decode(format!(
                        "embedding index {index} is out of range for {expected} inputs"
                    )));
                }
            }
        }
        // Every slot is filled: `expected` items, no index repeated or out of range.
        Ok(slots.into_iter().flatten().collect())
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let span = tracing::debug_span!(
            "embed",
            provider = PROVIDER,
            model = %self.model,
            texts = texts.len()
        );
        async {
            let mut out = Vec::with_capacity(texts.len());
            for batch in texts.chunks(self.batch) {
                out.extend(self.embed_batch(batch).await?);
            }
            Ok(out)
        }
        .instrument(span)
        .await
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_reads_the_openai_variables() {
        let e = OpenAiEmbedder::from_vars(|_| None, "text-embedding-3-small", 1536).unwrap();
        assert_eq!(e.base_url(), "https://api.openai.com/v1");
        assert_eq!(
            (e.model_id(), e.dimensions()),
            ("text-embedding-3-small", 1536)
        );
        let e = OpenAiEmbedder::from_vars(
            |name| match name {
                "OPENAI_BASE_URL" => Some("http://localhost:11434/v1/".into()),
                "OPENAI_API_KEY" => Some("sk-secret".into()),
                _ => None,
            },
            "text-embedding-3-small",
            256,
        )
        .unwrap()
        .with_requested_dimensions();
        assert_eq!(e.base_url(), "http://localhost:11434/v1");
        assert_eq!(e.model_id(), "text-embedding-3-small@256");
        assert!(!format!("{e:?}").contains("sk-secret"));
    }

    #[test]
    fn bad_configuration_is_refused() {
        let config = || ProviderConfig::new("http://localhost:1/v1");
        assert!(matches!(
            OpenAiEmbedder::new(config(), " ", 3),
            Err(LlmError::Config(m)) if m.contains("model name is empty")
        ));
        assert!(matches!(
            OpenAiEmbedder::new(config(), "m", 0),
            Err(LlmError::Config(m)) if m.contains("0 dimensions")
        ));
    }
}
