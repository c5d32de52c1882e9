//! Task contexts and plan contexts ([`ContextStore`]) of the Postgres
//! working store.
//!
//! Sub-task and correlation ids live in side tables keyed by the id (a
//! b-tree primary key: one owner per id, an index lookup to find it).

use async_trait::async_trait;
use openvibe_protocols::{
    CallerContext, Change, ContextStore, Plan, PlanContext, Session, StoreError, TaskContext,
    store_time, table_of, validate_record_id,
};
use openvibe_protocols::{check_json, check_opt_label, normalize_ids};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Transaction};
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::error::store_error;
use crate::identity::push_new_identity;
use crate::records::{self, Mode, Record, end_read, fetch_optional};
use crate::rows::decode_meta;
use crate::rows::{col, columns, count_col};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::begin;
use crate::working::{PgWorkingStore, lock_changeable, require_readable};
use openvibe_protocols::check_caller;

const TASK_COLS: &[&str] = &[
    "tenant_id",
    "id",
    "namespace",
    "project_id",
    "owner",
    "classification",
    "source",
    "created_at",
    "updated_at",
    "plan_id",
    "context",
    "sub_task_ids",
];

impl Record for TaskContext {
    const KIND: &'static str = "task context";
    const TABLE: &'static str = table_of("task_context");
    const COLS: &'static [&'static str] = TASK_COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = "tenant_id, id, project_id, owner, created_at";
    const MUTABLE: &'static str = "plan_id, context, sub_task_ids, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        Ok(TaskContext {
            meta: decode_meta("task context", &id, row)?,
            plan_id: col(row, "plan_id")?,
            context: col(row, "context")?,
            sub_task_ids: col(row, "sub_task_ids")?,
            task_id: id,
        })
    }
}

fn decode_plan_context(row: &PgRow) -> Result<PlanContext, StoreError> {
    Ok(PlanContext {
        plan_id: col(row, "plan_id")?,
        session_id: col(row, "session_id")?,
        context: col(row, "context")?,
        correlation_ids: col(row, "correlation_ids")?,
        updated_at: col(row, "updated_at")?,
        version: count_col(row, "version")?,
        expected_version: None,
    })
}

/// Replace the ids `owner_id` owns in `table` (`(tenant_id, <id>, <owner>)`)
/// by `ids`; an id another owner holds is a unique violation (`Conflict`).
async fn replace_ids(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    table: &str,
    id_col: &str,
    owner_col: &str,
    owner_id: &str,
    ids: &[String],
) -> Result<(), StoreError> {
    let mut delete = Sql::new(&format!("DELETE FROM {table} WHERE tenant_id = "));
    delete
        .bind(ctx.tenant_id().to_owned())
        .push(&format!(" AND {owner_col} = "))
        .bind(owner_id.to_owned());
    delete
        .build()?
        .execute(&mut **tx)
        .await
        .map_err(store_error)?;
    if ids.is_empty() {
        return Ok(());
    }
    let mut insert = Sql::new(&format!(
        "INSERT INTO {table} (tenant_id, {id_col}, {owner_col}) SELECT "
    ));
    insert
        .bind(ctx.tenant_id().to_owned())
        .push(", x, ")
        .bind(owner_id.to_owned())
        .push(" FROM unnest(")
        .bind(ids.to_vec())
        .push("::text[]) AS x");
    insert
        .build()?
        .execute(&mut **tx)
        .await
        .map_err(|e| match store_error(e) {
            StoreError::Conflict { source, .. } => StoreError::Conflict {
                message: format!("an id of {ids:?} in {table} belongs to another record"),
                source,
            },
            other => other,
        })?;
    Ok(())
}

