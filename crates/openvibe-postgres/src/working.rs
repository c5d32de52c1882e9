//! [`WorkingStore`] on PostgreSQL: sessions, plans and plan state here,
//! task and plan contexts in `contexts.rs`.
//!
//! Access is in the SQL predicate as for every record (a plan's state and
//! context through the plan's row). Atomic append and increment, and the
//! versioned write, are one `INSERT … ON CONFLICT DO UPDATE` or `UPDATE`
//! each; when a write matches nothing, a refusal query says why.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Change, ContextStore, Expect, NewPlan, NewSession, Page, Plan, PlanContext,
    PlanDeleted, PlanQuery, PlanStateStore, PlanStatus, PlanStore, PlanUpdate, Session,
    SessionDeleted, SessionQuery, SessionStore, StateEntry, StoreError, TaskContext, page_cursor,
    parse_cursor, store_time, validate_record_id,
};
use openvibe_protocols::{check_json, check_label, check_opt_label, check_state_key, json_object};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Transaction};
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::error::store_error;
use crate::identity::{delete_row, push_new_identity};
use crate::records::{self, Mode, Record, end_read, fetch_all, fetch_optional, not_found};
use crate::rows::decode_meta;
use crate::rows::{col, columns, count_col};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{begin, one_trip};
use openvibe_protocols::check_caller;

const SESSION_COLS: &[&str] = &[
    "tenant_id",
    "id",
    "namespace",
    "project_id",
    "owner",
    "classification",
    "source",
    "created_at",
    "updated_at",
    "name",
    "metadata",
    "plan_count",
    "last_activity",
];

const PLAN_COLS: &[&str] = &[
    "tenant_id",
    "id",
    "namespace",
    "project_id",
    "owner",
    "classification",
    "source",
    "created_at",
    "updated_at",
    "goal_event",
    "goal_data",
    "response_event",
    "status",
    "session_id",
    "parent_plan_id",
];

const STATE_COLS: &str = "plan_id, key, value, version, updated_at";

impl Record for Session {
    const KIND: &'static str = "session";
    const TABLE: &'static str = "sessions";
    const COLS: &'static [&'static str] = SESSION_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = "tenant_id, id, project_id, owner, created_at";
    const MUTABLE: &'static str = "name, metadata, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        Ok(Session {
            meta: decode_meta("session", &id, row)?,
            name: col(row, "name")?,
            metadata: col(row, "metadata")?,
            plan_count: count_col(row, "plan_count")?,
            last_activity: col(row, "last_activity")?,
            id,
        })
    }
}

impl Record for Plan {
    const KIND: &'static str = "plan";
    const TABLE: &'static str = "plans";
    const COLS: &'static [&'static str] = PLAN_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = "tenant_id, id, project_id, owner, created_at";
    const MUTABLE: &'static str = "goal_data, response_event, status, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let status: String = col(row, "status")?;
        Ok(Plan {
            meta: decode_meta("plan", &id, row)?,
            goal_event: col(row, "goal_event")?,
            goal_data: col(row, "goal_data")?,
            response_event: col(row, "response_event")?,
            status: status
                .parse::<PlanStatus>()
                .map_err(|e| crate::error::corrupt("plan", &id, e))?,
            session_id: col(row, "session_id")?,
            parent_plan_id: col(row, "parent_plan_id")?,
            id,
        })
    }
}

pub(crate) fn decode_state(row: &PgRow) -> Result<StateEntry, StoreError> {
    Ok(StateEntry {
        plan_id: col(row, "plan_id")?,
        key: col(row, "key")?,
        value: col(row, "value")?,
        version: count_col(row, "version")?,
        updated_at: col(row, "updated_at")?,
    })
}

fn new_id(given: Option<String>) -> Result<String, StoreError> {
    let id = given.unwrap_or_else(crate::identity::new_id);
    validate_record_id(&id)?;
    Ok(id)
}

