//! Spaces and delegation (issue 41).
//!
//! Group `spaces` (in process):
//! - `delegation_roundtrip_p50_ms`: `Role::ask` from one role to another
//!   through the in-memory space and the owner's cognitive loop, to the
//!   answer (a zero-latency tool, no model), median of 300;
//! - `delegation_direct_p50_ms`: the owner's `Role::handle` of the same
//!   request's event (decide, act, record), what a delegation adds to;
//! - `delegation_roundtrip_overhead_ms`: the difference, what delegating
//!   costs beyond the work itself;
//! - `mem_space_post_per_s`: single posts to one in-memory space.
//!
//! Group `pg_spaces` (PostgreSQL, needs `DATABASE_URL`):
//! - `space_post_per_s`: messages appended per second to one space by
//!   batched writers (4 writers, batches of 100);
//! - `space_post_single_per_s`: the same with one message per post;
//! - `space_delivery_p50_ms` / `space_delivery_p99_ms`: from the start of a
//!   post in this process to the moment a reader in **another process**
//!   (this binary, started with `--space-reader`) has it in hand: the
//!   `LISTEN/NOTIFY` wake-up and the read of the log, 300 messages a few
//!   milliseconds apart.

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use openvibe_bench::{report, sample};
use openvibe_memory::{ClearanceProfile, MemoryGateway};
use openvibe_postgres::PgStores;
use openvibe_primitives::FnTool;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    CallerContext, Classification, Clearance, ConfidenceBand, DecisionMatrix, Impact, LlmResponse,
    Member, MessageQuery, Outcome, Space, SpaceMessage, Stores,
};
use openvibe_roles::{AuthorityConfig, CognitiveLoop, InMemoryJournal, Role, RoleRuntime};
use serde_json::json;

const SCHEMA: &str = "bench_spaces";

/// The argument that makes this binary a space reader (for the delivery
/// figure): `--space-reader URL`.
pub const READER_FLAG: &str = "--space-reader";

fn micros_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

fn member_ctx(id: &str) -> CallerContext {
    CallerContext::agent(id)
        .with_tenant(crate::pg::TENANT)
        .with_clearance(Clearance::unrestricted())
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Brief {
    customer: String,
}

fn act_on_low() -> DecisionMatrix {
    DecisionMatrix::default().with(ConfidenceBand::Low, Impact::Low, Outcome::Act)
}

async fn team(stores: &Stores) -> Result<Arc<RoleRuntime>, String> {
    let gateway = MemoryGateway::new().with_stores(stores.clone());
    let clearance = ClearanceProfile::new("cmo").with_domain("marketing", Classification::Internal);
    let write = FnTool::new(
        "write_case_study",
        "Write a case study.",
        |b: Brief| async move { Ok::<_, String>(b.customer) },
    );
    let cmo = Role::new("cmo")
        .domains(["marketing"])
        .authority(AuthorityConfig::new().autonomous(["write_case_study"]))
        .decision_matrix(act_on_low())
        .clearance(clearance.clone())
        .with_agent_memory(gateway.agent_memory("cmo", &clearance))
        .action_tool(write);
    let cro = Role::new("cro").domains(["revenue"]);
    let runtime = RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text("[]"))))
        .with_stores(stores.clone())
        .role(cro)
        .and_then(|r| r.role(cmo))
        .map_err(|e| e.to_string())?
        .with_space("team", Vec::<String>::new());
    let runtime = Arc::new(runtime);
    runtime.join_space().await.map_err(|e| e.to_string())?;
    Ok(runtime)
}

