//! [`KnowledgeStore`] on PostgreSQL + pgvector.
//!
//! Knowledge rows live in `knowledge`; their embeddings in the side table of
//! the store's model (`embedding_models`, one `vector(n)` table with an HNSW
//! cosine index per model). The upsert is one `INSERT … ON CONFLICT` on the
//! partial unique indexes `(tenant, owner, external_id)` and `(tenant,
//! owner, content_hash)`, so two concurrent writers of the same knowledge
//! leave one row.
//!
//! Queries are hybrid ([`openvibe_protocols::retrieval`]): the
//! full-text candidates come from a postings table (`knowledge_postings`,
//! a row per record and term carrying the read rule's columns, kept by a
//! trigger from each row's analyzed terms, which the shared analyzer
//! computes in Rust on write) by index-only scans, and are scored in
//! Rust by the shared BM25 with the tenant's corpus statistics
//! (`knowledge_text_stats`, kept by a trigger); the vector list comes from
//! the HNSW index, with iterative index scans so that filters and the
//! privacy predicate do not starve it, plus an exact comparison of the
//! vectors still pending indexing ([`vectors`]: a write does not wait for
//! the HNSW graph); the lists are fused as in memory.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    CallerContext, Change, Embedder, Knowledge, KnowledgeHit, KnowledgeQuery, KnowledgeStore,
    NewKnowledge, Plan, RecordMeta, Retriever, Session, StoreError, content_hash, store_time,
};
use openvibe_protocols::{check_embedding, check_label, json_object, validate_knowledge};
use openvibe_retrieval::{TermCounts, combine, knowledge_search};
use pgvector::Vector;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use tracing::Instrument;

use crate::access::push_knowledge_readable;
use crate::audit::AuditWriter;
use crate::error::maybe_blocked_by_expired;
use crate::error::store_error;
use crate::identity::{check_given_expiry, delete_row};
use crate::records::{end_read, not_found};
use crate::rows::decode_meta;
use crate::rows::{col, columns};
use crate::span::span;
use crate::sql::{Sql, array_literal, literal};
use crate::tx::{EXCLUDE_EXPIRED, INCLUDE_EXPIRED, Tx, begin, begin_then, try_begin_then};
use crate::working::require_readable;
use openvibe_protocols::check_caller;

mod full_text;
mod vectors;
use full_text::full_text;
use vectors::{Indexer, index_tenant, nearest};

const COLS: &[&str] = &[
    "tenant_id",
    "id",
    "namespace",
    "project_id",
    "owner",
    "classification",
    "source",
    "created_at",
    "updated_at",
    "expires_at",
    "content",
    "external_id",
    "is_public",
    "tags",
    "plan_id",
    "session_id",
    "metadata",
    "content_hash",
];

/// Knowledge with its vector of the store's model (none yet, after a
/// model change, until it is reindexed: an empty `embedding`).
fn decode(row: &PgRow) -> Result<Knowledge, StoreError> {
    let embedding: Option<Vector> = col(row, "embedding")?;
    let mut knowledge = decode_without_embedding(row)?;
    knowledge.embedding = embedding.map(|e| e.to_vec()).unwrap_or_default();
    Ok(knowledge)
}

fn decode_without_embedding(row: &PgRow) -> Result<Knowledge, StoreError> {
    let id: String = col(row, "id")?;
    Ok(Knowledge {
        meta: decode_meta("knowledge", &id, row)?,
        content: col(row, "content")?,
        external_id: col(row, "external_id")?,
        is_public: col(row, "is_public")?,
        tags: col(row, "tags")?,
        plan_id: col(row, "plan_id")?,
        session_id: col(row, "session_id")?,
        metadata: col(row, "metadata")?,
        content_hash: col(row, "content_hash")?,
        embedding: Vec::new(),
        id,
    })
}

