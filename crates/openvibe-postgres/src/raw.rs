//! [`RawLogStore`] on PostgreSQL: the L1 raw log, appended in one
//! `INSERT … SELECT FROM unnest(…)` per batch.

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, Page, RawCall, RawCallQuery, RawLogStore,
    RawRetention, StoreError, store_time, table_of,
};
use openvibe_protocols::{at_index, validate_raw_call};
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::{push_changeable, push_readable_in};
use crate::audit::AuditWriter;
use crate::error::{corrupt, store_error};
use crate::identity::GovernedColumns;
use crate::query::{BY_TIME, select};
use crate::records::{self, Record};
use crate::rows::decode_meta;
use crate::rows::{col, count_col, to_i64};
use crate::span::span;
use crate::sql::Sql;
use crate::text::joined_terms;
use crate::tx::begin;
use openvibe_protocols::check_caller;

const COLS: &[&str] = &[
    "tenant_id",
    "id",
    "namespace",
    "project_id",
    "owner",
    "classification",
    "domain",
    "entity",
    "tags",
    "source",
    "created_at",
    "updated_at",
    "expires_at",
    "agent_id",
    "operator_id",
    "node_name",
    "episode_id",
    "\"timestamp\"",
    "model",
    "request",
    "response",
    "error",
    "tokens_in",
    "tokens_out",
    "latency_us",
    "stop_reason",
];

impl Record for RawCall {
    const KIND: &'static str = "raw_call";
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = false;
    // Raw calls are only appended (`RawLogStore::append`), never written
    // through the generic upsert.
    const FIXED: &'static str = "";
    const MUTABLE: &'static str = "";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        fn parse<T: serde::de::DeserializeOwned>(
            id: &str,
            field: &str,
            value: serde_json::Value,
        ) -> Result<T, StoreError> {
            serde_json::from_value(value)
                .map_err(|e| corrupt("raw_call", id, format!("its {field} does not decode: {e}")))
        }
        let id: String = col(row, "id")?;
        let json = |name: &str| -> Result<Option<serde_json::Value>, StoreError> { col(row, name) };
        let request = match json("request")? {
            Some(v) => parse(&id, "request", v)?,
            None => return Err(corrupt("raw_call", &id, "it has no request")),
        };
        let response = json("response")?
            .map(|v| parse(&id, "response", v))
            .transpose()?;
        let stop_reason = json("stop_reason")?
            .map(|v| parse(&id, "stop_reason", v))
            .transpose()?;
        Ok(RawCall {
            meta: decode_meta("raw_call", &id, row)?,
            agent_id: col(row, "agent_id")?,
            operator_id: col(row, "operator_id")?,
            node_name: col(row, "node_name")?,
            episode_id: col(row, "episode_id")?,
            entity: col(row, "entity")?,
            domain: col(row, "domain")?,
            timestamp: col(row, "timestamp")?,
            model: col(row, "model")?,
            request,
            response,
            error: col(row, "error")?,
            tokens_in: count_col(row, "tokens_in")?,
            tokens_out: count_col(row, "tokens_out")?,
            latency_us: count_col(row, "latency_us")?,
            stop_reason,
            id,
        })
    }
}

/// A new raw call id, as the in-memory store makes them.
fn new_raw_id() -> String {
    format!("raw_{}", uuid::Uuid::new_v4().simple())
}

/// The error of a value that does not serialise as JSON.
fn not_json(field: &'static str) -> impl Fn(serde_json::Error) -> StoreError {
    move |e| StoreError::invalid(field, e.to_string())
}

/// [`RawLogStore`] over a PostgreSQL pool.
#[derive(Debug, Clone)]
pub struct PgRawLog {
    pool: PgPool,
    audit: AuditWriter,
}

crate::audit::audited_store!(PgRawLog);

