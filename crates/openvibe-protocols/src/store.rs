//! The caller's context and the structured-memory store traits.
//!
//! Every store-trait call takes a [`CallerContext`] first: who is asking
//! (tenant, principal), what they may read (clearance) and in which project.
//! Stores enforce it themselves, for every backend:
//!
//! - writes take `meta.tenant_id`, `meta.project_id` and (for new records)
//!   `meta.owner` from the caller; values in the input are ignored;
//! - reads only see the caller's tenant, records of no project or of the
//!   caller's project, and records the caller owns or is cleared for
//!   ([`CallerContext::can_read`]); clearance is applied *inside* the query,
//!   so `limit` readable records come back whenever that many exist;
//! - update and delete need ownership or a privileged caller
//!   ([`CallerContext::can_modify`]); a refused change modifies nothing.
//!
//! Records that exist but are not readable are reported exactly like
//! records that do not exist ([`StoreError::NotFound`] / `None`).

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    Classification, Episode, Fact, Insight, InsightStatus, MemoryScope, RecordMeta, StoreError,
};

/// What kind of principal is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrincipalKind {
    /// An agent (role).
    Agent,
    /// A person.
    User,
    /// A service or the system itself.
    Service,
}

impl PrincipalKind {
    /// The lowercase name (`"agent"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::User => "user",
            Self::Service => "service",
        }
    }
}

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The principal's id (e.g. `cro`, `alice`).
    pub id: String,
    /// Its kind.
    pub kind: PrincipalKind,
}

impl Principal {
    /// An agent.
    pub fn agent(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: PrincipalKind::Agent,
        }
    }

    /// A person.
    pub fn user(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: PrincipalKind::User,
        }
    }

    /// A service.
    pub fn service(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: PrincipalKind::Service,
        }
    }

    /// The value stores put in `RecordMeta::owner`: `<kind>:<id>`
    /// (e.g. `agent:cro`), so that an agent and a user of the same name
    /// never own each other's records.
    pub fn owner_key(&self) -> String {
        format!("{}:{}", self.kind.as_str(), self.id)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

/// The highest classification a principal may read, per domain.
///
/// Public records are readable by everyone. A record of domain `d` and
/// classification `c > Public` is readable when the level for `d`
/// ([`Clearance::level_for`]) is at least `c`. The level for `d` is the
/// higher of the domain's own entry and `everywhere`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clearance {
    /// A level granted in every domain (`None`: only what `domains` grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub everywhere: Option<Classification>,
    /// Per-domain levels.
    #[serde(default)]
    pub domains: BTreeMap<String, Classification>,
}

impl Clearance {
    /// Public records only (the default).
    pub fn public_only() -> Self {
        Self::default()
    }

    /// Everything, in every domain.
    pub fn unrestricted() -> Self {
        Self {
            everywhere: Some(Classification::Restricted),
            domains: BTreeMap::new(),
        }
    }

    /// Grant `level` in `domain` (replacing an earlier grant for it).
    #[must_use]
    pub fn with_domain(mut self, domain: impl Into<String>, level: Classification) -> Self {
        self.domains.insert(domain.into(), level);
        self
    }

    /// Grant `level` in every domain.
    #[must_use]
    pub fn with_everywhere(mut self, level: Classification) -> Self {
        self.everywhere = Some(level);
        self
    }

