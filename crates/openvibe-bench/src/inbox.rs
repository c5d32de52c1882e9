//! Group `pg_inbox` (issue 59; PostgreSQL, needs `DATABASE_URL`): the
//! cognitive loop on the durable inbox, in schema `openvibe_bench_inbox`
//! (made afresh each run).
//!
//! - `inbox_event_overhead_ms`: p50 of 200 events, each pushed into the
//!   durable inbox through an idle loop in this process and timed from the push
//!   to the start of its decide stage (the push, the lease, the perceive
//!   stage journaled in the inbox row): what the inbox adds before the
//!   loop's work begins;
//! - `loop_events_per_s_1` and `loop_events_per_s_2`: 1,000 events pushed
//!   beforehand, worked by 1 and by 2 loop processes (this binary with
//!   `--inbox-loop`), from the moment every process is ready until all are
//!   done; `loop_scaling_2_over_1` their ratio (both processes and
//!   PostgreSQL share this machine's cores), and `loop_cpu_busy_pct_1` /
//!   `_2` how busy the machine's cores were meanwhile (`/proc/stat`: the
//!   ceiling of the ratio is 100 over the first);
//! - `lease_takeover_s`: a process is SIGKILLed while it runs an action
//!   (leases of 1 s, renewed every third of that); the time from the kill
//!   until an idle second process holds the event (at most the lease plus
//!   the idle process's poll, 250 ms).

use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openvibe_bench::report;
use openvibe_memory::MemoryGateway;
use openvibe_postgres::PgStores;
use openvibe_primitives::FnTool;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{Stage, Stores};
use openvibe_roles::{CognitiveLoop, EventSource, Leasing, RoleRuntime};
use serde_json::json;
use sqlx::PgPool;

use crate::cognitive::{event, role_in};

/// The flag of a loop process (`--inbox-loop URL TENANT HOLDER LEASE_MS`).
pub const LOOP_FLAG: &str = "--inbox-loop";

const SCHEMA: &str = "openvibe_bench_inbox";
const TENANT: &str = "default";
const OVERHEAD_EVENTS: u32 = 200;
const THROUGHPUT_EVENTS: u32 = 1_000;
const TAKEOVER_LEASE_MS: u64 = 1_000;

/// The CRO's loop over `stores`' inbox as `holder`; its tool holds an
/// action whose input says `hang` forever (a process to kill mid-action).
fn durable_loop(
    stores: &Stores,
    tenant: &str,
    holder: &str,
    lease_ms: u64,
) -> Result<CognitiveLoop, String> {
    let tool = FnTool::new(
        "apply_discount",
        "Apply a discount.",
        |d: serde_json::Value| async move {
            if d["hang"] == true {
                std::future::pending::<()>().await;
            }
            Ok::<_, String>(format!("{}% applied", d["pct"]))
        },
    );
    let gateway = MemoryGateway::new()
        .with_stores(stores.clone())
        .with_tenant(tenant);
    let role = role_in(&gateway, tool)?;
    let runtime = Arc::new(
        RoleRuntime::new(Arc::new(ScriptedLlm::default()))
            .with_stores(stores.clone())
            .role(role)
            .map_err(|e| e.to_string())?,
    );
    let leasing = Leasing::new(holder).lease_ms(lease_ms);
    Ok(CognitiveLoop::durable(
        runtime,
        stores.inbox.clone(),
        leasing,
    ))
}

