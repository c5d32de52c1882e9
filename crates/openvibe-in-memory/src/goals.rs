//! [`InMemoryGoalStore`]: goals, priorities and metric reports in process.
//! Every write is checked and applied under the store's write lock (a
//! metric report is numbered and its stream's value moved in the same
//! critical section, so concurrent reports never lose an update) and
//! audited with it.

use std::collections::{BTreeMap, HashMap, HashSet};

use std::sync::Arc;

use async_trait::async_trait;
use chrono::NaiveDate;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, GOAL_KIND, Goal, GoalProgress, GoalQuery, GoalStore,
    Initiative, InitiativeUpdate, KeptRecord, METRIC_KIND, MetricReport, MetricValue,
    PRIORITIES_KIND, Page, PageQuery, Priorities, ReportQuery, StoreError, check_caller,
    store_time, validate_goal, validate_metric_report, validate_priorities,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::{
    Kept, KindTable, Maintained, Pass, Swept, Table, not_found, place_new, ready_new,
};
use crate::span::store_span;

/// One tenant's goals, priorities, reports and metric streams.
#[derive(Debug, Default)]
pub(crate) struct Tenant {
    goals: Table<Goal>,
    priorities: Table<Priorities>,
    reports: Table<MetricReport>,
    /// Per (namespace, role, metric): the stream's state.
    streams: HashMap<(String, String, String), MetricValue>,
}

/// A stream's key: (namespace, role, metric).
type StreamKey = (String, String, String);

impl Tenant {
    /// The table of one of the kinds the store keeps, for maintenance.
    fn table(&mut self, kind: &str) -> &mut dyn KindTable {
        match kind {
            GOAL_KIND => &mut self.goals,
            PRIORITIES_KIND => &mut self.priorities,
            _ => &mut self.reports,
        }
    }

    fn table_ref(&self, kind: &str) -> &dyn KindTable {
        match kind {
            GOAL_KIND => &self.goals,
            PRIORITIES_KIND => &self.priorities,
            _ => &self.reports,
        }
    }
}

/// [`GoalStore`] in memory: per tenant.
#[derive(Debug)]
pub struct InMemoryGoalStore(pub(crate) Kept<Tenant>);

crate::governed::kept_store!(InMemoryGoalStore, GOAL_KIND);

impl InMemoryGoalStore {
    fn put_goal(&self, ctx: &CallerContext, mut goal: Goal) -> Result<Goal, StoreError> {
        check_caller(ctx)?;
        ctx.stamp(&mut goal.meta);
        validate_goal(&goal)?;
        let now = store_time();
        self.0.tenants.changing(ctx, |tenant| {
            let id = goal.id().to_owned();
            if let Some(existing) = tenant.goals.any(&id)
                && !existing.meta.is_expired(now)
            {
                if !existing.readable_by(ctx) {
                    return Err(goal.id_taken());
                }
                let revised = existing.revise_as(ctx, &goal.objective, now)?;
                return match revised {
                    None => Ok(existing.clone()),
                    Some(next) => tenant
                        .goals
                        .transition(&self.0.audit, ctx, &id, |_| Ok(next)),
                };
            }
            place_new(ctx, "create", &mut goal, now)?;
            goal.prepare_new();
            tenant.goals.insert_new(&self.0.audit, ctx, goal.clone());
            Ok(goal)
        })
    }

