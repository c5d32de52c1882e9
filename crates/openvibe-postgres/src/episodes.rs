//! [`EpisodicStore`] on PostgreSQL, with a batched insert.

use openvibe_protocols::{
    CallerContext, Episode, StoreError, content_hash, table_of, validate_episode,
};
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::error::store_error;
use crate::identity::{GovernedColumns, new_id, push_governed};
use crate::query::{BY_TIME, Ordering};
use crate::record_store::{PgRecord, PgRecords};
use crate::records::{Mode, Record};
use crate::rows::decode_meta;
use crate::rows::{col, count_col, to_i64};
use crate::span::span;
use crate::sql::Sql;
use crate::text::joined_terms;
use crate::tx::{Run, write_replacing_expired};
use openvibe_protocols::{at_index, check_caller};

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
    "\"timestamp\"",
    "action",
    "input_summary",
    "output_summary",
    "outcome",
    "duration_ms",
    "tokens_in",
    "tokens_out",
    "importance",
    "external_id",
    "content_hash",
];

const FIXED: &str = "tenant_id, id, namespace, project_id, owner, created_at";
const MUTABLE: &str = "classification, domain, entity, tags, source, updated_at, \
     agent_id, operator_id, node_name, \"timestamp\", action, input_summary, output_summary, \
     outcome, duration_ms, tokens_in, tokens_out, importance, external_id, content_hash, search";

impl Record for Episode {
    const KIND: &'static str = "episode";
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = FIXED;
    const MUTABLE: &'static str = MUTABLE;

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        Ok(Episode {
            meta: decode_meta("episode", &id, row)?,
            agent_id: col(row, "agent_id")?,
            operator_id: col(row, "operator_id")?,
            node_name: col(row, "node_name")?,
            timestamp: col(row, "timestamp")?,
            action: col(row, "action")?,
            input_summary: col(row, "input_summary")?,
            output_summary: col(row, "output_summary")?,
            outcome: col(row, "outcome")?,
            duration_ms: count_col(row, "duration_ms")?,
            tokens_in: count_col(row, "tokens_in")?,
            tokens_out: count_col(row, "tokens_out")?,
            entity: col(row, "entity")?,
            domain: col(row, "domain")?,
            tags: col(row, "tags")?,
            importance: col(row, "importance")?,
            external_id: col(row, "external_id")?,
            content_hash: col(row, "content_hash")?,
            id,
        })
    }
}

/// A record checked for writing, with what its statement binds besides it.
pub struct Prepared {
    episode: Episode,
    terms: Vec<String>,
    hash: String,
    counts: [i64; 3],
}

fn prepare(ctx: &CallerContext, mut episode: Episode) -> Result<Prepared, StoreError> {
    if episode.id.is_empty() {
        episode.id = new_id();
    }
    let terms = validate_episode(&episode)?;
    check_caller(ctx)?;
    let e = &episode;
    let counts = [
        to_i64("duration_ms", e.duration_ms)?,
        to_i64("tokens_in", e.tokens_in)?,
        to_i64("tokens_out", e.tokens_out)?,
    ];
    let text = e.searchable_text();
    let hash = content_hash(&text);
    Ok(Prepared {
        episode,
        terms,
        hash,
        counts,
    })
}

fn push_mutable(sql: &mut Sql, p: &Prepared) {
    let e = &p.episode;
    push_governed(sql, &e.meta, &e.domain, &e.entity, &e.tags);
    sql.bind(e.agent_id.clone())
        .push(", ")
        .bind(e.operator_id.clone())
        .push(", ")
        .bind(e.node_name.clone())
        .push(", ")
        .bind(e.timestamp)
        .push(", ")
        .bind(e.action.clone())
        .push(", ")
        .bind(e.input_summary.clone())
        .push(", ")
        .bind(e.output_summary.clone())
        .push(", ")
        .bind(e.outcome.clone())
        .push("::jsonb, ")
        .bind(p.counts[0])
        .push(", ")
        .bind(p.counts[1])
        .push(", ")
        .bind(p.counts[2])
        .push(", ")
        .bind(e.importance)
        .push(", ")
        .bind(e.external_id.clone())
        .push(", ")
        .bind(p.hash.clone())
        .push(", array_to_tsvector(")
        .bind(p.terms.clone())
        .push("::text[])");
}

impl PgRecord for Episode {
    const ORDER: Ordering = BY_TIME;
    type Prepared = Prepared;

    fn prepare(ctx: &CallerContext, record: Self, mode: Mode) -> Result<Prepared, StoreError> {
        let _ = mode; // episodes are only stored (upserted)
        prepare(ctx, record)
    }

    fn prepared(p: &Prepared) -> &Self {
        &p.episode
    }

    fn push_mutable(sql: &mut Sql, p: &Prepared) {
        push_mutable(sql, p);
    }
}

