//! The error type of this crate.

use std::path::PathBuf;

use openvibe_protocols::ScheduleError;

/// What can go wrong with roles and the role runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No role with this id.
    #[error("unknown role `{role}` (known: {})", known.join(", "))]
    UnknownRole {
        /// What was asked for.
        role: String,
        /// What exists.
        known: Vec<String>,
    },
    /// The role has no operator with this id.
    #[error("role `{role}` has no operator `{operator}` (it has: {})", known.join(", "))]
    UnknownOperator {
        /// The role.
        role: String,
        /// What was asked for.
        operator: String,
        /// What it has.
        known: Vec<String>,
    },
    /// Two roles with the same id were given to a runtime.
    #[error("role `{0}` is registered twice")]
    DuplicateRole(String),
    /// The role has no LLM (build it through a `RoleRuntime` or call `with_llm`).
    #[error("role `{0}` has no LLM; build it through a RoleRuntime or call with_llm")]
    NoLlm(String),
    /// `start` was called without a scheduler.
    #[error(
        "no scheduler configured: pass one with RoleRuntime::with_scheduler, or use activate() for manual runs"
    )]
    NoScheduler,
    /// `serve` needs a scheduler that runs its firings in this process (an
    /// `InProcessScheduler`), and takes them once.
    #[error(
        "the scheduler hands no firings to this process: it runs activations elsewhere (a worker), or serve() already took them"
    )]
    NoFirings,
    /// A firing could not be turned into an activation.
    #[error("trigger `{trigger}` cannot run: {message}")]
    Firing {
        /// The trigger.
        trigger: String,
        /// Why.
        message: String,
    },
    /// The soul file could not be loaded.
    #[error("soul of role `{role}` ({}): {message}", path.display())]
    Soul {
        /// The role.
        role: String,
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
        /// The error it came from (reading the file, parsing its YAML).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// An operator or workflow failed.
    #[error(transparent)]
    Operator(#[from] openvibe_operators::Error),
    /// A memory operation failed.
    #[error(transparent)]
    Memory(#[from] openvibe_memory::MemoryError),
    /// An event the decision engine cannot decide on: nothing was decided.
    #[error("invalid event: `{field}` {message}")]
    InvalidEvent {
        /// The field at fault (`domain`, `action.input`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A forbidden action: it never runs.
    #[error("action `{action}` is forbidden for role `{role}`")]
    Forbidden {
        /// The role.
        role: String,
        /// The action.
        action: String,
    },
    /// An action that needs approval, run without one.
    #[error("action `{action}` needs approval for role `{role}` and was not approved")]
    NotApproved {
        /// The role.
        role: String,
        /// The action.
        action: String,
    },
    /// The role has no action tool of this name.
    #[error("role `{role}` has no action tool `{tool}` (it has: {})", known.join(", "))]
    UnknownTool {
        /// The role.
        role: String,
        /// What was asked for.
        tool: String,
        /// What it has.
        known: Vec<String>,
    },
    /// An action ran and failed.
    #[error("action `{action}` of role `{role}` failed: {message}")]
    Action {
        /// The role.
        role: String,
        /// The action.
        action: String,
        /// What went wrong.
        message: String,
    },
    /// The confidence assessor failed: nothing was decided.
    #[error("confidence assessor `{assessor}` failed: {message}")]
    Assessor {
        /// Its name.
        assessor: String,
        /// What it said.
        message: String,
    },
    /// The role has no proposal store ([`Role::with_proposals`](crate::Role::with_proposals)).
    #[error(
        "role `{role}` has no proposal store: give it one with Role::with_proposals (a RoleRuntime with stores does)"
    )]
    NoProposals {
        /// The role.
        role: String,
    },
    /// A proposal store refused or failed (a conflict when another
    /// approver or runtime won: [`Error::is_conflict`]).
    #[error("proposal `{id}`: {source}")]
    Proposal {
        /// The proposal.
        id: String,
        /// The store's error.
        #[source]
        source: openvibe_protocols::StoreError,
    },
    /// The role has no goal store ([`Role::with_goals`](crate::Role::with_goals)).
    #[error(
        "role `{role}` has no goal store: give it one with Role::with_goals (a RoleRuntime with stores does)"
    )]
    NoGoals {
        /// The role.
        role: String,
    },
    /// The goal store refused or failed.
    #[error("goal `{id}`: {source}")]
    Goal {
        /// The goal (or role, or report) concerned.
        id: String,
        /// The store's error.
        #[source]
        source: openvibe_protocols::StoreError,
    },
    /// The model's decomposition or prioritization is not what was asked
    /// for (not a JSON list of items, or items that fail their checks):
    /// nothing was stored.
    #[error("the model's {what} of `{of}` is malformed: {message}")]
    MalformedPlan {
        /// `decomposition` or `prioritization`.
        what: &'static str,
        /// The goal or role.
        of: String,
        /// What is wrong.
        message: String,
    },
    /// A role's LLM call (outside a workflow node) failed.
    #[error("the LLM call of role `{role}` failed: {source}")]
    Llm {
        /// The role.
        role: String,
        /// The provider's error.
        #[source]
        source: openvibe_protocols::LlmError,
    },
    /// The role's loop queue is full: the event was refused and nothing was
    /// journaled (push it again later).
    #[error(
        "the loop of role `{role}` has {capacity} events waiting: this one was refused (nothing recorded); push it again later"
    )]
    LoopFull {
        /// The role.
        role: String,
        /// The queue's capacity.
        capacity: usize,
    },
    /// This process's lease on an event of the durable inbox lapsed and
    /// another process took it over (or finished it): this one stops
    /// working it, and the other resumes it from the journal.
    #[error(
        "event `{event}` of role `{role}`: `{holder}` lost its lease ({source}); the process that took it over works it"
    )]
    LeaseLost {
        /// The role.
        role: String,
        /// The event's id.
        event: String,
        /// This process.
        holder: String,
        /// What the inbox said.
        #[source]
        source: Box<openvibe_protocols::StoreError>,
    },
    /// What needs the loop's journal in this process, asked of a loop that
    /// works a durable inbox (its events run in whichever process leases
    /// them).
    #[error(
        "{what}: this loop works a durable inbox, where events run in whichever loop process leases them; push the event instead"
    )]
    NotLocal {
        /// What was asked.
        what: String,
    },
    /// The role's loop is not running any more (or runs elsewhere).
    #[error("the loop of role `{role}` has stopped or is already running")]
    LoopStopped {
        /// The role.
        role: String,
    },
    /// The scheduler refused a trigger.
    #[error("scheduling role `{role}`: {source}")]
    Schedule {
        /// The role.
        role: String,
        /// The scheduler's error.
        #[source]
        source: ScheduleError,
    },
    /// The role has no space to delegate in ([`Role::with_spaces`](crate::Role::with_spaces)
    /// and [`Role::in_space`](crate::Role::in_space)).
    #[error(
        "role `{role}` has no space: give it a space store and a space (Role::with_spaces, Role::in_space; a RoleRuntime with stores and RoleRuntime::with_space does)"
    )]
    NoSpace {
        /// The role.
        role: String,
    },
    /// The space store refused or failed.
    #[error("the space of role `{role}`: {source}")]
    Space {
        /// The role.
        role: String,
        /// The store's error.
        #[source]
        source: openvibe_protocols::StoreError,
    },
    /// No final answer to a delegated request came in time.
    #[error("role `{role}` waited {waited:?} for an answer to request `{request}`: none came")]
    DelegationTimeout {
        /// The asking role.
        role: String,
        /// The request's id.
        request: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// The owner refused a delegated request.
    #[error("the owner of `{domain}` refused `{task}` asked by role `{role}`: {reason}")]
    DelegationRefused {
        /// The asking role.
        role: String,
        /// The domain asked.
        domain: String,
        /// The task.
        task: String,
        /// The owner's reason.
        reason: String,
    },
    /// The owner tried a delegated request and it failed.
    #[error("`{task}` delegated by role `{role}` to the owner of `{domain}` failed: {reason}")]
    DelegationFailed {
        /// The asking role.
        role: String,
        /// The domain asked.
        domain: String,
        /// The task.
        task: String,
        /// How it failed.
        reason: String,
    },
}
