//! Tests that need a server: run against it, or fail loudly, or — only when
//! explicitly told to — be reported as skipped by name.
//!
//! A test never passes silently without its server, and never runs against
//! another backend instead:
//!
//! - `DATABASE_URL` set: [`database_url`] returns it and the test runs;
//! - unset, and `OPENVIBE_SKIP_PG=1`: the test is *skipped*: its name is
//!   appended to the file named by `OPENVIBE_SKIP_REPORT` (and printed), and
//!   [`database_url`] returns `None` so the test returns at once.
//!   `cargo xtask test-all` sets the report file, lists every skipped test
//!   by name in its summary, and fails when there is any;
//! - unset otherwise: the test panics, saying how to provide a database.

use std::io::Write as _;

/// Set to `1` to skip (and report) the Postgres tests when no database is given.
pub const SKIP_ENV: &str = "OPENVIBE_SKIP_PG";

/// The file skipped tests are appended to, one `name<TAB>reason` line each.
pub const REPORT_ENV: &str = "OPENVIBE_SKIP_REPORT";

/// The running test's name (libtest names each test's thread after it).
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_owned()
}

/// Record `test` as skipped for `reason`: appended to the report file when
/// `OPENVIBE_SKIP_REPORT` names one, and printed.
pub fn record(test: &str, reason: &str) {
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(path) = std::env::var_os(REPORT_ENV) {
        let line = format!("{test}\t{reason}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot record the skipped test {test} in {path:?}: {e}");
        }
    }
}

/// `DATABASE_URL` for the running test; `None` after recording the test as
/// skipped when `OPENVIBE_SKIP_PG=1`; otherwise a panic saying what to do.
pub fn database_url() -> Option<String> {
    server_url(
        "DATABASE_URL",
        SKIP_ENV,
        "PostgreSQL",
        "The Postgres tests need a database: run `cargo xtask db up` and \
         `export DATABASE_URL=<the URL it prints>` \
         (postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe)",
    )
}

/// The variable naming the Temporal server the Temporal tests use.
pub const TEMPORAL_URL_ENV: &str = "OPENVIBE_TEMPORAL_URL";

/// Set to `1` to skip (and report) the Temporal tests when no server is given.
pub const SKIP_TEMPORAL_ENV: &str = "OPENVIBE_SKIP_TEMPORAL";

/// `OPENVIBE_TEMPORAL_URL` for the running test, as [`database_url`] does
/// for `DATABASE_URL` (skip with `OPENVIBE_SKIP_TEMPORAL=1`).
pub fn temporal_url() -> Option<String> {
    server_url(
        TEMPORAL_URL_ENV,
        SKIP_TEMPORAL_ENV,
        "Temporal",
        "The Temporal tests need a server: run `cargo xtask temporal up` and \
         `export OPENVIBE_TEMPORAL_URL=<the URL it prints>` (http://127.0.0.1:57233)",
    )
}

/// The URL in `var` for the running test; `None` after recording the test
/// as skipped when `skip_var=1`; otherwise a panic saying `how` to give one.
fn server_url(var: &str, skip_var: &str, server: &str, how: &str) -> Option<String> {
    if let Ok(url) = std::env::var(var)
        && !url.trim().is_empty()
    {
        return Some(url);
    }
    if std::env::var(skip_var).as_deref() == Ok("1") {
        record(
            &current_test(),
            &format!("{var} is unset and {skip_var}=1: not run against {server}"),
        );
        return None;
    }
    panic!(
        "{var} is not set. {how}, or run `cargo xtask test-all`, which does both. \
         Set {skip_var}=1 to skip them explicitly (they are then reported as skipped)."
    );
}
