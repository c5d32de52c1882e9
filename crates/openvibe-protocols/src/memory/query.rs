//! Queries: the builder types callers use ([`FactQuery`], [`EpisodeQuery`],
//! [`InsightQuery`]) and the one normalised [`RecordFilter`] every backend
//! interprets.
//!
//! A backend never reads the query types' fields itself: it calls
//! `filter()`, which resolves "empty means no filter", the `general` flag,
//! the text terms and the relevance order once, for every backend alike.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::InsightStatus;
use crate::MemoryScope;

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

        /// Only records of these namespaces. Intersected with what the
        /// caller may read, never widened; empty (the default): an
        /// ungoverned caller's every namespace, a governed caller's recall
        /// namespaces (`self + shared`).
        #[must_use]
        pub fn namespaces<I, S>(mut self, namespaces: I) -> Self
        where
            I: IntoIterator<Item = S>,
            S: Into<String>,
        {
            self.namespaces = namespaces.into_iter().map(Into::into).collect();
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

/// Filters of [`FactStore::query`](crate::RecordStore::query). Empty strings mean "no filter".
///
/// Results are ordered by relevance when `text` is given (each query term
/// matched as a whole word counts 2, as a word prefix 1), then confidence
/// (highest first), then recency (`meta.created_at`, newest first), then id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// Only records of these namespaces (see the `namespaces` builder).
    pub namespaces: Vec<String>,
    /// Only facts whose content contains every term (see [`text_terms`]).
    pub text: Option<String>,
    /// Only facts with at least this confidence.
    pub min_confidence: f64,
    /// Only facts created at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Continue after the record this cursor names
    /// ([`FactQuery::cursor_of`]): keyset paging in the query's order
    /// (not with `text`, whose relevance order is one page).
    pub cursor: Option<String>,
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
            namespaces: Vec::new(),
            text: None,
            min_confidence: 0.0,
            since: None,
            cursor: None,
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

/// Filters of [`EpisodicStore::query`](crate::RecordStore::query). Empty strings mean "no filter".
///
/// Results are ordered newest first (`timestamp`), then by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// Only records of these namespaces (see the `namespaces` builder).
    pub namespaces: Vec<String>,
    /// Only episodes whose [`Episode::searchable_text`](super::Episode::searchable_text) contains every term.
    pub text: Option<String>,
    /// Only episodes with `timestamp` at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Continue after the episode this cursor names
    /// ([`EpisodeQuery::cursor_of`]): keyset paging, newest first.
    pub cursor: Option<String>,
    /// At most this many results (default 50).
    pub limit: usize,
}

impl Default for EpisodeQuery {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            agent_id: None,
            entity: None,
            domain: None,
            tags: Vec::new(),
            text: None,
            since: None,
            cursor: None,
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

/// Filters of [`InsightStore::query`](crate::RecordStore::query). Empty strings mean "no filter".
///
/// Results are ordered by confidence (highest first), then recency
/// (`meta.created_at`, newest first), then id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// Only records of these namespaces (see the `namespaces` builder).
    pub namespaces: Vec<String>,
    /// Only insights whose content contains every term.
    pub text: Option<String>,
    /// Only insights with at least this confidence.
    pub min_confidence: f64,
    /// Only insights in this status (`None`: any).
    pub status: Option<InsightStatus>,
    /// Only insights created at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Continue after the insight this cursor names
    /// ([`InsightQuery::cursor_of`]): keyset paging in the query's order.
    pub cursor: Option<String>,
    /// At most this many results (default 10).
    pub limit: usize,
    /// Count the returned insights as accessed (persisted by the store).
    pub track_access: bool,
}

