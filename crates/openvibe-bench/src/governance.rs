//! Governance overhead on PostgreSQL (group `pg_gov`, needs `DATABASE_URL`;
//! `cargo xtask bench pg_gov` provides it), over the `pg` group's
//! 1,000,000-fact data set:
//!
//! - `gov_fact_query_base_p50_us`: the `pg` group's fact query (entity +
//!   domain + clearance, limit 10) by an ungoverned caller, searches not
//!   audited;
//! - `gov_fact_query_governed_p50_us`: the same query by a governed caller
//!   (namespace grants in the SQL predicate and in the row-level security
//!   settings, four readable namespaces) with search audit on;
//! - `gov_policy_overhead_pct`: how much slower the governed query is at
//!   the median.
//!
//! - `gov_project_slice_p50_us`: seed 003's project-scoped read (a caller
//!   granted the project-scoped `developer` namespace, in one of 20
//!   projects of 1,000 facts each, among the 1,000,000), the ten most
//!   confident: one namespace, read through `facts_namespace_order`;
//! - `gov_project_slice_recall_p50_us`: the same caller recalling three
//!   namespaces (`developer`, its own, `global`), which walks `facts_order`
//!   (docs/decisions.md, issue 37).
//!
//! The two are measured in alternating rounds so that drift in the machine
//! affects both alike.

use std::hint::black_box;

use openvibe_bench::{report, sample};
use openvibe_postgres::PgStores;
use openvibe_protocols::{
    AuditLog, CallerContext, Classification, Fact, FactQuery, Grants, RecordStore, Rights,
};

use crate::pg::{self, TENANT};

/// The `pg` group's reader (clearance in six of ten domains).
fn reader() -> CallerContext {
    pg::clearance().context(TENANT)
}

