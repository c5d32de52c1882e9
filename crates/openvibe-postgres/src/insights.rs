//! [`InsightStore`] on PostgreSQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Change, Insight, InsightStatus, InsightStore, STRENGTHEN_STEP, StoreError,
    content_hash, table_of, validate_insight,
};
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::{push_changeable, push_readable};
use crate::batch::{self, Batched};
use crate::error::{corrupt, store_error};
use crate::identity::{new_id, push_governed};
use crate::query::{BY_CONFIDENCE, Ordering};
use crate::record_store::{PgRecord, PgRecords};
use crate::records::{self, Mode, Record};
use crate::rows::decode_meta;
use crate::rows::{col, columns, count_col, to_i64};
use crate::span::span;
use crate::sql::Sql;
use crate::text::{joined_terms, word_queries};
use crate::tx::begin;
use openvibe_protocols::check_caller;
use openvibe_protocols::{Observed, check_tags, observe_with};

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
    "content",
    "confidence",
    "evidence_count",
    "source_episode_ids",
    "last_confirmed",
    "status",
    "importance",
    "access_count",
    "last_accessed",
    "supersedes",
    "external_id",
    "content_hash",
];

const FIXED: &str =
    "tenant_id, id, namespace, project_id, owner, created_at, access_count, last_accessed";
const MUTABLE: &str = "classification, domain, entity, tags, source, updated_at, \
     agent_id, content, confidence, evidence_count, source_episode_ids, last_confirmed, status, \
     importance, supersedes, external_id, content_hash, search";

fn parse_status(id: &str, value: &str) -> Result<InsightStatus, StoreError> {
    match value {
        "active" => Ok(InsightStatus::Active),
        "superseded" => Ok(InsightStatus::Superseded),
        "archived" => Ok(InsightStatus::Archived),
        other => Err(corrupt(
            "insight",
            id,
            format!("`{other}` is not an insight status"),
        )),
    }
}

impl Record for Insight {
    const KIND: &'static str = "insight";
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = true;
    const FIXED: &'static str = FIXED;
    const MUTABLE: &'static str = MUTABLE;

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let status: String = col(row, "status")?;
        Ok(Insight {
            meta: decode_meta("insight", &id, row)?,
            agent_id: col(row, "agent_id")?,
            content: col(row, "content")?,
            confidence: col(row, "confidence")?,
            evidence_count: count_col(row, "evidence_count")?,
            source_episode_ids: col(row, "source_episode_ids")?,
            last_confirmed: col(row, "last_confirmed")?,
            status: parse_status(&id, &status)?,
            entity: col(row, "entity")?,
            domain: col(row, "domain")?,
            tags: col(row, "tags")?,
            importance: col(row, "importance")?,
            access_count: count_col(row, "access_count")?,
            last_accessed: col(row, "last_accessed")?,
            supersedes: col(row, "supersedes")?,
            external_id: col(row, "external_id")?,
            content_hash: col(row, "content_hash")?,
            id,
        })
    }
}

/// A record checked for writing, with what its statement binds besides it.
pub struct Prepared {
    insight: Insight,
    terms: Vec<String>,
    hash: String,
    evidence: i64,
}

fn prepare(ctx: &CallerContext, mut insight: Insight, mode: Mode) -> Result<Prepared, StoreError> {
    if insight.id.is_empty() && mode != Mode::Update {
        insight.id = new_id();
    }
    let terms = validate_insight(&insight)?;
    check_caller(ctx)?;
    let i = &insight;
    let evidence = to_i64("evidence_count", i.evidence_count)?;
    let hash = content_hash(&i.content);
    Ok(Prepared {
        insight,
        terms,
        hash,
        evidence,
    })
}

