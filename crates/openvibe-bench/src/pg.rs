//! PostgreSQL backend benchmarks (group `pg`, needs `DATABASE_URL`;
//! `cargo xtask bench pg` provides it):
//!
//! - `pg_episode_insert_per_s`: batched episode inserts (`store_batch`,
//!   1,000 per statement) into a table that already holds the data set;
//! - `pg_fact_store_p50_us`: one fact stored by one client (sequential,
//!   each its own transaction) into a table that holds the data set;
//! - `pg_fact_query_p50_us` / `_p99_us`: entity + domain + clearance,
//!   limit 10, over 1,000,000 facts;
//! - `pg_assemble_p50_us`: one `MemoryAssembler::assemble` over the
//!   Postgres stores (1,000,000 facts, insights and episodes each).
//!
//! The data set lives in the schema `openvibe_bench`, loaded once with
//! batched inserts and reused by later runs (a marker row records it).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, TimeZone, Utc};
use openvibe_bench::{report, sample};
use openvibe_memory::{AgentMemory, ClearanceProfile, MemoryAssembler, WorkspaceMemory};
use openvibe_postgres::{PgStores, connect_options, migrate, pool_options};
use openvibe_protocols::{
    CallerContext, Classification, ContextAssembler, DEFAULT_TOKEN_BUDGET, Episode, Fact,
    FactQuery, FactStore, Insight, MemoryScope, RecordStore,
};
use sqlx::{Executor, PgPool};

const SCHEMA: &str = "openvibe_bench";
pub(crate) const TENANT: &str = "bench";
/// Bump when the generated data changes, to reload.
const DATASET: &str = "v1";
const RECORDS: u32 = 1_000_000;
pub(crate) const ENTITIES: u32 = 500;
pub(crate) const DOMAINS: u32 = 10;
const LOAD_BATCH: u32 = 10_000;
const INSERT_BATCH: u32 = 1_000;
const INSERT_BATCHES: u32 = 50;

/// A small deterministic generator (same data every run).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        u32::try_from(self.0 >> 33).unwrap_or(0)
    }

    pub(crate) fn unit(&mut self) -> f64 {
        f64::from(self.next() % 1000) / 1000.0
    }
}

pub(crate) fn entity(i: u32) -> String {
    format!("entity{}", i % ENTITIES)
}

pub(crate) fn domain(i: u32) -> String {
    format!("domain{}", (i / ENTITIES) % DOMAINS)
}

/// Reads `domain0..2` up to confidential, `domain3..5` up to internal,
/// the rest public only (as the in-memory benchmark).
pub(crate) fn clearance() -> ClearanceProfile {
    (0..DOMAINS).fold(ClearanceProfile::new("cro"), |p, d| match d {
        0..=2 => p.with_domain(format!("domain{d}"), Classification::Confidential),
        3..=5 => p.with_domain(format!("domain{d}"), Classification::Internal),
        _ => p,
    })
}

fn start() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default()
}

/// 1,000 of the 5,000 (entity, domain) scopes, scattered: the working set
/// of a tenant's active accounts (entity + domain, limit 10).
pub(crate) fn fact_queries() -> Vec<FactQuery> {
    (0..1000u32)
        .map(|k| {
            let i = k.wrapping_mul(7919) % (ENTITIES * DOMAINS);
            FactQuery::new()
                .entity(entity(i))
                .domain(domain(i))
                .limit(10)
        })
        .collect()
}

/// The generator's state before fact `k` of a data set started at `Lcg(42)`
/// ([`fact`] draws twice per fact).
pub(crate) fn fact_generator_at(k: u32) -> Lcg {
    let mut rng = Lcg(42);
    for _ in 0..k {
        rng.next();
        rng.next();
    }
    rng
}

/// Fact `k` of the generated data sets (two draws of `rng`), named `id`.
pub(crate) fn fact(id: String, k: u32, rng: &mut Lcg) -> Fact {
    Fact::new(
        id,
        format!(
            "{} fact {k} about the pipeline and renewal terms",
            entity(k)
        ),
    )
    .entity(entity(k))
    .domain(domain(k))
    .tags([format!("tag{}", k % 37)])
    .classification(Classification::ALL[(rng.next() % 4) as usize])
    .confidence(rng.unit())
    .created_at(start() + Duration::seconds(i64::from(k)))
}