    /// The highest classification readable in `domain`, if any was granted.
    pub fn level_for(&self, domain: &str) -> Option<Classification> {
        match (self.everywhere, self.domains.get(domain).copied()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a record of `classification` in `domain` is readable.
    pub fn allows(&self, domain: &str, classification: Classification) -> bool {
        classification == Classification::Public
            || self.level_for(domain).is_some_and(|l| l >= classification)
    }
}

impl FromIterator<(String, Classification)> for Clearance {
    fn from_iter<I: IntoIterator<Item = (String, Classification)>>(iter: I) -> Self {
        Self {
            everywhere: None,
            domains: iter.into_iter().collect(),
        }
    }
}

impl From<BTreeMap<String, Classification>> for Clearance {
    fn from(domains: BTreeMap<String, Classification>) -> Self {
        Self {
            everywhere: None,
            domains,
        }
    }
}

/// Who is calling a store, on behalf of which tenant and project, and what
/// they may read. Passed first to every store-trait call.
///
/// Build one with a constructor and the `with_*` methods:
///
/// ```
/// use openvibe_protocols::{CallerContext, Classification};
/// let ctx = CallerContext::agent("cro")
///     .with_tenant("acme")
///     .with_domain_clearance("revenue", Classification::Confidential);
/// assert_eq!(ctx.owner_key(), "agent:cro");
/// assert!(ctx.clearance.allows("revenue", Classification::Internal));
/// assert!(!ctx.clearance.allows("hr", Classification::Internal));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallerContext {
    /// The tenant every read and write is confined to.
    pub tenant_id: String,
    /// Who is asking.
    pub principal: Principal,
    /// What they may read beyond their own records.
    pub clearance: Clearance,
    /// The project they work in: records of another project are invisible,
    /// and records they write belong to it.
    pub project_id: Option<String>,
    /// May update and delete records owned by others (maintenance, admin tools).
    pub privileged: bool,
}

impl CallerContext {
    /// A caller in `tenant_id` with public-only clearance, no project, not privileged.
    pub fn new(tenant_id: impl Into<String>, principal: Principal) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            principal,
            clearance: Clearance::public_only(),
            project_id: None,
            privileged: false,
        }
    }

    /// An agent in the default tenant, with public-only clearance.
    pub fn agent(id: impl Into<String>) -> Self {
        Self::new(RecordMeta::DEFAULT_TENANT, Principal::agent(id))
    }

    /// A person in the default tenant, with public-only clearance.
    pub fn user(id: impl Into<String>) -> Self {
        Self::new(RecordMeta::DEFAULT_TENANT, Principal::user(id))
    }

    /// A service in the default tenant, with public-only clearance.
    pub fn service(id: impl Into<String>) -> Self {
        Self::new(RecordMeta::DEFAULT_TENANT, Principal::service(id))
    }

    /// The system itself in the default tenant: service `system`,
    /// unrestricted clearance, privileged. What context-free code (and the
    /// `Default` impl) uses.
    pub fn system() -> Self {
        Self {
            clearance: Clearance::unrestricted(),
            privileged: true,
            ..Self::service("system")
        }
    }

    /// Set the tenant.
    #[must_use]
    pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> Self {
        self.tenant_id = tenant_id.into();
        self
    }

    /// Set the clearance.
    #[must_use]
    pub fn with_clearance(mut self, clearance: Clearance) -> Self {
        self.clearance = clearance;
        self
    }

    /// Grant `level` in `domain`.
    #[must_use]
    pub fn with_domain_clearance(
        mut self,
        domain: impl Into<String>,
        level: Classification,
    ) -> Self {
        self.clearance = self.clearance.with_domain(domain, level);
        self
    }

    /// Set the project.
    #[must_use]
    pub fn with_project(mut self, project_id: impl Into<String>) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    /// Set whether the caller may change records owned by others.
    #[must_use]
    pub fn with_privileged(mut self, privileged: bool) -> Self {
        self.privileged = privileged;
        self
    }

    /// The owner value of records this caller creates (see [`Principal::owner_key`]).
    pub fn owner_key(&self) -> String {
        self.principal.owner_key()
    }

    /// Whether `owner` (a `RecordMeta::owner` value) is this caller.
    pub fn is_owner(&self, owner: &str) -> bool {
        let kind = self.principal.kind.as_str();
        owner.len() == kind.len() + 1 + self.principal.id.len()
            && owner.starts_with(kind)
            && owner.as_bytes().get(kind.len()) == Some(&b':')
            && owner.ends_with(self.principal.id.as_str())
    }

    /// Whether a record with `meta` and `domain` is visible to this caller:
    /// same tenant, no project or the caller's project, and owned by the
    /// caller or allowed by its clearance. The one read rule of every store.
    pub fn can_read(&self, meta: &RecordMeta, domain: &str) -> bool {
        meta.tenant_id == self.tenant_id
            && self.sees_project(meta.project_id.as_deref())
            && (self.clearance.allows(domain, meta.classification) || self.is_owner(&meta.owner))
    }

    /// Whether this caller may update or delete a record with `meta`:
    /// same tenant and project visibility, and owner or privileged.
    pub fn can_modify(&self, meta: &RecordMeta) -> bool {
        meta.tenant_id == self.tenant_id
            && self.sees_project(meta.project_id.as_deref())
            && (self.privileged || self.is_owner(&meta.owner))
    }

    /// Whether records of `project` are visible: records of no project are
    /// visible to all; records of a project only to callers in it.
    pub fn sees_project(&self, project: Option<&str>) -> bool {
        match project {
            None => true,
            Some(p) => self.project_id.as_deref() == Some(p),
        }
    }

    /// A [`StoreError::Unauthorized`] for this caller.
    pub fn unauthorized(
        &self,
        operation: impl Into<String>,
        reason: impl Into<String>,
    ) -> StoreError {
        StoreError::Unauthorized {
            principal: self.principal.to_string(),
            operation: operation.into(),
            reason: reason.into(),
        }
    }
}

