//! Text embeddings.

use async_trait::async_trait;

/// What went wrong computing embeddings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The embedding service could not be reached or refused the request.
    #[error("embedding request failed: {0}")]
    Request(String),
    /// The model could not be loaded or run.
    #[error("embedding model error: {0}")]
    Model(String),
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
