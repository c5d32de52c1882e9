//! The batched insert of the record kinds (`store_batch` of facts,
//! episodes and insights), written once: each record stamped, checked and
//! placed by the caller, its governed columns and the kind's own (a
//! [`Batched`] impl beside the kind) gathered into one array per column,
//! and one `INSERT … SELECT … FROM unnest(…)` in one transaction: all or
//! none. An id that already exists fails the whole batch with
//! [`StoreError::Conflict`]; with an embedder the batch is embedded in one
//! call once committed, best effort as for a single write.

use openvibe_protocols::{
    CallerContext, EmbeddingText, RecordMeta, StoreError, at_index, check_batch,
};
use tracing::Instrument;

use crate::error::store_error;
use crate::identity::GovernedColumns;
use crate::record_store::{PgRecord, PgRecords};
use crate::records::{Mode, Record};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{Run, write_replacing_expired};

/// What the batch takes of a prepared record for its governed columns.
pub(crate) struct Governed {
    pub(crate) id: String,
    pub(crate) meta: RecordMeta,
    pub(crate) domain: String,
    pub(crate) entity: String,
    pub(crate) tags: Vec<String>,
}

/// A record kind's part of a batched insert: its columns after the
/// governed ones (`id, namespace, project_id, classification, domain,
/// entity, tags, source, created_at, expires_at`), one array each.
pub(crate) trait Batched: PgRecord + EmbeddingText {
    /// The kind's arrays.
    type Columns: Default;
    /// The insert's select list of the kind's columns from the unnest
    /// alias `u`, in the order of the table's `MUTABLE` columns after the
    /// governed ones.
    const SELECT: &'static str;
    /// The names of the kind's arrays in the alias, in the order
    /// [`Batched::bind`] binds them.
    const NAMES: &'static str;
    /// The content hash the record's vector will be current for.
    fn hash(p: &Self::Prepared) -> &str;
    /// Move `p`'s values into the kind's arrays, answering what the
    /// governed columns take.
    fn push(columns: &mut Self::Columns, p: Self::Prepared) -> Governed;
    /// Bind the kind's arrays, each followed by its cast, comma-separated.
    fn bind(columns: Self::Columns, sql: &mut Sql);
}

/// The select list of the governed columns a write sets, `updated_at`
/// last (the table's `MUTABLE` columns begin with them).
const GOVERNED_SELECT: &str = "u.classification, u.domain, u.entity, \
     ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.source, now()";

/// The alias names of the governed arrays ([`GovernedColumns::bind`]).
const GOVERNED_NAMES: &str = "id, namespace, project_id, classification, domain, entity, tags, source, created_at, expires_at";

/// Insert `records` as `ctx` in one statement; how many were inserted.
pub(crate) async fn store_batch<R: Batched>(
    store: &PgRecords<R>,
    ctx: &CallerContext,
    records: Vec<R>,
) -> Result<u64, StoreError> {
    async {
        if records.is_empty() {
            return Ok(0);
        }
        check_batch(records.len())?;
        let mut governed = GovernedColumns::with_capacity(records.len());
        let mut columns = R::Columns::default();
        let embeds = store
            .vectors
            .as_deref()
            .is_some_and(crate::PgVectors::embeds);
        let mut written = Vec::new();
        for (i, mut record) in records.into_iter().enumerate() {
            ctx.stamp(record.meta_mut());
            let p = R::prepare(ctx, record, Mode::Upsert).map_err(|e| at_index(i, e))?;
            let r = R::prepared(&p);
            written.extend(crate::vectors::pending_if(
                embeds,
                <R as Record>::KIND,
                EmbeddingText::record_id(r),
                R::hash(&p),
                || r.embedding_text().into_owned(),
            ));
            let placement = ctx
                .placement(
                    &r.meta().namespace,
                    &format!(
                        "store {} {}",
                        <R as Record>::KIND,
                        EmbeddingText::record_id(r)
                    ),
                )
                .map_err(|e| at_index(i, e))?;
            let g = R::push(&mut columns, p);
            governed
                .push(
                    ctx,
                    <R as Record>::KIND,
                    g.id,
                    placement,
                    g.meta,
                    g.domain,
                    g.entity,
                    g.tags,
                )
                .map_err(|e| at_index(i, e))?;
        }
        let mut sql = Sql::new(&format!(
            "INSERT INTO {} ({}, {}, expires_at) SELECT ",
            R::TABLE,
            R::FIXED,
            R::MUTABLE
        ));
        sql.bind(ctx.tenant_id().to_owned())
            .push(", u.id, u.namespace, u.project_id, ")
            .bind(ctx.owner_key())
            .push(&format!(
                ", u.created_at, {}{GOVERNED_SELECT}, {}, u.expires_at FROM unnest(",
                // The access statistics of a new record.
                if R::TRACKED { "0, NULL, " } else { "" },
                R::SELECT
            ));
        let ids = governed.ids().to_vec();
        governed.bind(&mut sql);
        R::bind(columns, &mut sql);
        sql.push(&format!(") AS u({GOVERNED_NAMES}, {})", R::NAMES));
        let (tx, done) =
            write_replacing_expired(&store.pool, ctx, R::TABLE, &ids, sql, Run::Execute).await?;
        let done = done.affected()?;
        tx.commit().await.map_err(store_error)?;
        crate::vectors::embed_texts_written(
            store.vectors.as_deref(),
            ctx,
            <R as Record>::KIND,
            written,
        )
        .await;
        Ok(done)
    }
    .instrument(span(<R as Record>::KIND, "store_batch", ctx))
    .await
}
