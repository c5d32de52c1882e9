//! In-memory stores: the embedded default backend.
//!
//! Each store keeps one indexed table per tenant behind a `RwLock` (see the
//! `index` module for how queries use the indexes). Writes take the write
//! lock for their whole read-check-modify sequence, so concurrent writers
//! never lose updates. A poisoned lock is reported as
//! [`StoreError::Backend`], never a panic.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, Embedder, Episode, EpisodeQuery, EpisodicStore,
    Fact, FactQuery, FactStore, Insight, InsightQuery, InsightStatus, InsightStore, NamespaceScope,
    RecordFilter, RecordMeta, RecordVector, STRENGTHEN_STEP, StoreError, Stores,
    check_fixed_namespace, content_hash, validate_episode, validate_fact, validate_insight,
};

use openvibe_protocols::memory::{PendingText, at_index, check_caller};

use crate::admin::InMemoryAdmin;
use crate::audit::InMemoryAuditLog;
use crate::index::{ConfidenceOrder, Indexed, Score, Table, WalkBy};
use crate::vectors::{VectorTable, embed_written};
use openvibe_protocols::EmbeddingText as _;

use crate::working::InMemoryWorkingStore;

/// The [`Indexed`] methods facts and insights share: both are ordered by
/// confidence, then recency, then id, and validated and tracked alike.
macro_rules! confidence_ordered {
    () => {
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
            &self.tags
        }
        fn search_text(&self) -> Cow<'_, str> {
            Cow::Borrowed(&self.content)
        }
        fn order_key(&self) -> ConfidenceOrder {
            (
                Reverse(Score(self.confidence)),
                Reverse(self.meta.created_at),
                self.id.clone(),
            )
        }
        fn confidence(&self) -> f64 {
            self.confidence
        }
        fn time(&self) -> DateTime<Utc> {
            self.meta.created_at
        }
        const WALK: WalkBy = WalkBy::Confidence;
        fn prepare_new(&mut self) {
            self.access_count = 0;
            self.last_accessed = None;
            self.content_hash = Some(content_hash(&self.content));
        }
        fn keep_from(&mut self, old: &Self) {
            self.access_count = old.access_count;
            self.last_accessed = old.last_accessed;
            self.content_hash = Some(content_hash(&self.content));
        }
        fn record_access(&mut self, now: DateTime<Utc>) {
            self.access_count = self.access_count.saturating_add(1);
            self.last_accessed = Some(now);
        }
    };
}

impl Indexed for Fact {
    const KIND: &'static str = "fact";
    type Order = ConfidenceOrder;

    confidence_ordered!();

    fn validate(&self) -> Result<(), StoreError> {
        validate_fact(self).map(drop)
    }
    fn agent_id(&self) -> Option<&str> {
        None
    }
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String)) {
        visit(&mut self.meta.tenant_id);
        visit(&mut self.meta.namespace);
        visit(&mut self.meta.owner);
        visit(&mut self.meta.source);
        visit(&mut self.entity);
        visit(&mut self.domain);
    }
}

impl Indexed for Insight {
    const KIND: &'static str = "insight";
    type Order = ConfidenceOrder;

    confidence_ordered!();

    fn validate(&self) -> Result<(), StoreError> {
        validate_insight(self).map(drop)
    }
    fn status(&self) -> Option<InsightStatus> {
        Some(self.status)
    }
    fn agent_id(&self) -> Option<&str> {
        Some(&self.agent_id)
    }
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String)) {
        visit(&mut self.meta.tenant_id);
        visit(&mut self.meta.namespace);
        visit(&mut self.meta.owner);
        visit(&mut self.meta.source);
        visit(&mut self.entity);
        visit(&mut self.domain);
        visit(&mut self.agent_id);
    }
}

