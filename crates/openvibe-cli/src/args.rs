//! The command-line arguments several `openvibe` commands share, and the
//! value parsers of vocabularies:
//!
//! - [`LlmArgs`]: the model and the memory a role runs with (`demo`, `run`,
//!   `worker`; [`crate::demo::run_options`] turns them into run options);
//! - [`TemporalArgs`]: where Temporal is (`run --schedule`, `run --loop`,
//!   `worker`; see [`crate::temporal::TemporalOptions::from_args`]);
//! - [`BackendArgs`]: which records a maintenance command works on
//!   (`namespaces`, `memory forget`, `audit`);
//! - [`DeskArgs`]: where proposals are, and who acts on them (`proposals`,
//!   `beliefs`, `goals`; see [`crate::proposals::Connect::from_args`]).
//!
//! The modules that use these arguments depend on this one, not the other
//! way round: what an argument struct turns into is built beside its type.

use clap::builder::TypedValueParser;
use std::path::PathBuf;

use clap::ValueEnum;
use openvibe::protocols::{OrAny, Vocabulary};

use crate::CliError;
use crate::admin::Backend;

/// The value parser of a vocabulary: its names (listed by `--help`),
/// parsed into its values.
pub fn named<V: Vocabulary>() -> impl clap::builder::TypedValueParser<Value = V> {
    clap::builder::PossibleValuesParser::new(V::NAMES)
        .try_map(|name| V::from_name(&name).ok_or("not one of the names"))
}

/// The value parser of a filter on a vocabulary: its names and `any`.
pub fn filter<V: Vocabulary>() -> impl clap::builder::TypedValueParser<Value = OrAny<V>> {
    clap::builder::PossibleValuesParser::new(OrAny::<V>::names())
        .try_map(|name| name.parse::<OrAny<V>>())
}

/// Which model answers (`--llm`).
#[derive(Clone, Copy, ValueEnum)]
pub enum Llm {
    /// Replay a recorded cassette (offline, deterministic).
    Replay,
    /// The deterministic stand-in model the demo cassette was recorded from.
    Standin,
    /// Anthropic's API (needs ANTHROPIC_API_KEY).
    Anthropic,
    /// An OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp).
    Openai,
}

/// What ranks recalled memory (`--embedder`).
#[derive(Clone, Copy, ValueEnum)]
pub enum EmbedderArg {
    /// The local all-MiniLM-L6-v2 when its files are present, else full text.
    Auto,
    /// The local all-MiniLM-L6-v2 (fails without its files).
    Local,
    /// Full text only.
    None,
}

/// Where Temporal is (`run --schedule --temporal`, `worker`).
#[derive(clap::Args)]
pub struct TemporalArgs {
    /// The Temporal frontend (gRPC), e.g. http://127.0.0.1:7233. With `run
    /// --schedule`: register the triggers there and exit instead of running
    /// them in this process.
    #[arg(long, value_name = "URL")]
    pub temporal: Option<String>,
    /// The Temporal namespace.
    #[arg(long, default_value = "default", requires = "temporal")]
    pub namespace: String,
    /// The task queue the schedules' workflows run on.
    #[arg(long, default_value = "openvibe", requires = "temporal")]
    pub task_queue: String,
    /// How long one node (or loop stage) of the workflows this process
    /// starts may run before Temporal takes its worker for gone and runs it
    /// again elsewhere (e.g. 90s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "temporal", value_parser = humantime::parse_duration)]
    pub node_timeout: std::time::Duration,
}

