//! `openvibe run role.yaml --schedule`: a role's timed triggers run in the
//! foreground by the in-process scheduler, each firing printed as it ends.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use openvibe::operators::FileCheckpointer;
use openvibe::protocols::TriggerConfig;
use openvibe::roles::{Fired, Outcome, Reflection};
use openvibe::schedule::{InProcessScheduler, Plan};

use crate::CliError;
use crate::demo::{Options, Setup, with_setup};
use crate::spec::{Files, RoleFile};

/// How long and what to run on a schedule.
#[derive(Debug, Clone, Default)]
pub struct ScheduleOptions {
    /// Stop after this long (default: until Ctrl-C or SIGTERM).
    pub run_for: Option<Duration>,
    /// Stop after this many firings.
    pub firings: Option<u64>,
    /// Reflect (and publish) on this schedule: a cron expression, or a
    /// period such as `6h`.
    pub reflection: Option<String>,
    /// Keep each run's checkpoints here, so runs a killed process left
    /// unfinished resume when it starts again.
    pub checkpoints: Option<std::path::PathBuf>,
}

/// The reflection schedule `spec` names: a period when it parses as one
/// (`6h`, `30m`), else a cron expression.
pub fn reflection_of(spec: &str) -> Reflection {
    if humantime::parse_duration(spec.trim()).is_ok() {
        Reflection::every(spec)
    } else {
        Reflection::cron(spec)
    }
}

/// What a trigger runs, for people: `operator/workflow`, or the reflection.
pub(crate) fn target_of(trigger: &TriggerConfig) -> String {
    match &trigger.operator_id {
        Some(operator) => format!("{operator}/{}", trigger.workflow),
        None => "reflect + publish".to_owned(),
    }
}

