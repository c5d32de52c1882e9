//! `cargo xtask db ...` — placeholder, replaced by the provisioning implementation.

/// Run a `db` subcommand.
pub fn main(_args: &[String]) -> Result<(), String> {
    Err("cargo xtask db is not implemented yet".into())
}
