//! L3 insights: patterns an agent distilled from its episodes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Classification, RecordMeta};

crate::vocabulary! {
    /// Lifecycle of an [`Insight`].
    #[derive(Default)]
    pub enum InsightStatus {
        /// In use (the default).
        #[default]
        Active = "active",
        /// Replaced by a newer insight (see `supersedes`).
        Superseded = "superseded",
        /// Kept for the record but no longer used.
        Archived = "archived",
    }
}

impl PartialEq<&str> for InsightStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// L3 memory: a pattern an agent distilled from its episodes.
///
/// Store-maintained fields are the same as for [`Fact`](crate::Fact).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Insight {
    /// Unique id within the tenant (the store generates one when empty).
    #[serde(default)]
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
    /// [`content_hash`](crate::content_hash) of `content` (store-maintained).
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

    /// The id of the pattern `content` names for `agent_id`: the same for
    /// every wording with the same words, whatever their order, case or
    /// punctuation (`ins_p` and a hash of the agent and its sorted
    /// [`text_terms`](crate::text_terms)). Reflection stores a new pattern
    /// under it with [`InsightStore::observe`](crate::InsightStore::observe),
    /// so two reflections that see it at once create one insight.
    ///
    /// ```
    /// use openvibe_protocols::Insight;
    /// let a = Insight::pattern_id("cro", "VP sponsor -> deals close");
    /// assert_eq!(a, Insight::pattern_id("cro", "deals close (VP sponsor)"));
    /// assert_ne!(a, Insight::pattern_id("cmo", "VP sponsor -> deals close"));
    /// assert!(a.starts_with("ins_p"));
    /// ```
    pub fn pattern_id(agent_id: &str, content: &str) -> String {
        let mut terms = crate::text_terms(content);
        terms.sort_unstable();
        let key = if terms.is_empty() {
            content.trim().to_lowercase()
        } else {
            terms.join(" ")
        };
        let hash = super::content_hash(&format!("{agent_id}\u{0}{key}"));
        format!("ins_p{}", hash.trim_start_matches("fnv1a64:"))
    }
}

/// What [`InsightStore::observe`](crate::InsightStore::observe) did: the
/// insight as stored, and whether this call created it (else it
/// strengthened an existing one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Observed {
    /// The insight after the observation.
    pub insight: Insight,
    /// `true` when the observation created it.
    pub created: bool,
}
