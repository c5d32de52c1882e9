//! `cargo xtask examples`: build and run the standalone projects of
//! `examples/`, each outside the workspace and depending on only the crates
//! it names, as a user's project would (issue 15: a crate picked alone must
//! work alone).
//!
//! Each project gets a copy of the workspace's `Cargo.lock` (so it builds
//! the dependency versions the workspace tested; cargo drops what it does
//! not use) and shares one target directory, `<target>/examples`, so their
//! common dependencies build once.

use crate::{cargo, run, workspace_root};

/// The projects, in the order they run; `memory-postgres` needs a database.
pub(crate) const EXAMPLES: [&str; 4] = [
    "memory-only",
    "primitives-tool-loop",
    "facade",
    "memory-postgres",
];

/// `cargo xtask examples [name...]`.
pub(crate) fn main(rest: &[String]) -> Result<(), String> {
    let names: Vec<&str> = if rest.is_empty() {
        EXAMPLES.to_vec()
    } else {
        for name in rest {
            if !EXAMPLES.contains(&name.as_str()) {
                return Err(format!(
                    "unknown example `{name}` (examples: {})",
                    EXAMPLES.join(", ")
                ));
            }
        }
        rest.iter().map(String::as_str).collect()
    };
    let url = if names.contains(&"memory-postgres") {
        crate::database_url_for_tests()?
    } else {
        None
    };
    run_all(&names, url.as_deref())
}

/// Build and run `names`; `database_url` for the one that needs it.
pub(crate) fn run_all(names: &[&str], database_url: Option<&str>) -> Result<(), String> {
    let root = workspace_root();
    let target = crate::target_dir().join("examples");
    for name in names {
        let dir = root.join("examples").join(name);
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
            .map_err(|e| format!("example {name}: cannot copy Cargo.lock: {e}"))?;
        let mut cmd = cargo();
        cmd.args(["run", "--quiet", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target);
        if *name == "memory-postgres" {
            let url = database_url.ok_or(
                "example memory-postgres needs a database: run `cargo xtask db up` or set DATABASE_URL",
            )?;
            cmd.env("DATABASE_URL", url);
        }
        run(&format!("example {name}"), &mut cmd)?;
    }
    Ok(())
}
