//! The demo end to end (snapshot), the shipped cassette kept in sync with
//! the stand-in model, and role files from disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/redact.rs"]
mod redact;
#[path = "support/pg.rs"]
mod support;

use redact::redact_ids;

use std::path::Path;

use openvibe_cli::CliError;
use openvibe_cli::demo::{DEMO_FILES, EmbedderChoice, LlmChoice, Options, execute};
use openvibe_cli::spec::{Files, RoleFile};
use openvibe_cli::standin::VP_INSIGHT;

fn demo_file() -> RoleFile {
    let text = DEMO_FILES
        .iter()
        .find(|(n, _)| *n == "role.yaml")
        .unwrap()
        .1;
    RoleFile::parse(text, Path::new("demo/cro/role.yaml")).unwrap()
}

async fn run_demo(llm: LlmChoice) -> String {
    run_demo_on(llm, None).await
}

async fn run_demo_on(llm: LlmChoice, database_url: Option<String>) -> String {
    run_demo_with(Options {
        llm,
        reflect: true,
        database_url,
        // Full text only, whatever models this machine has: the snapshot
        // does not depend on them (the hybrid run has its own test).
        embedder: EmbedderChoice::None,
        ..Options::default()
    })
    .await
}

async fn run_demo_with(options: Options) -> String {
    let mut out = Vec::new();
    execute(
        &demo_file(),
        &Files::Embedded(DEMO_FILES),
        &options,
        "replay of demo/cro/cassette.jsonl",
        &mut out,
    )
    .await
    .unwrap();
    redact_ids(&String::from_utf8(out).unwrap())
}

/// Episodes, insights and memory entries in the database at `url` of the
/// tenant a demo run named in its `output`.
async fn records_in(url: &str, output: &str) -> i64 {
    use sqlx::Connection;
    let tenant = output
        .split("(tenant ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap();
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', $1, true)")
        .bind(tenant)
        .execute(&mut *tx)
        .await
        .unwrap();
    let n: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM episodes) + (SELECT count(*) FROM insights) \
         + (SELECT count(*) FROM memory_entries)",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    conn.close().await.unwrap();
    n
}

#[tokio::test]
async fn the_demo_runs_offline_and_the_second_run_uses_what_the_first_taught() {
    let output = run_demo(LlmChoice::Replay).await;
    let (run1, run2) = output.split_once("== run 2").unwrap();
    let prompt2 = run2.split("final state:").next().unwrap();
    assert!(
        !run1.contains(&format!("- {VP_INSIGHT}")),
        "run 1 knows nothing yet"
    );
    assert!(prompt2.contains("## Insights"), "{prompt2}");
    assert!(
        prompt2.contains(VP_INSIGHT),
        "run 2's prompt carries the insight:\n{prompt2}"
    );
    assert!(
        run2.contains("applying a learned insight"),
        "and the model used it"
    );
    assert!(
        !output.contains("Board-only"),
        "restricted facts stay out of the role's view"
    );
    insta::assert_snapshot!(output);
}