fn push_mutable(sql: &mut Sql, p: &Prepared) {
    let i = &p.insight;
    push_governed(sql, &i.meta, &i.domain, &i.entity, &i.tags);
    sql.bind(i.agent_id.clone())
        .push(", ")
        .bind(i.content.clone())
        .push(", ")
        .bind(i.confidence)
        .push(", ")
        .bind(p.evidence)
        .push(", ")
        .bind(i.source_episode_ids.clone())
        .push("::text[], ")
        .bind(i.last_confirmed)
        .push(", ")
        .bind(i.status.as_str())
        .push(", ")
        .bind(i.importance)
        .push(", ")
        .bind(i.supersedes.clone())
        .push(", ")
        .bind(i.external_id.clone())
        .push(", ")
        .bind(p.hash.clone())
        .push(", array_to_tsvector(")
        .bind(p.terms.clone())
        .push("::text[])");
}

impl PgRecord for Insight {
    const ORDER: Ordering = BY_CONFIDENCE;
    type Prepared = Prepared;

    fn prepare(ctx: &CallerContext, record: Self, mode: Mode) -> Result<Prepared, StoreError> {
        prepare(ctx, record, mode)
    }

    fn prepared(p: &Prepared) -> &Self {
        &p.insight
    }

    fn push_mutable(sql: &mut Sql, p: &Prepared) {
        push_mutable(sql, p);
    }
}

impl PgRecords<Insight> {
    /// Insert new insights in one transaction (one statement): all or none.
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
        insights: Vec<Insight>,
    ) -> Result<u64, StoreError> {
        crate::batch::store_batch(self, ctx, insights).await
    }
}

#[async_trait]
impl InsightStore for PgRecords<Insight> {
    async fn find_similar(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        content: &str,
    ) -> Result<Option<Insight>, StoreError> {
        let (words, total) = word_queries(content);
        if words.is_empty() {
            return Ok(None);
        }
        let threshold = i64::try_from(total.min(3)).unwrap_or(3);
        // Candidates share at least one whole word (`any`); the overlap is
        // the number of the content's words each has as a whole word.
        let any = words.join(" | ");
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM (SELECT f.*, (SELECT count(*) FROM unnest(",
            columns(COLS, "s.")
        ));
        sql.bind(words)
            .push(
                "::text[]) AS w(x) WHERE f.search @@ w.x::tsquery) AS overlap \
                 FROM insights f WHERE f.tenant_id = ",
            )
            .bind(ctx.tenant_id().to_owned())
            .push(" AND f.agent_id = ")
            .bind(agent_id.to_owned())
            .push(" AND f.status = 'active' AND f.search @@ ")
            .bind(any)
            .push("::tsquery AND ");
        push_readable(&mut sql, ctx, "f.", None);
        sql.push(") s WHERE s.overlap >= ")
            .bind(threshold)
            .push(" ORDER BY s.overlap DESC, s.confidence DESC, s.id LIMIT 1");
        let found: Vec<Insight> = records::read(&self.pool, ctx, sql, false)
            .instrument(span("insight", "find_similar", ctx))
            .await?;
        Ok(found.into_iter().next())
    }

    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError> {
        check_tags("episode_ids", episode_ids)?;
        let result = async {
            // One statement: no read-modify-write, so concurrent
            // reflections each add their step.
            let mut sql = Sql::new("UPDATE insights AS f SET confidence = least(f.confidence + ");
            sql.bind(STRENGTHEN_STEP)
                .push(
                    ", 1.0), evidence_count = LEAST(f.evidence_count, 9223372036854775806) + 1, last_confirmed = now(), \
                     updated_at = now(), source_episode_ids = f.source_episode_ids || \
                     ARRAY(SELECT u.x FROM unnest(",
                )
                .bind(episode_ids.to_vec())
                .push(
                    "::text[]) WITH ORDINALITY AS u(x, n) \
                     WHERE NOT u.x = ANY(f.source_episode_ids) ORDER BY u.n) WHERE f.tenant_id = ",
                )
                .bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = ")
                .bind(id.to_owned())
                .push(" AND ");
            push_changeable(&mut sql, ctx, "f.", Change::Write);
            sql.push(&format!(" RETURNING {}", columns(COLS, "f.")));
            let mut tx = begin(&self.pool, ctx).await?;
            match records::fetch_optional::<Insight>(&mut tx, sql).await? {
                Some(insight) => {
                    tx.commit().await.map_err(store_error)?;
                    Ok(insight)
                }
                None => Err(records::refusal::<Insight>(
                    &mut tx,
                    ctx,
                    id,
                    "change",
                    records::Mode::Update,
                    "",
                )
                .await),
            }
        }
        .instrument(span("insight", "strengthen", ctx))
        .await;
        self.audit.refusal(
            ctx,
            openvibe_protocols::AuditOp::Update,
            "insight",
            id,
            result,
        )
    }

    async fn observe(&self, ctx: &CallerContext, insight: Insight) -> Result<Observed, StoreError> {
        // `INSERT … ON CONFLICT DO NOTHING` waits for a concurrent insert of
        // the same id to commit, then inserts nothing (a conflict): exactly
        // one observer creates the pattern; the others strengthen it.
        observe_with(
            insight,
            |insight| self.write(ctx, insight, Mode::Create),
            |id, episodes| async move { self.strengthen(ctx, &id, &episodes).await },
        )
        .await
    }
}

/// A batch's insight columns ([`Batched`]).
#[derive(Default)]
pub(crate) struct InsightColumns {
    agents: Vec<String>,
    contents: Vec<String>,
    confidences: Vec<f64>,
    evidence: Vec<i64>,
    episode_ids: Vec<String>,
    confirmed: Vec<Option<DateTime<Utc>>>,
    statuses: Vec<&'static str>,
    importances: Vec<f64>,
    supersedes: Vec<Option<String>>,
    external_ids: Vec<Option<String>>,
    hashes: Vec<String>,
    searches: Vec<String>,
}

impl Batched for Insight {
    type Columns = InsightColumns;
    const SELECT: &'static str = "u.agent_id, u.content, u.confidence, u.evidence_count, \
         ARRAY(SELECT jsonb_array_elements_text(u.source_episode_ids::jsonb)), \
         u.last_confirmed, u.status, u.importance, u.supersedes, u.external_id, \
         u.content_hash, array_to_tsvector(string_to_array(u.search, ' '))";
    const NAMES: &'static str = "agent_id, content, confidence, evidence_count, \
         source_episode_ids, last_confirmed, status, importance, supersedes, external_id, \
         content_hash, search";