/// Lock the row `id` of `R` if the caller may change it; otherwise the
/// refusal (`NotFound` when unreadable, else `Unauthorized`).
pub(crate) async fn lock_changeable<R: Record>(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    id: &str,
    operation: &str,
) -> Result<(), StoreError> {
    lock_changeable_as::<R>(tx, ctx, id, operation, "FOR UPDATE").await
}

/// [`lock_changeable`] with a weaker lock (`FOR SHARE`: the row cannot be
/// deleted or changed meanwhile, other sharers are not blocked).
pub(crate) async fn lock_changeable_as<R: Record>(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    id: &str,
    operation: &str,
    lock: &str,
) -> Result<(), StoreError> {
    let mut sql = Sql::new(&format!(
        "SELECT 1 AS ok FROM {} f WHERE f.tenant_id = ",
        R::TABLE
    ));
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND f.id = ")
        .bind(id.to_owned())
        .push(" AND ");
    push_changeable(&mut sql, ctx, "f.", records::change_of(operation));
    sql.push(" ").push(lock);
    let found = sql
        .build()?
        .fetch_optional(&mut **tx)
        .await
        .map_err(store_error)?;
    match found {
        Some(_) => Ok(()),
        None => Err(records::refusal::<R>(tx, ctx, id, operation, Mode::Update, "").await),
    }
}

/// `NotFound` unless the caller can read the row `id` of `R` (locked for share).
pub(crate) async fn require_readable<R: Record>(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    id: &str,
) -> Result<(), StoreError> {
    let mut sql = Sql::new(&format!(
        "SELECT 1 AS ok FROM {} f WHERE f.tenant_id = ",
        R::TABLE
    ));
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND f.id = ")
        .bind(id.to_owned())
        .push(" AND ");
    push_readable(&mut sql, ctx, "f.", None);
    sql.push(" FOR SHARE");
    match sql
        .build()?
        .fetch_optional(&mut **tx)
        .await
        .map_err(store_error)?
    {
        Some(_) => Ok(()),
        None => Err(not_found(R::KIND, id)),
    }
}

/// Run `sql` (a `SELECT` of `R` on alias `f.` whose `WHERE` is open) one
/// page at a time, newest first: keyset `(f.created_at, f.id) < cursor`,
/// `limit + 1` rows fetched to know whether another page follows; `key` is
/// a record's `(created_at, id)`.
async fn fetch_page<R: Record>(
    pool: &PgPool,
    ctx: &CallerContext,
    mut sql: Sql,
    limit: usize,
    cursor: Option<&str>,
    key: impl Fn(&R) -> (DateTime<Utc>, &str),
) -> Result<Page<R>, StoreError> {
    if let Some(cursor) = cursor {
        let (micros, id) = parse_cursor(cursor)?;
        let at = DateTime::<Utc>::from_timestamp_micros(micros)
            .ok_or_else(|| StoreError::invalid("cursor", "its time is out of range"))?;
        sql.push(" AND (f.created_at, f.id) < (")
            .bind(at)
            .push(", ")
            .bind(id)
            .push(")");
    }
    let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    sql.push(" ORDER BY f.created_at DESC, f.id DESC LIMIT ")
        .bind(fetch);
    let mut tx = begin(pool, ctx).await?;
    let mut items = fetch_all::<R>(&mut tx, sql).await?;
    end_read(tx);
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = match items.last() {
        Some(last) if more => {
            let (at, id) = key(last);
            Some(page_cursor(at, id))
        }
        _ => None,
    };
    Ok(Page { items, next_cursor })
}

/// Record activity on a session (a plan of it changed), `plans` plans more.
async fn touch_session(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    session: Option<&str>,
    plans: i64,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let Some(session) = session else {
        return Ok(());
    };
    let mut sql = Sql::new("UPDATE sessions SET plan_count = greatest(plan_count + ");
    sql.bind(plans)
        .push(", 0), last_activity = greatest(last_activity, ")
        .bind(now)
        .push(") WHERE tenant_id = ")
        .bind(ctx.tenant_id().to_owned())
        .push(" AND id = ")
        .bind(session.to_owned());
    sql.build()?.execute(&mut **tx).await.map_err(store_error)?;
    Ok(())
}

