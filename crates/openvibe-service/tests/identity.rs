//! Identity from the key on every edge (issue 37): an ordinary key's writes
//! carry its source whatever the body says, its requests may name only the
//! projects the governance file grants it (a 403 naming the rule for any
//! other), over HTTP, through the remote client and through MCP tools, and
//! the audit trail names the source and the tool of every write. A trusted
//! runtime states its caller, and the record's source stands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "../../openvibe-postgres/tests/common/mod.rs"]
mod common;

use openvibe_api::{CALLER_HEADER, Caller, ErrorBody, ErrorCode, PROJECT_HEADER};
use openvibe_governance::Governance;
use openvibe_protocols::{
    AuditOp, AuditQuery, CallerContext, Fact, FactQuery, Principal, StoreError, Stores,
};
use openvibe_service::{MCP_PATH, Service};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const POLICY: &str = r#"
shared_namespace: global
recall: [self, developer, global]
namespaces:
  developer:
    project_scoped: true
    read: [l-cto, cursor-ide]
    write: [l-cto, cursor-ide]
    delete: [l-cto, cursor-ide]
  global: { read: [l-cto, cursor-ide], write: [l-cto, cursor-ide] }
api_keys:
  - { principal: L-CTO, env: KEY_L, namespace: developer, source: l9-kernel, projects: '*',
      clearance: { everywhere: restricted } }
  - { principal: Cursor-IDE, env: KEY_C, namespace: developer, source: cursor-ide, projects: [l9],
      clearance: { everywhere: restricted } }
  - { principal: runtime, env: KEY_RUNTIME, trusted: true }
"#;

fn governance() -> Governance {
    Governance::from_yaml_with_keys(
        POLICY,
        "identity.yaml",
        &[
            ("KEY_L", "key-l"),
            ("KEY_C", "key-c"),
            ("KEY_RUNTIME", "key-runtime"),
        ],
    )
    .unwrap()
}