impl PgRawLog {
    async fn append_unaudited(
        &self,
        ctx: &CallerContext,
        mut calls: Vec<RawCall>,
    ) -> Result<Vec<RawCall>, StoreError> {
        if calls.is_empty() {
            return Ok(calls);
        }
        check_caller(ctx)?;
        openvibe_protocols::check_batch(calls.len())?;
        let now = store_time();
        let n = calls.len();
        let mut governed = GovernedColumns::with_capacity(n);
        let mut agents = Vec::with_capacity(n);
        let mut operators = Vec::with_capacity(n);
        let mut nodes = Vec::with_capacity(n);
        let mut episodes = Vec::with_capacity(n);
        let mut times = Vec::with_capacity(n);
        let mut models = Vec::with_capacity(n);
        let mut requests = Vec::with_capacity(n);
        let mut responses = Vec::with_capacity(n);
        let mut errors = Vec::with_capacity(n);
        let mut tokens_in = Vec::with_capacity(n);
        let mut tokens_out = Vec::with_capacity(n);
        let mut latencies = Vec::with_capacity(n);
        let mut stops = Vec::with_capacity(n);
        let mut searches = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::with_capacity(n);
        for (i, call) in calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = new_raw_id();
            }
            ctx.stamp(&mut call.meta);
            let terms = validate_raw_call(call).map_err(|e| at_index(i, e))?;
            if !seen.insert(call.id.clone()) {
                return Err(StoreError::conflict(format!(
                    "raw_call {} appears twice in one batch",
                    call.id
                )));
            }
            // To the microsecond, as the column keeps it.
            call.timestamp =
                chrono::DateTime::from_timestamp_micros(call.timestamp.timestamp_micros())
                    .unwrap_or(call.timestamp);
            call.meta.created_at = call.timestamp;
            call.request.origin = None;
            let placement = ctx
                .placement(&call.meta.namespace, &format!("store raw_call {}", call.id))
                .map_err(|e| at_index(i, e))?;
            governed
                .push(
                    ctx,
                    "raw_call",
                    call.id.clone(),
                    placement.clone(),
                    call.meta.clone(),
                    call.domain.clone(),
                    call.entity.clone(),
                    Vec::new(),
                )
                .map_err(|e| at_index(i, e))?;
            let meta = &mut call.meta;
            meta.tenant_id = ctx.tenant_id().to_owned();
            meta.owner = ctx.owner_key();
            meta.namespace = placement.namespace;
            meta.project_id = placement.project_id;
            meta.expires_at = governed.expires().last().copied().flatten();
            meta.updated_at = now;
            agents.push(call.agent_id.clone());
            operators.push(call.operator_id.clone());
            nodes.push(call.node_name.clone());
            episodes.push(call.episode_id.clone());
            times.push(call.timestamp);
            models.push(call.model.clone());
            requests.push(serde_json::to_string(&call.request).map_err(not_json("request"))?);
            responses.push(
                call.response
                    .as_ref()
                    .map(|r| serde_json::to_string(r).map_err(not_json("response")))
                    .transpose()?,
            );
            errors.push(call.error.clone());
            tokens_in.push(to_i64("tokens_in", call.tokens_in)?);
            tokens_out.push(to_i64("tokens_out", call.tokens_out)?);
            latencies.push(to_i64("latency_us", call.latency_us)?);
            stops.push(
                call.stop_reason
                    .as_ref()
                    .map(|s| serde_json::to_string(s).map_err(not_json("stop_reason")))
                    .transpose()?,
            );
            searches.push(joined_terms(&terms));
        }
        let mut sql = Sql::new(
            "INSERT INTO raw_calls (tenant_id, id, namespace, project_id, owner, classification, \
             domain, entity, tags, source, created_at, updated_at, expires_at, agent_id, \
             operator_id, node_name, episode_id, \"timestamp\", model, request, response, error, \
             tokens_in, tokens_out, latency_us, stop_reason, search) SELECT ",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(", u.id, u.namespace, u.project_id, ")
            .bind(ctx.owner_key())
            .push(
                ", u.classification, u.domain, u.entity, \
                 ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.source, u.created_at, ",
            )
            .bind(now)
            .push(
                ", u.expires_at, u.agent_id, u.operator_id, u.node_name, u.episode_id, u.ts, \
                 u.model, u.request::jsonb, u.response::jsonb, u.error, u.tokens_in, u.tokens_out, \
                 u.latency_us, u.stop_reason::jsonb, array_to_tsvector(string_to_array(u.search, ' ')) \
                 FROM unnest(",
            );
        governed.bind(&mut sql);
        sql.bind(agents)
            .push("::text[], ")
            .bind(operators)
            .push("::text[], ")
            .bind(nodes)
            .push("::text[], ")
            .bind(episodes)
            .push("::text[], ")
            .bind(times)
            .push("::timestamptz[], ")
            .bind(models)
            .push("::text[], ")
            .bind(requests)
            .push("::text[], ")
            .bind(responses)
            .push("::text[], ")
            .bind(errors)
            .push("::text[], ")
            .bind(tokens_in)
            .push("::int8[], ")
            .bind(tokens_out)
            .push("::int8[], ")
            .bind(latencies)
            .push("::int8[], ")
            .bind(stops)
            .push("::text[], ")
            .bind(searches)
            .push(
                "::text[]) AS u(id, namespace, project_id, classification, domain, entity, tags, \
                 source, created_at, expires_at, agent_id, operator_id, node_name, episode_id, ts, \
                 model, request, response, error, tokens_in, tokens_out, latency_us, stop_reason, \
                 search)",
            );
        let mut tx = begin(&self.pool, ctx).await?;
        sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(calls)
    }

    async fn prune_unaudited(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        retention: &RawRetention,
    ) -> Result<u64, StoreError> {
        if retention.keeps_all() {
            return Ok(0);
        }
        let keep = retention
            .max_calls
            .map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let cutoff = retention.cutoff(chrono::Utc::now());
        // Rank the agent's calls the caller sees newest first (as a query
        // would), then delete those beyond `keep` or older than the cutoff
        // that the caller may delete.
        let mut sql = Sql::new("DELETE FROM raw_calls f WHERE f.tenant_id = ");
        sql.bind(ctx.tenant_id().to_owned())
            .push(
                " AND f.id IN (SELECT r.id FROM (SELECT r.id, r.\"timestamp\", \
                 row_number() OVER (ORDER BY r.\"timestamp\" DESC, r.id) AS rank \
                 FROM raw_calls r WHERE r.tenant_id = ",
            )
            .bind(ctx.tenant_id().to_owned())
            .push(" AND r.agent_id = ")
            .bind(agent_id.to_owned())
            .push(" AND ");
        push_readable_in(&mut sql, ctx, "r.", None, &ctx.search_scope(&[]));
        sql.push(") r WHERE r.rank > ")
            .bind(keep)
            .push(" OR r.\"timestamp\" < ")
            .bind(cutoff)
            .push(") AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Delete);
        crate::tx::execute_confined(&self.pool, ctx, sql).await
    }
}

