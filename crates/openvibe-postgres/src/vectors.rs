//! [`RecordVectors`] on PostgreSQL: the vectors of facts, insights,
//! episodes and knowledge in the model's side table (`embedding_models`;
//! one `vector(n)` table per model, HNSW-indexed, under tenant row
//! security), each row with the `content_hash` of the text it embeds. A
//! row is current while that hash is the record's; a deleted record's rows
//! go with it (trigger). A new model gets a new table, so changing models
//! never rewrites a record: [`RecordVectors::embed_pending`] fills the new
//! table batch by batch.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    CallerContext, Embedder, EmbeddingText, Episode, RecordVector, RecordVectors, StoreError,
    VectorStatus,
};
use openvibe_protocols::{
    EMBEDDED_KINDS, KindVectors, PendingText, check_caller, check_vector_admin,
    check_vector_lookup, embed_checked, no_embedder,
};
use pgvector::Vector;
use sqlx::{PgPool, Postgres, Transaction};
use tracing::Instrument;

use crate::access::push_knowledge_readable;
use crate::access::push_readable;
use crate::error::store_error;
use crate::records::end_read;
use crate::rows::{col, count_col};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::begin;

/// The record vectors of one model.
#[derive(Clone)]
pub struct PgVectors {
    pool: PgPool,
    model: String,
    /// The model's side table (an identifier from `embedding_models`).
    table: String,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for PgVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgVectors")
            .field("model", &self.model)
            .field("table", &self.table)
            .field("embedder", &self.embedder.is_some())
            .finish_non_exhaustive()
    }
}

/// The table of an embedded kind.
fn table_of(kind: &str) -> &'static str {
    match kind {
        "fact" => "facts",
        "insight" => "insights",
        "episode" => "episodes",
        _ => "knowledge",
    }
}

impl PgVectors {
    /// Whether records get vectors when written (an embedder is set).
    pub(crate) fn embeds(&self) -> bool {
        self.embedder.is_some()
    }

