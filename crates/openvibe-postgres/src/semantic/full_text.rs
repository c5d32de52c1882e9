//! The full-text list of a knowledge query: candidates from the postings
//! table (`knowledge_postings`, one row per record and term, kept by a
//! trigger: migration 0012), scored in Rust by the shared BM25 and query
//! expansion with the tenant's corpus statistics, exactly as in memory.
//!
//! A candidate is known by the postings of the query's terms only: BM25
//! needs no other term of it. The expansion reads the whole term lists of
//! the first round's best [`Expansion::pool`](openvibe_protocols::memory::Expansion)
//! documents, by primary key.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use openvibe_protocols::memory::{
    CorpusStats, EXPANSION, RankKey, TermCounts, bm25_rank, bm25_rank_weighted,
};
use openvibe_protocols::{CallerContext, KnowledgeQuery, StoreError};

use super::{has_filters, push_filters, push_knowledge_readable};
use crate::error::store_error;
use crate::sql::{Sql, Tx, col, columns};

/// The full-text list: BM25 over the readable knowledge the query's
/// filters keep, with the query expanded by pseudo-relevance feedback
/// ([`EXPANSION`]); the best `limit`, as the in-memory backend ranks them.
/// `first_done` is told (or dropped) once the first round is answered.
pub(super) async fn full_text(
    tx: &mut Tx,
    ctx: &CallerContext,
    query: &KnowledgeQuery,
    terms: &[String],
    limit: usize,
    first_done: Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<Vec<(RankKey, f32)>, StoreError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut candidates = Postings::default();
    // The first round brings the corpus statistics along (one round trip
    // fewer); without a candidate there is nothing to rank.
    let first = candidates.read(tx, ctx, query, terms, true).await;
    if let Some(done) = first_done {
        // The waiter may have gone (its query failed): nothing to tell.
        let _ = done.send(());
    }
    let Some(stats) = first? else {
        return Ok(Vec::new());
    };
    let best = bm25_rank(
        terms,
        stats,
        candidates.docs.iter().map(|(k, c)| (k.clone(), c)),
        EXPANSION.pool,
    );
    let lists = term_lists(tx, ctx, best.iter().map(|(k, _)| k.1.clone()).collect()).await?;
    let best: Vec<&TermCounts> = best.iter().filter_map(|(k, _)| lists.get(&k.1)).collect();
    let added = EXPANSION.select_from(terms, &best);
    let weighted = EXPANSION.weighted(terms, &added);
    if !added.is_empty() {
        candidates.read(tx, ctx, query, &added, false).await?;
    }
    Ok(bm25_rank_weighted(
        &weighted,
        stats,
        candidates.docs.iter().map(|(k, c)| (k.clone(), c)),
        limit,
    ))
}

/// Candidates by rank key, each with the counts of the terms read for it
/// so far (sorted, as [`TermCounts`] keeps them) and its whole length.
#[derive(Default)]
struct Postings {
    docs: BTreeMap<RankKey, TermCounts>,
}

