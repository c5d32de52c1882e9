//! [`FactStore`] on PostgreSQL.

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, CallerContext, Classification, Fact, FactQuery, FactStore, RecordFilter,
    RecordMeta, StoreError, content_hash, validate_fact,
};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use tracing::Instrument;

use crate::audit::AuditWriter;
use crate::error::{corrupt, store_error};
use crate::query::{BY_CONFIDENCE, select};
use crate::records::{self, Mode, Record, span};
use crate::sql::{
    GovernedColumns, Run, Sql, col, count_col, joined_terms, new_id, push_governed,
    write_replacing_expired,
};

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
];

/// Set when a fact is inserted, never changed afterwards.
const FIXED: &str =
    "tenant_id, id, namespace, project_id, owner, created_at, access_count, last_accessed";
/// Replaced by `store` over an existing id and by `update`.
const MUTABLE: &str = "classification, domain, entity, tags, source, updated_at, \
     content, confidence, importance, supersedes, external_id, content_hash, search";

pub(crate) fn parse_classification(
    kind: &str,
    id: &str,
    value: &str,
) -> Result<Classification, StoreError> {
    value.parse().map_err(|e| corrupt(kind, id, e))
}

/// The governance columns every record table has (`expires_at` only
/// those of the kinds that expire).
pub(crate) fn decode_meta(kind: &str, id: &str, row: &PgRow) -> Result<RecordMeta, StoreError> {
    let classification: String = col(row, "classification")?;
    Ok(RecordMeta {
        tenant_id: col(row, "tenant_id")?,
        namespace: col(row, "namespace")?,
        project_id: col(row, "project_id")?,
        owner: col(row, "owner")?,
        classification: parse_classification(kind, id, &classification)?,
        source: col(row, "source")?,
        created_at: col(row, "created_at")?,
        updated_at: col(row, "updated_at")?,
        // Only the kinds that expire have the column.
        expires_at: match row.try_get::<Option<chrono::DateTime<chrono::Utc>>, _>("expires_at") {
            Err(sqlx::Error::ColumnNotFound(_)) => None,
            _ => col(row, "expires_at")?,
        },
    })
}

pub(crate) use openvibe_protocols::memory::check_caller;

impl Record for Fact {
    const KIND: &'static str = "fact";
    const TABLE: &'static str = "facts";
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
            id,
        })
    }
}

/// A fact checked and prepared for writing.
struct Prepared {
    fact: Fact,
    terms: Vec<String>,
    hash: String,
}

