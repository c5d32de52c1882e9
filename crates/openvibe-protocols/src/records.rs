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
    /// How much the run matters (0.0 = unknown), for later decay and ranking.
    #[serde(default)]
    pub importance: f64,
    /// An id in an outside system (e.g. a trace id), when imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Hash of [`Episode::searchable_text`] (see [`content_hash`]); set by the store.
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
    /// The text an episode is searched by and hashed over:
    /// action, input summary and output summary, one per line.
    pub fn searchable_text(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.action, self.input_summary, self.output_summary
        )
    }
}

/// Hash of a record's text, shared by every backend so that lineage and
/// de-duplication agree across them: `fnv1a64:<16 hex digits>` over the
/// UTF-8 bytes of `text`, exactly as given.
///
/// ```
/// use openvibe_protocols::content_hash;
/// assert_eq!(content_hash("abc"), content_hash("abc"));
/// assert_ne!(content_hash("abc"), content_hash("abd"));
/// assert!(content_hash("").starts_with("fnv1a64:"));
/// ```
pub fn content_hash(text: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = text
        .as_bytes()
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME));
    format!("fnv1a64:{hash:016x}")
}

/// A shared, classified unit of knowledge (workspace memory).
///
/// Store-maintained fields (`meta.owner`, `meta.tenant_id`, `meta.project_id`,
/// `meta.updated_at`, `access_count`, `last_accessed`, `content_hash`) are
/// overwritten by the store; values supplied by the caller are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// Unique id within the tenant (the store generates one when empty).
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
    /// [`content_hash`] of `content` (store-maintained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
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
        }
    }
}

/// Builder methods the record types share.
macro_rules! record_builders {
    () => {
        /// Set the entity.
        #[must_use]
        pub fn entity(mut self, entity: impl Into<String>) -> Self {
            self.entity = entity.into();
            self
        }

        /// Set the domain.
        #[must_use]
        pub fn domain(mut self, domain: impl Into<String>) -> Self {
            self.domain = domain.into();
            self
        }

        /// Set the tags.
        #[must_use]
        pub fn tags<I, S>(mut self, tags: I) -> Self
        where
            I: IntoIterator<Item = S>,
            S: Into<String>,
        {
            self.tags = tags.into_iter().map(Into::into).collect();
            self
        }

        /// Set the classification.
        #[must_use]
        pub fn classification(mut self, classification: Classification) -> Self {
            self.meta.classification = classification;
            self
        }

        /// Set the creation time (which orders records of equal rank).
        #[must_use]
        pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
            self.meta.created_at = at;
            self
        }
    };
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

    /// Set the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
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

    record_builders!();
}

/// Lifecycle of an [`Insight`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InsightStatus {
    /// In use (the default).
    #[default]
    Active,
    /// Replaced by a newer insight (see `supersedes`).
    Superseded,
    /// Kept for the record but no longer used.
    Archived,
}

impl InsightStatus {
    /// The lowercase name (`"active"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Superseded => "superseded",
            Self::Archived => "archived",
        }
    }
}

impl fmt::Display for InsightStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for InsightStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// L3 memory: a pattern an agent distilled from its episodes.
///
/// Store-maintained fields are the same as for [`Fact`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Insight {
    /// Unique id within the tenant (the store generates one when empty).
    pub id: String,
    /// Governance metadata; `meta.created_at` is when it was first seen.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The agent whose insight it is (set by the agent's memory).
    pub agent_id: String,
    /// The pattern, in a sentence.
    pub content: String,
    /// How sure the agent is, `0.0..=1.0`.
    pub confidence: f64,
    /// How many times it was observed.
    pub evidence_count: u64,
    /// The episodes it was distilled from.
    #[serde(default)]
    pub source_episode_ids: Vec<String>,
    /// When it was last observed again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_confirmed: Option<DateTime<Utc>>,
    /// Lifecycle status.
    #[serde(default)]
    pub status: InsightStatus,
    /// The entity it is about; empty when none.
    #[serde(default)]
    pub entity: String,
    /// The domain it belongs to; empty when none.
    #[serde(default)]
    pub domain: String,
    /// Free tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How much it matters, `>= 0.0`.
    #[serde(default)]
    pub importance: f64,
    /// Store-maintained read count.
    #[serde(default)]
    pub access_count: u64,
    /// Store-maintained last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed: Option<DateTime<Utc>>,
    /// The id of the insight this one replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// An id in an outside system (V1 key/value entries keep their key here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// [`content_hash`] of `content` (store-maintained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

impl Default for Insight {
    fn default() -> Self {
        Self {
            id: String::new(),
            meta: RecordMeta::default(),
            agent_id: String::new(),
            content: String::new(),
            confidence: 0.5,
            evidence_count: 1,
            source_episode_ids: Vec::new(),
            last_confirmed: None,
            status: InsightStatus::Active,
            entity: String::new(),
            domain: String::new(),
            tags: Vec::new(),
            importance: 0.0,
            access_count: 0,
            last_accessed: None,
            supersedes: None,
            external_id: None,
            content_hash: None,
        }
    }
}

impl Insight {
    /// An active insight with one piece of evidence.
    pub fn new(
        id: impl Into<String>,
        agent_id: impl Into<String>,
        content: impl Into<String>,
        confidence: f64,
    ) -> Self {
        Self {
            id: id.into(),
            agent_id: agent_id.into(),
            content: content.into(),
            confidence,
            ..Self::default()
        }
    }

    /// Set the evidence count.
    #[must_use]
    pub fn evidence(mut self, evidence_count: u64) -> Self {
        self.evidence_count = evidence_count;
        self
    }

    record_builders!();
}

