//! Schedules: how a role's triggers are registered with an external scheduler.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What starts a workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerKind {
    /// On a cron schedule (`schedule` holds the expression: five fields,
    /// or six with seconds first; `CRON_TZ=Europe/Berlin ` in front names
    /// the time zone it is read in, UTC otherwise).
    Cron,
    /// Every so often (`schedule` holds the period: `30s`, `5m`, `1h 30m`).
    Interval,
    /// On an incoming webhook.
    Webhook,
    /// On an event published by another component.
    Event,
    /// Only when activated by hand.
    OnDemand,
}

/// One trigger of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerConfig {
    /// Trigger id, unique within its operator.
    pub id: String,
    /// What kind of trigger it is.
    #[serde(rename = "type")]
    pub kind: TriggerKind,
    /// Cron expression or event name, depending on `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The workflow it starts.
    pub workflow: String,
    /// The operator owning the workflow, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_id: Option<String>,
    /// Input given to the workflow.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input: Value,
}

/// A registered schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleInfo {
    /// Id assigned by the scheduler.
    pub schedule_id: String,
    /// The role it runs for.
    pub role_id: String,
    /// The trigger it was made from.
    pub trigger: TriggerConfig,
    /// Next planned run, when the scheduler knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run: Option<DateTime<Utc>>,
}

/// What went wrong in a scheduler.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// No schedule with this id.
    #[error("schedule `{0}` does not exist")]
    UnknownSchedule(String),
    /// The trigger cannot be scheduled.
    #[error("trigger `{trigger_id}` cannot be scheduled: {reason}")]
    InvalidTrigger {
        /// The trigger.
        trigger_id: String,
        /// Why.
        reason: String,
    },
    /// The scheduler failed.
    #[error("scheduler error: {0}")]
    Backend(String),
}

impl TriggerKind {
    /// Whether a scheduler starts it by the clock (cron, interval), as
    /// opposed to an event, a webhook or a person.
    pub fn is_timed(self) -> bool {
        matches!(self, Self::Cron | Self::Interval)
    }
}

/// A schedule came due: run its trigger's workflow for its role.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Firing {
    /// The schedule that fired.
    pub schedule_id: String,
    /// The role to run as.
    pub role_id: String,
    /// The trigger (with its operator, workflow and input).
    pub trigger: TriggerConfig,
    /// When it was due.
    pub scheduled_at: DateTime<Utc>,
    /// When the scheduler fired it (`fired_at - scheduled_at` is its lag).
    pub fired_at: DateTime<Utc>,
}

impl Firing {
    /// A firing of `schedule_id` for `role_id`'s `trigger`, due at `scheduled_at`.
    pub fn new(
        schedule_id: impl Into<String>,
        role_id: impl Into<String>,
        trigger: TriggerConfig,
        scheduled_at: DateTime<Utc>,
        fired_at: DateTime<Utc>,
    ) -> Self {
        Self {
            schedule_id: schedule_id.into(),
            role_id: role_id.into(),
            trigger,
            scheduled_at,
            fired_at,
        }
    }
}

/// Where a scheduler hands over the firings it wants run in this process.
#[async_trait]
pub trait FiringSource: Send {
    /// The next firing; `None` once the scheduler has shut down.
    async fn next(&mut self) -> Option<Firing>;
}

/// Registers triggers with a scheduler (Temporal, cron, a queue...).
#[async_trait]
pub trait ScheduleProvider: Send + Sync {
    /// Register `trigger` for `role_id`; returns the schedule id.
    async fn schedule(
        &self,
        role_id: &str,
        trigger: &TriggerConfig,
    ) -> Result<String, ScheduleError>;
    /// Remove a schedule.
    async fn cancel(&self, schedule_id: &str) -> Result<(), ScheduleError>;
    /// Schedules registered for `role_id`.
    async fn list_active(&self, role_id: &str) -> Result<Vec<ScheduleInfo>, ScheduleError>;
    /// The firings this scheduler wants run in this process, once: an
    /// in-process scheduler hands them to whoever runs the activations
    /// (`RoleRuntime::serve`); a scheduler whose activations run elsewhere
    /// (a Temporal worker) has none. Later calls return `None`.
    fn take_firings(&self) -> Option<Box<dyn FiringSource>> {
        None
    }
}
