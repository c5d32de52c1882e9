//! The workflow `openvibe.activation` and its activities: the only code
//! Temporal runs.

use std::sync::Arc;
use std::time::Duration;

use openvibe_operators::END;
use openvibe_protocols::{Priorities, Proposal, State, TriggerConfig};
use openvibe_roles::{
    Learning, LoopTrace, PRIORITIZE_WORKFLOW, REFLECTION_WORKFLOW, ReflectionSummary, RoleRuntime,
    Stage,
};
use serde::{Deserialize, Serialize};
use temporalio_common::RetryPolicy;
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{ActivityOptions, ApplicationFailure, WorkflowContext, WorkflowResult};

/// What a worker ran: one node (or a reflection) of an activation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NodeRan {
    /// The role it ran as.
    pub role_id: String,
    /// The operator (empty for a reflection).
    pub operator_id: String,
    /// The workflow (`openvibe.reflect` for a reflection).
    pub workflow_id: String,
    /// The node that ran (`reflect` for a reflection).
    pub node: String,
    /// The node that comes next (`__end__` when the run is finished).
    pub next: String,
    /// Which attempt it was (1 the first time; more after a failure or a
    /// worker that died mid-node).
    pub attempt: u32,
    /// How long it took.
    pub took: Duration,
}

pub(crate) type Observer = Arc<dyn Fn(&NodeRan) + Send + Sync>;

/// The Temporal workflow type every activation runs as.
pub const ACTIVATION_WORKFLOW: &str = "openvibe.activation";

/// What a schedule (or a direct start) asks a worker to run: a role's
/// trigger, with the node settings fixed when it was registered, so a
/// replay decides exactly as the first run did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Activation {
    /// The schedule that started it (empty when started by hand).
    pub schedule_id: String,
    /// The role to run as.
    pub role_id: String,
    /// The trigger: its operator, workflow and input.
    pub trigger: TriggerConfig,
    /// How long one node may run, in milliseconds.
    pub node_timeout_ms: u64,
    /// How many times a failing node is tried.
    pub node_attempts: u32,
}

impl Activation {
    /// `role_id`'s `trigger` with the node settings of `config`.
    pub fn new(
        schedule_id: impl Into<String>,
        role_id: impl Into<String>,
        trigger: TriggerConfig,
        config: &crate::TemporalConfig,
    ) -> Self {
        Self {
            schedule_id: schedule_id.into(),
            role_id: role_id.into(),
            trigger,
            node_timeout_ms: u64::try_from(config.node_timeout.as_millis()).unwrap_or(u64::MAX),
            node_attempts: config.node_attempts,
        }
    }
}

/// How an activation ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ActivationOutcome {
    /// The workflow reached its end.
    Completed {
        /// The final state.
        state: State,
        /// How many nodes ran (each once, as Temporal recorded them).
        steps: u32,
    },
    /// The role reflected and published.
    Reflected(ReflectionSummary),
    /// The role set its priorities of the day.
    Prioritized(Box<Priorities>),
}

/// One node to run: the activity's input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NodeInput {
    role_id: String,
    operator_id: String,
    workflow_id: String,
    /// `None`: the workflow's entry point.
    node: Option<String>,
    state: State,
}

/// The reflection to run: the activity's input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReflectInput {
    role_id: String,
    trigger: TriggerConfig,
}

/// The prioritization to run: the activity's input. It carries when its
/// workflow started (the schedule's firing), so that an activity retried
/// after midnight still sets the priorities of the day it fired on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PrioritizeInput {
    role_id: String,
    /// When the firing's workflow started (`None` in the histories of
    /// workflows started before it was carried: the activity's own day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fired_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl PrioritizeInput {
    /// The day the priorities are for: the firing's, else `now`'s.
    fn day(&self, now: chrono::DateTime<chrono::Utc>) -> chrono::NaiveDate {
        self.fired_at.unwrap_or(now).date_naive()
    }
}

/// Runs [`Activation`]s: sequences one activity per node.
#[workflow]
#[derive(Default)]
pub(crate) struct ActivationWorkflow;