impl Indexed for Episode {
    const KIND: &'static str = "episode";
    type Order = (Reverse<DateTime<Utc>>, String);

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
        &self.tags
    }
    fn agent_id(&self) -> Option<&str> {
        Some(&self.agent_id)
    }
    fn search_text(&self) -> Cow<'_, str> {
        Cow::Owned(self.searchable_text())
    }
    fn order_key(&self) -> Self::Order {
        (Reverse(self.timestamp), self.id.clone())
    }
    fn confidence(&self) -> f64 {
        1.0
    }
    fn time(&self) -> DateTime<Utc> {
        self.timestamp
    }
    const WALK: WalkBy = WalkBy::Time;
    fn validate(&self) -> Result<(), StoreError> {
        validate_episode(self).map(drop)
    }
    fn prepare_new(&mut self) {
        self.content_hash = Some(content_hash(&self.searchable_text()));
    }
    fn keep_from(&mut self, _old: &Self) {
        self.content_hash = Some(content_hash(&self.searchable_text()));
    }
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
        visit(&mut self.action);
    }
}

/// Make `rec` a new record of `ctx`: placed in its namespace (checked),
/// derived fields computed, owner, tenant and project from the caller,
/// expiry capped by its retention.
fn place_new<R: Indexed>(
    ctx: &CallerContext,
    rec: &mut R,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let given = rec.meta().expires_at;
    let placement = ctx.placement(
        &rec.meta().namespace,
        &format!("store {} {}", R::KIND, rec.id()),
    )?;
    rec.prepare_new();
    let expires_at = ctx.expiry(R::KIND, &placement.namespace, rec.meta().created_at, given)?;
    let meta = rec.meta_mut();
    meta.expires_at = expires_at;
    meta.owner = ctx.owner_key();
    meta.tenant_id = ctx.tenant_id().to_owned();
    meta.namespace = placement.namespace;
    meta.project_id = placement.project_id;
    meta.updated_at = now;
    Ok(())
}

/// Whether a write may create a record or must find an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Upsert,
    Update,
}

/// Per-tenant tables of one record type behind one lock.
pub(crate) struct Tables<R: Indexed> {
    inner: RwLock<HashMap<String, Table<R>>>,
    /// Where changes, refusals and searches are audited.
    audit: Arc<InMemoryAuditLog>,
}

impl<R: Indexed> Default for Tables<R> {
    fn default() -> Self {
        Self {
            inner: RwLock::new(HashMap::new()),
            audit: Arc::default(),
        }
    }
}

fn poisoned(kind: &str) -> StoreError {
    StoreError::backend(format!(
        "the in-memory {kind} store's lock is poisoned (a writer panicked); recreate the store"
    ))
}

impl<R: Indexed> Tables<R> {
    /// The trail this table audits into.
    pub(crate) fn set_audit(&mut self, audit: Arc<InMemoryAuditLog>) {
        self.audit = audit;
    }

    /// The trail this table audits into.
    pub(crate) fn audit_log(&self) -> Arc<InMemoryAuditLog> {
        self.audit.clone()
    }

    /// Insert `recs` as new records, all or none, under one lock: empty
    /// ids get `new_id()`, an id already present (or twice in `recs`) is a
    /// conflict, and every record is validated and placed before any is
    /// written. Returns them as stored.
    pub(crate) fn insert_all(
        &self,
        ctx: &CallerContext,
        recs: Vec<R>,
        new_id: impl Fn() -> String,
    ) -> Result<Vec<R>, StoreError> {
        let _span = Self::span("insert_all", ctx);
        let first = recs.first().map(|r| r.id().to_owned()).unwrap_or_default();
        let result = self.insert_all_audited(ctx, recs, new_id);
        self.audit
            .refusal(ctx, AuditOp::Insert, R::KIND, &first, result)
    }

    fn insert_all_audited(
        &self,
        ctx: &CallerContext,
        mut recs: Vec<R>,
        new_id: impl Fn() -> String,
    ) -> Result<Vec<R>, StoreError> {
        check_caller(ctx)?;
        openvibe_protocols::memory::check_batch(recs.len())?;
        let now = Utc::now();
        let mut seen = std::collections::HashSet::with_capacity(recs.len());
        for (i, rec) in recs.iter_mut().enumerate() {
            if rec.id().is_empty() {
                rec.set_id(new_id());
            }
            rec.validate().map_err(|e| at_index(i, e))?;
            if !seen.insert(rec.id().to_owned()) {
                return Err(StoreError::conflict(format!(
                    "{} {} appears twice in one batch",
                    R::KIND,
                    rec.id()
                )));
            }
            place_new(ctx, rec, now).map_err(|e| at_index(i, e))?;
        }
        let mut guard = self.write()?;
        let table = guard.entry(ctx.tenant_id().to_owned()).or_default();
        if let Some(taken) = recs.iter().find(|r| table.slot(r.id()).is_some()) {
            return Err(StoreError::conflict(format!(
                "{} {} already exists ({}s are never replaced)",
                R::KIND,
                taken.id(),
                R::KIND
            )));
        }
        for rec in &recs {
            table.insert(rec.clone())?;
            self.audit.record(AuditEntry::change(
                ctx,
                AuditOp::Insert,
                R::KIND,
                rec.id(),
                rec.meta(),
            ));
        }
        Ok(recs)
    }

