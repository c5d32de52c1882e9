//! Layer-1 benchmarks: the overhead a node adds around a model call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use openvibe_bench::{mean_of_batches, report, sample};
use openvibe_primitives::{LlmNode, Node, NodeContext, ScopeSpec};
use openvibe_protocols::{
    Episode, EpisodeSink, LlmError, LlmProvider, LlmRequest, LlmResponse, State, StoreError,
};

/// A provider that answers instantly with a fixed JSON answer.
struct Instant(LlmResponse);

#[async_trait]
impl LlmProvider for Instant {
    async fn call(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        Ok(self.0.clone())
    }
}

/// A sink that keeps a count, so episodes are really built and handed over.
#[derive(Default)]
struct CountingSink(AtomicU64);

#[async_trait]
impl EpisodeSink for CountingSink {
    async fn record(&self, episode: Episode) -> Result<(), StoreError> {
        std::hint::black_box(&episode);
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Run the group.
pub async fn run() {
    let llm = Arc::new(Instant(
        LlmResponse::text(r#"{"score": 85, "tier": "A", "reason": "200 employees, active deal"}"#)
            .with_usage(120, 30)
            .with_model("claude-sonnet-4-5-20250929"),
    ));
    let sink = Arc::new(CountingSink::default());
    let ctx = NodeContext::new(llm)
        .with_operator_id("revenue_ops")
        .with_episode_sink(sink.clone());
    let node = LlmNode::new(
        "qualify_lead",
        "You are a lead qualification specialist.",
        |s: &State| Ok(format!("Score this lead: {}", s.require_str("lead")?)),
    )
    .model("sonnet")
    .output_key("score")
    .memory_scope(
        ScopeSpec::new()
            .domain("revenue")
            .entity_from_key("company"),
    );
    let mut input = State::new();
    input.insert(
        "lead",
        "Acme Corp, 200 employees, came from the logistics webinar",
    );
    input.insert("company", "acme_corp");

    let one_call = || {
        let state = input.clone();
        let (node, ctx) = (&node, &ctx);
        async move {
            match node.run(ctx, state).await {
                Ok(out) => {
                    std::hint::black_box(out);
                }
                Err(e) => eprintln!("llm_node failed during the benchmark: {e}"),
            }
        }
    };
    // Per-call figure: median of 30 rounds of 5,000 back-to-back calls.
    let mut rounds = Vec::new();
    for _ in 0..30 {
        rounds.push(mean_of_batches(1, 5_000, one_call).await);
    }
    rounds.sort_unstable();
    let median = rounds.get(rounds.len() / 2).copied().unwrap_or_default();
    report("llm_node_overhead_us", median.as_secs_f64() * 1e6, "us");
    let samples = sample(1_000, 20_000, one_call).await;
    report("llm_node_overhead_p99_us", samples.quantile_us(0.99), "us");
    if sink.0.load(Ordering::Relaxed) == 0 {
        eprintln!(
            "warning: no episode reached the sink; the benchmark did not measure the episode path"
        );
    }
}
