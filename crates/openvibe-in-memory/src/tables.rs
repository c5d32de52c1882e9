//! [`Tables`]: one record kind's per-tenant indexed tables behind one lock,
//! and every governed operation on them (insert, replace, update, delete,
//! query, access tracking, namespace moves, expiry), audited under the
//! change's lock. The record stores, the raw log and the admin use it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, RecordFilter, StoreError, Sweep, at_index,
    check_caller, check_fixed_namespace,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::Pass;
use crate::index::{Indexed, Table};
use crate::span::store_span;

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
pub(crate) enum Mode {
    Upsert,
    Update,
    /// Insert only: an existing record with the id is a conflict.
    Create,
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
        openvibe_protocols::check_batch(recs.len())?;
        let now = Utc::now();
        let mut seen = std::collections::HashSet::with_capacity(recs.len());
        for (i, rec) in recs.iter_mut().enumerate() {
            if rec.id().is_empty() {
                rec.set_id(new_id());
            }
            ctx.stamp(rec.meta_mut());
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

    pub(crate) fn read(
        &self,
    ) -> Result<RwLockReadGuard<'_, HashMap<String, Table<R>>>, StoreError> {
        self.inner.read().map_err(|_| poisoned(R::KIND))
    }

    pub(crate) fn write(
        &self,
    ) -> Result<RwLockWriteGuard<'_, HashMap<String, Table<R>>>, StoreError> {
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

    pub(crate) fn write_record(
        &self,
        ctx: &CallerContext,
        rec: R,
        mode: Mode,
    ) -> Result<R, StoreError> {
        let _span = Self::span("write_record", ctx);
        let id = rec.id().to_owned();
        let op = match mode {
            Mode::Upsert | Mode::Create => AuditOp::Insert,
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
        if rec.id().is_empty() && mode != Mode::Update {
            rec.set_id(uuid::Uuid::new_v4().simple().to_string());
        }
        check_caller(ctx)?;
        ctx.stamp(rec.meta_mut());
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
                        Mode::Upsert | Mode::Create => ctx.unauthorized(
                            format!("store {} {}", R::KIND, rec.id()),
                            "a record with this id exists and belongs to someone else",
                        ),
                    });
                }
                if mode == Mode::Create {
                    return Err(StoreError::conflict(format!(
                        "{} {} already exists",
                        R::KIND,
                        rec.id()
                    )));
                }
                let op = match mode {
                    Mode::Update => "change",
                    Mode::Upsert | Mode::Create => "store",
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

    /// [`Tables::query`] for a search by `ctx` with `query`, normalised as
    /// `filter` (audited with the query as given, the namespaces it covers
    /// and its limit).
    pub(crate) fn search(
        &self,
        ctx: &CallerContext,
        query: &impl serde::Serialize,
        filter: &RecordFilter,
    ) -> Result<Vec<R>, StoreError> {
        self.audit.record(AuditEntry::search(
            ctx,
            R::KIND,
            query,
            &filter.namespaces,
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

    pub(crate) fn query(
        &self,
        ctx: &CallerContext,
        filter: &RecordFilter,
    ) -> Result<Vec<R>, StoreError> {
        let _span = Self::span("query", ctx);
        if filter.track_access {
            let mut guard = self.write()?;
            let Some(table) = guard.get_mut(ctx.tenant_id()) else {
                return Ok(Vec::new());
            };
            let slots = table.query(ctx, filter);
            let now = Utc::now();
            for slot in &slots {
                if let Some(rec) = table.rec_mut(*slot) {
                    rec.record_access(now);
                }
            }
            Ok(table.materialize_all(&slots))
        } else {
            let guard = self.read()?;
            let Some(table) = guard.get(ctx.tenant_id()) else {
                return Ok(Vec::new());
            };
            let slots = table.query(ctx, filter);
            Ok(table.materialize_all(&slots))
        }
    }

    pub(crate) fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
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
    pub(crate) fn modify(
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

    pub(crate) fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
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

    pub(crate) fn len(&self) -> Result<usize, StoreError> {
        Ok(self.read()?.values().map(Table::len).sum())
    }

    /// Put `records` in as they are (tenant, owner, namespace, times kept):
    /// loading a snapshot. Invalid records are refused; an id already
    /// present in its tenant is replaced.
    pub(crate) fn restore(&self, records: Vec<R>) -> Result<usize, StoreError> {
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
    pub(crate) fn all(&self) -> Result<Vec<R>, StoreError> {
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
    pub(crate) fn pick_in(
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
    pub(crate) fn count_in(
        &self,
        tenant: &str,
        pick: impl FnMut(&R) -> bool,
    ) -> Result<u64, StoreError> {
        Ok(self.read()?.get(tenant).map(|t| t.count(pick)).unwrap_or(0))
    }

    /// Whether `tenant` holds a record `id` (expired or not).
    pub(crate) fn has(&self, tenant: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .read()?
            .get(tenant)
            .is_some_and(|t| t.slot(id).is_some()))
    }

    /// Records per namespace in `ctx`'s tenant.
    pub(crate) fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        Ok(self
            .read()?
            .get(ctx.tenant_id())
            .map(Table::namespace_counts)
            .unwrap_or_default())
    }

    /// The records of `ctx`'s tenant that `sweep` (or `also`) takes:
    /// counted, or at most a batch of them deleted (audited as deletes).
    /// Returns their ids.
    pub(crate) fn sweep(
        &self,
        ctx: &CallerContext,
        sweep: &Sweep,
        also: &dyn Fn(&R) -> bool,
        pass: Pass,
    ) -> Result<Vec<String>, StoreError> {
        if let Pass::Count = pass {
            let guard = self.read()?;
            let Some(table) = guard.get(ctx.tenant_id()) else {
                return Ok(Vec::new());
            };
            return Ok(table
                .swept_slots(ctx, sweep, also, usize::MAX)
                .into_iter()
                .filter_map(|slot| table.materialize(slot).map(|r| r.id().to_owned()))
                .collect());
        }
        let mut guard = self.write()?;
        let Some(table) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(Vec::new());
        };
        let mut deleted = Vec::new();
        for slot in table.swept_slots(ctx, sweep, also, pass.limit()) {
            if let Some(gone) = table.remove(slot) {
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Delete,
                    R::KIND,
                    gone.id(),
                    gone.meta(),
                ));
                deleted.push(gone.id().to_owned());
            }
        }
        Ok(deleted)
    }

    /// Move at most `batch` records from `from` to `to` (re-indexed and
    /// audited as updates); returns how many moved.
    pub(crate) fn move_namespace(
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
