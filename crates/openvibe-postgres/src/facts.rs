//! [`FactStore`] on PostgreSQL.

use openvibe_protocols::{
    CallerContext, Fact, FactQuery, RecordFilter, StoreError, content_hash, table_of, validate_fact,
};
use sqlx::postgres::PgRow;

use crate::batch::{self, Batched};
use crate::identity::{new_id, push_governed};
use crate::query::{BY_CONFIDENCE, Ordering, select};
use crate::record_store::{PgRecord, PgRecords};
use crate::records::{Mode, Record};
use crate::rows::{col, count_col, decode_meta};
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
    "content",
    "confidence",
    "importance",
    "access_count",
    "last_accessed",
    "supersedes",
    "external_id",
    "content_hash",
    "metadata",
];

/// Set when a fact is inserted, never changed afterwards.
const FIXED: &str =
    "tenant_id, id, namespace, project_id, owner, created_at, access_count, last_accessed";
/// Replaced by `store` over an existing id and by `update`.
const MUTABLE: &str = "classification, domain, entity, tags, source, updated_at, \
     content, confidence, importance, supersedes, external_id, content_hash, search, metadata";

impl Record for Fact {
    const KIND: &'static str = "fact";
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = true;
    const FIXED: &'static str = FIXED;
    const MUTABLE: &'static str = MUTABLE;

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        Ok(Fact {
            meta: decode_meta("fact", &id, row)?,
            content: col(row, "content")?,
            entity: col(row, "entity")?,
            domain: col(row, "domain")?,
            tags: col(row, "tags")?,
            confidence: col(row, "confidence")?,
            importance: col(row, "importance")?,
            access_count: count_col(row, "access_count")?,
            last_accessed: col(row, "last_accessed")?,
            supersedes: col(row, "supersedes")?,
            external_id: col(row, "external_id")?,
            content_hash: col(row, "content_hash")?,
            metadata: match col::<serde_json::Value>(row, "metadata")? {
                serde_json::Value::Object(map) => map,
                _ => serde_json::Map::new(),
            },
            id,
        })
    }
}

/// A record checked for writing, with what its statement binds besides it.
pub struct Prepared {
    fact: Fact,
    terms: Vec<String>,
    hash: String,
}

fn prepare(ctx: &CallerContext, mut fact: Fact, mode: Mode) -> Result<Prepared, StoreError> {
    if fact.id.is_empty() && mode != Mode::Update {
        fact.id = new_id();
    }
    let terms = validate_fact(&fact)?;
    check_caller(ctx)?;
    let hash = content_hash(&fact.content);
    Ok(Prepared { fact, terms, hash })
}

/// `(namespace, …, search)` values of [`MUTABLE`].
fn push_mutable(sql: &mut Sql, p: &Prepared) {
    let f = &p.fact;
    push_governed(sql, &f.meta, &f.domain, &f.entity, &f.tags);
    sql.bind(f.content.clone())
        .push(", ")
        .bind(f.confidence)
        .push(", ")
        .bind(f.importance)
        .push(", ")
        .bind(f.supersedes.clone())
        .push(", ")
        .bind(f.external_id.clone())
        .push(", ")
        .bind(p.hash.clone())
        .push(", array_to_tsvector(")
        .bind(p.terms.clone())
        .push("::text[]), ")
        .bind(serde_json::Value::Object(f.metadata.clone()))
        .push("::jsonb");
}

impl PgRecord for Fact {
    const ORDER: Ordering = BY_CONFIDENCE;
    type Prepared = Prepared;

    fn prepare(ctx: &CallerContext, record: Self, mode: Mode) -> Result<Prepared, StoreError> {
        prepare(ctx, record, mode)
    }

    fn prepared(p: &Prepared) -> &Self {
        &p.fact
    }

    fn push_mutable(sql: &mut Sql, p: &Prepared) {
        push_mutable(sql, p);
    }
}

impl PgRecords<Fact> {
    /// The plan of [`RecordStore::query`](openvibe_protocols::RecordStore::query) for `q` as `ctx`, executed:
    /// `EXPLAIN (ANALYZE, BUFFERS)` of the exact statement the store runs
    /// (without access tracking). For tuning and the benchmark report.
    pub async fn explain_query(
        &self,
        ctx: &CallerContext,
        q: &FactQuery,
    ) -> Result<String, StoreError> {
        let filters = RecordFilter {
            track_access: false,
            ..q.filter()
        };
        let Some(select) = select::<Fact>(ctx, &filters, &BY_CONFIDENCE) else {
            return Ok("(nothing to run: limit 0 or an impossible term)".to_owned());
        };
        let mut sql = Sql::new("EXPLAIN (ANALYZE, BUFFERS) ");
        sql.append(select);
        let rows = crate::tx::fetch_committed(&self.pool, ctx, sql).await?;
        let lines: Result<Vec<String>, StoreError> =
            rows.iter().map(|r| col(r, "QUERY PLAN")).collect();
        Ok(lines?.join("\n"))
    }

    /// Insert new facts in one transaction (one statement): all or none.
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
        facts: Vec<Fact>,
    ) -> Result<u64, StoreError> {
        crate::batch::store_batch(self, ctx, facts).await
    }
}

/// A batch's fact columns ([`Batched`]).
#[derive(Default)]
pub(crate) struct FactColumns {
    contents: Vec<String>,
    confidences: Vec<f64>,
    importances: Vec<f64>,
    supersedes: Vec<Option<String>>,
    external_ids: Vec<Option<String>>,
    hashes: Vec<String>,
    searches: Vec<String>,
    metadatas: Vec<String>,
}

impl Batched for Fact {
    type Columns = FactColumns;
    const SELECT: &'static str = "u.content, u.confidence, u.importance, u.supersedes, \
         u.external_id, u.content_hash, array_to_tsvector(string_to_array(u.search, ' ')), \
         u.metadata::jsonb";
    const NAMES: &'static str =
        "content, confidence, importance, supersedes, external_id, content_hash, search, metadata";

    fn hash(p: &Prepared) -> &str {
        &p.hash
    }

    fn push(c: &mut FactColumns, p: Prepared) -> batch::Governed {
        let f = p.fact;
        c.contents.push(f.content);
        c.confidences.push(f.confidence);
        c.importances.push(f.importance);
        c.supersedes.push(f.supersedes);
        c.external_ids.push(f.external_id);
        c.hashes.push(p.hash);
        c.searches.push(joined_terms(&p.terms));
        c.metadatas
            .push(serde_json::Value::Object(f.metadata).to_string());
        batch::Governed {
            id: f.id,
            meta: f.meta,
            domain: f.domain,
            entity: f.entity,
            tags: f.tags,
        }
    }

    fn bind(c: FactColumns, sql: &mut Sql) {
        sql.bind(c.contents)
            .push("::text[], ")
            .bind(c.confidences)
            .push("::float8[], ")
            .bind(c.importances)
            .push("::float8[], ")
            .bind(c.supersedes)
            .push("::text[], ")
            .bind(c.external_ids)
            .push("::text[], ")
            .bind(c.hashes)
            .push("::text[], ")
            .bind(c.searches)
            .push("::text[], ")
            .bind(c.metadatas)
            .push("::text[]");
    }
}
