//! Working and semantic memory benchmarks.
//!
//! Group `semantic` (in-process):
//! - `mem_sem_insert_per_s`: pieces of knowledge stored per second, one by
//!   one, into the default store (each linked into the HNSW graph once the
//!   tenant holds 4,096);
//! - `mem_sem_query_p50_us`: top 10 by cosine over 100,000 pieces of
//!   knowledge of 384 dimensions (the default: an HNSW graph walked with
//!   the access rule inside);
//! - `mem_hybrid_query_p50_us`: top 10 by hybrid retrieval (three words of
//!   text and a vector; BM25 over the reader's postings with query
//!   expansion, the graph, fusion);
//! - `mem_sem_exact_query_p50_us`: `mem_sem_query_p50_us` with
//!   `VectorSearch::EXACT` (every vector scanned).
//!
//! Group `pg_working` (needs `DATABASE_URL`; `cargo xtask bench` provides it):
//! - `wm_record_action_per_s`: 8 concurrent writers appending to one plan's
//!   action history (atomic append: one statement, one round trip each;
//!   after a warm-up round, so the pool's connections are open);
//! - `sem_query_p50_us` / `sem_query_p99_us`: top 10 over 100,000 pieces of
//!   knowledge of 384 dimensions (HNSW, privacy predicate: the caller's own
//!   plus public knowledge);
//! - `hybrid_query_p50_us` / `hybrid_query_p99_us`: the same with three
//!   words of text too (postings candidates, BM25 with query expansion, HNSW,
//!   fusion);
//! - `sem_upsert_per_s`: batched knowledge upserts (500 per call) into a
//!   table that holds the data set (the vectors written pending, searched
//!   exactly until the store's background indexer puts them in the HNSW
//!   graph); `sem_upsert_indexed_per_s`: the same rows over the time until
//!   the last of them is indexed. Measured after
//!   the queries, then its 10,000 rows are deleted and the tables vacuumed,
//!   so that no run's queries walk dead entries of the HNSW graph or wait
//!   on autovacuum repairing it (a manual `VACUUM` of those tables took
//!   39 s).
//!
//! Vectors are dense and clustered like sentence embeddings (1,000 random
//! unit centres, each item a centre plus Gaussian noise, normalised;
//! queries likewise), generated deterministically. The test embedder's
//! sparse hashed vectors would be nearly orthogonal to each other, which is
//! a pathological input for HNSW and not what a real model produces.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use openvibe_bench::{report, sample};
use openvibe_in_memory::InMemoryWorkingStore;
use openvibe_memory::in_memory_stores_with_embedder;
use openvibe_postgres::PgStores;
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{
    CallerContext, KnowledgeQuery, KnowledgeStore, NewKnowledge, NewPlan, PlanStateStore, PlanStore,
};
use openvibe_retrieval::VectorSearch;
use sqlx::PgPool;

use crate::pg::{Lcg, bench_pool, set_tenant_and};

const ITEMS: u32 = 100_000;
const DIMS: usize = 384;
const USERS: u32 = 10;
const VOCABULARY: u32 = 5_000;
const WORDS: u32 = 12;
const LOAD_BATCH: u32 = 1_000;
/// Bumped when the stored form changes (v3: analyzed terms for full text).
const DATASET: &str = "knowledge-v3";
const CENTRES: u32 = 1_000;
const NOISE: f32 = 0.6;
const TENANT: &str = "bench-sem";