    /// Delete the records of `filter` (in result order) that `doomed`
    /// picks, among those `ctx` may delete (audited); returns how many went.
    pub(crate) fn delete_where(
        &self,
        ctx: &CallerContext,
        filter: &RecordFilter,
        doomed: impl Fn(usize, &R) -> bool,
    ) -> Result<u64, StoreError> {
        let _span = Self::span("delete_where", ctx);
        let mut guard = self.write()?;
        let Some(table) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let mut deleted = 0;
        for (rank, slot) in table.query(ctx, filter).into_iter().enumerate() {
            let Some(rec) = table.materialize(slot) else {
                continue;
            };
            if !doomed(rank, &rec) || !ctx.can_change(rec.meta(), Change::Delete) {
                continue;
            }
            if let Some(gone) = table.remove(slot) {
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Delete,
                    R::KIND,
                    gone.id(),
                    gone.meta(),
                ));
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, HashMap<String, Table<R>>>, StoreError> {
        self.inner.read().map_err(|_| poisoned(R::KIND))
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, HashMap<String, Table<R>>>, StoreError> {
        self.inner.write().map_err(|_| poisoned(R::KIND))
    }

    /// A `tracing` span for one store operation (cheap when nobody listens).
    fn span(op: &'static str, ctx: &CallerContext) -> tracing::span::EnteredSpan {
        store_span(R::KIND, op, ctx)
    }

    fn not_found(id: &str) -> StoreError {
        StoreError::NotFound {
            kind: R::KIND,
            id: id.to_owned(),
        }
    }

    fn write_record(&self, ctx: &CallerContext, rec: R, mode: Mode) -> Result<R, StoreError> {
        let _span = Self::span("write_record", ctx);
        let id = rec.id().to_owned();
        let op = match mode {
            Mode::Upsert => AuditOp::Insert,
            Mode::Update => AuditOp::Update,
        };
        let result = self.write_record_audited(ctx, rec, mode);
        self.audit.refusal(ctx, op, R::KIND, &id, result)
    }

    fn write_record_audited(
        &self,
        ctx: &CallerContext,
        mut rec: R,
        mode: Mode,
    ) -> Result<R, StoreError> {
        if rec.id().is_empty() && mode == Mode::Upsert {
            rec.set_id(uuid::Uuid::new_v4().simple().to_string());
        }
        check_caller(ctx)?;
        rec.validate()?;
        let now = Utc::now();
        let given = rec.meta().expires_at;
        let mut guard = self.write()?;
        let table = guard.entry(ctx.tenant_id().to_owned()).or_default();
        let mut existing = table.slot(rec.id());
        // An expired record is gone for every purpose: a store over its id
        // deletes it (audited) and stores the new record in its place.
        if let Some(slot) = existing
            && table
                .materialize(slot)
                .is_some_and(|old| old.meta().is_expired(now))
        {
            if mode == Mode::Update {
                return Err(Self::not_found(rec.id()));
            }
            if let Some(old) = table.remove(slot) {
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Delete,
                    R::KIND,
                    old.id(),
                    old.meta(),
                ));
            }
            existing = None;
        }
        match existing {
            Some(slot) => {
                let old = table
                    .materialize(slot)
                    .ok_or_else(|| Self::not_found(rec.id()))?;
                let old = &old;
                if !ctx.can_read(old.meta(), old.domain()) {
                    return Err(match mode {
                        Mode::Update => Self::not_found(rec.id()),
                        Mode::Upsert => ctx.unauthorized(
                            format!("store {} {}", R::KIND, rec.id()),
                            "a record with this id exists and belongs to someone else",
                        ),
                    });
                }
                let op = match mode {
                    Mode::Update => "change",
                    Mode::Upsert => "store",
                };
                ctx.require_change(
                    old.meta(),
                    Change::Write,
                    format!("{op} {} {}", R::KIND, rec.id()),
                )?;
                check_fixed_namespace(
                    &old.meta().namespace,
                    &rec.meta().namespace,
                    R::KIND,
                    rec.id(),
                )?;
                // Placement, ownership and creation time are fixed at insert.
                let (owner, tenant, namespace, project, created) = {
                    let m = old.meta();
                    (
                        m.owner.clone(),
                        m.tenant_id.clone(),
                        m.namespace.clone(),
                        m.project_id.clone(),
                        m.created_at,
                    )
                };
                rec.keep_from(old);
                let meta = rec.meta_mut();
                meta.owner = owner;
                meta.tenant_id = tenant;
                meta.namespace = namespace;
                meta.expires_at = ctx.expiry(R::KIND, &meta.namespace, created, given)?;
                meta.project_id = project;
                meta.created_at = created;
                meta.updated_at = now;
                table.replace(slot, rec.clone());
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Update,
                    R::KIND,
                    rec.id(),
                    rec.meta(),
                ));
            }
            None if mode == Mode::Update => return Err(Self::not_found(rec.id())),
            None => {
                place_new(ctx, &mut rec, now)?;
                table.insert(rec.clone())?;
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Insert,
                    R::KIND,
                    rec.id(),
                    rec.meta(),
                ));
            }
        }
        Ok(rec)
    }

    /// [`Tables::query`] for a search by `ctx` with `query` (audited with
    /// its filters, the namespaces it covers and its limit).
    pub(crate) fn search(
        &self,
        ctx: &CallerContext,
        query: &impl serde::Serialize,
        namespaces: &[String],
        filter: &RecordFilter,
    ) -> Result<Vec<R>, StoreError> {
        self.audit.record(AuditEntry::search(
            ctx,
            R::KIND,
            query,
            namespaces,
            filter.limit,
        ));
        self.query(ctx, filter)
    }

    pub(crate) fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<R>, StoreError> {
        let _span = Self::span("get", ctx);
        let guard = self.read()?;
        Ok(guard
            .get(ctx.tenant_id())
            .and_then(|t| t.slot(id).and_then(|s| t.materialize(s)))
            .filter(|r| ctx.can_read(r.meta(), r.domain())))
    }

    fn query(&self, ctx: &CallerContext, filter: &RecordFilter) -> Result<Vec<R>, StoreError> {
        let _span = Self::span("query", ctx);
        if filter.track_access {
            let mut guard = self.write()?;
            let Some(table) = guard.get_mut(ctx.tenant_id()) else {
                return Ok(Vec::new());
            };
            let slots = table.query(ctx, filter);
            let now = Utc::now();
            let mut out = Vec::with_capacity(slots.len());
            for slot in slots {
                if let Some(rec) = table.rec_mut(slot) {
                    rec.record_access(now);
                }
                out.extend(table.materialize(slot));
            }
            Ok(out)
        } else {
            let guard = self.read()?;
            let Some(table) = guard.get(ctx.tenant_id()) else {
                return Ok(Vec::new());
            };
            let slots = table.query(ctx, filter);
            let mut out = Vec::with_capacity(slots.len());
            out.extend(slots.into_iter().filter_map(|slot| table.materialize(slot)));
            Ok(out)
        }
    }

    fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        let _span = Self::span("delete", ctx);
        let result = self.delete_audited(ctx, id);
        self.audit
            .refusal(ctx, AuditOp::Delete, R::KIND, id, result)
    }

    fn delete_audited(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        let mut guard = self.write()?;
        let table = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| Self::not_found(id))?;
        let slot = table.slot(id).ok_or_else(|| Self::not_found(id))?;
        let rec = table.materialize(slot).ok_or_else(|| Self::not_found(id))?;
        if !ctx.can_read(rec.meta(), rec.domain()) {
            return Err(Self::not_found(id));
        }
        ctx.require_change(
            rec.meta(),
            Change::Delete,
            format!("delete {} {id}", R::KIND),
        )?;
        table.remove(slot);
        self.audit.record(AuditEntry::change(
            ctx,
            AuditOp::Delete,
            R::KIND,
            id,
            rec.meta(),
        ));
        Ok(())
    }

    /// Change record `id` with `change` under the write lock (the caller
    /// must be allowed to modify it); returns it as stored.
    fn modify(
        &self,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&mut R, DateTime<Utc>),
    ) -> Result<R, StoreError> {
        let _span = Self::span("modify", ctx);
        let result = self.modify_audited(ctx, id, change);
        self.audit
            .refusal(ctx, AuditOp::Update, R::KIND, id, result)
    }

    fn modify_audited(
        &self,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&mut R, DateTime<Utc>),
    ) -> Result<R, StoreError> {
        let mut guard = self.write()?;
        let table = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| Self::not_found(id))?;
        let slot = table.slot(id).ok_or_else(|| Self::not_found(id))?;
        let mut rec = table.materialize(slot).ok_or_else(|| Self::not_found(id))?;
        if !ctx.can_read(rec.meta(), rec.domain()) {
            return Err(Self::not_found(id));
        }
        ctx.require_modify(rec.meta(), format!("change {} {id}", R::KIND))?;
        let now = Utc::now();
        change(&mut rec, now);
        rec.validate()?;
        rec.meta_mut().updated_at = now;
        table.replace(slot, rec.clone());
        self.audit.record(AuditEntry::change(
            ctx,
            AuditOp::Update,
            R::KIND,
            id,
            rec.meta(),
        ));
        Ok(rec)
    }

    fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        let _span = Self::span("touch", ctx);
        let mut guard = self.write()?;
        let Some(table) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let now = Utc::now();
        let mut touched = 0;
        for id in ids {
            let Some(slot) = table.slot(id) else { continue };
            if !table.readable(ctx, slot) {
                continue;
            }
            if let Some(rec) = table.rec_mut(slot) {
                rec.record_access(now);
                touched += 1;
            }
        }
        Ok(touched)
    }

    fn len(&self) -> Result<usize, StoreError> {
        Ok(self.read()?.values().map(Table::len).sum())
    }

    /// Put `records` in as they are (tenant, owner, namespace, times kept):
    /// loading a snapshot. Invalid records are refused; an id already
    /// present in its tenant is replaced.
    fn restore(&self, records: Vec<R>) -> Result<usize, StoreError> {
        let mut guard = self.write()?;
        let n = records.len();
        for rec in records {
            rec.validate()?;
            let table = guard.entry(rec.meta().tenant_id.clone()).or_default();
            match table.slot(rec.id()) {
                Some(slot) => table.replace(slot, rec),
                None => {
                    table.insert(rec)?;
                }
            }
        }
        Ok(n)
    }

    /// Every record of every tenant (for a snapshot), by tenant then id.
    fn all(&self) -> Result<Vec<R>, StoreError> {
        let guard = self.read()?;
        let mut tenants: Vec<&String> = guard.keys().collect();
        tenants.sort();
        let mut out = Vec::new();
        for tenant in tenants {
            if let Some(table) = guard.get(tenant) {
                let mut recs = table.all();
                recs.sort_by(|a, b| a.id().cmp(b.id()));
                out.extend(recs);
            }
        }
        Ok(out)
    }

    /// Up to `limit` records of `tenant` for which `pick` holds (see `Table::pick`).
    fn pick_in(
        &self,
        tenant: &str,
        pick: impl FnMut(&R) -> bool,
        limit: usize,
    ) -> Result<Vec<R>, StoreError> {
        Ok(self
            .read()?
            .get(tenant)
            .map(|t| t.pick(pick, limit))
            .unwrap_or_default())
    }

    /// How many records of `tenant` `pick` holds for.
    fn count_in(&self, tenant: &str, pick: impl FnMut(&R) -> bool) -> Result<u64, StoreError> {
        Ok(self.read()?.get(tenant).map(|t| t.count(pick)).unwrap_or(0))
    }

    /// Records per namespace in `ctx`'s tenant.
    fn namespace_counts(&self, ctx: &CallerContext) -> Result<BTreeMap<String, u64>, StoreError> {
        Ok(self
            .read()?
            .get(ctx.tenant_id())
            .map(Table::namespace_counts)
            .unwrap_or_default())
    }

    /// Delete at most `batch` records of `ctx`'s tenant that have expired,
    /// in namespaces of `scope` and projects `ctx` sees (audited as
    /// deletes); returns how many went.
    pub(crate) fn delete_expired(
        &self,
        ctx: &CallerContext,
        scope: &NamespaceScope,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let mut guard = self.write()?;
        let Some(table) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let mut deleted = 0;
        for slot in table.expired_slots(ctx, Utc::now(), scope, batch) {
            if let Some(gone) = table.remove(slot) {
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Delete,
                    R::KIND,
                    gone.id(),
                    gone.meta(),
                ));
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// Move at most `batch` records from `from` to `to` (re-indexed and
    /// audited as updates); returns how many moved.
    fn move_namespace(
        &self,
        ctx: &CallerContext,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let mut guard = self.write()?;
        let Some(table) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let now = Utc::now();
        let mut moved = 0;
        for slot in table.slots_in_namespace(from, batch) {
            let Some(mut rec) = table.materialize(slot) else {
                continue;
            };
            rec.meta_mut().namespace = to.to_owned();
            rec.meta_mut().updated_at = now;
            self.audit.record(AuditEntry::change(
                ctx,
                AuditOp::Update,
                R::KIND,
                rec.id(),
                rec.meta(),
            ));
            table.replace(slot, rec);
            moved += 1;
        }
        Ok(moved)
    }
}

