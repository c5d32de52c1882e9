//! `cargo xtask api-fuzz`: the served OpenAPI document against the server,
//! with a property-based API tester (schemathesis, from PyPI, pinned): every
//! operation, its examples, coverage and fuzzing phases, then the stateful
//! phase (operations chained through the links the tester infers from the
//! document: create → get → decide → list, the id of one answer in the next
//! request), every check. Run against a
//! development-mode server in process memory and against a governed server
//! on PostgreSQL (an API key of a governance file, a tenant of its own). Any
//! mismatch between the document and the server, any server error, fails.
//!
//! Status 422 (`inconsistent_input`: values that are each well formed but
//! disagree, by a rule no schema can state) is accepted for schema-valid
//! requests; everything else the tester expects by default.
//!
//! The MCP tools get the same treatment through a real MCP client (the
//! `mcp` SDK from PyPI, pinned): `xtask/mcp_fuzz.py` draws arguments from
//! each tool's input schema (hypothesis-jsonschema) and calls the tool on
//! the same servers' `/mcp`; schema-valid arguments refused as malformed or
//! invalid, schema-invalid ones taken, protocol or server errors fail.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{run, workspace_root};

/// The tester and its version (pinned: a new version finds new things,
/// which should arrive as a change, not as a red CI).
const SCHEMATHESIS: &str = "schemathesis";
const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// The MCP client and the generator of arguments (pinned together:
/// hypothesis-jsonschema 0.23 needs a hypothesis from before 6.113).
const MCP_CLIENT: [&str; 3] = [
    "mcp==1.22.0",
    "hypothesis==6.112.0",
    "hypothesis-jsonschema==0.23.1",
];

/// Examples per MCP tool in the test-all run.
const DEFAULT_TOOL_EXAMPLES: &str = "30";

/// The seed of the test-all run (reproducible; `--seed` to try others).
const DEFAULT_SEED: &str = "43";

/// Examples per operation and phase in the test-all run.
const DEFAULT_EXAMPLES: &str = "25";
/// Scenarios of the stateful phase (chains of operations through links):
/// about 40 s a server here.
const DEFAULT_STATEFUL_EXAMPLES: &str = "150";

const USAGE: &str = "\
cargo xtask api-fuzz [--seed N | --random] [--max-examples N] [--only memory|postgres]

Runs schemathesis (PyPI, pinned) against `openvibe serve`: every operation of the
served /openapi.json, its examples, coverage and fuzzing phases, then the stateful
phase (operations chained through the document's links: create, then get, decide,
retire the record it answered), every check, in development mode
(in-process memory) and governed (an API key, PostgreSQL from `cargo xtask db up` or
DATABASE_URL). Then every MCP tool of the same servers through a real MCP client
(the `mcp` SDK, PyPI, pinned), with arguments drawn from the tool's input schema
(hypothesis-jsonschema; --max-examples is per operation for schemathesis, and also
per tool). Fails on any mismatch between a schema and the server or any server
error. Logs: target/api-fuzz/<run>.log and mcp-<run>.log.";

/// `cargo xtask api-fuzz ...`.
pub fn main(args: &[String]) -> Result<(), String> {
    let mut options = Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            "--seed" => options.seed = Some(it.next().ok_or("--seed needs a number")?.clone()),
            "--random" => options.seed = None,
            "--max-examples" => {
                options.examples = it.next().ok_or("--max-examples needs a number")?.clone();
                options.tool_examples = options.examples.clone();
                options.stateful_examples = options.examples.clone();
            }
            "--only" => {
                options.only = Some(it.next().ok_or("--only needs memory|postgres")?.clone())
            }
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    let url = match options.only.as_deref() {
        Some("memory") => None,
        _ => Some(crate::db::ensure_up()?),
    };
    let binary = crate::build_as_the_tests()?.join("openvibe");
    run_all(&options, url.as_deref(), &binary)
}

/// How a run goes.
pub struct Options {
    seed: Option<String>,
    examples: String,
    tool_examples: String,
    stateful_examples: String,
    only: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            seed: Some(DEFAULT_SEED.to_owned()),
            examples: DEFAULT_EXAMPLES.to_owned(),
            tool_examples: DEFAULT_TOOL_EXAMPLES.to_owned(),
            stateful_examples: DEFAULT_STATEFUL_EXAMPLES.to_owned(),
            only: None,
        }
    }
}

