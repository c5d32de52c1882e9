//! Temporal from the command line: `openvibe run role.yaml --schedule
//! --temporal URL` registers the role's timed triggers as Temporal
//! schedules; `openvibe worker role.yaml --temporal URL` runs them (feature
//! `temporal`).

use std::io::Write;
use std::path::PathBuf;

use crate::CliError;
use crate::args::{Llm, LlmArgs, TemporalArgs};
use crate::demo::run_options;
use crate::spec::RoleFile;
#[cfg(not(feature = "temporal"))]
use crate::{demo::Options, spec::Files};

/// Where Temporal is and how to use it.
#[derive(Debug, Clone)]
pub struct TemporalOptions {
    /// The frontend's gRPC URL.
    pub url: String,
    /// The Temporal namespace.
    pub namespace: String,
    /// The task queue schedules start their workflows on (and workers poll).
    pub task_queue: String,
    /// Reflect (and publish) on this schedule too (registration only).
    pub reflection: Option<String>,
    /// How long one node or loop stage of the workflows this process
    /// starts may run before Temporal retries it elsewhere.
    pub node_timeout: std::time::Duration,
}

impl TemporalOptions {
    /// What the command line's `args` name (reflecting on `reflection`,
    /// when given), or `None` without `--temporal`.
    pub fn from_args(args: &TemporalArgs, reflection: Option<String>) -> Option<Self> {
        Some(Self {
            url: args.temporal.clone()?,
            namespace: args.namespace.clone(),
            task_queue: args.task_queue.clone(),
            reflection,
            node_timeout: args.node_timeout,
        })
    }
}

