//! The governed-table kernel of the in-memory backend, written once for
//! every kind kept by id (proposals, goals, priorities, metric reports,
//! beliefs, spaces): the tenant map behind one lock ([`Tenants`], a
//! poisoned lock a typed error), and one kind's records of a tenant
//! ([`Table`]): placement of a new record, the idempotent create, a
//! transition under the lock, the newest-first list, and namespace
//! maintenance (counts, moves, sweeps), each change audited with it. A
//! kind's store holds its own transitions and queries only; its part in
//! namespace maintenance is a [`Maintained`] impl, which the admin finds
//! by kind through the registry.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Governed, KeptRecord, Listed, Page, PageQuery, RecordMeta,
    StoreError, Sweep, check_caller,
};

use crate::audit::InMemoryAuditLog;
use crate::span::store_span;

/// One store's tenants behind one lock: each tenant's state `T` (the
/// tables of the kinds the store keeps, and what their transitions share).
#[derive(Debug)]
pub(crate) struct Tenants<T> {
    /// The store, for the refusal of a poisoned lock (`proposal`).
    store: &'static str,
    map: RwLock<HashMap<String, T>>,
}

impl<T: Default> Tenants<T> {
    /// No tenants yet.
    pub(crate) fn new(store: &'static str) -> Self {
        Self {
            store,
            map: RwLock::new(HashMap::new()),
        }
    }

    fn poisoned(&self) -> StoreError {
        StoreError::backend(format!(
            "the in-memory {} store's lock is poisoned (a writer panicked); recreate the store",
            self.store
        ))
    }

    /// The lock, to read.
    pub(crate) fn read(&self) -> Result<RwLockReadGuard<'_, HashMap<String, T>>, StoreError> {
        self.map.read().map_err(|_| self.poisoned())
    }

    /// The lock, to write.
    pub(crate) fn write(&self) -> Result<RwLockWriteGuard<'_, HashMap<String, T>>, StoreError> {
        self.map.write().map_err(|_| self.poisoned())
    }

    /// `read` over `ctx`'s tenant (`None`: it holds nothing yet).
    pub(crate) fn reading<R>(
        &self,
        ctx: &CallerContext,
        read: impl FnOnce(Option<&T>) -> R,
    ) -> Result<R, StoreError> {
        let guard = self.read()?;
        Ok(read(guard.get(ctx.tenant_id())))
    }

    /// `change` over `ctx`'s tenant under the write lock (an empty tenant
    /// when it holds nothing yet).
    pub(crate) fn changing<R>(
        &self,
        ctx: &CallerContext,
        change: impl FnOnce(&mut T) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let mut guard = self.write()?;
        change(guard.entry(ctx.tenant_id().to_owned()).or_default())
    }

    /// `change` over `ctx`'s tenant under the write lock, when it holds
    /// anything (`None`: it holds nothing, and nothing is created).
    pub(crate) fn changing_existing<R>(
        &self,
        ctx: &CallerContext,
        change: impl FnOnce(&mut T) -> Result<R, StoreError>,
    ) -> Result<Option<R>, StoreError> {
        let mut guard = self.write()?;
        guard.get_mut(ctx.tenant_id()).map(change).transpose()
    }
}

impl<T: Default> Default for Tenants<T> {
    fn default() -> Self {
        Self::new("governed")
    }
}

/// A new record of `R`'s kind, made ready by `ctx` at `now`: the caller
/// checked, an id generated when it has none, the caller's source
/// stamped, and the contract's checks (`check`, which may also complete
/// it: a space's members) passed. Placement is
/// [`place_new`]'s.
pub(crate) fn ready_new<R: KeptRecord>(
    ctx: &CallerContext,
    record: &mut R,
    check: impl FnOnce(&mut R) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    check_caller(ctx)?;
    if R::GENERATED_ID && record.record_id().is_empty() {
        *record.id_mut() = uuid::Uuid::new_v4().simple().to_string();
    }
    ctx.stamp(record.meta_mut());
    check(record)
}

