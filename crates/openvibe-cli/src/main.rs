//! `openvibe`: run roles from YAML files, or the offline CRO demo.
//!
//! This binary parses the command line and hands each command to the
//! library module that owns it, where its clap definition and logic live.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use openvibe_cli::CliError;
use openvibe_cli::args::{LlmArgs, TemporalArgs};
use openvibe_cli::audit::{self, AuditCommand};
use openvibe_cli::beliefs::{self, BeliefsCommand};
use openvibe_cli::cognitive::{self, LoopCommand};
use openvibe_cli::goals::{self, GoalsCommand};
use openvibe_cli::logging::{self, LogFormat};
use openvibe_cli::memory::{self, MemoryCommand};
use openvibe_cli::namespaces::{self, NamespacesCommand};
use openvibe_cli::proposals::{self, ProposalsCommand};
use openvibe_cli::run::RunCommand;
use openvibe_cli::serve::{self, ServeCommand, mcp_help};
use openvibe_cli::temporal;

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
    #[command(after_help = mcp_help())]
    Mcp {
        /// Keep memory in this PostgreSQL database.
        #[arg(long, env = "OPENVIBE_DATABASE_URL")]
        database_url: Option<String>,
        /// Keep memory in this process (lost when it stops). Wins over OPENVIBE_DATABASE_URL.
        #[arg(long)]
        memory: bool,
        /// The governance file: API keys, principals, namespace policies.
        #[arg(long)]
        governance: Option<PathBuf>,
        /// The API key to act with (with --governance).
        #[arg(long, env = "OPENVIBE_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
        /// Development mode: the tenant to act in.
        #[arg(long, default_value = "default")]
        tenant: String,
    },
    /// Run the memory service: the HTTP API over PostgreSQL (or in-process
    /// memory), for agents in many processes to share one governed memory.
    #[command(after_help = "\
Without --governance the service runs in development mode: no API keys, and
only on a loopback address. With it, every request needs an API key the file
lists (Authorization: Bearer <key>); see docs/governance.md.

The web console is at /console: people sign in with a key of the governance
file (in development mode, without one) to approve proposals, read beliefs
with their provenance, the memory, the audit trail, goals and spaces; see
docs/console.md.

Examples:
  openvibe serve --memory                                    development, in process
  openvibe serve --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe \\
                 --governance governance.yaml --addr 0.0.0.0:8077
  curl -s http://127.0.0.1:8077/openapi.json                 the API, as OpenAPI 3.1")]
    Serve(ServeCommand),
    /// Run the CRO example end to end: two leads, reflection in between, and
    /// what the second run learned from the first.
    #[command(after_help = "\
Examples:
  openvibe demo                                  offline, from the recorded cassette
  openvibe -v demo                               ... with node, LLM-call and token logs
  openvibe demo --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe
  ANTHROPIC_API_KEY=... openvibe demo --llm anthropic
  openvibe demo --llm openai --base-url http://localhost:11434/v1 --model llama3.1
  openvibe demo --full                           the source design's full example (a CRO with
                                                 RevenueOps asking a CMO with the ContentEngine,
                                                 from a config directory) and its memory pyramid")]
    Demo {
        /// Run the source design's full example instead: a CRO owning
        /// RevenueOps that asks a CMO owning the ContentEngine for a case
        /// study through their space, loaded from a configuration
        /// directory, and the memory pyramid it leaves (raw calls,
        /// episodes, insights).
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        llm: LlmArgs,
    },
    /// Run every activation of a role file, or (with --schedule) its cron
    /// and interval triggers until stopped, or (with --loop) a role file or
    /// a directory of them in the cognitive loop.
    #[command(after_help = "\
With --schedule, the role's cron and interval triggers (type: cron, schedule:
\"CRON_TZ=Europe/Berlin 0 9 * * 1-5\"; type: interval, schedule: 15m) run in this
process with the in-process scheduler, each firing printed as it ends, until
Ctrl-C (or --for / --firings). A trigger whose previous run is still going skips
its firing. A firing missed while openvibe was not running is not run later; with
--checkpoints DIR, a run that was cut off resumes where it stopped.