/// A loop process: the CRO's loop on the inbox until killed.
pub async fn loop_process(
    url: &str,
    tenant: &str,
    holder: &str,
    lease_ms: &str,
) -> Result<(), String> {
    let lease_ms: u64 = lease_ms.parse().map_err(|e| format!("lease: {e}"))?;
    let pool = crate::pg::schema_pool(url, SCHEMA, 4).await?;
    let stores = PgStores::from_pool(pool).stores();
    let cognitive = durable_loop(&stores, tenant, holder, lease_ms)?;
    // Listening before saying it is ready.
    let _ = stores.inbox.pushes();
    println!("ready");
    cognitive
        .run(std::future::pending())
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A loop process of this binary, ready.
struct LoopProcess(std::process::Child);

impl LoopProcess {
    fn start(url: &str, tenant: &str, holder: &str, lease_ms: u64) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = std::process::Command::new(exe)
            .args([LOOP_FLAG, url, tenant, holder, &lease_ms.to_string()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a loop process: {e}"))?;
        let stdout = child.stdout.take().ok_or("a loop process has no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if line.trim() != "ready" {
            let _ = child.kill();
            return Err(format!("loop process {holder} said {line:?}"));
        }
        Ok(Self(child))
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for LoopProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One number `sql` returns in `tenant` (row-level security).
async fn scalar_in(pool: &PgPool, tenant: &str, sql: &'static str) -> Result<i64, String> {
    let mut tx = crate::pg::tenant_tx(pool, tenant).await?;
    let n: Option<i64> = sqlx::query_scalar(sql)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok(n.unwrap_or(0))
}

/// One number `sql` returns in the bench's tenant.
async fn scalar(pool: &PgPool, sql: &'static str) -> Result<i64, String> {
    scalar_in(pool, TENANT, sql).await
}

/// The CRO's context in `tenant` (its inbox events' owner).
fn cro_context(stores: &Stores, tenant: &str) -> openvibe_protocols::CallerContext {
    MemoryGateway::new()
        .with_stores(stores.clone())
        .with_tenant(tenant)
        .agent_memory("cro", &crate::cognitive::clearance())
        .context()
        .clone()
}

/// A fresh schema with the CRO's insight in each of `tenants`; its pool
/// and stores.
async fn fresh_in(url: &str, tenants: &[&str]) -> Result<(PgPool, Stores), String> {
    crate::pg::drop_schema(url, SCHEMA).await?;
    let pool = crate::pg::schema_pool(url, SCHEMA, 8).await?;
    let stores = PgStores::from_pool(pool.clone()).stores();
    for tenant in tenants {
        MemoryGateway::new()
            .with_stores(stores.clone())
            .with_tenant(*tenant)
            .agent_memory("cro", &crate::cognitive::clearance())
            .store_insight(openvibe_roles::testing::discount_insight())
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok((pool, stores))
}

/// A fresh schema with the CRO's insight in the bench's tenant.
async fn fresh(url: &str) -> Result<(PgPool, Stores), String> {
    fresh_in(url, &[TENANT]).await
}

/// p50 ms from a push to its decide stage.
async fn overhead(url: &str) -> Result<f64, String> {
    let (_pool, stores) = fresh(url).await?;

    let cognitive = Arc::new(durable_loop(&stores, TENANT, "bench-overhead", 30_000)?);
    let (done_tx, mut done) = tokio::sync::mpsc::unbounded_channel();
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move {
            cognitive
                .run_with(std::future::pending(), move |trace| {
                    let _ = done_tx.send(trace.clone());
                })
                .await
        })
    };
    let mut ms = Vec::with_capacity(OVERHEAD_EVENTS as usize);
    for k in 0..OVERHEAD_EVENTS {
        // Each event arrives at an idle loop (its worker waiting for a
        // push), as events that come one at a time do.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let pushed = chrono::Utc::now();
        cognitive
            .push("cro", event("o", k), EventSource::Code)
            .await
            .map_err(|e| e.to_string())?;

        let trace = tokio::time::timeout(Duration::from_secs(30), done.recv())
            .await
            .map_err(|_| "an event was not done within 30 s".to_owned())?
            .ok_or("the loop stopped")?;
        let decided = trace
            .stages
            .iter()
            .find(|s| s.stage == Stage::Decide)
            .ok_or("an event without its decide stage")?
            .at;
        ms.push((decided - pushed).num_microseconds().unwrap_or(0) as f64 / 1000.0);
    }
    running.abort();
    ms.sort_by(f64::total_cmp);
    Ok(ms[ms.len() / 2])
}

/// The machine's busy and total CPU time so far (`/proc/stat`, in ticks).
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: u64 = cpu.iter().sum();
    let idle = cpu.get(3)? + cpu.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// Events per second through `processes` loop processes, all in the
/// bench's tenant or (`tenants`) each in a tenant of its own, and the share
/// of the machine's CPU time that was busy meanwhile (%).
async fn throughput(
    url: &str,
    processes: usize,
    tenants: bool,
) -> Result<(f64, Option<f64>), String> {
    let names: Vec<String> = (0..processes)
        .map(|i| {
            if tenants {
                format!("bench-{i}")
            } else {
                TENANT.to_owned()
            }
        })
        .collect();
    let mut distinct: Vec<&str> = names.iter().map(String::as_str).collect();
    distinct.dedup();
    let (pool, stores) = fresh_in(url, &distinct).await?;
    for k in 0..THROUGHPUT_EVENTS {
        let tenant = distinct[k as usize % distinct.len()];
        openvibe_protocols::push_to_inbox(
            stores.inbox.as_ref(),
            &cro_context(&stores, tenant),
            "cro",
            event("t", k),
            EventSource::Code,
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    // Started together (each connects and migrates first), timed from the
    // moment all are ready.
    let starting: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, tenant)| {
            let (url, tenant) = (url.to_owned(), tenant.clone());
            std::thread::spawn(move || {
                LoopProcess::start(&url, &tenant, &format!("bench-{i}"), 30_000)
            })
        })
        .collect();
    let mut loops = Vec::new();
    for s in starting {
        loops.push(s.join().map_err(|_| "a loop process did not start")??);
    }
    let started = Instant::now();
    let cpu_before = cpu_ticks();
    loop {
        let mut done = 0;
        for tenant in &distinct {
            done += scalar_in(
                &pool,
                tenant,
                "SELECT count(*) FROM inbox_events WHERE status = 'done'",
            )
            .await?;
        }
        if done >= i64::from(THROUGHPUT_EVENTS) {
            break;
        }
        if started.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "{done} of {THROUGHPUT_EVENTS} events done in 300 s"
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = started.elapsed().as_secs_f64();
    let busy = match (cpu_before, cpu_ticks()) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
            Some(100.0 * (b1 - b0) as f64 / (t1 - t0) as f64)
        }
        _ => None,
    };
    drop(loops);
    Ok((f64::from(THROUGHPUT_EVENTS) / took, busy))
}

/// Seconds from killing the holder of an event to another process holding it.
async fn takeover(url: &str) -> Result<f64, String> {
    let (pool, stores) = fresh(url).await?;
    let ctx = cro_context(&stores, TENANT);
    let mut first = LoopProcess::start(url, TENANT, "first", TAKEOVER_LEASE_MS)?;
    let mut hanging = event("hang", 0);
    if let Some(action) = &mut hanging.action {
        action.input = json!({"pct": 10, "hang": true});
    }
    openvibe_protocols::push_to_inbox(
        stores.inbox.as_ref(),
        &ctx,
        "cro",
        hanging,
        EventSource::Code,
    )
    .await
    .map_err(|e| e.to_string())?;
    // The first process is in the action.
    let started = Instant::now();
    while scalar(
        &pool,
        "SELECT count(*) FROM inbox_events WHERE trace->>'act_began' IS NOT NULL",
    )
    .await?
        == 0
    {
        if started.elapsed() > Duration::from_secs(30) {
            return Err("the first process never began the action".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _second = LoopProcess::start(url, TENANT, "second", TAKEOVER_LEASE_MS)?;
    let killed = Instant::now();
    first.kill();
    loop {
        let held = scalar(
            &pool,
            "SELECT count(*) FROM inbox_events WHERE holder = 'second'",
        )
        .await?;
        if held > 0 {
            return Ok(killed.elapsed().as_secs_f64());
        }
        if killed.elapsed() > Duration::from_secs(30) {
            return Err("no process took the event over within 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn run_inner(url: &str) -> Result<(), String> {
    report("inbox_event_overhead_ms", overhead(url).await?, "ms");
    let (one, busy_one) = throughput(url, 1, false).await?;
    report("loop_events_per_s_1", one, "events/s");
    let (two, busy_two) = throughput(url, 2, false).await?;
    report("loop_events_per_s_2", two, "events/s");
    report("loop_scaling_2_over_1", two / one, "x");
    // The same two processes, each serving a tenant of its own (a
    // tenant's audit chain is one lock per audited write).
    let (apart, _) = throughput(url, 2, true).await?;
    report("loop_events_per_s_2_tenants", apart, "events/s");
    report("loop_scaling_2_tenants_over_1", apart / one, "x");
    // How busy the machine was (loops, PostgreSQL, everything): with one
    // process at b% of the cores, two can do at most 100/b times as much.
    for (name, busy) in [
        ("loop_cpu_busy_pct_1", busy_one),
        ("loop_cpu_busy_pct_2", busy_two),
    ] {
        if let Some(busy) = busy {
            report(name, busy, "%");
        }
    }
    report("lease_takeover_s", takeover(url).await?, "s");
    crate::pg::drop_schema(url, SCHEMA).await
}

/// Group `pg_inbox`.
pub async fn run_pg() {
    let Some(url) = openvibe_bench::database_url("pg_inbox") else {
        return;
    };
    if let Err(e) = run_inner(&url).await {
        eprintln!("pg_inbox: benchmark failed: {e}");
    }
}
