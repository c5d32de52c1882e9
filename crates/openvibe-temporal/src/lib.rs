//! Temporal for openvibe: run a [`RoleRuntime`](openvibe_roles::RoleRuntime)'s
//! schedules and activations on [Temporal](https://temporal.io) when one
//! process is not enough.
//!
//! * [`TemporalScheduler`] implements
//!   [`ScheduleProvider`](openvibe_protocols::ScheduleProvider): each timed
//!   trigger (cron with its time zone, interval) becomes a Temporal
//!   schedule whose action starts the workflow `openvibe.activation`.
//!   `RoleRuntime::with_scheduler(..).start()` registers every role's
//!   triggers and its reflection with it.
//! * [`TemporalWorker`] runs those workflows for a runtime's roles: one
//!   activity per graph node (`openvibe.node`), so Temporal records the state
//!   after each node and a run whose worker dies finishes on another worker
//!   without running its finished nodes again (the node that was running
//!   when it died runs again: at-least-once per node); a reflection is one
//!   activity (`openvibe.reflect`: reflect, then publish to the workspace).
//!
//! * The cognitive loop on Temporal: [`TemporalScheduler::push_event`]
//!   starts one `openvibe.loop.event` workflow per event (its id is the
//!   event's, never reused: an event pushed twice runs once), one activity
//!   per stage (`openvibe.loop.stage`): a worker killed mid-stage leaves the
//!   event to another, which runs no finished stage again.
//!
//! The workflow's own code only sequences activities: every decision (the
//! next node, the step limit) is made in an activity and replayed from the
//! history, so the workflow is deterministic whatever the graph does.
//!
//! A worker needs the same roles (same ids, operators and workflows) as the
//! process that registered the schedules; the activation itself names only
//! the role and the trigger.

mod error;
mod scheduler;
mod worker;
mod workflow;

use std::time::Duration;

pub use error::Error;
pub use scheduler::{TemporalScheduler, loop_workflow_id};
pub use worker::{TemporalWorker, proposal_workflow_id};
pub use workflow::NodeRan;
pub use workflow::{
    ACTIVATION_WORKFLOW, Activation, ActivationOutcome, LOOP_WORKFLOW, LoopEventRun,
    PROPOSAL_WORKFLOW, ProposalRun,
};

/// Where the Temporal server is and how openvibe uses it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TemporalConfig {
    /// The frontend's gRPC URL (`http://127.0.0.1:7233`).
    pub url: String,
    /// The Temporal namespace (`default`).
    pub namespace: String,
    /// The task queue the workflows and activities run on (`openvibe`).
    pub task_queue: String,
    /// How long one node may run before Temporal considers its worker gone
    /// and retries it elsewhere (default 5 minutes; an LLM call with tools
    /// can be slow).
    pub node_timeout: Duration,
    /// How many times a failing node is tried (default 3).
    pub node_attempts: u32,
}

impl TemporalConfig {
    /// The server at `url`, namespace `default`, task queue `openvibe`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            namespace: "default".into(),
            task_queue: "openvibe".into(),
            node_timeout: Duration::from_secs(300),
            node_attempts: 3,
        }
    }

    /// Use another namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Use another task queue.
    #[must_use]
    pub fn task_queue(mut self, task_queue: impl Into<String>) -> Self {
        self.task_queue = task_queue.into();
        self
    }

    /// How long one node may run (at least a second).
    #[must_use]
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = timeout.max(Duration::from_secs(1));
        self
    }

    /// How many times a failing node is tried (at least once).
    #[must_use]
    pub fn node_attempts(mut self, attempts: u32) -> Self {
        self.node_attempts = attempts.max(1);
        self
    }
}

/// A client of the configured server and namespace.
pub(crate) async fn connect(config: &TemporalConfig) -> Result<temporalio_client::Client, Error> {
    use std::str::FromStr as _;
    let url = url::Url::from_str(&config.url).map_err(|e| {
        Error::Config(format!(
            "`{}` is not a URL such as http://127.0.0.1:7233: {e}",
            config.url
        ))
    })?;
    let options = temporalio_client::ConnectionOptions::new(url)
        .identity(format!("openvibe@{}", std::process::id()))
        .build();
    let connection = temporalio_client::Connection::connect(options)
        .await
        .map_err(|e| Error::Connect {
            url: config.url.clone(),
            message: e.to_string(),
        })?;
    temporalio_client::Client::new(
        connection,
        temporalio_client::ClientOptions::new(config.namespace.clone()).build(),
    )
    .map_err(|e| Error::Connect {
        url: config.url.clone(),
        message: e.to_string(),
    })
}

/// The README's example, compiled as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
