//! `openvibe`: run roles from YAML files, or the offline CRO demo.
//!
//! This binary parses the command line and hands each command to the
//! library module that owns it, where its clap definition and logic live.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use openvibe_cli::CliError;
use openvibe_cli::audit::{self, AuditCommand};
use openvibe_cli::beliefs::{self, BeliefsCommand};
use openvibe_cli::cognitive::{self, LoopCommand};
use openvibe_cli::goals::{self, GoalsCommand};
use openvibe_cli::logging::{self, LogFormat};
use openvibe_cli::memory::{self, MemoryCommand};
use openvibe_cli::namespaces::{self, NamespacesCommand};
use openvibe_cli::proposals::{self, ProposalsCommand};
use openvibe_cli::run::{DemoCommand, RunCommand};
use openvibe_cli::serve::{self, McpCommand, ServeCommand};
use openvibe_cli::temporal::{self, WorkerCommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the command failed (the message says why; -v adds its causes)
  2  the command line is wrong (unknown option, missing argument)

Logging: RUST_LOG (e.g. RUST_LOG=openvibe_postgres=debug) or -v/-vv/-vvv;
--log-format json for one JSON object per line on stderr.

Tracing: built with --features otel, spans go to the OTLP receiver named by
OTEL_EXPORTER_OTLP_ENDPOINT (http/protobuf, or http/json with
OTEL_EXPORTER_OTLP_PROTOCOL); OTEL_SERVICE_NAME names the service.";

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

// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// The memory tools over MCP on stdio (for an MCP client that starts
    /// its servers as programs: an IDE, an agent host).
    Mcp(McpCommand),
    /// Run the memory service: the HTTP API over PostgreSQL (or in-process
    /// memory), for agents in many processes to share one governed memory.
    Serve(ServeCommand),
    /// Run the CRO example end to end: two leads, reflection in between, and
    /// what the second run learned from the first.
    Demo(DemoCommand),
    /// Run every activation of a role file, or (with --schedule) its cron
    /// and interval triggers until stopped, or (with --loop) a role file or
    /// a directory of them in the cognitive loop.
    Run(RunCommand),
    /// Run a Temporal worker for a role file: the activations its Temporal
    /// schedules start, each node an activity (feature `temporal`).
    Worker(WorkerCommand),
    /// Inspect namespaces and move legacy records into one.
    #[command(subcommand)]
    Namespaces(NamespacesCommand),
    /// Memory maintenance: record vectors.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Read the audit trail.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// What roles ask a person to decide: list, show, approve, reject.
    #[command(subcommand)]
    Proposals(ProposalsCommand),
    /// Beliefs (L4) roles propose and people approve: list, show, approve,
    /// reject, retire.
    #[command(subcommand)]
    Beliefs(BeliefsCommand),
    /// Goals people set the roles: where they stand, and metric reports.
    #[command(subcommand)]
    Goals(GoalsCommand),
    /// The cognitive loop's journal: an event's path through its stages.
    #[command(subcommand)]
    Loop(LoopCommand),
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

async fn run(cli: Cli) -> Result<(), CliError> {
    // Not locked for the whole command: `mcp` writes the protocol to stdout
    // from tokio's blocking threads.
    let mut stdout = std::io::stdout();
    match cli.command {
        Command::Demo(command) => openvibe_cli::run::demo_command(command, &mut stdout).await,
        Command::Run(command) => openvibe_cli::run::run_command(command, &mut stdout).await,
        Command::Worker(command) => temporal::worker_command(command, &mut stdout).await,
        Command::Namespaces(command) => namespaces::run(command, &mut stdout).await,
        Command::Memory(command) => memory::run(command, &mut stdout).await,
        Command::Audit(command) => audit::run(command, &mut stdout).await,
        Command::Serve(command) => serve::serve_command(command).await,
        Command::Mcp(command) => serve::mcp_command(command).await,
        Command::Proposals(command) => proposals::run(command, &mut stdout).await,
        Command::Goals(command) => goals::run(command, &mut stdout).await,
        Command::Beliefs(command) => beliefs::run(command, &mut stdout).await,
        Command::Loop(command) => cognitive::run_command(command, &mut stdout).await,
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
    let logging = logging::init(cli.verbose, cli.quiet, cli.log_format);
    let verbose = cli.verbose;
    let code = match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::debug!(error = ?e, "command failed");
            report(&e, verbose);
            ExitCode::FAILURE
        }
    };
    // Spans still queued for an OTLP receiver go out before the process ends.
    logging.shutdown();
    code
}
