//! `openvibe`: run roles from YAML files, or the offline CRO demo.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use openvibe::protocols::{AuditOp, AuditQuery};
use openvibe_cli::CliError;
use openvibe_cli::admin;
use openvibe_cli::demo::{self, DEMO_FILES, EmbedderChoice, LlmChoice, Options};
use openvibe_cli::logging::{self, LogFormat};
use openvibe_cli::scheduled;
use openvibe_cli::serve;
use openvibe_cli::spec::{Files, RoleFile};
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

#[derive(Clone, Copy, ValueEnum)]
enum EmbedderArg {
    /// The local all-MiniLM-L6-v2 when its files are present, else full text.
    Auto,
    /// The local all-MiniLM-L6-v2 (fails without its files).
    Local,
    /// Full text only.
    None,
}

/// Where Temporal is (`run --schedule --temporal`, `worker`).
#[derive(clap::Args)]
struct TemporalArgs {
    /// The Temporal frontend (gRPC), e.g. http://127.0.0.1:7233. With `run
    /// --schedule`: register the triggers there and exit instead of running
    /// them in this process.
    #[arg(long, value_name = "URL")]
    temporal: Option<String>,
    /// The Temporal namespace.
    #[arg(long, default_value = "default", requires = "temporal")]
    namespace: String,
    /// The task queue the schedules' workflows run on.
    #[arg(long, default_value = "openvibe", requires = "temporal")]
    task_queue: String,
    /// How long one node (or loop stage) of the workflows this process
    /// starts may run before Temporal takes its worker for gone and runs it
    /// again elsewhere (e.g. 90s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "temporal", value_parser = humantime::parse_duration)]
    node_timeout: std::time::Duration,
}

impl TemporalArgs {
    fn options(&self, reflection: Option<String>) -> Option<temporal::TemporalOptions> {
        Some(temporal::TemporalOptions {
            url: self.temporal.clone()?,
            namespace: self.namespace.clone(),
            task_queue: self.task_queue.clone(),
            reflection,
            node_timeout: self.node_timeout,
        })
    }
}

#[derive(clap::Args)]
struct LlmArgs {
    /// What ranks the memory recalled into prompts for a scope's query:
    /// hybrid retrieval (full text + vectors) needs an embedding model
    /// (`cargo xtask models fetch` downloads all-MiniLM-L6-v2 into
    /// ~/.cache/openvibe/models, or set OPENVIBE_MODELS_DIR).
    #[arg(long, value_enum, default_value_t = EmbedderArg::Auto)]
    embedder: EmbedderArg,
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
    /// Keep memory in this memory service (`openvibe serve`), through the remote client.
    #[arg(long, env = "OPENVIBE_MEMORY_URL", conflicts_with = "database_url")]
    memory_url: Option<String>,
    /// The memory service's API key (with --memory-url).
    #[arg(long, env = "OPENVIBE_MEMORY_KEY", hide_env_values = true)]
    memory_key: Option<String>,
    /// With --database-url: keep the run's tenant afterwards (by default
    /// its records are deleted when the run ends; the audit log keeps its entries).
    #[arg(long, requires = "database_url")]
    keep_memory: bool,
    /// Act in this tenant instead of a fresh one per run (with
    /// --database-url; kept when the run ends): roles in several processes
    /// that share a database and a space name the same tenant.
    #[arg(long, conflicts_with = "memory_url")]
    tenant: Option<String>,
}

/// Which records a maintenance command works on.
#[derive(clap::Args)]
struct BackendArgs {
    /// A PostgreSQL database (e.g. the URL `cargo xtask db up` prints).
    #[arg(long, env = "OPENVIBE_DATABASE_URL", conflicts_with = "memory_file")]
    database_url: Option<String>,
    /// An in-memory snapshot file (JSON: {"facts": [...], "episodes": [...], "insights": [...]}).
    #[arg(long)]
    memory_file: Option<PathBuf>,
    /// The tenant.
    #[arg(long, default_value = "default")]
    tenant: String,
}

impl BackendArgs {
    fn backend(&self) -> Result<admin::Backend, CliError> {
        match (&self.database_url, &self.memory_file) {
            (Some(url), None) => Ok(admin::Backend::Postgres(url.clone())),
            (None, Some(path)) => Ok(admin::Backend::File(path.clone())),
            _ => Err(CliError::Usage(
                "name the records: --database-url URL (or OPENVIBE_DATABASE_URL) or --memory-file FILE"
                    .into(),
            )),
        }
    }
}

/// Where proposals are, and who acts on them.
#[derive(clap::Args)]
struct DeskArgs {
    /// A PostgreSQL database (e.g. the URL `cargo xtask db up` prints).
    #[arg(long, env = "OPENVIBE_DATABASE_URL", conflicts_with = "service")]
    database_url: Option<String>,
    /// The memory service (`openvibe serve`), e.g. http://127.0.0.1:8077.
    #[arg(long, env = "OPENVIBE_SERVICE_URL")]
    service: Option<String>,
    /// With --database-url: the governance file the API key is looked up in.
    #[arg(long, requires = "database_url")]
    governance: Option<PathBuf>,
    /// Your API key: it says who you are (and so whether you may decide).
    #[arg(long, env = "OPENVIBE_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Development mode (no key): the tenant.
    #[arg(long, default_value = "default")]
    tenant: String,
}

