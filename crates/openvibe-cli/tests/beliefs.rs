//! `openvibe beliefs` on PostgreSQL with a governance file: a role's
//! proposed belief is listed and shown; a key without the `approve` right
//! is refused and nothing changes; a person approves it, then a successor
//! that supersedes it, and retires that one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/pg.rs"]
mod support;

use std::process::Command;

use openvibe::protocols::{Belief, BeliefStatus, CallerContext, Clearance};

const POLICY: &str = "\
namespaces:
  cro:
    read: ['*']
    write: [cro]
    approve: [ann]
api_keys:
  - { principal: ann, kind: user, env: BELIEFS_KEY_ANN, clearance: { everywhere: restricted } }
  - { principal: bot, kind: service, env: BELIEFS_KEY_BOT, clearance: { everywhere: restricted } }
";

/// `openvibe beliefs ARGS` with `key`; (exit code, stdout, stderr).
fn cli(args: &[&str], key: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .arg("beliefs")
        .args(args)
        .env("BELIEFS_KEY_ANN", "ann-secret")
        .env("BELIEFS_KEY_BOT", "bot-secret")
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

#[tokio::test]
async fn beliefs_are_decided_from_the_cli() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let stores = openvibe::postgres::PgStores::connect(&url)
        .await
        .unwrap()
        .stores();
    let dir = std::env::temp_dir().join(format!("openvibe-beliefs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("governance.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let policy = policy.to_str().unwrap();
    let cro = CallerContext::agent("cro").with_clearance(Clearance::unrestricted());
    let propose = |id: &str, statement: &str| {
        Belief::new("cro", statement, 0.85)
            .id(id)
            .domain("revenue")
            .namespace("cro")
            .from_insights(["i-webinar"], 7)
    };
    stores
        .beliefs
        .propose(&cro, propose("b1", "Webinar leads close faster"))
        .await
        .unwrap();
    let db = ["--database-url", url.as_str(), "--governance", policy];
    let run = |args: &[&str], key: &str| {
        let mut all = args.to_vec();
        all.extend(db);
        cli(&all, key)
    };
    let (code, out, err) = run(&["ls"], "ann-secret");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("b1") && out.contains("proposed") && out.contains("Webinar leads"),
        "{out}"
    );
    let (code, out, _) = run(&["show", "b1"], "ann-secret");
    assert_eq!(code, 0);
    assert!(out.contains("insights i-webinar (evidence 7)"), "{out}");
    // The bot may read but not approve: refused, naming the rule.
    let (code, _, err) = run(&["approve", "b1", "--reason", "ok"], "bot-secret");
    assert_ne!(code, 0);
    assert!(err.contains("approve"), "{err}");
    let ctx = CallerContext::system();
    let still = stores.beliefs.get(&ctx, "b1").await.unwrap().unwrap();
    assert_eq!(still.status, BeliefStatus::Proposed);
    let (code, out, err) = run(
        &["approve", "b1", "--reason", "the data agrees"],
        "ann-secret",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("b1 active"), "{out}");
    stores
        .beliefs
        .propose(
            &cro,
            propose("b2", "Webinar leads close faster after a demo").supersedes("b1"),
        )
        .await
        .unwrap();
    let (code, out, err) = run(&["approve", "b2"], "ann-secret");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("b1 is retired"), "{out}");
    let (code, _, err) = run(&["reject", "b1", "--reason", "late"], "ann-secret");
    assert_ne!(code, 0, "a retired belief is not decided again");
    assert!(err.contains("retired"), "{err}");
    let (code, out, _) = run(&["ls", "--status", "active"], "ann-secret");
    assert_eq!(code, 0);
    assert!(out.contains("b2") && !out.contains("b1 "), "{out}");
    let (code, out, err) = run(
        &["retire", "b2", "--reason", "the market moved"],
        "ann-secret",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("b2 retired"), "{out}");
    let b1 = stores.beliefs.get(&ctx, "b1").await.unwrap().unwrap();
    assert_eq!(b1.superseded_by.as_deref(), Some("b2"));
    schema.drop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