/// The demo's output without the lines that name the retrieval and the
/// retrievers of each recalled record.
fn without_retrievers(output: &str) -> String {
    output
        .lines()
        .filter(|l| !l.starts_with("   memory retrieval:"))
        .map(|l| match l.rfind(" [") {
            Some(i) if l.starts_with("  - ") && l.ends_with(']') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// With the local model (test-all fetches it; `cargo xtask models fetch`),
/// recalled memory is ranked by full text and vectors, the output says which
/// retriever found each record, and the prompts are those of the full-text
/// run (the cassette answers both).
#[tokio::test]
async fn with_the_local_model_recall_is_hybrid_and_says_what_found_each_record() {
    let hybrid = run_demo_with(Options {
        llm: LlmChoice::Replay,
        reflect: true,
        embedder: EmbedderChoice::Local,
        ..Options::default()
    })
    .await;
    assert!(
        hybrid.contains("memory retrieval: hybrid (full text + all-MiniLM-L6-v2 vectors)"),
        "{hybrid}"
    );
    let run2 = hybrid.split_once("== run 2").unwrap().1;
    let recalled: Vec<&str> = run2
        .lines()
        .skip_while(|l| !l.starts_with("memory recalled into it"))
        .skip(1)
        .take_while(|l| l.starts_with("  - "))
        .collect();
    assert!(
        recalled
            .iter()
            .any(|l| l.contains(VP_INSIGHT) && l.contains("full_text #1, vector #1")),
        "the learned insight is found by both retrievers:\n{}",
        recalled.join("\n")
    );
    assert!(
        recalled
            .iter()
            .any(|l| l.starts_with("  - insight: An open CRM deal") && l.ends_with("[vector #2]")),
        "the insight that shares no word with the lead is found by its vector alone:\n{}",
        recalled.join("\n")
    );
    let full_text = run_demo(LlmChoice::Replay).await;
    assert!(
        full_text.contains("memory retrieval: full text (--embedder none)"),
        "{full_text}"
    );
    assert_eq!(without_retrievers(&hybrid), without_retrievers(&full_text));
}

#[tokio::test]
async fn the_shipped_cassette_matches_the_stand_in_model() {
    // If prompts change, the cassette must be re-recorded:
    //   cargo run -p openvibe-cli -- demo --llm standin --record crates/openvibe-cli/demo/cro/cassette.jsonl
    assert_eq!(
        run_demo(LlmChoice::StandIn).await,
        run_demo(LlmChoice::Replay).await
    );
}

#[tokio::test]
async fn role_files_run_from_disk() {
    let dir = std::env::temp_dir().join(format!("openvibe-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in DEMO_FILES {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let (file, files) = RoleFile::load(&dir.join("role.yaml")).unwrap();
    let options = Options {
        llm: LlmChoice::StandIn,
        ..Options::default()
    };
    let mut out = Vec::new();
    execute(&file, &files, &options, "stand-in", &mut out)
        .await
        .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("== run 2"));
    assert!(!out.contains("== reflection"), "no reflection unless asked");
    std::fs::remove_file(dir.join("crm.json")).unwrap();
    let (file, files) = RoleFile::load(&dir.join("role.yaml")).unwrap();
    let err = execute(&file, &files, &options, "stand-in", &mut Vec::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CliError::Io { .. }), "{err}");
    assert!(err.to_string().contains("crm.json"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inconsistent_role_files_are_reported() {
    let base = "role: { id: r }\noperators:\n  - id: op\n    nodes:\n      - { name: a, kind: llm, prompt: p, user: u }\n";
    let cases = [
        (format!("{base}    workflows: [{{ id: w, nodes: [a, ghost] }}]\n"), "node `ghost`"),
        (format!("{base}runs: [{{ operator: nope, workflow: w }}]\n"), "operator `nope`"),
        (
            "role: { id: r }\noperators:\n  - id: op\n    nodes:\n      - { name: a, kind: llm, prompt: p, user: u, tools: [t] }\n".to_string(),
            "tool `t`",
        ),
    ];
    for (yaml, expected) in cases {
        let err = RoleFile::parse(&yaml, Path::new("r.yaml")).unwrap_err();
        assert!(err.to_string().contains(expected), "{err}");
    }
    let err = RoleFile::parse("role: { id: r, sol: x }\n", Path::new("r.yaml")).unwrap_err();
    assert!(err.to_string().starts_with("r.yaml:1:"), "{err}");
}

#[tokio::test]
async fn the_demo_on_postgres_gives_the_same_output() {
    let Some(url) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&url).await;
    let on_postgres = run_demo_on(LlmChoice::Replay, Some(schema.url())).await;
    // The run's tenant is purged when it ends, unless --keep-memory.
    assert_eq!(records_in(&schema.url(), &on_postgres).await, 0);
    let kept = run_demo_with(Options {
        reflect: true,
        database_url: Some(schema.url()),
        keep_memory: true,
        embedder: EmbedderChoice::None,
        ..Options::default()
    })
    .await;
    assert!(records_in(&schema.url(), &kept).await > 5);
    schema.drop().await;
    let in_memory = run_demo(LlmChoice::Replay).await;
    let body = |text: &str| {
        text.split_once('\n')
            .map(|(_, rest)| rest.to_owned())
            .unwrap_or_default()
    };
    assert!(
        on_postgres
            .lines()
            .next()
            .unwrap()
            .contains("memory backend: PostgreSQL (tenant cli_")
    );
    assert_eq!(body(&on_postgres), body(&in_memory));
}

#[tokio::test]
async fn the_demo_through_the_memory_service_gives_the_same_output() {
    let Some(url) = openvibe_memory_testkit::skip::database_url() else {
        return;
    };
    let schema = support::TempSchema::new(&url).await;
    let pg = openvibe::postgres::PgStores::connect(&schema.url())
        .await
        .unwrap();
    let service =
        openvibe::service::Service::new(pg.stores(), openvibe::service::Access::open("default"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let service_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    let remote = run_demo_with(Options {
        reflect: true,
        memory_url: Some(service_url.clone()),
        embedder: EmbedderChoice::None,
        ..Options::default()
    })
    .await;
    let in_memory = run_demo(LlmChoice::Replay).await;
    let first = remote.lines().next().unwrap();
    assert!(
        first.contains(&format!(
            "memory backend: memory service {service_url} (tenant cli_"
        )),
        "{first}"
    );
    let body = |text: &str| text.split_once('\n').map(|(_, r)| r.to_owned());
    assert_eq!(body(&remote), body(&in_memory));
    // The records went through the service into PostgreSQL.
    assert!(records_in(&schema.url(), &remote).await > 5);
    pg.pool().close().await;
    schema.drop().await;
}