/// Give a new record of `R`'s kind `ctx`'s identity at `now` where `ctx`
/// may place it (`verb` names the write in a refusal: `create proposal
/// p1`): owner, tenant, namespace and project from the caller, created and
/// updated now, and its expiry capped by the caller's retention when the
/// kind expires ([`openvibe_protocols::KindSpec::expires`]), or none.
pub(crate) fn place_new<R: KeptRecord>(
    ctx: &CallerContext,
    verb: &str,
    record: &mut R,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let operation = format!("{verb} {} {}", R::KIND, record.record_id());
    let meta = record.meta_mut();
    let placement = ctx.placement(&meta.namespace, &operation)?;
    meta.expires_at = if R::expires() {
        ctx.expiry(R::KIND, &placement.namespace, now, meta.expires_at)?
    } else {
        None
    };
    meta.owner = ctx.owner_key();
    meta.tenant_id = ctx.tenant_id().to_owned();
    meta.namespace = placement.namespace;
    meta.project_id = placement.project_id;
    meta.created_at = now;
    meta.updated_at = now;
    Ok(())
}

/// One kind's records in a tenant, by id (what a tenant's state holds per
/// kind). `R` is the record, or what holds it ([`Holds`]).
#[derive(Debug)]
pub(crate) struct Table<R>(BTreeMap<String, R>);

impl<R> Default for Table<R> {
    fn default() -> Self {
        Self(BTreeMap::new())
    }
}

/// What a table keeps per id: a record, or an entry holding one beside
/// its own state (a space with its log).
pub(crate) trait Holds: Send + Sync {
    /// The record kept.
    type Record: KeptRecord;
    /// The record.
    fn record(&self) -> &Self::Record;
    /// The record, to change.
    fn record_mut(&mut self) -> &mut Self::Record;
    /// What holds a new `record`.
    fn hold(record: Self::Record) -> Self;
}

impl<R: KeptRecord> Holds for R {
    type Record = R;
    fn hold(record: R) -> R {
        record
    }
    fn record(&self) -> &R {
        self
    }
    fn record_mut(&mut self) -> &mut R {
        self
    }
}