/// What a [`RetrievalTrace`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
        assert_eq!(
            json["tenant_id"], "default",
            "governance fields are flattened"
        );
        let back: Episode = serde_json::from_value(json).unwrap();
        assert_eq!(back, ep);
    }

    // --- Ported from the seed's tests/test_memory_types.py ---

    #[test]
    fn test_classification_values() {
        assert_eq!(Classification::Public.as_str(), "public");
        assert_eq!(Classification::Internal.as_str(), "internal");
        assert_eq!(Classification::Confidential.as_str(), "confidential");
        assert_eq!(Classification::Restricted.as_str(), "restricted");
    }

    #[test]
    fn test_fact_creation() {
        let f = Fact::new("f1", "Acme has 200 employees");
        assert_eq!(f.id, "f1");
        assert_eq!(f.content, "Acme has 200 employees");
        assert_eq!(f.entity, "");
        assert_eq!(f.domain, "");
        assert!(f.tags.is_empty());
        assert_eq!(f.confidence, 1.0);
        assert_eq!(f.importance, 0.0);
        assert_eq!(f.access_count, 0);
        assert_eq!(f.meta.classification, Classification::Internal);
        assert_eq!(f.meta.source, "");
        assert!(f.meta.created_at <= Utc::now());
        assert_eq!(f.supersedes, None);
    }

    #[test]
    fn test_fact_with_addressing() {
        let f = Fact::new("f2", "Acme scored 85")
            .entity("acme_corp")
            .domain("revenue")
            .tags(["qualification", "scoring"])
            .classification(Classification::Confidential)
            .source("revenue_ops");
        assert_eq!(f.entity, "acme_corp");
        assert_eq!(f.domain, "revenue");
        assert_eq!(f.tags, vec!["qualification", "scoring"]);
        assert_eq!(f.meta.classification, Classification::Confidential);
        assert_eq!(f.meta.source, "revenue_ops");
    }

    fn seed_episode(id: &str) -> Episode {
        Episode {
            id: id.into(),
            agent_id: "cro".into(),
            operator_id: "revenue_ops".into(),
            node_name: "qualify".into(),
            timestamp: Utc::now(),
            action: "qualify_lead".into(),
            input_summary: "Score lead Acme".into(),
            output_summary: r#"{"score": 85}"#.into(),
            outcome: serde_json::json!({"score": 85}),
            duration_ms: 450,
            tokens_in: 100,
            tokens_out: 200,
            ..Episode::default()
        }
    }

    #[test]
    fn test_episode_creation() {
        let ep = seed_episode("ep1");
        assert_eq!(ep.id, "ep1");
        assert_eq!(ep.agent_id, "cro");
        assert_eq!(ep.entity, "");
        assert_eq!(ep.domain, "");
        assert!(ep.tags.is_empty());
    }

    #[test]
    fn test_episode_with_addressing() {
        let ep = Episode {
            entity: "acme_corp".into(),
            domain: "revenue".into(),
            tags: vec!["qualification".into()],
            ..seed_episode("ep2")
        };
        assert_eq!(ep.entity, "acme_corp");
        assert_eq!(ep.domain, "revenue");
    }

    #[test]
    fn test_insight_creation() {
        let now = Utc::now();
        let ins = Insight {
            evidence_count: 5,
            source_episode_ids: vec!["ep1".into(), "ep2".into()],
            ..Insight::new("ins1", "cro", "Webinar leads convert 2x vs cold", 0.8).created_at(now)
        };
        assert_eq!(ins.content, "Webinar leads convert 2x vs cold");
        assert_eq!(ins.confidence, 0.8);
        assert_eq!(ins.status, "active");
        assert_eq!(ins.meta.created_at, now);
    }

    #[test]
    fn test_insight_defaults() {
        let ins = Insight::new("ins2", "cro", "test", 0.5).evidence(1);
        assert_eq!(ins.last_confirmed, None);
        assert_eq!(ins.status, InsightStatus::Active);
        assert_eq!(ins.entity, "");
        assert_eq!(ins.domain, "");
        assert!(ins.tags.is_empty());
    }

    #[test]
    fn test_retrieval_trace() {
        let t = RetrievalTrace {
            query: "VP sponsor".into(),
            results_count: 2,
            tokens_loaded: 340,
            ..RetrievalTrace::new(TraceAction::Search, "/knowledge/sales/")
        };
        assert_eq!(t.action, "search");
        assert_eq!(t.path, "/knowledge/sales/");
        assert_eq!(t.duration_ms, 0);
        assert!(t.timestamp <= Utc::now());
    }

    #[test]
    fn records_round_trip_with_flattened_governance() {
        let f = Fact::new("f1", "x").domain("d").supersedes("f0");
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["tenant_id"], "default");
        assert_eq!(json["classification"], "internal");
        assert_eq!(serde_json::from_value::<Fact>(json).unwrap(), f);
        let minimal: Fact = serde_json::from_value(serde_json::json!({
            "id": "f2", "content": "c", "tenant_id": "t", "namespace": "", "owner": "",
            "classification": "public", "source": "",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        assert_eq!(minimal.confidence, 1.0, "confidence defaults to 1.0");
        let i = Insight::new("i1", "cro", "c", 0.7).tags(["t"]);
        let back: Insight = serde_json::from_value(serde_json::to_value(&i).unwrap()).unwrap();
        assert_eq!(back, i);
        let t = RetrievalTrace::new(TraceAction::Write, "/knowledge/x");
        let back: RetrievalTrace =
            serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn content_hash_is_stable() {
        // FNV-1a 64 test vectors.
        assert_eq!(content_hash(""), "fnv1a64:cbf29ce484222325");
        assert_eq!(content_hash("a"), "fnv1a64:af63dc4c8601ec8c");
        let ep = seed_episode("e");
        assert!(ep.searchable_text().contains("qualify_lead"));
    }
}