pub(crate) async fn store_task_context(
    pool: &PgPool,
    ctx: &CallerContext,
    mut task: TaskContext,
) -> Result<TaskContext, StoreError> {
    async {
        check_caller(ctx)?;
        validate_record_id(&task.task_id)?;
        check_opt_label("plan_id", task.plan_id.as_deref())?;
        normalize_ids("sub_task_ids", &mut task.sub_task_ids)?;
        check_json("context", &task.context)?;
        let now = store_time();
        let mut tx = begin(pool, ctx).await?;
        if let Some(plan) = &task.plan_id {
            require_readable::<Plan>(&mut tx, ctx, plan).await?;
        }
        let mut sql = Sql::new(
            "INSERT INTO task_contexts AS f (tenant_id, id, namespace, project_id, owner, \
             created_at, updated_at, plan_id, context, sub_task_ids) VALUES (",
        );
        let placement = ctx.placement("", &format!("store task context {}", task.task_id))?;
        push_new_identity(&mut sql, ctx, &placement, task.task_id.clone(), now);
        sql.bind(task.plan_id.clone())
            .push(", ")
            .bind(task.context.clone())
            .push(", ")
            .bind(task.sub_task_ids.clone())
            .push(
                "::text[]) ON CONFLICT (tenant_id, id) DO UPDATE SET plan_id = EXCLUDED.plan_id, \
                 context = EXCLUDED.context, sub_task_ids = EXCLUDED.sub_task_ids, \
                 updated_at = EXCLUDED.updated_at WHERE ",
            );
        push_changeable(&mut sql, ctx, "f.", Change::Write);
        sql.push(&format!(" RETURNING {}", columns(TASK_COLS, "f.")));
        let Some(stored) = fetch_optional::<TaskContext>(&mut tx, sql).await? else {
            return Err(records::refusal::<TaskContext>(
                &mut tx,
                ctx,
                &task.task_id,
                "store",
                Mode::Upsert,
                "",
            )
            .await);
        };
        replace_ids(
            &mut tx,
            ctx,
            "task_subtasks",
            "sub_task_id",
            "task_id",
            &stored.task_id,
            &stored.sub_task_ids,
        )
        .await?;
        tx.commit().await.map_err(store_error)?;
        Ok(stored)
    }
    .instrument(span("task_context", "store", ctx))
    .await
}

