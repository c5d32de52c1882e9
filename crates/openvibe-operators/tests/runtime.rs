//! OperatorRuntime: YAML loading, error positions, activation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use openvibe_operators::{END, Error, OperatorRuntime, StateGraph};
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{AgentNode, LlmNode};
use openvibe_protocols::{LlmResponse, State, TriggerKind};

const CONFIG: &str = r#"
operators:
  - id: company_intel
    name: Company Intelligence
    model: haiku
    prompts:
      research: You are a research analyst.
    nodes:
      analyze: { model: opus, temperature: 0.1, max_tokens: 256 }
    workflows:
      - id: research
        description: Research a company, then analyse it.
        triggers:
          - { id: t1, type: on_demand }
          - { id: nightly, type: cron, schedule: "0 2 * * *", input: { depth: 2 } }
      - id: unregistered
        triggers:
          - { id: t2, type: webhook }
"#;

fn runtime() -> OperatorRuntime {
    let mut rt = OperatorRuntime::from_yaml_str(CONFIG, "ops.yaml").unwrap();
    rt.register_workflow("company_intel", "research", |config| {
        let research = config.apply_llm(
            LlmNode::new("research", "default research prompt", |s: &State| {
                Ok(format!("Research {}", s.require_str("company_name")?))
            })
            .model("sonnet")
            .output_key("research"),
        );
        let analyze = config.apply_agent(
            AgentNode::new("analyze", "You analyse research.", |s: &State| {
                Ok(format!("Analyse: {}", s.require_str("research")?))
            })
            .output_key("analysis"),
        );
        StateGraph::new()
            .add_node(research)
            .add_node(analyze)
            .set_entry_point("research")
            .add_edge("research", "analyze")
            .add_edge("analyze", END)
            .compile()
    })
    .unwrap();
    rt
}

#[tokio::test]
async fn activate_by_trigger_runs_the_workflow_with_configured_prompts_and_models() {
    let llm = ScriptedLlm::new([
        LlmResponse::text("Acme makes anvils."),
        LlmResponse::text("{\"verdict\": \"buy\"}"),
    ]);
    let rt = runtime().with_llm(Arc::new(llm.clone()));
    let out = rt
        .activate(
            "company_intel",
            "t1",
            [("company_name", "Acme")].into_iter().collect(),
        )
        .await
        .unwrap();
    assert_eq!(out.get_str("research"), Some("Acme makes anvils."));
    assert_eq!(out.get("analysis").unwrap()["verdict"], "buy");
    let reqs = llm.requests();
    assert_eq!(
        reqs[0].system, "You are a research analyst.",
        "prompt from the file"
    );
    assert_eq!(reqs[0].model, "haiku", "operator default beats the code");
    assert_eq!(
        reqs[1].system, "You analyse research.",
        "no configured prompt: code's"
    );
    assert_eq!(
        reqs[1].model, "opus",
        "per-node override beats the operator default"
    );
    assert_eq!(reqs[1].temperature, Some(0.1));
    assert_eq!(reqs[1].max_tokens, 256);
}

#[tokio::test]
async fn unknown_operator_workflow_trigger_and_missing_pieces_are_typed_errors() {
    let rt = runtime().with_llm(Arc::new(ScriptedLlm::default()));
    let err = rt.activate("nope", "t1", State::new()).await.unwrap_err();
    assert!(matches!(err, Error::UnknownOperator { .. }), "{err}");
    assert!(
        err.to_string().contains("company_intel"),
        "lists known operators: {err}"
    );

    let err = rt
        .activate("company_intel", "t9", State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownTrigger { .. }), "{err}");
    assert!(err.to_string().contains("t1, nightly, t2"), "{err}");

    let err = rt
        .activate_workflow("company_intel", "ghost", State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownWorkflow { .. }), "{err}");

    let err = rt
        .activate("company_intel", "t2", State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoFactory { .. }), "{err}");

    let mut rt2 = runtime();
    let err = rt2
        .register_workflow("company_intel", "ghost", |_| unreachable!())
        .unwrap_err();
    assert!(matches!(err, Error::UnknownWorkflow { .. }));
    let err = rt2
        .activate("company_intel", "t1", State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoLlm), "{err}");
}

