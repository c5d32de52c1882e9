//! The in-memory L1 raw log ([`InMemoryRawLog`]).

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::validate_raw_call;
use openvibe_protocols::{
    CallerContext, Page, RawCall, RawCallQuery, RawLogStore, RawRetention, RecordFilter,
    RecordMeta, StoreError,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::{Maintained, Pass, Swept};
use crate::index::{Indexed, WalkBy};
use crate::tables::Tables;

impl Indexed for RawCall {
    const KIND: &'static str = "raw_call";
    type Order = (std::cmp::Reverse<DateTime<Utc>>, String);

    fn id(&self) -> &str {
        &self.id
    }
    fn set_id(&mut self, id: String) {
        self.id = id;
    }
    fn meta(&self) -> &RecordMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut RecordMeta {
        &mut self.meta
    }
    fn entity(&self) -> &str {
        &self.entity
    }
    fn domain(&self) -> &str {
        &self.domain
    }
    fn tags(&self) -> &[String] {
        &[]
    }
    fn agent_id(&self) -> Option<&str> {
        Some(&self.agent_id)
    }
    fn episode_id(&self) -> Option<&str> {
        self.episode_id.as_deref()
    }
    fn search_text(&self) -> Cow<'_, str> {
        Cow::Owned(self.searchable_text())
    }
    fn order_key(&self) -> Self::Order {
        (std::cmp::Reverse(self.timestamp), self.id.clone())
    }
    fn confidence(&self) -> f64 {
        1.0
    }
    fn time(&self) -> DateTime<Utc> {
        self.timestamp
    }
    const WALK: WalkBy = WalkBy::Time;
    fn validate(&self) -> Result<(), StoreError> {
        validate_raw_call(self).map(drop)
    }
    fn prepare_new(&mut self) {
        // The origin is in the record's own fields; the request keeps none
        // (it is never serialised, so no backend could keep it).
        self.request.origin = None;
        // Times to the microsecond, as PostgreSQL keeps them, so cursors
        // and comparisons agree on every backend.
        self.timestamp = micros(self.timestamp);
        self.meta.created_at = self.timestamp;
    }
    fn keep_from(&mut self, _old: &Self) {}
    fn record_access(&mut self, _now: DateTime<Utc>) {}
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String)) {
        visit(&mut self.meta.tenant_id);
        visit(&mut self.meta.namespace);
        visit(&mut self.meta.owner);
        visit(&mut self.meta.source);
        visit(&mut self.entity);
        visit(&mut self.domain);
        visit(&mut self.agent_id);
        visit(&mut self.operator_id);
        visit(&mut self.node_name);
        visit(&mut self.model);
    }
}

fn micros(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t)
}

/// A new raw call id: `raw_` and a random UUID.
pub fn new_raw_id() -> String {
    format!("raw_{}", uuid::Uuid::new_v4().simple())
}

/// In-memory [`RawLogStore`], indexed by agent, entity, domain and text
/// term and ordered by time per tenant (the same tables as episodes).
#[derive(Default)]
pub struct InMemoryRawLog {
    tables: Tables<RawCall>,
}

impl InMemoryRawLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores).
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.tables.set_audit(audit);
        self
    }

    /// The trail this log audits into.
    pub fn audit(&self) -> Arc<InMemoryAuditLog> {
        self.tables.audit_log()
    }
}

/// The raw log in maintenance: swept by expiry and erasure (the calls
/// behind an episode the sweep takes go with it); its calls are pruned by
/// retention, never counted or moved by namespace.
#[async_trait]
impl Maintained for InMemoryRawLog {
    fn keeps(&self, kind: &str) -> bool {
        kind == <RawCall as Indexed>::KIND
    }

    fn counts(
        &self,
        _ctx: &CallerContext,
        _kind: &str,
    ) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
        Ok(Default::default())
    }

    fn move_namespace(
        &self,
        _ctx: &CallerContext,
        _kind: &str,
        _from: &str,
        _to: &str,
        _batch: usize,
    ) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn sweep(
        &self,
        ctx: &CallerContext,
        _kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        let behind = |r: &RawCall| {
            r.episode_id
                .as_ref()
                .is_some_and(|e| swept.episodes.contains(e))
        };
        Ok(self.tables.sweep(ctx, swept.sweep, &behind, pass)?.len() as u64)
    }
}

impl std::fmt::Debug for InMemoryRawLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryRawLog").finish_non_exhaustive()
    }
}

#[async_trait]
impl RawLogStore for InMemoryRawLog {
    async fn append(
        &self,
        ctx: &CallerContext,
        calls: Vec<RawCall>,
    ) -> Result<Vec<RawCall>, StoreError> {
        self.tables.insert_all(ctx, calls, new_raw_id)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<RawCall>, StoreError> {
        self.tables.get(ctx, id)
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        query: &RawCallQuery,
    ) -> Result<Page<RawCall>, StoreError> {
        let filter = query.filter()?;
        let found = self.tables.search(ctx, query, &filter)?;
        Ok(Page::of(found, query.limit))
    }

    async fn prune(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        retention: &RawRetention,
    ) -> Result<u64, StoreError> {
        if retention.keeps_all() {
            return Ok(0);
        }
        let cutoff = retention.cutoff(Utc::now());
        let keep = retention
            .max_calls
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let filter = RecordFilter {
            agent_id: Some(agent_id.to_owned()),
            ..RecordFilter::new(usize::MAX)
        };
        self.tables.delete_where(ctx, &filter, |rank, call| {
            rank >= keep || cutoff.is_some_and(|c| call.timestamp < c)
        })
    }
}
