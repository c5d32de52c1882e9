//! `goals.yaml` (seed 001, V3: OKR config): objectives with key results,
//! read with positioned errors for every problem.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use openvibe_roles::Error;
use openvibe_roles::goals::{GOALS_FILE, load_goals, parse_goals};

const GOALS: &str = "\
objectives:
  - id: pipeline-q4
    owner: cro
    title: Build a $2M pipeline this quarter
    due: 2026-12-31
    key_results:
      - { id: pipeline-value, metric: pipeline_usd, target: 2000000, unit: USD }
      - id: qualified-leads
        metric: qualified_leads
        target: 40
        unit: leads
        due: 2026-12-15
  - id: churn-down
    owner: cro
    title: Keep customers
    due: 2026-12-31
    key_results:
      - { id: churn, metric: churn_pct, baseline: 8, target: 5, unit: '%' }
";

/// The error's (line, column, key, message).
fn problem(text: &str, roles: Option<&[&str]>) -> (usize, usize, String, String) {
    match parse_goals(text, Path::new("goals.yaml"), roles) {
        Ok(file) => panic!("read: {file:?}"),
        Err(Error::Operator(openvibe_operators::Error::Config {
            line,
            column,
            key,
            message,
            ..
        })) => (line, column, key, message),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn objectives_and_key_results_read_as_written() {
    let file = parse_goals(GOALS, Path::new("goals.yaml"), Some(&["cro"])).unwrap();
    assert_eq!(file.objectives.len(), 2);
    let pipeline = &file.objectives[0];
    assert_eq!(pipeline.due.to_string(), "2026-12-31");
    let leads = &pipeline.key_results[1];
    assert_eq!(
        (leads.metric.as_str(), leads.target),
        ("qualified_leads", 40.0)
    );
    assert_eq!(leads.due_by(pipeline).to_string(), "2026-12-15");
    assert_eq!(
        pipeline.key_results[0].due_by(pipeline).to_string(),
        "2026-12-31"
    );
    // Half-way to 2M; churn from 8% to 5%, now 6.5%: half-way too.
    assert_eq!(pipeline.key_results[0].progress(1_000_000.0), 0.5);
    assert_eq!(file.objectives[1].key_results[0].progress(6.5), 0.5);
    assert_eq!(file.of("cro").count(), 2);
    assert_eq!(file.of("cmo").count(), 0);
}

#[test]
fn every_problem_has_its_line_column_and_key() {
    // What the reader finds: a field that does not exist, a bad date.
    let (line, column, key, message) = problem(&GOALS.replace("unit: leads", "units: leads"), None);
    assert_eq!(
        (line, key.as_str()),
        (11, "objectives[0].key_results[1].units")
    );
    assert!(
        column > 0 && message.contains("unknown field `units`"),
        "{message}"
    );
    let (line, _, key, message) =
        problem(&GOALS.replace("due: 2026-12-15", "due: mid-december"), None);
    assert_eq!(
        (line, key.as_str()),
        (12, "objectives[0].key_results[1].due")
    );
    assert!(message.contains("input"), "{message}");

    // What it checks after: each at the line of the field at fault.
    let (line, column, key, message) = problem(&GOALS.replace("target: 40", "target: 0"), None);
    assert_eq!((line, column), (10, 9));
    assert_eq!(key, "objectives[0].key_results[1].target");
    assert!(message.contains("equals the baseline"), "{message}");

    let (line, _, key, message) =
        problem(&GOALS.replace("due: 2026-12-15", "due: 2027-01-15"), None);
    assert_eq!(
        (line, key.as_str()),
        (12, "objectives[0].key_results[1].due")
    );
    assert!(
        message.contains("after the objective's due date"),
        "{message}"
    );

    let (line, _, key, message) =
        problem(&GOALS.replace("id: churn-down", "id: pipeline-q4"), None);
    assert_eq!((line, key.as_str()), (13, "objectives[1].id"));
    assert!(message.contains("also objectives[0]'s id"), "{message}");

    let (line, _, key, message) = problem(
        &GOALS.replace("metric: churn_pct", "metric: pipeline_usd"),
        None,
    );
    assert_eq!(
        (line, key.as_str()),
        (18, "objectives[1].key_results[0].metric")
    );
    assert!(
        message.contains("already measures `pipeline_usd`"),
        "{message}"
    );

    let (line, _, key, message) = problem(
        &GOALS.replace("metric: qualified_leads", "metric: pipeline_usd"),
        None,
    );
    assert_eq!(
        (line, key.as_str()),
        (9, "objectives[0].key_results[1].metric")
    );
    assert!(message.contains("a report would move both"), "{message}");

    let (line, column, key, message) = problem(GOALS, Some(&["cmo"]));
    assert_eq!((line, column, key.as_str()), (3, 5, "objectives[0].owner"));
    assert!(
        message.contains("not a role of roles.yaml (roles: cmo)"),
        "{message}"
    );

    let (_, _, key, message) = problem(
        "objectives:\n  - { id: x, owner: cro, title: t, due: 2026-12-31, key_results: [] }\n",
        None,
    );
    assert_eq!(key, "objectives[0].key_results");
    assert!(message.contains("at least one key result"), "{message}");
}

#[test]
fn a_directory_without_goals_has_none() {
    let dir = std::env::temp_dir().join(format!("openvibe-goals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(load_goals(&dir, &["cro"]).unwrap().objectives.is_empty());
    std::fs::write(dir.join(GOALS_FILE), GOALS).unwrap();
    assert_eq!(load_goals(&dir, &["cro"]).unwrap().objectives.len(), 2);
    let err = load_goals(&dir, &["cmo"]).unwrap_err().to_string();
    assert!(err.contains("goals.yaml") && err.contains("owner"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
