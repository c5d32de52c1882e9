//! [`PgGoalStore`]: goals, priorities and metric reports in PostgreSQL
//! (tables `goals`, `goal_priorities`, `metric_reports` and
//! `metric_streams`, migration 0021).
//!
//! A goal's revision and decomposition lock its row (`SELECT … FOR UPDATE`
//! within the caller's read rule) and are checked by the contract's rules
//! ([`Goal::revise_as`], [`Goal::decompose_as`]). A metric report is one
//! statement: the upsert of its stream's row (whose row lock orders
//! concurrent reports) and the insert of the report numbered by it; a
//! report whose id exists inserts nothing and its transaction rolls back,
//! so it never counts twice. The tables' triggers audit every change.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, GOAL_KIND, Goal, GoalProgress, GoalQuery,
    GoalStore, Initiative, InitiativeUpdate, KeptRecord, METRIC_KIND, MetricMode, MetricReport,
    MetricValue, Objective, PRIORITIES_KIND, Page, PageQuery, Priorities, Priority, ReportQuery,
    StoreError, check_caller, store_time, table_of, validate_goal, validate_metric_report,
    validate_priorities,
};
use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::{push_readable, push_readable_in};
use crate::audit::AuditWriter;
use crate::error::{corrupt, store_error};
use crate::identity::push_owned_identity;
use crate::kept::{self, KeptRow};
use crate::records::{
    GOVERNED_FIXED, Record, end_read, fetch_all, fetch_optional, governed_cols, select_readable,
};
use crate::rows::{col, columns, decode_meta};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::begin;

/// Goals, priorities and metric reports in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgGoalStore {
    pool: PgPool,
    audit: AuditWriter,
}

crate::audit::audited_store!(PgGoalStore);

const GOAL_COLS: &[&str] = governed_cols![
    "objective",
    "version",
    "fingerprint",
    "initiatives",
    "decomposed",
];

const PRIORITY_COLS: &[&str] = governed_cols!["role_id", "day", "items",];

const REPORT_COLS: &[&str] = governed_cols![
    "role_id",
    "metric",
    "value",
    "mode",
    "episode_id",
    "note",
    "seq",
    "total",
];

fn json_of<T: serde::de::DeserializeOwned>(
    kind: &str,
    row: &PgRow,
    id: &str,
    name: &str,
) -> Result<T, StoreError> {
    serde_json::from_value(col::<Value>(row, name)?).map_err(|e| corrupt(kind, id, e))
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, StoreError> {
    serde_json::to_value(value)
        .map_err(|e| StoreError::backend(format!("a goal record does not serialise: {e}")))
}

fn unsigned(kind: &str, id: &str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|e| corrupt(kind, id, e))
}

impl Record for Goal {
    const KIND: &'static str = GOAL_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = GOAL_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "role_id, objective, version, fingerprint, initiatives, \
         decomposed, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let version: i32 = col(row, "version")?;
        Ok(Goal {
            meta: decode_meta(GOAL_KIND, &id, row)?,
            objective: json_of::<Objective>(GOAL_KIND, row, &id, "objective")?,
            version: u32::try_from(version).map_err(|e| corrupt(GOAL_KIND, &id, e))?,
            fingerprint: col(row, "fingerprint")?,
            initiatives: json_of::<Vec<Initiative>>(GOAL_KIND, row, &id, "initiatives")?,
            decomposed: col(row, "decomposed")?,
        })
    }
}

impl Record for Priorities {
    const KIND: &'static str = PRIORITIES_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = PRIORITY_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "items, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        Ok(Priorities {
            meta: decode_meta(PRIORITIES_KIND, &id, row)?,
            role_id: col(row, "role_id")?,
            day: col(row, "day")?,
            items: json_of::<Vec<Priority>>(PRIORITIES_KIND, row, &id, "items")?,
            id,
        })
    }
}

impl Record for MetricReport {
    const KIND: &'static str = METRIC_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = REPORT_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let mode: String = col(row, "mode")?;
        Ok(MetricReport {
            meta: decode_meta(METRIC_KIND, &id, row)?,
            role_id: col(row, "role_id")?,
            metric: col(row, "metric")?,
            value: col(row, "value")?,
            mode: MetricMode::parse(&mode).ok_or_else(|| corrupt(METRIC_KIND, &id, &mode))?,
            episode_id: col(row, "episode_id")?,
            note: col(row, "note")?,
            seq: unsigned(METRIC_KIND, &id, col(row, "seq")?)?,
            total: col(row, "total")?,
            id,
        })
    }
}

