//! Running the managed server: the OS service user, initdb, pg_ctl
//! start/stop/status and provisioning of the database, role and extensions.

use std::path::Path;
use std::process::Command;

use super::layout::{Layout, make_dir};
use super::proc;

/// Superuser created by initdb (trust over the Unix socket, password over TCP).
pub const SUPERUSER: &str = "postgres";
/// Superuser password for TCP connections (dev server only).
pub const SUPERUSER_PASSWORD: &str = "postgres";
/// Non-superuser login role owning the app database (subject to RLS).
pub const APP_ROLE: &str = "openvibe_app";
/// Password of [`APP_ROLE`].
pub const APP_PASSWORD: &str = "openvibe_app";
/// The app database.
pub const DATABASE: &str = "openvibe";
/// Extensions created (as superuser) in the app database.
pub const EXTENSIONS: [&str; 2] = ["vector", "pg_trgm"];

/// Functions behind the tag (`&&`) and text (`@@`) filters, marked
/// `LEAKPROOF` (as superuser) so that PostgreSQL may use the GIN indexes
/// for them under forced row-level security. Neither raises an error that
/// depends on a row's value, which is what LEAKPROOF promises. Without it,
/// a tag- or text-only query scans the tenant (docs/decisions.md).
pub const LEAKPROOF: [&str; 2] = [
    "arrayoverlap(anyarray, anyarray)",
    "ts_match_vq(tsvector, tsquery)",
];

/// Connection URL of the app role.
pub fn app_url(port: u16) -> String {
    format!("postgres://{APP_ROLE}:{APP_PASSWORD}@127.0.0.1:{port}/{DATABASE}")
}

/// Connection URL of the superuser, on the app database.
pub fn admin_url(port: u16) -> String {
    format!("postgres://{SUPERUSER}:{SUPERUSER_PASSWORD}@127.0.0.1:{port}/{DATABASE}")
}

/// What `pg_ctl status` says about our data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The bundle is not unpacked yet.
    NotInstalled,
    /// No initialised data directory.
    Uninitialized,
    /// Initialised, server not running.
    Stopped,
    /// Server running with this postmaster pid.
    Running(Option<u32>),
}

/// Ask `pg_ctl status` about our data directory.
pub fn state(layout: &Layout) -> Result<State, String> {
    if !super::bundle::is_installed(layout) {
        return Ok(State::NotInstalled);
    }
    if !layout.data_dir().join("PG_VERSION").is_file() {
        return Ok(State::Uninitialized);
    }
    let mut cmd = layout.as_service_user(&layout.bin("pg_ctl"));
    cmd.arg("-D").arg(layout.data_dir()).arg("status");
    let done = proc::capture(&mut cmd, "checking the server with pg_ctl status")?;
    match done.status.code() {
        Some(0) => {
            let pid = done
                .stdout
                .split("PID: ")
                .nth(1)
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|s| s.parse().ok());
            Ok(State::Running(pid))
        }
        Some(3) => Ok(State::Stopped),
        Some(4) => Ok(State::Uninitialized),
        _ => Err(proc::failure(
            &cmd,
            "checking the server with pg_ctl status",
            &done,
        )),
    }
}

/// The port the running server listens on, from `postmaster.pid` (line 4).
pub fn running_port(layout: &Layout) -> Option<u16> {
    let pid_file = std::fs::read_to_string(layout.data_dir().join("postmaster.pid")).ok()?;
    pid_file.lines().nth(3)?.trim().parse().ok()
}

/// As root: create the system user that owns and runs the server (idempotent).
pub fn ensure_service_user(layout: &Layout) -> Result<(), String> {
    ensure_system_user(layout.service_user.as_deref(), &layout.root, "db")
}

/// Create the system `user` (when given: we run as root) with home `home`,
/// unless it exists; `tag` prefixes the message.
pub fn ensure_system_user(user: Option<&str>, home: &Path, tag: &str) -> Result<(), String> {
    let Some(user) = user else {
        return Ok(());
    };
    if proc::available("id", &["-u", user]) {
        return Ok(());
    }
    let shell = ["/usr/sbin/nologin", "/sbin/nologin", "/bin/false"]
        .into_iter()
        .find(|s| Path::new(s).exists())
        .unwrap_or("/bin/false");
    eprintln!("{tag}: creating system user {user} (the server does not run as root)");
    let mut cmd = Command::new("useradd");
    cmd.args([
        "--system",
        "--user-group",
        "--no-create-home",
        "--shell",
        shell,
    ])
    .arg("--home-dir")
    .arg(home)
    .arg(user);
    proc::run(&mut cmd, &format!("creating the system user {user}")).map(drop)
}

