//! Plan state ([`PlanStateStore`]) of the Postgres working store: a plan's
//! keys with versions, compare-and-set, and appends and increments that are
//! one statement each (no lost update).

use async_trait::async_trait;
use openvibe_protocols::{
    CallerContext, Change, Expect, Plan, PlanStateStore, StateEntry, StoreError, check_json,
    check_state_key,
};
use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::error::store_error;
use crate::records;
use crate::records::end_read;
use crate::rows::{col, count_col};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{begin, one_trip};
use crate::working::{PgWorkingStore, lock_changeable, lock_changeable_as};

const STATE_COLS: &str = "plan_id, key, value, version, updated_at";

pub(crate) fn decode_state(row: &PgRow) -> Result<StateEntry, StoreError> {
    Ok(StateEntry {
        plan_id: col(row, "plan_id")?,
        key: col(row, "key")?,
        value: col(row, "value")?,
        version: count_col(row, "version")?,
        updated_at: col(row, "updated_at")?,
    })
}

impl PgWorkingStore {
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

/// The state of a readable plan (one key, or all by key); `NotFound` when
/// the plan is not readable. A key's value is its row's followed by its
/// appended items; its version counts both.
pub(crate) async fn read_state(
    pool: &PgPool,
    ctx: &CallerContext,
    plan_id: &str,
    key: Option<&str>,
) -> Result<Vec<StateEntry>, StoreError> {
    let mut sql = Sql::new(
        "SELECT f.id AS plan, s.plan_id, s.key, \
         CASE WHEN i.n > 0 THEN s.value || i.items ELSE s.value END AS value, \
         s.version + coalesce(i.n, 0) AS version, \
         greatest(s.updated_at, i.last) AS updated_at \
         FROM plans f LEFT JOIN plan_state s ON s.tenant_id = f.tenant_id AND s.plan_id = f.id",
    );
    if let Some(key) = key {
        sql.push(" AND s.key = ").bind(key.to_owned());
    }
    sql.push(
        " LEFT JOIN LATERAL (SELECT count(*) AS n, jsonb_agg(it.item ORDER BY it.seq) AS items, \
         max(it.created_at) AS last FROM plan_state_items it WHERE it.tenant_id = s.tenant_id \
         AND it.plan_id = s.plan_id AND it.key = s.key) i ON true WHERE f.tenant_id = ",
    )
    .bind(ctx.tenant_id().to_owned())
    .push(" AND f.id = ")
    .bind(plan_id.to_owned())
    .push(" AND ");
    push_readable(&mut sql, ctx, "f.", None);
    sql.push(" ORDER BY s.key");
    let mut tx = begin(pool, ctx).await?;
    let rows = sql
        .build()?
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
    end_read(tx);
    if rows.is_empty() {
        return Err(records::not_found("plan", plan_id));
    }
    let mut entries = Vec::with_capacity(rows.len());
    for row in &rows {
        let key: Option<String> = col(row, "key")?;
        if key.is_some() {
            entries.push(decode_state(row)?);
        }
    }
    Ok(entries)
}

/// Delete one key or every key (with their appended items) of a plan the
/// caller may change; returns how many keys went.
pub(crate) async fn delete_state(
    pool: &PgPool,
    ctx: &CallerContext,
    plan_id: &str,
    key: Option<&str>,
) -> Result<u64, StoreError> {
    let mut tx = begin(pool, ctx).await?;
    lock_changeable::<Plan>(&mut tx, ctx, plan_id, "change").await?;
    let mut deleted = 0;
    for table in ["plan_state_items", "plan_state"] {
        let mut sql = Sql::new(&format!("DELETE FROM {table} WHERE tenant_id = "));
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND plan_id = ")
            .bind(plan_id.to_owned());
        if let Some(key) = key {
            sql.push(" AND key = ").bind(key.to_owned());
        }
        let done = sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
        deleted = done.rows_affected();
    }
    tx.commit().await.map_err(store_error)?;
    Ok(deleted)
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
        let mut entries = read_state(&self.pool, ctx, plan_id, Some(key))
            .instrument(span("plan_state", "get", ctx))
            .await?;
        Ok(entries.pop())
    }

    async fn list_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Vec<StateEntry>, StoreError> {
        read_state(&self.pool, ctx, plan_id, None)
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
            let not_array = StoreError::conflict(format!("key `{key}` does not hold an array"));
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
                StoreError::conflict(format!("key `{key_owned}` does not hold an integer"))
            })
            .instrument(span("plan_state", "increment", ctx))
            .await;
        match result {
            Err(StoreError::InvalidInput { field, reason }) if field == "record" => Err(
                StoreError::conflict(format!("by: the sum overflows a 64-bit integer ({reason})")),
            ),
            other => other,
        }
    }

    async fn delete_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<bool, StoreError> {
        delete_state(&self.pool, ctx, plan_id, Some(key))
            .instrument(span("plan_state", "delete", ctx))
            .await
            .map(|n| n > 0)
    }

    async fn clear_state(&self, ctx: &CallerContext, plan_id: &str) -> Result<u64, StoreError> {
        delete_state(&self.pool, ctx, plan_id, None)
            .instrument(span("plan_state", "clear", ctx))
            .await
    }
}