impl Default for CallerContext {
    /// [`CallerContext::system`].
    fn default() -> Self {
        Self::system()
    }
}

/// Split `text` into lowercase search terms: maximal runs of alphanumeric
/// characters, deduplicated, in order of first appearance.
///
/// Text queries of every store mean: each term of the query must occur in
/// the record's text, as a word or as the start of a word
/// (`sponsor` matches "sponsor" and "sponsorship", not "cosponsor").
///
/// ```
/// use openvibe_protocols::text_terms;
/// assert_eq!(text_terms("VP-sponsor, vp!"), vec!["vp", "sponsor"]);
/// assert!(text_terms("  ...  ").is_empty());
/// ```
pub fn text_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let term = word.to_lowercase();
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// Longest record id a store accepts, in bytes.
pub const MAX_RECORD_ID_LEN: usize = 256;

/// The id rule every store enforces on writes: not empty, at most
/// [`MAX_RECORD_ID_LEN`] bytes, no control characters and no `/` (ids appear
/// as path segments of the memory filesystem). An empty id given to `store`
/// is replaced by a generated one before this check.
///
/// ```
/// use openvibe_protocols::validate_record_id;
/// assert!(validate_record_id("ins_1").is_ok());
/// assert!(validate_record_id("a/b").is_err());
/// assert!(validate_record_id("").is_err());
/// ```
pub fn validate_record_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::invalid("id", "must not be empty"));
    }
    if id.len() > MAX_RECORD_ID_LEN {
        return Err(StoreError::invalid(
            "id",
            format!("longer than {MAX_RECORD_ID_LEN} bytes"),
        ));
    }
    if id.chars().any(|c| c.is_control() || c == '/') {
        return Err(StoreError::invalid(
            "id",
            "must not contain `/` or control characters",
        ));
    }
    Ok(())
}

fn non_empty(value: impl Into<String>) -> Option<String> {
    let value = value.into();
    (!value.is_empty()).then_some(value)
}

/// Builder methods the query types share, by group.
macro_rules! query_builders {
    (common) => {
        /// Filter by entity.
        #[must_use]
        pub fn entity(mut self, entity: impl Into<String>) -> Self {
            self.entity = non_empty(entity);
            self
        }

        /// Filter by domain.
        #[must_use]
        pub fn domain(mut self, domain: impl Into<String>) -> Self {
            self.domain = non_empty(domain);
            self
        }

        /// Filter by tags (any of them).
        #[must_use]
        pub fn tags<I, S>(mut self, tags: I) -> Self
        where
            I: IntoIterator<Item = S>,
            S: Into<String>,
        {
            self.tags = tags.into_iter().map(Into::into).collect();
            self
        }

        /// Filter by text (every term must occur).
        #[must_use]
        pub fn text(mut self, text: impl Into<String>) -> Self {
            self.text = non_empty(text);
            self
        }

        /// Only records from this time on.
        #[must_use]
        pub fn since(mut self, since: DateTime<Utc>) -> Self {
            self.since = Some(since);
            self
        }

        /// Set the limit.
        #[must_use]
        pub fn limit(mut self, limit: usize) -> Self {
            self.limit = limit;
            self
        }
    };
    (agent) => {
        /// Filter by agent.
        #[must_use]
        pub fn agent(mut self, agent_id: impl Into<String>) -> Self {
            self.agent_id = non_empty(agent_id);
            self
        }
    };
    (scored) => {
        /// Only records that name no entity (see the `general` field).
        #[must_use]
        pub fn general(mut self) -> Self {
            self.general = true;
            self
        }

        /// Filter by minimum confidence.
        #[must_use]
        pub fn min_confidence(mut self, min_confidence: f64) -> Self {
            self.min_confidence = min_confidence;
            self
        }

        /// Set access tracking.
        #[must_use]
        pub fn track_access(mut self, track: bool) -> Self {
            self.track_access = track;
            self
        }
    };
}

