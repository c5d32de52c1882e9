//! The cognitive loop and beliefs (issue 40): group `loop` (in memory).
//!
//! - `loop_event_us`: one event through the whole loop (perceive, decide,
//!   act, observe, reflect, learn; journaled after each stage in memory),
//!   mean over 2,000 events, with a zero-latency tool and in-memory stores;
//! - `loop_handle_us`: the same events through `Role::handle` (decide, act,
//!   record the run: what the stages do, without the loop);
//! - `loop_event_overhead_us`: the difference, the loop's own cost per event;
//! - `belief_prompt_assembly_p50_us`: one `MemoryAssembler::assemble` of a
//!   role with 100 active beliefs and 1,000 insights in its domain (the
//!   `## Beliefs` section and the rest); `prompt_assembly_p50_us` the same
//!   role without beliefs, for comparison.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use openvibe_bench::{report, sample};
use openvibe_memory::{AgentMemory, ClearanceProfile, MemoryAssembler, MemoryGateway};
use openvibe_primitives::FnTool;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    Action, Belief, CallerContext, Classification, Clearance, ContextAssembler,
    DEFAULT_TOKEN_BUDGET, DecisionEvent, Insight, MemoryScope, Stores, Verdict,
};
use openvibe_roles::{AuthorityConfig, CognitiveLoop, EventSource, Role, RoleRuntime};
use serde_json::json;

const EVENTS: u32 = 2_000;

pub(crate) fn clearance() -> ClearanceProfile {
    ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted)
}

fn role(stores: &Stores) -> Result<Role, String> {
    let tool = FnTool::new(
        "apply_discount",
        "Apply a discount.",
        |d: serde_json::Value| async move { Ok::<_, String>(format!("{}% applied", d["pct"])) },
    );
    role_with_tool(stores, tool)
}

/// The CRO of the loop figures, acting on discounts through `tool`.
pub(crate) fn role_with_tool(
    stores: &Stores,
    tool: impl openvibe_primitives::Tool + 'static,
) -> Result<Role, String> {
    role_in(&MemoryGateway::new().with_stores(stores.clone()), tool)
}

/// The CRO of the loop figures in `gateway`'s stores and tenant.
pub(crate) fn role_in(
    gateway: &MemoryGateway,
    tool: impl openvibe_primitives::Tool + 'static,
) -> Result<Role, String> {
    let memory = gateway.agent_memory("cro", &clearance());
    let matrix = serde_json::from_value(json!({"outcomes": {"low": {"low": "act"}}}))
        .map_err(|e| e.to_string())?;
    Ok(Role::new("cro")
        .domains(["revenue"])
        .authority(AuthorityConfig::new().autonomous(["give_discount"]))
        .decision_matrix(matrix)
        .clearance(clearance())
        .with_agent_memory(memory)
        .action_tool(tool))
}

pub(crate) fn event(prefix: &str, k: u32) -> DecisionEvent {
    DecisionEvent::new(format!("{prefix}{k}"), "discount.requested", "revenue")
        .summary(format!("account {k} asks for 10% off the annual plan"))
        .data(json!({"amount": 500}))
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10}),
        ))
}

async fn runtime() -> Result<Arc<RoleRuntime>, String> {
    let stores = openvibe_memory::in_memory_stores();
    let role = role(&stores)?;
    Ok(Arc::new(
        RoleRuntime::new(Arc::new(ScriptedLlm::default()))
            .with_stores(stores)
            .role(role)
            .map_err(|e| e.to_string())?,
    ))
}

