//! Persisted memory records and their governance metadata.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How sensitive a record is. Ordered: `Public < Internal < Confidential < Restricted`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Classification {
    /// Readable by everyone.
    Public,
    /// Readable with internal clearance in the record's domain (the default).
    #[default]
    Internal,
    /// Readable with confidential clearance in the record's domain.
    Confidential,
    /// Readable with restricted clearance in the record's domain.
    Restricted,
}

impl Classification {
    /// All classifications, lowest first.
    pub const ALL: [Self; 4] = [
        Self::Public,
        Self::Internal,
        Self::Confidential,
        Self::Restricted,
    ];

    /// Numeric rank: public 0, internal 1, confidential 2, restricted 3.
    pub fn rank(self) -> u8 {
        self as u8
    }

    /// The lowercase name (`"internal"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Internal => "internal",
            Self::Confidential => "confidential",
            Self::Restricted => "restricted",
        }
    }
}

impl fmt::Display for Classification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no classification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a classification (expected public, internal, confidential or restricted)")]
pub struct ParseClassificationError(pub String);

impl FromStr for Classification {
    type Err = ParseClassificationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseClassificationError(s.to_owned()))
    }
}

/// Governance metadata carried by every persisted memory record.
///
/// `owner` is set by the store from the caller's identity; a value supplied
/// by the caller is never trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordMeta {
    /// Tenant (organisation) the record belongs to.
    pub tenant_id: String,
    /// Namespace (scope) the record lives in, e.g. `shared` or an agent id.
    pub namespace: String,
    /// Project, for project-scoped namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The principal that created the record (set by the store).
    pub owner: String,
    /// How sensitive it is.
    pub classification: Classification,
    /// Where it came from (an agent, an import, a person).
    pub source: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl RecordMeta {
    /// The tenant used when none is given.
    pub const DEFAULT_TENANT: &'static str = "default";
}

impl Default for RecordMeta {
    fn default() -> Self {
        let now = Utc::now();
        Self {
            tenant_id: Self::DEFAULT_TENANT.to_owned(),
            namespace: String::new(),
            project_id: None,
            owner: String::new(),
            classification: Classification::default(),
            source: String::new(),
            created_at: now,
            updated_at: now,
        }
    }
}

/// L2 memory: the structured record of one node run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// Unique id.
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_values_and_ranks() {
        assert_eq!(Classification::Public.as_str(), "public");
        assert_eq!(Classification::Internal.to_string(), "internal");
        assert_eq!(Classification::Public.rank(), 0);
        assert_eq!(Classification::Internal.rank(), 1);
        assert_eq!(Classification::Confidential.rank(), 2);
        assert_eq!(Classification::Restricted.rank(), 3);
        assert!(Classification::Confidential > Classification::Internal);
        assert_eq!(Classification::default(), Classification::Internal);
    }

    #[test]
    fn classification_parses_and_rejects() {
        assert_eq!(
            "Confidential".parse::<Classification>(),
            Ok(Classification::Confidential)
        );
        let err = "secret".parse::<Classification>().unwrap_err();
        assert!(err.to_string().contains("`secret`"));
        assert!(serde_json::from_str::<Classification>("\"secret\"").is_err());
    }

    #[test]
    fn episode_defaults_match_the_seed() {
        let ep = Episode {
            id: "ep1".into(),
            agent_id: "cro".into(),
            ..Episode::default()
        };
        assert_eq!(ep.entity, "");
        assert_eq!(ep.domain, "");
        assert!(ep.tags.is_empty());
        assert_eq!(ep.meta.tenant_id, "default");
        assert_eq!(ep.meta.classification, Classification::Internal);
        let json = serde_json::to_value(&ep).unwrap();
        assert_eq!(json["tenant_id"], "default", "governance fields are flattened");
        let back: Episode = serde_json::from_value(json).unwrap();
        assert_eq!(back, ep);
    }
}
