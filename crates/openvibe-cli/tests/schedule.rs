//! `openvibe run role.yaml --schedule`: the role's interval trigger fires in
//! real time with the in-process scheduler, each firing printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The demo role in a directory of its own, its trigger replaced by `trigger`.
fn role_dir(name: &str, trigger: &str) -> PathBuf {
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
    )
    .join("demo/cro");
    let dir = std::env::temp_dir().join(format!("openvibe-schedule-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["soul.md", "crm.json"] {
        std::fs::copy(demo.join(file), dir.join(file)).unwrap();
    }
    let role = std::fs::read_to_string(demo.join("role.yaml")).unwrap();
    let old = "- { id: new_lead, type: on_demand }";
    assert!(role.contains(old));
    std::fs::write(dir.join("role.yaml"), role.replace(old, trigger)).unwrap();
    dir
}

/// `openvibe run <role> --schedule` on the stand-in model, plus `extra`.
fn scheduled(role: &Path, extra: &[&str]) -> Output {
    let role = role.to_str().unwrap();
    let mut args = vec![
        "run",
        role,
        "--schedule",
        "--llm",
        "standin",
        "--embedder",
        "none",
    ];
    args.extend_from_slice(extra);
    openvibe(&args)
}

fn openvibe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .unwrap()
}

#[test]
fn an_interval_trigger_fires_until_the_count_is_reached() {
    let dir = role_dir(
        "interval",
        r#"- { id: every_second, type: interval, schedule: 1s, input: { company: acme_corp, lead: "Acme Corp, 200 employees, logistics." } }"#,
    );
    let role = dir.join("role.yaml");
    let checkpoints = dir.join("checkpoints");
    let out = scheduled(
        &role,
        &[
            "--checkpoints",
            checkpoints.to_str().unwrap(),
            "--firings",
            "2",
            "--for",
            "60s",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("every_second interval `1s` → revenue_ops/qualify: next "),
        "{stdout}"
    );
    let fired: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("every_second revenue_ops/qualify"))
        .collect();
    assert!(fired.len() >= 2, "{stdout}");
    assert!(
        fired
            .iter()
            .all(|l| l.contains("completed in") && l.contains("qualification")),
        "{stdout}"
    );
    assert!(
        stdout.contains("== stopped: 1 schedule(s)") && stdout.contains("0 resumed"),
        "{stdout}"
    );
    // Each run left its (finished) checkpoint, naming what started it.
    let saved: Vec<serde_json::Value> = std::fs::read_dir(&checkpoints)
        .unwrap()
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert!(saved.len() >= 2, "{saved:?}");
    assert!(
        saved
            .iter()
            .all(|c| c["origin"]["kind"] == "firing"
                && c["origin"]["trigger"]["id"] == "every_second"),
        "{saved:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_role_without_timed_triggers_says_so_and_a_bad_schedule_is_one_line() {
    let dir = role_dir("none", "- { id: new_lead, type: on_demand }");
    let role = dir.join("role.yaml");
    let out = scheduled(&role, &["--for", "200ms"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("0 schedule(s), 0 firing(s)")
            && stdout.contains("no cron or interval triggers"),
        "{stdout}"
    );

    let dir = role_dir(
        "bad",
        r#"- { id: broken, type: cron, schedule: "CRON_TZ=Mars/Olympus 0 9 * * *" }"#,
    );
    let role = dir.join("role.yaml");
    let out = scheduled(&role, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("broken") && stderr.contains("Mars/Olympus"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);

    // --for and --firings only make sense with --schedule.
    let out = openvibe(&["run", "role.yaml", "--for", "1s"]);
    assert_eq!(out.status.code(), Some(2));
}