/// In-memory [`FactStore`], indexed by entity, domain, tag, text term and
/// (confidence, recency) per tenant.
#[derive(Default)]
pub struct InMemoryFactStore {
    tables: Tables<Fact>,
    vectors: Option<Arc<VectorTable>>,
}

impl InMemoryFactStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores) instead of a trail of its own.
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.tables.audit = audit;
        self
    }

    /// The trail this store audits into.
    pub fn audit(&self) -> Arc<InMemoryAuditLog> {
        self.tables.audit.clone()
    }

    /// Number of facts over all tenants.
    pub fn len(&self) -> Result<usize, StoreError> {
        self.tables.len()
    }

    /// Whether the store holds no facts at all.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

impl std::fmt::Debug for InMemoryFactStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryFactStore").finish_non_exhaustive()
    }
}

#[async_trait]
impl FactStore for InMemoryFactStore {
    async fn store(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError> {
        let stored = self.tables.write_record(ctx, fact, Mode::Upsert)?;
        embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Fact>, StoreError> {
        self.tables.get(ctx, id)
    }

    async fn query(&self, ctx: &CallerContext, q: &FactQuery) -> Result<Vec<Fact>, StoreError> {
        self.tables.search(ctx, q, &q.namespaces, &q.filter())
    }

    async fn update(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError> {
        let stored = self.tables.write_record(ctx, fact, Mode::Update)?;
        embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.tables.delete(ctx, id)?;
        forget(self.vectors.as_deref(), ctx, "fact", id);
        Ok(())
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        self.tables.touch(ctx, ids)
    }
}

/// In-memory [`EpisodicStore`], indexed by agent, entity, domain, tag, text
/// term and time per tenant.
#[derive(Default)]
pub struct InMemoryEpisodicStore {
    tables: Tables<Episode>,
    vectors: Option<Arc<VectorTable>>,
}

impl InMemoryEpisodicStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores) instead of a trail of its own.
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.tables.audit = audit;
        self
    }

