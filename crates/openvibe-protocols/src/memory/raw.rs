//! The L1 raw log: every LLM call a role's operators make ([`RawLogStore`]).
//!
//! Append-only and governed like every record kind: the owner is the
//! caller's principal (the role's), reads follow the same rule
//! ([`CallerContext::can_read`]: tenant, namespace grants, project,
//! ownership, clearance on the call's domain), and a record's expiry
//! (`meta.expires_at`, capped by the governance retention of kind
//! `raw_call`) hides it from that instant.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::query::RecordFilter;
use super::{CallerContext, Page, RawCall, StoreError, parse_cursor};

/// The most raw calls one query returns.
pub const MAX_RAW_PAGE: usize = 1000;

/// Filters of [`RawLogStore::query`]. Empty strings mean "no filter".
/// Results are newest first (`timestamp`, then id), a page at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct RawCallQuery {
    /// Only calls of this agent.
    pub agent_id: Option<String>,
    /// Only calls made for one of these episodes (the calls they were
    /// made from; empty: any).
    pub episode_ids: Vec<String>,
    /// Only calls of these namespaces (empty: the caller's default scope).
    pub namespaces: Vec<String>,
    /// Only calls whose [`RawCall::searchable_text`] contains every term.
    pub text: Option<String>,
    /// Only calls made at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
    /// At most this many calls (default 50, at most [`MAX_RAW_PAGE`]).
    pub limit: usize,
}

impl Default for RawCallQuery {
    fn default() -> Self {
        Self {
            agent_id: None,
            episode_ids: Vec::new(),
            namespaces: Vec::new(),
            text: None,
            since: None,
            cursor: None,
            limit: 50,
        }
    }
}

impl RawCallQuery {
    /// No filters, limit 50.
    pub fn new() -> Self {
        Self::default()
    }

    /// The calls of `agent_id`.
    pub fn for_agent(agent_id: impl Into<String>) -> Self {
        Self {
            agent_id: Some(agent_id.into()),
            ..Self::default()
        }
    }

    /// Only the calls made for episode `episode_id` (or another one given).
    #[must_use]
    pub fn episode(mut self, episode_id: impl Into<String>) -> Self {
        self.episode_ids.push(episode_id.into());
        self
    }

    /// Only the calls made for these episodes.
    #[must_use]
    pub fn episodes<I, S>(mut self, episode_ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.episode_ids
            .extend(episode_ids.into_iter().map(Into::into));
        self
    }

    /// Filter by text (every term must occur).
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Only calls made at or after `since`.
    #[must_use]
    pub fn since(mut self, since: DateTime<Utc>) -> Self {
        self.since = Some(since);
        self
    }

    /// Continue after a page's `next_cursor`.
    #[must_use]
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// At most `limit` calls.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// This query, normalised: a limit above [`MAX_RAW_PAGE`] or a cursor
    /// no query returned is `InvalidInput`. The filter asks for one call
    /// more than the page, which tells whether another page follows.
    pub fn filter(&self) -> Result<RecordFilter, StoreError> {
        if self.limit > MAX_RAW_PAGE {
            return Err(StoreError::invalid(
                "limit",
                format!("{} is above the page limit of {MAX_RAW_PAGE}", self.limit),
            ));
        }
        let after = match &self.cursor {
            None => None,
            Some(cursor) => {
                let (micros, id) = parse_cursor(cursor)?;
                let time = DateTime::from_timestamp_micros(micros)
                    .ok_or_else(|| StoreError::invalid("cursor", "time out of range"))?;
                Some((time, id))
            }
        };
        let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        Ok(RecordFilter {
            agent_id: given(&self.agent_id),
            episode_ids: self.episode_ids.clone(),
            namespaces: self.namespaces.clone(),
            terms: self
                .text
                .as_deref()
                .map(super::text_terms)
                .unwrap_or_default(),
            since: self.since,
            after,
            ..RecordFilter::new(self.limit.saturating_add(1))
        })
    }
}

/// Raw calls list newest first by their time.
impl super::Listed for RawCall {
    fn cursor(&self) -> String {
        super::page_cursor(self.timestamp, &self.id)
    }
}

/// How long and how much of an agent's raw log is kept
/// ([`RawLogStore::prune`]). The default keeps everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RawRetention {
    /// Calls older than this go.
    #[serde(default, with = "secs_opt", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub max_age: Option<Duration>,
    /// Only the newest this many calls of the agent stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u64>,
}

impl RawRetention {
    /// Keep calls for at most `age`.
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    /// Keep at most the newest `calls` calls.
    #[must_use]
    pub fn max_calls(mut self, calls: u64) -> Self {
        self.max_calls = Some(calls);
        self
    }

    /// Whether this retention keeps everything.
    pub fn keeps_all(&self) -> bool {
        self.max_age.is_none() && self.max_calls.is_none()
    }

    /// The oldest time a call may have at `now` (`None`: no age limit).
    pub fn cutoff(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let age = chrono::TimeDelta::from_std(self.max_age?).ok()?;
        // Nothing is older than the oldest time PostgreSQL holds.
        let oldest = DateTime::from_timestamp_micros(crate::MIN_CURSOR_MICROS)?;
        now.checked_sub_signed(age).map(|cutoff| cutoff.max(oldest))
    }
}

/// Serde of an optional duration as whole seconds (`"max_age": 86400`).
mod secs_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(d.as_secs()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_secs))
    }
}

/// The L1 raw log: every LLM call, append-only.
///
/// See the module documentation for the governance rules; the store
/// traits' caller-context rules apply as to every other store.
#[async_trait]
pub trait RawLogStore: Send + Sync {
    /// Append `calls` in one step: all or none. Ids are generated when
    /// empty; an id that already exists is [`StoreError::Conflict`]
    /// (raw calls are never replaced). Returns the calls as stored.
    async fn append(
        &self,
        ctx: &CallerContext,
        calls: Vec<RawCall>,
    ) -> Result<Vec<RawCall>, StoreError>;

    /// The call `id`, when it exists and the caller may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<RawCall>, StoreError>;

    /// A page of the readable calls matching `query`, newest first.
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &RawCallQuery,
    ) -> Result<Page<RawCall>, StoreError>;

    /// Delete `agent_id`'s calls that `retention` no longer keeps (older
    /// than its age, beyond its newest `max_calls`) among those the caller
    /// may delete; returns how many went.
    async fn prune(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        retention: &RawRetention,
    ) -> Result<u64, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cutoff_is_never_older_than_postgresql_holds() {
        let now = Utc::now();
        let day = RawRetention::default().max_age(Duration::from_secs(86_400));
        assert_eq!(day.cutoff(now), Some(now - chrono::TimeDelta::days(1)));
        let ages = RawRetention::default().max_age(Duration::from_secs(894_621_236_472));
        let oldest = DateTime::from_timestamp_micros(crate::MIN_CURSOR_MICROS).unwrap();
        assert_eq!(ages.cutoff(now), Some(oldest));
        assert_eq!(RawRetention::default().cutoff(now), None);
    }
}