    /// Apply `change` to the goal `id` `ctx` may read, under the store's
    /// lock: `None` leaves it as it is (and answers it).
    fn change_goal(
        &self,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&Goal, chrono::DateTime<chrono::Utc>) -> Result<Option<Goal>, StoreError>,
    ) -> Result<Goal, StoreError> {
        check_caller(ctx)?;
        let now = store_time();
        self.0.tenants.changing(ctx, |tenant| {
            let current = tenant
                .goals
                .readable(ctx, id)
                .ok_or_else(|| not_found::<Goal>(id))?;
            match change(current, now)? {
                None => Ok(current.clone()),
                Some(next) => tenant
                    .goals
                    .transition(&self.0.audit, ctx, id, |_| Ok(next)),
            }
        })
    }

    fn put_day(&self, ctx: &CallerContext, mut p: Priorities) -> Result<Priorities, StoreError> {
        check_caller(ctx)?;
        p.id = Priorities::id_of(&p.role_id, p.day);
        ctx.stamp(&mut p.meta);
        validate_priorities(&p)?;
        let now = store_time();
        self.0.tenants.changing(ctx, |tenant| {
            if let Some(existing) = tenant.priorities.any(&p.id)
                && !existing.meta.is_expired(now)
            {
                if !existing.readable_by(ctx) {
                    return Err(p.id_taken());
                }
                ctx.require_change(
                    &existing.meta,
                    openvibe_protocols::Change::Write,
                    format!("replace priorities {}", p.id),
                )?;
                let id = p.id.clone();
                return tenant
                    .priorities
                    .transition(&self.0.audit, ctx, &id, |existing| {
                        let mut next = existing.clone();
                        next.items = p.items;
                        next.meta.updated_at = now;
                        Ok(next)
                    });
            }
            place_new(ctx, "create", &mut p, now)?;
            tenant.priorities.insert_new(&self.0.audit, ctx, p.clone());
            Ok(p)
        })
    }

    fn report_metric(
        &self,
        ctx: &CallerContext,
        mut r: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        ready_new(ctx, &mut r, |r| validate_metric_report(r))?;
        let now = store_time();
        place_new(ctx, "create", &mut r, now)?;
        self.0.tenants.changing(ctx, |tenant| {
            if let Some(answer) = tenant.reports.existing_answer(ctx, &r, now) {
                return answer;
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
            // Its time is taken in the stream's order (issue 65): the
            // history lists reports oldest first, as `seq` numbers them.
            let at = next.updated_at.unwrap_or(now);
            r.meta.created_at = at;
            r.meta.updated_at = at;
            *stream = next;
            tenant.reports.insert_new(&self.0.audit, ctx, r.clone());
            Ok(r)
        })
    }
}

/// Namespace maintenance of goals, priorities and metric reports: each
/// kind's table, and a metric's streams with its reports.
#[async_trait]
impl Maintained for InMemoryGoalStore {
    fn keeps(&self, kind: &str) -> bool {
        [GOAL_KIND, PRIORITIES_KIND, METRIC_KIND].contains(&kind)
    }

    fn counts(&self, ctx: &CallerContext, kind: &str) -> Result<BTreeMap<String, u64>, StoreError> {
        self.0.tenants.reading(ctx, |t| {
            t.map(|t| t.table_ref(kind).counts()).unwrap_or_default()
        })
    }

    /// Metric reports take their streams with them (first, all at once):
    /// a stream `to` has already is a conflict, and nothing moves.
    fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let moved = self.0.tenants.changing_existing(ctx, |tenant| {
            if kind == METRIC_KIND {
                move_streams(&mut tenant.streams, from, to)?;
            }
            Ok(tenant
                .table(kind)
                .move_namespace(&self.0.audit, ctx, from, to, batch))
        })?;
        Ok(moved.unwrap_or(0))
    }

    /// A running total goes with the last of its reports.
    async fn sweep(
        &self,
        ctx: &CallerContext,
        kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        let taken = self.0.tenants.changing_existing(ctx, |tenant| {
            let taken = tenant
                .table(kind)
                .sweep(&self.0.audit, ctx, swept.sweep, pass);
            if kind == METRIC_KIND && taken > 0 && pass != Pass::Count {
                let live: HashSet<StreamKey> = tenant
                    .reports
                    .entries()
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
            Ok(taken)
        })?;
        Ok(taken.unwrap_or(0))
    }
}

/// Move the streams of namespace `from` to `to`, or none when `to` has
/// one of them already.
fn move_streams(
    streams: &mut HashMap<StreamKey, MetricValue>,
    from: &str,
    to: &str,
) -> Result<(), StoreError> {
    let moving: Vec<StreamKey> = streams
        .keys()
        .filter(|(ns, _, _)| ns == from)
        .cloned()
        .collect();
    if let Some((_, role, metric)) = moving.iter().find(|(_, role, metric)| {
        streams.contains_key(&(to.to_owned(), role.clone(), metric.clone()))
    }) {
        return Err(openvibe_protocols::stream_conflict(to, role, metric));
    }
    for key in moving {
        if let Some(value) = streams.remove(&key) {
            streams.insert((to.to_owned(), key.1, key.2), value);
        }
    }
    Ok(())
}