    /// The trail this store audits into.
    pub fn audit(&self) -> Arc<InMemoryAuditLog> {
        self.tables.audit.clone()
    }

    /// Number of episodes over all tenants.
    pub fn len(&self) -> Result<usize, StoreError> {
        self.tables.len()
    }

    /// Whether the store holds no episodes at all.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

impl std::fmt::Debug for InMemoryEpisodicStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryEpisodicStore")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl EpisodicStore for InMemoryEpisodicStore {
    async fn store(&self, ctx: &CallerContext, episode: Episode) -> Result<Episode, StoreError> {
        let stored = self.tables.write_record(ctx, episode, Mode::Upsert)?;
        embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Episode>, StoreError> {
        self.tables.get(ctx, id)
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        q: &EpisodeQuery,
    ) -> Result<Vec<Episode>, StoreError> {
        self.tables.search(ctx, q, &q.namespaces, &q.filter())
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.tables.delete(ctx, id)?;
        forget(self.vectors.as_deref(), ctx, "episode", id);
        Ok(())
    }
}

/// In-memory [`InsightStore`], indexed by agent, entity, domain, tag, text
/// term and (confidence, recency) per tenant.
#[derive(Default)]
pub struct InMemoryInsightStore {
    tables: Tables<Insight>,
    vectors: Option<Arc<VectorTable>>,
}

impl InMemoryInsightStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores) instead of a trail of its own.
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.tables.audit = audit;
        self
    }

    /// The trail this store audits into.
    pub fn audit(&self) -> Arc<InMemoryAuditLog> {
        self.tables.audit.clone()
    }

    /// Number of insights over all tenants.
    pub fn len(&self) -> Result<usize, StoreError> {
        self.tables.len()
    }

    /// Whether the store holds no insights at all.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