impl KeptRow for Goal {
    const INSERTED: &'static str = "role_id, objective, version, fingerprint";

    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.push(", ")
            .bind(self.role_id().to_owned())
            .push(", ")
            .bind(to_json(&self.objective)?)
            .push(", ")
            .bind(i32::try_from(self.version).unwrap_or(i32::MAX))
            .push(", ")
            .bind(self.fingerprint.clone());
        Ok(())
    }

    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.bind(self.role_id().to_owned())
            .push(", ")
            .bind(to_json(&self.objective)?)
            .push(", ")
            .bind(i32::try_from(self.version).unwrap_or(i32::MAX))
            .push(", ")
            .bind(self.fingerprint.clone())
            .push(", ")
            .bind(to_json(&self.initiatives)?)
            .push(", ")
            .bind(self.decomposed.clone())
            .push(", ")
            .bind(self.meta.updated_at);
        Ok(())
    }
}

impl KeptRow for Priorities {
    const INSERTED: &'static str = "role_id, day, items";

    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.push(", ")
            .bind(self.role_id.clone())
            .push(", ")
            .bind(self.day)
            .push(", ")
            .bind(to_json(&self.items)?);
        Ok(())
    }

    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.bind(to_json(&self.items)?)
            .push(", ")
            .bind(self.meta.updated_at);
        Ok(())
    }
}

impl PgGoalStore {
    /// A new goal, or a new version of the goal its objective names (the
    /// same objective again changes nothing).
    async fn put_unaudited(&self, ctx: &CallerContext, mut goal: Goal) -> Result<Goal, StoreError> {
        let placed = kept::ready_new(ctx, &mut goal, "create", |g| validate_goal(g))?;
        goal.prepare_new();
        let insert = kept::insert_sql(ctx, &placed, &goal)?;
        let mut tx = kept::begin_new(&self.pool, ctx, &goal).await?;
        if let Some(created) = fetch_optional::<Goal>(&mut tx, insert).await? {
            tx.commit().await.map_err(store_error)?;
            return Ok(created);
        }
        let Some(current) = kept::find::<Goal>(&mut tx, ctx, goal.id(), true).await? else {
            return Err(goal.id_taken());
        };
        let Some(next) = current.revise_as(ctx, &goal.objective, placed.now)? else {
            end_read(tx);
            return Ok(current);
        };
        kept::write_back(&mut tx, ctx, &next).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(next)
    }