/// What `openvibe worker` is asked: its command line (the field docs are
/// its `--help`).
#[derive(clap::Args)]
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
pub struct WorkerCommand {
    /// The role file (YAML), or a directory of them: the same as the
    /// schedules were registered from (or the loop's events name).
    pub role_file: PathBuf,
    /// Work together in this space (docs/spaces.md): the roles join it,
    /// their delegated actions ask there, and the requests routed to
    /// them run in their loop on this worker's task queue.
    #[arg(long, value_name = "NAME")]
    pub space: Option<String>,
    /// With --space: a person who is a member too (an owner key such as
    /// user:ann; repeat for several).
    #[arg(long = "person", value_name = "OWNER_KEY", requires = "space")]
    pub people: Vec<String>,
    /// Where Temporal is.
    #[command(flatten)]
    pub temporal: TemporalArgs,
    /// The model and the memory.
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Run `openvibe worker`: a worker for the roles of its role file (a role
/// file or a directory of them) on the Temporal its arguments name, with
/// their model and memory, in their space (with its people) when given,
/// until Ctrl-C / SIGTERM; print each node it runs to `out`.
pub async fn worker_command(
    command: WorkerCommand,
    out: &mut (impl Write + Send),
) -> Result<(), CliError> {
    let WorkerCommand {
        role_file,
        space,
        people,
        temporal,
        llm,
    } = command;
    let all = RoleFile::load_all(&role_file)?;
    let (options, label) = run_options(&llm, Llm::Anthropic, false);
    let Some(temporal) = TemporalOptions::from_args(&temporal, None) else {
        return Err(CliError::Usage("a worker needs --temporal URL".into()));
    };
    let space = space.map(|space| (space, people));
    worker(&all, &options, &temporal, space, &label, out).await
}

#[cfg(not(feature = "temporal"))]
fn unsupported() -> CliError {
    CliError::Usage(
        "this openvibe was built without Temporal: build the CLI with `--features temporal` \
         (cargo install openvibe-cli --features temporal)"
            .into(),
    )
}

/// Register `file`'s role's timed triggers (and the reflection, when asked)
/// with Temporal; print each schedule.
#[cfg(not(feature = "temporal"))]
pub async fn register(
    _file: &RoleFile,
    _files: &Files,
    _options: &Options,
    _temporal: &TemporalOptions,
    _out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    Err(unsupported())
}

/// Run a worker for the roles of `files` until Ctrl-C / SIGTERM; print
/// each node it runs.
#[cfg(not(feature = "temporal"))]
pub async fn worker(
    _files: &[(RoleFile, Files)],
    _options: &Options,
    _temporal: &TemporalOptions,
    _space: Option<(String, Vec<String>)>,
    _llm_label: &str,
    _out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    Err(unsupported())
}

/// Push `events` into their roles' cognitive loops on Temporal (one
/// workflow per event, run by `openvibe worker`), then print each event's
/// trace as it finishes.
#[cfg(not(feature = "temporal"))]
pub async fn push_events(
    _events: Vec<(String, openvibe::protocols::DecisionEvent)>,
    _temporal: &TemporalOptions,
    _out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    Err(unsupported())
}

#[cfg(feature = "temporal")]
pub use enabled::{push_events, register, worker};

#[cfg(feature = "temporal")]
mod enabled {
    use std::io::Write;
    use std::sync::Arc;

    use openvibe::temporal::{NodeRan, TemporalConfig, TemporalScheduler, TemporalWorker};

    use super::TemporalOptions;
    use crate::CliError;
    use crate::demo::{Options, with_setup};
    use crate::scheduled::{reflection_of, trigger_line};
    use crate::spec::{Files, RoleFile};

    fn config(temporal: &TemporalOptions) -> TemporalConfig {
        let mut config = TemporalConfig::new(temporal.url.clone())
            .namespace(temporal.namespace.clone())
            .task_queue(temporal.task_queue.clone());
        config.node_timeout = temporal.node_timeout;
        config
    }

    fn failed(e: impl std::fmt::Display) -> CliError {
        CliError::Temporal(e.to_string())
    }

    /// Register `file`'s role's timed triggers (and the reflection, when
    /// asked) with Temporal; print each schedule.
    pub async fn register(
        file: &RoleFile,
        files: &Files,
        options: &Options,
        temporal: &TemporalOptions,
        out: &mut (dyn Write + Send),
    ) -> Result<(), CliError> {
        with_setup(options, async |setup| {
            let scheduler = Arc::new(
                TemporalScheduler::connect(config(temporal))
                    .await
                    .map_err(failed)?,
            );
            let (runtime, role_id) = setup.runtime(file, files, Arc::default()).await?;
            let mut runtime = runtime.with_scheduler(scheduler.clone());
            if let Some(spec) = &temporal.reflection {
                runtime = runtime.with_reflection(reflection_of(spec));
            }
            let ids = runtime.start().await?;
            writeln!(
                out,
                "== role `{role_id}`: {} schedule(s) registered with Temporal at {} (namespace {}, task queue {})",
                ids.len(),
                temporal.url,
                temporal.namespace,
                temporal.task_queue
            )?;
            let now = chrono::Utc::now();
            for ((_, trigger), id) in runtime.scheduled_triggers().into_iter().zip(&ids) {
                // Temporal accepted it, so it reads as a timetable.
                let line = trigger_line(&trigger, now).map_err(failed)?;
                writeln!(out, "   {id}: {line}")?;
            }
            if ids.is_empty() {
                writeln!(
                    out,
                    "   the role has no cron or interval triggers (add one: `triggers: [{{ id: hourly, type: interval, schedule: 1h }}]`)"
                )?;
            } else {
                writeln!(
                    out,
                    "   run them with: openvibe worker <role file> --temporal {} --task-queue {}",
                    temporal.url, temporal.task_queue
                )?;
            }
            Ok(())
        })
        .await
    }

    /// Push `events` into their roles' cognitive loops on Temporal (one
    /// `openvibe.loop.event` workflow per event, run by `openvibe worker`),
    /// then print each event's trace as it finishes.
    pub async fn push_events(
        events: Vec<(String, openvibe::protocols::DecisionEvent)>,
        temporal: &TemporalOptions,
        out: &mut (dyn Write + Send),
    ) -> Result<(), CliError> {
        let scheduler = TemporalScheduler::connect(config(temporal))
            .await
            .map_err(failed)?;
        let learning = openvibe::roles::Learning::default();
        let mut pushed = Vec::with_capacity(events.len());
        for (role, event) in events {
            let id = event.id.clone();
            let accepted = scheduler
                .push_event(&role, event, openvibe::roles::EventSource::Code, &learning)
                .await
                .map_err(failed)?;
            writeln!(
                out,
                "   event {id} of role {role}: {}",
                if accepted.duplicate {
                    "seen before, not run again"
                } else {
                    "started on Temporal"
                }
            )?;
            pushed.push((role, id));
        }
        out.flush()?;
        for (role, id) in pushed {
            let trace = scheduler.event_trace(&role, &id).await.map_err(failed)?;
            write!(out, "{}", trace.render())?;
            out.flush()?;
        }
        Ok(())
    }

    /// Run a worker for the roles of `files` until Ctrl-C / SIGTERM; print
    /// each node it runs.
    pub async fn worker(
        files: &[(RoleFile, Files)],
        options: &Options,
        temporal: &TemporalOptions,
        space: Option<(String, Vec<String>)>,
        llm_label: &str,
        out: &mut (dyn Write + Send),
    ) -> Result<(), CliError> {
        with_setup(options, async |setup| {
            let (runtime, role_ids) = setup.runtime_of_all(files).await?;
            let runtime = match &space {
                Some((space, people)) => runtime.with_space(space.clone(), people.clone()),
                None => runtime,
            };
            let role_id = role_ids.join(", ");
            writeln!(
                out,
                "== worker for role(s) `{role_id}` · Temporal at {} (namespace {}, task queue {}) · model: {llm_label} · memory backend: {}",
                temporal.url, temporal.namespace, temporal.task_queue, setup.backend
            )?;
            out.flush()?;
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<NodeRan>();
            let worker = TemporalWorker::new(Arc::new(runtime), config(temporal))
                .on_node(move |ran| {
                    let _ = tx.send(ran.clone());
                });
            let mut nodes = 0_u64;
            let mut printed = Ok(());
            let print = async {
                while let Some(ran) = rx.recv().await {
                    nodes += 1;
                    if printed.is_ok() {
                        printed = writeln!(out, "{}", describe(&ran)).and_then(|()| out.flush());
                    }
                }
            };
            let (ran, ()) = tokio::join!(worker.run(crate::serve::shutdown_signal()), print);
            ran.map_err(failed)?;
            printed?;
            writeln!(out, "== stopped: {nodes} node(s) run")?;
            Ok(())
        })
        .await
    }

    /// One line for a node a worker ran.
    fn describe(ran: &NodeRan) -> String {
        let retry = if ran.attempt > 1 {
            format!(" (attempt {})", ran.attempt)
        } else {
            String::new()
        };
        let then = if ran.next == openvibe::operators::END {
            "done".to_owned()
        } else {
            format!("next {}", ran.next)
        };
        let target = if ran.operator_id.is_empty() {
            "reflect + publish".to_owned()
        } else {
            format!("{}/{}", ran.operator_id, ran.workflow_id)
        };
        format!(
            "[{}] {} {target} · {}{retry} in {} ms · {then}",
            chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            ran.role_id,
            ran.node,
            ran.took.as_millis(),
        )
    }
}