/// [`WorkingStore`](openvibe_protocols::WorkingStore) on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgWorkingStore {
    pub(crate) pool: PgPool,
}

impl PgWorkingStore {
    /// The store on `pool` (migrated).
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Why a plan-state write matched nothing (read in a transaction of its
    /// own: the write's has ended): the plan's refusal, or (when the caller
    /// may change the plan) `otherwise`.
    async fn explain_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        otherwise: StoreError,
    ) -> StoreError {
        let mut tx = match begin(&self.pool, ctx).await {
            Ok(tx) => tx,
            Err(e) => return e,
        };
        match lock_changeable::<Plan>(&mut tx, ctx, plan_id, "change").await {
            Ok(()) => otherwise,
            Err(refused) => refused,
        }
    }

    /// Run a plan-state write in one round trip (`sql` returns the entry, or
    /// no row when it did not apply) and explain an empty result.
    async fn write_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        sql: Sql,
        otherwise: impl FnOnce() -> StoreError,
    ) -> Result<StateEntry, StoreError> {
        match one_trip(&self.pool, ctx, sql).await?.first() {
            Some(row) => decode_state(row),
            None => Err(self.explain_state(ctx, plan_id, otherwise()).await),
        }
    }

    /// `INSERT INTO plan_state … SELECT … FROM plans f WHERE <plan changeable>`
    /// with `value` (SQL producing the new value) and `on_conflict`.
    fn upsert_state(
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        build: impl FnOnce(&mut Sql),
    ) -> Sql {
        let mut sql = Sql::one_trip(
            "INSERT INTO plan_state AS s (tenant_id, plan_id, key, value, version, updated_at) \
             SELECT f.tenant_id, f.id, ",
        );
        sql.bind(key.to_owned()).push(", ");
        build(&mut sql);
        sql.push(" WHERE f.tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(" AND f.id = ")
            .bind(plan_id.to_owned())
            .push(" AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Write);
        sql
    }
}

#[async_trait]
impl SessionStore for PgWorkingStore {
    async fn create_session(
        &self,
        ctx: &CallerContext,
        session: NewSession,
    ) -> Result<Session, StoreError> {
        async {
            check_caller(ctx)?;
            let id = new_id(session.id)?;
            check_opt_label("name", session.name.as_deref())?;
            let metadata = json_object("metadata", session.metadata)?;
            let now = store_time();
            let mut sql = Sql::new(
                "INSERT INTO sessions (tenant_id, id, namespace, project_id, owner, created_at, updated_at, \
                 last_activity, name, metadata) VALUES (",
            );
            let placement = ctx.placement("", &format!("create session {id}"))?;
            push_new_identity(&mut sql, ctx, &placement, id, now);
            sql.bind(now)
                .push(", ")
                .bind(session.name)
                .push(", ")
                .bind(metadata)
                .push(&format!(") RETURNING {}", columns(SESSION_COLS, "")));
            let mut tx = begin(&self.pool, ctx).await?;
            let created = fetch_optional::<Session>(&mut tx, sql)
                .await?
                .ok_or_else(|| StoreError::backend("the insert returned no row"))?;
            tx.commit().await.map_err(store_error)?;
            Ok(created)
        }
        .instrument(span("session", "create", ctx))
        .await
    }

    async fn get_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Session>, StoreError> {
        records::get::<Session>(&self.pool, ctx, id).await
    }

    async fn list_sessions(
        &self,
        ctx: &CallerContext,
        query: &SessionQuery,
    ) -> Result<Page<Session>, StoreError> {
        async {
            let mut sql = Sql::new(&format!(
                "SELECT {} FROM sessions f WHERE f.tenant_id = ",
                columns(SESSION_COLS, "f.")
            ));
            sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
            push_readable(&mut sql, ctx, "f.", None);
            if let Some(t) = query.older_than {
                sql.push(" AND f.last_activity < ").bind(t);
            }
            fetch_page(
                &self.pool,
                ctx,
                sql,
                query.limit,
                query.cursor.as_deref(),
                |s: &Session| (s.meta.created_at, s.id.as_str()),
            )
            .await
        }
        .instrument(span("session", "list", ctx))
        .await
    }

    async fn delete_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<SessionDeleted, StoreError> {
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            lock_changeable::<Session>(&mut tx, ctx, id, "delete").await?;
            let mut count = Sql::new("SELECT count(*) AS n FROM plans WHERE tenant_id = ");
            count
                .bind(ctx.tenant_id().to_owned())
                .push(" AND session_id = ")
                .bind(id.to_owned());
            let row = count
                .build()?
                .fetch_one(&mut *tx)
                .await
                .map_err(store_error)?;
            let plans_detached = count_col(&row, "n")?;
            // Foreign keys detach plans, plan contexts and knowledge.
            delete_row(&mut tx, ctx, "sessions", id).await?;
            tx.commit().await.map_err(store_error)?;
            Ok(SessionDeleted { plans_detached })
        }
        .instrument(span("session", "delete", ctx))
        .await
    }
}