/// The model and the memory a role runs with (`demo`, `run`, `worker`).
#[derive(clap::Args)]
pub struct LlmArgs {
    /// What ranks the memory recalled into prompts for a scope's query:
    /// hybrid retrieval (full text + vectors) needs an embedding model
    /// (`cargo xtask models fetch` downloads all-MiniLM-L6-v2 into
    /// ~/.cache/openvibe/models, or set OPENVIBE_MODELS_DIR). For `demo
    /// --full`, auto replays the vectors all-MiniLM-L6-v2 gave the
    /// example's texts (recorded with the example).
    #[arg(long, value_enum, default_value_t = EmbedderArg::Auto)]
    pub embedder: EmbedderArg,
    /// Which model answers.
    #[arg(long, value_enum)]
    pub llm: Option<Llm>,
    /// Base URL of the model server (e.g. http://localhost:11434/v1).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Use this model for every call (OpenAI-compatible servers).
    #[arg(long)]
    pub model: Option<String>,
    /// Replay this cassette (with --llm replay).
    #[arg(long)]
    pub cassette: Option<PathBuf>,
    /// Record every model exchange to this cassette file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Record every text the embedder embeds, with its vector, to this
    /// cassette file (JSON lines; replayed by `RecordReplayEmbedder`).
    #[arg(long, value_name = "FILE")]
    pub record_embeddings: Option<PathBuf>,
    /// Keep memory in this PostgreSQL database (e.g. the URL `cargo xtask db up` prints).
    #[arg(long, env = "OPENVIBE_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Keep memory in this memory service (`openvibe serve`), through the remote client.
    #[arg(long, env = "OPENVIBE_MEMORY_URL", conflicts_with = "database_url")]
    pub memory_url: Option<String>,
    /// The memory service's API key (with --memory-url).
    #[arg(long, env = "OPENVIBE_MEMORY_KEY", hide_env_values = true)]
    pub memory_key: Option<String>,
    /// With --database-url: keep the run's tenant afterwards (by default
    /// its records are deleted when the run ends; the audit log keeps its entries).
    #[arg(long, requires = "database_url")]
    pub keep_memory: bool,
    /// Act in this tenant instead of a fresh one per run (with
    /// --database-url; kept when the run ends): roles in several processes
    /// that share a database and a space name the same tenant.
    #[arg(long, conflicts_with = "memory_url")]
    pub tenant: Option<String>,
}

/// Which records a maintenance command works on.
#[derive(clap::Args)]
pub struct BackendArgs {
    /// A PostgreSQL database (e.g. the URL `cargo xtask db up` prints).
    #[arg(long, env = "OPENVIBE_DATABASE_URL", conflicts_with = "memory_file")]
    pub database_url: Option<String>,
    /// An in-memory snapshot file (JSON: {"facts": [...], "episodes": [...], "insights": [...]}).
    #[arg(long)]
    pub memory_file: Option<PathBuf>,
    /// The tenant.
    #[arg(long, default_value = "default")]
    pub tenant: String,
}

impl BackendArgs {
    /// The backend these arguments name: exactly one of the database and
    /// the snapshot file, or a usage error.
    pub fn backend(&self) -> Result<Backend, CliError> {
        match (&self.database_url, &self.memory_file) {
            (Some(url), None) => Ok(Backend::Postgres(url.clone())),
            (None, Some(path)) => Ok(Backend::File(path.clone())),
            _ => Err(CliError::Usage(
                "name the records: --database-url URL (or OPENVIBE_DATABASE_URL) or --memory-file FILE"
                    .into(),
            )),
        }
    }
}

/// Where proposals are, and who acts on them.
#[derive(clap::Args)]
pub struct DeskArgs {
    /// A PostgreSQL database (e.g. the URL `cargo xtask db up` prints).
    #[arg(long, env = "OPENVIBE_DATABASE_URL", conflicts_with = "service")]
    pub database_url: Option<String>,
    /// The memory service (`openvibe serve`), e.g. http://127.0.0.1:8077.
    #[arg(long, env = "OPENVIBE_SERVICE_URL")]
    pub service: Option<String>,
    /// With --database-url: the governance file the API key is looked up in.
    #[arg(long, requires = "database_url")]
    pub governance: Option<PathBuf>,
    /// Your API key: it says who you are (and so whether you may decide).
    #[arg(long, env = "OPENVIBE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Development mode (no key): the tenant.
    #[arg(long, default_value = "default")]
    pub tenant: String,
}