/// A timed trigger for people: its kind, schedule, what it runs and when
/// it next fires after `now` (`interval `1s` → revenue_ops/qualify: next …`).
pub(crate) fn trigger_line(
    trigger: &TriggerConfig,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String, openvibe::protocols::ScheduleError> {
    let when = match Plan::of(trigger, now)?.next_after(now) {
        Some(next) => format!("next {}", next.format("%Y-%m-%dT%H:%M:%SZ")),
        None => "never again".to_owned(),
    };
    Ok(format!(
        "{} `{}` → {}: {when}",
        format!("{:?}", trigger.kind).to_lowercase(),
        trigger.schedule.as_deref().unwrap_or_default(),
        target_of(trigger),
    ))
}

/// What stops a foreground run: Ctrl-C or SIGTERM, `run_for` elapsed, or
/// the count `done` reports reaching `limit`.
pub(crate) async fn stop_when(
    mut done: tokio::sync::watch::Receiver<u64>,
    limit: Option<u64>,
    run_for: Option<Duration>,
) {
    let enough = async {
        match limit {
            Some(limit) => {
                let _ = done.wait_for(|n| *n >= limit).await;
            }
            None => std::future::pending().await,
        }
    };
    let elapsed = async {
        match run_for {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = crate::serve::shutdown_signal() => {},
        () = enough => {},
        () = elapsed => {},
    }
}

/// Run `file`'s role on its schedules until stopped; print each firing.
pub async fn run(
    file: &RoleFile,
    files: &Files,
    options: &Options,
    schedule: &ScheduleOptions,
    llm_label: &str,
    out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    with_setup(options, async |setup| {
        serve(file, files, setup, schedule, llm_label, out).await
    })
    .await
}

async fn serve(
    file: &RoleFile,
    files: &Files,
    setup: &Setup,
    schedule: &ScheduleOptions,
    llm_label: &str,
    out: &mut (dyn Write + Send),
) -> Result<(), CliError> {
    let (runtime, role_id) = setup.runtime(file, files, Arc::default()).await?;
    let mut runtime = runtime.with_scheduler(Arc::new(InProcessScheduler::new()));
    if let Some(spec) = &schedule.reflection {
        runtime = runtime.with_reflection(reflection_of(spec));
    }
    if let Some(dir) = &schedule.checkpoints {
        let checkpoints = FileCheckpointer::new(dir)?;
        runtime = runtime.with_checkpointer(Arc::new(checkpoints));
    }
    writeln!(
        out,
        "== role `{role_id}` on its schedules · model: {llm_label} · memory backend: {} · retrieval: {}",
        setup.backend, setup.retrieval
    )?;

    // Stop on Ctrl-C / SIGTERM, after --for, or after --firings.
    let (count_tx, count_rx) = tokio::sync::watch::channel(0_u64);
    let stop = stop_when(count_rx, schedule.firings, schedule.run_for);

    let now = chrono::Utc::now();
    for (role, trigger) in runtime.scheduled_triggers() {
        let line = trigger_line(&trigger, now)
            .map_err(|e| CliError::Usage(format!("role `{role}`: {e}")))?;
        writeln!(out, "   {} {line}", trigger.id)?;
    }
    out.flush()?;

    let mut seen = 0_u64;
    let mut failed_output = None;
    let report = runtime
        .serve(stop, |fired| {
            seen += 1;
            let _ = count_tx.send(seen);
            if let Err(e) = writeln!(out, "{}", describe(fired)).and_then(|()| out.flush()) {
                failed_output.get_or_insert(e);
            }
        })
        .await?;
    if let Some(e) = failed_output {
        return Err(e.into());
    }
    writeln!(
        out,
        "== stopped: {} schedule(s), {} firing(s): {} completed, {} failed, {} skipped, {} resumed",
        report.schedules,
        report.fired,
        report.completed,
        report.failed,
        report.skipped,
        report.resumed,
    )?;
    if report.schedules == 0 {
        writeln!(
            out,
            "   the role has no cron or interval triggers (add one: `triggers: [{{ id: hourly, type: interval, schedule: 1h }}]`)"
        )?;
    }
    Ok(())
}

/// One line for a firing: when it was due, what ran, how it ended.
pub fn describe(fired: &Fired) -> String {
    let firing = &fired.firing;
    let lag = (firing.fired_at - firing.scheduled_at).num_milliseconds();
    let what = target_of(&firing.trigger);
    let how = match &fired.outcome {
        Outcome::Completed(state) => format!(
            "completed in {} ms (state keys: {})",
            fired.took.as_millis(),
            state
                .as_map()
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Outcome::Reflected {
            episodes,
            created,
            strengthened,
            published,
            beliefs,
        } => {
            let mut line = format!(
                "reflected over {episodes} episode(s): {created} new insight(s), {strengthened} strengthened, {published} published"
            );
            if *beliefs > 0 {
                line.push_str(&format!(", {beliefs} belief(s) proposed"));
            }
            line
        }
        Outcome::Prioritized(p) => format!(
            "prioritized {}: {}",
            p.day,
            p.items
                .iter()
                .map(|i| i.title.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Outcome::Skipped => "skipped: its previous run is still going".to_owned(),
        Outcome::Failed(e) => format!("failed: {e}"),
        _ => "ended".to_owned(),
    };
    let when = if fired.resumed {
        "resumed from its checkpoint".to_owned()
    } else {
        format!("lag {lag} ms")
    };
    format!(
        "[{}] {} {what} ({when}): {how}",
        firing.scheduled_at.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        firing.trigger.id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe::protocols::TriggerKind;

    #[test]
    fn a_reflection_schedule_is_a_period_when_it_parses_as_one() {
        for (spec, kind) in [
            ("6h", TriggerKind::Interval),
            ("1h 30m", TriggerKind::Interval),
            ("0 3 * * *", TriggerKind::Cron),
            ("CRON_TZ=Europe/Berlin 0 3 * * 1-5", TriggerKind::Cron),
        ] {
            assert_eq!(reflection_of(spec).kind, kind, "{spec}");
        }
    }
}
