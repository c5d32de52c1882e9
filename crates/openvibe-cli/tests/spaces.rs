//! Two roles in two processes working together through one PostgreSQL
//! (issue 41): `openvibe run cro.yaml --loop --space team` delegates each
//! won deal's case study to the owner of `marketing`, and `openvibe run
//! cmo.yaml --loop --space team` (another process) decides, writes it and
//! answers; killing the CMO's process mid-request and starting it again
//! completes every request once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/journal.rs"]
mod journal;
#[path = "support/pg.rs"]
mod support;
#[path = "support/team.rs"]
mod team;

use journal::{ALL, journal, stage_names};
use team::answers_per_request;

fn dir(name: &str) -> PathBuf {
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
    )
    .join("demo/team");
    let dir = std::env::temp_dir().join(format!("openvibe-team-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["cro.yaml", "cmo.yaml"] {
        std::fs::copy(demo.join(file), dir.join(file)).unwrap();
    }
    dir
}

fn deals(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("deals.jsonl");
    let lines: Vec<String> = (0..n)
        .map(|i| {
            serde_json::json!({
                "role": "cro",
                "id": format!("deal-{i:02}"),
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
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn openvibe(dir: &Path, url: &str, tenant: &str, role: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openvibe"));
    command
        .current_dir(dir)
        .args([
            "run",
            &format!("{role}.yaml"),
            "--loop",
            "--space",
            "team",
            "--llm",
            "standin",
            "--embedder",
            "none",
            "--database-url",
            url,
            "--tenant",
            tenant,
            "--journal",
            &format!("journal-{role}"),
        ])
        .args(extra)
        .env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    command
}

fn cmo(dir: &Path, url: &str, tenant: &str) -> Child {
    openvibe(
        dir,
        url,
        tenant,
        "cmo",
        &["--person", "user:ann", "--for", "180s"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

#[tokio::test]
async fn two_processes_delegate_through_postgres_and_survive_a_kill() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let tenant = format!("team-{}", std::process::id());
    let dir = dir("kill");
    let n = 20;
    let events = deals(&dir, n);

    // The CRO first: its first delegation waits for an owner of marketing.
    let cro = openvibe(
        &dir,
        &url,
        &tenant,
        "cro",
        &[
            "--events",
            events.to_str().unwrap(),
            "--until-events",
            &n.to_string(),
            "--for",
            "180s",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();

    // The CMO in another process; killed (SIGKILL) once a few requests
    // are answered, while the next one is taken but not answered yet.
    let cmo_journal = dir.join("journal-cmo");
    let mut first = cmo(&dir, &url, &tenant);
    let started = Instant::now();
    loop {
        let traces = journal(&cmo_journal);
        let done = traces.iter().filter(|t| t["next"].is_null()).count();
        if done >= 2 && done < traces.len() {
            break;
        }
        assert!(
            done < n,
            "every request was answered before the kill found one in flight"
        );
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the CMO answered no request"
        );
        std::thread::sleep(Duration::from_micros(500));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let at_kill = journal(&cmo_journal);
    let unfinished = at_kill.iter().filter(|t| !t["next"].is_null()).count();
    eprintln!(
        "killed the CMO with {} request(s) taken, {unfinished} unfinished",
        at_kill.len()
    );
    assert!(unfinished > 0, "the kill found no request in flight");

    // The CMO again: it resumes what it had taken and takes the rest.
    let mut second = cmo(&dir, &url, &tenant);
    let out = cro.wait_with_output().unwrap();
    second.kill().unwrap();
    second.wait().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("== stopped: {n} event(s) done")),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("ran write_case_study").count(),
        n,
        "every deal's case study came back: {stdout}"
    );

    // Once: each request has one answer, and the CMO ran each request's
    // event through every stage once.
    let answers = answers_per_request(&url, &tenant).await;
    assert_eq!(answers.len(), n, "{answers:?}");
    for (request, count) in &answers {
        assert_eq!(*count, 1, "request {request} answered {count} times");
    }
    let cmo_traces = journal(&cmo_journal);
    assert_eq!(cmo_traces.len(), n);
    for trace in &cmo_traces {
        assert_eq!(stage_names(trace), ALL, "each stage once: {trace}");
        let observe = &trace["stages"][3]["outcome"];
        assert!(
            observe.as_str().unwrap().contains("answered done"),
            "{trace}"
        );
    }
    schema.drop().await;
}