/// Knowledge checked and ready to write.
struct Prepared {
    source: String,
    content: String,
    external_id: Option<String>,
    is_public: bool,
    tags: Vec<String>,
    plan_id: Option<String>,
    session_id: Option<String>,
    metadata: serde_json::Value,
    hash: String,
    embedding: Vec<f32>,
    /// The `expires_at` asked for (retention caps it when written).
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The analyzed content, for full-text retrieval.
    text: TermCounts,
}

/// One `INSERT … SELECT … FROM unnest(…) ON CONFLICT … DO UPDATE` for
/// knowledge of one upsert key kind (`external`: by external id).
fn upsert_rows(
    ctx: &CallerContext,
    group: &[&Prepared],
    external: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Sql, StoreError> {
    let texts = |f: fn(&Prepared) -> Option<String>| -> Vec<Option<String>> {
        group.iter().map(|p| f(p)).collect()
    };
    let tags: Vec<String> = group
        .iter()
        .map(|p| serde_json::Value::from(p.tags.clone()).to_string())
        .collect();
    let metadata: Vec<String> = group.iter().map(|p| p.metadata.to_string()).collect();
    // Arrays of arrays do not survive `unnest` (it flattens them): each
    // row's terms and counts travel as JSON arrays.
    let terms: Vec<String> = group
        .iter()
        .map(|p| serde_json::Value::from(p.text.terms.clone()).to_string())
        .collect();
    let counts: Vec<String> = group
        .iter()
        .map(|p| serde_json::Value::from(p.text.tfs.clone()).to_string())
        .collect();
    let totals: Vec<i32> = group
        .iter()
        .map(|p| i32::try_from(p.text.len).unwrap_or(i32::MAX))
        .collect();
    let mut sql = Sql::new(
        "INSERT INTO knowledge AS f (tenant_id, id, namespace, project_id, owner, created_at, \
         updated_at, source, content, external_id, is_public, tags, plan_id, session_id, \
         metadata, content_hash, expires_at, terms, term_counts, term_total) SELECT ",
    );
    let placement = ctx.placement("", "store knowledge")?;
    // Retention counts from the latest store: storing again renews it.
    let expires = group
        .iter()
        .map(|p| ctx.expiry("knowledge", &placement.namespace, now, p.expires_at))
        .collect::<Result<Vec<_>, _>>()?;
    sql.bind(ctx.tenant_id().to_owned())
        .push(", t.id, ")
        .bind(placement.namespace)
        .push(", ")
        .bind(placement.project_id)
        .push(", ")
        .bind(ctx.owner_key())
        .push(", ")
        .bind(now)
        .push(", ")
        .bind(now)
        .push(
            ", t.source, t.content, t.external_id, t.is_public, \
             ARRAY(SELECT jsonb_array_elements_text(t.tags::jsonb)), t.plan_id, t.session_id, \
             t.metadata::jsonb, t.content_hash, t.expires_at, \
             ARRAY(SELECT v FROM jsonb_array_elements_text(t.terms::jsonb) WITH ORDINALITY \
             AS a(v, n) ORDER BY n), \
             ARRAY(SELECT v::integer FROM jsonb_array_elements_text(t.term_counts::jsonb) \
             WITH ORDINALITY AS a(v, n) ORDER BY n), t.term_total FROM unnest(",
        )
        .bind(
            (0..group.len())
                .map(|_| crate::identity::new_id())
                .collect::<Vec<_>>(),
        )
        .push("::text[], ")
        .bind(texts(|p| Some(p.source.clone())))
        .push("::text[], ")
        .bind(texts(|p| Some(p.content.clone())))
        .push("::text[], ")
        .bind(texts(|p| p.external_id.clone()))
        .push("::text[], ")
        .bind(group.iter().map(|p| p.is_public).collect::<Vec<_>>())
        .push("::boolean[], ")
        .bind(tags)
        .push("::text[], ")
        .bind(texts(|p| p.plan_id.clone()))
        .push("::text[], ")
        .bind(texts(|p| p.session_id.clone()))
        .push("::text[], ")
        .bind(metadata)
        .push("::text[], ")
        .bind(texts(|p| Some(p.hash.clone())))
        .push("::text[], ")
        .bind(expires)
        .push("::timestamptz[], ")
        .bind(terms)
        .push("::text[], ")
        .bind(counts)
        .push("::text[], ")
        .bind(totals)
        .push(
            "::integer[]) AS t(id, source, content, external_id, is_public, tags, plan_id, \
             session_id, metadata, content_hash, expires_at, terms, term_counts, term_total)",
        )
        .push(if external {
            " ON CONFLICT (tenant_id, owner, external_id) WHERE external_id IS NOT NULL"
        } else {
            " ON CONFLICT (tenant_id, owner, content_hash) WHERE external_id IS NULL"
        })
        .push(
            " DO UPDATE SET updated_at = EXCLUDED.updated_at, source = EXCLUDED.source, \
             content = EXCLUDED.content, is_public = EXCLUDED.is_public, tags = EXCLUDED.tags, \
             plan_id = EXCLUDED.plan_id, session_id = EXCLUDED.session_id, \
             metadata = EXCLUDED.metadata, content_hash = EXCLUDED.content_hash, \
             expires_at = EXCLUDED.expires_at, terms = EXCLUDED.terms, \
             term_counts = EXCLUDED.term_counts, term_total = EXCLUDED.term_total",
        )
        .push(&format!(" RETURNING {}", columns(COLS, "f.")));
    Ok(sql)
}

/// Statements (no binds) that delete the caller's expired knowledge whose
/// upsert key one of `inputs` has: expired knowledge is gone, and storing
/// its key again stores it anew (the deletes are audited by the triggers).
fn purge_expired_keys(ctx: &CallerContext, inputs: &[Prepared]) -> String {
    let externals: Vec<String> = inputs
        .iter()
        .filter_map(|p| p.external_id.clone())
        .collect();
    let hashes: Vec<String> = inputs
        .iter()
        .filter(|p| p.external_id.is_none())
        .map(|p| p.hash.clone())
        .collect();
    format!(
        "{INCLUDE_EXPIRED}; DELETE FROM knowledge WHERE tenant_id = {} AND owner = {} \
         AND expires_at <= now() AND (external_id = ANY({}::text[]) \
         OR (external_id IS NULL AND content_hash = ANY({}::text[]))); {EXCLUDE_EXPIRED}",
        literal(ctx.tenant_id()),
        literal(&ctx.owner_key()),
        literal(&array_literal(&externals)),
        literal(&array_literal(&hashes)),
    )
}

/// [`KnowledgeStore`] on PostgreSQL.
#[derive(Clone)]
pub struct PgKnowledgeStore {
    pool: PgPool,
    embedder: Option<Arc<dyn Embedder>>,
    model: String,
    dimensions: usize,
    /// The model's side table (an identifier from `embedding_models`).
    table: String,
    audit: AuditWriter,
    indexer: Indexer,
}

impl std::fmt::Debug for PgKnowledgeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgKnowledgeStore")
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("table", &self.table)
            .field("embedder", &self.embedder.is_some())
            .finish_non_exhaustive()
    }
}