/// Filters of [`FactStore::query`]. Empty strings mean "no filter".
///
/// Results are ordered by relevance when `text` is given (each query term
/// matched as a whole word counts 2, as a word prefix 1), then confidence
/// (highest first), then recency (`meta.created_at`, newest first), then id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FactQuery {
    /// Only facts about this entity.
    pub entity: Option<String>,
    /// Only general facts: those that name no entity (ignored when
    /// `entity` is set). How a scope about one entity also finds the
    /// knowledge that applies to every entity.
    pub general: bool,
    /// Only facts of this domain.
    pub domain: Option<String>,
    /// Only facts with any of these tags (none: no filter).
    pub tags: Vec<String>,
    /// Only facts whose content contains every term (see [`text_terms`]).
    pub text: Option<String>,
    /// Only facts with at least this confidence.
    pub min_confidence: f64,
    /// Only facts created at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// At most this many results (default 10).
    pub limit: usize,
    /// Count the returned facts as accessed (`access_count` + 1,
    /// `last_accessed` = now), persisted by the store.
    pub track_access: bool,
}

impl Default for FactQuery {
    fn default() -> Self {
        Self {
            entity: None,
            general: false,
            domain: None,
            tags: Vec::new(),
            text: None,
            min_confidence: 0.0,
            since: None,
            limit: 10,
            track_access: false,
        }
    }
}

impl FactQuery {
    /// No filters, limit 10.
    pub fn new() -> Self {
        Self::default()
    }

    /// Entity, domain, tags and text from a [`MemoryScope`].
    pub fn from_scope(scope: &MemoryScope) -> Self {
        Self {
            entity: scope.entity.clone().and_then(non_empty),
            domain: scope.domain.clone().and_then(non_empty),
            tags: scope.tags.clone(),
            text: scope.query.clone().and_then(non_empty),
            ..Self::default()
        }
    }

    query_builders!(common);
    query_builders!(scored);
}

/// Filters of [`EpisodicStore::query`]. Empty strings mean "no filter".
///
/// Results are ordered newest first (`timestamp`), then by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EpisodeQuery {
    /// Only episodes of this agent.
    pub agent_id: Option<String>,
    /// Only episodes about this entity.
    pub entity: Option<String>,
    /// Only episodes of this domain.
    pub domain: Option<String>,
    /// Only episodes with any of these tags.
    pub tags: Vec<String>,
    /// Only episodes whose [`Episode::searchable_text`] contains every term.
    pub text: Option<String>,
    /// Only episodes with `timestamp` at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// At most this many results (default 50).
    pub limit: usize,
}

impl Default for EpisodeQuery {
    fn default() -> Self {
        Self {
            agent_id: None,
            entity: None,
            domain: None,
            tags: Vec::new(),
            text: None,
            since: None,
            limit: 50,
        }
    }
}

impl EpisodeQuery {
    /// No filters, limit 50.
    pub fn new() -> Self {
        Self::default()
    }

    /// Episodes of `agent_id`, limit 50.
    pub fn for_agent(agent_id: impl Into<String>) -> Self {
        Self::default().agent(agent_id)
    }

    query_builders!(common);
    query_builders!(agent);
}

/// Filters of [`InsightStore::query`]. Empty strings mean "no filter".
///
/// Results are ordered by confidence (highest first), then recency
/// (`meta.created_at`, newest first), then id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InsightQuery {
    /// Only insights of this agent.
    pub agent_id: Option<String>,
    /// Only insights about this entity.
    pub entity: Option<String>,
    /// Only general insights: those that name no entity (ignored when
    /// `entity` is set). How a scope about one entity also finds the
    /// knowledge that applies to every entity.
    pub general: bool,
    /// Only insights of this domain.
    pub domain: Option<String>,
    /// Only insights with any of these tags.
    pub tags: Vec<String>,
    /// Only insights whose content contains every term.
    pub text: Option<String>,
    /// Only insights with at least this confidence.
    pub min_confidence: f64,
    /// Only insights in this status (`None`: any).
    pub status: Option<InsightStatus>,
    /// Only insights created at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// At most this many results (default 10).
    pub limit: usize,
    /// Count the returned insights as accessed (persisted by the store).
    pub track_access: bool,
}

