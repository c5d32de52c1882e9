//! openvibe-primitives alone: an agent node calls a tool in a loop until
//! the model answers, against a scripted model (no network, no key).

use std::sync::Arc;

use openvibe_primitives::protocols::{ContentBlock, LlmResponse, State};
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{AgentNode, Node, NodeContext, tool};
use serde_json::json;

/// Current weather in a city.
#[tool(params(city = "City name, e.g. Paris"))]
async fn weather(city: String) -> Result<String, std::io::Error> {
    Ok(format!("{{\"city\": \"{city}\", \"temp_c\": 21}}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The model asks for the tool once, then answers.
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "weather".into(),
            input: json!({"city": "Paris"}),
        }]),
        LlmResponse::text("It is 21 °C in Paris."),
    ]);
    let node = AgentNode::new(
        "forecaster",
        "You answer weather questions.",
        |s: &State| Ok(format!("Weather in {}?", s.require_str("city")?)),
    )
    .tool(Weather)
    .output_key("answer");

    let input: State = [("city", "Paris")].into_iter().collect();
    let out = node
        .run(&NodeContext::new(Arc::new(llm.clone())), input)
        .await?;
    println!("answer: {}", out.get("answer").unwrap_or(&json!(null)));
    assert_eq!(out.get("answer"), Some(&json!("It is 21 °C in Paris.")));
    assert_eq!(
        llm.requests().len(),
        2,
        "one turn for the tool call, one for the answer"
    );
    Ok(())
}