impl PgKnowledgeStore {
    /// The store for `model` of `dimensions`, whose side table is `table`
    /// (see [`PgKnowledgeStore::register`]), embedding with `embedder` when given.
    pub(crate) fn new(
        pool: PgPool,
        model: String,
        dimensions: usize,
        table: String,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Self {
        Self {
            audit: AuditWriter::new(pool.clone()),
            indexer: Indexer::new(pool.clone(), table.clone(), model.clone()),
            pool,
            embedder,
            model,
            dimensions,
            table,
        }
    }

    /// Audit searches through `audit` (shared with other stores).
    #[must_use]
    pub fn with_audit(mut self, audit: AuditWriter) -> Self {
        self.audit = audit;
        self
    }

    /// Register `model` (creating its side table when new); returns the table.
    pub(crate) async fn register(
        pool: &PgPool,
        model: &str,
        dimensions: usize,
    ) -> Result<String, StoreError> {
        let dims = i32::try_from(dimensions)
            .map_err(|_| StoreError::invalid("dimensions", "out of range"))?;
        let table: String = sqlx::query_scalar("SELECT openvibe_register_embedding_model($1, $2)")
            .bind(model)
            .bind(dims)
            .fetch_one(pool)
            .await
            .map_err(store_error)?;
        if !table
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(StoreError::backend(format!(
                "embedding table name `{table}` is not a plain identifier"
            )));
        }
        Ok(table)
    }