async fn delegation() -> Result<(f64, f64), String> {
    let stores = openvibe_memory::in_memory_stores();
    let runtime = team(&stores).await?;
    let looping = Arc::new(CognitiveLoop::new(
        runtime.clone(),
        Arc::new(InMemoryJournal::new()),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let l = looping.clone();
    let running = tokio::spawn(async move {
        l.run(async move {
            let _ = stopped.await;
        })
        .await
    });
    let cro = runtime.get_role("cro").map_err(|e| e.to_string())?;
    let cmo = runtime.get_role("cmo").map_err(|e| e.to_string())?;
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let roundtrip = sample(30, 300, || async {
        let i = next.fetch_add(1, Ordering::SeqCst);
        let asked = cro
            .ask(
                &format!("r{i}"),
                "marketing",
                "write_case_study",
                json!({"customer": format!("c{i}")}),
                Duration::from_secs(10),
            )
            .await;
        if asked.is_err() {
            failed.fetch_add(1, Ordering::SeqCst);
        }
    })
    .await;
    // The same work without the space: the owner handles the request's event.
    let request = SpaceMessage::request("marketing", "write_case_study", json!({"customer": "x"}))
        .id("direct");
    let direct = sample(30, 300, || async {
        let i = next.fetch_add(1, Ordering::SeqCst);
        let mut m = request.clone();
        m.id = format!("direct-{i}");
        m.space_id = "team".into();
        m.meta.owner = "agent:cro".into();
        let Some(event) = openvibe_roles::request_event(cmo, &m) else {
            failed.fetch_add(1, Ordering::SeqCst);
            return;
        };
        if cmo.handle(&event).await.is_err() {
            failed.fetch_add(1, Ordering::SeqCst);
        }
    })
    .await;
    let _ = stop.send(());
    running
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    if failed.load(Ordering::SeqCst) > 0 {
        return Err(format!(
            "{} operations failed",
            failed.load(Ordering::SeqCst)
        ));
    }
    Ok((
        roundtrip.quantile_us(0.50) / 1_000.0,
        direct.quantile_us(0.50) / 1_000.0,
    ))
}

async fn mem_posts() -> Result<f64, String> {
    let stores = openvibe_memory::in_memory_stores();
    let ctx = member_ctx("cro");
    stores
        .spaces
        .create(&ctx, Space::new("busy").id("busy"))
        .await
        .map_err(|e| e.to_string())?;
    let n = 20_000;
    let started = Instant::now();
    for i in 0..n {
        stores
            .spaces
            .post(&ctx, "busy", SpaceMessage::text(format!("m{i}")))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(f64::from(n) / started.elapsed().as_secs_f64())
}

/// Run the in-process group.
pub async fn run() {
    match delegation().await {
        Ok((roundtrip, direct)) => {
            report("delegation_roundtrip_p50_ms", roundtrip, "ms");
            report("delegation_direct_p50_ms", direct, "ms");
            report(
                "delegation_roundtrip_overhead_ms",
                (roundtrip - direct).max(0.0),
                "ms",
            );
        }
        Err(e) => eprintln!("spaces: delegation: {e}"),
    }
    match mem_posts().await {
        Ok(rate) => report("mem_space_post_per_s", rate, "msg/s"),
        Err(e) => eprintln!("spaces: posts: {e}"),
    }
}

async fn pg_stores(url: &str) -> Result<Stores, String> {
    let pool = crate::pg::schema_pool(url, SCHEMA, 6).await?;
    Ok(PgStores::from_pool(pool).stores())
}

/// Messages per second appended to one space by `writers` concurrent
/// writers posting `batch` messages per post, `total` in all.
async fn post_rate(
    stores: &Stores,
    space: &str,
    writers: usize,
    batch: usize,
    total: usize,
) -> Result<f64, String> {
    let per_writer = total / writers / batch;
    let started = Instant::now();
    let work = (0..writers).map(|w| {
        let stores = stores.clone();
        let space = space.to_owned();
        async move {
            let ctx = member_ctx(&format!("w{w}"));
            for b in 0..per_writer {
                let messages = (0..batch)
                    .map(|i| SpaceMessage::text(format!("w{w} b{b} m{i}")))
                    .collect();
                stores
                    .spaces
                    .post_all(&ctx, &space, messages)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok::<(), String>(())
        }
    });
    for done in futures::future::join_all(work).await {
        done?;
    }
    let posted = per_writer * writers * batch;
    Ok(posted as f64 / started.elapsed().as_secs_f64())
}

async fn make_space(stores: &Stores, id: &str, writers: usize) -> Result<(), String> {
    let mut space = Space::new(id).id(id);
    for w in 0..writers {
        space = space.member(Member::new(format!("agent:w{w}")));
    }
    space = space.member(Member::new("agent:reader"));
    stores
        .spaces
        .create(&member_ctx("admin"), space)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

async fn delivery(url: &str, stores: &Stores) -> Result<(f64, f64), String> {
    make_space(stores, "wire", 1).await?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(exe)
        .args([READER_FLAG, url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the reader process: {e}"))?;
    let stdout = child.stdout.take().ok_or("the reader has no stdout")?;
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    // The reader says when it waits.
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.recv()).await;
    if !matches!(ready, Ok(Some(ref l)) if l == "READY") {
        let _ = child.kill();
        return Err(format!("the reader did not start: {ready:?}"));
    }
    let ctx = member_ctx("w0");
    let n = 300;
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let sent = micros_now();
        stores
            .spaces
            .post(
                &ctx,
                "wire",
                SpaceMessage::text(format!("{sent}")).id(format!("d{i}")),
            )
            .await
            .map_err(|e| e.to_string())?;
        let line = tokio::time::timeout(Duration::from_secs(10), lines.recv())
            .await
            .map_err(|_| format!("message {i} did not reach the reader in 10 s"))?
            .ok_or("the reader stopped")?;
        let (text, got) = line
            .split_once(' ')
            .ok_or_else(|| format!("the reader said `{line}`"))?;
        let (sent, got): (u128, u128) = (
            text.parse().map_err(|e| format!("{e}: {line}"))?,
            got.parse().map_err(|e| format!("{e}: {line}"))?,
        );
        latencies.push(got.saturating_sub(sent) as f64 / 1_000.0);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.50), at(0.99)))
}

/// The reader process of the delivery figure: waits for each message of
/// space `wire` after its cursor and prints `<its text> <micros now>` the
/// moment it has it.
pub async fn reader(url: &str) -> Result<(), String> {
    let pool = crate::pg::schema_pool(url, SCHEMA, 2).await?;
    let stores = PgStores::from_pool(pool).stores();
    let ctx = member_ctx("reader");
    let mut after = 0;
    // Subscribe (the store's listener starts) before saying it is ready.
    stores
        .spaces
        .messages(&ctx, "wire", &MessageQuery::after(0).wait_ms(1))
        .await
        .map_err(|e| e.to_string())?;
    println!("READY");
    loop {
        let found = stores
            .spaces
            .messages(&ctx, "wire", &MessageQuery::after(after).wait_ms(30_000))
            .await
            .map_err(|e| e.to_string())?;
        let now = micros_now();
        for m in found {
            after = m.seq;
            if let openvibe_protocols::MessageBody::Text { text } = m.body {
                println!("{text} {now}");
            }
        }
    }
}

async fn run_pg_inner(url: &str) -> Result<(), String> {
    crate::pg::drop_schema(url, SCHEMA).await?;
    let stores = pg_stores(url).await?;
    make_space(&stores, "batched", 4).await?;
    make_space(&stores, "single", 4).await?;
    // Warm the pool and the plans.
    post_rate(&stores, "batched", 4, 100, 2_000).await?;
    let batched = post_rate(&stores, "batched", 4, 100, 20_000).await?;
    let single = post_rate(&stores, "single", 4, 1, 2_000).await?;
    report("space_post_per_s", batched, "msg/s");
    report("space_post_single_per_s", single, "msg/s");
    let (p50, p99) = delivery(url, &stores).await?;
    report("space_delivery_p50_ms", p50, "ms");
    report("space_delivery_p99_ms", p99, "ms");
    Ok(())
}

/// Run the PostgreSQL group.
pub async fn run_pg() {
    let Some(url) = openvibe_bench::database_url("pg_spaces") else {
        return;
    };
    if let Err(e) = run_pg_inner(&url).await {
        eprintln!("pg_spaces: benchmark failed: {e}");
    }
}