#[workflow_methods]
impl ActivationWorkflow {
    #[run(name = "openvibe.activation")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        activation: Activation,
    ) -> WorkflowResult<ActivationOutcome> {
        let options = ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
            activation.node_timeout_ms.max(1000),
        ))
        .retry_policy(
            RetryPolicy::builder()
                .maximum_attempts(activation.node_attempts.max(1))
                .build(),
        )
        .build();
        if activation.trigger.workflow == REFLECTION_WORKFLOW {
            let summary = ctx
                .execute_activity(
                    RoleActivities::reflect,
                    ReflectInput {
                        role_id: activation.role_id.clone(),
                        trigger: activation.trigger.clone(),
                    },
                    options,
                )
                .await?;
            return Ok(ActivationOutcome::Reflected(summary));
        }
        if activation.trigger.workflow == PRIORITIZE_WORKFLOW {
            let priorities = ctx
                .execute_activity(
                    RoleActivities::prioritize,
                    PrioritizeInput {
                        role_id: activation.role_id.clone(),
                        // The workflow's start, recorded in its history:
                        // the same on every replay and retry.
                        fired_at: ctx
                            .info()
                            .start_time()
                            .or_else(|| ctx.workflow_time())
                            .map(chrono::DateTime::<chrono::Utc>::from),
                    },
                    options,
                )
                .await?;
            return Ok(ActivationOutcome::Prioritized(Box::new(priorities)));
        }
        let (operator_id, mut state) = openvibe_roles::trigger_target(&activation.trigger)
            .map(|(operator, state)| (operator.to_owned(), state))
            .map_err(|e| ApplicationFailure::non_retryable(e.to_string()))?;
        let mut node = None;
        let mut steps = 0u32;
        loop {
            let step = ctx
                .execute_activity(
                    RoleActivities::run_node,
                    NodeInput {
                        role_id: activation.role_id.clone(),
                        operator_id: operator_id.clone(),
                        workflow_id: activation.trigger.workflow.clone(),
                        node,
                        state,
                    },
                    options.clone(),
                )
                .await?;
            steps += 1;
            if step.next == END {
                return Ok(ActivationOutcome::Completed {
                    state: step.state,
                    steps,
                });
            }
            if steps >= step.max_steps {
                return Err(ApplicationFailure::non_retryable(format!(
                    "workflow `{}` ran {steps} nodes without reaching its end (its limit); \
                     the next would have been `{}`",
                    activation.trigger.workflow, step.next
                ))
                .into());
            }
            node = Some(step.next);
            state = step.state;
        }
    }
}

/// The Temporal workflow type an approved proposal runs as.
pub const PROPOSAL_WORKFLOW: &str = "openvibe.proposal";

/// An approved proposal to run: the workflow's and its activity's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProposalRun {
    /// The role that filed it (and runs it).
    pub role_id: String,
    /// The proposal.
    pub proposal_id: String,
    /// How long its action may run, in milliseconds.
    pub timeout_ms: u64,
}

impl ProposalRun {
    /// Run `proposal_id` of `role_id` with `config`'s node timeout.
    pub fn new(
        role_id: impl Into<String>,
        proposal_id: impl Into<String>,
        config: &crate::TemporalConfig,
    ) -> Self {
        Self {
            role_id: role_id.into(),
            proposal_id: proposal_id.into(),
            timeout_ms: u64::try_from(config.node_timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// Runs one approved proposal as one activity (claim, run, finish):
/// started once per proposal (its workflow id is the proposal's), retried
/// by Temporal when a worker dies before the claim; after a claim a retry
/// records the proposal interrupted instead of running it again.
#[workflow]
#[derive(Default)]
pub(crate) struct ProposalWorkflow;

#[workflow_methods]
impl ProposalWorkflow {
    #[run(name = "openvibe.proposal")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        run: ProposalRun,
    ) -> WorkflowResult<Proposal> {
        let options = ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
            run.timeout_ms.max(1000),
        ))
        .retry_policy(RetryPolicy::builder().maximum_attempts(5).build())
        .build();
        Ok(ctx
            .execute_activity(ProposalActivities::run_proposal, run, options)
            .await?)
    }
}

/// The Temporal workflow type an event of the cognitive loop runs as.
pub const LOOP_WORKFLOW: &str = "openvibe.loop.event";

/// An event of the cognitive loop to run: the workflow's input (its
/// perceived trace, and what the learn stage proposes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoopEventRun {
    /// The event as perceived (its `perceive` stage recorded).
    pub trace: LoopTrace,
    /// What the learn stage proposes ([`Learning::to_value`]).
    pub learning: serde_json::Value,
    /// How long one stage may run, in milliseconds.
    pub stage_timeout_ms: u64,
    /// How many times a failing stage is tried.
    pub stage_attempts: u32,
}

