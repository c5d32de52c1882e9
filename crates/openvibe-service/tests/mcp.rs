//! The MCP server over streamable HTTP with a real MCP client (rmcp's):
//! the seed's per-caller rules (seed 003: L-CTO and Cursor-IDE), creator
//! and source set by the server, refusals as tool errors that write nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use openvibe_governance::Governance;
use openvibe_governance::examples::SEED_003;
use openvibe_protocols::{CallerContext, FactQuery};
use openvibe_service::{MCP_PATH, Service};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

fn governance() -> Governance {
    Governance::from_yaml_with_keys(
        SEED_003,
        "seed-003.governance.yaml",
        &[("MCP_API_KEY_L", "key-l"), ("MCP_API_KEY_C", "key-c")],
    )
    .unwrap()
}

async fn client(url: &str, key: &str) -> RunningService<rmcp::RoleClient, ()> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{url}{MCP_PATH}")).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn call(
    client: &RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

#[tokio::test]
async fn mcp_tools_follow_the_seed_rules() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let l = client(&url, "key-l").await;
    let c = client(&url, "key-c").await;

    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for expected in [
        "saveMemory",
        "searchMemory",
        "getMemoryStats",
        "deleteExpiredMemories",
        "setPlanState",
    ] {
        assert!(tools.contains(&expected.to_owned()), "{tools:?}");
    }

    // Cursor saves into `global`: the server sets creator and source.
    let saved = call(
        &c,
        "saveMemory",
        json!({"content": "prefer sqlx over diesel", "scope": "global"}),
    )
    .await;
    assert_ne!(saved.is_error, Some(true), "{saved:?}");
    let memory = structured(&saved);
    assert_eq!(memory["creator"], "service:cursor-ide");
    // Seed 003's source of Cursor's writes: the key's, never the caller's.
    assert_eq!(memory["source"], "cursor-ide");
    assert_eq!(memory["scope"], "global");
    // L saves into l-private.
    let saved = call(
        &l,
        "saveMemory",
        json!({"content": "sqlx migration plan for the kernel", "scope": "l-private", "project": "l9"}),
    )
    .await;
    assert_ne!(saved.is_error, Some(true), "{saved:?}");

    // Cursor may not write l-private: a tool error, nothing written.
    let before = stores
        .facts
        .query(&CallerContext::system(), &FactQuery::default())
        .await
        .unwrap()
        .len();
    let refused = call(
        &c,
        "saveMemory",
        json!({"content": "sneaky", "scope": "l-private", "project": "l9"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(structured(&refused)["error"]["code"], "forbidden");
    let after = stores
        .facts
        .query(&CallerContext::system(), &FactQuery::default())
        .await
        .unwrap()
        .len();
    assert_eq!(before, after);

    // Searches see only what the caller may read.
    let found = call(&c, "searchMemory", json!({"query": "sqlx"})).await;
    let memories = structured(&found)["memories"].as_array().unwrap().clone();
    assert_eq!(memories.len(), 1, "{memories:?}");
    assert_eq!(memories[0]["scope"], "global");
    let found = call(
        &l,
        "searchMemory",
        json!({"query": "sqlx", "project": "l9"}),
    )
    .await;
    assert_eq!(
        structured(&found)["memories"].as_array().unwrap().len(),
        2,
        "{found:?}"
    );

    let stats = call(&c, "getMemoryStats", json!({})).await;
    assert_eq!(structured(&stats)["total"], 1);
    let stats = call(&l, "getMemoryStats", json!({"project": "l9"})).await;
    assert_eq!(structured(&stats)["per_scope"]["l-private"], 1);

    // Bad arguments are refused by the schema (unknown field).
    let bad = c
        .call_tool(
            CallToolRequestParams::new("saveMemory").with_arguments(
                json!({"content": "x", "creator": "L-CTO"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    let rejected = match bad {
        Err(_) => true,
        Ok(r) => r.is_error == Some(true),
    };
    assert!(rejected, "a caller cannot set the creator");

    l.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_without_a_key_is_refused() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores, governance())).await;
    let response = reqwest::Client::new()
        .post(format!("{url}{MCP_PATH}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}{MCP_PATH}"))
        .auth_header("wrong-key");
    assert!(
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn mcp_answers_only_the_hosts_it_is_told() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |url: String| async move {
        reqwest::Client::new()
            .post(format!("{url}{MCP_PATH}"))
            .header("host", "memory.example")
            .header("authorization", "Bearer key-l")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    assert_eq!(post(url).await, 403, "an unknown Host is refused");
    let mut config = openvibe_service::ServiceConfig::default();
    config.mcp_allowed_hosts.push("memory.example".into());
    let url = support::spawn(Service::governed(stores, governance()).with_config(config)).await;
    assert_eq!(post(url).await, 200);
}

#[tokio::test]
async fn mcp_memories_expire_and_only_a_manager_cleans_them_up() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let l = client(&url, "key-l").await;
    let c = client(&url, "key-c").await;

    let saved = call(
        &c,
        "saveMemory",
        json!({"content": "temporary workaround for the flaky test", "scope": "global", "ttl_seconds": 1}),
    )
    .await;
    assert_ne!(saved.is_error, Some(true), "{saved:?}");
    assert!(structured(&saved)["expires_at"].is_string(), "{saved:?}");
    let saved = call(
        &l,
        "saveMemory",
        json!({"content": "temporary kernel note", "scope": "l-private", "project": "l9", "ttl_seconds": 1}),
    )
    .await;
    assert_ne!(saved.is_error, Some(true), "{saved:?}");
    call(
        &c,
        "saveMemory",
        json!({"content": "lasting workaround notes", "scope": "global"}),
    )
    .await;
    let found = call(&c, "searchMemory", json!({"query": "workaround"})).await;
    assert_eq!(structured(&found)["memories"].as_array().unwrap().len(), 2);

    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let found = call(&c, "searchMemory", json!({"query": "workaround"})).await;
    let memories = structured(&found)["memories"].as_array().unwrap().clone();
    assert_eq!(
        memories.len(),
        1,
        "the expired memory is invisible: {memories:?}"
    );
    assert!(memories[0]["expires_at"].is_null());
    let stats = call(&c, "getMemoryStats", json!({})).await;
    assert_eq!(structured(&stats)["total"], 1);

    // Cursor may not run the cleanup: a tool error.
    let refused = call(&c, "deleteExpiredMemories", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(structured(&refused)["error"]["code"], "forbidden");
    // L may: both expired memories go (Cursor's refusal deleted nothing),
    // one per batch, and the lasting one stays.
    let cleaned = call(
        &l,
        "deleteExpiredMemories",
        json!({"batch": 1, "project": "l9"}),
    )
    .await;
    assert_ne!(cleaned.is_error, Some(true), "{cleaned:?}");
    assert_eq!(structured(&cleaned)["deleted"], 2, "{cleaned:?}");
    assert_eq!(structured(&cleaned)["batches"], 3, "{cleaned:?}");
    let again = call(&l, "deleteExpiredMemories", json!({"project": "l9"})).await;
    assert_eq!(structured(&again)["deleted"], 0);
    let deletes = stores
        .audit
        .query(
            &CallerContext::system(),
            &openvibe_protocols::AuditQuery {
                operation: Some(openvibe_protocols::AuditOp::Delete),
                ..openvibe_protocols::AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        deletes
            .iter()
            .filter(|e| e.status == openvibe_protocols::AuditStatus::Ok)
            .count(),
        2
    );
    assert!(
        deletes
            .iter()
            .any(|e| e.status == openvibe_protocols::AuditStatus::Refused
                && e.principal == "service:cursor-ide"),
        "the refusal is audited: {deletes:?}"
    );
    let found = call(&c, "searchMemory", json!({"query": "workaround"})).await;
    assert_eq!(structured(&found)["memories"].as_array().unwrap().len(), 1);

    l.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

/// The goal tools through a real MCP client: a key reports metrics into a
/// scope it may write (the reporter is the key's principal, never an
/// argument), the same id counts once, a scope it may not write refuses
/// and counts nothing, and progress is read back.
#[tokio::test]
async fn mcp_goal_tools_read_goals_and_report_metrics() {
    use openvibe_protocols::{Goal, KeyResult, Objective};
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let l = client(&url, "key-l").await;
    let c = client(&url, "key-c").await;
    let objective = Objective {
        id: "pipeline".into(),
        owner: "cro".into(),
        title: "Pipeline $2M this quarter".into(),
        due: chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
        key_results: vec![KeyResult {
            id: "value".into(),
            metric: "pipeline_usd".into(),
            baseline: 0.0,
            target: 2_000_000.0,
            unit: "USD".into(),
            due: None,
        }],
    };
    stores
        .goals
        .put(
            &CallerContext::system().with_tenant("default"),
            Goal::new(objective).namespace("global"),
        )
        .await
        .unwrap();
    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for expected in [
        "listGoals",
        "goalProgress",
        "reportMetric",
        "updateInitiative",
    ] {
        assert!(tools.contains(&expected.to_owned()), "{tools:?}");
    }
    let listed = call(&c, "listGoals", json!({"role": "cro"})).await;
    assert_ne!(listed.is_error, Some(true), "{listed:?}");
    assert_eq!(
        structured(&listed)["items"][0]["objective"]["id"],
        "pipeline"
    );
    let report = json!({"role": "cro", "metric": "pipeline_usd", "value": 40000.0,
                        "note": "closed Acme, $40k", "id": "acme-won", "scope": "global"});
    let first = call(&c, "reportMetric", report.clone()).await;
    assert_ne!(first.is_error, Some(true), "{first:?}");
    let body = structured(&first);
    assert_eq!(body["owner"], "service:cursor-ide");
    assert_eq!(
        (body["seq"].as_u64(), body["total"].as_f64()),
        (Some(1), Some(40000.0))
    );
    let again = call(&c, "reportMetric", report).await;
    assert_eq!(structured(&again)["seq"], 1, "the same id counts once");
    // Cursor may not write l-private: refused, nothing counted.
    let refused = call(
        &c,
        "reportMetric",
        json!({"role": "cro", "metric": "pipeline_usd", "value": 1.0, "scope": "l-private", "project": "l9"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let bad = call(
        &l,
        "reportMetric",
        json!({"role": "cro", "metric": "pipeline_usd", "value": 1.0, "mode": "multiply", "scope": "global"}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    let progress = call(&l, "goalProgress", json!({"id": "pipeline"})).await;
    assert_ne!(progress.is_error, Some(true), "{progress:?}");
    let body = structured(&progress);
    assert_eq!(body["key_results"][0]["current"], 40000.0);
    assert_eq!(body["key_results"][0]["reports"], 1);
    assert_eq!(body["progress"], 0.02);
    let missing = call(&l, "goalProgress", json!({"id": "nope"})).await;
    assert_eq!(missing.is_error, Some(true));
    // An initiative moved by a person's word, through the tool.
    let system = CallerContext::system().with_tenant("default");
    let goal = stores
        .goals
        .get(&system, "pipeline")
        .await
        .unwrap()
        .unwrap();
    stores
        .goals
        .decompose(
            &system,
            "pipeline",
            &goal.fingerprint,
            vec![openvibe_protocols::Initiative::new(
                "Partner referrals",
                &[],
            )],
        )
        .await
        .unwrap();
    // Cursor changes only its own records: refused, nothing moves.
    let refused = call(
        &c,
        "updateInitiative",
        json!({"goal": "pipeline", "initiative": "i1", "status": "dropped"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(structured(&refused)["error"]["code"], "forbidden");
    // L (manage in `global`) drops it.
    let dropped = call(
        &l,
        "updateInitiative",
        json!({"goal": "pipeline", "initiative": "i1", "status": "dropped", "note": "covered by the partner deal"}),
    )
    .await;
    assert_ne!(dropped.is_error, Some(true), "{dropped:?}");
    let body = structured(&dropped);
    assert_eq!(body["initiatives"][0]["status"], "dropped");
    assert_eq!(
        body["initiatives"][0]["note"],
        "covered by the partner deal"
    );
    let late = call(
        &l,
        "updateInitiative",
        json!({"goal": "pipeline", "initiative": "i1", "status": "done"}),
    )
    .await;
    assert_eq!(late.is_error, Some(true), "dropped stays dropped: {late:?}");
    let unknown = call(
        &l,
        "updateInitiative",
        json!({"goal": "pipeline", "initiative": "i1", "status": "finished"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");
}

/// The belief tools through a real MCP client: a proposed belief is
/// listed; a key of no person may not approve it (the reason names the
/// rule, nothing changes); `listBeliefs` filters by status.
#[tokio::test]
async fn mcp_belief_tools_list_and_guard_approval() {
    use openvibe_protocols::{Belief, BeliefStatus};
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let c = client(&url, "key-c").await;
    stores
        .beliefs
        .propose(
            &CallerContext::agent("cro").with_tenant("default"),
            Belief::new("cro", "Webinar leads close faster", 0.8)
                .id("b1")
                .domain("revenue")
                .namespace("global"),
        )
        .await
        .unwrap();
    // A person may approve a belief as a constraint through the tool.
    let tools = c.list_all_tools().await.unwrap();
    let decide = tools.iter().find(|t| t.name == "decideBelief").unwrap();
    assert_eq!(
        decide.input_schema["properties"]["constraint"]["type"], "boolean",
        "{:?}",
        decide.input_schema
    );
    let listed = call(&c, "listBeliefs", json!({})).await;
    assert_ne!(listed.is_error, Some(true), "{listed:?}");
    assert_eq!(structured(&listed)["items"][0]["id"], "b1");
    let refused = call(
        &c,
        "decideBelief",
        json!({"id": "b1", "approve": true, "reason": "ok"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let reason = structured(&refused)["error"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(reason.contains("approve"), "{reason}");
    let still = stores
        .beliefs
        .get(&CallerContext::system().with_tenant("default"), "b1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(still.status, BeliefStatus::Proposed);
    let active = call(&c, "listBeliefs", json!({"status": "active"})).await;
    assert_eq!(structured(&active)["items"], json!([]));
    let bad = call(&c, "listBeliefs", json!({"status": "maybe"})).await;
    assert_eq!(bad.is_error, Some(true));
}

/// The space tools through a real MCP client: a member posts (its key is
/// the author; an argument naming another is refused), reads the log and
/// lists its spaces; a key that is no member sees nothing.
#[tokio::test]
async fn mcp_space_tools_post_as_the_key_and_read_as_members() {
    use openvibe_protocols::{Member, Space};
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    stores
        .spaces
        .create(
            &CallerContext::system().with_tenant("default"),
            Space::new("team")
                .id("team")
                .namespace("global")
                .member(Member::new("service:l-cto").owning(["kernel"])),
        )
        .await
        .unwrap();
    let l = client(&url, "key-l").await;
    let c = client(&url, "key-c").await;
    let posted = call(
        &l,
        "postMessage",
        json!({"space": "team", "body": {"type": "text", "text": "hello"}, "id": "m1"}),
    )
    .await;
    assert_ne!(posted.is_error, Some(true), "{posted:?}");
    assert_eq!(structured(&posted)["owner"], "service:l-cto");
    assert_eq!(structured(&posted)["seq"], 1);
    let forged = call(
        &l,
        "postMessage",
        json!({"space": "team", "body": {"type": "text", "text": "x"}, "owner": "service:cursor-ide"}),
    )
    .await;
    assert_eq!(forged.is_error, Some(true), "{forged:?}");
    let read = call(&l, "readMessages", json!({"space": "team"})).await;
    assert_ne!(read.is_error, Some(true), "{read:?}");
    assert_eq!(structured(&read)["messages"][0]["id"], "m1");
    let listed = call(&l, "listSpaces", json!({})).await;
    assert_eq!(structured(&listed)["items"][0]["id"], "team");
    // Cursor-IDE is no member: the space does not exist for it.
    let stranger = call(&c, "readMessages", json!({"space": "team"})).await;
    assert_eq!(stranger.is_error, Some(true), "{stranger:?}");
    let posted_by_stranger = call(
        &c,
        "postMessage",
        json!({"space": "team", "body": {"type": "text", "text": "let me in"}}),
    )
    .await;
    assert_eq!(posted_by_stranger.is_error, Some(true));
    let none = call(&c, "listSpaces", json!({})).await;
    assert_eq!(structured(&none)["items"], json!([]));
}

/// Each tool's input schema states what the stores check, and arguments
/// it refuses are a tool error naming the argument (`malformed_request`),
/// reaching no store; what it allows the tool takes.
#[tokio::test]
async fn mcp_arguments_are_checked_against_each_tools_schema() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let c = client(&url, "key-c").await;
    let tools = c.list_all_tools().await.unwrap();
    let save = tools.iter().find(|t| t.name == "saveMemory").unwrap();
    let content = &save.input_schema["properties"]["content"];
    assert!(content["pattern"].is_string(), "{content}");
    assert_eq!(save.input_schema["additionalProperties"], json!(false));

    for (tool, args, pointer) in [
        ("saveMemory", json!({"content": "  "}), "/content"),
        (
            "saveMemory",
            json!({"content": "x", "creator": "agent:x"}),
            "/creator",
        ),
        (
            "saveMemory",
            json!({"content": "x", "ttl_seconds": 0}),
            "/ttl_seconds",
        ),
        ("listProposals", json!({"status": "someday"}), "/status"),
        ("listProposals", json!({"limit": 0}), "/limit"),
        (
            "setPlanState",
            json!({"plan_id": "p", "key": "", "value": 1}),
            "/key",
        ),
        (
            "readMessages",
            json!({"space": "s", "wait_ms": 999_999}),
            "/wait_ms",
        ),
    ] {
        let refused = call(&c, tool, args.clone()).await;
        assert_eq!(refused.is_error, Some(true), "{tool} {args}: {refused:?}");
        let error = &structured(&refused)["error"];
        assert_eq!(error["code"], "malformed_request", "{tool} {args}: {error}");
        assert_eq!(error["pointer"], pointer, "{tool} {args}: {error}");
    }
    let facts = stores
        .facts
        .query(&CallerContext::system(), &FactQuery::default())
        .await
        .unwrap();
    assert!(facts.is_empty(), "nothing reached the store: {facts:?}");
    // An integral float is the integer it is.
    let listed = call(&c, "listProposals", json!({"limit": 5.0})).await;
    assert_ne!(listed.is_error, Some(true), "{listed:?}");
}

/// After an erasure, the MCP tools find nothing about the subject (and the
/// audit entry of the search that quoted it is redacted).
#[tokio::test]
async fn mcp_finds_nothing_of_an_erased_entity() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let c = client(&url, "key-c").await;
    for content in ["acme_corp prefers sqlx", "globex prefers diesel"] {
        let saved = call(
            &c,
            "saveMemory",
            json!({"content": content, "scope": "global"}),
        )
        .await;
        assert_ne!(saved.is_error, Some(true), "{saved:?}");
    }
    let found = call(&c, "searchMemory", json!({"query": "acme_corp"})).await;
    assert!(
        structured(&found).to_string().contains("acme_corp"),
        "{found:?}"
    );

    let tenant = stores
        .facts
        .query(&CallerContext::system(), &FactQuery::default())
        .await
        .unwrap();
    let tenant = tenant[0].meta.tenant_id.clone();
    let admin = CallerContext::system().with_tenant(tenant);
    let report = openvibe_memory::forget(
        stores.admin.as_ref(),
        stores.audit.as_ref(),
        &admin,
        &openvibe_protocols::ErasureSubject::Entity("acme_corp".into()),
        openvibe_memory::ForgetOptions::default(),
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(report.complete() && report.deleted() == 1, "{report:?}");
    assert!(report.audit_redacted >= 1, "{report:?}");

    let found = call(&c, "searchMemory", json!({"query": "acme_corp"})).await;
    assert_ne!(found.is_error, Some(true), "{found:?}");
    assert!(
        !structured(&found).to_string().contains("acme_corp"),
        "{found:?}"
    );
    let found = call(&c, "searchMemory", json!({"query": "globex"})).await;
    assert!(
        structured(&found).to_string().contains("globex"),
        "{found:?}"
    );
}