/// Both runs against the CLI `binary` (`database_url`: the governed run's
/// database; `None` skips it, which only `--only memory` asks for).
pub fn run_all(options: &Options, database_url: Option<&str>, binary: &Path) -> Result<(), String> {
    let tester = ensure_tester()?;
    let mcp_client = ensure_mcp_client()?;
    let logs = workspace_root().join("target").join("api-fuzz");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    if options.only.as_deref() != Some("postgres") {
        let server = Server::start(binary, &["--memory"], &[])?;
        fuzz(
            &tester,
            options,
            &server,
            None,
            &logs.join("memory.log"),
            "memory",
        )?;
        fuzz_tools(
            &mcp_client,
            options,
            &server,
            None,
            &logs.join("mcp-memory.log"),
            "memory",
        )?;
    }
    if let (Some(url), true) = (database_url, options.only.as_deref() != Some("memory")) {
        let key = format!("apifuzz-key-{}", std::process::id());
        let tenant = format!("apifuzz-{}", std::process::id());
        let governance = logs.join("governance.yaml");
        std::fs::write(&governance, governance_file(&tenant))
            .map_err(|e| format!("{}: {e}", governance.display()))?;
        let governance = governance.display().to_string();
        let server = Server::start(
            binary,
            &["--database-url", url, "--governance", &governance],
            &[("OPENVIBE_API_FUZZ_KEY", key.as_str())],
        )?;
        fuzz(
            &tester,
            options,
            &server,
            Some(&key),
            &logs.join("postgres.log"),
            "postgres (governed)",
        )?;
        fuzz_tools(
            &mcp_client,
            options,
            &server,
            Some(&key),
            &logs.join("mcp-postgres.log"),
            "postgres (governed)",
        )?;
    }
    Ok(())
}

/// A governance file with one privileged key in a tenant of its own.
fn governance_file(tenant: &str) -> String {
    format!(
        "namespaces:\n  \
           fuzz: {{ read: [fuzzer], write: [fuzzer], delete: [fuzzer], manage: [fuzzer] }}\n\
         api_keys:\n  \
           - {{ principal: fuzzer, env: OPENVIBE_API_FUZZ_KEY, namespace: fuzz, tenant: {tenant},\n      \
                privileged: true, projects: '*', clearance: {{ everywhere: restricted }} }}\n"
    )
}

/// The tester's runs against `server`: every operation alone (examples,
/// coverage, fuzzing; `log`), then the stateful phase (`<run>.stateful.log`),
/// with examples of its own: its scenarios chain operations through the
/// document's links, so more of them reach more links.
fn fuzz(
    tester: &Tester,
    options: &Options,
    server: &Server,
    key: Option<&str>,
    log: &Path,
    name: &str,
) -> Result<(), String> {
    fuzz_phases(
        tester,
        options,
        server,
        key,
        log,
        name,
        "examples,coverage,fuzzing",
        &options.examples,
    )?;
    let stateful = log.with_extension("stateful.log");
    fuzz_phases(
        tester,
        options,
        server,
        key,
        &stateful,
        &format!("{name} stateful"),
        "stateful",
        &options.stateful_examples,
    )
}

/// One tester run of `phases` against `server`; its output goes to `log`.
#[allow(clippy::too_many_arguments)]
fn fuzz_phases(
    tester: &Tester,
    options: &Options,
    server: &Server,
    key: Option<&str>,
    log: &Path,
    name: &str,
    phases: &str,
    examples: &str,
) -> Result<(), String> {
    let config = workspace_root().join("xtask").join("schemathesis.toml");
    let mut cmd = tester.command();
    // Its own cache (`.schemathesis/`) goes beside the logs.
    if let Some(dir) = log.parent() {
        cmd.current_dir(dir);
    }
    cmd.arg("--config-file").arg(&config).arg("run");
    cmd.arg(format!("{}/openapi.json", server.url));
    cmd.args([
        "--checks",
        "all",
        "--phases",
        phases,
        "--workers",
        "2",
        "--max-examples",
        examples,
        // Long polls wait up to 30 s by design.
        "--request-timeout",
        "40",
        "--max-response-time",
        "35",
        // A health check of the generator, not of the server: path
        // parameters drawn from a strict pattern are often filtered
        // (unusable in a URL), which makes it fail by chance.
        "--suppress-health-check",
        "filter_too_much",
        "--no-color",
    ]);
    if let Some(seed) = &options.seed {
        cmd.args(["--seed", seed]);
    }
    if let Some(key) = key {
        cmd.args(["--header", &format!("Authorization: Bearer {key}")]);
    }
    let banner = format!(
        "api-fuzz {name}: schemathesis {SCHEMATHESIS_VERSION} against {}",
        server.url
    );
    let (status, text, started) = run_logged(&mut cmd, log, &banner, "schemathesis")?;
    crate::record_time(&format!("api-fuzz {name}"), started.elapsed());
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("SUMMARY"))
        .collect();
    eprintln!(
        "    {} in {:.0?}",
        summary
            .iter()
            .map(|l| l.trim())
            .find(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(" generated"))
            .unwrap_or(""),
        started.elapsed()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "api-fuzz {name}: the document and the server disagree (schemathesis exited with \
             {status}); the failures, each with a curl line to reproduce, are in {}:\n{}",
            log.display(),
            summary.join("\n")
        ))
    }
}

/// Run a tester with its output (stdout and stderr) in `log`, announced by
/// `banner`; its exit status, the log's text, and when it started.
fn run_logged(
    cmd: &mut Command,
    log: &Path,
    banner: &str,
    what: &str,
) -> Result<(std::process::ExitStatus, String, Instant), String> {
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    eprintln!("==> {banner} (log: {})", log.display());
    let started = Instant::now();
    let status = cmd
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("running {what}: {e}"))?;
    Ok((
        status,
        std::fs::read_to_string(log).unwrap_or_default(),
        started,
    ))
}

