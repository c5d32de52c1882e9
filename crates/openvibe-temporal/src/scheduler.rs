//! [`TemporalScheduler`]: a role's timed triggers as Temporal schedules.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use openvibe_protocols::DecisionEvent;
use openvibe_protocols::{
    ScheduleError, ScheduleInfo, ScheduleProvider, TriggerConfig, TriggerKind,
};
use openvibe_roles::{Accepted, EventSource, Learning, LoopTrace};
use openvibe_schedule::{Plan, split_zone};
use temporalio_client::errors::WorkflowStartError;
use temporalio_client::schedules::{
    CreateScheduleOptions, DeleteScheduleOptions, ListSchedulesOptions, ScheduleAction,
    ScheduleDescriptionAction, ScheduleError as TemporalScheduleError, ScheduleOverlapPolicy,
    ScheduleSpec, TriggerScheduleOptions,
};
use temporalio_client::tonic::Code;
use temporalio_client::{
    Client, WorkflowGetResultOptions, WorkflowIdConflictPolicy, WorkflowIdReusePolicy,
    WorkflowStartOptions,
};
use tracing::Instrument;

use crate::workflow::{
    Activation, ActivationOutcome, ActivationWorkflow, LOOP_WORKFLOW, LoopEventRun,
    LoopEventWorkflow,
};

/// The workflow id of an event of the cognitive loop on Temporal.
pub fn loop_workflow_id(role_id: &str, event_id: &str) -> String {
    format!("{LOOP_WORKFLOW}/{role_id}/{event_id}")
}
use crate::{Error, TemporalConfig};

/// Every schedule id this scheduler makes starts with this.
const PREFIX: &str = "openvibe:";

/// Registers a role's timed triggers as Temporal schedules. Each schedule
/// starts the workflow `openvibe.activation` on the configured task queue,
/// where a [`TemporalWorker`](crate::TemporalWorker) runs it. Overlap policy
/// is skip (a firing while the previous run goes on is dropped, as the
/// in-process scheduler does).
///
/// Registering a trigger that is already registered replaces its schedule
/// (so restarting the process that calls `RoleRuntime::start` updates the
/// schedules instead of failing). `list_active` reads the server's list of
/// schedules, which Temporal updates asynchronously: a schedule created a
/// moment ago may be missing from it for a moment.
#[derive(Clone)]
pub struct TemporalScheduler {
    client: Client,
    config: TemporalConfig,
}

impl TemporalScheduler {
    /// Connect to `config`'s server.
    pub async fn connect(config: TemporalConfig) -> Result<Self, Error> {
        Ok(Self {
            client: crate::connect(&config).await?,
            config,
        })
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &TemporalConfig {
        &self.config
    }

    /// The schedule id of `role_id`'s `trigger`: the same in every process.
    pub fn schedule_id(role_id: &str, trigger: &TriggerConfig) -> String {
        format!(
            "{PREFIX}{role_id}:{}:{}",
            trigger.operator_id.as_deref().unwrap_or("-"),
            trigger.id
        )
    }

    /// Fire a schedule now, outside its timetable (as `temporal schedule
    /// trigger` does).
    pub async fn trigger_now(&self, schedule_id: &str) -> Result<(), ScheduleError> {
        self.client
            .get_schedule_handle(schedule_id)
            .trigger(
                ScheduleOverlapPolicy::AllowAll,
                TriggerScheduleOptions::default(),
            )
            .await
            .map_err(|e| schedule_error(schedule_id, e))
    }

    /// Run `role_id`'s `trigger` once, now, as the durable workflow
    /// `run_id`, and wait for its outcome. Starting a `run_id` that is
    /// already running waits for that run instead of starting another.
    pub async fn activate(
        &self,
        run_id: &str,
        role_id: &str,
        trigger: &TriggerConfig,
    ) -> Result<ActivationOutcome, Error> {
        let failed = |message: String| Error::Workflow {
            workflow_id: run_id.to_owned(),
            message,
        };
        let options = WorkflowStartOptions::new(self.config.task_queue.clone(), run_id.to_owned())
            .id_conflict_policy(WorkflowIdConflictPolicy::UseExisting)
            .build();
        let handle = self
            .client
            .start_workflow(
                ActivationWorkflow::run,
                Activation::new("", role_id, trigger.clone(), &self.config),
                options,
            )
            .await
            .map_err(|e| failed(format!("cannot start: {}", with_causes(&e))))?;
        handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| failed(with_causes(&e)))
    }

