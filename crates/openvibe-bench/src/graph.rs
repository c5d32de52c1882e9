//! Layer-2 benchmark: the per-node cost of running a `StateGraph`.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_bench::{mean_of_batches, report};
use openvibe_operators::{END, StateGraph};
use openvibe_primitives::{LlmNode, NodeContext};
use openvibe_protocols::{LlmError, LlmProvider, LlmRequest, LlmResponse, State};

/// A provider that answers instantly.
struct Instant(LlmResponse);

#[async_trait]
impl LlmProvider for Instant {
    async fn call(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        Ok(self.0.clone())
    }
}

const NODES: usize = 10;

/// Run the group.
pub async fn run() {
    let mut graph = StateGraph::new();
    for i in 0..NODES {
        let node = LlmNode::new(
            format!("step_{i}"),
            "You are one step of a pipeline.",
            move |s: &State| Ok(format!("Step {i} of lead {}", s.require_str("lead")?)),
        )
        .output_key(format!("out_{i}"));
        graph = graph.add_node(node);
        let next = if i + 1 < NODES {
            format!("step_{}", i + 1)
        } else {
            END.to_owned()
        };
        graph = graph.add_edge(format!("step_{i}"), next);
    }
    let graph = match graph.set_entry_point("step_0").compile() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("graph benchmark: cannot compile the graph: {e}");
            return;
        }
    };
    let ctx = NodeContext::new(Arc::new(Instant(
        LlmResponse::text(r#"{"ok": true, "score": 85}"#).with_usage(50, 10),
    )))
    .with_operator_id("bench");
    let mut input = State::new();
    input.insert("lead", "Acme Corp");

    let one_run = || {
        let state = input.clone();
        let (graph, ctx) = (&graph, &ctx);
        async move {
            match graph.invoke(ctx, state).await {
                Ok(out) => {
                    std::hint::black_box(out);
                }
                Err(e) => eprintln!("graph run failed during the benchmark: {e}"),
            }
        }
    };
    let mut rounds = Vec::new();
    for _ in 0..20 {
        rounds.push(mean_of_batches(1, 500, one_run).await);
    }
    rounds.sort_unstable();
    let per_run = rounds.get(rounds.len() / 2).copied().unwrap_or_default();
    report(
        "graph_node_overhead_us",
        per_run.as_secs_f64() * 1e6 / NODES as f64,
        "us",
    );
}
