//! What can go wrong talking to Temporal.

/// An error of the Temporal integration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot be used.
    #[error("invalid Temporal configuration: {0}")]
    Config(String),
    /// The server could not be reached.
    #[error("cannot connect to Temporal at {url}: {message}")]
    Connect {
        /// The URL tried.
        url: String,
        /// Why it failed.
        message: String,
    },
    /// The worker could not be set up or stopped with an error.
    #[error("Temporal worker: {0}")]
    Worker(String),
    /// Starting or awaiting a workflow failed.
    #[error("workflow `{workflow_id}`: {message}")]
    Workflow {
        /// The workflow id.
        workflow_id: String,
        /// What happened.
        message: String,
    },
    /// A schedule operation failed.
    #[error(transparent)]
    Schedule(#[from] openvibe_protocols::ScheduleError),
}