    /// Push `event` into `role_id`'s cognitive loop on Temporal: one
    /// `openvibe.loop.event` workflow per event, one activity per stage,
    /// run by the workers of the task queue. Its workflow id is
    /// [`loop_workflow_id`], never reused: an event pushed again (while it
    /// runs or after) is a duplicate and runs once. A malformed event is
    /// refused before the server is asked.
    pub async fn push_event(
        &self,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
        learning: &Learning,
    ) -> Result<Accepted, Error> {
        start_loop_event(&self.client, &self.config, role_id, event, source, learning).await
    }

    /// Wait for event `event_id` of `role_id` to go through the loop on
    /// Temporal, and return its trace.
    pub async fn event_trace(&self, role_id: &str, event_id: &str) -> Result<LoopTrace, Error> {
        let workflow_id = loop_workflow_id(role_id, event_id);
        self.client
            .get_workflow_handle::<LoopEventWorkflow>(workflow_id.clone())
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| Error::Workflow {
                workflow_id,
                message: with_causes(&e),
            })
    }

    /// Temporal's timetable for `trigger`, checked first by the in-process
    /// scheduler's rules so a bad trigger is refused before the server is
    /// asked.
    fn spec(trigger: &TriggerConfig) -> Result<ScheduleSpec, ScheduleError> {
        let invalid = |reason: String| ScheduleError::InvalidTrigger {
            trigger_id: trigger.id.clone(),
            reason,
        };
        match Plan::of(trigger, Utc::now())? {
            Plan::Interval { period, .. } => {
                if period < Duration::from_secs(1) || period.subsec_nanos() != 0 {
                    return Err(invalid(format!(
                        "Temporal counts intervals in whole seconds; {period:?} is not one"
                    )));
                }
                Ok(ScheduleSpec::from_interval(period))
            }
            Plan::Cron { zone, .. } => {
                let schedule = trigger.schedule.as_deref().unwrap_or_default();
                let (_, expression) = split_zone(schedule.trim()).map_err(invalid)?;
                Ok(ScheduleSpec::builder()
                    .cron_strings(vec![temporal_cron(expression)])
                    .timezone_name(zone.name())
                    .build())
            }
        }
    }

    async fn create(
        &self,
        schedule_id: &str,
        role_id: &str,
        trigger: &TriggerConfig,
        spec: ScheduleSpec,
    ) -> Result<(), TemporalScheduleError> {
        let options = CreateScheduleOptions::builder()
            .action(ScheduleAction::start_workflow(
                ActivationWorkflow::run,
                Activation::new(schedule_id, role_id, trigger.clone(), &self.config),
                self.config.task_queue.clone(),
                schedule_id,
            ))
            .spec(spec)
            .overlap_policy(ScheduleOverlapPolicy::Skip)
            .note(format!("openvibe: role {role_id}, trigger {}", trigger.id))
            .build();
        self.client
            .create_schedule(schedule_id, options)
            .await
            .map(drop)
    }

    /// The schedule `schedule_id` as this scheduler registered it (`None`
    /// when it is gone or is not one of ours).
    async fn describe(&self, schedule_id: &str) -> Result<Option<ScheduleInfo>, ScheduleError> {
        let description = match self
            .client
            .get_schedule_handle(schedule_id)
            .describe(Default::default())
            .await
        {
            Ok(d) => d,
            Err(TemporalScheduleError::Rpc(status)) if status.code() == Code::NotFound => {
                return Ok(None);
            }
            Err(e) => return Err(schedule_error(schedule_id, e)),
        };
        let ScheduleDescriptionAction::StartWorkflow(action) = description.action() else {
            return Ok(None);
        };
        let Ok(Some(activation)) = action.args::<Activation>().await else {
            return Ok(None);
        };
        let next_run = description
            .future_action_times()
            .into_iter()
            .next()
            .map(DateTime::<Utc>::from);
        Ok(Some(ScheduleInfo {
            schedule_id: schedule_id.to_owned(),
            role_id: activation.role_id,
            trigger: activation.trigger,
            next_run,
        }))
    }
}

