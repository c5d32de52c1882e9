//! `openvibe run role.yaml --schedule --temporal URL` registers the role's
//! interval trigger as a Temporal schedule; `openvibe worker` runs its
//! firings until SIGTERM. Against a real Temporal server
//! (`OPENVIBE_TEMPORAL_URL`, as `cargo xtask test-all` provides).
#![cfg(feature = "temporal")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openvibe::protocols::ScheduleProvider as _;
use openvibe::temporal::{TemporalConfig, TemporalScheduler};

/// The demo role in a directory of its own with a 1-second interval trigger.
fn role_dir(name: &str) -> PathBuf {
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
    )
    .join("demo/cro");
    let dir = std::env::temp_dir().join(format!(
        "openvibe-temporal-cli-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["soul.md", "crm.json"] {
        std::fs::copy(demo.join(file), dir.join(file)).unwrap();
    }
    let role = std::fs::read_to_string(demo.join("role.yaml")).unwrap();
    let old = "- { id: new_lead, type: on_demand }";
    let new = r#"- { id: every_second, type: interval, schedule: 1s, input: { company: acme_corp, lead: "Acme Corp, 200 employees, logistics." } }"#;
    std::fs::write(dir.join("role.yaml"), role.replace(old, new)).unwrap();
    dir
}

fn openvibe() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_openvibe"));
    cmd.env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    cmd
}