#[async_trait]
impl PlanStore for PgWorkingStore {
    async fn create_plan(&self, ctx: &CallerContext, plan: NewPlan) -> Result<Plan, StoreError> {
        async {
            check_caller(ctx)?;
            let id = new_id(plan.id)?;
            if plan.goal_event.trim().is_empty() {
                return Err(StoreError::invalid("goal_event", "must not be empty"));
            }
            check_label("goal_event", &plan.goal_event)?;
            check_label("response_event", &plan.response_event)?;
            check_opt_label("session_id", plan.session_id.as_deref())?;
            check_opt_label("parent_plan_id", plan.parent_plan_id.as_deref())?;
            let goal_data = json_object("goal_data", plan.goal_data)?;
            let now = store_time();
            let mut tx = begin(&self.pool, ctx).await?;
            if let Some(session) = &plan.session_id {
                require_readable::<Session>(&mut tx, ctx, session).await?;
            }
            if let Some(parent) = &plan.parent_plan_id {
                require_readable::<Plan>(&mut tx, ctx, parent).await?;
            }
            let mut sql = Sql::new(
                "INSERT INTO plans (tenant_id, id, namespace, project_id, owner, created_at, updated_at, \
                 goal_event, goal_data, response_event, status, session_id, parent_plan_id) VALUES (",
            );
            let placement = ctx.placement("", &format!("create plan {id}"))?;
            push_new_identity(&mut sql, ctx, &placement, id, now);
            sql.bind(plan.goal_event)
                .push(", ")
                .bind(goal_data)
                .push(", ")
                .bind(plan.response_event)
                .push(", 'active', ")
                .bind(plan.session_id.clone())
                .push(", ")
                .bind(plan.parent_plan_id)
                .push(&format!(") RETURNING {}", columns(PLAN_COLS, "")));
            let created = fetch_optional::<Plan>(&mut tx, sql)
                .await?
                .ok_or_else(|| StoreError::backend("the insert returned no row"))?;
            touch_session(&mut tx, ctx, plan.session_id.as_deref(), 1, now).await?;
            tx.commit().await.map_err(store_error)?;
            Ok(created)
        }
        .instrument(span("plan", "create", ctx))
        .await
    }

    async fn get_plan(&self, ctx: &CallerContext, id: &str) -> Result<Option<Plan>, StoreError> {
        records::get::<Plan>(&self.pool, ctx, id).await
    }

    async fn list_plans(
        &self,
        ctx: &CallerContext,
        query: &PlanQuery,
    ) -> Result<Page<Plan>, StoreError> {
        async {
            let mut sql = Sql::new(&format!(
                "SELECT {} FROM plans f WHERE f.tenant_id = ",
                columns(PLAN_COLS, "f.")
            ));
            sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
            push_readable(&mut sql, ctx, "f.", None);
            if let Some(status) = query.status {
                sql.push(" AND f.status = ").bind(status.as_str());
            }
            if let Some(session) = &query.session_id {
                sql.push(" AND f.session_id = ").bind(session.clone());
            }
            if let Some(t) = query.older_than {
                sql.push(" AND f.updated_at < ").bind(t);
            }
            fetch_page(
                &self.pool,
                ctx,
                sql,
                query.limit,
                query.cursor.as_deref(),
                |p: &Plan| (p.meta.created_at, p.id.as_str()),
            )
            .await
        }
        .instrument(span("plan", "list", ctx))
        .await
    }

