//! Workspace facts: shared, classified knowledge.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Classification, RecordMeta};

/// A shared, classified unit of knowledge (workspace memory).
///
/// Store-maintained fields (`meta.owner`, `meta.tenant_id`, `meta.project_id`,
/// `meta.updated_at`, `access_count`, `last_accessed`, `content_hash`) are
/// overwritten by the store; values supplied by the caller are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Fact {
    /// Unique id within the tenant (the store generates one when empty).
    #[serde(default)]
    pub id: String,
    /// Governance metadata (classification, source, timestamps, ...).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The knowledge itself.
    pub content: String,
    /// The entity it is about (e.g. `acme_corp`); empty when none.
    #[serde(default)]
    pub entity: String,
    /// The domain it belongs to (e.g. `revenue`); empty when none.
    #[serde(default)]
    pub domain: String,
    /// Free tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How sure we are, `0.0..=1.0` (default 1.0).
    #[serde(default = "one")]
    pub confidence: f64,
    /// How much it matters, `>= 0.0` (default 0.0 = unknown).
    #[serde(default)]
    pub importance: f64,
    /// How often it was read through a tracking query or `touch` (store-maintained).
    #[serde(default)]
    pub access_count: u64,
    /// When it was last read that way (store-maintained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed: Option<DateTime<Utc>>,
    /// The id of the fact this one replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// An id in an outside system, or the lineage of a published record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// [`content_hash`](crate::content_hash) of `content` (store-maintained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// Free provenance (a JSON object, at most
    /// [`MAX_METADATA_BYTES`](crate::MAX_METADATA_BYTES)): seed 003's
    /// `agent`, `tool_name` and `notes`, or anything a writer keeps about
    /// where the fact came from. Written and read with the fact; not searched.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

fn one() -> f64 {
    1.0
}

impl Default for Fact {
    fn default() -> Self {
        Self {
            id: String::new(),
            meta: RecordMeta::default(),
            content: String::new(),
            entity: String::new(),
            domain: String::new(),
            tags: Vec::new(),
            confidence: 1.0,
            importance: 0.0,
            access_count: 0,
            last_accessed: None,
            supersedes: None,
            external_id: None,
            content_hash: None,
            metadata: serde_json::Map::new(),
        }
    }
}

impl Fact {
    /// A fact with defaults everywhere else (internal, confidence 1.0).
    pub fn new(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            content: content.into(),
            ..Self::default()
        }
    }

    /// Set the source.
    #[must_use]
    pub fn source(mut self, source: impl Into<String>) -> Self {
        self.meta.source = source.into();
        self
    }

    /// Set the confidence.
    #[must_use]
    pub fn confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// Set the importance.
    #[must_use]
    pub fn importance(mut self, importance: f64) -> Self {
        self.importance = importance;
        self
    }

    /// Set `supersedes`.
    #[must_use]
    pub fn supersedes(mut self, id: impl Into<String>) -> Self {
        self.supersedes = Some(id.into());
        self
    }

    /// Set the external id.
    #[must_use]
    pub fn external_id(mut self, id: impl Into<String>) -> Self {
        self.external_id = Some(id.into());
        self
    }

    /// Set one key of the metadata.
    #[must_use]
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    record_builders!();
}
