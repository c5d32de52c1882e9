//! `openvibe run role.yaml --loop` and `openvibe loop trace` (issue 40): the
//! events of a file go through the loop's stages, duplicates run once, and
//! a process killed with SIGKILL leaves its unfinished events to the next
//! one, which finishes them without repeating a finished stage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/pg.rs"]
mod pg;
#[path = "support/service.rs"]
mod service;
#[path = "support/journal.rs"]
mod support;
use support::{ALL, journal, stage_names};

fn dir(name: &str) -> PathBuf {
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
    )
    .join("demo/cro");
    let dir = std::env::temp_dir().join(format!("openvibe-loop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["soul.md", "crm.json"] {
        std::fs::copy(demo.join(file), dir.join(file)).unwrap();
    }
    // The CRO owns revenue and qualifies leads on its own, even before its
    // memory holds evidence.
    let role = std::fs::read_to_string(demo.join("role.yaml")).unwrap();
    let old = "  id: cro\n";
    assert!(role.contains(old));
    let role = role.replace(
        old,
        "  id: cro\n  domains: [revenue]\n  decision_matrix:\n    outcomes:\n      low: { low: act, medium: propose, high: escalate }\n",
    );
    std::fs::write(dir.join("role.yaml"), role).unwrap();
    dir
}