#[async_trait]
impl GoalStore for InMemoryGoalStore {
    async fn put(&self, ctx: &CallerContext, goal: Goal) -> Result<Goal, StoreError> {
        let id = goal.objective.id.clone();
        self.0
            .audited(ctx, GOAL_KIND, AuditOp::Insert, "put", &id, || {
                self.put_goal(ctx, goal)
            })
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Goal>, StoreError> {
        let _span = store_span(GOAL_KIND, "get", ctx);
        self.0
            .tenants
            .reading(ctx, |t| t.and_then(|t| t.goals.readable(ctx, id)).cloned())
    }

    async fn list(&self, ctx: &CallerContext, query: &GoalQuery) -> Result<Page<Goal>, StoreError> {
        let _span = store_span(GOAL_KIND, "list", ctx);
        let limit = query.checked_limit()?;
        let scope = ctx.list_scope(&query.namespaces);
        self.0.audit.record(AuditEntry::search(
            ctx,
            GOAL_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        let found = self.0.tenants.reading(ctx, |t| {
            t.map(|t| {
                t.goals
                    .entries()
                    .filter(|g| {
                        scope.contains(&g.meta.namespace) && g.readable_by(ctx) && query.matches(g)
                    })
                    .take(limit + 1)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
        })?;
        Ok(Page::of(found, limit))
    }

    async fn decompose(
        &self,
        ctx: &CallerContext,
        id: &str,
        fingerprint: &str,
        initiatives: Vec<Initiative>,
    ) -> Result<Goal, StoreError> {
        self.0
            .audited(ctx, GOAL_KIND, AuditOp::Update, "decompose", id, || {
                self.change_goal(ctx, id, |goal, now| {
                    goal.decompose_as(ctx, fingerprint, &initiatives, now)
                })
            })
    }

    async fn update_initiative(
        &self,
        ctx: &CallerContext,
        id: &str,
        initiative: &str,
        update: InitiativeUpdate,
    ) -> Result<Goal, StoreError> {
        self.0.audited(
            ctx,
            GOAL_KIND,
            AuditOp::Update,
            "update_initiative",
            id,
            || {
                self.change_goal(ctx, id, |goal, now| {
                    goal.update_initiative_as(ctx, initiative, &update, now)
                })
            },
        )
    }

    async fn put_priorities(
        &self,
        ctx: &CallerContext,
        priorities: Priorities,
    ) -> Result<Priorities, StoreError> {
        let id = Priorities::id_of(&priorities.role_id, priorities.day);
        self.0
            .audited(ctx, PRIORITIES_KIND, AuditOp::Insert, "put", &id, || {
                self.put_day(ctx, priorities)
            })
    }

    async fn priorities(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        day: NaiveDate,
    ) -> Result<Option<Priorities>, StoreError> {
        let _span = store_span(PRIORITIES_KIND, "get", ctx);
        self.0.tenants.reading(ctx, |t| {
            t.and_then(|t| {
                t.priorities
                    .entries()
                    .filter(|p| p.role_id == role_id && p.day <= day && p.readable_by(ctx))
                    .max_by_key(|p| (p.day, p.meta.updated_at))
                    .cloned()
            })
        })
    }

    async fn report(
        &self,
        ctx: &CallerContext,
        report: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        let id = report.id.clone();
        self.0
            .audited(ctx, METRIC_KIND, AuditOp::Insert, "report", &id, || {
                self.report_metric(ctx, report)
            })
    }

    async fn progress(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<GoalProgress>, StoreError> {
        let _span = store_span(GOAL_KIND, "progress", ctx);
        self.0.tenants.reading(ctx, |tenant| {
            let tenant = tenant?;
            let goal = tenant.goals.readable(ctx, id)?;
            let key = |metric: &str| {
                (
                    goal.meta.namespace.clone(),
                    goal.role_id().to_owned(),
                    metric.to_owned(),
                )
            };
            Some(GoalProgress::of(goal.clone(), |metric| {
                tenant.streams.get(&key(metric)).copied()
            }))
        })
    }

    async fn reports(
        &self,
        ctx: &CallerContext,
        query: &ReportQuery,
    ) -> Result<Page<MetricReport>, StoreError> {
        let _span = store_span(METRIC_KIND, "list", ctx);
        let (limit, after) = query.checked()?;
        let scope = ctx.list_scope(&query.namespaces);
        self.0.audit.record(AuditEntry::search(
            ctx,
            METRIC_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        let mut found: Vec<MetricReport> = self.0.tenants.reading(ctx, |t| {
            t.map(|t| {
                t.reports
                    .entries()
                    .filter(|r| {
                        scope.contains(&r.meta.namespace)
                            && r.readable_by(ctx)
                            && query.matches(r, after.as_ref())
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
        })?;
        found.sort_by(|a, b| (a.meta.created_at, &a.id).cmp(&(b.meta.created_at, &b.id)));
        found.truncate(limit + 1);
        Ok(Page::of(found, limit))
    }
}