    /// Whether a write starts the background indexing of the vectors it
    /// left pending (on by default, shared by the store's clones). Off, they
    /// wait for [`KnowledgeStore::index_pending`] (a scheduled job, say);
    /// queries find them either way.
    pub fn set_background_indexing(&self, on: bool) {
        self.indexer.enable(on);
    }

    /// How many of the caller's tenant's knowledge vectors wait to be
    /// indexed ([`KnowledgeStore::index_pending`]).
    pub async fn pending_vectors(&self, ctx: &CallerContext) -> Result<u64, StoreError> {
        vectors::pending(&self.pool, &self.table, ctx)
            .instrument(span("knowledge", "pending", ctx))
            .await
    }

    /// Upsert many pieces of knowledge as [`KnowledgeStore::store_knowledge`]
    /// does each, atomically (all or none): one statement per upsert key
    /// kind and one for the embeddings; embeddings the inputs lack are
    /// computed in one embedder call. Inputs with the same upsert key: the
    /// last wins. Returns how many were stored.
    pub async fn store_knowledge_batch(
        &self,
        ctx: &CallerContext,
        inputs: Vec<NewKnowledge>,
    ) -> Result<u64, StoreError> {
        let n = self.store_batch(ctx, inputs).await?.len();
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }

    /// Check every input (nothing is written when one is bad; an error names
    /// its index) and compute the embeddings they lack.
    async fn prepare(
        &self,
        ctx: &CallerContext,
        inputs: Vec<NewKnowledge>,
    ) -> Result<Vec<Prepared>, StoreError> {
        check_caller(ctx)?;
        openvibe_protocols::check_batch(inputs.len())?;
        // A single input's error is its own; a batch's names the index.
        let single = inputs.len() == 1;
        let at = move |i: usize, e: StoreError| {
            if single {
                e
            } else {
                openvibe_protocols::at_index(i, e)
            }
        };
        let mut missing = Vec::new();
        let mut prepared = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            validate_knowledge(ctx, &input).map_err(|e| at(i, e))?;
            check_given_expiry(input.expires_at).map_err(|e| at(i, e))?;
            let metadata = json_object("metadata", input.metadata).map_err(|e| at(i, e))?;
            let embedding = match input.embedding {
                Some(v) => {
                    check_embedding("embedding", &v, self.dimensions).map_err(|e| at(i, e))?;
                    v
                }
                None => {
                    missing.push(i);
                    Vec::new()
                }
            };
            prepared.push(Prepared {
                hash: content_hash(&input.content),
                text: TermCounts::of(&input.content),
                // A caller with a stamped source writes that one.
                source: ctx
                    .source()
                    .map_or_else(|| input.source.unwrap_or_default(), str::to_owned),
                content: input.content,
                external_id: input.external_id,
                is_public: input.is_public,
                tags: input.tags,
                plan_id: input.plan_id,
                session_id: input.session_id,
                metadata,
                embedding,
                expires_at: input.expires_at,
            });
        }
        if !missing.is_empty() {
            let Some(embedder) = &self.embedder else {
                return Err(at(
                    missing[0],
                    StoreError::conflict(
                        "embedding: no embedding was given and the store has no embedder",
                    ),
                ));
            };
            let texts: Vec<String> = missing
                .iter()
                .filter_map(|i| prepared.get(*i).map(|p| p.content.clone()))
                .collect();
            let vectors = embedder.embed(&texts).await.map_err(|e| {
                StoreError::backend_from(format!("embedding failed: {e}"), false, e)
            })?;
            for (i, vector) in missing.into_iter().zip(vectors) {
                check_embedding("embedding", &vector, self.dimensions).map_err(|e| at(i, e))?;
                if let Some(p) = prepared.get_mut(i) {
                    p.embedding = vector;
                }
            }
        }
        Ok(prepared)
    }

    async fn store_batch(
        &self,
        ctx: &CallerContext,
        inputs: Vec<NewKnowledge>,
    ) -> Result<Vec<Knowledge>, StoreError> {
        let prepared = self.prepare(ctx, inputs).await?;
        async {
            // The last input of each upsert key wins.
            let mut seen = std::collections::HashSet::new();
            let mut unique: Vec<Prepared> = Vec::with_capacity(prepared.len());
            for p in prepared.into_iter().rev() {
                let key = match &p.external_id {
                    Some(ext) => (true, ext.clone()),
                    None => (false, p.hash.clone()),
                };
                if seen.insert(key) {
                    unique.push(p);
                }
            }
            unique.reverse();
            let now = store_time();
            let mut tx = begin(&self.pool, ctx).await?;
            let stored = match self.write_in(&mut tx, ctx, &unique, now).await {
                // Expired knowledge of the same key is in the way (row
                // security hides it from the upsert): delete it, store anew.
                Err(e) if maybe_blocked_by_expired(&e) => {
                    let _ = tx.rollback().await;
                    tx = begin_then(&self.pool, ctx, Some(&purge_expired_keys(ctx, &unique)))
                        .await?;
                    self.write_in(&mut tx, ctx, &unique, now).await?
                }
                other => other?,
            };
            tx.commit().await.map_err(store_error)?;
            self.indexer.kick(ctx.tenant_id());
            Ok(stored)
        }
        .instrument(span("knowledge", "store", ctx))
        .await
    }

    /// Upsert `unique` (one input per key) and their embeddings in `tx`.
    async fn write_in(
        &self,
        tx: &mut Tx,
        ctx: &CallerContext,
        unique: &[Prepared],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<Knowledge>, StoreError> {
        let plans: std::collections::BTreeSet<&String> =
            unique.iter().filter_map(|p| p.plan_id.as_ref()).collect();
        for plan in plans {
            require_readable::<Plan>(tx, ctx, plan).await?;
        }
        let sessions: std::collections::BTreeSet<&String> = unique
            .iter()
            .filter_map(|p| p.session_id.as_ref())
            .collect();
        for session in sessions {
            require_readable::<Session>(tx, ctx, session).await?;
        }
        let mut stored = Vec::with_capacity(unique.len());
        let (by_external, by_hash): (Vec<&Prepared>, Vec<&Prepared>) =
            unique.iter().partition(|p| p.external_id.is_some());
        for (group, external) in [(by_external, true), (by_hash, false)] {
            if group.is_empty() {
                continue;
            }
            let rows = upsert_rows(ctx, &group, external, now)?
                .build()?
                .fetch_all(&mut **tx)
                .await
                .map_err(store_error)?;
            for row in &rows {
                let external_id: Option<String> = col(row, "external_id")?;
                let hash: String = col(row, "content_hash")?;
                let source = group.iter().find(|p| match (&p.external_id, &external_id) {
                    (Some(a), Some(b)) => a == b,
                    (None, None) => p.hash == hash,
                    _ => false,
                });
                let embedding = source.map(|p| p.embedding.clone()).unwrap_or_default();
                let mut knowledge = decode_without_embedding(row)?;
                knowledge.embedding = embedding;
                stored.push(knowledge);
            }
        }
        let upsert = crate::vectors::upsert_vectors(
            &self.table,
            ctx.tenant_id(),
            &self.model,
            stored
                .iter()
                .map(|k| ("knowledge", k.id.as_str(), k.content_hash.as_str())),
            stored.iter().map(|k| k.embedding.clone()).collect(),
            false,
        );
        upsert
            .build()?
            .execute(&mut **tx)
            .await
            .map_err(store_error)?;
        Ok(stored)
    }

    fn select(&self) -> String {
        format!(
            "SELECT {}, e.embedding FROM knowledge f LEFT JOIN {} e ON e.tenant_id = f.tenant_id \
             AND e.record_kind = 'knowledge' AND e.record_id = f.id AND e.model = ",
            columns(COLS, "f."),
            self.table
        )
    }
}

