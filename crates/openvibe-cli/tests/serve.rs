//! `openvibe serve`, as the README shows it: the README's example runs
//! verbatim against the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

/// The shell block between the README's `serve-example` markers.
fn readme_example() -> String {
    // The manifest directory at run time (see CONTRIBUTING.md).
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let readme = std::fs::read_to_string(format!("{dir}/../../README.md")).unwrap();
    let start = readme.find("<!-- serve-example").expect("the marker");
    let rest = &readme[start..];
    let code = rest.split("```sh\n").nth(1).unwrap();
    code.split("```").next().unwrap().to_owned()
}

#[test]
fn the_readme_serve_example_runs_verbatim() {
    let script = readme_example();
    assert!(script.contains("openvibe serve --memory &"), "{script}");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_openvibe"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-c", &format!("set -e\n{script}\nwait")])
        .env("PATH", path)
        .env_remove("OPENVIBE_DATABASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains(r#""goal_event":"research.requested""#),
        "{stdout}\n{stderr}"
    );
    // curl prints each answer without a newline: read them as a stream.
    let answers: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // The plan, then the list (the append answers 204, no body).
    assert_eq!(answers.len(), 2, "{stdout}");
    let entry = &answers[1];
    assert_eq!(
        entry["value"],
        serde_json::json!(["searched the web"]),
        "{stdout}"
    );
    assert!(
        stderr.contains("memory service stopped"),
        "graceful stop: {stderr}"
    );
}

#[test]
fn serve_refuses_a_public_address_without_governance() {
    let out = Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args(["serve", "--memory", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback"), "{stderr}");
    let out = Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args(["serve"])
        .env_remove("OPENVIBE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--memory"));
}
