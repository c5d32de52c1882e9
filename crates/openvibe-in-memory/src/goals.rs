//! [`InMemoryGoalStore`]: goals, priorities and metric reports in process.
//! Every write is checked and applied under the store's write lock (a
//! metric report is numbered and its stream's value moved in the same
//! critical section, so concurrent reports never lose an update) and
//! audited with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use chrono::{NaiveDate, Utc};
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, GOAL_KIND, Goal, GoalProgress, GoalQuery, GoalStore,
    Initiative, METRIC_KIND, MetricReport, MetricValue, PRIORITIES_KIND, Page, PageQuery,
    Priorities, RecordMeta, ReportQuery, StoreError, Sweep, check_caller, store_time,
    validate_goal, validate_metric_report, validate_priorities,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::Pass;
use crate::governed::place_new;
use crate::span::store_span;

/// One tenant's goals, priorities, reports and metric streams.
#[derive(Debug, Default)]
struct Tenant {
    goals: BTreeMap<String, Goal>,
    priorities: BTreeMap<String, Priorities>,
    reports: HashMap<String, MetricReport>,
    /// Per (namespace, role, metric): the stream's state.
    streams: HashMap<(String, String, String), MetricValue>,
}

/// [`GoalStore`] in memory: per tenant.
#[derive(Debug, Default)]
pub struct InMemoryGoalStore {
    tenants: RwLock<HashMap<String, Tenant>>,
    audit: Arc<InMemoryAuditLog>,
}

fn poisoned() -> StoreError {
    StoreError::backend(
        "the in-memory goal store's lock is poisoned (a writer panicked); recreate the store",
    )
}

fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}

