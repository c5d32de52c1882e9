//! The `reliability` bench group: figures measured by running the
//! reliability tests themselves, printed as `BENCH` lines.
//!
//! - `reliability_props_cases`: property-test cases executed in this run,
//!   counted from proptest's own trace (`PROPTEST_VERBOSE=2` prints one
//!   "Test case passed" line per case that ran and passed; rejected inputs
//!   are not counted). Every property test must pass, or the group fails.
//! - `pg_fault_writes_lost`: writes the API reported as done that are
//!   missing after connections were killed mid-run (must be 0), from the
//!   Postgres fault test.

use std::process::{Command, Stdio};

use crate::cargo;

/// The crates with a `tests/properties.rs`.
const PROPERTY_CRATES: [&str; 6] = [
    "openvibe-protocols",
    "openvibe-governance",
    "openvibe-primitives",
    "openvibe-operators",
    "openvibe-memory",
    "openvibe-cli",
];

/// Run the group against `database_url`.
pub fn run(database_url: Option<&str>) -> Result<(), String> {
    let mut cases = 0usize;
    for krate in PROPERTY_CRATES {
        let mut cmd = cargo();
        cmd.args(["test", "--quiet", "-p", krate, "--test", "properties"])
            .args(["--", "--nocapture", "--test-threads", "2"])
            .env("PROPTEST_VERBOSE", "2");
        let (ok, output) = capture(&format!("property tests of {krate}"), &mut cmd)?;
        if !ok {
            return Err(format!(
                "property tests of {krate} failed:\n{}",
                tail(&output, 40)
            ));
        }
        let n = output.matches("Test case passed").count();
        eprintln!("    {krate}: {n} cases");
        cases += n;
    }
    println!("BENCH reliability_props_cases {cases} cases");

    let Some(url) = database_url else {
        return Err("pg_fault_writes_lost needs PostgreSQL (cargo xtask db up)".into());
    };
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--quiet",
        "-p",
        "openvibe-postgres",
        "--test",
        "faults",
    ])
    .args([
        "--",
        "--exact",
        "killed_connections_lose_nothing_and_the_pool_recovers",
        "--nocapture",
    ])
    .env("DATABASE_URL", url);
    let (ok, output) = capture("Postgres fault test", &mut cmd)?;
    let line = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("BENCH pg_fault_writes_lost "))
        .ok_or_else(|| {
            format!(
                "the fault test printed no pg_fault_writes_lost line:\n{}",
                tail(&output, 40)
            )
        })?;
    let lost = line.split_whitespace().next().unwrap_or("?");
    eprintln!("    fault test: {line}");
    println!("BENCH pg_fault_writes_lost {lost} writes");
    if !ok {
        return Err(format!("the fault test failed:\n{}", tail(&output, 40)));
    }
    Ok(())
}

/// Run `cmd` and return whether it succeeded with its stdout and stderr.
fn capture(step: &str, cmd: &mut Command) -> Result<(bool, String), String> {
    eprintln!("==> {step}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{step}: could not start {}: {e}", crate::shown(cmd)))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