impl LoopEventRun {
    /// Run `trace`'s event with `config`'s node timeout and attempts.
    pub fn new(trace: LoopTrace, learning: &Learning, config: &crate::TemporalConfig) -> Self {
        Self {
            trace,
            learning: learning.to_value(),
            stage_timeout_ms: u64::try_from(config.node_timeout.as_millis()).unwrap_or(u64::MAX),
            stage_attempts: config.node_attempts,
        }
    }
}

/// One stage to run: the activity's input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StageInput {
    trace: LoopTrace,
    learning: serde_json::Value,
}

/// Runs one event of the cognitive loop: one activity per stage, so a
/// worker that dies mid-stage leaves the event to another worker, which
/// runs that stage again and no finished one.
#[workflow]
#[derive(Default)]
pub(crate) struct LoopEventWorkflow;

#[workflow_methods]
impl LoopEventWorkflow {
    #[run(name = "openvibe.loop.event")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        run: LoopEventRun,
    ) -> WorkflowResult<LoopTrace> {
        let options = ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
            run.stage_timeout_ms.max(1000),
        ))
        .retry_policy(
            RetryPolicy::builder()
                .maximum_attempts(run.stage_attempts.max(1))
                .build(),
        )
        .build();
        let mut trace = run.trace;
        // Each stage moves `next` on; six stages at most.
        for _ in 0..Stage::ALL.len() {
            if trace.next.is_none() {
                break;
            }
            trace = ctx
                .execute_activity(
                    LoopActivities::run_stage,
                    StageInput {
                        trace,
                        learning: run.learning.clone(),
                    },
                    options.clone(),
                )
                .await?;
        }
        Ok(trace)
    }
}

/// The loop's stage activity: it runs the roles of the worker's runtime.
pub(crate) struct LoopActivities {
    pub(crate) runtime: Arc<RoleRuntime>,
}

#[activities]
impl LoopActivities {
    /// Run the event's next stage (`RoleRuntime::try_loop_stage`); a
    /// failure is retried as Temporal's policy says.
    #[activity(name = "openvibe.loop.stage")]
    pub(crate) async fn run_stage(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StageInput,
    ) -> Result<LoopTrace, ActivityError> {
        let mut trace = input.trace;
        let Some(stage) = trace.next else {
            return Ok(trace);
        };
        self.runtime
            .try_loop_stage(&mut trace, stage, &Learning::from_value(&input.learning))
            .await
            .map_err(activity_error)?;
        Ok(trace)
    }
}

/// The activities: they run the roles of the worker's runtime.
pub(crate) struct RoleActivities {
    pub(crate) runtime: Arc<RoleRuntime>,
    pub(crate) observer: Option<Observer>,
}

#[activities]
impl RoleActivities {
    /// Run one node of a role's workflow and say which comes next.
    #[activity(name = "openvibe.node")]
    pub(crate) async fn run_node(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: NodeInput,
    ) -> Result<openvibe_operators::Step, ActivityError> {
        let started = std::time::Instant::now();
        let attempt = ctx.info().attempt;
        let step = self
            .runtime
            .activate_step(
                &input.role_id,
                &input.operator_id,
                &input.workflow_id,
                input.node.as_deref(),
                input.state,
            )
            .await
            .map_err(activity_error)?;
        if let Some(observe) = &self.observer {
            observe(&NodeRan {
                role_id: input.role_id,
                operator_id: input.operator_id,
                workflow_id: input.workflow_id,
                node: step.node.clone(),
                next: step.next.clone(),
                attempt,
                took: started.elapsed(),
            });
        }
        Ok(step)
    }

    /// Ask the model for the role's priorities of the day and store them.
    #[activity(name = "openvibe.prioritize")]
    pub(crate) async fn prioritize(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: PrioritizeInput,
    ) -> Result<Priorities, ActivityError> {
        let started = std::time::Instant::now();
        let attempt = ctx.info().attempt;
        let priorities = self
            .runtime
            .prioritize_role(&input.role_id, input.day(chrono::Utc::now()))
            .await
            .map_err(activity_error)?;
        if let Some(observe) = &self.observer {
            observe(&NodeRan {
                role_id: input.role_id,
                operator_id: String::new(),
                workflow_id: PRIORITIZE_WORKFLOW.into(),
                node: "prioritize".into(),
                next: END.into(),
                attempt,
                took: started.elapsed(),
            });
        }
        Ok(priorities)
    }