fn event(id: &str) -> String {
    serde_json::json!({
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
}

fn events_file(dir: &Path, ids: &[String]) -> PathBuf {
    let path = dir.join("events.jsonl");
    let lines: Vec<String> = ids.iter().map(|id| event(id)).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn openvibe(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openvibe"));
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    command
}

fn looped(dir: &Path, journal: &Path, events: &Path, until: usize) -> Output {
    let until = until.to_string();
    openvibe(&[
        "run",
        dir.join("role.yaml").to_str().unwrap(),
        "--loop",
        "--llm",
        "standin",
        "--embedder",
        "none",
        "--journal",
        journal.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--until-events",
        &until,
        "--for",
        "120s",
    ])
    .output()
    .unwrap()
}

#[test]
fn events_of_a_file_go_through_the_loop_once_and_are_traced() {
    let dir = dir("file");
    let journal_dir = dir.join("journal");
    let ids: Vec<String> = vec!["e-1".into(), "e-2".into(), "e-1".into()];
    let events = events_file(&dir, &ids);
    let out = looped(&dir, &journal_dir, &events, 2);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("event e-1: seen before, not run again"),
        "{stdout}"
    );
    assert!(stdout.contains("== stopped: 2 event(s) done"), "{stdout}");
    let traces = journal(&journal_dir);
    assert_eq!(traces.len(), 2);
    for trace in &traces {
        assert_eq!(stage_names(trace), ALL, "{trace}");
        assert_eq!(trace["act"]["kind"], "ran", "{trace}");
    }
    let shown = openvibe(&[
        "loop",
        "trace",
        "e-2",
        "--journal",
        journal_dir.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{text}");
    for stage in ALL {
        assert!(text.contains(stage), "{text}");
    }
    assert!(text.contains("ran qualify_lead"), "{text}");
    assert!(text.trim_end().ends_with("done"), "{text}");
    let missing = openvibe(&[
        "loop",
        "trace",
        "nope",
        "--journal",
        journal_dir.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no event `nope`"));
}

#[test]
fn a_killed_loop_leaves_its_unfinished_events_to_the_next_process() {
    let dir = dir("kill");
    let journal_dir = dir.join("journal");
    // More than the queue holds (256): the file waits for room.
    let ids: Vec<String> = (0..300).map(|i| format!("e-{i:03}")).collect();
    let events = events_file(&dir, &ids);
    let mut child = openvibe(&[
        "run",
        dir.join("role.yaml").to_str().unwrap(),
        "--loop",
        "--llm",
        "standin",
        "--embedder",
        "none",
        "--journal",
        journal_dir.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--for",
        "120s",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // Kill it (SIGKILL) as soon as some events are done.
    let started = Instant::now();
    loop {
        let traces = journal(&journal_dir);
        if traces.iter().filter(|t| t["next"].is_null()).count() >= 3 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no event finished"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The file is pushed as the queue makes room: some events were
    // accepted (journaled), some of those finished, the rest not yet seen.
    let before = journal(&journal_dir);
    let unfinished = before.iter().filter(|t| !t["next"].is_null()).count();
    let finished = before.len() - unfinished;
    eprintln!(
        "{unfinished} of {} events accepted and unfinished at the kill, {finished} done",
        ids.len()
    );
    assert!(
        unfinished > 0,
        "killed after everything finished: nothing to resume"
    );
    let finished_before: Vec<(String, Vec<String>)> = before
        .iter()
        .filter(|t| t["next"].is_null())
        .map(|t| {
            (
                t["event"]["id"].as_str().unwrap().to_owned(),
                stage_names(t),
            )
        })
        .collect();

    // The next process: the same file again and the journal. Finished
    // events are duplicates, unfinished ones resume, the rest are new.
    let out = looped(&dir, &journal_dir, &events, ids.len() - finished);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each unfinished event is taken on from where it stands: by the loop
    // as it starts (resumed), or, when the file's push of it won the race,
    // through the queue (a duplicate push that finds it unfinished).
    let summary = format!("== stopped: {} event(s) done (", ids.len() - finished);
    let resumed: usize = stdout
        .split_once(&summary)
        .and_then(|(_, rest)| rest.split_once(" resumed"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{unfinished} unfinished: {stdout}"));
    assert!(
        resumed <= unfinished,
        "{resumed} resumed of {unfinished} unfinished: {stdout}"
    );
    let after = journal(&journal_dir);
    assert_eq!(after.len(), ids.len());
    for trace in &after {
        assert_eq!(stage_names(trace), ALL, "each stage once: {trace}");
        assert!(trace["next"].is_null());
    }
    // Finished events were not touched again.
    for (id, stages) in finished_before {
        let now = after
            .iter()
            .find(|t| t["event"]["id"] == id.as_str())
            .unwrap();
        assert_eq!(stage_names(now), stages);
    }
}

#[test]
fn a_directory_of_role_files_runs_in_the_loop_and_takes_events_over_http() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = dir("roles");
    let roles = dir.join("roles");
    std::fs::create_dir_all(&roles).unwrap();
    for file in ["soul.md", "crm.json"] {
        std::fs::copy(dir.join(file), roles.join(file)).unwrap();
    }
    let cro = std::fs::read_to_string(dir.join("role.yaml")).unwrap();
    std::fs::write(roles.join("cro.yaml"), &cro).unwrap();
    std::fs::write(
        roles.join("cso.yaml"),
        cro.replace("  id: cro\n", "  id: cso\n"),
    )
    .unwrap();
    let journal_dir = dir.join("journal");
    // Several roles: an event names its role.
    let events = dir.join("events.jsonl");
    let with_role = |role: &str, id: &str| {
        let mut v: serde_json::Value = serde_json::from_str(&event(id)).unwrap();
        v["role"] = role.into();
        v.to_string()
    };
    std::fs::write(
        &events,
        format!(
            "{}\n{}\n",
            with_role("cro", "e-cro"),
            with_role("cso", "e-cso")
        ),
    )
    .unwrap();
    let nameless = dir.join("nameless.jsonl");
    std::fs::write(&nameless, event("e-who") + "\n").unwrap();
    let refused = openvibe(&[
        "run",
        roles.to_str().unwrap(),
        "--loop",
        "--llm",
        "standin",
        "--events",
        nameless.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("name the event's `role`"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let mut child = openvibe(&[
        "run",
        roles.to_str().unwrap(),
        "--loop",
        "--llm",
        "standin",
        "--embedder",
        "none",
        "--journal",
        journal_dir.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--until-events",
        "3",
        "--for",
        "60s",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut addr = None;
    let mut seen = String::new();
    for _ in 0..20 {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if let Some(rest) = line.split("POST http://").nth(1) {
            addr = rest.split('/').next().map(str::to_owned);
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("no address printed: {seen}"));
    // A plain HTTP/1.1 request, as any client sends it.
    let body = event("e-http");
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /v1/loop/cso/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"duplicate\":false"), "{answer}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{seen}{rest}");
    assert!(rest.contains("== stopped: 3 event(s) done"), "{seen}{rest}");
    let traces = journal(&journal_dir);
    assert_eq!(traces.len(), 3);
    let http = traces
        .iter()
        .find(|t| t["event"]["id"] == "e-http")
        .unwrap();
    assert_eq!(http["source"], "http");
    assert_eq!(http["role_id"], "cso");
    assert_eq!(stage_names(http), ALL);
}

/// POST `body` to `path` at `addr` (plain HTTP/1.1, as any client sends
/// it); the whole answer.
fn post(addr: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[tokio::test]
async fn loop_processes_on_the_durable_inbox_work_what_a_service_instance_took() {
    use std::io::Read;
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = pg::TempSchema::new(&base).await;
    let url = schema.url();
    let tenant = format!("inbox-{}", std::process::id());
    let dir = dir("inbox");
    // A service instance that runs no loop takes the events in.
    let (_service, addr) = service::spawn_service(&url, &tenant);
    let ids = ["e-1", "e-2", "e-3", "e-4"];
    for id in ids {
        let answer = post(
            addr.trim_start_matches("http://"),
            "/v1/loop/cro/events",
            &event(id),
        );
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("\"duplicate\":false"), "{answer}");
    }
    let again = post(
        addr.trim_start_matches("http://"),
        "/v1/loop/cro/events",
        &event("e-1"),
    );
    assert!(again.contains("\"duplicate\":true"), "{again}");
    // Two loop processes share them, each stopping after its share.
    let run = |holder: &str| {
        openvibe(&[
            "run",
            dir.join("role.yaml").to_str().unwrap(),
            "--loop",
            "--inbox",
            "--holder",
            holder,
            "--lease",
            "5s",
            "--llm",
            "standin",
            "--embedder",
            "none",
            "--database-url",
            &url,
            "--tenant",
            &tenant,
            "--for",
            "8s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (mut a, mut b) = (run("loop-a"), run("loop-b"));
    let mut out = String::new();
    for child in [&mut a, &mut b] {
        let status = child.wait().unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("journal: the durable inbox, as `loop-"),
            "{stdout}"
        );
        out.push_str(&stdout);
    }
    // Each event done once, by one of them, every stage once.
    for id in ids {
        assert_eq!(
            out.matches(&format!("event {id} of role cro")).count(),
            1,
            "{out}"
        );
    }
    let done: usize = out
        .lines()
        .filter_map(|l| l.strip_prefix("== stopped: "))
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert_eq!(done, ids.len(), "{out}");
    // The trace, read through the instance that took the event in.
    let trace = {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(addr.trim_start_matches("http://")).unwrap();
        write!(
            stream,
            "GET /v1/loop/cro/events/e-2 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    assert!(trace.starts_with("HTTP/1.1 200"), "{trace}");
    let body: serde_json::Value =
        serde_json::from_str(trace.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["source"], "http");
    assert!(body["next"].is_null(), "{body}");
    assert_eq!(stage_names(&body), ALL);
    schema.drop().await;
}