/// Create the state directories with the right owner and modes.
pub fn prepare_dirs(layout: &Layout) -> Result<(), String> {
    make_dir(&layout.root, 0o755)?;
    // Only the server's user (and root) may use the trust-authenticated socket.
    make_dir(&layout.socket_dir(), 0o700)?;
    make_dir(&layout.log_dir(), 0o755)?;
    let data = layout.data_dir();
    let fresh_data = !data.exists();
    if fresh_data {
        make_dir(&data, 0o700)?;
    }
    if let Some(user) = &layout.service_user {
        let mut targets = vec![layout.socket_dir(), layout.log_dir()];
        if fresh_data {
            targets.push(data);
        }
        let mut chown = Command::new("chown");
        chown.arg("-R").arg(format!("{user}:{user}")).args(&targets);
        proc::run(
            &mut chown,
            &format!("giving the server directories to {user}"),
        )?;
    }
    Ok(())
}

/// initdb, unless the data directory is already initialised.
pub fn initdb(layout: &Layout) -> Result<(), String> {
    let data = layout.data_dir();
    if data.join("PG_VERSION").is_file() {
        return Ok(());
    }
    let non_empty = std::fs::read_dir(&data)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    if non_empty {
        return Err(format!(
            "{} exists but holds no initialised cluster (an interrupted initdb?); \
             run `cargo xtask db reset` to recreate it",
            data.display()
        ));
    }
    eprintln!("db: initdb {} ...", data.display());
    let mut cmd = layout.as_service_user(&layout.bin("initdb"));
    cmd.arg("-D")
        .arg(&data)
        .args([
            "-U",
            SUPERUSER,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ])
        .args([
            "--encoding=UTF8",
            "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8",
        ])
        .arg("--no-instructions");
    proc::run(&mut cmd, "initialising the data directory (initdb)").map(drop)
}

/// Refuse to start a data directory from another PostgreSQL major version.
pub fn check_major_version(layout: &Layout) -> Result<(), String> {
    let data_version =
        std::fs::read_to_string(layout.data_dir().join("PG_VERSION")).map_err(|e| {
            format!(
                "cannot read PG_VERSION in {}: {e}",
                layout.data_dir().display()
            )
        })?;
    let mut cmd = Command::new(layout.bin("postgres"));
    cmd.arg("--version");
    let out = proc::run(&mut cmd, "running the bundled postgres --version")?;
    // "postgres (PostgreSQL) 18.3"
    let bundled = out
        .split_whitespace()
        .last()
        .and_then(|v| v.split('.').next())
        .unwrap_or("");
    if bundled != data_version.trim() {
        return Err(format!(
            "{} was initialised by PostgreSQL {} but the bundle is PostgreSQL {bundled}; \
             run `cargo xtask db reset` to recreate it (this deletes its data)",
            layout.data_dir().display(),
            data_version.trim()
        ));
    }
    Ok(())
}

/// Whether something already listens on 127.0.0.1:`port`.
pub fn port_in_use(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
}

/// Memory settings for a development server on a machine of this project's
/// size (2 cores, 24 GiB): the default 128 MB of shared buffers cannot hold
/// a 100,000-vector HNSW index (~200 MB), so every vector query would read
/// from the page cache.
const TUNING: &str = "-c shared_buffers=1GB -c maintenance_work_mem=512MB -c work_mem=16MB \
                      -c effective_cache_size=4GB";