    /// Reflect on the role's episodes and publish what is confident enough.
    #[activity(name = "openvibe.reflect")]
    pub(crate) async fn reflect(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ReflectInput,
    ) -> Result<ReflectionSummary, ActivityError> {
        let started = std::time::Instant::now();
        let attempt = ctx.info().attempt;
        let summary = self
            .runtime
            .reflect_and_publish(&input.role_id, &input.trigger)
            .await
            .map_err(activity_error)?;
        if let Some(observe) = &self.observer {
            observe(&NodeRan {
                role_id: input.role_id,
                operator_id: String::new(),
                workflow_id: REFLECTION_WORKFLOW.into(),
                node: "reflect".into(),
                next: END.into(),
                attempt,
                took: started.elapsed(),
            });
        }
        Ok(summary)
    }
}

#[activities]
impl ProposalActivities {
    /// Claim, run and finish an approved proposal (`Role::run_approved`).
    #[activity(name = "openvibe.proposal.run")]
    pub(crate) async fn run_proposal(
        self: Arc<Self>,
        ctx: ActivityContext,
        run: ProposalRun,
    ) -> Result<Proposal, ActivityError> {
        let role = self
            .runtime
            .get_role(&run.role_id)
            .map_err(activity_error)?;
        match role.run_approved(&run.proposal_id).await {
            Ok(done) => Ok(done),
            // An earlier attempt claimed it and died (or lost its store
            // before the finish): whether the action ran is unknown.
            Err(e) if e.is_conflict() && ctx.info().attempt > 1 => {
                role.mark_interrupted(&run.proposal_id).await.map_err(|e| {
                    ActivityError::application(ApplicationFailure::non_retryable(e.to_string()))
                })
            }
            Err(e) if e.is_conflict() => Err(ActivityError::application(
                ApplicationFailure::non_retryable(e.to_string()),
            )),
            Err(e) => Err(activity_error(e)),
        }
    }
}

/// The proposal activity: it runs the approved proposals of the worker's
/// runtime's roles.
pub(crate) struct ProposalActivities {
    pub(crate) runtime: Arc<RoleRuntime>,
}

/// A role error as Temporal should treat it: a configuration that cannot
/// work (unknown role, operator, workflow, node; a bad trigger) fails the
/// run at once; anything else (an LLM or store failure) is retried.
fn activity_error(error: openvibe_roles::Error) -> ActivityError {
    use openvibe_roles::Error as E;
    let permanent = matches!(
        error,
        E::UnknownRole { .. }
            | E::UnknownOperator { .. }
            | E::Firing { .. }
            | E::NoLlm(_)
            | E::NoProposals { .. }
    ) || matches!(
        &error,
        E::Operator(
            openvibe_operators::Error::UnknownWorkflow { .. }
                | openvibe_operators::Error::UnknownNode { .. }
                | openvibe_operators::Error::InvalidRoute { .. }
                | openvibe_operators::Error::NoOutgoingEdge(_)
        )
    );
    let message = error.to_string();
    if permanent {
        ActivityError::application(ApplicationFailure::non_retryable(message))
    } else {
        ActivityError::application(ApplicationFailure::new(message))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A prioritization fired just before midnight and retried after it
    /// sets the priorities of the day it fired on; an input of an older
    /// history (no firing time) the day it runs.
    #[test]
    fn prioritization_keeps_the_day_it_fired_on() {
        let fired: chrono::DateTime<chrono::Utc> = "2026-11-28T23:59:30Z".parse().unwrap();
        let retried: chrono::DateTime<chrono::Utc> = "2026-11-29T00:03:00Z".parse().unwrap();
        let input = PrioritizeInput {
            role_id: "cro".into(),
            fired_at: Some(fired),
        };
        assert_eq!(input.day(retried).to_string(), "2026-11-28");
        let carried: PrioritizeInput =
            serde_json::from_value(serde_json::to_value(&input).unwrap()).unwrap();
        assert_eq!(carried.fired_at, Some(fired));
        let older: PrioritizeInput =
            serde_json::from_value(serde_json::json!({"role_id": "cro"})).unwrap();
        assert_eq!(older.day(retried).to_string(), "2026-11-29");
    }
}