impl Default for InsightQuery {
    fn default() -> Self {
        Self {
            agent_id: None,
            entity: None,
            general: false,
            domain: None,
            tags: Vec::new(),
            text: None,
            min_confidence: 0.0,
            status: None,
            since: None,
            limit: 10,
            track_access: false,
        }
    }
}

impl InsightQuery {
    /// No filters, limit 10.
    pub fn new() -> Self {
        Self::default()
    }

    /// Insights of `agent_id`, limit 10.
    pub fn for_agent(agent_id: impl Into<String>) -> Self {
        Self::default().agent(agent_id)
    }

    /// Filter by status.
    #[must_use]
    pub fn status(mut self, status: InsightStatus) -> Self {
        self.status = Some(status);
        self
    }

    query_builders!(common);
    query_builders!(agent);
    query_builders!(scored);
}

/// Shared, classified facts (workspace memory).
///
/// See the module documentation for the caller-context rules every
/// implementation enforces.
#[async_trait]
pub trait FactStore: Send + Sync {
    /// Insert `fact`, or replace the fact with the same id (which the caller
    /// must be allowed to modify; its owner, `created_at` and access
    /// statistics are kept). An empty id gets a generated one. Returns the
    /// fact as stored.
    async fn store(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError>;

    /// The fact `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Fact>, StoreError>;

    /// Readable facts matching `query`, ordered as documented on [`FactQuery`].
    async fn query(&self, ctx: &CallerContext, query: &FactQuery) -> Result<Vec<Fact>, StoreError>;

    /// Replace an existing fact. [`StoreError::NotFound`] when it does not
    /// exist (or is not readable), [`StoreError::Unauthorized`] when the
    /// caller may not modify it.
    async fn update(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError>;

    /// Delete a fact (same errors as [`FactStore::update`]).
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;

    /// Count the readable facts among `ids` as accessed; returns how many were.
    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError>;
}

/// L2 episodes (one per node run). Append-mostly: no update.
#[async_trait]
pub trait EpisodicStore: Send + Sync {
    /// Insert `episode` (or replace the one with the same id, which the
    /// caller must be allowed to modify). An empty id gets a generated one.
    async fn store(&self, ctx: &CallerContext, episode: Episode) -> Result<Episode, StoreError>;

    /// The episode `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Episode>, StoreError>;

    /// Readable episodes matching `query`, newest first.
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &EpisodeQuery,
    ) -> Result<Vec<Episode>, StoreError>;

    /// Delete an episode ([`StoreError::NotFound`] / [`StoreError::Unauthorized`]).
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;
}

/// L3 insights (patterns distilled from episodes).
#[async_trait]
pub trait InsightStore: Send + Sync {
    /// Insert `insight`, or replace the one with the same id (as [`FactStore::store`]).
    async fn store(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError>;

    /// The insight `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Insight>, StoreError>;

    /// Readable insights matching `query`, ordered as documented on [`InsightQuery`].
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &InsightQuery,
    ) -> Result<Vec<Insight>, StoreError>;