#[async_trait]
impl ScheduleProvider for TemporalScheduler {
    async fn schedule(
        &self,
        role_id: &str,
        trigger: &TriggerConfig,
    ) -> Result<String, ScheduleError> {
        if !matches!(trigger.kind, TriggerKind::Cron | TriggerKind::Interval) {
            return Err(ScheduleError::InvalidTrigger {
                trigger_id: trigger.id.clone(),
                reason: format!(
                    "a {:?} trigger is started by whoever receives it, not by a schedule",
                    trigger.kind
                ),
            });
        }
        let spec = Self::spec(trigger)?;
        let schedule_id = Self::schedule_id(role_id, trigger);
        let span = tracing::info_span!("temporal_schedule", schedule = %schedule_id);
        async {
            match self
                .create(&schedule_id, role_id, trigger, spec.clone())
                .await
            {
                Ok(()) => {}
                Err(TemporalScheduleError::Rpc(status)) if status.code() == Code::AlreadyExists => {
                    // Registered before (by an earlier run of this process):
                    // replace it, the trigger may have changed.
                    tracing::info!("schedule exists; replacing it");
                    self.cancel(&schedule_id).await?;
                    self.create(&schedule_id, role_id, trigger, spec)
                        .await
                        .map_err(|e| schedule_error(&schedule_id, e))?;
                }
                Err(e) => return Err(schedule_error(&schedule_id, e)),
            }
            Ok(schedule_id.clone())
        }
        .instrument(span.clone())
        .await
    }

    async fn cancel(&self, schedule_id: &str) -> Result<(), ScheduleError> {
        self.client
            .get_schedule_handle(schedule_id)
            .delete(DeleteScheduleOptions::default())
            .await
            .map_err(|e| schedule_error(schedule_id, e))
    }

    async fn list_active(&self, role_id: &str) -> Result<Vec<ScheduleInfo>, ScheduleError> {
        let prefix = format!("{PREFIX}{role_id}:");
        let mut ids = Vec::new();
        let mut listed = self.client.list_schedules(ListSchedulesOptions::default());
        while let Some(summary) = listed.next().await {
            let summary = summary.map_err(|e| schedule_error("(list)", e))?;
            if summary.schedule_id().starts_with(&prefix) {
                ids.push(summary.schedule_id().to_owned());
            }
        }
        let mut out = Vec::new();
        for id in ids {
            if let Some(info) = self.describe(&id).await?
                && info.role_id == role_id
            {
                out.push(info);
            }
        }
        out.sort_by(|a, b| a.schedule_id.cmp(&b.schedule_id));
        Ok(out)
    }
}

impl std::fmt::Debug for TemporalScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalScheduler")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// An error with its causes (Temporal nests an activity's failure, which
/// says what went wrong, inside the workflow's), `: `-separated.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Our cron (five fields, or six with seconds first) as Temporal reads it
/// (five fields, or seven: seconds first and a year last).
fn temporal_cron(expression: &str) -> String {
    if expression.split_whitespace().count() == 6 {
        format!("{expression} *")
    } else {
        expression.to_owned()
    }
}