fn episode(i: u32, rng: &mut Lcg) -> Episode {
    Episode {
        id: format!("ep{i:07}"),
        agent_id: "cro".into(),
        operator_id: "revenue_ops".into(),
        node_name: "qualify".into(),
        timestamp: start() + Duration::seconds(i64::from(i)),
        action: "qualify_lead".into(),
        input_summary: format!("Score lead {}", entity(i)),
        output_summary: format!("{{\"score\": {}}}", rng.next() % 100),
        entity: entity(i),
        domain: domain(i),
        tokens_in: 120,
        tokens_out: 40,
        duration_ms: 450,
        ..Episode::default()
    }
}

/// A pool of `connections` on the bench schema (migrated), with the table
/// that records which data sets are loaded.
pub(crate) async fn bench_pool(url: &str, connections: u32) -> Result<PgPool, String> {
    let pool = schema_pool(url, SCHEMA, connections).await?;
    pool.execute(
        "CREATE TABLE IF NOT EXISTS bench_dataset (name text PRIMARY KEY, loaded_at timestamptz)",
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(pool)
}

/// Run one statement on a connection of its own (schema maintenance).
async fn admin_execute(url: &str, statement: String) -> Result<(), String> {
    let admin = pool_options(1)
        .connect_with(connect_options(url).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    admin
        .execute(sqlx::AssertSqlSafe(statement))
        .await
        .map_err(|e| e.to_string())?;
    admin.close().await;
    Ok(())
}

/// Drop `schema` and everything in it (a group's previous run).
pub(crate) async fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
    admin_execute(url, format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await
}

/// A pool of `connections` on `schema` (created when missing, then `public`
/// for `vector`), migrated.
pub(crate) async fn schema_pool(
    url: &str,
    schema: &str,
    connections: u32,
) -> Result<PgPool, String> {
    admin_execute(url, format!("CREATE SCHEMA IF NOT EXISTS {schema}")).await?;
    let options = connect_options(url)
        .map_err(|e| e.to_string())?
        .options([("search_path", format!("{schema},public"))]);
    let pool = pool_options(connections)
        .connect_with(options)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    migrate(&pool).await.map_err(|e| e.to_string())?;
    Ok(pool)
}

/// A transaction confined to `tenant` (row-level security shows it only
/// that tenant's rows).
pub(crate) async fn tenant_tx(
    pool: &PgPool,
    tenant: &str,
) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, String> {
    let mut tx = pool.begin().await.map_err(|e| e.to_string())?;
    sqlx::query("SELECT set_config('openvibe.tenant_id', $1, true)")
        .bind(tenant)
        .execute(&mut *tx)
        .await
        .map_err(|e| e.to_string())?;
    Ok(tx)
}

/// Run `statement` in a transaction confined to `tenant` (row-level security).
pub(crate) async fn set_tenant_and(
    pool: &PgPool,
    tenant: &str,
    statement: &str,
) -> Result<(), String> {
    let mut tx = tenant_tx(pool, tenant).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_owned()))
        .execute(&mut *tx)
        .await
        .map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())
}

