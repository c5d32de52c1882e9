//! Group `scale`: how query latency grows with the data, so that a user
//! sees the curve and not one point. Each store is grown in steps and
//! measured at each size before the next load.
//!
//! In process:
//! - `scale_mem_sem_query_p50_us_<n>` and `scale_mem_hybrid_query_p50_us_<n>`:
//!   knowledge as group `semantic` (384-dimensional clustered vectors,
//!   twelve-word texts; top 10; the reader sees its own tenth and the
//!   public 30%) at 10k, 100k and 1M records;
//! - `scale_mem_fact_query_p50_us_<n>` / `_p99_us_<n>`: facts as group
//!   `memory` (entity + domain + clearance, limit 10) at 10k, 100k, 1M.
//!
//! PostgreSQL (needs `DATABASE_URL`; `cargo xtask bench` provides it):
//! - `scale_pg_fact_query_p50_us_<n>` / `_p99_us_<n>`: the same fact query
//!   at 100k, 1M and 10M facts, in schema `openvibe_bench_scale` (loaded
//!   once in steps and kept: about 10 GB at 10M).
//!
//! `OPENVIBE_BENCH_SCALE_MAX=<records>` stops at that size (a quick run:
//! `100000`). Loading 1M pieces of knowledge in process takes minutes (each
//! is linked into the HNSW graph as it is stored), 10M facts on PostgreSQL
//! longer, once.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use openvibe_bench::{report, sample};
use openvibe_in_memory::InMemoryFactStore;
use openvibe_memory::in_memory_stores_with_embedder;
use openvibe_postgres::PgStores;
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{CallerContext, Fact, FactQuery, FactStore};
use sqlx::{Executor, PgPool};

use crate::memory::fill_fact_range;
use crate::pg::{Lcg, clearance, fact, fact_generator_at, fact_queries};
use crate::working::{centres, hybrid_queries_from, item, queries_from, samples_of, user};

const MEM_SIZES: [u32; 3] = [10_000, 100_000, 1_000_000];
const PG_SIZES: [u32; 3] = [100_000, 1_000_000, 10_000_000];
const SCHEMA: &str = "openvibe_bench_scale";
const TENANT: &str = "bench-scale";
const LOAD_BATCH: u32 = 10_000;

/// `10k`, `100k`, `1m`, `10m`.
fn label(n: u32) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}m", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// The largest size to measure (`OPENVIBE_BENCH_SCALE_MAX`).
fn max_size() -> u32 {
    std::env::var("OPENVIBE_BENCH_SCALE_MAX")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(u32::MAX)
}

/// p50 and p99 of the fact queries against `facts` as `reader`.
async fn fact_samples(facts: &dyn FactStore, reader: &CallerContext, n: usize) -> (f64, f64) {
    let pairs: Vec<FactQuery> = fact_queries();
    let mut next = 0usize;
    let samples = sample(n / 4, n, || {
        let query = &pairs[next % pairs.len()];
        next += 1;
        async move {
            match facts.query(reader, query).await {
                Ok(found) => {
                    black_box(found.len());
                }
                Err(e) => eprintln!("fact query failed: {e}"),
            }
        }
    })
    .await;
    (samples.quantile_us(0.50), samples.quantile_us(0.99))
}

async fn in_process() {
    let max = max_size();
    let stores = in_memory_stores_with_embedder(Arc::new(HashEmbedder::new(384)));
    let centres = centres();
    let mut rng = Lcg(42);
    let (sem, hybrid) = (queries_from(&centres, 99), hybrid_queries_from(&centres, 7));
    let mut loaded = 0;
    for n in MEM_SIZES.into_iter().filter(|n| *n <= max) {
        let t0 = Instant::now();
        for i in loaded..n {
            if let Err(e) = stores
                .knowledge
                .store_knowledge(&user(i), item(i, &mut rng, &centres))
                .await
            {
                eprintln!("scale: load failed: {e}");
                return;
            }
        }
        eprintln!(
            "scale: {} pieces of knowledge in process ({:.0}s to load {})",
            n,
            t0.elapsed().as_secs_f64(),
            n - loaded
        );
        loaded = n;
        let (p50, _) = samples_of(&stores.knowledge, sem.clone(), 20, 200).await;
        report(
            &format!("scale_mem_sem_query_p50_us_{}", label(n)),
            p50,
            "us",
        );
        let (p50, _) = samples_of(&stores.knowledge, hybrid.clone(), 20, 200).await;
        report(
            &format!("scale_mem_hybrid_query_p50_us_{}", label(n)),
            p50,
            "us",
        );
    }
    drop(stores);

    let facts = InMemoryFactStore::new();
    let profile = clearance();
    let reader = profile.context("default");
    let mut rng = fact_generator_at(0);
    let mut loaded = 0;
    for n in MEM_SIZES.into_iter().filter(|n| *n <= max) {
        fill_fact_range(&facts, &mut rng, loaded..n).await;
        loaded = n;
        let (p50, p99) = fact_samples(&facts, &reader, 20_000).await;
        report(
            &format!("scale_mem_fact_query_p50_us_{}", label(n)),
            p50,
            "us",
        );
        report(
            &format!("scale_mem_fact_query_p99_us_{}", label(n)),
            p99,
            "us",
        );
    }
}