    /// The vectors of `model` in `table`, embedding with `embedder` when given.
    pub(crate) fn new(
        pool: PgPool,
        model: String,
        table: String,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Self {
        Self {
            pool,
            model,
            table,
            embedder,
        }
    }

    /// Embed `pending` in one embedder call and keep the vectors (one statement).
    async fn embed(
        &self,
        ctx: &CallerContext,
        pending: Vec<PendingText>,
    ) -> Result<u64, StoreError> {
        let embedder = self.embedder.as_ref().ok_or_else(no_embedder)?;
        if pending.is_empty() {
            return Ok(0);
        }
        let texts: Vec<String> = pending.iter().map(|p| p.text.clone()).collect();
        let vectors = embed_checked(embedder.as_ref(), &texts).await?;
        let sql = upsert_vectors(
            &self.table,
            ctx.tenant_id(),
            &self.model,
            pending
                .iter()
                .map(|p| (p.kind, p.id.as_str(), p.hash.as_str())),
            vectors,
            true,
        );
        let mut tx = begin(&self.pool, ctx).await?;
        sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(pending.len() as u64)
    }

    /// `(record alias r) has a current vector`, as SQL.
    fn current(&self, kind: &str) -> String {
        format!(
            "EXISTS (SELECT 1 FROM {} e WHERE e.tenant_id = r.tenant_id AND e.record_kind = '{kind}' \
             AND e.record_id = r.id AND e.content_hash = r.content_hash)",
            self.table
        )
    }

    /// Up to `limit` records of `kind` without a current vector, by id.
    async fn pending(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        ctx: &CallerContext,
        kind: &'static str,
        limit: usize,
    ) -> Result<Vec<PendingText>, StoreError> {
        let text = if kind == "episode" {
            "r.action, r.input_summary, r.output_summary"
        } else {
            "r.content"
        };
        let mut sql = Sql::new(&format!(
            "SELECT r.id, r.content_hash, {text} FROM {} r WHERE r.tenant_id = ",
            table_of(kind)
        ));
        sql.bind(ctx.tenant_id().to_owned())
            .push(&format!(
                " AND r.content_hash IS NOT NULL AND NOT {} ORDER BY r.id LIMIT ",
                self.current(kind)
            ))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        let rows = sql
            .build()?
            .fetch_all(&mut **tx)
            .await
            .map_err(store_error)?;
        rows.iter()
            .map(|row| {
                let text = if kind == "episode" {
                    Episode {
                        action: col(row, "action")?,
                        input_summary: col(row, "input_summary")?,
                        output_summary: col(row, "output_summary")?,
                        ..Episode::default()
                    }
                    .embedding_text()
                    .into_owned()
                } else {
                    col(row, "content")?
                };
                Ok(PendingText {
                    kind,
                    id: col(row, "id")?,
                    hash: col(row, "content_hash")?,
                    text,
                })
            })
            .collect()
    }
}

/// The statement that keeps `vectors` of `model` in its side `table` for
/// the records `(kind, id, content hash)` of `tenant`, one row each,
/// replacing what they had. Used for records and for knowledge alike.
/// `indexed`: the rows go into the HNSW graph in this statement; otherwise
/// they wait for the knowledge indexer (a row whose vector did not change
/// stays as it was).
pub(crate) fn upsert_vectors<'a>(
    table: &str,
    tenant: &str,
    model: &str,
    records: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    vectors: Vec<Vec<f32>>,
    indexed: bool,
) -> Sql {
    let (mut kinds, mut ids, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for (kind, id, hash) in records {
        kinds.push(kind.to_owned());
        ids.push(id.to_owned());
        hashes.push(hash.to_owned());
    }
    let mut sql = Sql::new(&format!(
        "INSERT INTO {table} (tenant_id, record_kind, record_id, model, embedding, content_hash, \
         indexed) SELECT "
    ));
    sql.bind(tenant.to_owned())
        .push(", x.k, x.id, ")
        .bind(model.to_owned())
        .push(&format!(", x.e, x.h, {indexed} FROM unnest("))
        .bind(kinds)
        .push("::text[], ")
        .bind(ids)
        .push("::text[], ")
        .bind_raw(vectors.into_iter().map(Vector::from).collect::<Vec<_>>())
        .push("::vector[], ")
        .bind(hashes)
        .push(
            "::text[]) AS x(k, id, e, h) \
             ON CONFLICT (tenant_id, record_kind, record_id, model) DO UPDATE \
             SET embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash, \
             created_at = now()",
        );
    if indexed {
        sql.push(", indexed = true");
    } else {
        sql.push(&format!(
            ", indexed = {table}.indexed AND {table}.embedding = EXCLUDED.embedding"
        ));
    }
    sql
}

/// Embed what a store just wrote, when it keeps vectors: best effort. A
/// failure leaves the records without a current vector (a warning in the
/// log) for [`RecordVectors::embed_pending`].
pub(crate) async fn embed_written<R: EmbeddingText>(
    vectors: Option<&PgVectors>,
    ctx: &CallerContext,
    written: &[&R],
) {
    // Without an embedder nothing is embedded: no text is copied either.
    if !vectors.is_some_and(PgVectors::embeds) {
        return;
    }
    let pending: Vec<PendingText> = written.iter().filter_map(|r| PendingText::of(*r)).collect();
    embed_texts_written(vectors, ctx, R::KIND, pending).await;
}

/// What a row of a batch will have embedded once written (`store_batch`),
/// when the store embeds at all (`embeds`; the text is only built then).
pub(crate) fn pending_if(
    embeds: bool,
    kind: &'static str,
    id: &str,
    hash: &str,
    text: impl FnOnce() -> String,
) -> Option<PendingText> {
    embeds.then(|| PendingText {
        kind,
        id: id.to_owned(),
        hash: hash.to_owned(),
        text: text(),
    })
}

/// [`embed_written`] for records of `kind` a batch wrote (`store_batch`
/// returns a count, not the records), given as the texts it stored.
pub(crate) async fn embed_texts_written(
    vectors: Option<&PgVectors>,
    ctx: &CallerContext,
    kind: &'static str,
    pending: Vec<PendingText>,
) {
    let Some(vectors) = vectors.filter(|v| v.embeds()) else {
        return;
    };
    if let Err(e) = vectors
        .embed(ctx, pending)
        .instrument(span(kind, "embed", ctx))
        .await
    {
        tracing::warn!(
            kind,
            model = %vectors.model,
            transient = e.is_transient(),
            "embedding on write failed; the record is stored and waits for a reindex"
        );
        tracing::debug!(error = %e, "embedding on write failed");
    }
}

#[async_trait]
impl RecordVectors for PgVectors {
    async fn vectors(
        &self,
        ctx: &CallerContext,
        model: &str,
        kind: &str,
        ids: &[String],
    ) -> Result<Vec<RecordVector>, StoreError> {
        check_vector_lookup(kind, ids)?;
        check_caller(ctx)?;
        if model != self.model || ids.is_empty() {
            return Ok(Vec::new());
        }
        async {
            let mut sql = Sql::new(&format!(
                "SELECT r.id, e.embedding FROM {} r JOIN {} e ON e.tenant_id = r.tenant_id \
                 AND e.record_kind = '{kind}' AND e.record_id = r.id \
                 AND e.content_hash = r.content_hash WHERE r.tenant_id = ",
                table_of(kind),
                self.table
            ));
            sql.bind(ctx.tenant_id().to_owned())
                .push(" AND r.id = ANY(")
                .bind(ids.to_vec())
                .push("::text[]) AND ");
            if kind == "knowledge" {
                // `push_knowledge_readable` reads the alias `f.`.
                sql.push("EXISTS (SELECT 1 FROM knowledge f WHERE f.tenant_id = r.tenant_id AND f.id = r.id AND ");
                push_knowledge_readable(&mut sql, ctx, true);
                sql.push(")");
            } else {
                push_readable(&mut sql, ctx, "r.", None);
            }
            let mut tx = begin(&self.pool, ctx).await?;
            let rows = sql
                .build()?
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
            end_read(tx);
            rows.iter()
                .map(|row| {
                    let vector: Vector = col(row, "embedding")?;
                    Ok(RecordVector {
                        id: col(row, "id")?,
                        vector: vector.to_vec(),
                    })
                })
                .collect()
        }
        .instrument(span("vector", "vectors", ctx))
        .await
    }

    async fn vector_status(&self, ctx: &CallerContext) -> Result<VectorStatus, StoreError> {
        check_vector_admin(ctx, "read the vector status", None)?;
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            let mut kinds = Vec::with_capacity(EMBEDDED_KINDS.len());
            for kind in EMBEDDED_KINDS {
                let mut sql = Sql::new(&format!(
                    "SELECT count(*) AS records, count(*) FILTER (WHERE {}) AS embedded \
                     FROM {} r WHERE r.tenant_id = ",
                    self.current(kind),
                    table_of(kind)
                ));
                sql.bind(ctx.tenant_id().to_owned());
                let row = sql
                    .build()?
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(store_error)?;
                let records = count_col(&row, "records")?;
                let embedded = if self.embedder.is_some() || kind == "knowledge" {
                    count_col(&row, "embedded")?
                } else {
                    0
                };
                kinds.push(KindVectors {
                    kind: kind.to_owned(),
                    embedded,
                    pending: records.saturating_sub(embedded),
                });
            }
            end_read(tx);
            Ok(VectorStatus {
                model: self.embedder.as_ref().map(|_| self.model.clone()),
                kinds,
            })
        }
        .instrument(span("vector", "status", ctx))
        .await
    }

    async fn embed_pending(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        check_vector_admin(ctx, "embed pending records", Some(batch))?;
        if self.embedder.is_none() {
            return Err(no_embedder());
        }
        async {
            let mut tx = begin(&self.pool, ctx).await?;
            let mut pending = Vec::new();
            for kind in EMBEDDED_KINDS {
                if pending.len() >= batch {
                    break;
                }
                let left = batch - pending.len();
                pending.extend(self.pending(&mut tx, ctx, kind, left).await?);
            }
            end_read(tx);
            self.embed(ctx, pending).await
        }
        .instrument(span("vector", "embed_pending", ctx))
        .await
    }
}