/// Plan each statement of a query once per connection: PostgreSQL's
/// default re-planned these (their estimated cost with the values bound
/// beat the generic plan's) at ~0.3–0.5 ms a statement, more than some of
/// them take to run (docs/decisions.md).
const GENERIC_PLANS: &str = "SET LOCAL plan_cache_mode = force_generic_plan";

/// The settings of a vector list of `limit` rows: keep scanning the HNSW
/// graph until `limit` rows pass the filters (pgvector 0.8 iterative
/// scans), with a candidate list four times the result, so that a reader
/// of a quarter of the rows is usually served by the first search: an
/// iterative round after a short first list costs more than the longer
/// first list (docs/decisions.md).
fn hnsw_settings(limit: usize) -> String {
    let ef = limit.saturating_mul(4).clamp(40, 1000);
    format!("SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL hnsw.ef_search = {ef}")
}

#[async_trait]
impl KnowledgeStore for PgKnowledgeStore {
    fn embedding_model(&self) -> (&str, usize) {
        (&self.model, self.dimensions)
    }

    async fn store_knowledge(
        &self,
        ctx: &CallerContext,
        input: NewKnowledge,
    ) -> Result<Knowledge, StoreError> {
        let mut stored = self.store_batch(ctx, vec![input]).await?;
        stored
            .pop()
            .ok_or_else(|| StoreError::backend("the upsert returned no row"))
    }