impl InMemoryGoalStore {
    /// An empty store with a trail of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores).
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.audit = audit;
        self
    }

    fn put_goal(&self, ctx: &CallerContext, mut goal: Goal) -> Result<Goal, StoreError> {
        check_caller(ctx)?;
        ctx.stamp(&mut goal.meta);
        validate_goal(&goal)?;
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let tenant = tenants.entry(ctx.tenant_id().to_owned()).or_default();
        let id = goal.id().to_owned();
        if let Some(existing) = tenant.goals.get_mut(&id)
            && !existing.meta.is_expired(now)
        {
            if !ctx.can_read(&existing.meta, "") {
                return Err(StoreError::conflict(format!(
                    "goal `{id}` exists in a namespace this caller may not read"
                )));
            }
            let Some(next) = existing.revise_as(ctx, &goal.objective, now)? else {
                return Ok(existing.clone());
            };
            let mut entry = AuditEntry::change(ctx, AuditOp::Update, GOAL_KIND, &id, &next.meta);
            entry.filters = Some(next.transition_detail(existing));
            self.audit.record(entry);
            *existing = next.clone();
            return Ok(next);
        }
        place_new(
            ctx,
            &format!("create {GOAL_KIND} {id}"),
            GOAL_KIND,
            &mut goal.meta,
            now,
            true,
        )?;
        goal.prepare_new();
        self.audit.record(AuditEntry::change(
            ctx,
            AuditOp::Insert,
            GOAL_KIND,
            &id,
            &goal.meta,
        ));
        tenant.goals.insert(id, goal.clone());
        Ok(goal)
    }

    fn decompose_goal(
        &self,
        ctx: &CallerContext,
        id: &str,
        fingerprint: &str,
        initiatives: &[Initiative],
    ) -> Result<Goal, StoreError> {
        check_caller(ctx)?;
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let current = tenants
            .get_mut(ctx.tenant_id())
            .and_then(|t| t.goals.get_mut(id))
            .filter(|g| ctx.can_read(&g.meta, ""))
            .ok_or_else(|| not_found(GOAL_KIND, id))?;
        let Some(next) = current.decompose_as(ctx, fingerprint, initiatives, now)? else {
            return Ok(current.clone());
        };
        let mut entry = AuditEntry::change(ctx, AuditOp::Update, GOAL_KIND, id, &next.meta);
        entry.filters = Some(next.transition_detail(current));
        self.audit.record(entry);
        *current = next.clone();
        Ok(next)
    }

    fn put_day(&self, ctx: &CallerContext, mut p: Priorities) -> Result<Priorities, StoreError> {
        check_caller(ctx)?;
        p.id = Priorities::id_of(&p.role_id, p.day);
        ctx.stamp(&mut p.meta);
        validate_priorities(&p)?;
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let tenant = tenants.entry(ctx.tenant_id().to_owned()).or_default();
        if let Some(existing) = tenant.priorities.get_mut(&p.id)
            && !existing.meta.is_expired(now)
        {
            if !ctx.can_read(&existing.meta, "") {
                return Err(StoreError::conflict(format!(
                    "priorities `{}` exist in a namespace this caller may not read",
                    p.id
                )));
            }
            ctx.require_change(
                &existing.meta,
                openvibe_protocols::Change::Write,
                format!("replace priorities {}", p.id),
            )?;
            existing.items = p.items;
            existing.meta.updated_at = now;
            self.audit.record(AuditEntry::change(
                ctx,
                AuditOp::Update,
                PRIORITIES_KIND,
                &existing.id,
                &existing.meta,
            ));
            return Ok(existing.clone());
        }
        let operation = format!("create {PRIORITIES_KIND} {}", p.id);
        place_new(ctx, &operation, PRIORITIES_KIND, &mut p.meta, now, true)?;
        self.audit.record(AuditEntry::change(
            ctx,
            AuditOp::Insert,
            PRIORITIES_KIND,
            &p.id,
            &p.meta,
        ));
        tenant.priorities.insert(p.id.clone(), p.clone());
        Ok(p)
    }

    fn report_metric(
        &self,
        ctx: &CallerContext,
        mut r: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        check_caller(ctx)?;
        if r.id.is_empty() {
            r.id = uuid::Uuid::new_v4().simple().to_string();
        }
        ctx.stamp(&mut r.meta);
        validate_metric_report(&r)?;
        let now = store_time();
        let operation = format!("create {METRIC_KIND} {}", r.id);
        place_new(ctx, &operation, METRIC_KIND, &mut r.meta, now, false)?;
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let tenant = tenants.entry(ctx.tenant_id().to_owned()).or_default();
        if let Some(existing) = tenant.reports.get(&r.id) {
            return if ctx.can_read(&existing.meta, "") && existing.same_request(&r) {
                Ok(existing.clone())
            } else {
                Err(StoreError::conflict(format!(
                    "metric report `{}` exists and reports something else",
                    r.id
                )))
            };
        }
        let stream = tenant
            .streams
            .entry((
                r.meta.namespace.clone(),
                r.role_id.clone(),
                r.metric.clone(),
            ))
            .or_default();
        let next = stream.apply(r.mode, r.value, now);
        if !next.value.is_finite() {
            return Err(openvibe_protocols::total_out_of_range());
        }
        r.seq = next.reports;
        r.total = next.value;
        *stream = next;
        self.audit.record(AuditEntry::change(
            ctx,
            AuditOp::Insert,
            METRIC_KIND,
            &r.id,
            &r.meta,
        ));
        tenant.reports.insert(r.id.clone(), r.clone());
        Ok(r)
    }
}

/// The metas of one kind's records in a tenant, for namespace maintenance.
fn metas_mut<'a>(
    tenant: &'a mut Tenant,
    kind: &str,
) -> Box<dyn Iterator<Item = (&'a String, &'a mut RecordMeta)> + 'a> {
    match kind {
        GOAL_KIND => Box::new(tenant.goals.iter_mut().map(|(id, g)| (id, &mut g.meta))),
        PRIORITIES_KIND => Box::new(
            tenant
                .priorities
                .iter_mut()
                .map(|(id, p)| (id, &mut p.meta)),
        ),
        _ => Box::new(tenant.reports.iter_mut().map(|(id, r)| (id, &mut r.meta))),
    }
}

/// Namespace maintenance of goals, priorities and metric reports (see
/// [`NamespaceAdmin`](openvibe_protocols::NamespaceAdmin)).
impl InMemoryGoalStore {
    /// Records of `kind` per namespace in `ctx`'s tenant (expired left out).
    pub(crate) fn namespace_counts(
        &self,
        ctx: &CallerContext,
        kind: &str,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        let now = Utc::now();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let mut counts = BTreeMap::new();
        if let Some(tenant) = tenants.get_mut(ctx.tenant_id()) {
            for (_, meta) in metas_mut(tenant, kind) {
                if !meta.is_expired(now) {
                    *counts.entry(meta.namespace.clone()).or_insert(0) += 1;
                }
            }
        }
        Ok(counts)
    }

