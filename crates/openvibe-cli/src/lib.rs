//! The `openvibe` command line, as a library (so its behaviour is testable).
//!
//! Each command group lives in its own module: its clap definition (a
//! `Subcommand` enum, or a struct of a command's options) beside its logic,
//! and a function the binary's dispatch calls.
//!
//! | Command | Module |
//! |---|---|
//! | `openvibe demo`, `openvibe run` | [`run`] (over [`demo`], [`full`], [`scheduled`], [`cognitive`], [`temporal`]) |
//! | `openvibe worker` | [`temporal`] |
//! | `openvibe serve`, `openvibe mcp` | [`serve`] |
//! | `openvibe namespaces` | [`namespaces`] |
//! | `openvibe memory` | [`memory`] |
//! | `openvibe audit` | [`audit`] |
//! | `openvibe proposals` | [`proposals`] |
//! | `openvibe beliefs` | [`beliefs`] |
//! | `openvibe goals` | [`goals`] |
//! | `openvibe loop` | [`cognitive`] |
//!
//! Arguments several commands share are in [`args`]; what the maintenance
//! commands share (their backend, progress) in [`admin`]. Role files are
//! read by [`spec`]; `--schedule` runs their triggers (see [`scheduled`]).

pub mod admin;
pub mod args;
pub mod audit;
pub mod beliefs;
pub mod cognitive;
pub mod demo;
pub mod full;
pub mod goals;
pub mod logging;
pub mod memory;
pub mod namespaces;
pub mod proposals;
pub mod run;
pub mod scheduled;
pub mod serve;
pub mod spec;
pub mod standin;
pub mod template;
pub mod temporal;
pub mod tools;

use std::path::PathBuf;

/// What can go wrong in the command line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A role or the role runtime failed.
    #[error(transparent)]
    Role(#[from] openvibe::roles::Error),
    /// An operator or workflow failed.
    #[error(transparent)]
    Operator(#[from] openvibe::operators::Error),
    /// A memory operation failed.
    #[error(transparent)]
    Memory(#[from] openvibe::memory::MemoryError),
    /// The full example failed.
    #[error(transparent)]
    Example(#[from] openvibe::full_example::Error),
    /// The model could not be set up or called.
    #[error(transparent)]
    Llm(#[from] openvibe::protocols::LlmError),
    /// A role file is inconsistent.
    #[error("{}: {message}", path.display())]
    Spec {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read {}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// Writing the report failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    /// The database could not be reached or migrated.
    #[error("database: {0}")]
    Database(#[from] openvibe::postgres::PgError),
    /// A store refused or failed.
    #[error(transparent)]
    Store(#[from] openvibe::protocols::StoreError),
    /// The governance file is unusable.
    #[error(transparent)]
    Governance(#[from] openvibe::governance::Error),
    /// The command line asks for something impossible.
    #[error("{0}")]
    Usage(String),
    /// Temporal could not be reached or refused.
    #[error("temporal: {0}")]
    Temporal(String),
    /// The embedding model could not be loaded.
    #[error("embedding model: {0}")]
    Embedding(String),
    /// A value could not be printed as JSON.
    #[error("printing JSON: {0}")]
    Json(#[from] serde_json::Error),

    /// `audit verify` found an entry that does not hold.
    #[error("the audit chain is broken: {0}")]
    ChainBroken(String),

    /// `memory forget` found records left after the run.
    #[error("{0}")]
    Incomplete(String),
}