    /// Replace an existing insight (as [`FactStore::update`]).
    async fn update(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError>;

    /// Delete an insight (as [`FactStore::delete`]).
    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;

    /// The readable, active insight of `agent_id` most similar to `content`:
    /// the one sharing the most words (see [`text_terms`]; whole words only)
    /// with it, at least `min(3, words in content)`; ties go to higher
    /// confidence, then lower id. `None` when nothing is similar enough.
    async fn find_similar(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        content: &str,
    ) -> Result<Option<Insight>, StoreError>;

    /// Count the readable insights among `ids` as accessed; returns how many were.
    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn clearance_levels() {
        let c = Clearance::public_only();
        assert!(c.allows("x", Classification::Public));
        assert!(!c.allows("x", Classification::Internal));
        let c = Clearance::public_only().with_domain("revenue", Classification::Confidential);
        assert!(c.allows("revenue", Classification::Internal));
        assert!(c.allows("revenue", Classification::Confidential));
        assert!(!c.allows("revenue", Classification::Restricted));
        assert!(!c.allows("marketing", Classification::Internal));
        let c = c.with_everywhere(Classification::Internal);
        assert!(c.allows("marketing", Classification::Internal));
        assert_eq!(c.level_for("revenue"), Some(Classification::Confidential));
        assert!(Clearance::unrestricted().allows("any", Classification::Restricted));
        let c: Clearance = [("hr".to_owned(), Classification::Restricted)]
            .into_iter()
            .collect();
        assert!(c.allows("hr", Classification::Restricted));
    }

    #[test]
    fn owner_keys_distinguish_kinds() {
        let agent = CallerContext::agent("cro");
        assert_eq!(agent.owner_key(), "agent:cro");
        assert!(agent.is_owner("agent:cro"));
        assert!(!agent.is_owner("user:cro"));
        assert!(!agent.is_owner("agent:cr"));
        assert!(!agent.is_owner("agent:xcro"));
        assert!(!agent.is_owner("agentXcro"));
        assert_eq!(CallerContext::user("cro").owner_key(), "user:cro");
        assert_eq!(Principal::service("api").to_string(), "service:api");
    }

    #[test]
    fn read_and_modify_rules() {
        let meta = RecordMeta {
            owner: "agent:cro".into(),
            classification: Classification::Confidential,
            ..RecordMeta::default()
        };
        let cro = CallerContext::agent("cro");
        let cmo = CallerContext::agent("cmo");
        assert!(
            cro.can_read(&meta, "revenue"),
            "owners read their own records"
        );
        assert!(!cmo.can_read(&meta, "revenue"));
        let cleared = cmo
            .clone()
            .with_domain_clearance("revenue", Classification::Confidential);
        assert!(cleared.can_read(&meta, "revenue"));
        assert!(!cleared.can_modify(&meta), "clearance is not ownership");
        assert!(cro.can_modify(&meta));
        assert!(CallerContext::system().can_modify(&meta));
        assert!(
            !CallerContext::system()
                .with_tenant("other")
                .can_read(&meta, "revenue")
        );
        let in_project = RecordMeta {
            project_id: Some("p1".into()),
            ..meta.clone()
        };
        assert!(!cro.can_read(&in_project, "revenue"));
        assert!(
            cro.clone()
                .with_project("p1")
                .can_read(&in_project, "revenue")
        );
        assert!(!cro.clone().with_project("p2").can_modify(&in_project));
        assert_eq!(CallerContext::default(), CallerContext::system());
    }

    #[test]
    fn terms_are_lowercase_words() {
        assert_eq!(text_terms("Hello, WORLD hello"), vec!["hello", "world"]);
        assert_eq!(text_terms("Ärger über 2x"), vec!["ärger", "über", "2x"]);
    }

    #[test]
    fn queries_have_builders_and_defaults() {
        let q = FactQuery::new()
            .entity("acme")
            .domain("")
            .tags(["a"])
            .text("x")
            .min_confidence(0.5)
            .limit(3)
            .track_access(true);
        assert_eq!(q.entity.as_deref(), Some("acme"));
        assert_eq!(q.domain, None, "empty means no filter");
        assert_eq!(q.limit, 3);
        assert_eq!(FactQuery::default().limit, 10);
        assert_eq!(EpisodeQuery::for_agent("cro").limit, 50);
        assert_eq!(
            InsightQuery::for_agent("cro").agent_id.as_deref(),
            Some("cro")
        );
        let scope = MemoryScope {
            entity: Some("acme".into()),
            query: Some(String::new()),
            ..MemoryScope::default()
        };
        let q = FactQuery::from_scope(&scope);
        assert_eq!(q.entity.as_deref(), Some("acme"));
        assert_eq!(q.text, None);
    }

    // --- Ported from the seed's tests/test_store_protocols.py: the store
    // traits are object-safe contracts, usable as `Arc<dyn ..>`. ---

    fn is_protocol<T: ?Sized + Send + Sync>(_: Option<Arc<T>>) -> bool {
        true
    }

    #[test]
    fn test_fact_store_is_protocol() {
        assert!(is_protocol::<dyn FactStore>(None));
    }

    #[test]
    fn test_episodic_store_is_protocol() {
        assert!(is_protocol::<dyn EpisodicStore>(None));
    }

    #[test]
    fn test_insight_store_is_protocol() {
        assert!(is_protocol::<dyn InsightStore>(None));
    }
}
