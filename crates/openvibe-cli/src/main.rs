//! `openvibe`: run roles from YAML files, or the offline CRO demo.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use openvibe_cli::CliError;
use openvibe_cli::demo::{self, DEMO_FILES, LlmChoice, Options};
use openvibe_cli::logging::{self, LogFormat};
use openvibe_cli::spec::{Files, RoleFile};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the command failed (the message says why; -v adds its causes)
  2  the command line is wrong (unknown option, missing argument)

Logging: RUST_LOG (e.g. RUST_LOG=openvibe_postgres=debug) or -v/-vv/-vvv;
--log-format json for one JSON object per line on stderr.";

#[derive(Parser)]
#[command(
    name = "openvibe",
    version,
    about = "LLM agents that remember: run roles with memory from YAML files",
    long_about = "LLM agents that remember.\n\nRuns roles (a soul, authority, clearance, \
                  memory, operators) from YAML files, on in-process memory or PostgreSQL, \
                  with a real model or a recorded cassette.",
    after_help = EXIT_CODES
)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Errors only.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// How log lines are written.
    #[arg(long, value_enum, default_value_t = LogFormat::Human, global = true)]
    log_format: LogFormat,
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
    #[command(after_help = "\
Examples:
  openvibe demo                                  offline, from the recorded cassette
  openvibe -v demo                               ... with node, LLM-call and token logs
  openvibe demo --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe
  ANTHROPIC_API_KEY=... openvibe demo --llm anthropic
  openvibe demo --llm openai --base-url http://localhost:11434/v1 --model llama3.1")]
    Demo {
        #[command(flatten)]
        llm: LlmArgs,
    },
    /// Run every activation of a role file.
    #[command(after_help = "\
Examples:
  openvibe run crates/openvibe-cli/demo/cro/role.yaml --llm standin
  openvibe run role.yaml --reflect --llm anthropic
  openvibe -vv run role.yaml --llm standin --log-format json 2> log.jsonl")]
    Run {
        /// The role file (YAML).
        role_file: PathBuf,
        /// Reflect and publish insights after every run but the last.
        #[arg(long)]
        reflect: bool,
        #[command(flatten)]
        llm: LlmArgs,
    },
    /// Print a completion script for a shell.
    #[command(after_help = "\
Examples:
  openvibe completions bash > ~/.local/share/bash-completion/completions/openvibe
  openvibe completions zsh > ~/.zfunc/_openvibe
  openvibe completions fish > ~/.config/fish/completions/openvibe.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
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
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "openvibe", &mut stdout);
            Ok(())
        }
    }
}

/// One line for the error; with `-v`, its causes too.
fn report(e: &CliError, verbose: u8) {
    eprintln!("openvibe: error: {e}");
    if verbose > 0 {
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            eprintln!("  caused by: {cause}");
            source = cause.source();
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose, cli.quiet, cli.log_format);
    let verbose = cli.verbose;
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::debug!(error = ?e, "command failed");
            report(&e, verbose);
            ExitCode::FAILURE
        }
    }
}
