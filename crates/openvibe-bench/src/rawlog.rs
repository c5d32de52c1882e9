//! The L1 raw log (group `rawlog`): what logging adds to one `llm_node`
//! call through a role's LLM, and how fast the background writer appends
//! (in process, and to PostgreSQL when `DATABASE_URL` is set).
//!
//! The per-call figure runs on a two-thread runtime, as a service would:
//! the calls on one worker, the writer's appends on the other. What the
//! raw log adds to the call path is the difference between the same calls
//! with the log on and off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use openvibe_bench::{mean_of_batches, report};
use openvibe_memory::{AgentMemory, ClearanceProfile, RawLogConfig, RawLogWriter};
use openvibe_primitives::{LlmNode, Node, NodeContext};
use openvibe_protocols::{
    CallOrigin, CallerContext, LlmError, LlmProvider, LlmRequest, LlmResponse, RawCall,
    RawLogStore, State,
};
use openvibe_roles::Role;

/// A provider that answers instantly.
struct Instant0(LlmResponse);

#[async_trait]
impl LlmProvider for Instant0 {
    async fn call(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        Ok(self.0.clone())
    }
}

fn answer() -> LlmResponse {
    LlmResponse::text(r#"{"score": 85, "tier": "A", "reason": "200 employees, active deal"}"#)
        .with_usage(120, 30)
        .with_model("claude-sonnet-4-5-20250929")
}

/// Mean time of one `llm_node` call through the role's LLM, raw log on or off.
async fn per_call(config: RawLogConfig) -> (Duration, AgentMemory) {
    let memory = AgentMemory::new("cro").with_raw_log_config(config);
    let role = Role::new("cro")
        .soul("You are the CRO. Data-driven.")
        .clearance(ClearanceProfile::new("cro"))
        .with_agent_memory(memory.clone())
        .with_llm(Arc::new(Instant0(answer())));
    let llm = match role.llm() {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("rawlog: {e}");
            return (Duration::ZERO, memory);
        }
    };
    let ctx = NodeContext::new(llm).with_operator_id("revenue_ops");
    let node = LlmNode::new(
        "qualify_lead",
        "You are a lead qualification specialist.",
        |s: &State| Ok(format!("Score this lead: {}", s.require_str("lead")?)),
    )
    .model("sonnet")
    .output_key("score");
    let mut input = State::new();
    input.insert(
        "lead",
        "Acme Corp, 200 employees, came from the logistics webinar",
    );
    let per_op = mean_of_batches(20, 2_000, || {
        let state = input.clone();
        let (node, ctx) = (&node, &ctx);
        async move {
            if let Ok(out) = node.run(ctx, state).await {
                std::hint::black_box(out);
            }
        }
    })
    .await;
    memory.flush_raw_log().await;
    (per_op, memory)
}

fn call(i: usize) -> RawCall {
    let mut request = LlmRequest::new(
        "sonnet",
        format!("Score this lead: company {i}, 200 employees"),
    )
    .system("You are the CRO. Data-driven.\n\nYou are a lead qualification specialist.");
    request.origin = Some(CallOrigin {
        operator_id: "revenue_ops".into(),
        node_name: "qualify_lead".into(),
        episode_id: format!("ep_{i}"),
        ..CallOrigin::default()
    });
    RawCall::new("cro", chrono::Utc::now(), 1200, request, Ok(answer()))
}

/// Calls per second the writer appends to `store` (logged back to back, then flushed).
async fn appends_per_s(store: Arc<dyn RawLogStore>, ctx: CallerContext, n: usize) -> f64 {
    let writer = RawLogWriter::new(store, ctx, "cro", RawLogConfig::new());
    let start = Instant::now();
    for i in 0..n {
        writer.log(call(i)).await;
    }
    writer.flush().await;
    let stats = writer.stats();
    if stats.appended != n as u64 {
        eprintln!(
            "rawlog: appended {} of {n} ({} dropped)",
            stats.appended, stats.dropped
        );
    }
    n as f64 / start.elapsed().as_secs_f64()
}

async fn measure() {
    let (off, _) = per_call(RawLogConfig::new().disabled()).await;
    let (on, memory) = per_call(RawLogConfig::new()).await;
    let stats = memory.raw_log().stats();
    if stats.appended != stats.logged {
        eprintln!(
            "rawlog: {} of {} calls appended",
            stats.appended, stats.logged
        );
    }
    let overhead = on.saturating_sub(off);
    report("rawlog_llm_node_call_us", on.as_secs_f64() * 1e6, "us");
    report("rawlog_overhead_us", overhead.as_secs_f64() * 1e6, "us");
    let in_memory = appends_per_s(
        Arc::new(openvibe_in_memory::InMemoryRawLog::new()),
        CallerContext::agent("cro"),
        20_000,
    )
    .await;
    report("rawlog_memory_appends_per_s", in_memory, "rows/s");
    match std::env::var("DATABASE_URL") {
        Ok(url) => match crate::pg::schema_pool(&url, "bench_rawlog", 4).await {
            Ok(pool) => {
                let store = Arc::new(openvibe_postgres::PgRawLog::new(pool.clone()));
                let rate = appends_per_s(
                    store,
                    CallerContext::agent("cro").with_tenant("bench_rawlog"),
                    20_000,
                )
                .await;
                report("rawlog_pg_flush_rows_per_s", rate, "rows/s");
                if let Err(e) = crate::pg::set_tenant_and(
                    &pool,
                    "bench_rawlog",
                    "DELETE FROM raw_calls WHERE tenant_id = 'bench_rawlog'",
                )
                .await
                {
                    eprintln!("rawlog: cleaning up: {e}");
                }
                pool.close().await;
            }
            Err(e) => eprintln!("rawlog: PostgreSQL figures skipped: {e}"),
        },
        Err(_) => eprintln!("rawlog: DATABASE_URL not set; PostgreSQL figures skipped"),
    }
}

/// Run the group (on a two-thread runtime of its own, in a thread of its own).
pub async fn run() {
    let (done, finished) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
        {
            Ok(rt) => rt.block_on(measure()),
            Err(e) => eprintln!("rawlog: cannot start a runtime: {e}"),
        }
        let _ = done.send(());
    });
    let _ = finished.await;
}
