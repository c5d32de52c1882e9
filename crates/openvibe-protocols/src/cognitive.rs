//! The cognitive loop's contract (seed 001, V4): an event's path through
//! perceive → decide → act → observe → reflect → learn ([`LoopTrace`]),
//! and [`EventInbox`], where events are pushed into a role's loop from any
//! edge (code, HTTP, MCP). The loop itself runs in `openvibe-roles`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Action, CallerContext, Decision, DecisionEvent, StoreError};

/// How the Reflect stage's outcome begins when it reflected after
/// experience rather than on the schedule.
pub const AFTER_EXPERIENCE: &str = "after experience: ";

/// The kind of the event a reflection firing becomes.
pub const REFLECT_EVENT: &str = "openvibe.reflect";

/// The journal id of event `event_id` of `role_id`
/// (`loop/<role>/<event>`): what [`Accepted::run_id`] names.
pub fn loop_run_id(role_id: &str, event_id: &str) -> String {
    format!("loop/{role_id}/{event_id}")
}

/// One stage of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The event was accepted and journaled.
    Perceive,
    /// The decision engine decided.
    Decide,
    /// The action ran, or a proposal was filed.
    Act,
    /// The outcome became an episode.
    Observe,
    /// Reflection (reflection events only).
    Reflect,
    /// Belief proposals (after a reflection).
    Learn,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Self; 6] = [
        Self::Perceive,
        Self::Decide,
        Self::Act,
        Self::Observe,
        Self::Reflect,
        Self::Learn,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Perceive => "perceive",
            Self::Decide => "decide",
            Self::Act => "act",
            Self::Observe => "observe",
            Self::Reflect => "reflect",
            Self::Learn => "learn",
        }
    }

    /// The stage named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The stage after this one (`None` after `learn`).
    pub fn next(self) -> Option<Self> {
        let i = Self::ALL.iter().position(|s| *s == self)?;
        Self::ALL.get(i + 1).copied()
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventSource {
    /// Pushed in code.
    #[default]
    Code,
    /// A trigger firing.
    Trigger,
    /// The HTTP API.
    Http,
    /// An MCP tool.
    Mcp,
    /// A request delegated through a space.
    Space,
}

/// One stage as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StageRecord {
    /// The stage.
    pub stage: Stage,
    /// When it started.
    pub at: DateTime<Utc>,
    /// How long it took, in microseconds.
    pub took_us: u64,
    /// What it did, in a line (`failed: …` when it failed).
    pub outcome: String,
}

/// What the act stage did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActOutcome {
    /// The action ran: its result.
    Ran {
        /// The action.
        action: Action,
        /// The tool's output or the workflow's final state.
        output: Value,
    },
    /// The action ran and failed.
    Failed {
        /// The action.
        action: Action,
        /// Why.
        error: String,
    },
    /// A proposal waits for a person.
    Proposed {
        /// The proposal's id.
        proposal_id: String,
    },
    /// Nothing ran.
    Nothing {
        /// Why.
        reason: String,
    },
}

/// An event's path through the loop: what the journal keeps, and what
/// `openvibe loop trace` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LoopTrace {
    /// The role.
    pub role_id: String,
    /// The event.
    pub event: DecisionEvent,
    /// Where it came from.
    pub source: EventSource,
    /// When it was accepted.
    pub received_at: DateTime<Utc>,
    /// The decision (after `decide`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// What `act` did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<ActOutcome>,
    /// The stages that ran, in order.
    pub stages: Vec<StageRecord>,
    /// The stage to run next (`None`: the event is done).
    pub next: Option<Stage>,
    /// Why the event ended early (a stage failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// When the act stage began running the event's action, journaled
    /// before it runs: a process that resumes the event with this set and
    /// the act stage unrecorded cannot know whether the action ran, so it
    /// records it [interrupted](ACT_INTERRUPTED) and never runs it again
    /// (at most once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act_began: Option<DateTime<Utc>>,
}

/// What the act stage records for an action a process began and never
/// finished (it was killed, or lost its lease): whether it ran is unknown,
/// so it does not run again.
pub const ACT_INTERRUPTED: &str = "interrupted: the process running this action stopped before recording how it went; it is not run again (at most once)";