impl<H: Holds> Table<H> {
    /// Every entry (readable or not), in id order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &H> {
        self.0.values()
    }

    /// Every entry, to change (maintenance only).
    pub(crate) fn entries_mut(&mut self) -> impl Iterator<Item = &mut H> {
        self.0.values_mut()
    }

    /// The entry `id`, whoever may read it (a store's own checks).
    pub(crate) fn any(&self, id: &str) -> Option<&H> {
        self.0.get(id)
    }

    /// The entry `id`, when `ctx` may read its record.
    pub(crate) fn readable(&self, ctx: &CallerContext, id: &str) -> Option<&H> {
        self.0.get(id).filter(|h| h.record().readable_by(ctx))
    }

    /// The entry `id`, to change, when `ctx` may read its record.
    pub(crate) fn readable_mut(&mut self, ctx: &CallerContext, id: &str) -> Option<&mut H> {
        self.0.get_mut(id).filter(|h| h.record().readable_by(ctx))
    }

    /// The live record with `record`'s id, when one is stored: its answer
    /// to a create of `record` (the stored one when `ctx` may read it and
    /// it asks for the same, else the kind's conflict), or `None` when the
    /// id is free (never used, or its record expired and is replaced).
    pub(crate) fn existing_answer(
        &self,
        ctx: &CallerContext,
        record: &H::Record,
        now: DateTime<Utc>,
    ) -> Option<Result<H::Record, StoreError>> {
        let existing = self.0.get(record.record_id())?.record();
        if existing.meta().is_expired(now) {
            return None;
        }
        Some(
            if existing.readable_by(ctx) && existing.same_request(record) {
                Ok(existing.clone().read_at(now))
            } else {
                Err(record.id_taken())
            },
        )
    }

    /// Store `entry` (a new record, placed) and audit its insert.
    pub(crate) fn insert_new(&mut self, audit: &InMemoryAuditLog, ctx: &CallerContext, entry: H) {
        let r = entry.record();
        audit.record(AuditEntry::change(
            ctx,
            AuditOp::Insert,
            H::Record::KIND,
            r.record_id(),
            r.meta(),
        ));
        self.0.insert(r.record_id().to_owned(), entry);
    }

    /// Apply `change` to the record `id` `ctx` may read, under the lock:
    /// store what it gives and audit the update with its
    /// [`KeptRecord::transition_detail`]. Not found when `ctx` may not read it.
    pub(crate) fn transition(
        &mut self,
        audit: &InMemoryAuditLog,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&H::Record) -> Result<H::Record, StoreError>,
    ) -> Result<H::Record, StoreError> {
        let entry = self
            .readable_mut(ctx, id)
            .ok_or_else(|| not_found::<H::Record>(id))?;
        let next = change(entry.record())?;
        audit_update(audit, ctx, entry.record(), &next);
        *entry.record_mut() = next.clone();
        Ok(next)
    }

    /// The readable records in `ctx`'s list scope (`namespaces`) that
    /// `keep` keeps, newest first (creation time, then id), after the
    /// position `cursor` names, at most `limit + 1` of them (to know
    /// whether another page follows), each as read at `now`.
    pub(crate) fn newest(
        &self,
        ctx: &CallerContext,
        namespaces: &[String],
        cursor: Option<&str>,
        limit: usize,
        now: DateTime<Utc>,
        keep: impl Fn(&H::Record) -> bool,
    ) -> Result<Vec<H::Record>, StoreError> {
        let after = cursor.map(openvibe_protocols::parse_cursor).transpose()?;
        let after = after.as_ref();
        let scope = ctx.list_scope(namespaces);
        let mut found: Vec<H::Record> = self
            .0
            .values()
            .map(Holds::record)
            .filter(|r| {
                scope.contains(&r.meta().namespace)
                    && r.readable_by(ctx)
                    && after.is_none_or(|(micros, id)| {
                        (r.meta().created_at.timestamp_micros(), r.record_id())
                            < (*micros, id.as_str())
                    })
                    && keep(r)
            })
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            (b.meta().created_at, b.record_id()).cmp(&(a.meta().created_at, a.record_id()))
        });
        found.truncate(limit.saturating_add(1));
        Ok(found.into_iter().map(|r| r.read_at(now)).collect())
    }

    /// The entries `sweep` takes: counted, or at most a batch removed
    /// (each audited as a delete of its record, after `removing` audited
    /// what hangs on it). The removed entries, for a delete pass.
    pub(crate) fn sweep_with(
        &mut self,
        audit: &InMemoryAuditLog,
        ctx: &CallerContext,
        sweep: &Sweep,
        pass: Pass,
        removing: impl Fn(&H),
    ) -> (u64, Vec<H>) {
        let taken: Vec<String> = self
            .0
            .iter()
            .filter(|(_, h)| sweep.takes_record(ctx, h.record().meta(), h.record()))
            .map(|(id, _)| id.clone())
            .take(pass.limit())
            .collect();
        let n = taken.len() as u64;
        let Pass::Delete(_) = pass else {
            return (n, Vec::new());
        };
        let mut gone = Vec::with_capacity(taken.len());
        for id in &taken {
            if let Some(h) = self.0.remove(id) {
                removing(&h);
                audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Delete,
                    H::Record::KIND,
                    id,
                    h.record().meta(),
                ));
                gone.push(h);
            }
        }
        (n, gone)
    }
}

/// One kind's table as maintenance sees it (object-safe, so a store that
/// keeps several kinds hands the admin the table of the kind it asks for).
pub(crate) trait KindTable: Send + Sync {
    /// How many unexpired records each namespace holds.
    fn counts(&self) -> BTreeMap<String, u64>;

    /// Move at most `batch` records from namespace `from` to `to`, each
    /// audited as an update; how many moved.
    fn move_namespace(
        &mut self,
        audit: &InMemoryAuditLog,
        ctx: &CallerContext,
        from: &str,
        to: &str,
        batch: usize,
    ) -> u64;

