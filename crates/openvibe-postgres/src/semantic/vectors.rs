//! Knowledge vectors: the vector list of a query, and the indexer that
//! moves freshly written vectors into the HNSW graph.
//!
//! A knowledge write stores its vectors *pending* (`indexed` false,
//! migration 0013): the side table's HNSW index is partial (`WHERE
//! indexed`), so the write does not walk the graph (~1 ms a row at 100,000
//! rows of 384 dimensions, a hundred times the rest of the write). After
//! the write commits, the store's [`Indexer`] marks the tenant's pending
//! rows indexed in small batches, in the background; each such update
//! inserts the row into the graph. A query reads the HNSW index for the
//! indexed rows and compares the pending ones exactly, so a vector is found
//! from the moment its write commits, indexed or not.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use openvibe_protocols::{CallerContext, Knowledge, KnowledgeFilter, StoreError};
use openvibe_retrieval::{RankKey, rank_key, top_by_score};
use pgvector::Vector;
use sqlx::PgPool;

use crate::access::{push_knowledge_filters, push_knowledge_readable};
use crate::error::store_error;
use crate::records::end_read;
use crate::rows::{col, columns, count_col};
use crate::sql::Sql;
use crate::tx::{Tx, begin};

/// Rows an indexer transaction marks indexed (each one an HNSW insert, so
/// a batch holds its row locks for a fraction of a second).
pub(super) const INDEX_BATCH: i64 = 128;

/// The vector list: the `limit` nearest readable knowledge the query's
/// filters keep, as `(key, cosine similarity)`: through the HNSW index
/// among the indexed vectors, exactly among the pending ones. With
/// `records`, each listed record too (with its vector), by id: a query of
/// this list alone needs no second statement to fetch them.
#[allow(clippy::too_many_arguments)]
pub(super) async fn nearest(
    tx: &mut Tx,
    table: &str,
    model: &str,
    ctx: &CallerContext,
    filter: &KnowledgeFilter,
    vector: Vec<f32>,
    limit: usize,
    records: bool,
) -> Result<(Vec<(RankKey, f32)>, HashMap<String, Knowledge>), StoreError> {
    let select = if records {
        format!("(SELECT {}, e.embedding", columns(super::COLS, "f."))
    } else {
        "(SELECT f.id, f.created_at".to_owned()
    };
    // The vector and the limit are sent once; each arm names their
    // placeholders.
    let mut sql = Sql::new(&format!("{select}, (e.embedding <=> "));
    sql.bind_raw(Vector::from(vector));
    let vector = sql.last_placeholder();
    let mut limit_at: Option<String> = None;
    for (i, indexed) in ["e.indexed", "NOT e.indexed"].into_iter().enumerate() {
        if i > 0 {
            sql.push(&format!(" UNION ALL {select}, (e.embedding <=> {vector}"));
        }
        sql.push(&format!(
            ") AS distance FROM {table} e JOIN knowledge f ON f.tenant_id = e.tenant_id \
                 AND f.id = e.record_id WHERE {indexed} AND e.tenant_id = "
        ))
        .bind(ctx.tenant_id().to_owned())
        .push(" AND e.record_kind = 'knowledge' AND e.model = ")
        .bind(model.to_owned())
        .push(" AND ");
        push_knowledge_readable(&mut sql, ctx, filter.include_public);
        push_knowledge_filters(&mut sql, filter);
        // Distance alone, so that the HNSW index gives the order (a second
        // sort key would force a sort of every candidate); ties are ordered
        // by rank key below.
        sql.push(&format!(" ORDER BY e.embedding <=> {vector} LIMIT "));
        match &limit_at {
            Some(at) => {
                sql.push(at);
            }
            None => {
                sql.bind(i64::try_from(limit).unwrap_or(i64::MAX));
                limit_at = Some(sql.last_placeholder());
            }
        }
        sql.push(")");
    }
    let rows = sql
        .build()?
        .fetch_all(&mut **tx)
        .await
        .map_err(store_error)?;
    let mut found = HashMap::new();
    let mut scored = Vec::with_capacity(rows.len());
    for row in &rows {
        let id: String = col(row, "id")?;
        let distance: f64 = col(row, "distance")?;
        // Vectors near `f32::MAX` overflow pgvector's sums (NaN): no
        // similarity, as for a zero vector.
        let score = if distance.is_finite() {
            (1.0 - distance) as f32
        } else {
            0.0
        };
        scored.push((rank_key(col(row, "created_at")?, &id), score));
        if records {
            found.insert(id, super::decode(row)?);
        }
    }
    Ok((top_by_score(scored, limit), found))
}

