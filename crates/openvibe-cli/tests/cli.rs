//! The `openvibe` binary as a user runs it: logs, errors, exit codes,
//! completions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn openvibe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .output()
        .unwrap()
}

#[test]
fn json_logs_carry_the_span_chain_model_and_tokens() {
    let out = openvibe(&["-v", "--log-format", "json", "demo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let call = lines
        .iter()
        .find(|l| l["span"]["name"] == "llm_call")
        .expect("an llm_call span");
    assert!(call["span"]["model"].is_string(), "{call}");
    assert!(call["span"]["tokens_in"].is_u64(), "{call}");
    let chain: Vec<&str> = call["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(chain[0], "activate", "{chain:?}");
    assert!(chain.contains(&"node"), "{chain:?}");
    assert_eq!(call["spans"][0]["role"], "cro");
    // Info level: no store spans, no record contents.
    assert!(!stderr.contains("\"store\""), "store spans are debug");
    assert!(!stderr.contains("Acme"), "no record contents at info level");
}

#[test]
fn without_flags_the_output_is_only_the_demo() {
    let out = openvibe(&["demo"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn debug_logs_show_store_queries_with_tenant_and_principal() {
    let out = openvibe(&["-vv", "demo"]);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let store = stderr
        .lines()
        .find(|l| l.contains("store") && l.contains("backend=\"memory\""))
        .expect("a store span");
    assert!(
        store.contains("tenant=") && store.contains("principal="),
        "{store}"
    );
}

#[test]
fn a_failure_is_one_line_and_exit_code_1_with_causes_under_v() {
    let out = openvibe(&["run", "/nonexistent/role.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("openvibe: error: "), "{stderr}");
    // A database URL that does not parse (fails at once, with causes).
    let unreachable = "postgres://openvibe_app@127.0.0.1:notaport/openvibe";
    let out = openvibe(&["demo", "--database-url", unreachable]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
    let out = openvibe(&["-v", "demo", "--database-url", unreachable]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("caused by: "),
        "-v shows the causes: {stderr}"
    );
}

#[test]
fn a_wrong_command_line_is_exit_code_2() {
    let out = openvibe(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_explains_with_examples_and_exit_codes() {
    let help = String::from_utf8(openvibe(&["--help"]).stdout).unwrap();
    assert!(help.contains("Exit codes:"), "{help}");
    for command in ["demo", "run", "completions"] {
        let help = String::from_utf8(openvibe(&[command, "--help"]).stdout).unwrap();
        assert!(help.contains("Examples:"), "{command}: {help}");
    }
}

#[test]
fn mcp_help_lists_every_tool_the_server_serves() {
    let help = String::from_utf8(openvibe(&["mcp", "--help"]).stdout).unwrap();
    let tools = openvibe::service::mcp::MemoryTools::tools();
    assert!(tools.len() >= 7, "{tools:?}");
    for (name, description) in tools {
        assert!(
            help.contains(&format!("{name}: {description}")),
            "{name} in {help}"
        );
    }
    assert!(help.contains("deleteExpiredMemories"), "{help}");
}

#[test]
fn completions_are_generated_for_the_common_shells() {
    for shell in ["bash", "zsh", "fish"] {
        let out = openvibe(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            script.contains("openvibe") && script.contains("demo"),
            "{shell}"
        );
    }
}