    /// The records `sweep` takes: counted, or at most a batch removed,
    /// each audited as a delete; how many.
    fn sweep(
        &mut self,
        audit: &InMemoryAuditLog,
        ctx: &CallerContext,
        sweep: &Sweep,
        pass: Pass,
    ) -> u64;
}

impl<H: Holds> KindTable for Table<H> {
    fn counts(&self) -> BTreeMap<String, u64> {
        counts(self.0.values().map(|h| h.record().meta()))
    }

    fn move_namespace(
        &mut self,
        audit: &InMemoryAuditLog,
        ctx: &CallerContext,
        from: &str,
        to: &str,
        batch: usize,
    ) -> u64 {
        move_namespace(
            audit,
            ctx,
            H::Record::KIND,
            self.0
                .iter_mut()
                .map(|(id, h)| (id.as_str(), h.record_mut().meta_mut())),
            from,
            to,
            batch,
        )
    }

    fn sweep(
        &mut self,
        audit: &InMemoryAuditLog,
        ctx: &CallerContext,
        sweep: &Sweep,
        pass: Pass,
    ) -> u64 {
        self.sweep_with(audit, ctx, sweep, pass, |_| {}).0
    }
}

/// Not found: `R`'s kind has no record `id` the caller may read.
pub(crate) fn not_found<R: KeptRecord>(id: &str) -> StoreError {
    StoreError::NotFound {
        kind: R::KIND,
        id: id.to_owned(),
    }
}

/// Audit the update of `before` into `after`, with the kind's transition
/// detail.
pub(crate) fn audit_update<R: KeptRecord>(
    audit: &InMemoryAuditLog,
    ctx: &CallerContext,
    before: &R,
    after: &R,
) {
    let mut entry = AuditEntry::change(
        ctx,
        AuditOp::Update,
        R::KIND,
        after.record_id(),
        after.meta(),
    );
    entry.filters = after.transition_detail(before);
    audit.record(entry);
}

/// How many of the records with `metas` (unexpired) each namespace holds.
pub(crate) fn counts<'a>(metas: impl Iterator<Item = &'a RecordMeta>) -> BTreeMap<String, u64> {
    let now = Utc::now();
    let mut counts = BTreeMap::new();
    for m in metas.filter(|m| !m.is_expired(now)) {
        *counts.entry(m.namespace.clone()).or_insert(0) += 1;
    }
    counts
}

/// Move at most `batch` of `records` (id, meta) from namespace `from` to
/// `to`, each audited as an update of `kind`; how many moved.
pub(crate) fn move_namespace<'a>(
    audit: &InMemoryAuditLog,
    ctx: &CallerContext,
    kind: &str,
    records: impl Iterator<Item = (&'a str, &'a mut RecordMeta)>,
    from: &str,
    to: &str,
    batch: usize,
) -> u64 {
    let now = openvibe_protocols::store_time();
    let mut moved = 0;
    for (id, meta) in records.filter(|(_, m)| m.namespace == from).take(batch) {
        meta.namespace = to.to_owned();
        meta.updated_at = now;
        audit.record(AuditEntry::change(ctx, AuditOp::Update, kind, id, meta));
        moved += 1;
    }
    moved
}

/// One pass of a sweep over a store: count what it takes, or delete at
/// most this many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Count (nothing changes).
    Count,
    /// Delete at most this many.
    Delete(usize),
}

impl Pass {
    /// How many records the pass may take.
    pub(crate) fn limit(self) -> usize {
        match self {
            Self::Count => usize::MAX,
            Self::Delete(n) => n,
        }
    }
}

/// What a sweep pass knows beyond its [`Sweep`]: the episodes it takes
/// (the raw calls behind them go with them).
pub(crate) struct Swept<'a> {
    /// The sweep.
    pub(crate) sweep: &'a Sweep,
    /// The ids of the episodes the sweep takes (none for expiry).
    pub(crate) episodes: &'a HashSet<String>,
}

/// A store's part in namespace maintenance (counts, moves, the cleanup of
/// expired records, erasure) for the kinds it keeps: the admin walks the
/// kind registry and asks the store that keeps each kind, never naming
/// stores or kinds itself.
#[async_trait]
pub(crate) trait Maintained: Send + Sync {
    /// Whether it keeps `kind` (a row of the registry).
    fn keeps(&self, kind: &str) -> bool;