fn prepare(ctx: &CallerContext, mut fact: Fact, mode: Mode) -> Result<Prepared, StoreError> {
    if fact.id.is_empty() && mode == Mode::Upsert {
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
        .push("::text[])");
}

/// [`FactStore`] over a PostgreSQL pool. Clearance, tenancy, projects,
/// ordering and limits are applied in SQL; the tables carry row-level
/// security on the transaction's tenant.
#[derive(Debug, Clone)]
pub struct PgFactStore {
    pool: PgPool,
    audit: AuditWriter,
    vectors: Option<std::sync::Arc<crate::PgVectors>>,
    groups: crate::group::Groups,
}

crate::audit::audited_store!(PgFactStore, vectors);

impl PgFactStore {
    async fn write(&self, ctx: &CallerContext, fact: Fact, mode: Mode) -> Result<Fact, StoreError> {
        let p = prepare(ctx, fact, mode)?;
        let id = p.fact.id.clone();
        let created_at = p.fact.meta.created_at;
        let expires_at = p.fact.meta.expires_at;
        let namespace = p.fact.meta.namespace.clone();
        records::write(
            self.writer(),
            ctx,
            records::Target {
                id,
                namespace: &namespace,
                created_at,
                expires_at,
            },
            mode,
            move |sql| push_mutable(sql, &p),
        )
        .await
    }

    /// The plan of [`FactStore::query`] for `q` as `ctx`, executed:
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
        let rows = crate::sql::fetch_committed(&self.pool, ctx, sql).await?;
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
        async {
            if facts.is_empty() {
                return Ok(0);
            }
            openvibe_protocols::memory::check_batch(facts.len())?;
            let n = facts.len();
            let mut governed = GovernedColumns::with_capacity(n);
            let mut contents = Vec::with_capacity(n);
            let mut confidences = Vec::with_capacity(n);
            let mut importances = Vec::with_capacity(n);
            let mut supersedes = Vec::with_capacity(n);
            let mut external_ids = Vec::with_capacity(n);
            let mut hashes = Vec::with_capacity(n);
            let mut searches = Vec::with_capacity(n);
            let embeds = self.vectors.as_deref().is_some_and(crate::PgVectors::embeds);
            let mut written = Vec::new();
            for (i, fact) in facts.into_iter().enumerate() {
                let p = prepare(ctx, fact, Mode::Upsert).map_err(|e| at_index(i, e))?;
                let f = p.fact;
                written.extend(crate::vectors::pending_if(embeds, "fact", &f.id, &p.hash, || {
                    f.content.clone()
                }));
                let placement = ctx
                    .placement(&f.meta.namespace, &format!("store fact {}", f.id))
                    .map_err(|e| at_index(i, e))?;
                governed
                    .push(ctx, "fact", f.id, placement, f.meta, f.domain, f.entity, f.tags)
                    .map_err(|err| at_index(i, err))?;
                contents.push(f.content);
                confidences.push(f.confidence);
                importances.push(f.importance);
                supersedes.push(f.supersedes);
                external_ids.push(f.external_id);
                hashes.push(p.hash);
                searches.push(joined_terms(&p.terms));
            }
            let mut sql = Sql::new(&format!(
                "INSERT INTO facts ({FIXED}, {MUTABLE}, expires_at) SELECT "
            ));
            sql.bind(ctx.tenant_id().to_owned())
                .push(", u.id, u.namespace, u.project_id, ")
                .bind(ctx.owner_key())
                .push(
                    ", u.created_at, 0, NULL, u.classification, u.domain, u.entity, \
                     ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.source, now(), \
                     u.content, u.confidence, u.importance, u.supersedes, u.external_id, \
                     u.content_hash, array_to_tsvector(string_to_array(u.search, ' ')), u.expires_at FROM unnest(",
                );
            let ids = governed.ids().to_vec();
            governed.bind(&mut sql);
            sql
                .bind(contents)
                .push("::text[], ")
                .bind(confidences)
                .push("::float8[], ")
                .bind(importances)
                .push("::float8[], ")
                .bind(supersedes)
                .push("::text[], ")
                .bind(external_ids)
                .push("::text[], ")
                .bind(hashes)
                .push("::text[], ")
                .bind(searches)
                .push(
                    "::text[]) AS u(id, namespace, project_id, classification, domain, entity, tags, \
                     source, created_at, expires_at, content, confidence, importance, supersedes, external_id, \
                     content_hash, search)",
                );
            let (tx, done) =
                write_replacing_expired(&self.pool, ctx, "facts", &ids, sql, Run::Execute)
                    .await?;
            let done = done.affected()?;
            tx.commit().await.map_err(store_error)?;
            crate::vectors::embed_texts_written(self.vectors.as_deref(), ctx, "fact", written).await;
            Ok(done)
        }
        .instrument(span("fact", "store_batch", ctx))
        .await
    }
}

pub(crate) use openvibe_protocols::memory::at_index;

#[async_trait]
impl FactStore for PgFactStore {
    async fn store(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError> {
        let stored = self
            .write(ctx, fact, Mode::Upsert)
            .instrument(span("fact", "store", ctx))
            .await?;
        crate::vectors::embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Fact>, StoreError> {
        records::get(&self.pool, ctx, id).await
    }

    async fn query(&self, ctx: &CallerContext, q: &FactQuery) -> Result<Vec<Fact>, StoreError> {
        self.audit
            .record_with(|| AuditEntry::search(ctx, "fact", q, &q.namespaces, q.limit));
        let Some(sql) = select::<Fact>(ctx, &q.filter(), &BY_CONFIDENCE) else {
            return Ok(Vec::new());
        };
        records::read(&self.pool, ctx, sql, q.track_access)
            .instrument(span("fact", "query", ctx))
            .await
    }

    async fn update(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError> {
        let stored = self
            .write(ctx, fact, Mode::Update)
            .instrument(span("fact", "update", ctx))
            .await?;
        crate::vectors::embed_written(self.vectors.as_deref(), ctx, &[&stored]).await;
        Ok(stored)
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        records::delete::<Fact>(&self.pool, &self.audit, ctx, id).await
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        records::touch::<Fact>(&self.pool, ctx, ids).await
    }
}
