//! L2 episodes: the structured record of one node run.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RecordMeta;

/// L2 memory: the structured record of one node run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Episode {
    /// Unique id.
    #[serde(default)]
    pub id: String,
    /// Governance metadata.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The agent (role) that ran the node; set by the agent's memory.
    pub agent_id: String,
    /// The operator the node belongs to.
    pub operator_id: String,
    /// The node's name.
    pub node_name: String,
    /// When the node ran.
    pub timestamp: DateTime<Utc>,
    /// What was done (defaults to the node name).
    pub action: String,
    /// The input, shortened.
    pub input_summary: String,
    /// The output, shortened.
    pub output_summary: String,
    /// Structured outcome (e.g. `{"output_key": "score", "value": 85}`).
    pub outcome: Value,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Input tokens used.
    pub tokens_in: u64,
    /// Output tokens used.
    pub tokens_out: u64,
    /// The entity the run was about.
    pub entity: String,
    /// The domain the run belongs to.
    pub domain: String,
    /// Free tags.
    pub tags: Vec<String>,
    /// How much the run matters (0.0 = unknown), for later decay and ranking.
    #[serde(default)]
    pub importance: f64,
    /// An id in an outside system (e.g. a trace id), when imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Hash of [`Episode::searchable_text`] (see [`content_hash`](crate::content_hash)); set by the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

impl Default for Episode {
    fn default() -> Self {
        let meta = RecordMeta::default();
        Self {
            id: String::new(),
            timestamp: meta.created_at,
            meta,
            agent_id: String::new(),
            operator_id: String::new(),
            node_name: String::new(),
            action: String::new(),
            input_summary: String::new(),
            output_summary: String::new(),
            outcome: Value::Object(serde_json::Map::new()),
            duration_ms: 0,
            tokens_in: 0,
            tokens_out: 0,
            entity: String::new(),
            domain: String::new(),
            tags: Vec::new(),
            importance: 0.0,
            external_id: None,
            content_hash: None,
        }
    }
}

impl Episode {
    /// Set the namespace (empty: the caller's default; see
    /// [`CallerContext::placement`](crate::CallerContext::placement)).
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// The text an episode is searched by and hashed over:
    /// action, input summary and output summary, one per line.
    pub fn searchable_text(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.action, self.input_summary, self.output_summary
        )
    }
}