/// The MCP property test against `server`'s `/mcp`; its output goes to `log`.
fn fuzz_tools(
    client: &Path,
    options: &Options,
    server: &Server,
    key: Option<&str>,
    log: &Path,
    name: &str,
) -> Result<(), String> {
    let script = workspace_root().join("xtask").join("mcp_fuzz.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .arg(format!("{}/mcp", server.url))
        .env("PYTHONPATH", client)
        .args(["--examples", &options.tool_examples]);
    if let Some(seed) = &options.seed {
        cmd.args(["--seed", seed]);
    }
    if let Some(key) = key {
        cmd.args(["--key", key]);
    }
    let banner = format!(
        "api-fuzz {name}: MCP tools through the mcp SDK against {}/mcp",
        server.url
    );
    let (status, text, started) =
        run_logged(&mut cmd, log, &banner, &script.display().to_string())?;
    crate::record_time(&format!("api-fuzz {name}: MCP tools"), started.elapsed());
    let last = text.lines().rev().find(|l| l.starts_with("mcp-fuzz:"));
    eprintln!("    {} in {:.0?}", last.unwrap_or(""), started.elapsed());
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "api-fuzz {name}: the MCP tools' schemas and the server disagree ({status}); see {}:\n{}",
            log.display(),
            text.lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        ))
    }
}

/// The MCP client and argument generator at their pinned versions in the
/// cache, installed from PyPI on first use; the directory for `PYTHONPATH`.
fn ensure_mcp_client() -> Result<PathBuf, String> {
    let version = MCP_CLIENT.join(",");
    let dir = cache_dir().join(format!("mcp-fuzz-{}", MCP_CLIENT[0].replace("==", "-")));
    if std::fs::read_to_string(dir.join(".installed")).is_ok_and(|v| v == version) {
        return Ok(dir);
    }
    eprintln!(
        "api-fuzz: installing {} from PyPI into {} ...",
        MCP_CLIENT.join(" "),
        dir.display()
    );
    pip_install(&dir, &MCP_CLIENT, "the MCP client")?;
    std::fs::write(dir.join(".installed"), version).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The installed tester: a `pip install --target` directory.
struct Tester {
    dir: PathBuf,
}

impl Tester {
    fn command(&self) -> Command {
        let mut cmd = Command::new("python3");
        cmd.args([
            "-c",
            "from schemathesis.cli import schemathesis; schemathesis()",
        ])
        .env("PYTHONPATH", &self.dir)
        // No telemetry, no update checks: a test run talks to its server only.
        .env("SCHEMATHESIS_TELEMETRY", "false");
        cmd
    }
}

/// schemathesis at its pinned version in the cache, installed from PyPI on
/// first use.
fn ensure_tester() -> Result<Tester, String> {
    let dir = cache_dir().join(format!("{SCHEMATHESIS}-{SCHEMATHESIS_VERSION}"));
    let tester = Tester { dir: dir.clone() };
    if dir.join(".installed").exists() {
        return Ok(tester);
    }
    eprintln!(
        "api-fuzz: installing {SCHEMATHESIS} {SCHEMATHESIS_VERSION} from PyPI into {} ...",
        dir.display()
    );
    let pinned = format!("{SCHEMATHESIS}=={SCHEMATHESIS_VERSION}");
    pip_install(&dir, &[pinned.as_str()], SCHEMATHESIS)?;
    std::fs::write(dir.join(".installed"), SCHEMATHESIS_VERSION).map_err(|e| e.to_string())?;
    Ok(tester)
}

/// `pip install --target dir packages` from PyPI (a fresh directory, which
/// PEP 668 allows on a system Python); `what` names them in errors.
fn pip_install(dir: &Path, packages: &[&str], what: &str) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    let mut pip = Command::new("python3");
    pip.env("PIP_ROOT_USER_ACTION", "ignore")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-warn-conflicts",
            "--target",
        ])
        .arg(dir)
        .args(packages);
    run(&format!("api-fuzz: pip install {what}"), &mut pip).map_err(|e| {
        format!("{e}\n(the API tests need python3 with pip: `apt-get install python3-pip`)")
    })
}

/// `$XDG_CACHE_HOME/openvibe`, else `~/.cache/openvibe`.
fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"))
        .join("openvibe")
}

/// `openvibe serve` on a free port, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(binary);
        cmd.args(["serve", "--addr", &addr, "--quiet"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let url = format!("http://{addr}");
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(&addr).is_ok() {
                return Ok(Self { child, url });
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut why = String::new();
                if let Some(stderr) = child.stderr.take() {
                    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                        why.push_str(&line);
                        why.push('\n');
                    }
                }
                return Err(format!(
                    "openvibe serve {args:?} exited with {status}:\n{why}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        Err(format!(
            "openvibe serve {args:?} did not listen on {addr} within 60 s"
        ))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
