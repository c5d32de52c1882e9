//! Proposals end to end on PostgreSQL: a role proposes a large discount,
//! `openvibe proposals` lists, shows and approves it (against the database
//! with the governance file, and through the memory service), a key
//! without the `approve` right is refused (CLI and MCP), and a runtime
//! that stopped between the approval and the execution runs the action
//! once when it starts again, however many race.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/pg.rs"]
mod support;
#[path = "support/mcp.rs"]
mod support_mcp;
use openvibe::roles::testing::{DiscountCro, discount};
use support_mcp::call;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openvibe::protocols::{Outcome, ProposalStatus, Stores};
use openvibe::roles::Role;
use serde_json::json;

const POLICY: &str = "\
namespaces:
  cro:
    read: ['*']
    write: [cro]
    approve: [ann]
api_keys:
  - { principal: ann, kind: user, env: PROPOSALS_KEY_ANN, clearance: { everywhere: restricted } }
  - { principal: bot, kind: service, env: PROPOSALS_KEY_BOT, clearance: { everywhere: restricted } }
";

fn governance() -> openvibe::governance::Governance {
    openvibe::governance::Governance::from_yaml_with_keys(
        POLICY,
        "g.yaml",
        &[
            ("PROPOSALS_KEY_ANN", "ann-secret"),
            ("PROPOSALS_KEY_BOT", "bot-secret"),
        ],
    )
    .unwrap()
}

/// The discount CRO over `stores`, its memory governed by the policy.
async fn cro(stores: &Stores, runs: Arc<AtomicUsize>) -> Role {
    DiscountCro::new(stores)
        .counting(runs)
        .governed(Arc::new(governance()))
        .role()
        .await
        .unwrap()
}

/// `openvibe proposals ARGS` with `key`; (exit code, stdout, stderr).
fn cli(args: &[&str], key: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .arg("proposals")
        .args(args)
        .env("PROPOSALS_KEY_ANN", "ann-secret")
        .env("PROPOSALS_KEY_BOT", "bot-secret")
        .env("OPENVIBE_API_KEY", key)
        .env_remove("OPENVIBE_DATABASE_URL")
        .env_remove("OPENVIBE_SERVICE_URL")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn mcp(
    url: &str,
    policy: &std::path::Path,
    key: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let policy = policy.to_str().unwrap();
    support_mcp::spawn(
        &["mcp", "--database-url", url, "--governance", policy],
        &[
            ("PROPOSALS_KEY_ANN", "ann-secret"),
            ("PROPOSALS_KEY_BOT", "bot-secret"),
            ("OPENVIBE_API_KEY", key),
        ],
    )
    .await
}

#[tokio::test]
async fn proposals_are_decided_from_the_cli_and_mcp_and_run_once_after_a_restart() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let dir = std::env::temp_dir().join(format!("openvibe-proposals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("governance.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let policy_arg = policy.to_str().unwrap();
    let stores = openvibe_postgres::PgStores::connect(&url)
        .await
        .unwrap()
        .stores();
    let runs = Arc::new(AtomicUsize::new(0));

    // The first runtime proposes two large discounts, then stops.
    let first = cro(&stores, runs.clone()).await;
    let a = first.handle(&discount("e-a", 50_000)).await.unwrap();
    let b = first.handle(&discount("e-b", 60_000)).await.unwrap();
    assert_eq!(a.decision.outcome, Outcome::Propose);
    let (a, b) = (a.proposal.unwrap(), b.proposal.unwrap());
    drop(first);
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let db = ["--database-url", url.as_str(), "--governance", policy_arg];
    // ls and show, as ann.
    let (code, out, err) = cli(&[&["ls"], &db[..]].concat(), "ann-secret");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&a.id) && out.contains(&b.id) && out.contains("pending"),
        "{out}"
    );
    let (code, out, err) = cli(&[&["show", &a.id], &db[..]].concat(), "ann-secret");
    assert_eq!(code, 0, "{err}");
    for step in [
        "domain:",
        "authority:",
        "confidence:",
        "impact:",
        "i-discount",
    ] {
        assert!(out.contains(step), "{step} in {out}");
    }
    // The bot has no approve right: refused, nothing changes.
    let (code, _, err) = cli(
        &[&["approve", &a.id, "--reason", "me too"], &db[..]].concat(),
        "bot-secret",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("approve"), "{err}");
    // Ann approves a; rejecting b needs a reason.
    let (code, out, err) = cli(
        &[&["approve", &a.id, "--reason", "within budget"], &db[..]].concat(),
        "ann-secret",
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("approved") && out.contains("user:ann"),
        "{out}"
    );
    let (code, _, err) = cli(
        &[&["approve", &a.id, "--reason", "again"], &db[..]].concat(),
        "ann-secret",
    );
    assert_eq!(code, 1, "a second approval is a conflict: {err}");
    assert!(err.contains("not pending"), "{err}");

    // MCP: the bot may list but not decide; ann rejects b over MCP.
    let bot = mcp(&url, &policy, "bot-secret").await;
    let listed = call(&bot, "listProposals", json!({})).await;
    assert_ne!(listed.is_error, Some(true), "{listed:?}");
    let items = listed.structured_content.unwrap()["items"].clone();
    assert_eq!(items.as_array().unwrap().len(), 1, "{items}");
    let refused = call(
        &bot,
        "decideProposal",
        json!({"id": b.id, "approve": true, "reason": "bot says yes"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(
        refused.structured_content.unwrap()["error"]["code"],
        "forbidden"
    );
    bot.cancel().await.unwrap();
    let ann = mcp(&url, &policy, "ann-secret").await;
    let rejected = call(
        &ann,
        "decideProposal",
        json!({"id": b.id, "approve": false, "reason": "too much"}),
    )
    .await;
    assert_ne!(rejected.is_error, Some(true), "{rejected:?}");
    assert_eq!(rejected.structured_content.unwrap()["status"], "rejected");
    ann.cancel().await.unwrap();

    // The restarted runtimes (eight, racing): a runs once, b never.
    let started = chrono::Utc::now();
    let mut restarted = Vec::new();
    for _ in 0..8 {
        let role = cro(&stores, runs.clone()).await;
        restarted.push(tokio::spawn(async move {
            role.resume_proposals(started).await.unwrap()
        }));
    }
    let mut ran = 0;
    for r in restarted {
        ran += r.await.unwrap().ran.len();
    }
    assert_eq!(ran, 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Through the service: ls shows a executed, as ann's key says.
    let service = openvibe::service::Service::new(
        stores.clone(),
        openvibe::service::Access::Governed(Arc::new(governance())),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(service.serve(listener, async {
        let _ = stopped.await;
    }));
    let svc = format!("http://{addr}");
    let out = tokio::task::spawn_blocking(move || {
        cli(&["ls", "--service", &svc, "--status", "any"], "ann-secret")
    })
    .await
    .unwrap();
    assert_eq!(out.0, 0, "{}", out.2);
    assert!(
        out.1.contains("executed") && out.1.contains("rejected"),
        "{}",
        out.1
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();

    let done = stores
        .proposals
        .get(&cro(&stores, runs.clone()).await.proposal_context(), &a.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, ProposalStatus::Executed);
    assert_eq!(done.decided_by.as_deref(), Some("user:ann"));
    let _ = std::fs::remove_dir_all(&dir);
    schema.drop().await;
}