/// A child process killed when the test ends, passed or not.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_registers_the_schedules_and_a_worker_runs_them_until_sigterm() {
    let Some(url) = openvibe_memory_testkit::skip::temporal_url() else {
        return;
    };
    let dir = role_dir("worker");
    let role = dir.join("role.yaml");
    let queue = format!("openvibe-cli-test-{}", std::process::id());
    let common = [
        "--temporal",
        url.as_str(),
        "--task-queue",
        queue.as_str(),
        "--llm",
        "standin",
        "--embedder",
        "none",
    ];

    let registered = openvibe()
        .args(["run", role.to_str().unwrap(), "--schedule"])
        .args(common)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&registered.stdout);
    assert!(
        registered.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&registered.stderr)
    );
    assert!(
        stdout.contains("1 schedule(s) registered with Temporal"),
        "{stdout}"
    );
    let schedule_id = "openvibe:cro:revenue_ops:every_second";
    assert!(
        stdout.contains(&format!(
            "{schedule_id}: interval `1s` → revenue_ops/qualify: next "
        )),
        "{stdout}"
    );

    // A worker runs the firings (one node each) until SIGTERM.
    let mut worker = Reaped(
        openvibe()
            .args(["worker", role.to_str().unwrap()])
            .args(common)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(worker.0.stdout.take().unwrap()).lines();
    let header = lines.next().unwrap().unwrap();
    assert!(
        header.starts_with("== worker for role(s) `cro`"),
        "{header}"
    );
    let started = Instant::now();
    // The workflow's nodes, each printed as it ends, the last one `done`.
    let mut ran = Vec::new();
    loop {
        let line = lines.next().expect("the worker prints each node").unwrap();
        if line.contains("cro revenue_ops/qualify · ") {
            ran.push(line.clone());
            if line.ends_with("· done") {
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no firing finished: {ran:?}"
        );
    }
    assert!(ran[0].contains("· qualify_lead in "), "{ran:?}");
    let scheduler = TemporalScheduler::connect(TemporalConfig::new(&url).task_queue(&queue))
        .await
        .unwrap();
    scheduler.cancel(schedule_id).await.unwrap();
    let terminated = Command::new("kill")
        .args(["-TERM", &worker.0.id().to_string()])
        .status()
        .unwrap();
    assert!(terminated.success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = worker.0.wait().unwrap();
    assert!(
        status.success(),
        "the worker stops cleanly: {status} {rest:?}"
    );
    let last = rest.last().expect("a closing line");
    assert!(
        last.starts_with("== stopped: ") && last.ends_with("node(s) run"),
        "{rest:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_worker_needs_temporal_and_temporal_needs_schedule() {
    let dir = role_dir("usage");
    let role = dir.join("role.yaml");
    let out = openvibe()
        .args(["worker", role.to_str().unwrap(), "--llm", "standin"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --temporal URL"));
    let out = openvibe()
        .args([
            "run",
            role.to_str().unwrap(),
            "--temporal",
            "http://127.0.0.1:1",
            "--llm",
            "standin",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("use it with --schedule"));
}

#[test]
fn events_of_a_file_run_in_the_loop_on_a_temporal_worker() {
    let Some(url) = openvibe_memory_testkit::skip::temporal_url() else {
        return;
    };
    // A directory of role files: the CRO acts on leads on its own.
    let dir = role_dir("loop");
    let roles = dir.join("roles");
    std::fs::create_dir_all(&roles).unwrap();
    for file in ["soul.md", "crm.json"] {
        std::fs::copy(dir.join(file), roles.join(file)).unwrap();
    }
    let role = std::fs::read_to_string(dir.join("role.yaml")).unwrap().replace(
        "  id: cro\n",
        "  id: cro\n  domains: [revenue]\n  decision_matrix:\n    outcomes:\n      low: { low: act, medium: propose, high: escalate }\n",
    );
    std::fs::write(roles.join("cro.yaml"), role).unwrap();
    let stamp = chrono::Utc::now().timestamp_micros();
    let event = |id: &str| {
        serde_json::json!({
            "role": "cro",
            "id": id,
            "kind": "lead.arrived",
            "domain": "revenue",
            "summary": format!("lead {id}"),
            "action": {
                "action": "qualify_lead",
                "target": {"kind": "workflow", "operator": "revenue_ops", "workflow": "qualify"},
                "input": {"company": "acme_corp", "lead": "Acme Corp, 200 employees, logistics."}
            }
        })
        .to_string()
    };
    let (first, second) = (format!("t-{stamp}-1"), format!("t-{stamp}-2"));
    let events = dir.join("events.jsonl");
    std::fs::write(&events, format!("{}\n{}\n", event(&first), event(&second))).unwrap();
    let queue = format!("openvibe-cli-loop-{}-{stamp}", std::process::id());
    let _worker = Reaped(
        openvibe()
            .args([
                "worker",
                roles.to_str().unwrap(),
                "--temporal",
                &url,
                "--task-queue",
                &queue,
                "--llm",
                "standin",
                "--embedder",
                "none",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pushed = openvibe()
        .args([
            "run",
            roles.to_str().unwrap(),
            "--loop",
            "--events",
            events.to_str().unwrap(),
            "--temporal",
            &url,
            "--task-queue",
            &queue,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&pushed.stdout);
    assert!(
        pushed.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    for id in [&first, &second] {
        assert!(
            stdout.contains(&format!("event {id} of role cro: started on Temporal")),
            "{stdout}"
        );
    }
    assert_eq!(stdout.matches("  done\n").count(), 2, "{stdout}");
    assert_eq!(stdout.matches("ran qualify_lead").count(), 2, "{stdout}");
    // The same file again: both are duplicates; their traces come back.
    let again = openvibe()
        .args([
            "run",
            roles.to_str().unwrap(),
            "--loop",
            "--events",
            events.to_str().unwrap(),
            "--temporal",
            &url,
            "--task-queue",
            &queue,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        stdout.matches("seen before, not run again").count(),
        2,
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[path = "support/pg.rs"]
mod pg;

#[path = "support/team.rs"]
mod team;
use team::answers_per_request;

/// Delegation on Temporal (issue 41): a CRO worker and a CMO worker (two
/// processes, two task queues) share one PostgreSQL and the space `team`.
/// The CRO's events delegate their case study; the CMO's worker starts a
/// loop workflow for each request routed to it. Killing the CMO's worker
/// mid-way and starting another completes every request, each answered
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_runs_across_two_temporal_workers_and_survives_a_kill() {
    let Some(url) = openvibe_memory_testkit::skip::temporal_url() else {
        return;
    };
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = pg::TempSchema::new(&base).await;
    let db = schema.url();
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
    )
    .join("demo/team");
    let stamp = chrono::Utc::now().timestamp_micros();
    let tenant = format!("tteam{stamp}");
    let dir = std::env::temp_dir().join(format!("openvibe-temporal-team-{stamp}"));
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["cro.yaml", "cmo.yaml"] {
        std::fs::copy(demo.join(file), dir.join(file)).unwrap();
    }
    let n = 6;
    let lines: Vec<String> = (0..n)
        .map(|i| {
            serde_json::json!({
                "role": "cro",
                "id": format!("deal-{stamp}-{i}"),
                "kind": "deal.won",
                "domain": "revenue",
                "summary": format!("customer {i} signed"),
                "action": {
                    "action": "write_case_study",
                    "target": {"kind": "delegate", "domain": "marketing"},
                    "input": {"customer": format!("Customer {i}")}
                }
            })
            .to_string()
        })
        .collect();
    let events = dir.join("deals.jsonl");
    std::fs::write(&events, lines.join("\n") + "\n").unwrap();
    let worker = |role: &str| {
        let mut args = vec![
            "worker".to_owned(),
            dir.join(format!("{role}.yaml")).display().to_string(),
            "--space".into(),
            "team".into(),
            "--llm".into(),
            "standin".into(),
            "--embedder".into(),
            "none".into(),
            "--database-url".into(),
            db.clone(),
            "--tenant".into(),
            tenant.clone(),
            "--temporal".into(),
            url.clone(),
            "--task-queue".into(),
            format!("{tenant}-{role}"),
            // A stage cut off by a kill runs again within seconds.
            "--node-timeout".into(),
            "3s".into(),
        ];
        if role == "cmo" {
            args.extend(["--person".into(), "user:ann".into()]);
        }
        Reaped(
            openvibe()
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let _cro = worker("cro");
    let first_cmo = worker("cmo");
    let pusher = openvibe()
        .args([
            "run",
            dir.join("cro.yaml").to_str().unwrap(),
            "--loop",
            "--events",
            events.to_str().unwrap(),
            "--temporal",
            &url,
            "--task-queue",
            &format!("{tenant}-cro"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the CMO's worker once a first answer is in, while others wait.
    let started = Instant::now();
    loop {
        let answers = answers_per_request(&db, &tenant).await;
        let answered = answers.iter().filter(|(_, a)| *a > 0).count();
        if answered >= 1 {
            eprintln!(
                "killing the CMO's worker with {answered} of {} request(s) answered",
                answers.len()
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the CMO answered nothing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(first_cmo);
    let _second_cmo = worker("cmo");
    let out = tokio::task::spawn_blocking(move || pusher.wait_with_output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.matches("ran write_case_study").count(),
        n,
        "every deal's case study came back: {stdout}"
    );
    let answers = answers_per_request(&db, &tenant).await;
    assert_eq!(answers.len(), n, "{answers:?}");
    for (request, count) in &answers {
        assert_eq!(*count, 1, "request {request} answered {count} times");
    }
    let _ = std::fs::remove_dir_all(dir);
    schema.drop().await;
}
