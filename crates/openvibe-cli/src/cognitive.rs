//! `openvibe run role.yaml --loop` (the cognitive loop in the foreground)
//! and `openvibe loop trace EVENT_ID` (an event's path through its stages).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use openvibe::operators::FileCheckpointer;
use openvibe::protocols::DecisionEvent;
use openvibe::roles::{
    CheckpointJournal, CognitiveLoop, EventSource, InMemoryJournal, LoopJournal, LoopTrace,
};
use openvibe::schedule::InProcessScheduler;

use crate::CliError;
use crate::demo::{Options, Setup, with_setup};
use crate::scheduled::{reflection_of, trigger_line};
use crate::spec::{Files, RoleFile};

/// `openvibe loop`: the cognitive loop's journal.
#[derive(Subcommand)]
pub enum LoopCommand {
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

/// Run a `loop` command, printing to `out`.
pub async fn run_command(command: LoopCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        LoopCommand::Trace {
            event_id,
            journal,
            role,
            json,
        } => trace(&journal, role.as_deref(), &event_id, json, out).await,
    }
}

/// What `run --loop` runs and for how long.
#[derive(Debug, Clone, Default)]
pub struct LoopOptions {
    /// Journal each event's stages in this directory: a killed process
    /// resumes unfinished events there (default: in memory).
    pub journal: Option<PathBuf>,
    /// Work the memory backend's durable inbox, leasing as this says
    /// (instead of a journal of this process).
    pub inbox: Option<openvibe::roles::Leasing>,
    /// Push the events of this JSON-lines file at start (one
    /// `DecisionEvent` per line).
    pub events: Option<PathBuf>,
    /// Reflect on this schedule (reflection events reflect and learn).
    pub reflection: Option<String>,
    /// Stop after this long (default: until Ctrl-C or SIGTERM).
    pub run_for: Option<Duration>,
    /// Stop once this many events are done.
    pub events_done: Option<u64>,
    /// Also serve the memory and the loop over HTTP and MCP here
    /// (`/v1/loop/{role}/events`, the `pushEvent` tool).
    pub listen: Option<std::net::SocketAddr>,
    /// The governance file for `listen` (API keys); without one, only a
    /// loopback address, in development mode.
    pub governance: Option<PathBuf>,
    /// Work together in this space: the roles join it, delegate there and
    /// take the requests routed to them.
    pub space: Option<String>,
    /// People members of the space (owner keys).
    pub people: Vec<String>,
}

/// The events of a JSON-lines file, each with the role it is for (its
/// `role` field; it may be left out when `roles` has one role), each
/// checked by its line number.
pub fn read_events(
    path: &Path,
    roles: &[String],
) -> Result<Vec<(String, DecisionEvent)>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let mut value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| CliError::Usage(format!("{}: not JSON: {e}", at())))?;
        let role = match value.as_object_mut().and_then(|o| o.remove("role")) {
            Some(serde_json::Value::String(role)) if roles.contains(&role) => role,
            Some(other) => {
                return Err(CliError::Usage(format!(
                    "{}: `role` {other} is none of the roles run here ({})",
                    at(),
                    roles.join(", ")
                )));
            }
            None => match roles {
                [only] => only.clone(),
                _ => {
                    return Err(CliError::Usage(format!(
                        "{}: several roles run here ({}): name the event's `role`",
                        at(),
                        roles.join(", ")
                    )));
                }
            },
        };
        let event: DecisionEvent = serde_json::from_value(value)
            .map_err(|e| CliError::Usage(format!("{}: not an event: {e}", at())))?;
        events.push((role, event));
    }
    Ok(events)
}

/// The journal `dir` names (a directory of files), or one in memory.
pub fn journal(dir: Option<&Path>) -> Result<Arc<dyn LoopJournal>, CliError> {
    Ok(match dir {
        Some(dir) => Arc::new(CheckpointJournal(Arc::new(FileCheckpointer::new(dir)?))),
        None => Arc::new(InMemoryJournal::new()),
    })
}

