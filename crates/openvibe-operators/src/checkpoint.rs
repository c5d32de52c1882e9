//! [`FileCheckpointer`]: checkpoints that outlive the process, one JSON
//! file per run in a directory.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use openvibe_protocols::StoreError;

use crate::{Checkpoint, Checkpointer};

/// Keeps each run's latest checkpoint in `<dir>/<run id>.json`, written to a
/// temporary file, flushed to disk and renamed over the old one, so a crash
/// leaves either the previous checkpoint or the new one, never half of one.
/// The run id is percent-encoded into the file name.
///
/// ```
/// use openvibe_operators::{Checkpoint, Checkpointer, FileCheckpointer, END};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let dir = std::env::temp_dir().join(format!("openvibe-doc-checkpoints-{}", std::process::id()));
/// let checkpoints = FileCheckpointer::new(&dir).unwrap();
/// let mut cp = Checkpoint {
///     run_id: "cro/hourly@2026-11-25T01:00:00Z".into(),
///     step: 1,
///     completed: "qualify".into(),
///     next: "enrich".into(),
///     state: Default::default(),
///     origin: serde_json::json!({"role": "cro"}),
/// };
/// checkpoints.save(&cp).await.unwrap();
/// // Another process, later: the run is still to finish.
/// let again = FileCheckpointer::new(&dir).unwrap();
/// assert_eq!(again.unfinished().await.unwrap(), vec![cp.clone()]);
/// cp.next = END.into();
/// again.save(&cp).await.unwrap();
/// assert!(again.unfinished().await.unwrap().is_empty());
/// # std::fs::remove_dir_all(dir).unwrap();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FileCheckpointer {
    dir: PathBuf,
}

impl FileCheckpointer {
    /// Checkpoints in `dir` (created when missing).
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
        Ok(Self { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, run_id: &str) -> PathBuf {
        let mut name = String::with_capacity(run_id.len() + 5);
        for b in run_id.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
                name.push(char::from(b));
            } else {
                name.push_str(&format!("%{b:02X}"));
            }
        }
        name.push_str(".json");
        self.dir.join(name)
    }
}

/// A file operation that failed, its I/O error kept as the source.
fn io(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::backend_from(format!("cannot {what} {}: {e}", path.display()), false, e)
}

fn read(path: &Path) -> Result<Option<Checkpoint>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path, e)),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        StoreError::backend_from(
            format!("{} is not a checkpoint: {e}", path.display()),
            false,
            e,
        )
    })
}

fn write(path: &Path, checkpoint: &Checkpoint) -> Result<(), StoreError> {
    use std::io::Write;
    let json = serde_json::to_vec(checkpoint).map_err(|e| {
        StoreError::backend_from(format!("checkpoint does not serialise: {e}"), false, e)
    })?;
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
    file.write_all(&json).map_err(|e| io("write", &tmp, e))?;
    file.sync_all().map_err(|e| io("flush", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("rename", &tmp, e))
}

/// Run blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        StoreError::backend_from(format!("checkpoint I/O did not finish: {e}"), false, e)
    })?
}

#[async_trait]
impl Checkpointer for FileCheckpointer {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let path = self.path_of(&checkpoint.run_id);
        let checkpoint = checkpoint.clone();
        blocking(move || write(&path, &checkpoint)).await
    }

    async fn load(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        let path = self.path_of(run_id);
        blocking(move || read(&path)).await
    }

    async fn unfinished(&self) -> Result<Vec<Checkpoint>, StoreError> {
        let dir = self.dir.clone();
        blocking(move || {
            let mut out = Vec::new();
            let entries = std::fs::read_dir(&dir).map_err(|e| io("list", &dir, e))?;
            for entry in entries {
                let path = entry.map_err(|e| io("list", &dir, e))?.path();
                if path.extension().is_some_and(|e| e == "json")
                    && let Some(cp) = read(&path)?
                    && !cp.is_finished()
                {
                    out.push(cp);
                }
            }
            out.sort_by(|a, b| a.run_id.cmp(&b.run_id));
            Ok(out)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_become_safe_file_names() {
        let cp = FileCheckpointer {
            dir: PathBuf::from("/x"),
        };
        assert_eq!(
            cp.path_of("cro/hourly@2026-11-25T01:00:00Z"),
            PathBuf::from("/x/cro%2Fhourly%402026-11-25T01%3A00%3A00Z.json")
        );
        assert_eq!(cp.path_of("../etc"), PathBuf::from("/x/..%2Fetc.json"));
    }
}
