//! `openvibe mcp` on stdio, driven by a real MCP client (rmcp's, spawning
//! the binary as MCP hosts do), with an API key from a governance file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/pg.rs"]
mod support;

use serde_json::json;

const POLICY: &str = "\
shared_namespace: shared
namespaces:
  team:
    read: ['*']
    write: [alice]
api_keys:
  - { principal: alice, kind: agent, env: STDIO_KEY_ALICE, namespace: team }
  - { principal: bob, kind: agent, env: STDIO_KEY_BOB, namespace: team }
";

#[path = "support/mcp.rs"]
mod mcp;
use mcp::call;

#[tokio::test]
async fn the_mcp_tools_over_stdio() {
    let dir = std::env::temp_dir().join(format!("openvibe-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("governance.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let client = mcp::spawn(
        &["mcp", "--memory", "--governance", policy.to_str().unwrap()],
        &[
            ("STDIO_KEY_ALICE", "alice-secret"),
            ("STDIO_KEY_BOB", "bob-secret"),
            ("OPENVIBE_API_KEY", "alice-secret"),
        ],
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "saveMemory"), "{tools:?}");

    let saved = call(
        &client,
        "saveMemory",
        json!({"content": "the pilot starts in May", "scope": "team"}),
    )
    .await;
    assert_ne!(saved.is_error, Some(true), "{saved:?}");
    let memory = saved.structured_content.unwrap();
    assert_eq!(memory["creator"], "agent:alice");
    let found = call(&client, "searchMemory", json!({"query": "pilot"})).await;
    assert_eq!(
        found.structured_content.unwrap()["memories"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let set = call(
        &client,
        "appendPlanState",
        json!({"plan_id": "p1", "key": "log", "value": "x"}),
    )
    .await;
    // The plan does not exist: a typed tool error, not a crash.
    assert_eq!(set.is_error, Some(true), "{set:?}");
    assert_eq!(
        set.structured_content.unwrap()["error"]["code"],
        "not_found"
    );
    client.cancel().await.unwrap();

    // An unknown key: the server refuses to start, saying why.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args(["mcp", "--memory", "--governance"])
        .arg(&policy)
        .env("STDIO_KEY_ALICE", "alice-secret")
        .env("STDIO_KEY_BOB", "bob-secret")
        .env("OPENVIBE_API_KEY", "wrong")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown API key"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An MCP client on `openvibe mcp` over PostgreSQL at `url`, with seed 003's
/// policy, acting with `key`.
async fn seed_003_client(
    url: &str,
    policy: &std::path::Path,
    key: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    mcp::spawn(
        &[
            "mcp",
            "--database-url",
            url,
            "--governance",
            policy.to_str().unwrap(),
        ],
        &[
            ("MCP_API_KEY_L", "key-of-l"),
            ("MCP_API_KEY_C", "key-of-c"),
            ("OPENVIBE_API_KEY", key),
        ],
    )
    .await
}

#[tokio::test]
async fn expired_memories_are_cleaned_up_over_stdio_on_postgres_by_l_only() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let dir = std::env::temp_dir().join(format!("openvibe-mcp-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("seed-003.governance.yaml");
    std::fs::write(&policy, openvibe::governance::examples::SEED_003).unwrap();

    let c = seed_003_client(&schema.url(), &policy, "key-of-c").await;
    let saved = call(
        &c,
        "saveMemory",
        json!({"content": "a workaround until the fix lands", "scope": "global", "ttl_seconds": 1}),
    )
    .await;
    assert_ne!(saved.is_error, Some(true), "{saved:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let found = call(&c, "searchMemory", json!({"query": "workaround"})).await;
    assert_eq!(
        found.structured_content.unwrap()["memories"],
        json!([]),
        "expired on PostgreSQL too"
    );
    let refused = call(&c, "deleteExpiredMemories", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(
        refused.structured_content.unwrap()["error"]["code"],
        "forbidden"
    );
    c.cancel().await.unwrap();

    let l = seed_003_client(&schema.url(), &policy, "key-of-l").await;
    let cleaned = call(&l, "deleteExpiredMemories", json!({})).await;
    assert_ne!(cleaned.is_error, Some(true), "{cleaned:?}");
    assert_eq!(cleaned.structured_content.unwrap()["deleted"], 1);
    l.cancel().await.unwrap();
    schema.drop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