    /// Its records of `kind` per namespace in `ctx`'s tenant (expired ones
    /// left out).
    fn counts(&self, ctx: &CallerContext, kind: &str) -> Result<BTreeMap<String, u64>, StoreError>;

    /// Move at most `batch` of its records of `kind` from namespace `from`
    /// to `to` in `ctx`'s tenant, each audited as an update; how many moved.
    fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError>;

    /// Its records of `kind` that `swept` takes: counted, or at most a
    /// batch deleted with what hangs on them (each audited as a delete).
    async fn sweep(
        &self,
        ctx: &CallerContext,
        kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError>;
}

/// A store of kinds kept by id: its tenants' state (`T`: the table of a
/// store of one kind, [`Table`], or a store's own tables) and the trail it
/// audits into. A kind's store wraps it and adds its transitions and
/// queries.
#[derive(Debug)]
pub(crate) struct Kept<T> {
    /// Each tenant's state.
    pub(crate) tenants: Tenants<T>,
    /// The trail.
    pub(crate) audit: Arc<InMemoryAuditLog>,
}

impl<T: Default> Kept<T> {
    /// An empty store (`store` names it in errors) with a trail of its own.
    pub(crate) fn named(store: &'static str) -> Self {
        Self {
            tenants: Tenants::new(store),
            audit: Arc::default(),
        }
    }

    /// Run the write `op` (`name`: its span) on the record `id` of `kind`
    /// and audit its refusal, if it is refused.
    pub(crate) fn audited<V>(
        &self,
        ctx: &CallerContext,
        kind: &'static str,
        op: AuditOp,
        name: &'static str,
        id: &str,
        write: impl FnOnce() -> Result<V, StoreError>,
    ) -> Result<V, StoreError> {
        let _span = store_span(kind, name, ctx);
        self.audit.refusal(ctx, op, kind, id, write())
    }
}

impl<H: Holds> Kept<Table<H>> {
    /// The record `id`, when `ctx` may read it.
    pub(crate) fn get(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<H::Record>, StoreError> {
        let _span = store_span(H::Record::KIND, "get", ctx);
        let now = Utc::now();
        self.tenants.reading(ctx, |t| {
            t.and_then(|t| t.readable(ctx, id))
                .map(|h| h.record().clone().read_at(now))
        })
    }

    /// A page of the readable records in `ctx`'s list scope that `keep`
    /// keeps, newest first ([`Table::newest`]); the listing audited as a
    /// search of `query`.
    pub(crate) fn list<Q: serde::Serialize + PageQuery>(
        &self,
        ctx: &CallerContext,
        query: &Q,
        namespaces: &[String],
        cursor: Option<&str>,
        keep: impl Fn(&H::Record, DateTime<Utc>) -> bool,
    ) -> Result<Page<H::Record>, StoreError>
    where
        H::Record: Listed,
    {
        let _span = store_span(H::Record::KIND, "list", ctx);
        let limit = query.checked_limit()?;
        let now = Utc::now();
        let found = self.tenants.reading(ctx, |t| match t {
            Some(t) => t.newest(ctx, namespaces, cursor, limit, now, |r| keep(r, now)),
            None => Ok(Vec::new()),
        })??;
        self.audit.record(AuditEntry::search(
            ctx,
            H::Record::KIND,
            query,
            namespaces,
            limit,
        ));
        Ok(Page::of(found, limit))
    }

    /// Store `record` as new (checked with `check` and made ready with
    /// `prepare`), or answer the record with its id when it asks for the
    /// same ([`KeptRecord::same_request`]); audited.
    pub(crate) fn create(
        &self,
        ctx: &CallerContext,
        verb: &str,
        mut record: H::Record,
        check: impl FnOnce(&mut H::Record) -> Result<(), StoreError>,
        prepare: impl FnOnce(&mut H::Record),
    ) -> Result<H::Record, StoreError> {
        ready_new(ctx, &mut record, check)?;
        let now = openvibe_protocols::store_time();
        place_new(ctx, verb, &mut record, now)?;
        prepare(&mut record);
        self.tenants.changing(ctx, |table| {
            if let Some(answer) = table.existing_answer(ctx, &record, now) {
                return answer;
            }
            table.insert_new(&self.audit, ctx, H::hold(record.clone()));
            Ok(record)
        })
    }

    /// Apply `change` to the record `id` `ctx` may read, under the lock,
    /// audited with its transition.
    pub(crate) fn transition(
        &self,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&H::Record, DateTime<Utc>) -> Result<H::Record, StoreError>,
    ) -> Result<H::Record, StoreError> {
        check_caller(ctx)?;
        let now = openvibe_protocols::store_time();
        self.tenants
            .changing(ctx, |table| {
                table.transition(&self.audit, ctx, id, |r| change(r, now))
            })
            .map(|r| r.read_at(now))
    }
}

#[async_trait]
impl<H: Holds> Maintained for Kept<Table<H>> {
    fn keeps(&self, kind: &str) -> bool {
        kind == H::Record::KIND
    }