    async fn update_plan(
        &self,
        ctx: &CallerContext,
        id: &str,
        update: PlanUpdate,
    ) -> Result<Plan, StoreError> {
        async {
            if let Some(event) = &update.response_event {
                check_label("response_event", event)?;
            }
            let goal_data = update
                .goal_data
                .map(|g| json_object("goal_data", g))
                .transpose()?;
            let now = store_time();
            let mut sql = Sql::new("UPDATE plans AS f SET status = coalesce(");
            sql.bind(update.status.map(PlanStatus::as_str))
                .push(", f.status), goal_data = coalesce(")
                .bind(goal_data)
                .push(", f.goal_data), response_event = coalesce(")
                .bind(update.response_event)
                .push(", f.response_event), updated_at = ")
                .bind(now)
                .push(" WHERE f.tenant_id = ")
                .bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = ")
                .bind(id.to_owned())
                .push(" AND ");
            push_changeable(&mut sql, ctx, "f.", Change::Write);
            sql.push(&format!(" RETURNING {}", columns(PLAN_COLS, "f.")));
            let mut tx = begin(&self.pool, ctx).await?;
            match fetch_optional::<Plan>(&mut tx, sql).await? {
                Some(plan) => {
                    touch_session(&mut tx, ctx, plan.session_id.as_deref(), 0, now).await?;
                    tx.commit().await.map_err(store_error)?;
                    Ok(plan)
                }
                None => Err(
                    records::refusal::<Plan>(&mut tx, ctx, id, "change", Mode::Update, "").await,
                ),
            }
        }
        .instrument(span("plan", "update", ctx))
        .await
    }

    async fn delete_plan(&self, ctx: &CallerContext, id: &str) -> Result<PlanDeleted, StoreError> {
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            lock_changeable::<Plan>(&mut tx, ctx, id, "delete").await?;
            let mut counts = Sql::new(
                "SELECT f.session_id, \
                 (SELECT count(*) FROM plan_state s WHERE s.tenant_id = f.tenant_id AND s.plan_id = f.id) AS keys, \
                 EXISTS (SELECT 1 FROM plan_contexts c WHERE c.tenant_id = f.tenant_id AND c.plan_id = f.id) AS context, \
                 (SELECT count(*) FROM plans p WHERE p.tenant_id = f.tenant_id AND p.parent_plan_id = f.id) AS subs \
                 FROM plans f WHERE f.tenant_id = ",
            );
            counts
                .bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = ")
                .bind(id.to_owned());
            let row = counts
                .build()?
                .fetch_one(&mut *tx)
                .await
                .map_err(store_error)?;
            let session: Option<String> = col(&row, "session_id")?;
            let deleted = PlanDeleted {
                state_keys: count_col(&row, "keys")?,
                context: col(&row, "context")?,
                subplans_detached: count_col(&row, "subs")?,
            };
            // Foreign keys take the state and context, detach sub-plans,
            // task contexts and knowledge.
            delete_row(&mut tx, ctx, "plans", id).await?;
            touch_session(&mut tx, ctx, session.as_deref(), -1, store_time()).await?;
            tx.commit().await.map_err(store_error)?;
            Ok(deleted)
        }
        .instrument(span("plan", "delete", ctx))
        .await
    }
}

#[async_trait]
impl ContextStore for PgWorkingStore {
    async fn store_task_context(
        &self,
        ctx: &CallerContext,
        task: TaskContext,
    ) -> Result<TaskContext, StoreError> {
        crate::contexts::store_task_context(&self.pool, ctx, task).await
    }

