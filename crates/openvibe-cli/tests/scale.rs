//! The scale test (issue 59): three loop processes and two service
//! instances over one PostgreSQL. 2,000 events are pushed round-robin over
//! HTTP through both `openvibe serve` instances while a loop process is
//! SIGKILLed every few seconds (and at each tenth of the events done)
//! and restarted. Every event ends done, with
//! each stage once in its journal; no action runs twice (each run of the
//! action writes a row: the tool counter); an action a killed process
//! began is recorded interrupted, never run again.
//!
//! A test binary of its own (`harness = false`): it is also the loop
//! process it starts (`scale --loop-process URL HOLDER`), so that process
//! runs a role whose tool counts in the database. Budget: two minutes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openvibe::memory::{ClearanceProfile, MemoryGateway};
use openvibe::primitives::FnTool;
use openvibe::primitives::testing::ScriptedLlm;
use openvibe::protocols::{
    ACT_INTERRUPTED, Action, CallerContext, Classification, Clearance, DecisionEvent, EventInbox,
    EventSource, LlmResponse, Principal, Stage,
};
use openvibe::roles::{AuthorityConfig, CognitiveLoop, Leasing, Role, RoleRuntime};
use serde_json::{Value, json};
use sqlx::Row;

#[path = "support/service.rs"]
mod service;
#[path = "support/pg.rs"]
mod support;
use service::{Reaped, spawn_service};

/// Events pushed.
const EVENTS: usize = 2_000;
/// Loop processes.
const LOOPS: usize = 3;
/// Their leases: a killed process's events are taken over this long
/// after its last renewal.
const LEASE_MS: u64 = 1_000;
/// How often a loop process is killed, at least: also each time another
/// tenth of the events is done (so a fast machine sees as many kills).
const KILL_EVERY: Duration = Duration::from_secs(3);
/// The whole test's budget.
const BUDGET: Duration = Duration::from_secs(120);
const TENANT: &str = "default";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--loop-process") {
        let (Some(url), Some(holder)) = (args.get(2), args.get(3)) else {
            eprintln!("usage: scale --loop-process URL HOLDER");
            std::process::exit(2);
        };
        runtime().block_on(loop_process(url.clone(), holder.clone()));
        return;
    }
    // `cargo test NAME` passes NAME: run only when it names this test.
    let filters: Vec<&String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if args.iter().any(|a| a == "--list") {
        println!("inbox_scale: test");
        return;
    }
    if !filters.is_empty() && !filters.iter().any(|f| "inbox_scale".contains(f.as_str())) {
        return;
    }
    runtime().block_on(inbox_scale());
    println!("test inbox_scale ... ok");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn clearance() -> ClearanceProfile {
    ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted)
}

/// A discount request: acted on by the CRO (its insight makes it
/// confident), through the tool that counts.
fn discount(id: &str) -> DecisionEvent {
    DecisionEvent::new(id, "discount.requested", "revenue")
        .summary("Acme asks a discount on 100")
        .data(json!({"amount": 100}))
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10, "event": id}),
        ))
}

/// One loop process: the CRO in the cognitive loop on the durable inbox,
/// its tool writing a row per run, until killed.
async fn loop_process(url: String, holder: String) {
    let pg = openvibe::postgres::PgStores::connect(&url)
        .await
        .expect("the database");
    let stores = pg.stores();
    let pool = pg.pool().clone();
    let memory = MemoryGateway::new()
        .with_stores(stores.clone())
        .agent_memory("cro", &clearance());
    let who = holder.clone();
    let tool = FnTool::new("apply_discount", "Apply a discount.", move |d: Value| {
        let (pool, who) = (pool.clone(), who.clone());
        async move {
            sqlx::query("INSERT INTO scale_actions (event_id, holder) VALUES ($1, $2)")
                .bind(d["event"].as_str().unwrap_or_default().to_owned())
                .bind(who)
                .execute(&pool)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>("applied".to_owned())
        }
    });
    let role = Role::new("cro")
        .domains(["revenue"])
        .authority(AuthorityConfig::new().autonomous(["give_discount"]))
        .clearance(clearance())
        .with_agent_memory(memory)
        .action_tool(tool)
        .with_proposals(stores.proposals.clone());
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text("[]")));
    let runtime = Arc::new(
        RoleRuntime::new(llm)
            .with_stores(stores.clone())
            .role(role)
            .expect("the role"),
    );
    let leasing = Leasing::new(holder)
        .lease_ms(LEASE_MS)
        .poll(Duration::from_millis(100));
    let cognitive = CognitiveLoop::durable(runtime, stores.inbox.clone(), leasing);
    println!("ready");
    if let Err(e) = cognitive.run(std::future::pending()).await {
        eprintln!("the loop stopped: {e}");
        std::process::exit(1);
    }
}