    async fn query_knowledge(
        &self,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        let search = knowledge_search(
            ctx,
            query,
            self.embedder.as_deref(),
            self.dimensions,
            |entry| self.audit.record_with(entry),
        )
        .await?;
        if search.top_k == 0 {
            return Ok(Vec::new());
        }
        async {
            // The settings (generic plans; the vector list's HNSW settings)
            // travel with BEGIN (one round trip fewer).
            let settings = match &search.vector {
                Some(_) => format!("{}; {GENERIC_PLANS}", hnsw_settings(search.vector_depth)),
                None => GENERIC_PLANS.to_owned(),
            };
            // Both lists: the full text on a second connection, begun
            // together with this one, when the pool has one idle (never
            // waiting for it: see `try_begin_then`); otherwise one list
            // after the other below.
            let both = search.vector.is_some() && search.full_text();
            let (tx, side) = tokio::join!(begin_then(&self.pool, ctx, Some(&settings)), async {
                if both {
                    try_begin_then(&self.pool, ctx, Some(GENERIC_PLANS)).await
                } else {
                    Ok(None)
                }
            });
            let mut tx = tx?;
            let side = side?;
            let mut lists = Vec::new();
            let mut text_done = !search.full_text();
            // A vector list alone brings its records along.
            let alone = text_done;
            let mut listed = None;
            if let Some(vector) = search.vector {
                // The HNSW walk starts once the full text's first round is
                // answered: started together, the two CPU-bound statements
                // often shared one core (the other busy with the client)
                // and the second waited out the first's time slice
                // (docs/decisions.md).
                let (first_done, first) = match side {
                    Some(_) => {
                        let (done, answered) = tokio::sync::oneshot::channel();
                        (Some(done), Some(answered))
                    }
                    None => (None, None),
                };
                let text = async {
                    let Some(mut side) = side else {
                        return Ok(None);
                    };
                    let list = full_text(
                        &mut side,
                        ctx,
                        &search.filter,
                        &search.terms,
                        search.depth,
                        first_done,
                    )
                    .await;
                    end_read(side);
                    list.map(Some)
                };
                let nearest = async {
                    if let Some(answered) = first {
                        // A dropped sender (no first round) starts it too.
                        let _ = answered.await;
                    }
                    nearest(
                        &mut tx,
                        &self.table,
                        &self.model,
                        ctx,
                        &search.filter,
                        vector,
                        search.vector_depth,
                        alone,
                    )
                    .await
                };
                let (text, (nearest, records)) = tokio::try_join!(text, nearest)?;
                if let Some(list) = text {
                    lists.push((Retriever::FullText, list));
                    text_done = true;
                }
                lists.push((Retriever::Vector, nearest));
                if alone {
                    listed = Some(records);
                }
            }
            if !text_done {
                let list = full_text(
                    &mut tx,
                    ctx,
                    &search.filter,
                    &search.terms,
                    search.depth,
                    None,
                )
                .await?;
                lists.insert(0, (Retriever::FullText, list));
            }
            let fused = combine(lists, search.top_k);
            let mut by_id = match listed {
                Some(records) => records,
                None => {
                    let ids: Vec<String> = fused.iter().map(|f| f.id.1.clone()).collect();
                    let mut sql = Sql::new(&self.select());
                    sql.bind(self.model.clone())
                        .push(" WHERE f.tenant_id = ")
                        .bind(ctx.tenant_id().to_owned())
                        .push(" AND f.id = ANY(")
                        .bind(ids)
                        .push("::text[])");
                    let rows = sql
                        .build()?
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(store_error)?;
                    rows.iter()
                        .map(|row| decode(row).map(|k| (k.id.clone(), k)))
                        .collect::<Result<std::collections::HashMap<_, _>, StoreError>>()?
                }
            };
            end_read(tx);
            Ok(fused
                .into_iter()
                .filter_map(|hit| {
                    by_id.remove(&hit.id.1).map(|knowledge| KnowledgeHit {
                        knowledge,
                        score: hit.score,
                        retrievers: hit.retrievers,
                    })
                })
                .collect())
        }
        .instrument(span("knowledge", "query", ctx))
        .await
    }