    async fn get_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        records::get::<TaskContext>(&self.pool, ctx, task_id).await
    }

    async fn get_task_by_subtask(
        &self,
        ctx: &CallerContext,
        sub_task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        crate::contexts::get_task_by_subtask(&self.pool, ctx, sub_task_id).await
    }

    async fn delete_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<bool, StoreError> {
        crate::contexts::delete_task_context(&self.pool, ctx, task_id).await
    }

    async fn store_plan_context(
        &self,
        ctx: &CallerContext,
        context: PlanContext,
    ) -> Result<PlanContext, StoreError> {
        crate::contexts::store_plan_context(&self.pool, ctx, context).await
    }

    async fn get_plan_context(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        crate::contexts::get_plan_context(&self.pool, ctx, Some(plan_id), None).await
    }

    async fn get_plan_by_correlation(
        &self,
        ctx: &CallerContext,
        correlation_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        crate::contexts::get_plan_context(&self.pool, ctx, None, Some(correlation_id)).await
    }
}

#[async_trait]
impl PlanStateStore for PgWorkingStore {
    async fn set_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        value: Value,
        expect: Expect,
    ) -> Result<StateEntry, StoreError> {
        check_state_key(key)?;
        check_json("value", &value)?;
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            lock_changeable_as::<Plan>(&mut tx, ctx, plan_id, "change", "FOR SHARE").await?;
            // The key's version (its row's changes plus its appended
            // items), with its row locked against concurrent sets.
            let mut current = Sql::new(
                "SELECT s.version + (SELECT count(*) FROM plan_state_items i \
                 WHERE i.tenant_id = s.tenant_id AND i.plan_id = s.plan_id AND i.key = s.key) AS v \
                 FROM plan_state s WHERE s.tenant_id = ",
            );
            current
                .bind(ctx.tenant_id().to_owned())
                .push(" AND s.plan_id = ")
                .bind(plan_id.to_owned())
                .push(" AND s.key = ")
                .bind(key.to_owned())
                .push(" FOR UPDATE OF s");
            let found = current
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?;
            let version: Option<u64> = found.as_ref().map(|row| count_col(row, "v")).transpose()?;
            expect.check(plan_id, key, version)?;
            let next = i64::try_from(version.unwrap_or(0).saturating_add(1)).unwrap_or(i64::MAX);
            let mut clear = Sql::new("DELETE FROM plan_state_items WHERE tenant_id = ");
            clear
                .bind(ctx.tenant_id().to_owned())
                .push(" AND plan_id = ")
                .bind(plan_id.to_owned())
                .push(" AND key = ")
                .bind(key.to_owned());
            clear
                .build()?
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            let mut write = Sql::new(
                "INSERT INTO plan_state AS s (tenant_id, plan_id, key, value, version, updated_at) VALUES (",
            );
            write
                .bind(ctx.tenant_id().to_owned())
                .push(", ")
                .bind(plan_id.to_owned())
                .push(", ")
                .bind(key.to_owned())
                .push(", ")
                .bind(value)
                .push("::jsonb, ")
                .bind(next)
                .push(", now()) ON CONFLICT (tenant_id, plan_id, key) ")
                // A concurrent creator of the same new key won: `Absent` no longer holds.
                .push(if expect == Expect::Absent {
                    "DO NOTHING"
                } else {
                    "DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version, \
                     updated_at = EXCLUDED.updated_at"
                })
                .push(&format!(" RETURNING {STATE_COLS}"));
            let Some(row) = write
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?
            else {
                return Err(StoreError::conflict(format!(
                    "plan `{plan_id}` key `{key}`: expected Absent, found an entry"
                )));
            };
            let entry = decode_state(&row)?;
            tx.commit().await.map_err(store_error)?;
            Ok(entry)
        }
        .instrument(span("plan_state", "set", ctx))
        .await
    }

    async fn get_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<Option<StateEntry>, StoreError> {
        let mut entries = crate::contexts::read_state(&self.pool, ctx, plan_id, Some(key))
            .instrument(span("plan_state", "get", ctx))
            .await?;
        Ok(entries.pop())
    }

    async fn list_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Vec<StateEntry>, StoreError> {
        crate::contexts::read_state(&self.pool, ctx, plan_id, None)
            .instrument(span("plan_state", "list", ctx))
            .await
    }

    async fn append_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        item: Value,
    ) -> Result<(), StoreError> {
        check_state_key(key)?;
        check_json("item", &item)?;
        // One statement, no lock on the key's row: the item is a row of its
        // own (the key's row is created as `[]` by its first append).
        let mut sql =
            Sql::one_trip("WITH p AS (SELECT f.tenant_id, f.id FROM plans f WHERE f.tenant_id = ");
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.id = ")
            .bind(plan_id.to_owned())
            .push(" AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Write);
        sql.push(
            "), r AS (INSERT INTO plan_state (tenant_id, plan_id, key, value, version, updated_at) \
             SELECT p.tenant_id, p.id, ",
        )
        .bind(key.to_owned())
        .push(
            ", '[]'::jsonb, 0, now() FROM p ON CONFLICT (tenant_id, plan_id, key) DO NOTHING) \
             INSERT INTO plan_state_items (tenant_id, plan_id, key, item) SELECT p.tenant_id, p.id, ",
        )
        .bind(key.to_owned())
        .push(", ")
        .bind(item)
        .push(
            "::jsonb FROM p WHERE NOT EXISTS (SELECT 1 FROM plan_state s WHERE \
             s.tenant_id = p.tenant_id AND s.plan_id = p.id AND s.key = ",
        )
        .bind(key.to_owned())
        .push(" AND jsonb_typeof(s.value) <> 'array') RETURNING seq");
        // One round trip (the append is what concurrent workers repeat).
        async {
            if !one_trip(&self.pool, ctx, sql).await?.is_empty() {
                return Ok(());
            }
            let not_array = StoreError::invalid("key", format!("`{key}` does not hold an array"));
            Err(self.explain_state(ctx, plan_id, not_array).await)
        }
        .instrument(span("plan_state", "append", ctx))
        .await
    }

    async fn increment_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        by: i64,
    ) -> Result<StateEntry, StoreError> {
        check_state_key(key)?;
        let mut sql = Self::upsert_state(ctx, plan_id, key, |sql| {
            sql.push("to_jsonb(")
                .bind(by)
                .push("::bigint), 1, now() FROM plans f");
        });
        // An integral JSON number within bigint is incremented; anything
        // else matches nothing (explained below), and an overflow is a
        // numeric-range error (InvalidInput).
        sql.push(&format!(
            " ON CONFLICT (tenant_id, plan_id, key) DO UPDATE SET \
             value = to_jsonb((s.value #>> '{{}}')::bigint + (EXCLUDED.value #>> '{{}}')::bigint), \
             version = s.version + 1, updated_at = now() \
             WHERE jsonb_typeof(s.value) = 'number' AND (s.value #>> '{{}}') ~ '^-?[0-9]+$' \
             AND (s.value #>> '{{}}')::numeric BETWEEN -9223372036854775808 AND 9223372036854775807 \
             RETURNING {STATE_COLS}"
        ));
        let key_owned = key.to_owned();
        let result = self
            .write_state(ctx, plan_id, sql, move || {
                StoreError::invalid("key", format!("`{key_owned}` does not hold an integer"))
            })
            .instrument(span("plan_state", "increment", ctx))
            .await;
        match result {
            Err(StoreError::InvalidInput { field, reason }) if field == "record" => {
                Err(StoreError::invalid(
                    "by",
                    format!("the sum overflows a 64-bit integer ({reason})"),
                ))
            }
            other => other,
        }
    }

    async fn delete_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<bool, StoreError> {
        crate::contexts::delete_state(&self.pool, ctx, plan_id, Some(key))
            .instrument(span("plan_state", "delete", ctx))
            .await
            .map(|n| n > 0)
    }

    async fn clear_state(&self, ctx: &CallerContext, plan_id: &str) -> Result<u64, StoreError> {
        crate::contexts::delete_state(&self.pool, ctx, plan_id, None)
            .instrument(span("plan_state", "clear", ctx))
            .await
    }
}