#[async_trait]
impl RawLogStore for PgRawLog {
    async fn append(
        &self,
        ctx: &CallerContext,
        calls: Vec<RawCall>,
    ) -> Result<Vec<RawCall>, StoreError> {
        let first = calls.first().map(|c| c.id.clone()).unwrap_or_default();
        let result = self
            .append_unaudited(ctx, calls)
            .instrument(span("raw_call", "append", ctx))
            .await;
        self.audit
            .refusal(ctx, AuditOp::Insert, "raw_call", &first, result)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<RawCall>, StoreError> {
        records::get(&self.pool, ctx, id).await
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        q: &RawCallQuery,
    ) -> Result<Page<RawCall>, StoreError> {
        let filter = q.filter()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, "raw_call", q, &q.namespaces, q.limit));
        let Some(sql) = select::<RawCall>(ctx, &filter, &BY_TIME) else {
            return Ok(Page::of(Vec::new(), q.limit));
        };
        let found = records::read(&self.pool, ctx, sql, false)
            .instrument(span("raw_call", "query", ctx))
            .await?;
        Ok(Page::of(found, q.limit))
    }

    async fn prune(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        retention: &RawRetention,
    ) -> Result<u64, StoreError> {
        let result = self
            .prune_unaudited(ctx, agent_id, retention)
            .instrument(span("raw_call", "prune", ctx))
            .await;
        self.audit
            .refusal(ctx, AuditOp::Delete, "raw_call", agent_id, result)
    }
}
