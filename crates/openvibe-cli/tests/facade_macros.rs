//! The attribute macros work in a crate that depends only on the `openvibe`
//! facade (as this one does): generated code names `::openvibe::primitives`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe::protocols::StateError;
use openvibe::{State, Tool};

/// Look up a company's headcount.
#[openvibe::tool]
fn headcount(name: String) -> u32 {
    if name == "Acme" { 200 } else { 0 }
}

/// You qualify leads.
#[openvibe::llm_node(output_key = "score")]
fn qualify(state: &State) -> Result<String, StateError> {
    Ok(format!("Score {}", state.require_str("lead")?))
}

#[tokio::test]
async fn macros_resolve_through_the_facade() {
    assert_eq!(
        Headcount
            .call(serde_json::json!({"name": "Acme"}))
            .await
            .unwrap(),
        "200"
    );
    let node = qualify();
    assert_eq!(node.system_prompt(), "You qualify leads.");
    assert_eq!(node.get_output_key(), Some("score"));
}