impl LoopTrace {
    /// A perceived event (its `perceive` stage recorded).
    pub fn perceived(role_id: &str, event: DecisionEvent, source: EventSource) -> Self {
        let now = Utc::now();
        let outcome = format!("accepted from {}", source_name(source));
        Self {
            role_id: role_id.to_owned(),
            event,
            source,
            received_at: now,
            decision: None,
            act: None,
            stages: vec![StageRecord {
                stage: Stage::Perceive,
                at: now,
                took_us: 0,
                outcome,
            }],
            next: Some(Stage::Decide),
            failed: None,
            act_began: None,
        }
    }

    /// [`LoopTrace::perceived`], accepted at `at` (an inbox event's push).
    pub fn perceived_at(
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
        at: DateTime<Utc>,
    ) -> Self {
        let mut trace = Self::perceived(role_id, event, source);
        trace.received_at = at;
        if let Some(first) = trace.stages.first_mut() {
            first.at = at;
        }
        trace
    }

    /// Whether the event went through every stage (or ended on a failure).
    pub fn is_done(&self) -> bool {
        self.next.is_none()
    }

    /// Whether `stage` does nothing for this event: decide, act and observe
    /// for a reflection event; learn for any other unless it reflected
    /// after experience. Reflect may run for any event (on the schedule,
    /// or after a setback).
    pub fn is_noop(&self, stage: Stage) -> bool {
        match stage {
            Stage::Decide | Stage::Act | Stage::Observe => self.is_reflection(),
            Stage::Reflect => false,
            Stage::Learn => !self.is_reflection() && !self.reflected_after_experience(),
            Stage::Perceive => false,
        }
    }

    /// Whether the Reflect stage reflected for an event that is not a
    /// reflection event (after a setback, or every so many events): its
    /// outcome begins with [`AFTER_EXPERIENCE`].
    pub fn reflected_after_experience(&self) -> bool {
        self.stages
            .iter()
            .any(|s| s.stage == Stage::Reflect && s.outcome.starts_with(AFTER_EXPERIENCE))
    }

    /// Whether this is a reflection event.
    pub fn is_reflection(&self) -> bool {
        self.event.kind == REFLECT_EVENT
    }

    /// The trace as lines of text (what `openvibe loop trace` prints).
    pub fn render(&self) -> String {
        let mut out = format!(
            "event {} of role {} ({}, from {}, received {})\n",
            self.event.id,
            self.role_id,
            self.event.kind,
            source_name(self.source),
            self.received_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        );
        for s in &self.stages {
            out.push_str(&format!(
                "  {:<8} {:>9.3} ms  {}\n",
                s.stage.as_str(),
                s.took_us as f64 / 1000.0,
                s.outcome
            ));
        }
        match (&self.failed, self.next) {
            (Some(why), _) => out.push_str(&format!("  ended early: {why}\n")),
            (None, Some(next)) => out.push_str(&format!("  unfinished: next stage is {next}\n")),
            (None, None) => out.push_str("  done\n"),
        }
        out
    }
}

fn source_name(source: EventSource) -> &'static str {
    match source {
        EventSource::Code => "code",
        EventSource::Trigger => "a trigger",
        EventSource::Http => "HTTP",
        EventSource::Mcp => "MCP",
        EventSource::Space => "a space",
    }
}

/// What pushing an event into a loop did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Accepted {
    /// The event's journal id (`loop/<role>/<event>`).
    pub run_id: String,
    /// `true` when the event was seen before: it is not run again.
    pub duplicate: bool,
}

impl Accepted {
    /// An accepted event (`duplicate`: seen before).
    pub fn new(run_id: impl Into<String>, duplicate: bool) -> Self {
        Self {
            run_id: run_id.into(),
            duplicate,
        }
    }
}

/// Where events are pushed into the roles' cognitive loops, from any edge:
/// the loop of a process (`openvibe_roles::CognitiveLoop`), or one over the
/// wire. Who may push into a role's loop is the store rule of writing in
/// the role's namespace ([`CallerContext::require_change`]); where the
/// event came from is the edge's to say, never the event's.
#[async_trait]
pub trait EventInbox: Send + Sync {
    /// Accept `event` for `role_id`'s loop: an id seen before is a
    /// duplicate and runs once. A full queue is a transient
    /// [`StoreError::Backend`] (retry later: nothing was recorded); an
    /// unknown role [`StoreError::NotFound`]; a malformed event
    /// [`StoreError::InvalidInput`].
    async fn push(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
    ) -> Result<Accepted, StoreError>;

    /// The path of event `event_id` of `role_id` so far, when it was
    /// accepted.
    async fn trace(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        event_id: &str,
    ) -> Result<Option<LoopTrace>, StoreError>;
}