impl PgRecords<Episode> {
    /// Insert new episodes in one transaction (one statement): all or none.
    /// Owner, tenant and project come from `ctx`, empty ids are generated,
    /// and an id that already exists fails the whole batch with
    /// [`StoreError::Conflict`]. Returns how many were inserted. With an
    /// embedder ([`PgStores::with_embedder`](crate::PgStores::with_embedder))
    /// the batch is embedded in one call once committed, best effort as
    /// for a single write (a failure leaves the records waiting for
    /// `embed_pending`).
    pub async fn store_batch(
        &self,
        ctx: &CallerContext,
        episodes: Vec<Episode>,
    ) -> Result<u64, StoreError> {
        async {
            if episodes.is_empty() {
                return Ok(0);
            }
            openvibe_protocols::check_batch(episodes.len())?;
            let n = episodes.len();
            let mut governed = GovernedColumns::with_capacity(n);
            let mut agents = Vec::with_capacity(n);
            let mut operators = Vec::with_capacity(n);
            let mut nodes = Vec::with_capacity(n);
            let mut times = Vec::with_capacity(n);
            let mut actions = Vec::with_capacity(n);
            let mut inputs = Vec::with_capacity(n);
            let mut outputs = Vec::with_capacity(n);
            let mut outcomes = Vec::with_capacity(n);
            let mut durations = Vec::with_capacity(n);
            let mut tokens_in = Vec::with_capacity(n);
            let mut tokens_out = Vec::with_capacity(n);
            let mut importances = Vec::with_capacity(n);
            let mut external_ids = Vec::with_capacity(n);
            let mut hashes = Vec::with_capacity(n);
            let mut searches = Vec::with_capacity(n);
            let embeds = self.vectors.as_deref().is_some_and(crate::PgVectors::embeds);
            let mut written = Vec::new();
            for (i, mut episode) in episodes.into_iter().enumerate() {
                ctx.stamp(&mut episode.meta);
                let p = prepare(ctx, episode).map_err(|e| at_index(i, e))?;
                let e = p.episode;
                written.extend(crate::vectors::pending_if(embeds, "episode", &e.id, &p.hash, || {
                    e.searchable_text()
                }));
                let placement = ctx
                    .placement(&e.meta.namespace, &format!("store episode {}", e.id))
                    .map_err(|e| at_index(i, e))?;
                governed
                    .push(ctx, "episode", e.id, placement, e.meta, e.domain, e.entity, e.tags)
                    .map_err(|err| at_index(i, err))?;
                agents.push(e.agent_id);
                operators.push(e.operator_id);
                nodes.push(e.node_name);
                times.push(e.timestamp);
                actions.push(e.action);
                inputs.push(e.input_summary);
                outputs.push(e.output_summary);
                outcomes.push(e.outcome.to_string());
                durations.push(p.counts[0]);
                tokens_in.push(p.counts[1]);
                tokens_out.push(p.counts[2]);
                importances.push(e.importance);
                external_ids.push(e.external_id);
                hashes.push(p.hash);
                searches.push(joined_terms(&p.terms));
            }
            let mut sql = Sql::new(&format!(
                "INSERT INTO episodes ({FIXED}, {MUTABLE}, expires_at) SELECT "
            ));
            sql.bind(ctx.tenant_id().to_owned())
                .push(", u.id, u.namespace, u.project_id, ")
                .bind(ctx.owner_key())
                .push(
                    ", u.created_at, u.classification, u.domain, u.entity, \
                     ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.source, now(), \
                     u.agent_id, u.operator_id, u.node_name, u.ts, u.action, u.input_summary, \
                     u.output_summary, u.outcome::jsonb, u.duration_ms, u.tokens_in, u.tokens_out, \
                     u.importance, u.external_id, u.content_hash, \
                     array_to_tsvector(string_to_array(u.search, ' ')), u.expires_at FROM unnest(",
                );
            let ids = governed.ids().to_vec();
            governed.bind(&mut sql);
            sql.bind(agents)
                .push("::text[], ")
                .bind(operators)
                .push("::text[], ")
                .bind(nodes)
                .push("::text[], ")
                .bind(times)
                .push("::timestamptz[], ")
                .bind(actions)
                .push("::text[], ")
                .bind(inputs)
                .push("::text[], ")
                .bind(outputs)
                .push("::text[], ")
                .bind(outcomes)
                .push("::text[], ")
                .bind(durations)
                .push("::int8[], ")
                .bind(tokens_in)
                .push("::int8[], ")
                .bind(tokens_out)
                .push("::int8[], ")
                .bind(importances)
                .push("::float8[], ")
                .bind(external_ids)
                .push("::text[], ")
                .bind(hashes)
                .push("::text[], ")
                .bind(searches)
                .push(
                    "::text[]) AS u(id, namespace, project_id, classification, domain, entity, tags, \
                     source, created_at, expires_at, agent_id, operator_id, node_name, ts, action, input_summary, \
                     output_summary, outcome, duration_ms, tokens_in, tokens_out, importance, \
                     external_id, content_hash, search)",
                );
            let (tx, done) =
                write_replacing_expired(&self.pool, ctx, "episodes", &ids, sql, Run::Execute)
                    .await?;
            let done = done.affected()?;
            tx.commit().await.map_err(store_error)?;
            crate::vectors::embed_texts_written(self.vectors.as_deref(), ctx, "episode", written).await;
            Ok(done)
        }
        .instrument(span("episode", "store_batch", ctx))
        .await
    }
}