/// Run the roles of `files` (one role file, or a directory of them) in the
/// cognitive loop until stopped; print each event as it is done.
pub async fn run(
    files: &[(RoleFile, Files)],
    options: &Options,
    loop_options: &LoopOptions,
    llm_label: &str,
    out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    let roles: Vec<String> = files.iter().map(|(f, _)| f.role.id.clone()).collect();
    let events = match &loop_options.events {
        Some(path) => read_events(path, &roles)?,
        None => Vec::new(),
    };
    with_setup(options, async |setup| {
        serve(files, setup, loop_options, events, llm_label, out).await
    })
    .await
}

async fn serve(
    files: &[(RoleFile, Files)],
    setup: &Setup,
    loop_options: &LoopOptions,
    events: Vec<(String, DecisionEvent)>,
    llm_label: &str,
    out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    let (runtime, role_ids) = setup.runtime_of_all(files).await?;
    let role_id = role_ids.join(", ");
    let mut runtime = runtime.with_scheduler(Arc::new(InProcessScheduler::new()));
    if let Some(spec) = &loop_options.reflection {
        runtime = runtime.with_reflection(reflection_of(spec));
    }
    if let Some(space) = &loop_options.space {
        runtime = runtime.with_space(space.clone(), loop_options.people.clone());
    }
    let runtime = Arc::new(runtime);
    let cognitive = Arc::new(match &loop_options.inbox {
        Some(leasing) => {
            CognitiveLoop::durable(runtime.clone(), setup.stores.inbox.clone(), leasing.clone())
        }
        None => CognitiveLoop::new(runtime.clone(), journal(loop_options.journal.as_deref())?),
    });
    // Over the wire too: the memory service with this loop as its inbox.
    let (server_stop, server_stopped) = tokio::sync::watch::channel(false);
    let server = match loop_options.listen {
        Some(addr) => {
            let access = match &loop_options.governance {
                Some(path) => openvibe::service::Access::Governed(Arc::new(
                    crate::serve::read_governance(path)?,
                )),
                None if addr.ip().is_loopback() => {
                    openvibe::service::Access::open(setup.tenant.clone())
                }
                None => {
                    return Err(CliError::Usage(format!(
                        "without --governance the loop's endpoint takes no API keys (development \
                         mode), so it only listens on a loopback address, not {addr}"
                    )));
                }
            };
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| CliError::Usage(format!("cannot listen on {addr}: {e}")))?;
            let local = listener.local_addr()?;
            writeln!(
                out,
                "   events over HTTP: POST http://{local}/v1/loop/{{role}}/events ({role_id}) · MCP: http://{local}/mcp (pushEvent)"
            )?;
            let service = openvibe::service::Service::new(setup.stores.clone(), access)
                .with_inbox(cognitive.clone());
            let mut stopped = server_stopped.clone();
            Some(tokio::spawn(service.serve(listener, async move {
                let _ = stopped.wait_for(|s| *s).await;
            })))
        }
        None => None,
    };
    writeln!(
        out,
        "== role(s) `{role_id}` in the cognitive loop · model: {llm_label} · memory backend: {} · journal: {}",
        setup.backend,
        match (&loop_options.inbox, &loop_options.journal) {
            (Some(leasing), _) => format!(
                "the durable inbox, as `{}` (leases of {} ms)",
                leasing.holder, leasing.lease_ms
            ),
            (None, Some(dir)) => dir.display().to_string(),
            (None, None) => "in memory".to_owned(),
        }
    )?;
    if let Some(space) = &loop_options.space {
        let joined = runtime.join_space().await?;
        let members = joined
            .map(|s| {
                s.members
                    .iter()
                    .map(|m| match m.domains.as_slice() {
                        [] => m.principal.clone(),
                        owns => format!("{} ({})", m.principal, owns.join(", ")),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        writeln!(out, "   space `{space}`: {members}")?;
    }
    let now = chrono::Utc::now();
    for (role, trigger) in runtime.scheduled_triggers() {
        let line = trigger_line(&trigger, now)
            .map_err(|e| CliError::Usage(format!("role `{role}`: {e}")))?;
        writeln!(out, "   {} {line}", trigger.id)?;
    }
    out.flush()?;
    let (count_tx, count_rx) = tokio::sync::watch::channel(0_u64);
    let stop =
        crate::scheduled::stop_when(count_rx, loop_options.events_done, loop_options.run_for);
    // Each event is printed as it is done.
    let printed = std::sync::Mutex::new((0_u64, &mut *out, None::<std::io::Error>));
    // The file's events are pushed while the loop runs: a file longer than
    // the queue waits for room instead of failing.
    let feed = async {
        let mut seen = Vec::new();
        let total = events.len();
        for (pushed, (role, event)) in events.into_iter().enumerate() {
            let id = event.id.clone();
            loop {
                match cognitive
                    .push(&role, event.clone(), EventSource::Code)
                    .await
                {
                    Ok(accepted) => {
                        if accepted.duplicate {
                            seen.push(id);
                        }
                        break;
                    }
                    Err(openvibe::roles::Error::LoopFull { .. }) => {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    // Stopped (Ctrl-C, --for, --until-events) before the
                    // file was through: the rest was never accepted.
                    Err(openvibe::roles::Error::LoopStopped { .. }) => {
                        tracing::warn!(
                            left = total - pushed,
                            "the loop stopped before the rest of the events file was pushed"
                        );
                        return Ok(seen);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(seen)
    };
    let serving = cognitive.serve(stop, |trace: &LoopTrace| {
        if let Ok(mut printed) = printed.lock() {
            printed.0 += 1;
            let done = printed.0;
            if let Err(e) = write!(printed.1, "{}", trace.render()).and_then(|()| printed.1.flush())
            {
                printed.2.get_or_insert(e);
            }
            let _ = count_tx.send(done);
        }
    });
    let (report, fed) = tokio::join!(serving, feed);
    let _ = server_stop.send(true);
    if let Some(server) = server {
        server
            .await
            .map_err(|e| CliError::Usage(format!("the loop's endpoint stopped: {e}")))??;
    }
    let report = report?;
    let seen = fed?;
    if let Some(e) = printed.into_inner().ok().and_then(|p| p.2) {
        return Err(e.into());
    }
    for id in &seen {
        writeln!(out, "   event {id}: seen before, not run again")?;
    }
    let duplicates = seen.len();
    writeln!(
        out,
        "== stopped: {} event(s) done ({} resumed from an earlier process, {} ended on a failed stage){}",
        report.events,
        report.resumed,
        report.failed,
        if duplicates > 0 {
            format!(", {duplicates} duplicate(s) not run")
        } else {
            String::new()
        }
    )?;
    Ok(())
}

/// Print event `event_id`'s path from the journal in `dir` (of `role`, or
/// of whichever role has it).
pub async fn trace(
    dir: &Path,
    role: Option<&str>,
    event_id: &str,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: no journal here (run `openvibe run role.yaml --loop --journal {}` first)",
            dir.display(),
            dir.display()
        )));
    }
    let journal = CheckpointJournal(Arc::new(FileCheckpointer::new(dir)?));
    let found = match role {
        Some(role) => journal.load(role, event_id).await?,
        None => {
            let mut found = None;
            for checkpoint in all_loop_checkpoints(dir)? {
                if let Some(trace) = openvibe::roles::trace_of_checkpoint(&checkpoint)
                    && trace.event.id == event_id
                {
                    found = Some(trace);
                    break;
                }
            }
            found
        }
    };
    let Some(trace) = found else {
        return Err(CliError::Usage(format!(
            "no event `{event_id}` in the journal at {}",
            dir.display()
        )));
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&trace)?)?;
    } else {
        write!(out, "{}", trace.render())?;
    }
    Ok(())
}

/// Every checkpoint file of the journal in `dir`.
fn all_loop_checkpoints(dir: &Path) -> Result<Vec<openvibe::operators::Checkpoint>, CliError> {
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| CliError::Usage(format!("{}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json")
            && let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(checkpoint) = serde_json::from_str(&text)
        {
            found.push(checkpoint);
        }
    }
    Ok(found)
}