    fn hash(p: &Prepared) -> &str {
        &p.hash
    }

    fn push(c: &mut InsightColumns, p: Prepared) -> batch::Governed {
        let i = p.insight;
        c.agents.push(i.agent_id);
        c.contents.push(i.content);
        c.confidences.push(i.confidence);
        c.evidence.push(p.evidence);
        c.episode_ids
            .push(serde_json::Value::from(i.source_episode_ids).to_string());
        c.confirmed.push(i.last_confirmed);
        c.statuses.push(i.status.as_str());
        c.importances.push(i.importance);
        c.supersedes.push(i.supersedes);
        c.external_ids.push(i.external_id);
        c.hashes.push(p.hash);
        c.searches.push(joined_terms(&p.terms));
        batch::Governed {
            id: i.id,
            meta: i.meta,
            domain: i.domain,
            entity: i.entity,
            tags: i.tags,
        }
    }

    fn bind(c: InsightColumns, sql: &mut Sql) {
        sql.bind(c.agents)
            .push("::text[], ")
            .bind(c.contents)
            .push("::text[], ")
            .bind(c.confidences)
            .push("::float8[], ")
            .bind(c.evidence)
            .push("::int8[], ")
            .bind(c.episode_ids)
            .push("::text[], ")
            .bind(c.confirmed)
            .push("::timestamptz[], ")
            .bind(c.statuses)
            .push("::text[], ")
            .bind(c.importances)
            .push("::float8[], ")
            .bind(c.supersedes)
            .push("::text[], ")
            .bind(c.external_ids)
            .push("::text[], ")
            .bind(c.hashes)
            .push("::text[], ")
            .bind(c.searches)
            .push("::text[]");
    }
}