impl Default for InsightQuery {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            agent_id: None,
            entity: None,
            general: false,
            domain: None,
            tags: Vec::new(),
            text: None,
            min_confidence: 0.0,
            status: None,
            since: None,
            cursor: None,
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

/// One query, normalised: the form every backend interprets.
///
/// Built by [`FactQuery::filter`], [`EpisodeQuery::filter`] and
/// [`InsightQuery::filter`]; a filter field that is `None` or empty does
/// not filter.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordFilter {
    /// Only records of these namespaces (empty: the caller's default
    /// scope, see [`CallerContext::search_scope`](crate::CallerContext::search_scope)).
    pub namespaces: Vec<String>,
    /// Only records of this agent.
    pub agent_id: Option<String>,
    /// Only records about this entity; `Some("")`: only records that name
    /// no entity (general knowledge).
    pub entity: Option<String>,
    /// Only records of this domain.
    pub domain: Option<String>,
    /// Only records with any of these tags.
    pub tags: Vec<String>,
    /// Only records whose text contains every term, each as a word or the
    /// start of a word (see [`text_terms`]).
    pub terms: Vec<String>,
    /// Only records with at least this confidence (records without a
    /// confidence have 1.0).
    pub min_confidence: f64,
    /// Only records at or after this time (creation time; an episode's
    /// `timestamp`).
    pub since: Option<DateTime<Utc>>,
    /// Only insights in this status.
    pub status: Option<InsightStatus>,
    /// Only raw calls made for one of these episodes (empty: any).
    pub episode_ids: Vec<String>,
    /// Only records after this `(time, id)` in newest-first order (keyset
    /// paging of time-ordered kinds: older, or as old with a greater id).
    pub after: Option<(DateTime<Utc>, String)>,
    /// With `after`, for the kinds ordered by confidence first (facts,
    /// insights): the confidence of the position, so that the keyset is
    /// (confidence DESC, time DESC, id).
    pub after_confidence: Option<f64>,
    /// Order by text relevance first: each term matched as a whole word
    /// counts 2, as a word prefix 1.
    pub relevance: bool,
    /// At most this many results.
    pub limit: usize,
    /// Count the returned records as accessed (records that track access).
    pub track_access: bool,
}

impl RecordFilter {
    /// No filters, `limit` results.
    pub fn new(limit: usize) -> Self {
        Self {
            namespaces: Vec::new(),
            agent_id: None,
            entity: None,
            domain: None,
            tags: Vec::new(),
            terms: Vec::new(),
            min_confidence: 0.0,
            since: None,
            status: None,
            episode_ids: Vec::new(),
            after: None,
            after_confidence: None,
            relevance: false,
            limit,
            track_access: false,
        }
    }
}

/// The query's value, with "empty means no filter".
fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The entity filter: the entity, else "no entity" for `general` queries.
fn entity_filter(entity: &Option<String>, general: bool) -> Option<String> {
    match given(entity) {
        Some(e) => Some(e),
        None if general => Some(String::new()),
        None => None,
    }
}

/// The terms of an optional text.
fn terms_of(text: &Option<String>) -> Vec<String> {
    text.as_deref().map(text_terms).unwrap_or_default()
}

impl FactQuery {
    /// This query, normalised: relevance order when it has text terms.
    pub fn filter(&self) -> RecordFilter {
        let terms = terms_of(&self.text);
        RecordFilter {
            entity: entity_filter(&self.entity, self.general),
            domain: given(&self.domain),
            tags: self.tags.clone(),
            namespaces: self.namespaces.clone(),
            relevance: !terms.is_empty(),
            terms,
            min_confidence: self.min_confidence,
            since: self.since,
            track_access: self.track_access,
            ..RecordFilter::new(self.limit)
        }
    }
}

impl EpisodeQuery {
    /// This query, normalised.
    pub fn filter(&self) -> RecordFilter {
        RecordFilter {
            agent_id: given(&self.agent_id),
            entity: given(&self.entity),
            domain: given(&self.domain),
            tags: self.tags.clone(),
            namespaces: self.namespaces.clone(),
            terms: terms_of(&self.text),
            since: self.since,
            ..RecordFilter::new(self.limit)
        }
    }
}

impl InsightQuery {
    /// This query, normalised (insights are not ordered by relevance).
    pub fn filter(&self) -> RecordFilter {
        RecordFilter {
            agent_id: given(&self.agent_id),
            entity: entity_filter(&self.entity, self.general),
            domain: given(&self.domain),
            tags: self.tags.clone(),
            namespaces: self.namespaces.clone(),
            terms: terms_of(&self.text),
            min_confidence: self.min_confidence,
            since: self.since,
            status: self.status,
            track_access: self.track_access,
            ..RecordFilter::new(self.limit)
        }
    }
}

/// A query of one record kind ([`FactQuery`], [`EpisodeQuery`],
/// [`InsightQuery`]): what [`RecordStore::query`](crate::RecordStore::query)
/// takes. Every backend runs its normalised form ([`RecordQuery::filter`])
/// and audits it as it was given (serialised).
pub trait RecordQuery: Serialize + Send + Sync {
    /// This query, normalised, its cursor included: a cursor no query
    /// returned, or one given with a relevance-ordered text, is
    /// [`StoreError::InvalidInput`](super::StoreError::InvalidInput).
    fn filter(&self) -> Result<RecordFilter, super::StoreError>;
}