/// A Temporal schedule error as the trait's error.
fn schedule_error(schedule_id: &str, error: TemporalScheduleError) -> ScheduleError {
    match error {
        TemporalScheduleError::Rpc(status) if status.code() == Code::NotFound => {
            ScheduleError::UnknownSchedule(schedule_id.to_owned())
        }
        TemporalScheduleError::Rpc(status) if status.code() == Code::InvalidArgument => {
            ScheduleError::InvalidTrigger {
                trigger_id: schedule_id.to_owned(),
                reason: status.message().to_owned(),
            }
        }
        TemporalScheduleError::MalformedDescription { reason, .. } => {
            ScheduleError::InvalidTrigger {
                trigger_id: schedule_id.to_owned(),
                reason,
            }
        }
        other => ScheduleError::Backend(format!("Temporal: {other}")),
    }
}

/// Start `event`'s `openvibe.loop.event` workflow for `role_id` on
/// `config`'s task queue (what [`TemporalScheduler::push_event`] and a
/// worker's space feed do): its workflow id is [`loop_workflow_id`], never
/// reused, so an event started again is a duplicate and runs once. A
/// malformed event is refused before the server is asked.
pub(crate) async fn start_loop_event(
    client: &Client,
    config: &TemporalConfig,
    role_id: &str,
    event: DecisionEvent,
    source: EventSource,
    learning: &Learning,
) -> Result<Accepted, Error> {
    openvibe_roles::check_loop_event(&event).map_err(|e| Error::Workflow {
        workflow_id: loop_workflow_id(role_id, &event.id),
        message: e.to_string(),
    })?;
    let workflow_id = loop_workflow_id(role_id, &event.id);
    let options = WorkflowStartOptions::new(config.task_queue.clone(), workflow_id.clone())
        .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
        .id_conflict_policy(WorkflowIdConflictPolicy::Fail)
        .build();
    let run = LoopEventRun::new(
        LoopTrace::perceived(role_id, event, source),
        learning,
        config,
    );
    match client
        .start_workflow(LoopEventWorkflow::run, run, options)
        .await
    {
        Ok(_) => Ok(Accepted::new(workflow_id, false)),
        Err(WorkflowStartError::AlreadyStarted { .. }) => Ok(Accepted::new(workflow_id, true)),
        Err(e) => Err(Error::Workflow {
            workflow_id,
            message: format!("cannot start: {}", with_causes(&e)),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_field_cron_gets_a_year_for_temporal() {
        assert_eq!(temporal_cron("0 0 9 * * MON"), "0 0 9 * * MON *");
        assert_eq!(temporal_cron("0 9 * * *"), "0 9 * * *");
        assert_eq!(temporal_cron("@daily"), "@daily");
    }

    #[test]
    fn intervals_must_be_whole_seconds_and_on_demand_is_no_schedule() {
        let trigger = |kind, schedule: &str| TriggerConfig {
            id: "t".into(),
            kind,
            schedule: Some(schedule.into()),
            workflow: "w".into(),
            operator_id: None,
            input: serde_json::Value::Null,
        };
        assert!(TemporalScheduler::spec(&trigger(TriggerKind::Interval, "5m")).is_ok());
        assert!(matches!(
            TemporalScheduler::spec(&trigger(TriggerKind::Interval, "1500ms")),
            Err(ScheduleError::InvalidTrigger { .. })
        ));
        assert!(matches!(
            TemporalScheduler::spec(&trigger(TriggerKind::Cron, "not cron")),
            Err(ScheduleError::InvalidTrigger { .. })
        ));
        let berlin = TemporalScheduler::spec(&trigger(
            TriggerKind::Cron,
            "CRON_TZ=Europe/Berlin 0 9 * * MON-FRI",
        ))
        .unwrap();
        assert_eq!(berlin.timezone_name, "Europe/Berlin");
        assert_eq!(berlin.cron_strings, vec!["0 9 * * MON-FRI".to_owned()]);
    }
}
