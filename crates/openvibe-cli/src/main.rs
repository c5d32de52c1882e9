//! `openvibe`: run roles from YAML files, or the offline CRO demo.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use openvibe_cli::CliError;
use openvibe_cli::demo::{self, DEMO_FILES, LlmChoice, Options};
use openvibe_cli::spec::{Files, RoleFile};

#[derive(Parser)]
#[command(name = "openvibe", version, about = "LLM agents that remember")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Llm {
    /// Replay a recorded cassette (offline, deterministic).
    Replay,
    /// The deterministic stand-in model the demo cassette was recorded from.
    Standin,
    /// Anthropic's API (needs ANTHROPIC_API_KEY).
    Anthropic,
    /// An OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp).
    Openai,
}

#[derive(clap::Args)]
struct LlmArgs {
    /// Which model answers.
    #[arg(long, value_enum)]
    llm: Option<Llm>,
    /// Base URL of the model server (e.g. http://localhost:11434/v1).
    #[arg(long)]
    base_url: Option<String>,
    /// Use this model for every call (OpenAI-compatible servers).
    #[arg(long)]
    model: Option<String>,
    /// Replay this cassette (with --llm replay).
    #[arg(long)]
    cassette: Option<PathBuf>,
    /// Record every model exchange to this cassette file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Keep memory in this PostgreSQL database (e.g. the URL `cargo xtask db up` prints).
    #[arg(long, env = "OPENVIBE_DATABASE_URL")]
    database_url: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the CRO example end to end: two leads, reflection in between, and
    /// what the second run learned from the first.
    Demo {
        #[command(flatten)]
        llm: LlmArgs,
    },
    /// Run every activation of a role file.
    Run {
        /// The role file (YAML).
        role_file: PathBuf,
        /// Reflect and publish insights after every run but the last.
        #[arg(long)]
        reflect: bool,
        #[command(flatten)]
        llm: LlmArgs,
    },
}

fn options(args: &LlmArgs, default: Llm, reflect: bool) -> (Options, String) {
    let llm = args.llm.unwrap_or(default);
    let label = match llm {
        Llm::Replay => format!(
            "replay of {}",
            args.cassette
                .as_ref()
                .map_or("demo/cro/cassette.jsonl".to_owned(), |p| p
                    .display()
                    .to_string())
        ),
        Llm::Standin => "deterministic stand-in".to_owned(),
        Llm::Anthropic => "Anthropic".to_owned(),
        Llm::Openai => format!(
            "OpenAI-compatible{}",
            args.model
                .as_ref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        ),
    };
    let options = Options {
        llm: match llm {
            Llm::Replay => LlmChoice::Replay,
            Llm::Standin => LlmChoice::StandIn,
            Llm::Anthropic => LlmChoice::Anthropic,
            Llm::Openai => LlmChoice::OpenAi,
        },
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        cassette: args.cassette.clone(),
        record: args.record.clone(),
        reflect,
        database_url: args.database_url.clone(),
    };
    (options, label)
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Demo { llm } => {
            let text = DEMO_FILES
                .iter()
                .find(|(name, _)| *name == "role.yaml")
                .map(|(_, text)| *text)
                .unwrap_or_default();
            let file = RoleFile::parse(text, "demo/cro/role.yaml".as_ref())?;
            let (options, label) = options(&llm, Llm::Replay, true);
            demo::execute(
                &file,
                &Files::Embedded(DEMO_FILES),
                &options,
                &label,
                &mut stdout,
            )
            .await
        }
        Command::Run {
            role_file,
            reflect,
            llm,
        } => {
            let (file, files) = RoleFile::load(&role_file)?;
            let (options, label) = options(&llm, Llm::Anthropic, reflect);
            demo::execute(&file, &files, &options, &label, &mut stdout).await
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("openvibe: {e}");
            ExitCode::FAILURE
        }
    }
}
