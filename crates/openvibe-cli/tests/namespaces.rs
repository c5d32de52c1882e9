//! `openvibe namespaces ls | migrate` and `openvibe audit tail` as a user
//! runs them, on a snapshot file and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/pg.rs"]
mod support;

use std::process::{Command, Output};

use openvibe::in_memory::MemorySnapshot;
use openvibe::protocols::{CallerContext, Fact, RecordStore};

fn openvibe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn legacy(id: &str) -> Fact {
    let mut fact = Fact::new(id, format!("{id} was written before namespaces"));
    fact.meta.owner = "agent:cro".into();
    fact
}

#[test]
fn migrating_a_snapshot_file_is_resumable_and_dry_runs_change_nothing() {
    let dir = std::env::temp_dir().join(format!("openvibe-ns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("memory.json");
    let snapshot = MemorySnapshot {
        facts: (0..5).map(|i| legacy(&format!("f{i}"))).collect(),
        ..MemorySnapshot::default()
    };
    std::fs::write(&file, serde_json::to_string(&snapshot).unwrap()).unwrap();
    let path = file.to_str().unwrap();

    let ls = ok(&openvibe(&["namespaces", "ls", "--memory-file", path]));
    assert!(ls.contains("(none: legacy)              5  5 fact"), "{ls}");
    let before = std::fs::read_to_string(&file).unwrap();
    let dry = ok(&openvibe(&[
        "namespaces",
        "migrate",
        "--to",
        "default",
        "--dry-run",
        "--memory-file",
        path,
    ]));
    assert!(dry.contains("would move 5 fact record(s)"), "{dry}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        before,
        "a dry run changes nothing"
    );

    let out = openvibe(&[
        "namespaces",
        "migrate",
        "--to",
        "default",
        "--batch",
        "2",
        "--memory-file",
        path,
    ]);
    let stdout = ok(&out);
    assert!(stdout.contains("moved 5 record(s)"), "{stdout}");
    // Not a terminal: plain progress lines, one per batch.
    let progress = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        progress
            .lines()
            .filter(|l| l.starts_with("migrate: "))
            .count(),
        3,
        "{progress}"
    );
    let after: MemorySnapshot =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(after.facts.iter().all(|f| f.meta.namespace == "default"));
    assert!(
        after.facts.iter().all(|f| f.meta.owner == "agent:cro"),
        "owners kept"
    );
    let again = ok(&openvibe(&[
        "namespaces",
        "migrate",
        "--to",
        "default",
        "--memory-file",
        path,
    ]));
    assert!(again.contains("moved 0 record(s)"), "{again}");
    let ls = ok(&openvibe(&["namespaces", "ls", "--memory-file", path]));
    assert!(ls.contains("default                     5  5 fact"), "{ls}");
}

#[test]
fn maintenance_commands_say_what_is_missing() {
    let out = openvibe(&["namespaces", "ls"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--database-url URL"));
    let out = openvibe(&["audit", "tail", "--memory-file", "x.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --database-url"));
    let out = openvibe(&["namespaces", "migrate", "--memory-file", "x.json"]);
    assert_eq!(out.status.code(), Some(2), "--to is required");
    let help = ok(&openvibe(&["namespaces", "migrate", "--help"]));
    assert!(
        help.contains("resumable") && help.contains("Examples:"),
        "{help}"
    );
}

#[tokio::test]
async fn migrating_on_postgres_is_audited_and_audit_tail_filters() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let tenant = format!("cli-ns-{}", std::process::id());
    let pg = openvibe::postgres::PgStores::connect(&url).await.unwrap();
    let system = CallerContext::system().with_tenant(tenant.clone());
    for i in 0..3 {
        pg.facts()
            .store(&system, Fact::new(format!("f{i}"), "legacy"))
            .await
            .unwrap();
    }
    let args = |extra: &[&str]| {
        let mut v = vec!["--database-url", url.as_str(), "--tenant", tenant.as_str()];
        v.extend_from_slice(extra);
        v.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| openvibe(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let mut ls = vec!["namespaces".to_owned(), "ls".to_owned()];
    ls.extend(args(&[]));
    let listing = ok(&run(ls.clone()));
    assert!(
        listing.contains("(none: legacy)              3  3 fact"),
        "{listing}"
    );
    let mut migrate = vec!["namespaces".to_owned(), "migrate".to_owned()];
    migrate.extend(args(&["--to", "default", "--batch", "2"]));
    assert!(ok(&run(migrate)).contains("moved 3 record(s)"));
    assert!(ok(&run(ls)).contains("default                     3  3 fact"));
    let mut tail = vec!["audit".to_owned(), "tail".to_owned()];
    tail.extend(args(&["--operation", "update", "-n", "10"]));
    let trail = ok(&run(tail));
    assert_eq!(trail.lines().count(), 3, "{trail}");
    assert!(
        trail
            .lines()
            .all(|l| l.contains("update") && l.contains("ns=default")),
        "{trail}"
    );
    let mut tail = vec!["audit".to_owned(), "tail".to_owned()];
    tail.extend(args(&["--principal", "agent:nobody"]));
    assert_eq!(ok(&run(tail)), "");
    // The chain (issue 43): anchor, verify against it, and a forged anchor
    // is exit code 1 naming the entry.
    let mut anchor = vec!["audit".to_owned(), "anchor".to_owned()];
    anchor.extend(args(&[]));
    let head = ok(&run(anchor)).trim().to_owned();
    assert!(head.starts_with("6:"), "3 inserts and 3 moves: {head}");
    let mut verify = vec!["audit".to_owned(), "verify".to_owned()];
    verify.extend(args(&["--anchor", head.as_str()]));
    let checked = ok(&run(verify));
    assert!(
        checked.contains("6 entries (1..6) checked, intact"),
        "{checked}"
    );
    let forged = format!("6:{}", "0".repeat(64));
    let mut verify = vec!["audit".to_owned(), "verify".to_owned()];
    verify.extend(args(&["--anchor", forged.as_str()]));
    let out = run(verify);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("BROKEN at entry 6") && said.contains("anchor"),
        "{said}"
    );
    pg.pool().close().await;
    schema.drop().await;
}

/// `memory reindex` embeds with the local model (test-all fetches it;
/// `cargo xtask models fetch`) what has no current vector: records written
/// without an embedder, here; records are not rewritten.
#[tokio::test]
async fn memory_reindex_embeds_what_waits_and_reports_it() {
    let Some(base) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&base).await;
    let url = schema.url();
    let tenant = format!("cli-reindex-{}", std::process::id());
    let pg = openvibe::postgres::PgStores::connect(&url).await.unwrap();
    let system = CallerContext::system().with_tenant(tenant.clone());
    for i in 0..3 {
        pg.facts()
            .store(
                &system,
                Fact::new(format!("f{i}"), format!("fact number {i}")),
            )
            .await
            .unwrap();
    }
    let before = pg.facts().get(&system, "f1").await.unwrap().unwrap();
    let reindex = |extra: &[&str]| {
        let mut args = vec![
            "memory",
            "reindex",
            "--database-url",
            url.as_str(),
            "--tenant",
            tenant.as_str(),
        ];
        args.extend_from_slice(extra);
        openvibe(&args)
    };
    let status = ok(&reindex(&["--status"]));
    assert!(
        status.contains("fact      0 with a current vector, 3 waiting"),
        "{status}"
    );
    assert!(
        status.contains("model all-MiniLM-L6-v2: 3 record(s) waiting"),
        "{status}"
    );
    let out = reindex(&["--batch", "2"]);
    let stdout = ok(&out);
    assert!(
        stdout.contains("embedded 3 record(s) with all-MiniLM-L6-v2"),
        "{stdout}"
    );
    let progress = String::from_utf8(out.stderr).unwrap();
    assert!(progress.contains("reindex: 3/3 embedded"), "{progress}");
    let status = ok(&reindex(&["--status"]));
    assert!(
        status.contains("fact      3 with a current vector, 0 waiting"),
        "{status}"
    );
    let after = pg.facts().get(&system, "f1").await.unwrap().unwrap();
    assert_eq!(
        after.meta.updated_at, before.meta.updated_at,
        "not rewritten"
    );
    let again = ok(&reindex(&[]));
    assert!(again.contains("embedded 0 record(s)"), "{again}");
    let help = ok(&openvibe(&["memory", "reindex", "--help"]));
    assert!(help.contains("Examples:"), "{help}");
    schema.drop().await;
}
