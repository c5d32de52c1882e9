//! [`KnowledgeStore`] on PostgreSQL + pgvector.
//!
//! Knowledge rows live in `knowledge`; their embeddings in the side table of
//! the store's model (`embedding_models`, one `vector(n)` table with an HNSW
//! cosine index per model). The upsert is one `INSERT … ON CONFLICT` on the
//! partial unique indexes `(tenant, owner, external_id)` and `(tenant,
//! owner, content_hash)`, so two concurrent writers of the same knowledge
//! leave one row. Queries order by cosine distance through the HNSW index,
//! with iterative index scans so that filters and the privacy predicate do
//! not starve the result.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::memory::{
    MAX_CONTENT_LEN, check_embedding, check_label, check_opt_label, check_tags, check_text,
    check_user,
};
use openvibe_protocols::{
    CallerContext, Embedder, Knowledge, KnowledgeHit, KnowledgeQuery, KnowledgeStore, NewKnowledge,
    Plan, Session, StoreError, check_content, content_hash, store_time,
};
use pgvector::Vector;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use tracing::Instrument;

use crate::error::store_error;
use crate::facts::{check_caller, decode_meta};
use crate::records::{end_read, not_found, span};
use crate::sql::{Sql, begin, col, columns, push_project};
use crate::working::{object, require_readable};

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
    "content",
    "external_id",
    "is_public",
    "tags",
    "plan_id",
    "session_id",
    "metadata",
    "content_hash",
];

fn decode(row: &PgRow) -> Result<Knowledge, StoreError> {
    let id: String = col(row, "id")?;
    let embedding: Vector = col(row, "embedding")?;
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
        embedding: embedding.to_vec(),
        id,
    })
}