impl DeskArgs {
    fn connect(&self) -> openvibe_cli::proposals::Connect {
        openvibe_cli::proposals::Connect {
            database_url: self.database_url.clone(),
            service: self.service.clone(),
            governance: self.governance.clone(),
            api_key: self.api_key.clone(),
            tenant: self.tenant.clone(),
        }
    }
}

/// A proposal status on the command line.
#[derive(Clone, Copy, ValueEnum)]
enum StatusArg {
    Pending,
    Approved,
    Rejected,
    Expired,
    Executed,
    Failed,
    Any,
}

#[derive(Subcommand)]
enum ProposalsCommand {
    /// The proposals you may read, newest first (pending ones by default).
    #[command(after_help = "Examples:
  openvibe proposals ls --service http://127.0.0.1:8077          (OPENVIBE_API_KEY says who you are)
  openvibe proposals ls --database-url $DATABASE_URL --status any --role cro
  openvibe proposals ls --database-url $DATABASE_URL --governance governance.yaml --api-key $KEY")]
    Ls {
        #[command(flatten)]
        desk: DeskArgs,
        /// Only proposals with this status.
        #[arg(long, value_enum, default_value = "pending")]
        status: StatusArg,
        /// Only this role's.
        #[arg(long)]
        role: Option<String>,
        /// Only this domain's.
        #[arg(long)]
        domain: Option<String>,
        /// Only those assigned to this person (`user:ann`).
        #[arg(long)]
        assignee: Option<String>,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Continue after a page (the cursor `ls` printed).
        #[arg(long)]
        after: Option<String>,
    },
    /// One proposal: what it asks, the decision's four steps and evidence,
    /// and where it stands.
    Show {
        /// The proposal's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending proposal: the role's runtime then runs its action,
    /// once. Needs the `approve` right (people, by default); never your own.
    #[command(
        after_help = "An escalation has no action until you name one: --action NAME --tool TOOL --input JSON.

Examples:
  openvibe proposals approve dec-fnv1a64:4935d77f32e1 --service http://127.0.0.1:8077 --reason \"within budget\""
    )]
    Approve {
        /// The proposal's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (kept in the proposal and the audit trail).
        #[arg(long, default_value = "")]
        reason: String,
        /// For an escalation: the action to take (its name in the role's authority).
        #[arg(long, requires = "tool")]
        action: Option<String>,
        /// For an escalation: the tool that takes it.
        #[arg(long, requires = "action")]
        tool: Option<String>,
        /// For an escalation: the tool's input (a JSON object).
        #[arg(long, requires = "action", default_value = "{}")]
        input: String,
    },
    /// Reject a pending proposal, with a reason: its action never runs.
    Reject {
        /// The proposal's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
}

/// A belief status on the command line.
#[derive(Clone, Copy, ValueEnum)]
enum BeliefStatusArg {
    Proposed,
    Active,
    Rejected,
    Retired,
    Any,
}

