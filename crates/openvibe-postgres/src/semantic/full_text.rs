//! The full-text list of a knowledge query: candidates from the GIN index
//! on each row's analyzed terms, scored in Rust by the shared BM25 and query
//! expansion with the tenant's corpus statistics, exactly as in memory.

use std::collections::BTreeMap;

use openvibe_protocols::memory::{
    CorpusStats, EXPANSION, RankKey, TermCounts, bm25_rank, bm25_rank_weighted, rank_key,
};
use openvibe_protocols::{CallerContext, KnowledgeQuery, StoreError};

use super::{push_filters, push_knowledge_readable};
use crate::error::store_error;
use crate::sql::{Sql, Tx, col};

/// The full-text list: BM25 over the readable knowledge the query's
/// filters keep, with the query expanded by pseudo-relevance feedback
/// ([`EXPANSION`]); the best `limit`, as the in-memory backend ranks them.
pub(super) async fn full_text(
    tx: &mut Tx,
    ctx: &CallerContext,
    query: &KnowledgeQuery,
    terms: &[String],
    limit: usize,
) -> Result<Vec<(RankKey, f32)>, StoreError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let stats = corpus_stats(tx, ctx).await?;
    let mut candidates = text_candidates(tx, ctx, query, terms, &[]).await?;
    let feedback = bm25_rank(
        terms,
        stats,
        candidates.iter().map(|(k, c)| (k.clone(), c)),
        EXPANSION.docs,
    );
    let feedback: Vec<&TermCounts> = feedback
        .iter()
        .filter_map(|(k, _)| candidates.get(k))
        .collect();
    let added = EXPANSION.select_among(terms, &feedback, candidates.values());
    let weighted = EXPANSION.weighted(terms, &added);
    if !added.is_empty() {
        candidates.extend(text_candidates(tx, ctx, query, &added, terms).await?);
    }
    Ok(bm25_rank_weighted(
        &weighted,
        stats,
        candidates.iter().map(|(k, c)| (k.clone(), c)),
        limit,
    ))
}

/// The tenant's corpus statistics for BM25 (every row of the tenant, as in
/// memory: aggregate counts, no content).
async fn corpus_stats(tx: &mut Tx, ctx: &CallerContext) -> Result<CorpusStats, StoreError> {
    let mut sql = Sql::new(
        "SELECT coalesce(sum(docs), 0)::int8 AS docs, coalesce(sum(total_len), 0)::int8 \
         AS total_len FROM knowledge_text_stats WHERE tenant_id = ",
    );
    sql.bind(ctx.tenant_id().to_owned());
    let row = sql
        .build()?
        .fetch_one(&mut **tx)
        .await
        .map_err(store_error)?;
    let docs: i64 = col(&row, "docs")?;
    let total_len: i64 = col(&row, "total_len")?;
    Ok(CorpusStats {
        docs: u64::try_from(docs).unwrap_or(0),
        total_len: u64::try_from(total_len).unwrap_or(0),
    })
}

/// The readable knowledge the query's filters keep that holds any of
/// `terms` but none of `except`, with its analyzed text, by rank key.
async fn text_candidates(
    tx: &mut Tx,
    ctx: &CallerContext,
    query: &KnowledgeQuery,
    terms: &[String],
    except: &[String],
) -> Result<BTreeMap<RankKey, TermCounts>, StoreError> {
    let mut sql = Sql::new(
        "SELECT f.id, f.created_at, f.terms, f.term_counts, f.term_total FROM knowledge f \
         WHERE f.tenant_id = ",
    );
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND f.terms && ")
        .bind(terms.to_vec())
        .push("::text[]");
    if !except.is_empty() {
        sql.push(" AND NOT f.terms && ")
            .bind(except.to_vec())
            .push("::text[]");
    }
    sql.push(" AND ");
    push_knowledge_readable(&mut sql, ctx, query.include_public);
    push_filters(&mut sql, query);
    let rows = sql
        .build()?
        .fetch_all(&mut **tx)
        .await
        .map_err(store_error)?;
    rows.iter()
        .map(|row| {
            let id: String = col(row, "id")?;
            let counts: Vec<i32> = col(row, "term_counts")?;
            let total: i32 = col(row, "term_total")?;
            let text = TermCounts {
                terms: col(row, "terms")?,
                tfs: counts
                    .into_iter()
                    .map(|c| u32::try_from(c).unwrap_or(0))
                    .collect(),
                len: u32::try_from(total).unwrap_or(0),
            };
            Ok((rank_key(col(row, "created_at")?, &id), text))
        })
        .collect()
}
