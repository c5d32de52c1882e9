//! The browser of the console's tests: Debian's `chromium` and
//! `chromium-driver` (`/usr/bin/chromium`, `/usr/bin/chromedriver`),
//! installed with apt when missing (as root; otherwise the error says what
//! to install).
//!
//! - `browser install`: install them when missing; print the driver's path.
//! - `browser status`: whether they are there, and their versions.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::db::{layout, proc};

/// Where Debian puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";
/// Where Debian puts its WebDriver server.
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub fn main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("install") => {
            println!("{}", ensure()?.display());
            Ok(())
        }
        Some("status") => {
            for program in [CHROMIUM, CHROMEDRIVER] {
                match version(Path::new(program)) {
                    Some(v) => println!("{program}: {v}"),
                    None => println!("{program}: missing"),
                }
            }
            Ok(())
        }
        _ => Err("usage: cargo xtask browser <install|status>".into()),
    }
}

/// The path of a working chromedriver (with chromium beside it),
/// installing both when they are missing.
pub fn ensure() -> Result<PathBuf, String> {
    if ready() {
        return Ok(PathBuf::from(CHROMEDRIVER));
    }
    if layout::effective_uid()? != 0 {
        return Err(format!(
            "the console's browser tests need Debian's chromium and chromium-driver \
             ({CHROMIUM}, {CHROMEDRIVER}), which are missing: \
             `sudo apt-get install chromium chromium-driver`"
        ));
    }
    eprintln!(
        "browser: installing Debian's chromium and chromium-driver for the console's browser tests ..."
    );
    let install = || {
        let mut cmd = Command::new("apt-get");
        cmd.args(["install", "-y", "-q", "--no-install-recommends"])
            .args(["chromium", "chromium-driver"])
            .env("DEBIAN_FRONTEND", "noninteractive");
        proc::run(&mut cmd, "installing chromium and chromium-driver")
    };
    if install().is_err() {
        let mut update = Command::new("apt-get");
        update.args(["update", "-q"]);
        proc::run(&mut update, "apt-get update")?;
        install()?;
    }
    if ready() {
        Ok(PathBuf::from(CHROMEDRIVER))
    } else {
        Err(format!(
            "chromium and chromium-driver were installed, but {CHROMEDRIVER} does not run"
        ))
    }
}

fn ready() -> bool {
    Path::new(CHROMIUM).exists() && version(Path::new(CHROMEDRIVER)).is_some()
}

/// What `program --version` prints, when it runs.
fn version(program: &Path) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
