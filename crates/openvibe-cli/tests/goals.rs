//! `openvibe goals` on PostgreSQL: a role's goal is in the store, a CRM's
//! deals are reported from the command line (the same id twice counts
//! once; a key without the write right is refused and counts nothing),
//! and `goals status` shows each key result's progress as a bar.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/pg.rs"]
mod support;

use std::process::Command;

use chrono::NaiveDate;
use openvibe::protocols::{CallerContext, Goal, KeyResult, Objective, Priorities, Priority};

const POLICY: &str = "\
namespaces:
  cro:
    read: ['*']
    write: [cro, crm]
api_keys:
  - { principal: crm, kind: service, env: GOALS_KEY_CRM, namespace: cro }
  - { principal: ann, kind: user, env: GOALS_KEY_ANN, clearance: { everywhere: restricted } }
";

/// `openvibe goals ARGS` with `key`; (exit code, stdout, stderr).
fn cli(args: &[&str], key: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .arg("goals")
        .args(args)
        .env("GOALS_KEY_CRM", "crm-secret")
        .env("GOALS_KEY_ANN", "ann-secret")
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
async fn metrics_are_reported_from_the_cli_and_status_shows_progress() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let stores = openvibe::postgres::PgStores::connect(&url)
        .await
        .unwrap()
        .stores();
    let dir = std::env::temp_dir().join(format!("openvibe-goals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("governance.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let policy = policy.to_str().unwrap();
    let cro = CallerContext::agent("cro");
    let objective = Objective {
        id: "pipeline-q4".into(),
        owner: "cro".into(),
        title: "Pipeline $2M this quarter".into(),
        due: NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
        key_results: vec![KeyResult {
            id: "pipeline-value".into(),
            metric: "pipeline_usd".into(),
            baseline: 0.0,
            target: 2_000_000.0,
            unit: "USD".into(),
            due: None,
        }],
    };
    stores
        .goals
        .put(&cro, Goal::new(objective).namespace("cro"))
        .await
        .unwrap();
    let day = NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
    stores
        .goals
        .put_priorities(
            &cro,
            Priorities::new(
                "cro",
                day,
                vec![Priority {
                    title: "Call Acme".into(),
                    reason: "largest open deal".into(),
                    goal_id: Some("pipeline-q4".into()),
                    action: None,
                }],
            )
            .namespace("cro"),
        )
        .await
        .unwrap();
    let db = ["--database-url", url.as_str(), "--governance", policy];
    let report = |value: &str, id: &str, key: &str| {
        let mut args = vec![
            "report",
            "cro",
            "pipeline_usd",
            value,
            "--id",
            id,
            "--namespace",
            "cro",
        ];
        args.extend(db);
        cli(&args, key)
    };
    let (code, out, err) = report("400000", "deal-1", "crm-secret");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("now 400,000"), "{out}");
    let (code, out, _) = report("400000", "deal-1", "crm-secret");
    assert_eq!(code, 0);
    assert!(out.contains("#1 of the metric"), "counted once: {out}");
    report("600000", "deal-2", "crm-secret");
    // Ann may read but not write in `cro`: refused, nothing counted.
    let (code, _, err) = report("999", "deal-3", "ann-secret");
    assert_ne!(code, 0);
    assert!(err.contains("write"), "{err}");
    // Filed in her own namespace, her report moves no goal of `cro`.
    let mut args = vec!["report", "cro", "pipeline_usd", "5000000", "--id", "deal-4"];
    args.extend(db);
    let (code, out, err) = cli(&args, "ann-secret");
    assert_eq!(code, 0, "{out}{err}");
    let mut args = vec!["status", "--day", "2026-11-26"];
    args.extend(db);
    let (code, out, err) = cli(&args, "ann-secret");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("GOAL"), "{out}");
    assert!(out.contains("1,000,000 / 2,000,000 USD"), "{out}");
    assert!(
        out.contains(&format!("[{}{}]  50%", "█".repeat(10), "░".repeat(10))),
        "{out}"
    );
    assert!(out.contains("1. Call Acme: largest open deal"), "{out}");
    assert!(out.contains("not decomposed yet"), "{out}");
    args.push("--json");
    let (code, out, _) = cli(&args, "ann-secret");
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["goals"][0]["key_results"][0]["current"], 1_000_000.0);
    assert_eq!(doc["goals"][0]["key_results"][0]["reports"], 2);
    schema.drop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
