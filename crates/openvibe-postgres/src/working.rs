//! [`WorkingStore`] on PostgreSQL: [`PgWorkingStore`] with its sessions and
//! plans here, and what its plans' contexts and state share (plan row
//! locks and lookups); task and plan contexts are in `contexts.rs`, plan
//! state in `plan_state.rs`.
//!
//! Access is in the SQL predicate as for every record (a plan's state and
//! context through the plan's row). Atomic append and increment, and the
//! versioned write, are one `INSERT … ON CONFLICT DO UPDATE` or `UPDATE`
//! each; when a write matches nothing, a refusal query says why.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Change, NewPlan, NewSession, Page, Plan, PlanDeleted, PlanQuery, PlanStatus,
    PlanStore, PlanUpdate, Session, SessionDeleted, SessionQuery, SessionStore, StoreError,
    store_time, table_of, validate_record_id,
};
use openvibe_protocols::{check_label, check_opt_label, json_object};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Transaction};
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::error::store_error;
use crate::identity::{delete_row, push_new_identity};
use crate::records::{self, Mode, Record, fetch_optional, fetch_page, not_found};
use crate::rows::decode_meta;
use crate::rows::{col, columns, count_col};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::begin;
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

impl Record for Session {
    const KIND: &'static str = "session";
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
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
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
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