    /// Lock the goal `id` `ctx` may read, apply `change` at the store's
    /// time and write what it gives back (`None`: it stays, answered).
    async fn change_unaudited(
        &self,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&Goal, chrono::DateTime<chrono::Utc>) -> Result<Option<Goal>, StoreError>,
    ) -> Result<Goal, StoreError> {
        check_caller(ctx)?;
        let mut tx = begin(&self.pool, ctx).await?;
        let current = kept::lock::<Goal>(&mut tx, ctx, id).await?;
        let Some(next) = change(&current, store_time())? else {
            end_read(tx);
            return Ok(current);
        };
        kept::write_back(&mut tx, ctx, &next).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(next)
    }

    async fn list_unaudited(
        &self,
        ctx: &CallerContext,
        query: &GoalQuery,
        limit: usize,
    ) -> Result<Page<Goal>, StoreError> {
        check_caller(ctx)?;
        let scope = ctx.list_scope(&query.namespaces);
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM goals f WHERE f.tenant_id = ",
            columns(GOAL_COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
        push_readable_in(&mut sql, ctx, "f.", None, &scope);
        if let Some(role) = &query.role_id {
            sql.push(" AND f.role_id = ").bind(role.clone());
        }
        if let Some(after) = &query.after {
            sql.push(" AND f.id > ").bind(after.clone());
        }
        sql.push(" ORDER BY f.id LIMIT ")
            .bind(i64::try_from(limit + 1).unwrap_or(i64::MAX));
        let mut tx = begin(&self.pool, ctx).await?;
        let found = fetch_all::<Goal>(&mut tx, sql).await?;
        end_read(tx);
        Ok(Page::of(found, limit))
    }

    async fn reports_unaudited(
        &self,
        ctx: &CallerContext,
        query: &ReportQuery,
        limit: usize,
        after: Option<(DateTime<Utc>, String)>,
    ) -> Result<Page<MetricReport>, StoreError> {
        check_caller(ctx)?;
        let scope = ctx.list_scope(&query.namespaces);
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM metric_reports f WHERE f.tenant_id = ",
            columns(REPORT_COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
        push_readable_in(&mut sql, ctx, "f.", None, &scope);
        sql.push(" AND f.role_id = ").bind(query.role_id.clone());
        if let Some(metric) = &query.metric {
            sql.push(" AND f.metric = ").bind(metric.clone());
        }
        if let Some(since) = query.since {
            sql.push(" AND f.created_at >= ").bind(since);
        }
        if let Some((at, id)) = after {
            sql.push(" AND (f.created_at, f.id) > (")
                .bind(at)
                .push(", ")
                .bind(id)
                .push(")");
        }
        sql.push(" ORDER BY f.created_at, f.id LIMIT ")
            .bind(i64::try_from(limit + 1).unwrap_or(i64::MAX));
        let mut tx = begin(&self.pool, ctx).await?;
        let found = fetch_all::<MetricReport>(&mut tx, sql).await?;
        end_read(tx);
        Ok(Page::of(found, limit))
    }

    /// A role's priorities of a day, replacing that day's (with the write
    /// right over them).
    async fn put_priorities_unaudited(
        &self,
        ctx: &CallerContext,
        mut p: Priorities,
    ) -> Result<Priorities, StoreError> {
        p.id = Priorities::id_of(&p.role_id, p.day);
        let placed = kept::ready_new(ctx, &mut p, "create", |p| validate_priorities(p))?;
        let insert = kept::insert_sql(ctx, &placed, &p)?;
        let mut tx = kept::begin_new(&self.pool, ctx, &p).await?;
        if let Some(created) = fetch_optional::<Priorities>(&mut tx, insert).await? {
            tx.commit().await.map_err(store_error)?;
            return Ok(created);
        }
        let Some(mut current) = kept::find::<Priorities>(&mut tx, ctx, &p.id, true).await? else {
            return Err(p.id_taken());
        };
        ctx.require_change(
            &current.meta,
            Change::Write,
            format!("replace priorities {}", p.id),
        )?;
        current.items = p.items;
        current.meta.updated_at = placed.now;
        kept::write_back(&mut tx, ctx, &current).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(current)
    }

    async fn priorities_unaudited(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        day: NaiveDate,
    ) -> Result<Option<Priorities>, StoreError> {
        check_caller(ctx)?;
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM goal_priorities f WHERE f.tenant_id = ",
            columns(PRIORITY_COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.role_id = ")
            .bind(role_id.to_owned())
            .push(" AND f.day <= ")
            .bind(day)
            .push(" AND ");
        push_readable(&mut sql, ctx, "f.", None);
        sql.push(" ORDER BY f.day DESC, f.updated_at DESC LIMIT 1");
        let mut tx = begin(&self.pool, ctx).await?;
        let found = fetch_optional::<Priorities>(&mut tx, sql).await?;
        end_read(tx);
        Ok(found)
    }

    async fn report_unaudited(
        &self,
        ctx: &CallerContext,
        mut r: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        let kept::Placed { placement, now, .. } =
            kept::ready_new(ctx, &mut r, "report", |r| validate_metric_report(r))?;
        // One statement: move the stream (its row lock orders concurrent
        // reports) and insert the report with the stream's new state.
        let mut sql = Sql::new(
            "WITH s AS (INSERT INTO metric_streams AS m (tenant_id, namespace, role_id, metric, \
             value, is_set, reports, updated_at) VALUES (",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(", ")
            .bind(placement.namespace.clone())
            .push(", ")
            .bind(r.role_id.clone())
            .push(", ")
            .bind(r.metric.clone())
            .push(", ")
            .bind(r.value)
            .push(", ")
            .bind(r.mode == MetricMode::Set)
            .push(", 1, ")
            .bind(now)
            .push(
                ") ON CONFLICT (tenant_id, namespace, role_id, metric) DO UPDATE SET \
                 value = CASE WHEN excluded.is_set THEN excluded.value \
                              ELSE m.value + excluded.value END, \
                 is_set = m.is_set OR excluded.is_set, reports = m.reports + 1, \
                 updated_at = GREATEST(excluded.updated_at, \
                                       m.updated_at + interval '1 microsecond') \
                 RETURNING reports, value, updated_at) \
                 INSERT INTO metric_reports (tenant_id, id, namespace, project_id, owner, \
                 classification, source, role_id, metric, value, mode, \
                 episode_id, note, seq, total, created_at, updated_at) SELECT ",
            );
        // The report's time is the stream's, taken under its row lock: a
        // microsecond after the previous report's when the clock says
        // otherwise (`MetricValue::apply`), so that a history oldest first
        // is in `seq` order (issue 65).
        push_owned_identity(&mut sql, ctx, &placement, r.id.clone());
        sql.push(", ")
            .bind(r.meta.classification.as_str())
            .push(", ")
            .bind(r.meta.source.clone())
            .push(", ")
            .bind(r.role_id.clone())
            .push(", ")
            .bind(r.metric.clone())
            .push(", ")
            .bind(r.value)
            .push(", ")
            .bind(r.mode.as_str())
            .push(", ")
            .bind(r.episode_id.clone())
            .push(", ")
            .bind(r.note.clone())
            .push(&format!(
                ", s.reports, s.value, s.updated_at, s.updated_at FROM s \
                 ON CONFLICT (tenant_id, id) DO NOTHING RETURNING {}",
                columns(REPORT_COLS, "")
            ));
        let mut tx = begin(&self.pool, ctx).await?;
        let created = fetch_optional::<MetricReport>(&mut tx, sql)
            .await
            .map_err(|e| match e {
                // float8 overflow (22003) in the running total.
                StoreError::InvalidInput { reason, .. } if reason.contains("out of range") => {
                    openvibe_protocols::total_out_of_range()
                }
                other => other,
            })?;
        // The id exists: nothing counts (the stream's move rolls back).
        kept::answer_insert(tx, ctx, created, &r).await
    }

    async fn progress_unaudited(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<GoalProgress>, StoreError> {
        check_caller(ctx)?;
        let mut tx = begin(&self.pool, ctx).await?;
        let Some(goal) =
            fetch_optional::<Goal>(&mut tx, select_readable::<Goal>(ctx, id, false)).await?
        else {
            end_read(tx);
            return Ok(None);
        };
        let metrics: Vec<String> = goal
            .objective
            .key_results
            .iter()
            .map(|k| k.metric.clone())
            .collect();
        let mut sql = Sql::new(
            "SELECT metric, value, is_set, reports, updated_at FROM metric_streams \
             WHERE tenant_id = ",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND namespace = ")
            .bind(goal.meta.namespace.clone())
            .push(" AND role_id = ")
            .bind(goal.role_id().to_owned())
            .push(" AND metric = ANY(")
            .bind(metrics)
            .push("::text[])");
        let rows = sql
            .build()?
            .fetch_all(&mut *tx)
            .await
            .map_err(store_error)?;
        end_read(tx);
        let mut values = Vec::with_capacity(rows.len());
        for row in &rows {
            let reports: i64 = col(row, "reports")?;
            let updated_at: DateTime<Utc> = col(row, "updated_at")?;
            values.push((
                col::<String>(row, "metric")?,
                MetricValue {
                    value: col(row, "value")?,
                    set: col(row, "is_set")?,
                    reports: unsigned(METRIC_KIND, id, reports)?,
                    updated_at: Some(updated_at),
                },
            ));
        }
        Ok(Some(GoalProgress::of(goal, |metric| {
            values.iter().find(|(m, _)| m == metric).map(|(_, v)| *v)
        })))
    }
}

/// Move the metric streams of namespace `from` to `to` in `tx` (before the
/// reports of a namespace migration move): a stream `to` has already is a
/// conflict, and nothing moves.
pub(crate) async fn move_streams(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    ctx: &CallerContext,
    from: &str,
    to: &str,
) -> Result<(), StoreError> {
    let mut clash =
        Sql::new("SELECT s.role_id, s.metric FROM metric_streams s WHERE s.tenant_id = ");
    clash
        .bind(ctx.tenant_id().to_owned())
        .push(" AND s.namespace = ")
        .bind(from.to_owned())
        .push(" AND EXISTS (SELECT 1 FROM metric_streams t WHERE t.tenant_id = s.tenant_id AND t.namespace = ")
        .bind(to.to_owned())
        .push(" AND t.role_id = s.role_id AND t.metric = s.metric) LIMIT 1");
    if let Some(row) = clash
        .build()?
        .fetch_optional(&mut **tx)
        .await
        .map_err(store_error)?
    {
        let role: String = col(&row, "role_id")?;
        let metric: String = col(&row, "metric")?;
        return Err(openvibe_protocols::stream_conflict(to, &role, &metric));
    }
    let mut update = Sql::new("UPDATE metric_streams SET namespace = ");
    update
        .bind(to.to_owned())
        .push(" WHERE tenant_id = ")
        .bind(ctx.tenant_id().to_owned())
        .push(" AND namespace = ")
        .bind(from.to_owned());
    update
        .build()?
        .execute(&mut **tx)
        .await
        .map_err(store_error)?;
    Ok(())
}

#[async_trait]
impl GoalStore for PgGoalStore {
    async fn put(&self, ctx: &CallerContext, goal: Goal) -> Result<Goal, StoreError> {
        let id = goal.id().to_owned();
        let write = self.put_unaudited(ctx, goal);
        kept::audited(
            &self.audit,
            ctx,
            GOAL_KIND,
            AuditOp::Insert,
            "put",
            &id,
            write,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Goal>, StoreError> {
        crate::records::get::<Goal>(&self.pool, ctx, id).await
    }

    async fn list(&self, ctx: &CallerContext, query: &GoalQuery) -> Result<Page<Goal>, StoreError> {
        let limit = query.checked_limit()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, GOAL_KIND, query, &query.namespaces, limit));
        self.list_unaudited(ctx, query, limit)
            .instrument(span(GOAL_KIND, "list", ctx))
            .await
    }

    async fn decompose(
        &self,
        ctx: &CallerContext,
        id: &str,
        fingerprint: &str,
        initiatives: Vec<Initiative>,
    ) -> Result<Goal, StoreError> {
        let write = self.change_unaudited(ctx, id, |goal, now| {
            goal.decompose_as(ctx, fingerprint, &initiatives, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            GOAL_KIND,
            AuditOp::Update,
            "decompose",
            id,
            write,
        )
        .await
    }

    async fn update_initiative(
        &self,
        ctx: &CallerContext,
        id: &str,
        initiative: &str,
        update: InitiativeUpdate,
    ) -> Result<Goal, StoreError> {
        let write = self.change_unaudited(ctx, id, |goal, now| {
            goal.update_initiative_as(ctx, initiative, &update, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            GOAL_KIND,
            AuditOp::Update,
            "update_initiative",
            id,
            write,
        )
        .await
    }

    async fn put_priorities(
        &self,
        ctx: &CallerContext,
        priorities: Priorities,
    ) -> Result<Priorities, StoreError> {
        let id = Priorities::id_of(&priorities.role_id, priorities.day);
        let write = self.put_priorities_unaudited(ctx, priorities);
        kept::audited(
            &self.audit,
            ctx,
            PRIORITIES_KIND,
            AuditOp::Insert,
            "put",
            &id,
            write,
        )
        .await
    }

    async fn priorities(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        day: NaiveDate,
    ) -> Result<Option<Priorities>, StoreError> {
        self.priorities_unaudited(ctx, role_id, day)
            .instrument(span(PRIORITIES_KIND, "get", ctx))
            .await
    }

    async fn report(
        &self,
        ctx: &CallerContext,
        report: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        let id = report.id.clone();
        let write = self.report_unaudited(ctx, report);
        kept::audited(
            &self.audit,
            ctx,
            METRIC_KIND,
            AuditOp::Insert,
            "report",
            &id,
            write,
        )
        .await
    }

    async fn progress(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<GoalProgress>, StoreError> {
        self.progress_unaudited(ctx, id)
            .instrument(span(GOAL_KIND, "progress", ctx))
            .await
    }

    async fn reports(
        &self,
        ctx: &CallerContext,
        query: &ReportQuery,
    ) -> Result<Page<MetricReport>, StoreError> {
        let (limit, after) = query.checked()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, METRIC_KIND, query, &query.namespaces, limit));
        self.reports_unaudited(ctx, query, limit, after)
            .instrument(span(METRIC_KIND, "list", ctx))
            .await
    }
}