#[test]
fn triggers_become_scheduler_triggers() {
    let rt = runtime();
    let triggers = rt.triggers();
    assert_eq!(triggers.len(), 3);
    let nightly = triggers.iter().find(|t| t.id == "nightly").unwrap();
    assert_eq!(nightly.kind, TriggerKind::Cron);
    assert_eq!(nightly.schedule.as_deref(), Some("0 2 * * *"));
    assert_eq!(nightly.workflow, "research");
    assert_eq!(nightly.operator_id.as_deref(), Some("company_intel"));
    assert_eq!(nightly.input["depth"], 2);
}

#[test]
fn the_runtime_builds_operators_for_roles() {
    let op = runtime().operator("company_intel").unwrap();
    assert_eq!(op.display_name(), "Company Intelligence");
    assert_eq!(op.workflow_ids(), vec!["research"]);
    let triggers: Vec<&str> = op.triggers().iter().map(|t| t.id.as_str()).collect();
    assert_eq!(triggers, vec!["t1", "nightly", "t2"]);
}

fn config_error(yaml: &str) -> (usize, usize, String, String) {
    match OperatorRuntime::from_yaml_str(yaml, "bad.yaml").unwrap_err() {
        Error::Config {
            path,
            line,
            column,
            key,
            message,
        } => {
            assert_eq!(path, PathBuf::from("bad.yaml"));
            (line, column, key, message)
        }
        other => panic!("expected a config error, got {other}"),
    }
}

#[test]
fn malformed_files_report_file_line_column_and_key() {
    // An unknown key.
    let (line, column, key, message) =
        config_error("operators:\n  - id: a\n    workflows:\n      - id: w\n        trigers: []\n");
    assert_eq!((line, column), (5, 9), "{message}");
    assert!(key.starts_with("operators[0].workflows[0]"), "{key}");
    assert!(message.contains("trigers"), "{message}");

    // A value of the wrong kind.
    let (line, _, key, message) = config_error(
        "operators:\n  - id: a\n    workflows:\n      - id: w\n        triggers:\n          - { id: t, type: hourly }\n",
    );
    assert_eq!(line, 6, "{message}");
    assert_eq!(key, "operators[0].workflows[0].triggers[0].type");
    assert!(message.contains("hourly"), "{message}");

    // Not YAML at all.
    let (line, _, _, _) = config_error("operators: [\n  - id: a\n");
    assert!(line >= 2);

    // The error message itself carries the position.
    let err = OperatorRuntime::from_yaml_str("operators:\n  - nme: x\n", "bad.yaml").unwrap_err();
    assert!(err.to_string().starts_with("bad.yaml:2:"), "{err}");
}

#[test]
fn semantic_errors_name_the_key() {
    let (_, _, key, message) = config_error(
        "operators:\n  - id: a\n    workflows:\n      - id: w\n        triggers: [{ id: c, type: cron }]\n",
    );
    assert_eq!(key, "operators[0].workflows[0].triggers[0].schedule");
    assert!(message.contains("needs a schedule"));
    let (_, _, key, _) = config_error("operators:\n  - id: a\n  - id: a\n");
    assert_eq!(key, "operators[1].id");
}

#[test]
fn prompts_load_from_files_relative_to_the_config() {
    let dir = std::env::temp_dir().join(format!("openvibe-ops-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/research.md"), "You research companies.\n").unwrap();
    let path = dir.join("ops.yaml");
    std::fs::write(
        &path,
        "operators:\n  - id: a\n    prompts:\n      research: { file: prompts/research.md }\n",
    )
    .unwrap();
    let rt = OperatorRuntime::from_yaml(&path).unwrap();
    assert_eq!(
        rt.operator_config("a").unwrap().prompt("research"),
        Some("You research companies.")
    );
    std::fs::write(
        &path,
        "operators:\n  - id: a\n    prompts:\n      research: { file: prompts/missing.md }\n",
    )
    .unwrap();
    let err = OperatorRuntime::from_yaml(&path).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("missing.md"), "{err}");
    let err = OperatorRuntime::from_yaml(dir.join("nope.yaml")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}
