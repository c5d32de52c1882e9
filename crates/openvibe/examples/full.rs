//! The source design's full example (section 4): a CRO role with
//! `RevenueOps` (`qualify_lead`, `enrich_lead`) that asks a CMO, owner of
//! marketing and `ContentEngine` (`write_case_study`), for a case study
//! through their space, loaded by `RoleRuntime` from the configuration
//! directory `examples/full/`, run offline from its recorded cassette (the
//! model's answers) and recorded sentence vectors (memory ranked by
//! meaning).
//!
//! ```text
//! cargo run -p openvibe --example full
//! ```
//!
//! The operators' code is in `openvibe::full_example`; the roles, the soul,
//! the prompts and the triggers are the files in `examples/full/`.

use std::path::Path;
use std::sync::Arc;

use openvibe::RoleRuntime;
use openvibe::full_example::{self, CASSETTE};
use openvibe::memory::in_memory_stores;
use openvibe::primitives::testing::RecordReplayProvider;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/full");
    let llm = RecordReplayProvider::replay_str(CASSETTE, "examples/full/cassette.jsonl")?;
    let runtime = RoleRuntime::new(Arc::new(llm))
        .with_embedder(Arc::new(full_example::embeddings()?))
        .with_stores(in_memory_stores());
    let run = full_example::run(&config, runtime).await?;

    for (workflow, state) in &run.states {
        println!("{workflow}: {}", serde_json::to_string(state)?);
    }
    println!("\nL1: {} raw LLM calls", run.raw_calls.len());
    for episode in run.episodes.iter().rev() {
        let calls = run.pyramid.memory().raw_calls_of(&episode.id).await?;
        println!(
            "L2: {}/{} made from {} raw call(s)",
            episode.operator_id,
            episode.node_name,
            calls.len()
        );
    }
    for insight in run.distillation.reflection.insights() {
        let cited = run.pyramid.memory().cite(insight).await?;
        println!(
            "L3: ({:.2}) {} [cites {} raw calls]",
            insight.confidence,
            insight.content,
            cited.len()
        );
    }
    println!("published: {} fact(s)", run.distillation.published.len());
    for goal in &run.goals {
        println!(
            "goal {}: {:.1}% (initiatives: {})",
            goal.goal.id(),
            goal.progress * 100.0,
            goal.goal.initiatives.len()
        );
        for kr in &goal.key_results {
            println!(
                "  {}: {} of {} {}",
                kr.key_result.id, kr.current, kr.key_result.target, kr.key_result.unit
            );
        }
    }
    for (i, p) in run.priorities.items.iter().enumerate() {
        println!("priority {} of {}: {}", i + 1, run.priorities.day, p.title);
    }
    Ok(())
}
