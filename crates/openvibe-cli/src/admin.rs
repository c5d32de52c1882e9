//! What the maintenance commands ([`crate::namespaces`], [`crate::memory`],
//! [`crate::audit`]) share: the records they work on, in PostgreSQL
//! (`--database-url`) or an in-memory snapshot file (`--memory-file`, JSON
//! of [`MemorySnapshot`]; `namespaces migrate` and `memory forget` write it
//! back), the system caller they act as, and how they report progress.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use openvibe::in_memory::{MemorySnapshot, SnapshotHandle};
use openvibe::protocols::{CallerContext, Stores};

use crate::CliError;

/// Where the records are.
pub enum Backend {
    /// A PostgreSQL database.
    Postgres(String),
    /// A JSON snapshot file.
    File(PathBuf),
}

/// An opened backend: its stores, and for a file what to save.
pub struct Opened {
    /// The stores.
    pub stores: Stores,
    file: Option<(PathBuf, SnapshotHandle)>,
}

impl Opened {
    /// Write a file backend back (atomically: a temporary file renamed).
    pub fn save(&self) -> Result<(), CliError> {
        let Some((path, handle)) = &self.file else {
            return Ok(());
        };
        let snapshot = handle.snapshot()?;
        let text = serde_json::to_string_pretty(&snapshot)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(|e| io(&tmp, &e))?;
        std::fs::rename(&tmp, path).map_err(|e| io(path, &e))
    }
}

fn io(path: &Path, e: &std::io::Error) -> CliError {
    CliError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// Open `backend`.
pub async fn open(backend: &Backend) -> Result<Opened, CliError> {
    match backend {
        Backend::Postgres(url) => Ok(Opened {
            stores: openvibe::postgres::PgStores::connect(url).await?.stores(),
            file: None,
        }),
        Backend::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| io(path, &e))?;
            let snapshot: MemorySnapshot =
                serde_json::from_str(&text).map_err(|e| CliError::Spec {
                    path: path.clone(),
                    message: format!("not a memory snapshot: {e}"),
                })?;
            let (stores, handle) = snapshot.into_stores()?;
            Ok(Opened {
                stores,
                file: Some((path.clone(), handle)),
            })
        }
    }
}

/// The maintenance caller of `tenant`: the system, privileged.
pub fn admin(tenant: &str) -> CallerContext {
    CallerContext::system().with_tenant(tenant)
}

/// How `namespaces migrate` and `memory reindex` report progress.
pub enum Progress {
    /// A progress bar (a terminal).
    Bar,
    /// A plain line per batch.
    Lines,
}

impl Progress {
    /// A bar of `total` steps drawn with `template` (`Bar`), or none (`Lines`).
    pub fn bar(self, total: u64, template: &str) -> Option<indicatif::ProgressBar> {
        match self {
            Self::Bar => {
                let bar = indicatif::ProgressBar::new(total);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                Some(bar)
            }
            Self::Lines => None,
        }
    }

    /// A bar on a terminal, lines otherwise.
    pub fn detect() -> Self {
        if std::io::stderr().is_terminal() {
            Self::Bar
        } else {
            Self::Lines
        }
    }
}