/// Load 1,000,000 facts, insights and episodes unless already there.
pub(crate) async fn ensure_loaded(pool: &PgPool, pg: &PgStores) -> Result<(), String> {
    let loaded: Option<String> =
        sqlx::query_scalar("SELECT name FROM bench_dataset WHERE name = $1")
            .bind(DATASET)
            .fetch_optional(pool)
            .await
            .map_err(|e| e.to_string())?;
    if loaded.is_some() {
        eprintln!("pg: reusing the {RECORDS}-record data set in schema {SCHEMA}");
        return Ok(());
    }
    eprintln!("pg: loading {RECORDS} facts, insights and episodes into schema {SCHEMA} (once)");
    let t0 = Instant::now();
    for table in ["facts", "insights", "episodes"] {
        // A half-loaded earlier attempt: start over.
        set_tenant_and(pool, TENANT, &format!("DELETE FROM {table}")).await?;
    }
    let system = CallerContext::system().with_tenant(TENANT);
    let cro = CallerContext::agent("cro").with_tenant(TENANT);
    let mut rng = Lcg(42);
    let mut i = 0;
    while i < RECORDS {
        let end = (i + LOAD_BATCH).min(RECORDS);
        let facts: Vec<Fact> = (i..end)
            .map(|k| fact(format!("f{k:07}"), k, &mut rng))
            .collect();
        pg.facts()
            .store_batch(&system, facts)
            .await
            .map_err(|e| e.to_string())?;
        let insights: Vec<Insight> = (i..end)
            .map(|k| {
                Insight::new(
                    format!("ins{k:07}"),
                    "cro",
                    format!(
                        "Leads like {} convert when a VP sponsor joins early ({k})",
                        entity(k)
                    ),
                    rng.unit(),
                )
                .entity(entity(k))
                .domain(domain(k))
                .created_at(start() + Duration::seconds(i64::from(k)))
            })
            .collect();
        pg.insights()
            .store_batch(&cro, insights)
            .await
            .map_err(|e| e.to_string())?;
        let episodes: Vec<Episode> = (i..end).map(|k| episode(k, &mut rng)).collect();
        pg.episodes()
            .store_batch(&cro, episodes)
            .await
            .map_err(|e| e.to_string())?;
        i = end;
        if i % 100_000 == 0 {
            eprintln!(
                "pg:   {i} of each loaded ({:.0}s)",
                t0.elapsed().as_secs_f64()
            );
        }
    }
    for table in ["facts", "insights", "episodes"] {
        pool.execute(sqlx::AssertSqlSafe(format!("VACUUM (ANALYZE) {table}")))
            .await
            .map_err(|e| e.to_string())?;
    }
    sqlx::query("INSERT INTO bench_dataset (name, loaded_at) VALUES ($1, now())")
        .bind(DATASET)
        .execute(pool)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("pg: loaded in {:.0}s", t0.elapsed().as_secs_f64());
    Ok(())
}

/// Batched inserts into a scratch tenant of the loaded table, then removed.
async fn episode_inserts(pool: &PgPool, pg: &PgStores) -> Result<f64, String> {
    let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
    let tenant = format!("ins{nanos}");
    let ctx = CallerContext::agent("cro").with_tenant(tenant.clone());
    let mut rng = Lcg(7);
    let batches: Vec<Vec<Episode>> = (0..INSERT_BATCHES)
        .map(|b| {
            (b * INSERT_BATCH..(b + 1) * INSERT_BATCH)
                .map(|i| episode(i, &mut rng))
                .collect()
        })
        .collect();
    let t0 = Instant::now();
    let mut inserted = 0u64;
    for batch in batches {
        inserted += pg
            .episodes()
            .store_batch(&ctx, batch)
            .await
            .map_err(|e| e.to_string())?;
    }
    let secs = t0.elapsed().as_secs_f64();
    set_tenant_and(pool, &tenant, "DELETE FROM episodes").await?;
    Ok(inserted as f64 / secs.max(1e-9))
}

/// One client storing facts one by one into a scratch tenant of the loaded
/// table (each a write as an agent makes it: its own transaction), then
/// removed. Returns the p50 in microseconds.
async fn fact_stores(pool: &PgPool, pg: &PgStores) -> Result<f64, String> {
    let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
    let tenant = format!("fs{nanos}");
    let ctx = CallerContext::agent("cro").with_tenant(tenant.clone());
    let facts = pg.facts();
    let mut i = 0u32;
    let failed = std::cell::Cell::new(0usize);
    let samples = sample(200, 2_000, || {
        i += 1;
        let fact = Fact::new(format!("f{i}"), format!("note {i} about lead {}", i % 97))
            .entity(entity(i))
            .domain(domain(i));
        let (facts, ctx, failed) = (&facts, &ctx, &failed);
        async move {
            if let Err(e) = facts.store(ctx, fact).await {
                failed.set(failed.get() + 1);
                eprintln!("fact store failed: {e}");
            }
        }
    })
    .await;
    set_tenant_and(pool, &tenant, "DELETE FROM facts").await?;
    if failed.get() > 0 {
        return Err(format!("{} fact stores failed", failed.get()));
    }
    Ok(samples.quantile_us(0.50))
}