    fn counts(
        &self,
        ctx: &CallerContext,
        _kind: &str,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        self.tenants
            .reading(ctx, |t| t.map(Table::counts).unwrap_or_default())
    }

    fn move_namespace(
        &self,
        ctx: &CallerContext,
        _kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        Ok(self
            .tenants
            .changing_existing(ctx, |t| {
                Ok(t.move_namespace(&self.audit, ctx, from, to, batch))
            })?
            .unwrap_or(0))
    }

    async fn sweep(
        &self,
        ctx: &CallerContext,
        _kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        Ok(self
            .tenants
            .changing_existing(ctx, |t| Ok(t.sweep(&self.audit, ctx, swept.sweep, pass)))?
            .unwrap_or(0))
    }
}

/// `new`, `Default` and `with_audit` of a store that wraps a [`Kept`]
/// (named `$name` in errors). The invoking module imports `Arc` and
/// `InMemoryAuditLog` (the signature names them as users see them).
macro_rules! kept_store {
    ($store:ident, $name:expr) => {
        $crate::governed::kept_store!(@new $store, $name, []);
    };
    // `extra`: the values of the store's fields after its kernel.
    (@new $store:ident, $name:expr, [$($extra:expr),*]) => {
        impl $store {
            /// An empty store with a trail of its own.
            pub fn new() -> Self {
                Self($crate::governed::Kept::named($name) $(, $extra)*)
            }

            /// Audit into `audit` (shared with other stores).
            #[must_use]
            pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
                self.0.audit = audit;
                self
            }
        }

        impl Default for $store {
            fn default() -> Self {
                Self::new()
            }
        }
    };
    ($store:ident, $name:expr, maintained $(, $extra:expr)*) => {
        $crate::governed::kept_store!(@new $store, $name, [$($extra),*]);

        /// Namespace maintenance of its one kind: the kernel's.
        #[async_trait::async_trait]
        impl $crate::governed::Maintained for $store {
            fn keeps(&self, kind: &str) -> bool {
                self.0.keeps(kind)
            }
            fn counts(
                &self,
                ctx: &openvibe_protocols::CallerContext,
                kind: &str,
            ) -> Result<std::collections::BTreeMap<String, u64>, openvibe_protocols::StoreError>
            {
                self.0.counts(ctx, kind)
            }
            fn move_namespace(
                &self,
                ctx: &openvibe_protocols::CallerContext,
                kind: &str,
                from: &str,
                to: &str,
                batch: usize,
            ) -> Result<u64, openvibe_protocols::StoreError> {
                self.0.move_namespace(ctx, kind, from, to, batch)
            }
            async fn sweep(
                &self,
                ctx: &openvibe_protocols::CallerContext,
                kind: &str,
                swept: &$crate::governed::Swept<'_>,
                pass: $crate::governed::Pass,
            ) -> Result<u64, openvibe_protocols::StoreError> {
                self.0.sweep(ctx, kind, swept, pass).await
            }
        }
    };
}
pub(crate) use kept_store;