pub(crate) async fn get_task_by_subtask(
    pool: &PgPool,
    ctx: &CallerContext,
    sub_task_id: &str,
) -> Result<Option<TaskContext>, StoreError> {
    async {
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM task_subtasks s JOIN task_contexts f \
             ON f.tenant_id = s.tenant_id AND f.id = s.task_id WHERE s.tenant_id = ",
            columns(TASK_COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND s.sub_task_id = ")
            .bind(sub_task_id.to_owned())
            .push(" AND ");
        push_readable(&mut sql, ctx, "f.", None);
        let mut tx = begin(pool, ctx).await?;
        let found = fetch_optional::<TaskContext>(&mut tx, sql).await?;
        end_read(tx);
        Ok(found)
    }
    .instrument(span("task_context", "by_subtask", ctx))
    .await
}

pub(crate) async fn delete_task_context(
    pool: &PgPool,
    ctx: &CallerContext,
    task_id: &str,
) -> Result<bool, StoreError> {
    async {
        let mut sql = Sql::new("DELETE FROM task_contexts f WHERE f.tenant_id = ");
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.id = ")
            .bind(task_id.to_owned())
            .push(" AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Delete);
        let mut tx = begin(pool, ctx).await?;
        let done = sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
        if done.rows_affected() > 0 {
            tx.commit().await.map_err(store_error)?;
            return Ok(true);
        }
        // Nothing deleted: absent or unreadable is `false`; readable but
        // not the caller's is a refusal.
        match records::refusal::<TaskContext>(&mut tx, ctx, task_id, "delete", Mode::Update, "")
            .await
        {
            StoreError::NotFound { .. } => Ok(false),
            refused => Err(refused),
        }
    }
    .instrument(span("task_context", "delete", ctx))
    .await
}

pub(crate) async fn store_plan_context(
    pool: &PgPool,
    ctx: &CallerContext,
    mut context: PlanContext,
) -> Result<PlanContext, StoreError> {
    async {
        check_caller(ctx)?;
        check_opt_label("plan_id", Some(&context.plan_id))?;
        check_opt_label("session_id", context.session_id.as_deref())?;
        normalize_ids("correlation_ids", &mut context.correlation_ids)?;
        check_json("context", &context.context)?;
        let mut tx = begin(pool, ctx).await?;
        lock_changeable::<Plan>(&mut tx, ctx, &context.plan_id, "change").await?;
        if let Some(session) = &context.session_id {
            require_readable::<Session>(&mut tx, ctx, session).await?;
        }
        if context.expected_version.is_some() {
            // The plan's row is locked: no other save of its context runs.
            let mut current = Sql::new("SELECT version FROM plan_contexts WHERE tenant_id = ");
            current
                .bind(ctx.tenant_id().to_owned())
                .push(" AND plan_id = ")
                .bind(context.plan_id.clone());
            let row = current
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?;
            let version = match row {
                Some(row) => Some(count_col(&row, "version")?),
                None => None,
            };
            context.check_version(version)?;
        }
        let mut sql = Sql::new(
            "INSERT INTO plan_contexts (tenant_id, plan_id, session_id, context, correlation_ids, \
             updated_at, version) VALUES (",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(", ")
            .bind(context.plan_id.clone())
            .push(", ")
            .bind(context.session_id.clone())
            .push(", ")
            .bind(context.context.clone())
            .push(", ")
            .bind(context.correlation_ids.clone())
            .push("::text[], ")
            .bind(store_time())
            .push(
                ", 1) ON CONFLICT (tenant_id, plan_id) DO UPDATE SET session_id = EXCLUDED.session_id, \
                 context = EXCLUDED.context, correlation_ids = EXCLUDED.correlation_ids, \
                 updated_at = EXCLUDED.updated_at, version = plan_contexts.version + 1 \
                 RETURNING plan_id, session_id, context, correlation_ids, updated_at, version",
            );
        let row = sql
            .build()?
            .fetch_one(&mut *tx)
            .await
            .map_err(store_error)?;
        let stored = decode_plan_context(&row)?;
        replace_ids(
            &mut tx,
            ctx,
            "plan_correlations",
            "correlation_id",
            "plan_id",
            &stored.plan_id,
            &stored.correlation_ids,
        )
        .await?;
        tx.commit().await.map_err(store_error)?;
        Ok(stored)
    }
    .instrument(span("plan_context", "store", ctx))
    .await
}

/// The context of a readable plan, by plan id or by correlation id.
pub(crate) async fn get_plan_context(
    pool: &PgPool,
    ctx: &CallerContext,
    plan_id: Option<&str>,
    correlation_id: Option<&str>,
) -> Result<Option<PlanContext>, StoreError> {
    async {
        let mut sql = Sql::new(
            "SELECT c.plan_id, c.session_id, c.context, c.correlation_ids, c.updated_at, c.version \
             FROM plan_contexts c JOIN plans f ON f.tenant_id = c.tenant_id AND f.id = c.plan_id",
        );
        if correlation_id.is_some() {
            sql.push(
                " JOIN plan_correlations k ON k.tenant_id = c.tenant_id AND k.plan_id = c.plan_id",
            );
        }
        sql.push(" WHERE c.tenant_id = ")
            .bind(ctx.tenant_id().to_owned());
        if let Some(plan) = plan_id {
            sql.push(" AND c.plan_id = ").bind(plan.to_owned());
        }
        if let Some(correlation) = correlation_id {
            sql.push(" AND k.correlation_id = ")
                .bind(correlation.to_owned());
        }
        sql.push(" AND ");
        push_readable(&mut sql, ctx, "f.", None);
        let mut tx = begin(pool, ctx).await?;
        let row = sql
            .build()?
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        end_read(tx);
        row.as_ref().map(decode_plan_context).transpose()
    }
    .instrument(span("plan_context", "get", ctx))
    .await
}

#[async_trait]
impl ContextStore for PgWorkingStore {
    async fn store_task_context(
        &self,
        ctx: &CallerContext,
        task: TaskContext,
    ) -> Result<TaskContext, StoreError> {
        store_task_context(&self.pool, ctx, task).await
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
        get_task_by_subtask(&self.pool, ctx, sub_task_id).await
    }

    async fn delete_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<bool, StoreError> {
        delete_task_context(&self.pool, ctx, task_id).await
    }

    async fn store_plan_context(
        &self,
        ctx: &CallerContext,
        context: PlanContext,
    ) -> Result<PlanContext, StoreError> {
        store_plan_context(&self.pool, ctx, context).await
    }

    async fn get_plan_context(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        get_plan_context(&self.pool, ctx, Some(plan_id), None).await
    }

    async fn get_plan_by_correlation(
        &self,
        ctx: &CallerContext,
        correlation_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        get_plan_context(&self.pool, ctx, None, Some(correlation_id)).await
    }
}
