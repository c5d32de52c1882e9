//! Quick start: qualify a lead with an `LlmNode`, enrich it with an
//! `AgentNode` that calls a CRM tool, and print the state and the episodes.
//!
//! Offline by default (a scripted model). `OPENVIBE_LLM=anthropic` uses
//! Claude (needs `ANTHROPIC_API_KEY`); `OPENVIBE_LLM=openai` uses any
//! OpenAI-compatible server (`OPENAI_BASE_URL`, optional `OPENAI_API_KEY`,
//! `OPENVIBE_MODEL`).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{
    AgentNode, AnthropicProvider, LlmNode, Node, NodeContext, OpenAiProvider, ScopeSpec, tool,
};
use openvibe_protocols::{
    ContentBlock, Episode, EpisodeSink, LlmProvider, LlmResponse, State, StoreError,
};
use serde_json::{Value, json};

/// Search the CRM for a company; returns its record as JSON.
#[tool(params(company = "Company name, e.g. Acme Corp"))]
fn search_crm(company: String) -> Result<Value, String> {
    match company.to_lowercase().as_str() {
        "acme" | "acme corp" => Ok(json!({
            "company": "Acme Corp",
            "employees": 200,
            "industry": "logistics",
            "open_deals": 1,
            "champion": "VP Operations",
        })),
        _ => Err(format!("no CRM record for `{company}`")),
    }
}

/// Collects episodes in memory (the memory core provides real sinks).
#[derive(Default)]
struct Episodes(Mutex<Vec<Episode>>);

#[async_trait]
impl EpisodeSink for Episodes {
    async fn record(&self, episode: Episode) -> Result<(), StoreError> {
        self.0
            .lock()
            .map_err(|_| StoreError::backend("episode log lock poisoned"))?
            .push(episode);
        Ok(())
    }
}

fn scripted_model() -> ScriptedLlm {
    ScriptedLlm::new([
        LlmResponse::text(r#"{"score": 82, "tier": "A", "reason": "200 employees, active deal"}"#)
            .with_usage(41, 18),
        LlmResponse::from_blocks(vec![
            ContentBlock::text("Let me check the CRM."),
            ContentBlock::ToolUse {
                id: "toolu_01".into(),
                name: "search_crm".into(),
                input: json!({"company": "Acme Corp"}),
            },
        ])
        .with_usage(120, 25),
        LlmResponse::text(
            "```json\n{\"industry\": \"logistics\", \"champion\": \"VP Operations\", \"next_step\": \"book a demo\"}\n```",
        )
        .with_usage(180, 30),
    ])
}

fn model() -> Result<Arc<dyn LlmProvider>, Box<dyn std::error::Error>> {
    Ok(match std::env::var("OPENVIBE_LLM").as_deref() {
        Ok("anthropic") => Arc::new(AnthropicProvider::from_env()?),
        Ok("openai") => {
            let provider = OpenAiProvider::from_env()?;
            match std::env::var("OPENVIBE_MODEL") {
                Ok(m) => Arc::new(provider.with_model(m)),
                Err(_) => Arc::new(provider),
            }
        }
        _ => Arc::new(scripted_model()),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let qualify = LlmNode::new(
        "qualify_lead",
        "You are a lead qualification specialist. Answer with JSON: {\"score\": 0-100, \"tier\": \"A\"|\"B\"|\"C\", \"reason\": \"...\"}.",
        |s: &State| Ok(format!("Score this lead: {}", s.require_str("lead")?)),
    )
    .model("sonnet")
    .temperature(0.2)
    .output_key("qualification")
    .memory_scope(ScopeSpec::new().domain("revenue").entity_from_key("company"));

    let enrich = AgentNode::new(
        "enrich_lead",
        "You enrich lead data with CRM information. Use the tools, then answer with JSON.",
        |s: &State| Ok(format!("Enrich: {}", s.require_str("lead")?)),
    )
    .model("sonnet")
    .tool(SearchCrm)
    .max_turns(5)
    .output_key("enriched");

    let episodes = Arc::new(Episodes::default());
    let ctx = NodeContext::new(model()?)
        .with_operator_id("revenue_ops")
        .with_episode_sink(episodes.clone());

    let mut state = State::new();
    state.insert(
        "lead",
        "Acme Corp, 200 employees, came from the logistics webinar",
    );
    state.insert("company", "acme_corp");

    let state = qualify.run(&ctx, state).await?;
    let state = enrich.run(&ctx, state).await?;

    println!("== final state\n{}", serde_json::to_string_pretty(&state)?);
    println!("\n== episodes");
    let episodes = episodes
        .0
        .lock()
        .map_err(|_| "episode log lock poisoned")?
        .clone();
    for ep in &episodes {
        println!(
            "- {}/{} [domain={} entity={}] {} ms, {} tokens in / {} out\n    in:  {}\n    out: {}",
            ep.operator_id,
            ep.node_name,
            ep.domain,
            ep.entity,
            ep.duration_ms,
            ep.tokens_in,
            ep.tokens_out,
            ep.input_summary,
            ep.output_summary
        );
    }
    Ok(())
}
