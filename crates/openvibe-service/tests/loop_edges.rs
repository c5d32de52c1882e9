//! Events pushed into a role's cognitive loop over HTTP (the remote client
//! and a plain HTTP client) and MCP (a real MCP client), issue 40: the
//! caller comes from the key, the source from the edge; a key without the
//! write right in the role's namespace is refused and nothing is
//! journaled; an event pushed twice runs once; a service without a loop
//! answers 404.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use openvibe_governance::Governance;
use openvibe_memory::ClearanceProfile;
use openvibe_primitives::FnTool;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    Action, Classification, DecisionEvent, EventInbox, EventSource, LlmResponse, Stage, StoreError,
};
use openvibe_roles::{AuthorityConfig, CognitiveLoop, InMemoryJournal, Role, RoleRuntime};
use openvibe_service::{MCP_PATH, Service};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const POLICY: &str = r#"
namespaces:
  cro: { read: [ops, reader], write: [ops] }
api_keys:
  - { principal: ops, env: KEY_OPS, namespace: cro, clearance: { everywhere: restricted } }
  - { principal: reader, env: KEY_READER, namespace: cro, clearance: { everywhere: restricted } }
"#;

fn governance() -> Governance {
    Governance::from_yaml_with_keys(
        POLICY,
        "loop.yaml",
        &[("KEY_OPS", "key-ops"), ("KEY_READER", "key-reader")],
    )
    .unwrap()
}

fn runtime(stores: &openvibe_protocols::Stores) -> Arc<RoleRuntime> {
    let tool = FnTool::new(
        "apply_discount",
        "Apply a discount.",
        |d: Value| async move { Ok::<_, String>(format!("{}% applied", d["pct"])) },
    );
    let role = Role::new("cro")
        .domains(["revenue"])
        .authority(AuthorityConfig::new().autonomous(["give_discount"]))
        .decision_matrix(
            serde_json::from_value(json!({"outcomes": {"low": {"low": "act"}}})).unwrap(),
        )
        .clearance(ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted))
        .action_tool(tool);
    Arc::new(
        RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text("[]"))))
            .with_stores(stores.clone())
            .role(role)
            .unwrap(),
    )
}

fn event(id: &str) -> DecisionEvent {
    DecisionEvent::new(id, "discount.requested", "revenue")
        .summary("Acme asks 10% off")
        .data(json!({"amount": 500}))
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10}),
        ))
}

async fn mcp(url: &str, key: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{url}{MCP_PATH}")).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_pushed_over_http_and_mcp_run_once_as_the_key_may() {
    let stores = openvibe_memory::in_memory_stores();
    let cognitive = Arc::new(CognitiveLoop::new(
        runtime(&stores),
        Arc::new(InMemoryJournal::new()),
    ));
    let url = support::spawn(
        Service::governed(stores.clone(), governance()).with_inbox(cognitive.clone()),
    )
    .await;
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move { cognitive.run(std::future::pending()).await })
    };

    // HTTP through the remote client: the source is the edge's.
    let ops = openvibe_remote::RemoteMemory::connect(&url, Some("key-ops".into()))
        .await
        .unwrap();
    let ctx = openvibe_protocols::CallerContext::new(
        "default",
        openvibe_protocols::Principal::service("ops"),
    );
    let first = ops
        .push(&ctx, "cro", event("e-http"), EventSource::Mcp)
        .await
        .unwrap();
    assert!(!first.duplicate);
    assert!(
        ops.push(&ctx, "cro", event("e-http"), EventSource::Code)
            .await
            .unwrap()
            .duplicate
    );

    // A key without the write right in `cro`: refused, nothing journaled.
    let reader = openvibe_remote::RemoteMemory::connect(&url, Some("key-reader".into()))
        .await
        .unwrap();
    let reader_ctx = openvibe_protocols::CallerContext::new(
        "default",
        openvibe_protocols::Principal::service("reader"),
    );
    let refused = reader
        .push(&reader_ctx, "cro", event("e-refused"), EventSource::Code)
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Unauthorized { reason, .. }) if reason.contains("no write right")),
        "{refused:?}"
    );
    // Bad input and an unknown role: typed, nothing journaled.
    assert!(matches!(
        ops.push(
            &ctx,
            "cro",
            DecisionEvent::new("e-bad", "", "revenue"),
            EventSource::Code
        )
        .await,
        Err(StoreError::InvalidInput { .. })
    ));
    assert!(matches!(
        ops.push(&ctx, "cmo", event("e-cmo"), EventSource::Code)
            .await,
        Err(StoreError::NotFound { .. })
    ));

    // MCP, with a real client.
    let client = mcp(&url, "key-ops").await;
    let pushed = client
        .call_tool(
            CallToolRequestParams::new("pushEvent").with_arguments(
                json!({"role": "cro", "event": serde_json::to_value(event("e-mcp")).unwrap()})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    assert_ne!(pushed.is_error, Some(true), "{pushed:?}");
    assert_eq!(
        pushed.structured_content.as_ref().unwrap()["duplicate"],
        false
    );

    // Both run through every stage; the traces say where they came from.
    let mut http = None;
    for _ in 0..200 {
        http = ops.trace(&ctx, "cro", "e-http").await.unwrap();
        if http.as_ref().is_some_and(|t| t.is_done()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let http = http.expect("journaled");
    assert_eq!(http.source, EventSource::Http);
    assert_eq!(http.stages.len(), Stage::ALL.len(), "{}", http.render());
    let mut traced = Value::Null;
    for _ in 0..200 {
        let result = client
            .call_tool(
                CallToolRequestParams::new("eventTrace").with_arguments(
                    json!({"role": "cro", "id": "e-mcp"})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            )
            .await
            .unwrap();
        traced = result.structured_content.unwrap_or(Value::Null);
        if traced["next"].is_null() && traced["stages"].is_array() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(traced["source"], "mcp", "{traced}");
    assert_eq!(traced["stages"].as_array().unwrap().len(), 6, "{traced}");
    assert!(cognitive.trace("cro", "e-refused").await.unwrap().is_none());
    assert!(cognitive.trace("cro", "e-bad").await.unwrap().is_none());
    // A plain HTTP client reads the trace too; an unknown event is 404.
    let missing = reqwest::Client::new()
        .get(format!("{url}/v1/loop/cro/events/nope"))
        .bearer_auth("key-ops")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    client.cancel().await.unwrap();
    running.abort();

    // A service without a loop: 404, a typed error.
    let plain = support::spawn(Service::governed(stores, governance())).await;
    let response = reqwest::Client::new()
        .post(format!("{plain}/v1/loop/cro/events"))
        .bearer_auth("key-ops")
        .json(&event("e-nowhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["kind"], "loop", "{body}");
}
