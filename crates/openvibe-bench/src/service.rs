//! The memory service under load (group `svc`, needs `DATABASE_URL`):
//! a service on PostgreSQL on a loopback port, driven by 64 concurrent
//! remote clients in the same process (two runtime threads serve both).
//!
//! - `svc_writes_per_s`: fact writes acknowledged per second (64 clients,
//!   each sending its next write as soon as the last is acknowledged);
//! - `svc_search_saturated_per_s`, `svc_search_saturated_p50_us` /
//!   `_p99_us`: fact searches (text + entity, limit 10) with 64 clients
//!   each sending its next search as soon as the last answers (closed loop:
//!   the service saturated, so latency is queueing, 64 / throughput);
//! - `svc_search_p50_us` / `svc_search_p99_us`: the same searches from 64
//!   clients offered at half the saturated throughput just measured (open
//!   loop, `svc_search_offered_per_s`; latency counts from when a search
//!   was due, so a late send counts as waiting): the latency a caller sees
//!   from a service that is busy but keeps up;
//! - `svc_search_1client_p50_us`: the same search from one client alone
//!   (the service's own latency);
//! - `svc_mixed_ops_per_s`, `svc_errors`, `svc_lost_writes`: half writes,
//!   half searches; every acknowledged write is then read back from the
//!   database directly (must be 0 lost, 0 errors).
//!
//! It runs in a schema of its own, `openvibe_bench_svc`, in a tenant of
//! its own per run, purged at the end: the searches cover the 20,000 facts
//! the writes left, not the
//! million-row data set of the `pg` group (whose common words would turn
//! every text search into a scan of other tenants' matches; that is the
//! store's cost, measured by `pg`, not the service's).

use std::time::Duration;

use openvibe_bench::report;
use openvibe_postgres::{PgStores, purge_tenant};
use openvibe_protocols::CallerContext;
use openvibe_remote::RemoteMemory;
use openvibe_remote::load::{LoadPlan, run as load};
use openvibe_service::{Access, Service};

const CLIENTS: usize = 64;
const REQUESTS: usize = 20_000;

/// Run the group (on a runtime of its own with two worker threads).
pub async fn run() {
    let Some(url) = openvibe_bench::database_url("svc") else {
        return;
    };
    let outcome = std::thread::spawn(move || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(measure(&url))
    })
    .join();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("svc: failed: {e}"),
        Err(_) => eprintln!("svc: the benchmark thread panicked"),
    }
}

