//! Retrieval traces: what the memory filesystem was asked, observably.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::RecordMeta;

/// What a [`RetrievalTrace`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TraceAction {
    /// A directory listing.
    Browse,
    /// A read of one entry.
    Read,
    /// A search.
    Search,
    /// A write.
    Write,
}

impl TraceAction {
    /// The lowercase name (`"browse"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Browse => "browse",
            Self::Read => "read",
            Self::Search => "search",
            Self::Write => "write",
        }
    }
}

impl fmt::Display for TraceAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for TraceAction {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Observable trace of one memory access (through the memory filesystem).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RetrievalTrace {
    /// Unique id.
    pub id: String,
    /// Governance metadata: tenant, namespace (the role), owner (who accessed).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// What was done.
    pub action: TraceAction,
    /// The (normalised) path accessed.
    pub path: String,
    /// The search query, for searches.
    #[serde(default)]
    pub query: String,
    /// Entries listed or found.
    #[serde(default)]
    pub results_count: u64,
    /// Estimated tokens read.
    #[serde(default)]
    pub tokens_loaded: u64,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// How long it took.
    #[serde(default)]
    pub duration_ms: u64,
    /// The entity the access concerned, when known.
    #[serde(default)]
    pub entity: String,
    /// The domain the access concerned, when known.
    #[serde(default)]
    pub domain: String,
    /// Free tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl RetrievalTrace {
    /// A trace of `action` on `path`, now, with zero counts.
    pub fn new(action: TraceAction, path: impl Into<String>) -> Self {
        let meta = RecordMeta::default();
        Self {
            id: String::new(),
            timestamp: meta.created_at,
            meta,
            action,
            path: path.into(),
            query: String::new(),
            results_count: 0,
            tokens_loaded: 0,
            duration_ms: 0,
            entity: String::new(),
            domain: String::new(),
            tags: Vec::new(),
        }
    }
}