/// A text of `WORDS` words, skewed towards frequent ones.
fn text(rng: &mut Lcg, words: u32) -> String {
    (0..words)
        .map(|_| {
            let a = rng.next() % VOCABULARY;
            let b = rng.next() % VOCABULARY;
            format!("w{}", a.min(b))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn user(i: u32) -> CallerContext {
    CallerContext::user(format!("user{}", i % USERS)).with_tenant(TENANT)
}

/// A standard normal sample (Box–Muller).
fn gaussian(rng: &mut Lcg) -> f32 {
    let u1 = (f64::from(rng.next() % 1_000_000) + 1.0) / 1_000_001.0;
    let u2 = f64::from(rng.next() % 1_000_000) / 1_000_000.0;
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

/// The cluster centres (the same every run).
pub(crate) fn centres() -> Vec<Vec<f32>> {
    let mut rng = Lcg(2024);
    (0..CENTRES)
        .map(|_| normalised((0..DIMS).map(|_| gaussian(&mut rng)).collect()))
        .collect()
}

/// A point near a random centre.
fn near_centre(centres: &[Vec<f32>], rng: &mut Lcg) -> Vec<f32> {
    let c = &centres[(rng.next() % CENTRES) as usize];
    let scale = NOISE / (DIMS as f32).sqrt();
    normalised(c.iter().map(|x| x + scale * gaussian(rng)).collect())
}

pub(crate) fn item(i: u32, rng: &mut Lcg, centres: &[Vec<f32>]) -> NewKnowledge {
    let content = format!("{} (item {i})", text(rng, WORDS));
    NewKnowledge {
        embedding: Some(near_centre(centres, rng)),
        is_public: i % 10 < 3,
        tags: vec![format!("t{}", i % 20)],
        ..NewKnowledge::new(content)
    }
}

fn queries(centres: &[Vec<f32>]) -> Vec<KnowledgeQuery> {
    queries_from(centres, 99)
}

pub(crate) fn queries_from(centres: &[Vec<f32>], seed: u64) -> Vec<KnowledgeQuery> {
    let mut rng = Lcg(seed);
    (0..500)
        .map(|_| KnowledgeQuery {
            top_k: 10,
            ..KnowledgeQuery::by_embedding(near_centre(centres, &mut rng))
        })
        .collect()
}

/// Hybrid queries: three words of the vocabulary and a vector.
fn hybrid_queries(centres: &[Vec<f32>]) -> Vec<KnowledgeQuery> {
    hybrid_queries_from(centres, 7)
}

pub(crate) fn hybrid_queries_from(centres: &[Vec<f32>], seed: u64) -> Vec<KnowledgeQuery> {
    let mut rng = Lcg(seed);
    (0..500)
        .map(|_| KnowledgeQuery {
            top_k: 10,
            text: Some(text(&mut rng, 3)),
            ..KnowledgeQuery::by_embedding(near_centre(centres, &mut rng))
        })
        .collect()
}

async fn query_samples(store: &Arc<dyn KnowledgeStore>, warmup: usize, n: usize) -> (f64, f64) {
    samples_of(store, queries(&centres()), warmup, n).await
}

pub(crate) async fn samples_of(
    store: &Arc<dyn KnowledgeStore>,
    queries: Vec<KnowledgeQuery>,
    warmup: usize,
    n: usize,
) -> (f64, f64) {
    let reader = user(0);
    let mut next = 0usize;
    let samples = sample(warmup, n, || {
        let q = &queries[next % queries.len()];
        next += 1;
        let store = store.clone();
        let reader = &reader;
        async move {
            match store.query_knowledge(reader, q).await {
                Ok(hits) => {
                    black_box(hits.len());
                }
                Err(e) => eprintln!("knowledge query failed: {e}"),
            }
        }
    })
    .await;
    (samples.quantile_us(0.50), samples.quantile_us(0.99))
}

/// Store the `ITEMS` pieces of knowledge; returns how many per second.
async fn load_memory(store: &dyn KnowledgeStore, centres: &[Vec<f32>]) -> Result<f64, String> {
    let mut rng = Lcg(42);
    let t0 = Instant::now();
    for i in 0..ITEMS {
        store
            .store_knowledge(&user(i), item(i, &mut rng, centres))
            .await
            .map_err(|e| format!("semantic: load failed: {e}"))?;
    }
    Ok(f64::from(ITEMS) / t0.elapsed().as_secs_f64().max(1e-9))
}

/// In-process semantic query latency: the default store (an HNSW graph
/// over the vectors), then the exact scan over the same data.
pub async fn run_memory() {
    let stores = in_memory_stores_with_embedder(Arc::new(HashEmbedder::new(DIMS)));
    let centres = centres();
    match load_memory(stores.knowledge.as_ref(), &centres).await {
        Ok(per_s) => report("mem_sem_insert_per_s", per_s, "per_s"),
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    }
    let (p50, _) = query_samples(&stores.knowledge, 100, 2_000).await;
    report("mem_sem_query_p50_us", p50, "us");
    let (p50, _) = samples_of(&stores.knowledge, hybrid_queries(&centres), 100, 2_000).await;
    report("mem_hybrid_query_p50_us", p50, "us");
    drop(stores);
    let exact: Arc<dyn KnowledgeStore> = Arc::new(
        InMemoryWorkingStore::new()
            .with_embedder(Arc::new(HashEmbedder::new(DIMS)))
            .with_vector_search(VectorSearch::EXACT),
    );
    if let Err(e) = load_memory(exact.as_ref(), &centres).await {
        eprintln!("{e}");
        return;
    }
    let (p50, _) = query_samples(&exact, 20, 200).await;
    report("mem_sem_exact_query_p50_us", p50, "us");
}

/// Load the 100,000 pieces of knowledge unless already there.
async fn ensure_loaded(pool: &PgPool, pg: &PgStores, table: &str) -> Result<(), String> {
    let loaded: Option<String> =
        sqlx::query_scalar("SELECT name FROM bench_dataset WHERE name = $1")
            .bind(DATASET)
            .fetch_optional(pool)
            .await
            .map_err(|e| e.to_string())?;
    if loaded.is_some() {
        eprintln!("pg_working: reusing the {ITEMS}-item knowledge set");
        // Postings written by a migration's backfill answer index-only
        // scans once vacuum has marked their pages all-visible.
        sqlx::raw_sql("VACUUM (ANALYZE) knowledge_postings")
            .execute(pool)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    eprintln!("pg_working: loading {ITEMS} pieces of knowledge ({DIMS} dimensions, once)");
    let t0 = Instant::now();
    set_tenant_and(pool, TENANT, "DELETE FROM knowledge").await?;
    // Bulk load without the HNSW index, then build it once (much faster
    // than maintaining it row by row).
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP INDEX IF EXISTS {table}_hnsw"
    )))
    .execute(pool)
    .await
    .map_err(|e| e.to_string())?;
    let centres = centres();
    let store = pg.knowledge();
    // The vectors stay pending during the load and are marked indexed in
    // one statement before the index is built.
    store.set_background_indexing(false);
    let mut rng = Lcg(42);
    let mut i = 0;
    while i < ITEMS {
        let end = (i + LOAD_BATCH).min(ITEMS);
        for u in 0..USERS {
            let batch: Vec<NewKnowledge> = (i..end)
                .filter(|k| k % USERS == u)
                .map(|k| item(k, &mut rng, &centres))
                .collect();
            store
                .store_knowledge_batch(&user(u), batch)
                .await
                .map_err(|e| e.to_string())?;
        }
        i = end;
        if i % 20_000 == 0 {
            eprintln!(
                "pg_working:   {i} loaded ({:.0}s)",
                t0.elapsed().as_secs_f64()
            );
        }
    }
    store.set_background_indexing(true);
    set_tenant_and(pool, TENANT, &format!("UPDATE {table} SET indexed = true")).await?;
    maintain(
        pool,
        [
            "SET maintenance_work_mem = '512MB'".to_owned(),
            // The side table's indexes as the migrations define them.
            format!("SELECT openvibe_deferred_vector_index('{table}')"),
            "VACUUM (ANALYZE) knowledge".to_owned(),
            "VACUUM (ANALYZE) knowledge_postings".to_owned(),
            format!("VACUUM (ANALYZE) {table}"),
        ],
    )
    .await?;
    sqlx::query("INSERT INTO bench_dataset (name, loaded_at) VALUES ($1, now())")
        .bind(DATASET)
        .execute(pool)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("pg_working: loaded in {:.0}s", t0.elapsed().as_secs_f64());
    Ok(())
}

/// 8 writers × 500 appends to one plan's action history, after a warm-up
/// round of 8 × 25 under another key (the pool opens its connections and
/// each prepares the statement: a running service's steady state).
async fn record_actions(pool: &PgPool, pg: &PgStores) -> Result<f64, String> {
    const WRITERS: usize = 8;
    const EACH: usize = 500;
    let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
    let tenant = format!("wm{nanos}");
    let ctx = CallerContext::user("planner").with_tenant(tenant.clone());
    let working = pg.working();
    let plan = working
        .create_plan(
            &ctx,
            NewPlan {
                goal_event: "bench.goal".into(),
                ..NewPlan::default()
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let round = |key: &'static str, each: usize| {
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let working = working.clone();
                let ctx = ctx.clone();
                let plan = plan.id.clone();
                tokio::spawn(async move {
                    for i in 0..each {
                        working
                            .append_state(&ctx, &plan, key, serde_json::json!(format!("w{w}.{i}")))
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    Ok::<(), String>(())
                })
            })
            .collect();
        async move {
            for t in tasks {
                t.await.map_err(|e| e.to_string())??;
            }
            Ok::<(), String>(())
        }
    };
    round("warm_up", 25).await?;
    let t0 = Instant::now();
    round("action_history", EACH).await?;
    let secs = t0.elapsed().as_secs_f64();
    let entry = working
        .get_state(&ctx, &plan.id, "action_history")
        .await
        .map_err(|e| e.to_string())?;
    let count = entry
        .and_then(|e| e.value.as_array().map(Vec::len))
        .unwrap_or(0);
    if count != WRITERS * EACH {
        return Err(format!(
            "lost updates: {count} actions instead of {}",
            WRITERS * EACH
        ));
    }
    set_tenant_and(pool, &tenant, "DELETE FROM plans").await?;
    Ok((WRITERS * EACH) as f64 / secs.max(1e-9))
}

/// 20 batches of 500 new pieces of knowledge into a scratch tenant of the
/// loaded tables (the store's background indexer putting their vectors in
/// the HNSW graph meanwhile), then removed.
async fn upserts(pool: &PgPool, pg: &PgStores, table: &str) -> Result<f64, String> {
    let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
    let tenant = format!("up{nanos}");
    let ctx = CallerContext::user("writer").with_tenant(tenant.clone());
    let centres = centres();
    let mut rng = Lcg(7);
    let batches: Vec<Vec<NewKnowledge>> = (0..20u32)
        .map(|b| {
            (b * 500..(b + 1) * 500)
                .map(|i| item(i, &mut rng, &centres))
                .collect()
        })
        .collect();
    let store = pg.knowledge();
    let t0 = Instant::now();
    let mut stored = 0u64;
    for batch in batches {
        stored += store
            .store_knowledge_batch(&ctx, batch)
            .await
            .map_err(|e| e.to_string())?;
    }
    let secs = t0.elapsed().as_secs_f64();
    // The background indexer has been at it since the first batch: wait
    // until every vector is in the HNSW graph.
    store.index_pending(&ctx).await.map_err(|e| e.to_string())?;
    report(
        "sem_upsert_indexed_per_s",
        stored as f64 / t0.elapsed().as_secs_f64().max(1e-9),
        "per_s",
    );
    set_tenant_and(pool, &tenant, "DELETE FROM knowledge").await?;
    eprintln!("pg_working: vacuuming after the upserts (HNSW repair takes a while) ...");
    maintain(
        pool,
        [format!(
            "VACUUM (ANALYZE) knowledge, knowledge_postings, {table}"
        )],
    )
    .await?;
    Ok(stored as f64 / secs.max(1e-9))
}

/// Run maintenance `statements` in order on one connection, without the
/// pool's statement timeout (an HNSW build or repair takes minutes), then
/// restore the connection's settings.
async fn maintain<const N: usize>(pool: &PgPool, statements: [String; N]) -> Result<(), String> {
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    let set = ["SET statement_timeout = 0".to_owned()];
    let reset = [
        "RESET statement_timeout".to_owned(),
        "RESET maintenance_work_mem".to_owned(),
    ];
    for statement in set.into_iter().chain(statements).chain(reset) {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut *conn)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

async fn run_inner(url: &str) -> Result<(), String> {
    // The SDK's default pool (what `PgStores::connect` opens): with fewer
    // connections than the 8 writers, the writers queue in the client.
    let pool = bench_pool(url, openvibe_postgres::DEFAULT_MAX_CONNECTIONS).await?;
    let pg = PgStores::from_pool(pool.clone())
        .with_embedder(Arc::new(HashEmbedder::new(DIMS)))
        .await
        .map_err(|e| e.to_string())?;
    let table: String =
        sqlx::query_scalar("SELECT table_name FROM embedding_models WHERE model = $1")
            .bind(HashEmbedder::MODEL)
            .fetch_one(&pool)
            .await
            .map_err(|e| e.to_string())?;
    ensure_loaded(&pool, &pg, &table).await?;
    report(
        "wm_record_action_per_s",
        record_actions(&pool, &pg).await?,
        "per_s",
    );
    let store: Arc<dyn KnowledgeStore> = pg.knowledge();
    // Warm the caches with queries of their own (500 of each kind, other
    // seeds, not measured): after a server restart the index pages are on
    // disk, and the first pass measured the disk (p99 187 ms once).
    samples_of(&store, queries_from(&centres(), 1), 500, 0).await;
    samples_of(&store, hybrid_queries_from(&centres(), 2), 500, 0).await;
    let (p50, p99) = query_samples(&store, 50, 1_000).await;
    report("sem_query_p50_us", p50, "us");
    report("sem_query_p99_us", p99, "us");
    let (p50, p99) = samples_of(&store, hybrid_queries(&centres()), 50, 1_000).await;
    report("hybrid_query_p50_us", p50, "us");
    report("hybrid_query_p99_us", p99, "us");
    report(
        "sem_upsert_per_s",
        upserts(&pool, &pg, &table).await?,
        "per_s",
    );
    Ok(())
}

/// The Postgres working and semantic memory benchmarks.
pub async fn run_pg() {
    let Some(url) = openvibe_bench::database_url("pg_working") else {
        return;
    };
    if let Err(e) = run_inner(&url).await {
        eprintln!("pg_working: benchmark failed: {e}");
    }
}
