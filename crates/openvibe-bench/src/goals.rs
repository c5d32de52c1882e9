//! Goals (issue 39): group `pg_goals` (PostgreSQL, needs `DATABASE_URL`;
//! `cargo xtask bench pg_goals` provides it).
//!
//! - `goal_progress_rollup_p50_us`: where a goal stands
//!   (`GoalStore::progress`: the goal within the caller's read rule, then
//!   its metrics' streams) after 10,000 metric reports from episodes on its
//!   two key results;
//! - `goal_report_p50_us`: one metric report (the stream's upsert and the
//!   report's insert in one statement, audited), one at a time.

use std::cell::Cell;

use openvibe_bench::{report, sample};
use openvibe_postgres::PgStores;
use openvibe_protocols::{CallerContext, Goal, KeyResult, MetricReport, Objective, Stores};

const REPORTS: u32 = 10_000;
const SCHEMA: &str = "openvibe_bench_goals";

fn objective() -> Objective {
    let kr = |id: &str, metric: &str, target: f64| KeyResult {
        id: id.into(),
        metric: metric.into(),
        baseline: 0.0,
        target,
        unit: String::new(),
        due: None,
    };
    Objective {
        id: "pipeline-q4".into(),
        owner: "cro".into(),
        title: "Pipeline $2M this quarter".into(),
        due: chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap_or_default(),
        key_results: vec![
            kr("value", "pipeline_usd", 2_000_000.0),
            kr("qualified", "qualified_leads", 40.0),
        ],
    }
}

async fn fill(stores: &Stores, ctx: &CallerContext) -> Result<(), String> {
    stores
        .goals
        .put(ctx, Goal::new(objective()))
        .await
        .map_err(|e| e.to_string())?;
    let batches: Vec<Vec<u32>> = (0..REPORTS)
        .collect::<Vec<_>>()
        .chunks(500)
        .map(<[u32]>::to_vec)
        .collect();
    for batch in batches {
        let writes = batch.into_iter().map(|i| {
            let metric = if i % 2 == 0 {
                "pipeline_usd"
            } else {
                "qualified_leads"
            };
            let report = MetricReport::add("cro", metric, f64::from(i % 7))
                .id(format!("ep_{i:05}:{metric}"))
                .episode(format!("ep_{i:05}"));
            stores.goals.report(ctx, report)
        });
        for done in futures::future::join_all(writes).await {
            done.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

async fn run_pg_inner(url: &str) -> Result<(), String> {
    crate::pg::drop_schema(url, SCHEMA).await?;
    let pool = crate::pg::schema_pool(url, SCHEMA, 4).await?;
    let stores = PgStores::from_pool(pool).stores();
    let ctx = CallerContext::agent("cro").with_tenant(crate::pg::TENANT);
    fill(&stores, &ctx).await?;
    let failed = Cell::new(0u32);
    let rollup = sample(20, 500, || async {
        match stores.goals.progress(&ctx, "pipeline-q4").await {
            Ok(Some(p))
                if p.key_results.iter().map(|k| k.reports).sum::<u64>() >= u64::from(REPORTS) => {}
            other => {
                failed.set(failed.get() + 1);
                eprintln!("progress: unexpected {other:?}");
            }
        }
    })
    .await;
    let next = Cell::new(0u32);
    let reports = sample(20, 500, || async {
        let i = next.get();
        next.set(i + 1);
        let r = MetricReport::add("cro", "pipeline_usd", 1.0).id(format!("bench-{i}"));
        if let Err(e) = stores.goals.report(&ctx, r).await {
            failed.set(failed.get() + 1);
            eprintln!("report failed: {e}");
        }
    })
    .await;
    if failed.get() > 0 {
        return Err(format!("{} operations failed", failed.get()));
    }
    report(
        "goal_progress_rollup_p50_us",
        rollup.quantile_us(0.50),
        "us",
    );
    report("goal_report_p50_us", reports.quantile_us(0.50), "us");
    Ok(())
}

/// Run the PostgreSQL group.
pub async fn run_pg() {
    let Some(url) = openvibe_bench::database_url("pg_goals") else {
        return;
    };
    if let Err(e) = run_pg_inner(&url).await {
        eprintln!("pg_goals: benchmark failed: {e}");
    }
}
