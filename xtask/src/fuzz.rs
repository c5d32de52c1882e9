//! `cargo xtask fuzz [--seconds N] [target...]`: run the libFuzzer targets
//! of `fuzz/` (cargo-fuzz, nightly toolchain), each for N seconds.
//! `test-all` runs each for a short smoke ([`SMOKE_SECONDS`]).

use std::process::Command;

/// The targets, in `fuzz/fuzz_targets/`.
pub const TARGETS: [&str; 3] = ["yaml_loader", "path_validator", "output_parser"];

/// Seconds per target in `test-all`.
pub const SMOKE_SECONDS: u64 = 15;

/// The task.
pub fn main(args: &[String]) -> Result<(), String> {
    let mut seconds = 60;
    let mut targets = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--seconds needs a whole number of seconds")?;
            }
            "-h" | "--help" => {
                println!(
                    "usage: cargo xtask fuzz [--seconds N] [target...]\n\ntargets: {}\n\
                     Runs each target for N seconds (default 60) with cargo-fuzz on the nightly \
                     toolchain, installing cargo-fuzz when it is missing. Crashes are kept in \
                     fuzz/artifacts/<target>/.",
                    TARGETS.join(", ")
                );
                return Ok(());
            }
            t if TARGETS.contains(&t) => targets.push(t.to_owned()),
            other => {
                return Err(format!(
                    "unknown fuzz target `{other}` (targets: {})",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    }
    run(&targets, seconds)
}

/// Run `targets` for `seconds` each; any crash fails.
pub fn run(targets: &[String], seconds: u64) -> Result<(), String> {
    ensure_tools()?;
    for target in targets {
        crate::run(
            &format!("fuzz {target} ({seconds} s)"),
            nightly()
                .args(["fuzz", "run", "--fuzz-dir", "fuzz", target, "--"])
                .arg(format!("-max_total_time={seconds}")),
        )?;
    }
    Ok(())
}

/// `cargo` of the nightly toolchain, in the workspace root, without the
/// variables of the stable cargo that runs xtask.
fn nightly() -> Command {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", "nightly", "cargo"])
        .current_dir(crate::workspace_root())
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTUP_TOOLCHAIN");
    cmd
}

/// A nightly toolchain must be there (libFuzzer needs `-Z` flags); cargo-fuzz
/// is installed when missing.
fn ensure_tools() -> Result<(), String> {
    let nightly_ok = nightly()
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !nightly_ok {
        return Err(
            "fuzzing needs the nightly toolchain: run `rustup toolchain install nightly`".into(),
        );
    }
    let fuzz_ok = nightly()
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !fuzz_ok {
        crate::run(
            "install cargo-fuzz",
            nightly().args(["install", "cargo-fuzz", "--locked"]),
        )?;
    }
    Ok(())
}