async fn measure(url: &str) -> Result<(), String> {
    let pool = crate::pg::schema_pool(url, SCHEMA, 16).await?;
    let pg = PgStores::from_pool(pool.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let service = Service::new(pg.stores(), Access::open("default"));
    tokio::spawn(service.serve(listener, std::future::pending()));
    let remote = RemoteMemory::connect(&format!("http://{addr}"), None)
        .await
        .map_err(|e| e.to_string())?
        .stores();
    let tenant = format!(
        "bench-svc-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    );
    let caller = CallerContext::agent("bench").with_tenant(tenant.clone());
    let plan = |share: f64, prefix: &str| LoadPlan {
        clients: CLIENTS,
        requests: REQUESTS,
        max_duration: Duration::from_secs(30),
        write_share: share,
        caller: caller.clone(),
        id_prefix: prefix.into(),
        rate: None,
    };
    // Writes first: the searches then run over 20,000 facts.
    let writes = load(&remote, &plan(1.0, "w")).await;
    report("svc_writes_per_s", writes.writes_per_s(), "writes/s");
    eprintln!(
        "    writes: {} in {:?}, p50 {:.0} µs, p99 {:.0} µs, {} errors",
        writes.written.len(),
        writes.elapsed,
        writes.write_us(0.5),
        writes.write_us(0.99),
        writes.errors
    );
    // Fresh planner statistics for the 20,000 rows just written (what
    // autovacuum does some seconds later in a running system): without
    // them the search plan depends on when autovacuum last ran, and the
    // figure swung 37 ms – 630 ms between runs.
    sqlx::query("ANALYZE facts")
        .execute(&pool)
        .await
        .map_err(|e| e.to_string())?;
    let saturated = load(&remote, &plan(0.0, "s")).await;
    report(
        "svc_search_saturated_per_s",
        saturated.ops_per_s(),
        "searches/s",
    );
    report(
        "svc_search_saturated_p50_us",
        saturated.search_us(0.5),
        "us",
    );
    report(
        "svc_search_saturated_p99_us",
        saturated.search_us(0.99),
        "us",
    );
    // Half the capacity just measured, for about 5 s.
    let offered = saturated.ops_per_s() / 2.0;
    let mut paced = plan(0.0, "p");
    paced.rate = Some(offered);
    paced.requests = ((offered * 5.0) as usize).clamp(100, REQUESTS);
    let searches = load(&remote, &paced).await;
    report("svc_search_offered_per_s", offered, "searches/s");
    report("svc_search_p50_us", searches.search_us(0.5), "us");
    report("svc_search_p99_us", searches.search_us(0.99), "us");
    eprintln!(
        "    searches: {} saturated in {:?}, {} paced in {:?} ({:.0}/s), {} errors",
        saturated.searches,
        saturated.elapsed,
        searches.searches,
        searches.elapsed,
        searches.ops_per_s(),
        saturated.errors + searches.errors
    );
    // One client alone: the service's own latency, without queueing.
    let mut alone = plan(0.0, "a");
    alone.clients = 1;
    alone.requests = 2_000;
    let alone = load(&remote, &alone).await;
    report("svc_search_1client_p50_us", alone.search_us(0.5), "us");
    let mixed = load(&remote, &plan(0.5, "m")).await;
    report("svc_mixed_ops_per_s", mixed.ops_per_s(), "ops/s");
    let errors = writes.errors + saturated.errors + searches.errors + mixed.errors;
    report("svc_errors", errors as f64, "errors");
    let mut lost = 0usize;
    for id in writes.written.iter().chain(&mixed.written) {
        let found = pg
            .stores()
            .facts
            .get(&caller, id)
            .await
            .map_err(|e| e.to_string())?;
        lost += usize::from(found.is_none());
    }
    report("svc_lost_writes", lost as f64, "writes");
    chain_overhead(&pool, &remote, &plan(1.0, "")).await?;
    for e in writes
        .first_errors
        .iter()
        .chain(&saturated.first_errors)
        .chain(&searches.first_errors)
        .chain(&mixed.first_errors)
    {
        eprintln!("    error: {e}");
    }
    purge_tenant(&pool, &tenant)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

const SCHEMA: &str = "openvibe_bench_svc";

/// `audit_chain_overhead_pct` (issue 43): how much fewer writes per second
/// the service acknowledges with the audit chain's trigger than without it
/// (switched off in this benchmark's own schema for the comparison, and on
/// again). Three rounds each, alternating, so that drift affects both.
async fn chain_overhead(
    pool: &sqlx::PgPool,
    remote: &openvibe_protocols::Stores,
    plan: &LoadPlan,
) -> Result<(), String> {
    let mut rates = [Vec::new(), Vec::new()];
    for round in 0..3 {
        for (i, chained) in [(0, false), (1, true)] {
            let switch = if chained { "ENABLE" } else { "DISABLE" };
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE audit_log {switch} TRIGGER audit_log_link"
            )))
            .execute(pool)
            .await
            .map_err(|e| e.to_string())?;
            let mut p = plan.clone();
            p.id_prefix = format!("chain{round}{i}");
            rates[i].push(load(remote, &p).await.writes_per_s());
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (off, on) = (mean(&rates[0]), mean(&rates[1]));
    eprintln!(
        "    writes/s without the chain {:?}, with it {:?}",
        rates[0], rates[1]
    );
    report(
        "audit_chain_overhead_pct",
        (off - on) / off.max(f64::MIN_POSITIVE) * 100.0,
        "%",
    );
    Ok(())
}
