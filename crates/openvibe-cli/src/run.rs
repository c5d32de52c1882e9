//! Running roles from the command line:
//!
//! - `openvibe run`: a role file's activations ([`crate::demo::execute`]),
//!   or with `--schedule` its cron and interval triggers (in this process,
//!   [`crate::scheduled`]; registered with Temporal with `--temporal`,
//!   [`crate::temporal`]), or with `--loop` a role file or a directory of
//!   them in the cognitive loop ([`crate::cognitive`]; its events pushed
//!   to Temporal with `--temporal`);
//! - `openvibe demo`: the CRO example ([`crate::demo`]), or with `--full`
//!   the source design's full example ([`crate::full`]).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::CliError;
use crate::args::{Llm, LlmArgs, TemporalArgs};
use crate::cognitive::{self, LoopOptions};
use crate::demo::{self, DEMO_FILES, LlmChoice, run_options};
use crate::scheduled;
use crate::spec::{Files, RoleFile};
use crate::temporal::{self, TemporalOptions};

/// What `openvibe run` is asked: its command line (the field docs are its
/// `--help`).
#[derive(clap::Args)]
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
  openvibe run roles/ --loop --inbox --database-url URL --tenant acme
                        one of any number of loop processes sharing the durable inbox; events
                        pushed to any `openvibe serve --database-url URL` instance reach them
                        (docs/scale.md)
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
pub struct RunCommand {
    /// The role file (YAML); with --loop, also a directory of role files.
    pub role_file: PathBuf,
    /// Reflect and publish insights after every run but the last.
    #[arg(long, conflicts_with = "schedule")]
    pub reflect: bool,
    /// Run the role's cron and interval triggers in the foreground
    /// instead of the file's runs.
    #[arg(long)]
    pub schedule: bool,
    /// With --schedule or --loop: stop after this long (e.g. 90s, 10m, 2h).
    #[arg(long = "for", value_name = "DURATION", requires = "mode", value_parser = humantime::parse_duration)]
    pub run_for: Option<Duration>,
    /// With --schedule: stop after this many firings.
    #[arg(long, value_name = "N", requires = "schedule")]
    pub firings: Option<u64>,
    /// With --schedule or --loop: reflect and publish insights on this
    /// schedule (a cron expression such as \"0 3 * * *\", or a period
    /// such as 6h); in the loop, reflection events also learn.
    #[arg(long, value_name = "SCHEDULE", requires = "mode")]
    pub reflection: Option<String>,
    /// Run the role in the cognitive loop: each event (a trigger firing,
    /// a reflection, an event of --events) goes perceive → decide → act
    /// → observe → reflect → learn, printed when done.
    #[arg(long = "loop", conflicts_with_all = ["schedule", "reflect"])]
    pub cognitive: bool,
    /// With --loop: journal each event's stages in this directory, so a
    /// killed openvibe resumes unfinished events (without repeating a
    /// finished stage) and `openvibe loop trace` can read them.
    #[arg(long, value_name = "DIR", requires = "cognitive")]
    pub journal: Option<PathBuf>,
    /// With --loop: work the durable event inbox of the memory backend
    /// (PostgreSQL with --database-url) instead of a journal of this
    /// process: events pushed by any process (`openvibe serve` instances,
    /// other loops) are leased by whichever loop process is free, and a
    /// killed process's events are taken over once its lease lapses
    /// (docs/scale.md). Run as many such processes as you like.
    #[arg(long, requires = "cognitive", conflicts_with = "journal")]
    pub inbox: bool,
    /// With --inbox: this process's name in the inbox (default:
    /// host:pid:start).
    #[arg(long, value_name = "NAME", requires = "inbox")]
    pub holder: Option<String>,
    /// With --inbox: how long a lease lasts before another process may
    /// take the event over (renewed while it is worked; e.g. 30s, 2s).
    #[arg(long, value_name = "DURATION", requires = "inbox", value_parser = humantime::parse_duration)]
    pub lease: Option<Duration>,
    /// With --loop: push the events of this JSON-lines file at start (one
    /// decision event per line: {"role", "id", "kind", "domain",
    /// "summary", "data", "action"}; "role" may be left out when one
    /// role runs); an id seen before is not run again.
    #[arg(long, value_name = "FILE", requires = "cognitive")]
    pub events: Option<PathBuf>,
    /// With --loop: stop once this many events are done.
    #[arg(long, value_name = "N", requires = "cognitive")]
    pub until_events: Option<u64>,
    /// With --loop: also serve this process's memory and loop over HTTP
    /// and MCP on this address (POST /v1/loop/{role}/events, the MCP
    /// tool pushEvent at /mcp).
    #[arg(long, value_name = "ADDR", requires = "cognitive")]
    pub listen: Option<SocketAddr>,
    /// With --listen: the governance file (API keys, namespace
    /// policies); without it, a loopback address only, no keys.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub governance: Option<PathBuf>,
    /// With --loop: work together in this space (docs/spaces.md): each
    /// role joins it owning its domains, delegates there, and its loop
    /// takes the requests routed to it. Processes that share a database
    /// (--database-url, --tenant) and name the same space share it.
    #[arg(long, value_name = "NAME", requires = "cognitive")]
    pub space: Option<String>,
    /// With --space: a person who is a member too (an owner key such as
    /// user:ann; repeat for several): requests for a domain no role
    /// owns go to them.
    #[arg(long = "person", value_name = "OWNER_KEY", requires = "space")]
    pub people: Vec<String>,
    /// With --schedule: keep each run's checkpoints in this directory,
    /// so runs a killed openvibe left unfinished resume (without
    /// repeating finished nodes) when it starts again.
    #[arg(
        long,
        value_name = "DIR",
        requires = "schedule",
        conflicts_with = "temporal"
    )]
    pub checkpoints: Option<PathBuf>,
    /// Where Temporal is.
    #[command(flatten)]
    pub temporal: TemporalArgs,
    /// The model and the memory.
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Run `openvibe run` as `command` says, printing to `out`.
pub async fn run_command(
    command: RunCommand,
    out: &mut (impl Write + Send),
) -> Result<(), CliError> {
    let RunCommand {
        role_file,
        reflect,
        schedule,
        run_for,
        firings,
        reflection,
        cognitive,
        journal,
        inbox,
        holder,
        lease,
        events,
        until_events,
        listen,
        governance,
        space,
        people,
        checkpoints,
        temporal: temporal_args,
        llm,
    } = command;
    if cognitive && let Some(temporal) = TemporalOptions::from_args(&temporal_args, None) {
        if journal.is_some() || inbox || listen.is_some() || run_for.is_some() {
            return Err(CliError::Usage(
                "with --temporal the events run on Temporal's workers: --journal, --inbox, \
                 --listen and --for belong to a loop in this process"
                    .into(),
            ));
        }
        let all = RoleFile::load_all(&role_file)?;
        let roles: Vec<String> = all.iter().map(|(f, _)| f.role.id.clone()).collect();
        let Some(path) = &events else {
            return Err(CliError::Usage(
                "with --temporal, --loop pushes the events of --events FILE to Temporal".into(),
            ));
        };
        let events = cognitive::read_events(path, &roles)?;
        return temporal::push_events(events, &temporal, out).await;
    }
    if cognitive {
        let all = RoleFile::load_all(&role_file)?;
        let (options, label) = run_options(&llm, Llm::Anthropic, false);
        let inbox = inbox.then(|| {
            let mut leasing = holder.map_or_else(
                openvibe::roles::Leasing::default,
                openvibe::roles::Leasing::new,
            );
            if let Some(lease) = lease {
                leasing = leasing.lease_ms(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
            }
            leasing
        });
        let loop_options = LoopOptions {
            journal,
            inbox,
            events,
            reflection,
            run_for,
            events_done: until_events,
            listen,
            governance,
            space,
            people,
        };
        return cognitive::run(&all, &options, &loop_options, &label, out).await;
    }
    if role_file.is_dir() {
        return Err(CliError::Usage(format!(
            "{} is a directory: a directory of role files runs with --loop (one role file otherwise)",
            role_file.display()
        )));
    }
    let (file, files) = RoleFile::load(&role_file)?;
    let (options, label) = run_options(&llm, Llm::Anthropic, reflect);
    if schedule
        && let Some(temporal) = TemporalOptions::from_args(&temporal_args, reflection.clone())
    {
        if run_for.is_some() || firings.is_some() {
            return Err(CliError::Usage(
                "--for and --firings stop an in-process schedule; with --temporal the \
                 schedules run in Temporal (stop its workers instead)"
                    .into(),
            ));
        }
        temporal::register(&file, &files, &options, &temporal, out).await
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
        scheduled::run(&file, &files, &options, &schedule, &label, out).await
    } else {
        demo::execute(&file, &files, &options, &label, out).await
    }
}

/// What `openvibe demo` is asked: its command line (the field docs are
/// its `--help`).
#[derive(clap::Args)]
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
pub struct DemoCommand {
    /// Run the source design's full example instead: a CRO owning
    /// RevenueOps that asks a CMO owning the ContentEngine for a case
    /// study through their space, loaded from a configuration
    /// directory, and the memory pyramid it leaves (raw calls,
    /// episodes, insights).
    #[arg(long)]
    pub full: bool,
    /// The model and the memory.
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Run `openvibe demo` with the model and memory `llm` names: the CRO
/// example ([`DEMO_FILES`]), or (`full`) the source design's full example
/// ([`crate::full`]); print what happened to `out`.
pub async fn demo_command(command: DemoCommand, out: &mut impl Write) -> Result<(), CliError> {
    let DemoCommand { full, llm } = command;
    let llm = &llm;
    if full {
        let (options, mut label) = run_options(llm, Llm::Replay, false);
        if options.llm == LlmChoice::Replay && options.cassette.is_none() {
            label = "replay of examples/full/cassette.jsonl".to_owned();
        }
        return crate::full::execute(&options, &label, out).await;
    }
    let text = DEMO_FILES
        .iter()
        .find(|(name, _)| *name == "role.yaml")
        .map(|(_, text)| *text)
        .unwrap_or_default();
    let file = RoleFile::parse(text, "demo/cro/role.yaml".as_ref())?;
    let (options, label) = run_options(llm, Llm::Replay, true);
    demo::execute(&file, &Files::Embedded(DEMO_FILES), &options, &label, out).await
}