/// Mean µs per event through the loop.
async fn through_the_loop() -> Result<f64, String> {
    let runtime = runtime().await?;
    let cognitive = CognitiveLoop::with_config(
        runtime,
        Arc::new(openvibe_roles::InMemoryJournal::new()),
        openvibe_roles::LoopConfig::default().capacity(EVENTS as usize),
    );
    let done = AtomicU64::new(0);
    let all_done = tokio::sync::Notify::new();
    let started = Instant::now();
    for k in 0..EVENTS {
        cognitive
            .push("cro", event("loop", k), EventSource::Code)
            .await
            .map_err(|e| e.to_string())?;
    }
    let report = cognitive
        .run_with(all_done.notified(), |trace| {
            black_box(trace);
            if done.fetch_add(1, Ordering::SeqCst) + 1 == u64::from(EVENTS) {
                all_done.notify_one();
            }
        })
        .await
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if report.events != u64::from(EVENTS) || report.failed > 0 {
        return Err(format!("the loop ran {report:?}"));
    }
    Ok(took.as_secs_f64() * 1e6 / f64::from(EVENTS))
}

/// Mean µs per event through `Role::handle`.
async fn handled() -> Result<f64, String> {
    let runtime = runtime().await?;
    let role = runtime.get_role("cro").map_err(|e| e.to_string())?;
    let started = Instant::now();
    for k in 0..EVENTS {
        let handled = role
            .handle(&event("direct", k))
            .await
            .map_err(|e| e.to_string())?;
        black_box(handled);
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / f64::from(EVENTS))
}

/// p50 µs of one assembly of the CRO's revenue context, with `beliefs`
/// active beliefs.
async fn assembly_p50(beliefs: u32) -> Result<f64, String> {
    let memory = AgentMemory::new("cro").with_clearance(&clearance());
    for i in 0..1_000u32 {
        memory
            .store_insight(
                Insight::new(
                    format!("ins{i:04}"),
                    "cro",
                    format!(
                        "accounts of segment {} renew when onboarding is fast",
                        i % 40
                    ),
                    0.5 + f64::from(i % 50) / 100.0,
                )
                .domain("revenue"),
            )
            .await
            .map_err(|e| e.to_string())?;
    }
    let ann = CallerContext::user("ann").with_clearance(Clearance::unrestricted());
    for i in 0..beliefs {
        let belief = memory
            .propose_belief(
                Belief::new(
                    "cro",
                    format!("segment {i} accounts close faster with a VP sponsor"),
                    0.9,
                )
                .domain("revenue")
                .from_insights([format!("ins{i:04}")], 5),
            )
            .await
            .map_err(|e| e.to_string())?;
        memory
            .belief_store()
            .decide(&ann, &belief.id, &Verdict::approve("seen it"))
            .await
            .map_err(|e| e.to_string())?;
    }
    let assembler = MemoryAssembler::new(memory, clearance());
    let scope = MemoryScope {
        domain: Some("revenue".into()),
        query: Some("segment 7 renewal with a VP sponsor".into()),
        ..MemoryScope::default()
    };
    let check = assembler
        .assemble(&scope, DEFAULT_TOKEN_BUDGET)
        .await
        .map_err(|e| e.to_string())?;
    if beliefs > 0 && !check.contains("## Beliefs") {
        return Err("no ## Beliefs section".into());
    }
    let samples = sample(200, 2_000, || {
        let assembler = &assembler;
        let scope = &scope;
        async move {
            match assembler.assemble(scope, DEFAULT_TOKEN_BUDGET).await {
                Ok(text) => {
                    black_box(text);
                }
                Err(e) => eprintln!("assemble failed: {e}"),
            }
        }
    })
    .await;
    Ok(samples.quantile_us(0.50))
}

/// Run the group.
pub async fn run() {
    match (through_the_loop().await, handled().await) {
        (Ok(looped), Ok(direct)) => {
            report("loop_event_us", looped, "us");
            report("loop_handle_us", direct, "us");
            report("loop_event_overhead_us", (looped - direct).max(0.0), "us");
        }
        (Err(e), _) | (_, Err(e)) => eprintln!("loop: {e}"),
    }
    match assembly_p50(100).await {
        Ok(p50) => report("belief_prompt_assembly_p50_us", p50, "us"),
        Err(e) => eprintln!("loop: belief assembly: {e}"),
    }
    match assembly_p50(0).await {
        Ok(p50) => report("prompt_assembly_p50_us", p50, "us"),
        Err(e) => eprintln!("loop: assembly: {e}"),
    }
}