async fn run_inner(url: &str) -> Result<(), String> {
    let pool = pg::bench_pool(url, 4).await?;
    pg::ensure_loaded(&pool, &PgStores::from_pool(pool.clone())).await?;
    let base = PgStores::from_pool_audited(pool.clone(), false);
    let governed = PgStores::from_pool_audited(pool.clone(), true);
    // The data set was written before namespaces (namespace ""): the
    // governed reader is granted it among others, as after a migration
    // into one namespace.
    let grants = Grants::new("cro")
        .grant("", Rights::READ, false)
        .grant("cro", Rights::OWN, false)
        .grant("shared", Rights::OWN, false)
        .grant("team", Rights::READ, true)
        .recall(["", "cro", "shared", "team"]);
    let plain = reader();
    let ruled = reader().with_grants(grants).with_project("p1");
    let queries: Vec<FactQuery> = pg::fact_queries();
    // Both must see the same facts, or the comparison means nothing.
    for q in queries.iter().take(20) {
        let a = base
            .facts()
            .query(&plain, q)
            .await
            .map_err(|e| e.to_string())?;
        let b = governed
            .facts()
            .query(&ruled, q)
            .await
            .map_err(|e| e.to_string())?;
        if a != b {
            return Err(format!("governed and plain results differ for {q:?}"));
        }
    }
    if std::env::var_os("OPENVIBE_BENCH_EXPLAIN").is_some() {
        for (stores, ctx, who) in [(&base, &plain, "plain"), (&governed, &ruled, "governed")] {
            let plan = stores
                .facts()
                .explain_query(ctx, &queries[1])
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("pg_gov: plan ({who}):\n{plan}");
        }
    }
    let (mut base_us, mut gov_us) = (Vec::new(), Vec::new());
    for round in 0..6 {
        for (stores, ctx, into) in [
            (&base, &plain, &mut base_us),
            (&governed, &ruled, &mut gov_us),
        ] {
            let facts = stores.facts();
            let mut next = round * 97;
            let samples = sample(100, 500, || {
                let query = &queries[next % queries.len()];
                next += 1;
                let facts = &facts;
                async move {
                    match facts.query(ctx, query).await {
                        Ok(found) => {
                            black_box(found.len());
                        }
                        Err(e) => eprintln!("query failed: {e}"),
                    }
                }
            })
            .await;
            into.push(samples.quantile_us(0.50));
        }
    }
    governed.audit().flush().await.map_err(|e| e.to_string())?;
    let (b, g) = (median(&mut base_us), median(&mut gov_us));
    report("gov_fact_query_base_p50_us", b, "us");
    report("gov_fact_query_governed_p50_us", g, "us");
    report("gov_policy_overhead_pct", (g - b) / b * 100.0, "pct");
    project_slice(&pool, &base).await?;
    pool.close().await;
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The project-scoped slice's data set: 20 projects of 1,000 `developer`
/// facts each, beside the 1,000,000 facts of no namespace.
const SLICE: &str = "gov_project_slice_v2";
const SLICE_PROJECTS: u32 = 20;
const SLICE_FACTS: u32 = 1_000;

async fn project_slice(pool: &sqlx::PgPool, pg: &PgStores) -> Result<(), String> {
    let loaded: Option<String> =
        sqlx::query_scalar("SELECT name FROM bench_dataset WHERE name = $1")
            .bind(SLICE)
            .fetch_optional(pool)
            .await
            .map_err(|e| e.to_string())?;
    if loaded.is_none() {
        eprintln!("pg_gov: loading the project-scoped slice (once)");
        // An earlier or half-loaded slice: start over.
        crate::pg::set_tenant_and(
            pool,
            TENANT,
            "DELETE FROM facts WHERE namespace = 'developer'",
        )
        .await?;
        for p in 0..SLICE_PROJECTS {
            let ctx = CallerContext::system()
                .with_tenant(TENANT)
                .with_project(format!("p{p:02}"));
            let facts: Vec<Fact> = (0..SLICE_FACTS)
                .map(|k| {
                    Fact::new(
                        format!("dev-p{p:02}-{k:04}"),
                        format!("developer note {k} of project {p}"),
                    )
                    .namespace("developer")
                    .classification(Classification::Public)
                    .confidence(f64::from((k * 7919 + p) % 1000) / 1000.0)
                })
                .collect();
            pg.facts()
                .store_batch(&ctx, facts)
                .await
                .map_err(|e| e.to_string())?;
        }
        sqlx::raw_sql("VACUUM (ANALYZE) facts")
            .execute(pool)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query("INSERT INTO bench_dataset (name, loaded_at) VALUES ($1, now())")
            .bind(SLICE)
            .execute(pool)
            .await
            .map_err(|e| e.to_string())?;
    }
    let grants = Grants::new("cursor-ide")
        .grant("developer", Rights::READ, true)
        .grant("cursor-ide", Rights::OWN, false)
        .grant("global", Rights::READ, false)
        .recall(["cursor-ide", "developer", "global"]);
    let ide = reader().with_grants(grants).with_project("p07");
    let shapes = [
        (
            "gov_project_slice_p50_us",
            FactQuery::new().namespaces(["developer"]).limit(10),
        ),
        (
            "gov_project_slice_recall_p50_us",
            FactQuery::new().limit(10),
        ),
    ];
    for (name, query) in &shapes {
        let found = pg
            .facts()
            .query(&ide, query)
            .await
            .map_err(|e| e.to_string())?;
        if found.len() != 10
            || found
                .iter()
                .any(|f| f.meta.project_id.as_deref() != Some("p07"))
        {
            return Err(format!(
                "{name}: the slice query found {} facts, not ten of p07",
                found.len()
            ));
        }
        if std::env::var_os("OPENVIBE_BENCH_EXPLAIN").is_some() {
            let plan = pg
                .facts()
                .explain_query(&ide, query)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("pg_gov: plan ({name}):\n{plan}");
        }
    }
    let mut p50s: Vec<Vec<f64>> = vec![Vec::new(); shapes.len()];
    for _round in 0..3 {
        for ((_, query), into) in shapes.iter().zip(p50s.iter_mut()) {
            let facts = pg.facts();
            let samples = sample(50, 300, || {
                let facts = &facts;
                let ide = &ide;
                async move {
                    match facts.query(ide, query).await {
                        Ok(found) => {
                            black_box(found.len());
                        }
                        Err(e) => eprintln!("query failed: {e}"),
                    }
                }
            })
            .await;
            into.push(samples.quantile_us(0.50));
        }
    }
    for ((name, _), p50) in shapes.iter().zip(p50s.iter_mut()) {
        report(name, median(p50), "us");
    }
    Ok(())
}

/// Run the group.
pub async fn run() {
    let Some(url) = openvibe_bench::database_url("pg_gov") else {
        return;
    };
    if let Err(e) = run_inner(&url).await {
        eprintln!("pg_gov: benchmark failed: {e}");
    }
}