    /// Move at most `batch` records of `kind` from namespace `from` to `to`
    /// (audited). Metric reports take their streams with them (first, all
    /// at once): a stream `to` has already is a conflict, and nothing moves.
    pub(crate) fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &'static str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(tenant) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        if kind == METRIC_KIND {
            let moving: Vec<(String, String, String)> = tenant
                .streams
                .keys()
                .filter(|(ns, _, _)| ns == from)
                .cloned()
                .collect();
            if let Some((_, role, metric)) = moving.iter().find(|(_, role, metric)| {
                tenant
                    .streams
                    .contains_key(&(to.to_owned(), role.clone(), metric.clone()))
            }) {
                return Err(openvibe_protocols::stream_conflict(to, role, metric));
            }
            for key in moving {
                if let Some(value) = tenant.streams.remove(&key) {
                    tenant.streams.insert((to.to_owned(), key.1, key.2), value);
                }
            }
        }
        let mut moved = 0;
        for (id, meta) in metas_mut(tenant, kind)
            .filter(|(_, m)| m.namespace == from)
            .take(batch)
        {
            meta.namespace = to.to_owned();
            meta.updated_at = now;
            self.audit
                .record(AuditEntry::change(ctx, AuditOp::Update, kind, id, meta));
            moved += 1;
        }
        Ok(moved)
    }

    /// The goals, priorities or metric reports (`kind`) `sweep` takes:
    /// counted, or at most a batch deleted (audited as deletes).
    pub(crate) fn sweep(
        &self,
        ctx: &CallerContext,
        kind: &'static str,
        sweep: &Sweep,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(tenant) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let taken: Vec<(String, RecordMeta)> = match kind {
            GOAL_KIND => taken(ctx, sweep, pass, tenant.goals.iter(), |g| &g.meta),
            PRIORITIES_KIND => taken(ctx, sweep, pass, tenant.priorities.iter(), |p| &p.meta),
            _ => taken(ctx, sweep, pass, tenant.reports.iter(), |r| &r.meta),
        };
        if let Pass::Delete(_) = pass {
            for (id, meta) in &taken {
                match kind {
                    GOAL_KIND => tenant.goals.remove(id).map(drop),
                    PRIORITIES_KIND => tenant.priorities.remove(id).map(drop),
                    _ => tenant.reports.remove(id).map(drop),
                };
                self.audit
                    .record(AuditEntry::change(ctx, AuditOp::Delete, kind, id, meta));
            }
            if kind == METRIC_KIND && !taken.is_empty() {
                // A running total goes with the last of its reports.
                let live: std::collections::HashSet<(String, String, String)> = tenant
                    .reports
                    .values()
                    .map(|r| {
                        (
                            r.meta.namespace.clone(),
                            r.role_id.clone(),
                            r.metric.clone(),
                        )
                    })
                    .collect();
                tenant.streams.retain(|key, _| live.contains(key));
            }
        }
        Ok(taken.len() as u64)
    }
}

/// The (id, meta) of the records of `records` that `sweep` takes, at most
/// the pass's limit.
fn taken<'a, T: serde::Serialize + 'a>(
    ctx: &CallerContext,
    sweep: &Sweep,
    pass: Pass,
    records: impl Iterator<Item = (&'a String, &'a T)>,
    meta: impl Fn(&T) -> &RecordMeta,
) -> Vec<(String, RecordMeta)> {
    records
        .filter(|(_, r)| sweep.takes_record(ctx, meta(r), r))
        .take(pass.limit())
        .map(|(id, r)| (id.clone(), meta(r).clone()))
        .collect()
}