impl Postings {
    /// Add the postings of `terms` in the readable knowledge the query's
    /// filters keep: every such record holding one of them becomes (or
    /// stays) a candidate, with those terms' counts. With `stats`, the
    /// statement also reads the tenant's corpus statistics for BM25
    /// (aggregate counts of every row of the tenant, as in memory),
    /// returned when a posting came.
    async fn read(
        &mut self,
        tx: &mut Tx,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
        terms: &[String],
        stats: bool,
    ) -> Result<Option<CorpusStats>, StoreError> {
        // The read rule and the filters are written on alias `f.`: the
        // postings carry the rule's columns (so alone they are `f`); the
        // filters need the record (then it is `f`, joined to postings `p`).
        let (from, a) = if has_filters(query) {
            (
                "knowledge_postings p JOIN knowledge f \
                 ON f.tenant_id = p.tenant_id AND f.id = p.id",
                "p.",
            )
        } else {
            ("knowledge_postings f", "f.")
        };
        let cols = columns(&["id", "created_at", "len", "term", "tf"], a);
        // One row of arrays, not a row per posting: the client decodes a
        // few hundred postings per round, and a row costs far more to
        // receive and read than an array element.
        let arrays = "array_agg(x.id) AS ids, array_agg(x.created_at) AS ats, \
                      array_agg(x.len) AS lens, array_agg(x.term) AS terms, \
                      array_agg(x.tf) AS tfs";
        let mut sql = if stats {
            let mut sql = Sql::new(
                "WITH s AS (SELECT coalesce(sum(docs), 0)::int8 AS docs, \
                 coalesce(sum(total_len), 0)::int8 AS total_len FROM knowledge_text_stats \
                 WHERE tenant_id = ",
            );
            sql.bind(ctx.tenant_id().to_owned()).push(&format!(
                ") SELECT (SELECT docs FROM s) AS docs, (SELECT total_len FROM s) AS total_len, \
                 {arrays} FROM (SELECT {cols} FROM {from} WHERE {a}tenant_id = "
            ));
            sql
        } else {
            Sql::new(&format!(
                "SELECT {arrays} FROM (SELECT {cols} FROM {from} WHERE {a}tenant_id = "
            ))
        };
        sql.bind(ctx.tenant_id().to_owned())
            .push(&format!(" AND {a}term = ANY("))
            .bind(terms.to_vec())
            .push("::text[]) AND ");
        push_knowledge_readable(&mut sql, ctx, query.include_public);
        push_filters(&mut sql, query);
        sql.push(") x");
        let row = sql
            .build()?
            .fetch_one(&mut **tx)
            .await
            .map_err(store_error)?;
        // No posting: the aggregates are null.
        let ids: Option<Vec<String>> = col(&row, "ids")?;
        let Some(ids) = ids else {
            return Ok(None);
        };
        let ats: Vec<DateTime<Utc>> = col(&row, "ats")?;
        let lens: Vec<i32> = col(&row, "lens")?;
        let terms: Vec<String> = col(&row, "terms")?;
        let tfs: Vec<i32> = col(&row, "tfs")?;
        let n = ids.len();
        if [ats.len(), lens.len(), terms.len(), tfs.len()] != [n; 4] {
            return Err(StoreError::backend(
                "the postings' columns came back of different lengths",
            ));
        }
        let postings = ids.into_iter().zip(ats).zip(lens).zip(terms).zip(tfs);
        for ((((id, created), len), term), tf) in postings {
            // The rank key of `rank_key`, built from the owned id.
            let doc = self
                .docs
                .entry((Reverse(created), id))
                .or_insert_with(|| TermCounts {
                    len: u32::try_from(len).unwrap_or(0),
                    ..TermCounts::default()
                });
            // Kept sorted, as `TermCounts::tf` searches them.
            let at = doc.terms.partition_point(|t| *t < term);
            doc.terms.insert(at, term);
            doc.tfs.insert(at, u32::try_from(tf).unwrap_or(0));
        }
        if !stats {
            return Ok(None);
        }
        let docs: i64 = col(&row, "docs")?;
        let total_len: i64 = col(&row, "total_len")?;
        Ok(Some(CorpusStats {
            docs: u64::try_from(docs).unwrap_or(0),
            total_len: u64::try_from(total_len).unwrap_or(0),
        }))
    }
}

/// The whole analyzed text of the records `ids` (readable: they were just
/// found through their postings), by id.
async fn term_lists(
    tx: &mut Tx,
    ctx: &CallerContext,
    ids: Vec<String>,
) -> Result<HashMap<String, TermCounts>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let mut sql = Sql::new(
        "SELECT f.id, f.terms, f.term_counts, f.term_total FROM knowledge f WHERE f.tenant_id = ",
    );
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND f.id = ANY(")
        .bind(ids)
        .push("::text[])");
    let rows = sql
        .build()?
        .fetch_all(&mut **tx)
        .await
        .map_err(store_error)?;
    rows.iter()
        .map(|row| {
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
            Ok((col(row, "id")?, text))
        })
        .collect()
}