fn spawn_loop(url: &str, holder: &str) -> Reaped {
    let mut child = Command::new(std::env::current_exe().expect("this test's binary"))
        .args(["--loop-process", url, holder])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("a loop process");
    // Wait until it runs (connected, migrated).
    let stdout = child.stdout.take().expect("its stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("its first line");
    assert_eq!(line.trim(), "ready", "loop process {holder}");
    Reaped(child)
}

/// The rows `sql` returns in the test's tenant (the tables' row-level
/// security shows a connection only the tenant it names).
async fn rows(pool: &sqlx::PgPool, sql: &'static str) -> Vec<sqlx::postgres::PgRow> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', $1, true)")
        .bind(TENANT)
        .execute(&mut *tx)
        .await
        .unwrap();
    let rows = sqlx::query(sql).fetch_all(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    rows
}

async fn inbox_scale() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let started = Instant::now();
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let pg = openvibe::postgres::PgStores::connect(&url)
        .await
        .expect("the database");
    let pool = pg.pool().clone();
    sqlx::query(
        "CREATE TABLE scale_actions (event_id text NOT NULL, holder text NOT NULL, at timestamptz NOT NULL DEFAULT now())",
    )
    .execute(&pool)
    .await
    .unwrap();
    // The CRO's insight: it is confident about discounts, so it acts.
    MemoryGateway::new()
        .with_stores(pg.stores())
        .agent_memory("cro", &clearance())
        .store_insight(openvibe::roles::testing::discount_insight())
        .await
        .unwrap();

    let (_service_a, addr_a) = spawn_service(&url, TENANT);
    let (_service_b, addr_b) = spawn_service(&url, TENANT);
    let mut generation = 0;
    let mut loops: Vec<Reaped> = (0..LOOPS)
        .map(|i| spawn_loop(&url, &format!("loop-{i}-{generation}")))
        .collect();
    let clients = [
        openvibe::remote::RemoteMemory::connect(&addr_a, None)
            .await
            .unwrap(),
        openvibe::remote::RemoteMemory::connect(&addr_b, None)
            .await
            .unwrap(),
    ];
    let caller = CallerContext::new(TENANT, Principal::user("scale"))
        .with_clearance(Clearance::unrestricted());

    // Push round-robin through both instances, eight at a time, while the
    // loops work.
    let mut pushing = Some({
        let clients = clients.clone();
        let caller = caller.clone();
        tokio::spawn(async move {
            let ids: Vec<usize> = (0..EVENTS).collect();
            for chunk in ids.chunks(8) {
                let pushes = chunk.iter().map(|i| {
                    let client = &clients[i % 2];
                    let caller = &caller;
                    async move {
                        let accepted = client
                            .push(
                                caller,
                                "cro",
                                discount(&format!("e{i:04}")),
                                EventSource::Http,
                            )
                            .await
                            .unwrap_or_else(|e| panic!("push e{i:04}: {e}"));
                        assert!(!accepted.duplicate);
                    }
                });
                futures::future::join_all(pushes).await;
            }
        })
    });

    // Kill one loop process every few seconds (SIGKILL) and start another.
    let mut kills = 0;
    let mut last_kill = Instant::now();
    let mut last_milestone = 0;
    let done = loop {
        let done: i64 = rows(
            &pool,
            "SELECT count(*) FROM inbox_events WHERE status = 'done'",
        )
        .await[0]
            .get(0);
        if done as usize == EVENTS {
            break done;
        }
        if pushing
            .as_ref()
            .is_some_and(tokio::task::JoinHandle::is_finished)
        {
            // A failed push says why at once.
            if let Some(pushed) = pushing.take() {
                pushed.await.unwrap();
            }
        }
        assert!(
            started.elapsed() < BUDGET,
            "{done} of {EVENTS} events done within {BUDGET:?} ({kills} kills)"
        );
        let milestone = (done as usize) * 10 / EVENTS;
        if (last_kill.elapsed() >= KILL_EVERY || milestone > last_milestone)
            && (done as usize) < EVENTS * 9 / 10
        {
            last_milestone = milestone;
            let victim = kills % LOOPS;
            generation += 1;
            let killed = &mut loops[victim].0;
            killed.kill().expect("SIGKILL");
            killed.wait().expect("reaped");
            loops[victim] = spawn_loop(&url, &format!("loop-{victim}-{generation}"));
            kills += 1;
            last_kill = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let took = started.elapsed();
    if let Some(pushed) = pushing {
        pushed.await.unwrap();
    }
    drop(loops);

    // Every event: done once, each stage once in its journal.
    let events = rows(
        &pool,
        "SELECT event->>'id' AS id, status, attempts, trace FROM inbox_events",
    )
    .await;
    assert_eq!(events.len(), EVENTS, "no event lost, none twice");
    let stage_names: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
    let (mut ran, mut interrupted, mut resumed) = (Vec::new(), Vec::new(), 0);
    for row in &events {
        let id: String = row.get("id");
        let status: String = row.get("status");
        assert_eq!(status, "done", "{id}");
        let attempts: i32 = row.get("attempts");
        if attempts > 1 {
            resumed += 1;
        }
        let trace: Value = row.get("trace");
        let stages: Vec<&str> = trace["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        assert_eq!(stages, stage_names, "{id}: each stage once");
        match trace["act"]["kind"].as_str() {
            Some("ran") => ran.push(id),
            Some("failed") if trace["act"]["error"] == ACT_INTERRUPTED => interrupted.push(id),
            other => panic!("{id}: act {other:?}: {trace}"),
        }
    }
    // The tool counter: no action twice; every action that ran, once.
    let counts = sqlx::query("SELECT event_id, count(*) AS n FROM scale_actions GROUP BY event_id")
        .fetch_all(&pool)
        .await
        .unwrap();
    let counted: std::collections::BTreeMap<String, i64> = counts
        .iter()
        .map(|r| (r.get("event_id"), r.get("n")))
        .collect();
    for (id, n) in &counted {
        assert_eq!(*n, 1, "{id}: the action ran {n} times");
    }
    for id in &ran {
        assert!(
            counted.contains_key(id),
            "{id} ran but its tool never counted"
        );
    }
    assert!(
        kills >= 5,
        "only {kills} kills: the test went too fast to test anything"
    );
    assert!(resumed > 0, "no event was taken over after {kills} kills");
    println!(
        "inbox_scale: {done} events done in {:.1} s ({:.0} events/s) through {LOOPS} loop \
         processes and 2 service instances; {kills} kills, {resumed} events taken over, \
         {} actions begun by a killed process recorded interrupted",
        took.as_secs_f64(),
        EVENTS as f64 / took.as_secs_f64(),
        interrupted.len()
    );
    drop(pg);
    schema.drop().await;
}