#[async_trait]
impl GoalStore for InMemoryGoalStore {
    async fn put(&self, ctx: &CallerContext, goal: Goal) -> Result<Goal, StoreError> {
        let _span = store_span(GOAL_KIND, "put", ctx);
        let id = goal.objective.id.clone();
        let result = self.put_goal(ctx, goal);
        self.audit
            .refusal(ctx, AuditOp::Insert, GOAL_KIND, &id, result)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Goal>, StoreError> {
        let _span = store_span(GOAL_KIND, "get", ctx);
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        Ok(tenants
            .get(ctx.tenant_id())
            .and_then(|t| t.goals.get(id))
            .filter(|g| ctx.can_read(&g.meta, ""))
            .cloned())
    }

    async fn list(&self, ctx: &CallerContext, query: &GoalQuery) -> Result<Page<Goal>, StoreError> {
        let _span = store_span(GOAL_KIND, "list", ctx);
        let limit = query.checked_limit()?;
        let scope = ctx.list_scope(&query.namespaces);
        self.audit.record(AuditEntry::search(
            ctx,
            GOAL_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let found = tenants
            .get(ctx.tenant_id())
            .map(|t| {
                t.goals
                    .values()
                    .filter(|g| {
                        scope.contains(&g.meta.namespace)
                            && ctx.can_read(&g.meta, "")
                            && query.matches(g)
                    })
                    .take(limit + 1)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Ok(Page::of(found, limit))
    }

    async fn decompose(
        &self,
        ctx: &CallerContext,
        id: &str,
        fingerprint: &str,
        initiatives: Vec<Initiative>,
    ) -> Result<Goal, StoreError> {
        let _span = store_span(GOAL_KIND, "decompose", ctx);
        let result = self.decompose_goal(ctx, id, fingerprint, &initiatives);
        self.audit
            .refusal(ctx, AuditOp::Update, GOAL_KIND, id, result)
    }

    async fn put_priorities(
        &self,
        ctx: &CallerContext,
        priorities: Priorities,
    ) -> Result<Priorities, StoreError> {
        let _span = store_span(PRIORITIES_KIND, "put", ctx);
        let id = Priorities::id_of(&priorities.role_id, priorities.day);
        let result = self.put_day(ctx, priorities);
        self.audit
            .refusal(ctx, AuditOp::Insert, PRIORITIES_KIND, &id, result)
    }

    async fn priorities(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        day: NaiveDate,
    ) -> Result<Option<Priorities>, StoreError> {
        let _span = store_span(PRIORITIES_KIND, "get", ctx);
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        Ok(tenants.get(ctx.tenant_id()).and_then(|t| {
            t.priorities
                .values()
                .filter(|p| p.role_id == role_id && p.day <= day && ctx.can_read(&p.meta, ""))
                .max_by_key(|p| (p.day, p.meta.updated_at))
                .cloned()
        }))
    }

    async fn report(
        &self,
        ctx: &CallerContext,
        report: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        let _span = store_span(METRIC_KIND, "report", ctx);
        let id = report.id.clone();
        let result = self.report_metric(ctx, report);
        self.audit
            .refusal(ctx, AuditOp::Insert, METRIC_KIND, &id, result)
    }

    async fn progress(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<GoalProgress>, StoreError> {
        let _span = store_span(GOAL_KIND, "progress", ctx);
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let Some(tenant) = tenants.get(ctx.tenant_id()) else {
            return Ok(None);
        };
        let Some(goal) = tenant.goals.get(id).filter(|g| ctx.can_read(&g.meta, "")) else {
            return Ok(None);
        };
        let key = |metric: &str| {
            (
                goal.meta.namespace.clone(),
                goal.role_id().to_owned(),
                metric.to_owned(),
            )
        };
        Ok(Some(GoalProgress::of(goal.clone(), |metric| {
            tenant.streams.get(&key(metric)).copied()
        })))
    }

    async fn reports(
        &self,
        ctx: &CallerContext,
        query: &ReportQuery,
    ) -> Result<Page<MetricReport>, StoreError> {
        let _span = store_span(METRIC_KIND, "list", ctx);
        let (limit, after) = query.checked()?;
        let scope = ctx.list_scope(&query.namespaces);
        self.audit.record(AuditEntry::search(
            ctx,
            METRIC_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let mut found: Vec<MetricReport> = tenants
            .get(ctx.tenant_id())
            .map(|t| {
                t.reports
                    .values()
                    .filter(|r| {
                        scope.contains(&r.meta.namespace)
                            && ctx.can_read(&r.meta, "")
                            && query.matches(r, after.as_ref())
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        found.sort_by(|a, b| (a.meta.created_at, &a.id).cmp(&(b.meta.created_at, &b.id)));
        found.truncate(limit + 1);
        Ok(Page::of(found, limit))
    }
}
