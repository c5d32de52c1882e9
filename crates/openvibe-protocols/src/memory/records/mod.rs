//! Persisted memory records and their governance metadata: the
//! classification and [`RecordMeta`] every record carries, and one module
//! per record kind.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How sensitive a record is. Ordered: `Public < Internal < Confidential < Restricted`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    pub const fn rank(self) -> u8 {
        self as u8
    }

    /// Whether a record of this classification is readable with clearance
    /// `level` (`None`: no clearance): public records always, others when
    /// `level` is at least this classification.
    ///
    /// The one clearance comparison of the crate: [`Clearance::allows`](crate::Clearance::allows),
    /// every backend's read rule and every clearance profile use it.
    ///
    /// ```
    /// use openvibe_protocols::Classification::{Confidential, Internal, Public};
    /// assert!(Public.readable_at(None));
    /// assert!(Internal.readable_at(Some(Confidential)));
    /// assert!(!Confidential.readable_at(Some(Internal)));
    /// ```
    pub fn readable_at(self, level: Option<Classification>) -> bool {
        self == Self::Public || level.is_some_and(|l| l >= self)
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
/// by the caller is never trusted. Every field may be left out of JSON
/// (the store sets or defaults it: tenant, owner and project from the
/// caller, both times now, classification `internal`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
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
    /// When it was created (now when left out).
    #[cfg_attr(feature = "schema", schemars(transform = no_default))]
    pub created_at: DateTime<Utc>,
    /// When it last changed (set by the store).
    #[cfg_attr(feature = "schema", schemars(transform = no_default))]
    pub updated_at: DateTime<Utc>,
    /// When it expires (`None`: never). From that instant it is invisible
    /// to every read, on every backend, until a cleanup
    /// ([`NamespaceAdmin::delete_expired`](crate::NamespaceAdmin::delete_expired))
    /// deletes it. Given on write, and capped by the retention of the
    /// caller's governance ([`CallerContext::expiry`](crate::CallerContext::expiry)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// A schema without its `default`: the default of a time is "now", which
/// a schema cannot state (and would change on every generation).
#[cfg(feature = "schema")]
fn no_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

impl RecordMeta {
    /// The tenant used when none is given.
    pub const DEFAULT_TENANT: &'static str = "default";

    /// Whether the record has expired at `now` (it expires at `expires_at`
    /// exactly).
    ///
    /// ```
    /// use chrono::{TimeDelta, Utc};
    /// use openvibe_protocols::RecordMeta;
    /// let now = Utc::now();
    /// let mut meta = RecordMeta::default();
    /// assert!(!meta.is_expired(now));
    /// meta.expires_at = Some(now);
    /// assert!(meta.is_expired(now));
    /// assert!(!meta.is_expired(now - TimeDelta::milliseconds(1)));
    /// ```
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
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
            expires_at: None,
        }
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

/// Builder methods the record types share.
macro_rules! record_builders {
    () => {
        /// Set the namespace (empty: the caller's default; see
        /// [`CallerContext::placement`](crate::CallerContext::placement)).
        #[must_use]
        pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
            self.meta.namespace = namespace.into();
            self
        }

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

        /// Set when it expires (see [`RecordMeta::expires_at`]).
        #[must_use]
        pub fn expires_at(mut self, at: DateTime<Utc>) -> Self {
            self.meta.expires_at = Some(at);
            self
        }
    };
}

mod episode;
mod fact;
mod insight;
mod raw;
mod trace;

pub use episode::Episode;
pub use fact::Fact;
pub use insight::{Insight, InsightStatus, Observed};
pub use raw::RawCall;
pub use trace::{RetrievalTrace, TraceAction};

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