Examples:
  openvibe run crates/openvibe-cli/demo/cro/role.yaml --llm standin
  openvibe run role.yaml --reflect --llm anthropic
  openvibe -vv run role.yaml --llm standin --log-format json 2> log.jsonl
  openvibe run role.yaml --schedule --llm anthropic --reflection \"0 3 * * *\"
  openvibe run role.yaml --schedule --llm standin --for 10m
  openvibe run role.yaml --loop --events events.jsonl --journal .openvibe/loop --llm standin
                        the cognitive loop; `openvibe loop trace EVENT_ID --journal .openvibe/loop`
  openvibe run roles/ --loop --journal .openvibe/loop --listen 127.0.0.1:8078
                        every role file of roles/ in its loop; events over HTTP and MCP too
  openvibe run cmo.yaml --loop --space team --person user:ann --database-url URL --tenant acme
  openvibe run cro.yaml --loop --space team --events deals.jsonl --database-url URL --tenant acme
                        two roles in two processes working together through one PostgreSQL:
                        the CRO's delegated actions are asked of the CMO (docs/spaces.md)
  openvibe run roles/ --loop --events events.jsonl --temporal http://127.0.0.1:7233
                        one Temporal workflow per event, one activity per stage
                        (`openvibe worker roles/ --temporal ...` runs them)
  openvibe run role.yaml --schedule --temporal http://127.0.0.1:7233   register the
                        triggers as Temporal schedules and exit (`openvibe worker` runs them)")]
    Run(RunCommand),
    /// Run a Temporal worker for a role file: the activations its Temporal
    /// schedules start, each node an activity (feature `temporal`).
    #[command(after_help = "\
Schedules registered by `openvibe run role.yaml --schedule --temporal URL` start
workflows on a task queue; workers for the same role file poll it and run them,
one Temporal activity per node. Run several workers, on several machines: when
one dies mid-run, another finishes the run without repeating finished nodes.
Stops on Ctrl-C or SIGTERM after the running nodes finish.

With --space, the worker's roles join the space and each request routed to one
of them starts its event's loop workflow on the worker's task queue (once,
however many workers of the role read it); their delegated actions ask in it.

Examples:
  cargo xtask temporal up        a local Temporal dev server (prints its URL)
  openvibe worker role.yaml --temporal http://127.0.0.1:57233 --llm anthropic
  openvibe worker cmo.yaml --space team --database-url URL --tenant acme \
                  --temporal http://127.0.0.1:57233 --task-queue cmo
                                 the CMO takes the requests routed to it on Temporal")]
    Worker {
        /// The role file (YAML), or a directory of them: the same as the
        /// schedules were registered from (or the loop's events name).
        role_file: PathBuf,
        /// Work together in this space (docs/spaces.md): the roles join it,
        /// their delegated actions ask there, and the requests routed to
        /// them run in their loop on this worker's task queue.
        #[arg(long, value_name = "NAME")]
        space: Option<String>,
        /// With --space: a person who is a member too (an owner key such as
        /// user:ann; repeat for several).
        #[arg(long = "person", value_name = "OWNER_KEY", requires = "space")]
        people: Vec<String>,
        #[command(flatten)]
        temporal: TemporalArgs,
        #[command(flatten)]
        llm: LlmArgs,
    },
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
        Command::Demo { full, llm } => {
            openvibe_cli::run::demo_command(full, &llm, &mut stdout).await
        }
        Command::Run(command) => openvibe_cli::run::run_command(command, &mut stdout).await,
        Command::Worker {
            role_file,
            space,
            people,
            temporal,
            llm,
        } => temporal::worker_command(role_file, space, people, temporal, llm, &mut stdout).await,
        Command::Namespaces(command) => namespaces::run(command, &mut stdout).await,
        Command::Memory(command) => memory::run(command, &mut stdout).await,
        Command::Audit(command) => audit::run(command, &mut stdout).await,
        Command::Serve(command) => serve::serve_command(command).await,
        Command::Mcp {
            database_url,
            memory,
            governance,
            api_key,
            tenant,
        } => serve::mcp_command(database_url, memory, governance, api_key, tenant).await,
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
