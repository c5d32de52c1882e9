//! The schemas `#[tool]` produces are what Anthropic accepts as `input_schema`:
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `type: object`, `properties`, and `required` (always present).

use openvibe_primitives::{Tool, tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// Search the CRM for contacts and deals.
#[tool(params(query = "Words to look for", limit = "At most this many results"))]
async fn search_crm(query: String, limit: Option<u32>) -> Result<String, std::io::Error> {
    Ok(format!("{query} {limit:?}"))
}

/// How urgent a follow-up is.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Within a week.
    Low,
    /// Within a day.
    High,
}

/// A contact to follow up with.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Contact {
    /// Full name.
    pub name: String,
    /// E-mail address.
    pub email: String,
}

/// Schedule a follow-up with one or more contacts.
///
/// Sends calendar invitations.
#[tool(name = "schedule_follow_up", action = "send_invites", sequential)]
fn follow_up(contacts: Vec<Contact>, priority: Priority, note: Option<String>) -> String {
    format!("{} contact(s), {priority:?}, {note:?}", contacts.len())
}

/// Return today's date.
#[tool]
fn today() -> String {
    "2026-11-22".into()
}

fn definition(tool: &dyn Tool) -> serde_json::Value {
    serde_json::to_value(tool.definition()).unwrap()
}

#[test]
fn search_crm_schema() {
    insta::assert_json_snapshot!(definition(&SearchCrm));
}

#[test]
fn follow_up_schema() {
    let tool = FollowUp;
    assert_eq!(tool.name(), "schedule_follow_up");
    assert_eq!(tool.action(), Some("send_invites"));
    assert!(!tool.parallel_safe());
    assert_eq!(
        tool.description(),
        "Schedule a follow-up with one or more contacts.\n\nSends calendar invitations."
    );
    insta::assert_json_snapshot!(definition(&tool));
}

#[test]
fn zero_argument_schema() {
    let schema = Today.input_schema();
    assert_eq!(schema["properties"], serde_json::json!({}));
    assert_eq!(schema["required"], serde_json::json!([]));
    insta::assert_json_snapshot!(definition(&Today));
}

#[tokio::test]
async fn generated_tools_call_the_function() {
    let out = SearchCrm
        .call(serde_json::json!({"query": "acme"}))
        .await
        .unwrap();
    assert_eq!(out, "acme None");
    let out = FollowUp
        .call(serde_json::json!({
            "contacts": [{"name": "Ann", "email": "ann@acme.test"}],
            "priority": "high"
        }))
        .await
        .unwrap();
    assert_eq!(out, "1 contact(s), High, None");
    let err = FollowUp
        .call(serde_json::json!({"contacts": [], "priority": "urgent"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("schedule_follow_up"), "{err}");
    assert_eq!(
        Today.call(serde_json::json!({})).await.unwrap(),
        "2026-11-22"
    );
}