async fn post(url: &str, key: &str, headers: &[(&str, String)], body: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(key)
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn everything() -> CallerContext {
    CallerContext::system()
}

/// The whole audit trail, flushed.
async fn trail(stores: &Stores) -> Vec<openvibe_protocols::AuditEntry> {
    stores.audit.flush().await.unwrap();
    stores
        .audit
        .query(
            &everything(),
            &AuditQuery {
                limit: 1000,
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap()
}

/// Every fact of `project` (and of none).
async fn all_facts(stores: &Stores, project: &str) -> Vec<Fact> {
    stores
        .facts
        .query(
            &everything().with_project(project),
            &FactQuery::default().limit(1000),
        )
        .await
        .unwrap()
}

async fn identity_on_every_edge(stores: Stores) {
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let facts = format!("{url}/v1/memory/facts");
    let body = |id: &str| json!({"id": id, "content": "prefer sqlx", "namespace": "developer", "source": "l9-kernel"});

    // HTTP: the body claims L's source; the key's is stamped. The project
    // the request names is one the key may name.
    let (status, stored) = post(
        &facts,
        "key-c",
        &[(PROJECT_HEADER, "l9".into())],
        body("f1"),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["source"], "cursor-ide");
    assert_eq!(stored["project_id"], "l9");
    assert_eq!(stored["owner"], "service:cursor-ide");

    // Another project: a 403 naming the rule, nothing written.
    let (status, refused) = post(
        &facts,
        "key-c",
        &[(PROJECT_HEADER, "l10".into())],
        body("f2"),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let refused: ErrorBody = serde_json::from_value(refused).unwrap();
    assert_eq!(refused.error.code, ErrorCode::Forbidden);
    let reason = refused.error.reason.unwrap_or_default();
    assert!(reason.contains("`l9`"), "{reason}");
    // The same through the caller header (the remote client's way).
    let stated = Caller::from(
        &CallerContext::new("default", Principal::service("cursor-ide")).with_project("l10"),
    );
    let (status, _) = post(
        &facts,
        "key-c",
        &[(CALLER_HEADER, stated.to_header())],
        body("f2"),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(all_facts(&stores, "l9").await.len(), 1);
    assert!(
        all_facts(&stores, "l10").await.is_empty(),
        "refusals write nothing"
    );
    // L may name any project.
    let (status, stored) = post(
        &facts,
        "key-l",
        &[(PROJECT_HEADER, "l10".into())],
        body("f3"),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        (stored["source"].as_str(), stored["project_id"].as_str()),
        (Some("l9-kernel"), Some("l10"))
    );

    // A trusted runtime states its caller; the record's source stands.
    let crm = Caller::from(&CallerContext::new(
        "default",
        Principal::service("crm-sync"),
    ));
    let (status, stored) = post(
        &facts,
        "key-runtime",
        &[(CALLER_HEADER, crm.to_header())],
        json!({"id": "f4", "content": "Acme renews in May", "source": "crm"}),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["source"], "crm");

    // The remote client with Cursor's key: its context names a project.
    let remote = openvibe_remote::RemoteMemory::connect(&url, Some("key-c".into()))
        .await
        .unwrap()
        .stores();
    let cursor = CallerContext::new("default", Principal::service("cursor-ide"));
    let stored = remote
        .facts
        .store(
            &cursor.clone().with_project("l9"),
            Fact::new("f5", "from the client")
                .namespace("developer")
                .source("forged"),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            stored.meta.source.as_str(),
            stored.meta.project_id.as_deref()
        ),
        ("cursor-ide", Some("l9"))
    );
    let err = remote
        .facts
        .query(&cursor.clone().with_project("l10"), &FactQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unauthorized { .. }), "{err}");

    // MCP: the tool's `project` argument goes through the same rule, and
    // its writes are stamped and audited as the tool.
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}{MCP_PATH}"))
        .auth_header("key-c");
    let mcp = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let save = |project: &str| {
        let Value::Object(args) = json!({
            "content": "use the workspace lints", "scope": "developer", "project": project
        }) else {
            unreachable!()
        };
        CallToolRequestParams::new("saveMemory").with_arguments(args)
    };
    let refused = mcp.call_tool(save("l10")).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let error = refused.structured_content.unwrap_or_default();
    assert_eq!(error["error"]["code"], "forbidden", "{error}");
    let saved = mcp.call_tool(save("l9")).await.unwrap();
    assert_ne!(saved.is_error, Some(true), "{saved:?}");
    let memory = saved.structured_content.unwrap_or_default();
    assert_eq!(memory["source"], "cursor-ide");
    let mcp_id = memory["id"].as_str().unwrap().to_owned();

    // The audit trail: who, which source, which tool.
    let trail = trail(&stores).await;
    let insert = |id: &str| {
        trail
            .iter()
            .find(|e| e.operation == AuditOp::Insert && e.record_id.as_deref() == Some(id))
            .unwrap_or_else(|| panic!("the insert of {id} is audited: {trail:#?}"))
    };
    let f1 = insert("f1");
    assert_eq!(f1.principal, "service:cursor-ide");
    assert_eq!(f1.source.as_deref(), Some("cursor-ide"));
    assert_eq!(f1.tool.as_deref(), Some("http:storeFact"));
    assert_eq!(insert("f5").tool.as_deref(), Some("http:storeFact"));
    let by_mcp = insert(&mcp_id);
    assert_eq!(by_mcp.source.as_deref(), Some("cursor-ide"));
    assert_eq!(by_mcp.tool.as_deref(), Some("mcp:saveMemory"));
    assert_eq!(insert("f4").source.as_deref(), Some("crm"));
}

/// Seed 004's "merge + dedupe": a fact and its promoted copy are one result
/// of a merged recall (HTTP search and MCP `searchMemory`), while a store
/// query still returns both; promotion over MCP follows the rights.
async fn merged_recall_is_one_per_lineage(stores: Stores) {
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let l9 = [(PROJECT_HEADER, "l9".to_owned())];
    let (status, stored) = post(
        &format!("{url}/v1/memory/facts"),
        "key-l",
        &l9,
        json!({"id": "f1", "content": "prefer sqlx for queries", "namespace": "developer"}),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    post(
        &format!("{url}/v1/memory/facts"),
        "key-l",
        &l9,
        json!({"id": "f2", "content": "prefer sqlx migrations", "namespace": "global"}),
    )
    .await;

    // Promotion over MCP: Cursor may write global, not an undeclared scope.
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}{MCP_PATH}"))
        .auth_header("key-c");
    let mcp = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let tool = |name: &str, args: Value| {
        let Value::Object(args) = args else {
            unreachable!()
        };
        CallToolRequestParams::new(name.to_owned()).with_arguments(args)
    };
    let refused = mcp
        .call_tool(tool(
            "promoteMemory",
            json!({"id": "f1", "to": "l-private", "project": "l9"}),
        ))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let promoted = mcp
        .call_tool(tool(
            "promoteMemory",
            json!({"id": "f1", "to": "global", "project": "l9", "note": "for everyone"}),
        ))
        .await
        .unwrap();
    assert_ne!(promoted.is_error, Some(true), "{promoted:?}");
    let copy = promoted.structured_content.unwrap_or_default();
    assert_eq!(copy["id"], "f1@global", "{copy}");
    assert_eq!(copy["scope"], "global");

    // The store query returns the fact and its copy ...
    let (status, found) = post(
        &format!("{url}/v1/memory/facts/query"),
        "key-c",
        &l9,
        json!({"text": "sqlx"}),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let ids = |v: &Value| {
        let mut ids: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&found), ["f1", "f1@global", "f2"]);
    // ... the merged recall one per lineage, the home namespace's winning.
    let search = format!("{url}/v1/memory/search");
    let (status, found) = post(&search, "key-c", &l9, json!({"query": "sqlx"})).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(ids(&found), ["f1", "f2"]);
    let (_, found) = post(
        &search,
        "key-c",
        &l9,
        json!({"query": "sqlx", "scopes": ["global"]}),
    )
    .await;
    assert_eq!(ids(&found), ["f1@global", "f2"]);
    let (status, refused) = post(&search, "key-c", &l9, json!({"query": "sqlx", "top_k": 0})).await;
    assert_eq!(status, 400, "{refused}");
    let searched = mcp
        .call_tool(tool(
            "searchMemory",
            json!({"query": "sqlx", "project": "l9"}),
        ))
        .await
        .unwrap();
    let memories = searched.structured_content.unwrap_or_default()["memories"].clone();
    assert_eq!(ids(&memories), ["f1", "f2"]);

    // The promotion is audited with its tool.
    let trail = trail(&stores).await;
    assert!(
        trail
            .iter()
            .any(|e| e.operation == AuditOp::Promote
                && e.tool.as_deref() == Some("mcp:promoteMemory")),
        "{trail:#?}"
    );
}

#[tokio::test]
async fn merged_recall_is_one_per_lineage_in_memory() {
    merged_recall_is_one_per_lineage(openvibe_memory::in_memory_stores()).await;
}

#[tokio::test]
async fn merged_recall_is_one_per_lineage_on_postgres() {
    let Some(_) = common::database_url() else {
        return;
    };
    merged_recall_is_one_per_lineage(common::fresh_stores().await.stores()).await;
}

#[tokio::test]
async fn identity_comes_from_the_key_on_every_edge_in_memory() {
    identity_on_every_edge(openvibe_memory::in_memory_stores()).await;
}

#[tokio::test]
async fn identity_comes_from_the_key_on_every_edge_on_postgres() {
    let Some(_) = common::database_url() else {
        return;
    };
    identity_on_every_edge(common::fresh_stores().await.stores()).await;
}
