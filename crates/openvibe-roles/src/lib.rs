//! # openvibe-roles — layer 3
//!
//! - [`Role`]: identity ([soul](Role::soul)), operators, [authority](AuthorityConfig)
//!   (autonomous / needs approval / forbidden — enforced on tool calls through
//!   an [`ApprovalHook`], deny by default), [clearance](openvibe_memory::ClearanceProfile)
//!   and memory. [`Role::get_operator`] binds an operator to the role: a
//!   [`RoleAwareLlm`] that injects the soul (and V1 memories when the role has
//!   no agent memory), the memory assembler, the episode recorder and the
//!   authority gate.
//! - [`RoleRuntime`]: roles built with the shared LLM, memory, workspace and
//!   scheduler; `activate(role, operator, workflow, input)`; `start()`
//!   registers the timed triggers (and the [`Reflection`] schedule);
//!   [`serve`](RoleRuntime::serve) runs their firings in this process until
//!   told to stop, gracefully.
//! - [`DecisionEngine`]: what a role does with an event (seed 001, V3):
//!   domain, authority, confidence from its memory, impact from its
//!   [`ImpactRules`], then the matrix: act, propose, escalate or refuse
//!   ([`Role::decide`], [`Role::handle`]; `docs/autonomy.md`).
//! - [`GoalSystem`] ([`Role::goals`]): the goals people set in `goals.yaml`
//!   (seed 001, V3), decomposed by the model once per objective version,
//!   prioritized daily ([`Prioritization`]; the role's prompts show them
//!   under `## Priorities`), and moved by the metrics its nodes and tools
//!   report.
//! - [`Learning`] ([`Role::learn`]): after reflection, the role proposes its
//!   strongest insights as beliefs (L4) that wait for a person; approved
//!   ones shape its prompts and decisions (seed 001, V4).
//! - [`CognitiveLoop`]: an event-driven runtime per role, perceive → decide
//!   → act → observe → reflect → learn, journaled stage by stage (resumes
//!   after a kill without repeating a finished stage), with a bounded queue.

mod authority;
mod cognitive;
pub mod config;
mod decision;
mod delegation;
mod error;
mod experience;
mod goal_hooks;
pub mod goals;
mod initiatives;
mod learn;
mod leased;
mod leasing;
mod proposals;
mod pursuit;
mod reflection;
mod role;
mod rules;
mod runtime;
mod serve;
mod soul;
#[cfg(feature = "testing")]
pub mod testing;

pub use authority::{
    ApprovalDecision, ApprovalHook, ApprovalRequest, ApproveAll, Authority, AuthorityConfig,
    DenyAll,
};
pub use cognitive::{
    CheckpointJournal, CognitiveLoop, DEFAULT_LOOP_CAPACITY, InMemoryJournal, LoopConfig,
    LoopJournal, LoopReport, check_loop_event, firing_event, firing_event_id,
    run_id as loop_run_id, trace_of_checkpoint,
};
pub use decision::{
    ANY_DOMAIN, BASIS_RELEVANCE, ConfidenceAssessor, DecisionEngine, EPISODE_WEIGHT,
    EVIDENCE_BELIEFS, EVIDENCE_EPISODES, EVIDENCE_INSIGHTS, MAX_ADJUSTMENT, StandingRejection,
    check_event, decision_id, failed,
};
pub use delegation::{
    DEFAULT_DELEGATION_TIMEOUT, DELEGATION_KEY, Delegation, Origin, feed_requests, request_event,
    request_event_id,
};
pub use error::Error;
pub use experience::{VERDICT_HISTORY, read_result, rejection_episode_id};
pub use goal_hooks::{PRIORITIES_REFRESH, priorities_section};
pub use initiatives::{
    Assignment, INITIATIVE_EVENT, INITIATIVE_KEY, WORK_INITIATIVE_TASK, assignment, domain_owner,
    initiative_event, initiative_event_id, initiative_events, initiative_of, run_update,
};
pub use learn::{LEARN_INSIGHTS, LearnReport, Learning, belief_id_of};
pub use leasing::{
    DEFAULT_LEASE_BATCH, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS, DEFAULT_POLL, Leasing,
};
pub use openvibe_primitives::{DelegateNode, delegation_id};
pub use openvibe_protocols::{
    Accepted, ActOutcome, EventSource, LoopTrace, REFLECT_EVENT, Stage, StageRecord,
};
pub use proposals::{EXPIRE_BATCH, INTERRUPTED, Resumed};
pub use pursuit::{
    BehindPace, DEFAULT_PACE_MARGIN, GOAL_MODEL, GoalSystem, PACE_PERIOD_DAYS, PRIORITIZE_WORKFLOW,
    PRIORITY_EPISODES, PRIORITY_EVENT, PRIORITY_INSIGHTS, Prioritization, TOP_PRIORITIES,
    priority_event, priority_events,
};
pub use reflection::{REFLECTION_WORKFLOW, Reflection};
pub use role::{
    DEFAULT_RECALL_LIMIT, EMBEDDING_CACHE_ENTRIES, Handled, Role, RoleAwareLlm, TERM_CACHE_ENTRIES,
    decision_episode, run_episode_id,
};
pub use rules::{
    Compare, Condition, ImpactRule, ImpactRules, Literal, MAX_CONDITION_CHARS, MAX_CONDITION_DEPTH,
    RuleError, Segment,
};
pub use runtime::{DEFAULT_PROPOSAL_POLL, RoleRuntime};
pub use serve::{Fired, Outcome, ReflectionSummary, ServeReport, trigger_target};
pub use soul::Soul;

/// `docs/autonomy.md`, whose examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/autonomy.md")]
pub struct AutonomyGuide;

/// `docs/spaces.md`, whose example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/spaces.md")]
pub struct SpacesGuide;

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
