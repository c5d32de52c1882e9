//! What a ranked search reports: how it retrieves ([`RetrievalMode`]) and
//! which retriever found a result with what rank and score
//! ([`RetrieverScore`]). The ranking itself (analyzer, BM25, expansion,
//! fusion) is the same on every backend and lives in `openvibe-retrieval`.

use serde::{Deserialize, Serialize};

/// How a query finds its results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RetrievalMode {
    /// Full text only (BM25 over the analyzed text); needs a text.
    FullText,
    /// Vector similarity only (cosine); needs an embedding or a text and an
    /// embedder.
    Vector,
    /// Both, fused by reciprocal rank (`fuse`). Without a text it is a
    /// vector search; without an embedding or embedder, a full-text one.
    #[default]
    Hybrid,
}

/// Which retriever found a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Retriever {
    /// BM25 over the analyzed text.
    FullText,
    /// Cosine similarity of embeddings.
    Vector,
}

impl Retriever {
    /// The name used in traces and output (`full_text`, `vector`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FullText => "full_text",
            Self::Vector => "vector",
        }
    }
}

impl std::fmt::Display for Retriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one retriever said about a result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RetrieverScore {
    /// The retriever.
    pub retriever: Retriever,
    /// Its rank in that retriever's list (1 = best).
    pub rank: u32,
    /// Its score there: BM25 for full text, cosine similarity for vectors.
    pub score: f32,
}
