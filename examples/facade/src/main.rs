//! The `openvibe` facade with its default features: a role runs an
//! operator with your own LLM provider, and remembers the run.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe::protocols::{LlmError, LlmProvider, LlmRequest, LlmResponse};
use openvibe::{ClearanceProfile, Operator, Role, RoleRuntime, State, llm_node};

/// Your provider: here one that answers without a network.
struct Canned;

#[async_trait]
impl LlmProvider for Canned {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let asked = request.messages.len();
        Ok(LlmResponse::text(format!(
            "{{\"score\": 88, \"messages\": {asked}}}"
        )))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let qualify = llm_node(
        "qualify_lead",
        "You are a lead qualification specialist.",
        |s: &State| Ok(format!("Score this lead: {}", s.require_str("lead")?)),
    )
    .output_key("score");
    let revenue_ops = Operator::new("revenue_ops")
        .node(qualify)
        .sequence("qualify", ["qualify_lead"])?;
    // A role with a clearance gets memory of its own from the runtime.
    let cro = Role::new("cro")
        .soul("You are the CRO.")
        .operator(revenue_ops)
        .clearance(ClearanceProfile::new("cro"));

    let runtime = RoleRuntime::new(Arc::new(Canned)).role(cro)?;
    let input: State = [("lead", "Acme Corp")].into_iter().collect();
    let out = runtime
        .activate("cro", "revenue_ops", "qualify", input)
        .await?;
    println!(
        "score: {}",
        out.get("score")
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert_eq!(
        out.get("score").and_then(|s| s.get("score")),
        Some(&88.into())
    );

    let memory = runtime
        .get_role("cro")?
        .agent_memory()
        .ok_or("the role has memory")?;
    let episodes = memory.recall_episodes(Default::default()).await?;
    println!("the role remembers {} run(s)", episodes.len());
    assert_eq!(episodes.len(), 1);
    Ok(())
}
