//! [`EpisodicStore`] on PostgreSQL, with a batched insert.

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Episode, StoreError, content_hash, table_of, validate_episode,
};
use sqlx::postgres::PgRow;

use crate::batch::{self, Batched};
use crate::identity::{new_id, push_governed};
use crate::query::{BY_TIME, Ordering};
use crate::record_store::{PgRecord, PgRecords};
use crate::records::{Mode, Record};
use crate::rows::decode_meta;
use crate::rows::{col, count_col, to_i64};
use crate::sql::Sql;
use crate::text::joined_terms;
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
        crate::batch::store_batch(self, ctx, episodes).await
    }
}

/// A batch's episode columns ([`Batched`]).
#[derive(Default)]
pub(crate) struct EpisodeColumns {
    agents: Vec<String>,
    operators: Vec<String>,
    nodes: Vec<String>,
    times: Vec<DateTime<Utc>>,
    actions: Vec<String>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    outcomes: Vec<String>,
    durations: Vec<i64>,
    tokens_in: Vec<i64>,
    tokens_out: Vec<i64>,
    importances: Vec<f64>,
    external_ids: Vec<Option<String>>,
    hashes: Vec<String>,
    searches: Vec<String>,
}

impl Batched for Episode {
    type Columns = EpisodeColumns;
    const SELECT: &'static str = "u.agent_id, u.operator_id, u.node_name, u.ts, u.action, \
         u.input_summary, u.output_summary, u.outcome::jsonb, u.duration_ms, u.tokens_in, \
         u.tokens_out, u.importance, u.external_id, u.content_hash, \
         array_to_tsvector(string_to_array(u.search, ' '))";
    const NAMES: &'static str = "agent_id, operator_id, node_name, ts, action, input_summary, \
         output_summary, outcome, duration_ms, tokens_in, tokens_out, importance, external_id, \
         content_hash, search";

    fn hash(p: &Prepared) -> &str {
        &p.hash
    }

    fn push(c: &mut EpisodeColumns, p: Prepared) -> batch::Governed {
        let e = p.episode;
        c.agents.push(e.agent_id);
        c.operators.push(e.operator_id);
        c.nodes.push(e.node_name);
        c.times.push(e.timestamp);
        c.actions.push(e.action);
        c.inputs.push(e.input_summary);
        c.outputs.push(e.output_summary);
        c.outcomes.push(e.outcome.to_string());
        c.durations.push(p.counts[0]);
        c.tokens_in.push(p.counts[1]);
        c.tokens_out.push(p.counts[2]);
        c.importances.push(e.importance);
        c.external_ids.push(e.external_id);
        c.hashes.push(p.hash);
        c.searches.push(joined_terms(&p.terms));
        batch::Governed {
            id: e.id,
            meta: e.meta,
            domain: e.domain,
            entity: e.entity,
            tags: e.tags,
        }
    }

    fn bind(c: EpisodeColumns, sql: &mut Sql) {
        sql.bind(c.agents)
            .push("::text[], ")
            .bind(c.operators)
            .push("::text[], ")
            .bind(c.nodes)
            .push("::text[], ")
            .bind(c.times)
            .push("::timestamptz[], ")
            .bind(c.actions)
            .push("::text[], ")
            .bind(c.inputs)
            .push("::text[], ")
            .bind(c.outputs)
            .push("::text[], ")
            .bind(c.outcomes)
            .push("::text[], ")
            .bind(c.durations)
            .push("::int8[], ")
            .bind(c.tokens_in)
            .push("::int8[], ")
            .bind(c.tokens_out)
            .push("::int8[], ")
            .bind(c.importances)
            .push("::float8[], ")
            .bind(c.external_ids)
            .push("::text[], ")
            .bind(c.hashes)
            .push("::text[], ")
            .bind(c.searches)
            .push("::text[]");
    }
}