#[derive(Subcommand)]
enum LoopCommand {
    /// The path of one event through perceive → decide → act → observe →
    /// reflect → learn: when each stage ran, how long it took, what it did.
    #[command(after_help = "Examples:
  openvibe loop trace e-42 --journal .openvibe/loop
  openvibe loop trace e-42 --journal .openvibe/loop --role cro --json")]
    Trace {
        /// The event's id.
        event_id: String,
        /// The journal directory `openvibe run --loop --journal` wrote.
        #[arg(long, value_name = "DIR")]
        journal: PathBuf,
        /// The role (default: whichever role has the event).
        #[arg(long)]
        role: Option<String>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum BeliefsCommand {
    /// The beliefs you may read, newest first (proposed ones by default).
    #[command(after_help = "Examples:
  openvibe beliefs ls --service http://127.0.0.1:8077          (OPENVIBE_API_KEY says who you are)
  openvibe beliefs ls --database-url $DATABASE_URL --status active --role cro")]
    Ls {
        #[command(flatten)]
        desk: DeskArgs,
        /// Only beliefs with this status.
        #[arg(long, value_enum, default_value = "proposed")]
        status: BeliefStatusArg,
        /// Only this role's.
        #[arg(long)]
        role: Option<String>,
        /// Only this domain's.
        #[arg(long)]
        domain: Option<String>,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Continue after a page (the cursor `ls` printed).
        #[arg(long)]
        after: Option<String>,
    },
    /// One belief: what it holds, the insights it came from, where it stands.
    Show {
        /// The belief's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a proposed belief: it then leads the role's prompts about its
    /// domain and weighs in its decisions (one it supersedes is retired).
    /// Needs the `approve` right (people, by default); never your own.
    Approve {
        /// The belief's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (kept in the belief and the audit trail).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Reject a proposed belief, with a reason: it never reaches the role.
    Reject {
        /// The belief's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
    /// Retire an active belief, with a reason: it no longer reaches the role.
    Retire {
        /// The belief's id.
        id: String,
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
}

#[derive(Subcommand)]
enum GoalsCommand {
    /// Where every goal stands: each key result's value against its target
    /// as a progress bar, the initiatives, and each role's priorities.
    #[command(after_help = "Examples:
  openvibe goals status --service http://127.0.0.1:8077          (OPENVIBE_API_KEY says who you are)
  openvibe goals status --database-url $DATABASE_URL --role cro
  openvibe goals status --database-url $DATABASE_URL --json")]
    Status {
        #[command(flatten)]
        desk: DeskArgs,
        /// Only this role's goals.
        #[arg(long)]
        role: Option<String>,
        /// The priorities of this day (YYYY-MM-DD; today by default).
        #[arg(long)]
        day: Option<chrono::NaiveDate>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Report a metric of a role from outside (a CRM's \"closed $40k\"): it
    /// moves the key results measuring it. Needs the write right where the
    /// report is filed; the same --id twice counts once.
    #[command(after_help = "Examples:
  openvibe goals report cro pipeline_usd 40000 --note \"closed Acme\" --id crm-deal-981 --service http://127.0.0.1:8077
  openvibe goals report cro qualified_leads 12 --set --database-url $DATABASE_URL")]
    Report {
        /// The role whose metric it is.
        role: String,
        /// The metric (a key result's `metric`).
        metric: String,
        /// The amount (added; with --set, the new value).
        #[arg(allow_negative_numbers = true)]
        value: f64,
        #[command(flatten)]
        desk: DeskArgs,
        /// The metric is now VALUE (instead of adding it).
        #[arg(long)]
        set: bool,
        /// What happened.
        #[arg(long, default_value = "")]
        note: String,
        /// An id for the report: sending it again counts once.
        #[arg(long)]
        id: Option<String>,
        /// The namespace to file it in (your home namespace by default).
        #[arg(long)]
        namespace: Option<String>,
    },
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Embed the records (facts, insights, episodes, knowledge) that have no
    /// current vector of the embedding model: after a model change, after
    /// the embedder was down, or for records written before embeddings.
    /// Batched and resumable; records are not rewritten.
    #[command(after_help = "\
Needs the local embedding model (`cargo xtask models fetch`) and a build with
the `local-embed` feature (the default).

Examples:
  openvibe memory reindex --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe
  openvibe memory reindex --database-url $DATABASE_URL --tenant acme --batch 128
  openvibe memory reindex --database-url $DATABASE_URL --status       only say what waits")]
    Reindex {
        /// The PostgreSQL database.
        #[arg(long, env = "OPENVIBE_DATABASE_URL")]
        database_url: String,
        /// The tenant.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Records per embedder call.
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Only print how many records have a current vector and how many wait.
        #[arg(long)]
        status: bool,
    },
    /// Erase everything about a subject: an entity (records whose entity is
    /// it or whose texts name it as a whole word), everything a principal
    /// owns, or one namespace. Every kind, expired records included, with
    /// their vectors, postings and the raw calls behind an erased episode;
    /// in batches (one transaction each), resumable: run it again to finish
    /// an interrupted erasure. Audit entries quoting the subject are
    /// redacted, the redaction recorded in the hash chain, and the erasure
    /// itself audited (who, when, the subject, counts per kind).
    #[command(after_help = "\
Prints a verification report: per kind, the records matched before, deleted,
and found after (must be 0), then the vectors and postings left without their
record (must be 0). Exits with 1 when anything is left.

Examples:
  openvibe memory forget --entity acme_corp --dry-run --database-url $DATABASE_URL
  openvibe memory forget --entity acme_corp --database-url $DATABASE_URL
  openvibe memory forget --owner agent:intern --database-url $DATABASE_URL --batch 1000
  openvibe memory forget --namespace scratch --memory-file memory.json")]
    #[command(group(clap::ArgGroup::new("subject").required(true).args(["entity", "owner", "namespace"])))]
    Forget {
        #[command(flatten)]
        backend: BackendArgs,
        /// Everything about this entity.
        #[arg(long)]
        entity: Option<String>,
        /// Everything this principal owns (`agent:cro`, `user:ann`).
        #[arg(long)]
        owner: Option<String>,
        /// Everything in this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Records per batch (one transaction each).
        #[arg(long, default_value_t = 500)]
        batch: usize,
        /// Only count what would go; nothing changes.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum NamespacesCommand {
    /// List namespaces with their records per kind (and policies, with --governance).
    #[command(after_help = "\
Examples:
  openvibe namespaces ls --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe
  openvibe namespaces ls --memory-file memory.json --governance governance.yaml")]
    Ls {
        #[command(flatten)]
        backend: BackendArgs,
        /// A governance file whose policies to show.
        #[arg(long)]
        governance: Option<PathBuf>,
    },
    /// Move records written before namespaces (or of --from) into --to, in
    /// batches; resumable: run it again to finish an interrupted migration.
    #[command(after_help = "\
Examples:
  openvibe namespaces migrate --to default --dry-run --memory-file memory.json
  openvibe namespaces migrate --to default --database-url $DATABASE_URL --batch 1000")]
    Migrate {
        #[command(flatten)]
        backend: BackendArgs,
        /// The target namespace.
        #[arg(long)]
        to: String,
        /// The source namespace (default: none, i.e. legacy records).
        #[arg(long, default_value = "")]
        from: String,
        /// Records per batch (one transaction each).
        #[arg(long, default_value_t = 500)]
        batch: usize,
        /// Only say what would move.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Operation {
    Insert,
    Update,
    Delete,
    Search,
    Promote,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// The newest audit entries (oldest of them first), filtered.
    #[command(after_help = "\
Examples:
  openvibe audit tail --database-url $DATABASE_URL -n 50
  openvibe audit tail --database-url $DATABASE_URL --principal agent:cro --operation search
  openvibe audit tail --database-url $DATABASE_URL --namespace shared --since 2026-11-01T00:00:00Z")]
    Tail {
        #[command(flatten)]
        backend: BackendArgs,
        /// Only this principal's entries (`agent:cro`, `user:ann`).
        #[arg(long)]
        principal: Option<String>,
        /// Only entries about this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Only this operation.
        #[arg(long, value_enum)]
        operation: Option<Operation>,
        /// Only entries at or after this time (RFC 3339).
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// Only entries before this time (RFC 3339).
        #[arg(long)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// How many entries.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
    },
    /// Check that nobody edited the audit trail: recompute the tenant's
    /// hash chain and report the first entry that does not hold (exit code
    /// 1 when one does not).
    #[command(after_help = "\
Each audit entry carries the hash of the entry before it in its tenant's chain
and its own (SHA-256 over a canonical encoding). An edited entry breaks its own
hash; a removed or inserted one breaks the link after it. Someone who could
rewrite the whole chain from an edit onwards changes its head: keep the head
`openvibe audit anchor` prints somewhere else, and check against it.

Examples:
  openvibe audit verify --database-url $DATABASE_URL
  openvibe audit verify --database-url $DATABASE_URL --anchor 18230:5f2c…e1
  openvibe audit verify --database-url $DATABASE_URL --since 2026-11-01T00:00:00Z")]
    Verify {
        #[command(flatten)]
        backend: BackendArgs,
        /// Start at the first entry at or after this time (RFC 3339),
        /// trusting the hash it names as its predecessor.
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// A head `openvibe audit anchor` printed earlier: the entry it
        /// names must still carry its hash.
        #[arg(long, value_name = "SEQ:HASH")]
        anchor: Option<String>,
    },
    /// Print the head of the tenant's audit chain (`<number>:<hash>` of its
    /// last entry), to keep somewhere the database's owner cannot write.
    #[command(after_help = "\
Examples:
  openvibe audit anchor --database-url $DATABASE_URL >> ~/audit-anchors.txt
  openvibe audit verify --database-url $DATABASE_URL --anchor \"$(tail -1 ~/audit-anchors.txt)\"")]
    Anchor {
        #[command(flatten)]
        backend: BackendArgs,
    },
}

/// The backend of an `audit` command: a database (an in-memory trail
/// lives and dies with its process).
fn audit_backend(backend: &BackendArgs) -> Result<admin::Backend, CliError> {
    let choice = backend.backend()?;
    if matches!(choice, admin::Backend::File(_)) {
        return Err(CliError::Usage(
            "an in-memory audit trail lives and dies with its process: `audit` needs --database-url".into(),
        ));
    }
    Ok(choice)
}

/// `openvibe mcp --help`'s closing text: the server's own tool list (the
/// same tools as the service's `/mcp` endpoint), so the help cannot
/// forget one.
fn mcp_help() -> String {
    let mut help = String::from("Tools (the same as the service's /mcp endpoint):\n");
    for (name, description) in openvibe::service::mcp::MemoryTools::tools() {
        help.push_str(&format!("  {name}: {description}\n"));
    }
    help.push_str(
        "\nEvery call acts as the principal the API key names in the governance file, writes\nits source, and may name only the projects the key is granted (`projects:`).\n\n\
         Examples:\n  openvibe mcp --memory\n  \
         OPENVIBE_API_KEY=... openvibe mcp --database-url postgres://... --governance governance.yaml",
    );
    help
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
    Serve {
        /// Listen on this address.
        #[arg(long, default_value = "127.0.0.1:8077")]
        addr: std::net::SocketAddr,
        /// Keep memory in this PostgreSQL database.
        #[arg(long, env = "OPENVIBE_DATABASE_URL")]
        database_url: Option<String>,
        /// Keep memory in this process (lost when it stops): for development.
        /// Wins over OPENVIBE_DATABASE_URL.
        #[arg(long)]
        memory: bool,
        /// The governance file: API keys, principals, namespace policies.
        #[arg(long)]
        governance: Option<PathBuf>,
        /// Development mode: the tenant of requests that state no caller.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Requests handled at once; more get 503 with retry-after.
        #[arg(long, default_value_t = 512)]
        max_in_flight: usize,
        /// The largest request body, in bytes (413 beyond).
        #[arg(long, default_value_t = openvibe::service::DEFAULT_BODY_LIMIT)]
        body_limit: usize,
        /// Seconds a request may take (504 beyond).
        #[arg(long, default_value_t = 30)]
        request_timeout: u64,
        /// A host name (or host:port) the MCP endpoint answers besides the
        /// loopback ones; repeat for several. It refuses other Host headers
        /// (DNS-rebinding protection), so name yours when serving beyond this machine.
        #[arg(long = "mcp-host", value_name = "HOST")]
        mcp_hosts: Vec<String>,
        /// Minutes a console session lasts without a request.
        #[arg(long, default_value_t = 30, value_name = "MINUTES")]
        console_idle_timeout: u64,
        /// Mark the console's session cookie `Secure`: set it when a
        /// TLS-terminating proxy serves the console (a request with
        /// `X-Forwarded-Proto: https` gets it anyway).
        #[arg(long)]
        console_secure_cookies: bool,
    },
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
    #[command(group = clap::ArgGroup::new("mode").args(["schedule", "cognitive"]).multiple(false))]
    Run {
        /// The role file (YAML); with --loop, also a directory of role files.
        role_file: PathBuf,
        /// Reflect and publish insights after every run but the last.
        #[arg(long, conflicts_with = "schedule")]
        reflect: bool,
        /// Run the role's cron and interval triggers in the foreground
        /// instead of the file's runs.
        #[arg(long)]
        schedule: bool,
        /// With --schedule or --loop: stop after this long (e.g. 90s, 10m, 2h).
        #[arg(long = "for", value_name = "DURATION", requires = "mode", value_parser = humantime::parse_duration)]
        run_for: Option<std::time::Duration>,
        /// With --schedule: stop after this many firings.
        #[arg(long, value_name = "N", requires = "schedule")]
        firings: Option<u64>,
        /// With --schedule or --loop: reflect and publish insights on this
        /// schedule (a cron expression such as \"0 3 * * *\", or a period
        /// such as 6h); in the loop, reflection events also learn.
        #[arg(long, value_name = "SCHEDULE", requires = "mode")]
        reflection: Option<String>,
        /// Run the role in the cognitive loop: each event (a trigger firing,
        /// a reflection, an event of --events) goes perceive → decide → act
        /// → observe → reflect → learn, printed when done.
        #[arg(long = "loop", conflicts_with_all = ["schedule", "reflect"])]
        cognitive: bool,
        /// With --loop: journal each event's stages in this directory, so a
        /// killed openvibe resumes unfinished events (without repeating a
        /// finished stage) and `openvibe loop trace` can read them.
        #[arg(long, value_name = "DIR", requires = "cognitive")]
        journal: Option<PathBuf>,
        /// With --loop: push the events of this JSON-lines file at start (one
        /// decision event per line: {"role", "id", "kind", "domain",
        /// "summary", "data", "action"}; "role" may be left out when one
        /// role runs); an id seen before is not run again.
        #[arg(long, value_name = "FILE", requires = "cognitive")]
        events: Option<PathBuf>,
        /// With --loop: stop once this many events are done.
        #[arg(long, value_name = "N", requires = "cognitive")]
        until_events: Option<u64>,
        /// With --loop: also serve this process's memory and loop over HTTP
        /// and MCP on this address (POST /v1/loop/{role}/events, the MCP
        /// tool pushEvent at /mcp).
        #[arg(long, value_name = "ADDR", requires = "cognitive")]
        listen: Option<std::net::SocketAddr>,
        /// With --listen: the governance file (API keys, namespace
        /// policies); without it, a loopback address only, no keys.
        #[arg(long, value_name = "FILE", requires = "listen")]
        governance: Option<PathBuf>,
        /// With --loop: work together in this space (docs/spaces.md): each
        /// role joins it owning its domains, delegates there, and its loop
        /// takes the requests routed to it. Processes that share a database
        /// (--database-url, --tenant) and name the same space share it.
        #[arg(long, value_name = "NAME", requires = "cognitive")]
        space: Option<String>,
        /// With --space: a person who is a member too (an owner key such as
        /// user:ann; repeat for several): requests for a domain no role
        /// owns go to them.
        #[arg(long = "person", value_name = "OWNER_KEY", requires = "space")]
        people: Vec<String>,
        /// With --schedule: keep each run's checkpoints in this directory,
        /// so runs a killed openvibe left unfinished resume (without
        /// repeating finished nodes) when it starts again.
        #[arg(
            long,
            value_name = "DIR",
            requires = "schedule",
            conflicts_with = "temporal"
        )]
        checkpoints: Option<PathBuf>,
        #[command(flatten)]
        temporal: TemporalArgs,
        #[command(flatten)]
        llm: LlmArgs,
    },
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
        embedder: match args.embedder {
            EmbedderArg::Auto => EmbedderChoice::Auto,
            EmbedderArg::Local => EmbedderChoice::Local,
            EmbedderArg::None => EmbedderChoice::None,
        },
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
        keep_memory: args.keep_memory,
        memory_url: args.memory_url.clone(),
        memory_key: args.memory_key.clone(),
        tenant: args.tenant.clone(),
    };
    (options, label)
}

async fn run(cli: Cli) -> Result<(), CliError> {
    // Not locked for the whole command: `mcp` writes the protocol to stdout
    // from tokio's blocking threads.
    let mut stdout = std::io::stdout();
    match cli.command {
        Command::Demo { full: true, llm } => {
            let (options, mut label) = options(&llm, Llm::Replay, false);
            if options.llm == LlmChoice::Replay && options.cassette.is_none() {
                label = "replay of examples/full/cassette.jsonl".to_owned();
            }
            openvibe_cli::full::execute(&options, &label, &mut stdout).await
        }
        Command::Demo { full: false, llm } => {
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
            schedule,
            run_for,
            firings,
            reflection,
            checkpoints,
            cognitive,
            journal,
            events,
            until_events,
            listen,
            governance,
            space,
            people,
            temporal: temporal_args,
            llm,
        } => {
            if cognitive && let Some(temporal) = temporal_args.options(None) {
                if journal.is_some() || listen.is_some() || run_for.is_some() {
                    return Err(CliError::Usage(
                        "with --temporal the events run on Temporal's workers: --journal, \
                         --listen and --for belong to a loop in this process"
                            .into(),
                    ));
                }
                let all = RoleFile::load_all(&role_file)?;
                let roles: Vec<String> = all.iter().map(|(f, _)| f.role.id.clone()).collect();
                let Some(path) = &events else {
                    return Err(CliError::Usage(
                        "with --temporal, --loop pushes the events of --events FILE to Temporal"
                            .into(),
                    ));
                };
                let events = openvibe_cli::cognitive::read_events(path, &roles)?;
                return temporal::push_events(events, &temporal, &mut stdout).await;
            }
            if cognitive {
                let all = RoleFile::load_all(&role_file)?;
                let (options, label) = options(&llm, Llm::Anthropic, false);
                let loop_options = openvibe_cli::cognitive::LoopOptions {
                    journal,
                    events,
                    reflection,
                    run_for,
                    events_done: until_events,
                    listen,
                    governance,
                    space,
                    people,
                };
                return openvibe_cli::cognitive::run(
                    &all,
                    &options,
                    &loop_options,
                    &label,
                    &mut stdout,
                )
                .await;
            }
            if role_file.is_dir() {
                return Err(CliError::Usage(format!(
                    "{} is a directory: a directory of role files runs with --loop (one role file otherwise)",
                    role_file.display()
                )));
            }
            let (file, files) = RoleFile::load(&role_file)?;
            let (options, label) = options(&llm, Llm::Anthropic, reflect);
            if schedule && let Some(temporal) = temporal_args.options(reflection.clone()) {
                if run_for.is_some() || firings.is_some() {
                    return Err(CliError::Usage(
                        "--for and --firings stop an in-process schedule; with --temporal the \
                         schedules run in Temporal (stop its workers instead)"
                            .into(),
                    ));
                }
                temporal::register(&file, &files, &options, &temporal, &mut stdout).await
            } else if temporal_args.temporal.is_some() && !schedule {
                Err(CliError::Usage(
                    "--temporal registers the role's triggers: use it with --schedule".into(),
                ))
            } else if schedule {
                let schedule = scheduled::ScheduleOptions {
                    run_for,
                    firings,
                    reflection,
                    checkpoints,
                };
                scheduled::run(&file, &files, &options, &schedule, &label, &mut stdout).await
            } else {
                demo::execute(&file, &files, &options, &label, &mut stdout).await
            }
        }
        Command::Worker {
            role_file,
            space,
            people,
            temporal: temporal_args,
            llm,
        } => {
            let all = RoleFile::load_all(&role_file)?;
            let (options, label) = options(&llm, Llm::Anthropic, false);
            let Some(temporal) = temporal_args.options(None) else {
                return Err(CliError::Usage("a worker needs --temporal URL".into()));
            };
            let space = space.map(|space| (space, people));
            temporal::worker(&all, &options, &temporal, space, &label, &mut stdout).await
        }
        Command::Namespaces(NamespacesCommand::Ls {
            backend,
            governance,
        }) => {
            let governance = governance
                .as_deref()
                .map(serve::read_governance)
                .transpose()?;
            let opened = admin::open(&backend.backend()?).await?;
            admin::namespaces_ls(
                &opened.stores,
                &backend.tenant,
                governance.as_ref(),
                &mut stdout,
            )
            .await
        }
        Command::Memory(MemoryCommand::Reindex {
            database_url,
            tenant,
            batch,
            status,
        }) => {
            let (embedder, _) = demo::make_embedder(demo::EmbedderChoice::Local)?;
            let embedder = embedder
                .ok_or_else(|| CliError::Embedding("reindexing needs an embedding model".into()))?;
            admin::memory_reindex(
                &database_url,
                &tenant,
                embedder,
                admin::Reindexing { batch, status },
                admin::Progress::detect(),
                &mut stdout,
            )
            .await
            .map(drop)
        }
        Command::Memory(MemoryCommand::Forget {
            backend,
            entity,
            owner,
            namespace,
            batch,
            dry_run,
            json,
        }) => {
            use openvibe::protocols::ErasureSubject;
            let subject = match (entity, owner, namespace) {
                (Some(e), _, _) => ErasureSubject::Entity(e),
                (_, Some(o), _) => ErasureSubject::Owner(o),
                (_, _, Some(n)) => ErasureSubject::Namespace(n),
                _ => {
                    return Err(CliError::Usage(
                        "name --entity, --owner or --namespace".into(),
                    ));
                }
            };
            let opened = admin::open(&backend.backend()?).await?;
            let report = admin::memory_forget(
                &opened,
                &backend.tenant,
                &subject,
                openvibe::protocols::ForgetOptions { batch, dry_run },
                admin::Progress::detect(),
                json,
                &mut stdout,
            )
            .await?;
            if report.complete() || report.dry_run {
                Ok(())
            } else {
                Err(CliError::Incomplete(format!(
                    "the erasure of {} left records behind (see the report)",
                    report.subject.describe()
                )))
            }
        }
        Command::Namespaces(NamespacesCommand::Migrate {
            backend,
            to,
            from,
            batch,
            dry_run,
        }) => {
            let opened = admin::open(&backend.backend()?).await?;
            admin::namespaces_migrate(
                &opened,
                &admin::Migration {
                    tenant: backend.tenant.clone(),
                    from,
                    to,
                    batch,
                    dry_run,
                },
                admin::Progress::detect(),
                &mut stdout,
            )
            .await
            .map(|_| ())
        }
        Command::Audit(AuditCommand::Verify {
            backend,
            since,
            anchor,
        }) => {
            let opened = admin::open(&audit_backend(&backend)?).await?;
            let anchor = anchor
                .map(|token| openvibe::protocols::ChainHead::parse_token(&backend.tenant, &token))
                .transpose()?;
            admin::audit_verify(&opened.stores, &backend.tenant, since, anchor, &mut stdout).await
        }
        Command::Audit(AuditCommand::Anchor { backend }) => {
            let opened = admin::open(&audit_backend(&backend)?).await?;
            admin::audit_anchor(&opened.stores, &backend.tenant, &mut stdout).await
        }
        Command::Audit(AuditCommand::Tail {
            backend,
            principal,
            namespace,
            operation,
            since,
            until,
            lines,
        }) => {
            let opened = admin::open(&audit_backend(&backend)?).await?;
            let query = AuditQuery {
                principal,
                namespace,
                operation: operation.map(|op| match op {
                    Operation::Insert => AuditOp::Insert,
                    Operation::Update => AuditOp::Update,
                    Operation::Delete => AuditOp::Delete,
                    Operation::Search => AuditOp::Search,
                    Operation::Promote => AuditOp::Promote,
                }),
                since,
                until,
                limit: lines,
                ..AuditQuery::new()
            };
            admin::audit_tail(&opened.stores, &backend.tenant, &query, &mut stdout).await
        }
        Command::Serve {
            addr,
            database_url,
            memory,
            governance,
            tenant,
            max_in_flight,
            body_limit,
            request_timeout,
            mcp_hosts,
            console_idle_timeout,
            console_secure_cookies,
        } => {
            let database_url = serve::memory_location(database_url, memory)?;
            let mut config = openvibe::service::ServiceConfig::default();
            config.max_in_flight = max_in_flight;
            config.body_limit = body_limit;
            config.request_timeout = std::time::Duration::from_secs(request_timeout);
            config.mcp_allowed_hosts.extend(mcp_hosts);
            config.console_idle_timeout =
                std::time::Duration::from_secs(console_idle_timeout.max(1).saturating_mul(60));
            config.console_secure_cookies = console_secure_cookies;
            serve::serve(serve::ServeOptions {
                addr,
                database_url,
                governance,
                tenant,
                config,
            })
            .await
        }
        Command::Mcp {
            database_url,
            memory,
            governance,
            api_key,
            tenant,
        } => {
            let database_url = serve::memory_location(database_url, memory)?;
            serve::mcp_stdio(
                serve::ServeOptions {
                    addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                    database_url,
                    governance,
                    tenant,
                    config: openvibe::service::ServiceConfig::default(),
                },
                api_key,
            )
            .await
        }
        Command::Proposals(command) => proposals(command, &mut stdout).await,
        Command::Goals(command) => goals(command, &mut stdout).await,
        Command::Beliefs(command) => beliefs(command, &mut stdout).await,
        Command::Loop(LoopCommand::Trace {
            event_id,
            journal,
            role,
            json,
        }) => {
            openvibe_cli::cognitive::trace(&journal, role.as_deref(), &event_id, json, &mut stdout)
                .await
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "openvibe", &mut stdout);
            Ok(())
        }
    }
}

async fn proposals(command: ProposalsCommand, out: &mut impl Write) -> Result<(), CliError> {
    use openvibe::protocols::{Action, ProposalQuery, ProposalStatus, Verdict};
    use openvibe_cli::proposals as p;
    match command {
        ProposalsCommand::Ls {
            desk,
            status,
            role,
            domain,
            assignee,
            limit,
            after,
        } => {
            let desk = p::connect(&desk.connect()).await?;
            let query = ProposalQuery {
                status: match status {
                    StatusArg::Pending => Some(ProposalStatus::Pending),
                    StatusArg::Approved => Some(ProposalStatus::Approved),
                    StatusArg::Rejected => Some(ProposalStatus::Rejected),
                    StatusArg::Expired => Some(ProposalStatus::Expired),
                    StatusArg::Executed => Some(ProposalStatus::Executed),
                    StatusArg::Failed => Some(ProposalStatus::Failed),
                    StatusArg::Any => None,
                },
                role_id: role,
                domain,
                assignee,
                cursor: after,
                limit,
                ..ProposalQuery::default()
            };
            p::ls(&desk, &query, out).await
        }
        ProposalsCommand::Show { id, desk, json } => {
            let desk = p::connect(&desk.connect()).await?;
            p::show(&desk, &id, json, out).await
        }
        ProposalsCommand::Approve {
            id,
            desk,
            reason,
            action,
            tool,
            input,
        } => {
            let action = match (action, tool) {
                (Some(action), Some(tool)) => {
                    let input: serde_json::Value = serde_json::from_str(&input)
                        .map_err(|e| CliError::Usage(format!("--input is not JSON: {e}")))?;
                    Some(Action::tool(action, tool, input))
                }
                _ => None,
            };
            let desk = p::connect(&desk.connect()).await?;
            let verdict = Verdict {
                approve: true,
                reason,
                action,
            };
            p::decide(&desk, &id, &verdict, out).await.map(|_| ())
        }
        ProposalsCommand::Reject { id, desk, reason } => {
            let desk = p::connect(&desk.connect()).await?;
            p::decide(&desk, &id, &Verdict::reject(reason), out)
                .await
                .map(|_| ())
        }
    }
}

async fn beliefs(command: BeliefsCommand, out: &mut impl Write) -> Result<(), CliError> {
    use openvibe::protocols::{BeliefQuery, BeliefStatus, Verdict};
    use openvibe_cli::{beliefs as b, proposals as p};
    match command {
        BeliefsCommand::Ls {
            desk,
            status,
            role,
            domain,
            limit,
            after,
        } => {
            let desk = p::connect(&desk.connect()).await?;
            let query = BeliefQuery {
                status: match status {
                    BeliefStatusArg::Proposed => Some(BeliefStatus::Proposed),
                    BeliefStatusArg::Active => Some(BeliefStatus::Active),
                    BeliefStatusArg::Rejected => Some(BeliefStatus::Rejected),
                    BeliefStatusArg::Retired => Some(BeliefStatus::Retired),
                    BeliefStatusArg::Any => None,
                },
                role_id: role,
                domain,
                cursor: after,
                limit,
                ..BeliefQuery::default()
            };
            b::ls(&desk, &query, out).await
        }
        BeliefsCommand::Show { id, desk, json } => {
            let desk = p::connect(&desk.connect()).await?;
            b::show(&desk, &id, json, out).await
        }
        BeliefsCommand::Approve { id, desk, reason } => {
            let desk = p::connect(&desk.connect()).await?;
            b::decide(&desk, &id, &Verdict::approve(reason), out)
                .await
                .map(|_| ())
        }
        BeliefsCommand::Reject { id, desk, reason } => {
            let desk = p::connect(&desk.connect()).await?;
            b::decide(&desk, &id, &Verdict::reject(reason), out)
                .await
                .map(|_| ())
        }
        BeliefsCommand::Retire { id, desk, reason } => {
            let desk = p::connect(&desk.connect()).await?;
            b::retire(&desk, &id, &reason, out).await
        }
    }
}

async fn goals(command: GoalsCommand, out: &mut impl Write) -> Result<(), CliError> {
    use openvibe::protocols::{MetricMode, MetricReport};
    use openvibe_cli::{goals as g, proposals as p};
    match command {
        GoalsCommand::Status {
            desk,
            role,
            day,
            json,
        } => {
            let desk = p::connect(&desk.connect()).await?;
            let day = day.unwrap_or_else(|| chrono::Utc::now().date_naive());
            g::status(&desk, role.as_deref(), day, json, out).await
        }
        GoalsCommand::Report {
            role,
            metric,
            value,
            desk,
            set,
            note,
            id,
            namespace,
        } => {
            let desk = p::connect(&desk.connect()).await?;
            let mut report = MetricReport::add(role, metric, value)
                .note(note)
                .namespace(namespace.unwrap_or_default());
            if set {
                report.mode = MetricMode::Set;
            }
            if let Some(id) = id {
                report = report.id(id);
            }
            g::report(&desk, report, out).await
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