/// The knowledge read rule (`knowledge_read_allowed`) on alias `f.`: the
/// caller's project, and owned or (when `public`) public.
fn push_knowledge_readable(sql: &mut Sql, ctx: &CallerContext, public: bool) {
    sql.push("(");
    push_project(sql, ctx, "f.");
    sql.push(" AND (f.owner = ").bind(ctx.owner_key());
    if public {
        sql.push(" OR f.is_public");
    }
    sql.push("))");
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
            pool,
            embedder,
            model,
            dimensions,
            table,
        }
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

    async fn embedding_for(
        &self,
        field: &str,
        given: Option<&Vec<f32>>,
        text: Option<&str>,
    ) -> Result<Vec<f32>, StoreError> {
        let vector = match (given, text, &self.embedder) {
            (Some(v), _, _) => v.clone(),
            (None, Some(text), Some(embedder)) => embedder
                .embed(&[text.to_owned()])
                .await
                .map_err(|e| StoreError::backend_from(format!("embedding failed: {e}"), false, e))?
                .pop()
                .unwrap_or_default(),
            (None, Some(_), None) => {
                return Err(StoreError::invalid(
                    field,
                    "no embedding was given and the store has no embedder",
                ));
            }
            (None, None, _) => {
                return Err(StoreError::invalid(
                    field,
                    "give an embedding or a text to embed",
                ));
            }
        };
        check_embedding(field, &vector, self.dimensions)?;
        Ok(vector)
    }

    fn select(&self) -> String {
        format!(
            "SELECT {}, e.embedding FROM knowledge f JOIN {} e ON e.tenant_id = f.tenant_id \
             AND e.record_kind = 'knowledge' AND e.record_id = f.id AND e.model = ",
            columns(COLS, "f."),
            self.table
        )
    }
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
        check_user(ctx, input.user_id.as_deref())?;
        check_caller(ctx)?;
        check_content(&input.content)?;
        check_text("content", &input.content)?;
        if input.content.len() > MAX_CONTENT_LEN {
            return Err(StoreError::invalid(
                "content",
                format!("longer than {MAX_CONTENT_LEN} bytes"),
            ));
        }
        check_opt_label("external_id", input.external_id.as_deref())?;
        check_opt_label("source", input.source.as_deref())?;
        check_opt_label("plan_id", input.plan_id.as_deref())?;
        check_opt_label("session_id", input.session_id.as_deref())?;
        check_tags("tags", &input.tags)?;
        let metadata = object("metadata", input.metadata)?;
        let embedding = self
            .embedding_for("embedding", input.embedding.as_ref(), Some(&input.content))
            .await?;
        async {
            let hash = content_hash(&input.content);
            let now = store_time();
            let mut tx = begin(&self.pool, ctx.tenant_id()).await?;
            if let Some(plan) = &input.plan_id {
                require_readable::<Plan>(&mut tx, ctx, plan).await?;
            }
            if let Some(session) = &input.session_id {
                require_readable::<Session>(&mut tx, ctx, session).await?;
            }
            let mut sql = Sql::new(
                "INSERT INTO knowledge AS f (tenant_id, id, project_id, owner, created_at, \
                 updated_at, source, content, external_id, is_public, tags, plan_id, session_id, \
                 metadata, content_hash) VALUES (",
            );
            sql.bind(ctx.tenant_id().to_owned())
                .push(", ")
                .bind(crate::sql::new_id())
                .push(", ")
                .bind(ctx.project_id().map(str::to_owned))
                .push(", ")
                .bind(ctx.owner_key())
                .push(", ")
                .bind(now)
                .push(", ")
                .bind(now)
                .push(", ")
                .bind(input.source.unwrap_or_default())
                .push(", ")
                .bind(input.content)
                .push(", ")
                .bind(input.external_id.clone())
                .push(", ")
                .bind(input.is_public)
                .push(", ")
                .bind(input.tags)
                .push("::text[], ")
                .bind(input.plan_id)
                .push(", ")
                .bind(input.session_id)
                .push(", ")
                .bind(metadata)
                .push(", ")
                .bind(hash)
                .push(if input.external_id.is_some() {
                    ") ON CONFLICT (tenant_id, owner, external_id) WHERE external_id IS NOT NULL"
                } else {
                    ") ON CONFLICT (tenant_id, owner, content_hash) WHERE external_id IS NULL"
                })
                .push(
                    " DO UPDATE SET updated_at = EXCLUDED.updated_at, source = EXCLUDED.source, \
                     content = EXCLUDED.content, is_public = EXCLUDED.is_public, \
                     tags = EXCLUDED.tags, plan_id = EXCLUDED.plan_id, \
                     session_id = EXCLUDED.session_id, metadata = EXCLUDED.metadata, \
                     content_hash = EXCLUDED.content_hash",
                )
                .push(&format!(" RETURNING {}", columns(COLS, "f.")));
            let row = sql
                .build()?
                .fetch_one(&mut *tx)
                .await
                .map_err(store_error)?;
            let id: String = col(&row, "id")?;
            let mut upsert = Sql::new(&format!(
                "INSERT INTO {} (tenant_id, record_kind, record_id, model, embedding, content_hash) VALUES (",
                self.table
            ));
            upsert
                .bind(ctx.tenant_id().to_owned())
                .push(", 'knowledge', ")
                .bind(id.clone())
                .push(", ")
                .bind(self.model.clone())
                .push(", ")
                .bind(Vector::from(embedding.clone()))
                .push(", ")
                .bind(col::<String>(&row, "content_hash")?)
                .push(
                    ") ON CONFLICT (tenant_id, record_kind, record_id, model) DO UPDATE \
                     SET embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash, \
                     created_at = now()",
                );
            upsert
                .build()?
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            tx.commit().await.map_err(store_error)?;
            let mut stored = Knowledge {
                meta: decode_meta("knowledge", &id, &row)?,
                content: col(&row, "content")?,
                external_id: col(&row, "external_id")?,
                is_public: col(&row, "is_public")?,
                tags: col(&row, "tags")?,
                plan_id: col(&row, "plan_id")?,
                session_id: col(&row, "session_id")?,
                metadata: col(&row, "metadata")?,
                content_hash: col(&row, "content_hash")?,
                embedding: Vec::new(),
                id,
            };
            stored.embedding = embedding;
            Ok(stored)
        }
        .instrument(span("knowledge", "store", ctx))
        .await
    }

    async fn query_knowledge(
        &self,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        check_user(ctx, query.user_id.as_deref())?;
        let vector = self
            .embedding_for("embedding", query.embedding.as_ref(), query.text.as_deref())
            .await?;
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        async {
            let top_k = i64::try_from(query.top_k).unwrap_or(i64::MAX);
            let mut sql = Sql::new(&format!(
                "SELECT {}, e.embedding, (e.embedding <=> ",
                columns(COLS, "f.")
            ));
            sql.bind(Vector::from(vector.clone()))
                .push(&format!(
                    ") AS distance FROM {} e JOIN knowledge f ON f.tenant_id = e.tenant_id \
                     AND f.id = e.record_id WHERE e.tenant_id = ",
                    self.table
                ))
                .bind(ctx.tenant_id().to_owned())
                .push(" AND e.record_kind = 'knowledge' AND e.model = ")
                .bind(self.model.clone())
                .push(" AND ");
            push_knowledge_readable(&mut sql, ctx, query.include_public);
            if !query.tags.is_empty() {
                sql.push(" AND f.tags && ")
                    .bind(query.tags.clone())
                    .push("::text[]");
            }
            if let Some(source) = &query.source {
                sql.push(" AND f.source = ").bind(source.clone());
            }
            if let Some(plan) = &query.plan_id {
                sql.push(" AND f.plan_id = ").bind(plan.clone());
            }
            if let Some(session) = &query.session_id {
                sql.push(" AND f.session_id = ").bind(session.clone());
            }
            sql.push(" ORDER BY e.embedding <=> ")
                .bind(Vector::from(vector))
                .push(", f.id LIMIT ")
                .bind(top_k);
            let mut tx = begin(&self.pool, ctx.tenant_id()).await?;
            // Keep scanning the HNSW graph until `top_k` rows pass the
            // filters (pgvector 0.8 iterative scans), with a candidate list
            // at least as long as the result.
            let ef = query.top_k.clamp(40, 1000);
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL hnsw.ef_search = {ef}"
            )))
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
            let rows = sql
                .build()?
                .fetch_all(&mut *tx)
                .await
                .map_err(store_error)?;
            end_read(tx);
            rows.iter()
                .map(|row| {
                    let distance: f64 = col(row, "distance")?;
                    Ok(KnowledgeHit {
                        knowledge: decode(row)?,
                        score: (1.0 - distance) as f32,
                    })
                })
                .collect()
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
            let mut tx = begin(&self.pool, ctx.tenant_id()).await?;
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

    async fn delete_knowledge(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        check_label("id", id)?;
        async {
            let mut tx = begin(&self.pool, ctx.tenant_id()).await?;
            let mut sql = Sql::new("SELECT f.owner FROM knowledge f WHERE f.tenant_id = ");
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
            let owner: String = row.try_get("owner").map_err(store_error)?;
            if !(ctx.is_owner(&owner) || ctx.is_privileged()) {
                return Err(ctx.unauthorized(
                    format!("delete knowledge {id}"),
                    format!("it is owned by {owner}"),
                ));
            }
            let mut delete = Sql::new("DELETE FROM knowledge WHERE tenant_id = ");
            delete
                .bind(ctx.tenant_id().to_owned())
                .push(" AND id = ")
                .bind(id.to_owned());
            delete
                .build()?
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            tx.commit().await.map_err(store_error)?;
            Ok(())
        }
        .instrument(span("knowledge", "delete", ctx))
        .await
    }
}