/// Marks a tenant's pending knowledge vectors indexed, [`INDEX_BATCH`] rows
/// a transaction, until none is left; returns how many it marked.
/// Concurrent indexers (other processes) skip each other's rows.
pub(super) async fn index_tenant(
    pool: &PgPool,
    table: &str,
    model: &str,
    tenant: &str,
) -> Result<u64, StoreError> {
    let ctx = CallerContext::system().with_tenant(tenant.to_owned());
    let mut total = 0u64;
    loop {
        // The batch is chosen once (a materialized CTE: as a subquery the
        // planner may rescan it per row), then updated by primary key.
        let mut sql = Sql::new(&format!(
            "WITH p AS MATERIALIZED (SELECT record_id FROM {table} WHERE tenant_id = "
        ));
        sql.bind(tenant.to_owned())
            .push(" AND record_kind = 'knowledge' AND NOT indexed LIMIT ")
            .bind(INDEX_BATCH)
            .push(&format!(
                " FOR UPDATE SKIP LOCKED) UPDATE {table} e SET indexed = true \
                 WHERE e.tenant_id = "
            ))
            .bind(tenant.to_owned())
            .push(" AND e.record_kind = 'knowledge' AND e.model = ")
            .bind(model.to_owned())
            .push(" AND e.record_id IN (SELECT record_id FROM p) AND NOT e.indexed");
        let mut tx = begin(pool, &ctx).await?;
        let marked = sql
            .build()?
            .execute(&mut *tx)
            .await
            .map_err(store_error)?
            .rows_affected();
        tx.commit().await.map_err(store_error)?;
        total += marked;
        if marked < INDEX_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// How many of a tenant's knowledge vectors wait to be indexed.
pub(super) async fn pending(
    pool: &PgPool,
    table: &str,
    ctx: &CallerContext,
) -> Result<u64, StoreError> {
    let mut sql = Sql::new(&format!(
        "SELECT count(*) AS n FROM {table} WHERE tenant_id = "
    ));
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND record_kind = 'knowledge' AND NOT indexed");
    let mut tx = begin(pool, ctx).await?;
    let row = sql
        .build()?
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
    end_read(tx);
    count_col(&row, "n")
}

/// The background indexer of a store: tenants whose writes left pending
/// vectors, drained one at a time by a task spawned on the current tokio
/// runtime (at most one per store and its clones). A failure is logged and
/// leaves the rows pending, still found by queries, for the tenant's next
/// write or [`index_tenant`] call.
#[derive(Clone)]
pub(super) struct Indexer {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    table: String,
    model: String,
    state: Mutex<State>,
    /// Whether writes start the task (else only `index_pending` indexes).
    enabled: AtomicBool,
}

#[derive(Default)]
struct State {
    tenants: BTreeSet<String>,
    running: bool,
}

impl Indexer {
    pub(super) fn new(pool: PgPool, table: String, model: String) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool,
                table,
                model,
                state: Mutex::new(State::default()),
                enabled: AtomicBool::new(true),
            }),
        }
    }

    /// Whether writes start the background task.
    pub(super) fn enable(&self, on: bool) {
        self.inner.enabled.store(on, Ordering::Relaxed);
    }

    /// Index `tenant`'s pending vectors soon: start the task unless it runs.
    /// Disabled, or outside a tokio runtime, nothing starts (the rows stay
    /// pending).
    pub(super) fn kick(&self, tenant: &str) {
        if !self.inner.enabled.load(Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        {
            let mut state = self
                .inner
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            state.tenants.insert(tenant.to_owned());
            if state.running {
                return;
            }
            state.running = true;
        }
        runtime.spawn(drain(self.inner.clone()));
    }
}

/// Index tenant after tenant until none is queued.
async fn drain(inner: Arc<Inner>) {
    loop {
        let tenant = {
            let mut state = inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            match state.tenants.pop_first() {
                Some(tenant) => tenant,
                None => {
                    state.running = false;
                    return;
                }
            }
        };
        if let Err(e) = index_tenant(&inner.pool, &inner.table, &inner.model, &tenant).await {
            tracing::warn!(tenant = %tenant, error = %e, "knowledge vectors left pending");
        }
    }
}