async fn run_inner(url: &str) -> Result<(), String> {
    let pool = bench_pool(url, 4).await?;
    let pg = PgStores::from_pool(pool.clone());
    ensure_loaded(&pool, &pg).await?;

    // --- batched episode inserts ---
    let per_s = episode_inserts(&pool, &pg).await?;
    report("pg_episode_insert_per_s", per_s, "per_s");
    report("pg_fact_store_p50_us", fact_stores(&pool, &pg).await?, "us");

    // --- fact query: entity + domain + clearance, limit 10, over 1M facts ---
    let profile = clearance();
    let reader = profile.context(TENANT);
    let pairs: Vec<FactQuery> = fact_queries();
    let facts = pg.facts();
    if let Some(q) = pairs.get(1) {
        match facts.explain_query(&reader, q).await {
            Ok(plan) => eprintln!("pg: plan of the fact query ({q:?}):\n{plan}"),
            Err(e) => eprintln!("pg: explain failed: {e}"),
        }
    }
    let mut next = 0usize;
    let empty = std::cell::Cell::new(0usize);
    let samples = sample(1_000, 5_000, || {
        let query = &pairs[next % pairs.len()];
        next += 1;
        let facts = &facts;
        let reader = &reader;
        let empty = &empty;
        async move {
            match facts.query(reader, query).await {
                Ok(found) if found.is_empty() => empty.set(empty.get() + 1),
                Ok(found) => {
                    black_box(found.len());
                }
                Err(e) => eprintln!("query failed: {e}"),
            }
        }
    })
    .await;
    if empty.get() > 0 {
        eprintln!("warning: {} fact queries were empty", empty.get());
    }
    report("pg_fact_query_p50_us", samples.quantile_us(0.50), "us");
    report("pg_fact_query_p99_us", samples.quantile_us(0.99), "us");

    // --- one assembly over the Postgres stores ---
    let stores = pg.stores();
    let workspace = WorkspaceMemory::with_store(stores.facts.clone() as Arc<dyn FactStore>);
    let memory = AgentMemory::new("cro")
        .with_stores(stores.episodes.clone(), stores.insights.clone())
        .with_workspace(workspace)
        .with_context(CallerContext::agent("cro").with_tenant(TENANT));
    let assembler = MemoryAssembler::new(memory, profile);
    let scopes: Vec<MemoryScope> = (0..1000u32)
        .map(|k| {
            let i = k.wrapping_mul(7919) % RECORDS;
            MemoryScope {
                entity: Some(entity(i)),
                domain: Some(domain(i)),
                ..MemoryScope::default()
            }
        })
        .collect();
    let mut next = 0usize;
    let empty = std::cell::Cell::new(0usize);
    let samples = sample(200, 2_000, || {
        let scope = &scopes[next % scopes.len()];
        next += 1;
        let assembler = &assembler;
        let empty = &empty;
        async move {
            match assembler.assemble(scope, DEFAULT_TOKEN_BUDGET).await {
                Ok(text) if text.is_empty() => empty.set(empty.get() + 1),
                Ok(text) => {
                    black_box(text);
                }
                Err(e) => eprintln!("assemble failed: {e}"),
            }
        }
    })
    .await;
    if empty.get() > 0 {
        eprintln!("warning: {} assemblies were empty", empty.get());
    }
    report("pg_assemble_p50_us", samples.quantile_us(0.50), "us");
    pool.close().await;
    Ok(())
}

/// Run the group.
pub async fn run() {
    let Some(url) = openvibe_bench::database_url("pg") else {
        return;
    };
    if let Err(e) = run_inner(&url).await {
        eprintln!("pg: benchmark failed: {e}");
    }
}