impl std::fmt::Debug for InMemoryInsightStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryInsightStore")
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl InsightStore for InMemoryInsightStore {
    async fn store(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError> {
        let stored = self.tables.write_record(ctx, insight, Mode::Upsert)?;
        embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Insight>, StoreError> {
        self.tables.get(ctx, id)
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        q: &InsightQuery,
    ) -> Result<Vec<Insight>, StoreError> {
        self.tables.search(ctx, q, &q.namespaces, &q.filter())
    }

    async fn update(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError> {
        let stored = self.tables.write_record(ctx, insight, Mode::Update)?;
        embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.tables.delete(ctx, id)?;
        forget(self.vectors.as_deref(), ctx, "insight", id);
        Ok(())
    }

    async fn find_similar(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        content: &str,
    ) -> Result<Option<Insight>, StoreError> {
        let _span = store_span(<Insight as Indexed>::KIND, "find_similar", ctx);
        let guard = self.tables.read()?;
        let Some(table) = guard.get(ctx.tenant_id()) else {
            return Ok(None);
        };
        Ok(table.most_similar(ctx, content, |i: &Insight| {
            i.agent_id == agent_id && i.status == InsightStatus::Active
        }))
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        self.tables.touch(ctx, ids)
    }

    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError> {
        // Read, change and write under one write lock: atomic.
        self.tables.modify(ctx, id, |insight, now| {
            insight.confidence = (insight.confidence + STRENGTHEN_STEP).min(1.0);
            insight.evidence_count = insight.evidence_count.saturating_add(1);
            insight.last_confirmed = Some(now);
            for episode in episode_ids {
                if !insight.source_episode_ids.contains(episode) {
                    insight.source_episode_ids.push(episode.clone());
                }
            }
        })
    }
}

/// Fresh, empty in-memory stores: the embedded default backend as a
/// [`Stores`] set (what `PgStores::stores()` is for PostgreSQL). Knowledge
/// needs embeddings of [`DEFAULT_EMBEDDING_MODEL`](crate::DEFAULT_EMBEDDING_MODEL)'s
/// size; see [`in_memory_stores_with_embedder`] to have the store compute them.
pub fn in_memory_stores() -> Stores {
    stores_over(InMemoryWorkingStore::new())
}

/// [`in_memory_stores`] whose semantic memory embeds with `embedder`.
pub fn in_memory_stores_with_embedder(embedder: Arc<dyn Embedder>) -> Stores {
    stores_over(InMemoryWorkingStore::new().with_embedder(embedder))
}

fn stores_over(working: InMemoryWorkingStore) -> Stores {
    InMemoryAdmin::over(working).into_stores()
}

/// What namespace administration and snapshots need of a record store.
macro_rules! admin_access {
    ($($store:ty => $rec:ty),*) => {$(
        impl $store {
            pub(crate) fn namespace_counts(
                &self,
                ctx: &CallerContext,
            ) -> Result<BTreeMap<String, u64>, StoreError> {
                self.tables.namespace_counts(ctx)
            }

            pub(crate) fn move_namespace(
                &self,
                ctx: &CallerContext,
                from: &str,
                to: &str,
                batch: usize,
            ) -> Result<u64, StoreError> {
                self.tables.move_namespace(ctx, from, to, batch)
            }

            pub(crate) fn delete_expired(
                &self,
                ctx: &CallerContext,
                scope: &NamespaceScope,
                batch: usize,
            ) -> Result<u64, StoreError> {
                self.tables.delete_expired(ctx, scope, batch)
            }

            pub(crate) fn restore(&self, records: Vec<$rec>) -> Result<usize, StoreError> {
                self.tables.restore(records)
            }

            pub(crate) fn all(&self) -> Result<Vec<$rec>, StoreError> {
                self.tables.all()
            }

            /// Keep vectors of what this store writes in `vectors`.
            pub(crate) fn set_vectors(&mut self, vectors: Option<Arc<VectorTable>>) {
                self.vectors = vectors;
            }

            /// The records `ids` `ctx` may read, with their current vectors.
            pub(crate) fn current_vectors(
                &self,
                ctx: &CallerContext,
                ids: &[String],
            ) -> Result<Vec<RecordVector>, StoreError> {
                let Some(table) = &self.vectors else { return Ok(Vec::new()) };
                let mut out = Vec::new();
                for id in ids {
                    if let Some(rec) = self.tables.get(ctx, id)?
                        && let Some(vector) =
                            table.current(ctx.tenant_id(), <$rec as Indexed>::KIND, id, rec.text_hash())
                    {
                        out.push(RecordVector { id: id.clone(), vector });
                    }
                }
                Ok(out)
            }

            /// Up to `limit` records of `ctx`'s tenant without a current vector.
            pub(crate) fn pending_vectors(
                &self,
                ctx: &CallerContext,
                limit: usize,
            ) -> Result<Vec<PendingText>, StoreError> {
                let Some(table) = &self.vectors else { return Ok(Vec::new()) };
                let tenant = ctx.tenant_id();
                let recs = self.tables.pick_in(
                    tenant,
                    |r| !table.is_current(tenant, <$rec as Indexed>::KIND, r.id(), r.text_hash()),
                    limit,
                )?;
                Ok(recs.iter().filter_map(PendingText::of).collect())
            }

            /// (with a current vector, all) records of `ctx`'s tenant.
            pub(crate) fn vector_counts(&self, ctx: &CallerContext) -> Result<(u64, u64), StoreError> {
                let tenant = ctx.tenant_id();
                let all = self.tables.count_in(tenant, |_| true)?;
                let Some(table) = &self.vectors else { return Ok((0, all)) };
                let embedded = self.tables.count_in(tenant, |r| {
                    table.is_current(tenant, <$rec as Indexed>::KIND, r.id(), r.text_hash())
                })?;
                Ok((embedded, all))
            }
        }
    )*};
}
admin_access!(
    InMemoryFactStore => Fact,
    InMemoryEpisodicStore => Episode,
    InMemoryInsightStore => Insight
);

/// Drop the vector of a deleted record, when the store keeps vectors.
fn forget(vectors: Option<&VectorTable>, ctx: &CallerContext, kind: &'static str, id: &str) {
    if let Some(table) = vectors {
        table.forget(ctx.tenant_id(), kind, id);
    }
}

/// The `tracing` span of one in-memory store operation: the same fields as
/// the PostgreSQL backend's (`backend`, `kind`, `op`, `tenant`, `principal`).
pub(crate) fn store_span(
    kind: &'static str,
    op: &'static str,
    ctx: &CallerContext,
) -> tracing::span::EnteredSpan {
    store_span_of(kind, op, ctx).entered()
}

/// [`store_span`], not entered (for a future to be instrumented with).
pub(crate) fn store_span_of(
    kind: &'static str,
    op: &'static str,
    ctx: &CallerContext,
) -> tracing::Span {
    tracing::debug_span!(
        "store",
        backend = "memory",
        kind,
        op,
        tenant = %ctx.tenant_id(),
        principal = %ctx.principal(),
    )
}