    async fn get_knowledge(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Knowledge>, StoreError> {
        async {
            let mut sql = Sql::new(&self.select());
            sql.bind(self.model.clone())
                .push(" WHERE f.tenant_id = ")
                .bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = ")
                .bind(id.to_owned())
                .push(" AND ");
            push_knowledge_readable(&mut sql, ctx, true);
            let mut tx = begin(&self.pool, ctx).await?;
            let row = sql
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?;
            end_read(tx);
            row.as_ref().map(decode).transpose()
        }
        .instrument(span("knowledge", "get", ctx))
        .await
    }

    /// Index the caller's tenant's pending vectors now, beside the
    /// background indexer (each takes rows the other has not locked).
    async fn index_pending(&self, ctx: &CallerContext) -> Result<u64, StoreError> {
        check_label("tenant_id", ctx.tenant_id())?;
        index_tenant(&self.pool, &self.table, &self.model, ctx.tenant_id())
            .instrument(span("knowledge", "index", ctx))
            .await
    }

    async fn delete_knowledge(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        check_label("id", id)?;
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            let mut sql = Sql::new(
                "SELECT f.owner, f.namespace, f.project_id FROM knowledge f WHERE f.tenant_id = ",
            );
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND f.id = ")
                .bind(id.to_owned())
                .push(" AND ");
            push_knowledge_readable(&mut sql, ctx, true);
            sql.push(" FOR UPDATE");
            let row = sql
                .build()?
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_error)?
                .ok_or_else(|| not_found("knowledge", id))?;
            let meta = RecordMeta {
                tenant_id: ctx.tenant_id().to_owned(),
                owner: row.try_get("owner").map_err(store_error)?,
                namespace: row.try_get("namespace").map_err(store_error)?,
                project_id: row.try_get("project_id").map_err(store_error)?,
                ..RecordMeta::default()
            };
            ctx.require_change(&meta, Change::Delete, format!("delete knowledge {id}"))?;
            delete_row(&mut tx, ctx, "knowledge", id).await?;
            tx.commit().await.map_err(store_error)?;
            Ok(())
        }
        .instrument(span("knowledge", "delete", ctx))
        .await
    }
}