macro_rules! record_query {
    ($($query:ty => $confidence:expr),*) => {$(
        impl RecordQuery for $query {
            fn filter(&self) -> Result<RecordFilter, super::StoreError> {
                with_cursor(<$query>::filter(self), self.cursor.as_deref(), $confidence)
            }
        }
    )*};
}
record_query!(FactQuery => true, EpisodeQuery => false, InsightQuery => true);

/// `filter` continuing after `cursor` (see [`record_cursor`]).
fn with_cursor(
    mut filter: RecordFilter,
    cursor: Option<&str>,
    by_confidence: bool,
) -> Result<RecordFilter, super::StoreError> {
    let Some(cursor) = cursor else {
        return Ok(filter);
    };
    let bad =
        || super::StoreError::invalid("cursor", "not a cursor returned by a query of this kind");
    if filter.relevance {
        return Err(super::StoreError::invalid(
            "cursor",
            "a text query is ordered by relevance and answers in one page: page without `text`",
        ));
    }
    let rest = if by_confidence {
        let (bits, rest) = cursor.split_once('|').ok_or_else(bad)?;
        let bits = u64::from_str_radix(bits, 16).map_err(|_| bad())?;
        let confidence = f64::from_bits(bits);
        if !confidence.is_finite() {
            return Err(bad());
        }
        filter.after_confidence = Some(confidence);
        rest
    } else {
        cursor
    };
    let (micros, id) = super::parse_cursor(rest).map_err(|_| bad())?;
    let time = DateTime::from_timestamp_micros(micros).ok_or_else(bad)?;
    filter.after = Some((time, id));
    Ok(filter)
}

/// The cursor that continues a query after a record at `time` with `id`
/// (and `confidence`, for the kinds ordered by it): what
/// [`FactQuery::cursor_of`], [`EpisodeQuery::cursor_of`] and
/// [`InsightQuery::cursor_of`] return. Opaque to callers; exact (the
/// confidence is written bit for bit).
pub fn record_cursor(confidence: Option<f64>, time: DateTime<Utc>, id: &str) -> String {
    let position = super::page_cursor(time, id);
    match confidence {
        Some(c) => format!("{:016x}|{position}", c.to_bits()),
        None => position,
    }
}

impl FactQuery {
    /// The cursor of a page that ends with `fact`.
    pub fn cursor_of(fact: &super::Fact) -> String {
        record_cursor(Some(fact.confidence), fact.meta.created_at, &fact.id)
    }
}

impl InsightQuery {
    /// The cursor of a page that ends with `insight`.
    pub fn cursor_of(insight: &super::Insight) -> String {
        record_cursor(
            Some(insight.confidence),
            insight.meta.created_at,
            &insight.id,
        )
    }
}

impl EpisodeQuery {
    /// The cursor of a page that ends with `episode`.
    pub fn cursor_of(episode: &super::Episode) -> String {
        record_cursor(None, episode.timestamp, &episode.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn filters_normalise_once_for_every_backend() {
        let f = FactQuery::new()
            .general()
            .domain("")
            .text("VP, sponsor")
            .filter();
        assert_eq!(f.entity.as_deref(), Some(""), "general: no entity");
        assert_eq!(f.domain, None);
        assert_eq!(f.terms, vec!["vp", "sponsor"]);
        assert!(f.relevance);
        let f = FactQuery::new().entity("acme").general().filter();
        assert_eq!(
            f.entity.as_deref(),
            Some("acme"),
            "an entity wins over general"
        );
        assert!(!f.relevance);
        let f = InsightQuery::for_agent("cro")
            .status(InsightStatus::Active)
            .text("x")
            .track_access(true)
            .filter();
        assert_eq!(f.agent_id.as_deref(), Some("cro"));
        assert_eq!(f.status, Some(InsightStatus::Active));
        assert!(!f.relevance && f.track_access);
        let f = EpisodeQuery {
            entity: Some(String::new()),
            ..EpisodeQuery::new()
        }
        .filter();
        assert_eq!(f.entity, None, "episodes have no general flag");
        assert_eq!(f.limit, 50);
    }
}