/// How many facts the scale schema holds (by its markers).
async fn loaded_facts(pool: &PgPool) -> Result<u32, String> {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM bench_dataset WHERE name LIKE 'scale-facts-%'")
            .fetch_all(pool)
            .await
            .map_err(|e| e.to_string())?;
    Ok(names
        .iter()
        .filter_map(|n| n.strip_prefix("scale-facts-")?.parse::<u32>().ok())
        .max()
        .unwrap_or(0))
}

/// Grow the scale schema's facts to `n` (from what its markers say).
async fn grow_facts(pool: &PgPool, pg: &PgStores, n: u32) -> Result<(), String> {
    let from = loaded_facts(pool).await?;
    if from >= n {
        eprintln!("scale: reusing {n} facts in schema {SCHEMA}");
        return Ok(());
    }
    eprintln!("scale: loading facts {from}..{n} into schema {SCHEMA} (once)");
    let system = CallerContext::system().with_tenant(TENANT);
    let mut rng = fact_generator_at(from);
    let t0 = Instant::now();
    let mut i = from;
    while i < n {
        let end = (i + LOAD_BATCH).min(n);
        let batch: Vec<Fact> = (i..end)
            .map(|k| fact(format!("f{k:08}"), k, &mut rng))
            .collect();
        pg.facts()
            .store_batch(&system, batch)
            .await
            .map_err(|e| e.to_string())?;
        i = end;
        if (i - from) % 500_000 == 0 {
            eprintln!(
                "scale:   {i} facts ({:.0}s, {:.0} per s)",
                t0.elapsed().as_secs_f64(),
                f64::from(i - from) / t0.elapsed().as_secs_f64().max(1e-9)
            );
        }
    }
    pool.execute("VACUUM (ANALYZE) facts")
        .await
        .map_err(|e| e.to_string())?;
    sqlx::query(
        "INSERT INTO bench_dataset (name, loaded_at) VALUES ($1, now()) ON CONFLICT DO NOTHING",
    )
    .bind(format!("scale-facts-{n}"))
    .execute(pool)
    .await
    .map_err(|e| e.to_string())?;
    eprintln!("scale: loaded in {:.0}s", t0.elapsed().as_secs_f64());
    Ok(())
}

async fn postgres(url: &str) -> Result<(), String> {
    let max = max_size();
    let pool = crate::pg::schema_pool(url, SCHEMA, 4).await?;
    pool.execute(
        "CREATE TABLE IF NOT EXISTS bench_dataset (name text PRIMARY KEY, loaded_at timestamptz)",
    )
    .await
    .map_err(|e| e.to_string())?;
    let pg = PgStores::from_pool(pool.clone());
    let profile = clearance();
    let reader = profile.context(TENANT);
    let facts = pg.facts();
    for n in PG_SIZES.into_iter().filter(|n| *n <= max) {
        grow_facts(&pool, &pg, n).await?;
        let (p50, p99) = fact_samples(facts.as_ref(), &reader, 5_000).await;
        report(
            &format!("scale_pg_fact_query_p50_us_{}", label(n)),
            p50,
            "us",
        );
        report(
            &format!("scale_pg_fact_query_p99_us_{}", label(n)),
            p99,
            "us",
        );
    }
    pool.close().await;
    Ok(())
}

/// Run the group.
pub async fn run() {
    in_process().await;
    let Some(url) = openvibe_bench::database_url("scale") else {
        return;
    };
    if let Err(e) = postgres(&url).await {
        eprintln!("scale: PostgreSQL part failed: {e}");
    }
}