/// `pg_ctl start` on 127.0.0.1:`port`, socket in the socket dir; waits for
/// readiness. On failure the error carries the tail of the server log.
pub fn start(layout: &Layout) -> Result<(), String> {
    let options = format!(
        "-c listen_addresses=127.0.0.1 -p {} -k {} {TUNING}",
        layout.port,
        proc::shell_quote(&layout.socket_dir().to_string_lossy())
    );
    eprintln!("db: starting PostgreSQL on 127.0.0.1:{} ...", layout.port);
    let mut cmd = layout.as_service_user(&layout.bin("pg_ctl"));
    cmd.arg("-D")
        .arg(layout.data_dir())
        .arg("-l")
        .arg(layout.log_file())
        .args(["-w", "-t", "60", "-o", &options, "start"]);
    proc::run(&mut cmd, "starting PostgreSQL (pg_ctl start)").map(drop).map_err(|e| {
        let log = std::fs::read_to_string(layout.log_file()).unwrap_or_default();
        format!(
            "{e}\n--- last lines of {} ---\n{}\n(the log says why; if port {} is taken, set OPENVIBE_PG_PORT to a free port)",
            layout.log_file().display(),
            proc::tail(log.trim_end(), 25),
            layout.port
        )
    })
}

/// `pg_ctl stop -m fast` on our data directory only.
pub fn stop(layout: &Layout) -> Result<(), String> {
    let mut cmd = layout.as_service_user(&layout.bin("pg_ctl"));
    cmd.arg("-D")
        .arg(layout.data_dir())
        .args(["-m", "fast", "-w", "-t", "60", "stop"]);
    proc::run(&mut cmd, "stopping PostgreSQL (pg_ctl stop)").map(drop)
}

/// Run SQL as the superuser over the Unix socket (trust auth); each
/// statement is a separate `-c`. Returns psql's unaligned stdout.
fn psql_admin(layout: &Layout, port: u16, database: &str, sql: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new(layout.bin("psql"));
    cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(layout.socket_dir())
        .args(["-p", &port.to_string(), "-U", SUPERUSER, "-d", database])
        .env("PGCONNECT_TIMEOUT", "10")
        .args(["-c", "SET client_min_messages = warning"]);
    for statement in sql {
        cmd.args(["-c", statement]);
    }
    proc::run(
        &mut cmd,
        &format!("running SQL as {SUPERUSER} in database {database}"),
    )
}

/// Check that `url` accepts a connection (`select 1`) using `psql`.
pub fn check_url(psql: &Path, url: &str) -> Result<(), String> {
    let mut cmd = Command::new(psql);
    cmd.args([
        "-X",
        "-q",
        "-A",
        "-t",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        "select 1",
    ])
    .arg(url)
    .env("PGCONNECT_TIMEOUT", "10");
    let what = format!("connecting to {url}");
    let out = proc::run(&mut cmd, &what)?;
    if out.trim() == "1" {
        Ok(())
    } else {
        Err(format!("{what}: `select 1` returned {:?}", out.trim()))
    }
}

/// Idempotently create the app role and database and the extensions, and
/// (re)set both passwords.
pub fn provision(layout: &Layout, port: u16) -> Result<(), String> {
    let role_sql = format!(
        "DO $$ BEGIN \
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN \
             CREATE ROLE {APP_ROLE} LOGIN; \
           END IF; \
         END $$"
    );
    let alter_app = format!(
        "ALTER ROLE {APP_ROLE} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
         NOBYPASSRLS PASSWORD '{APP_PASSWORD}'"
    );
    let alter_admin = format!("ALTER ROLE {SUPERUSER} WITH PASSWORD '{SUPERUSER_PASSWORD}'");
    psql_admin(
        layout,
        port,
        "postgres",
        &[&alter_admin, &role_sql, &alter_app],
    )?;

    let exists_sql = format!("SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'");
    if psql_admin(layout, port, "postgres", &[&exists_sql])?.trim() != "1" {
        eprintln!("db: creating database {DATABASE} owned by {APP_ROLE}");
        let create = format!("CREATE DATABASE {DATABASE} OWNER {APP_ROLE}");
        psql_admin(layout, port, "postgres", &[&create])?;
    }
    let owner = format!("ALTER DATABASE {DATABASE} OWNER TO {APP_ROLE}");
    let mut sql = vec![owner];
    sql.extend(
        EXTENSIONS
            .iter()
            .map(|e| format!("CREATE EXTENSION IF NOT EXISTS {e}")),
    );
    sql.extend(
        LEAKPROOF
            .iter()
            .map(|f| format!("ALTER FUNCTION pg_catalog.{f} LEAKPROOF")),
    );
    let sql: Vec<&str> = sql.iter().map(String::as_str).collect();
    psql_admin(layout, port, DATABASE, &sql)?;
    check_url(&layout.bin("psql"), &app_url(port))
}
