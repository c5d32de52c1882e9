//! Decisions (seed 001, V3): what a role does with an event, and why.
//!
//! A [`Decision`] records the four steps of a role's evaluation of a
//! [`DecisionEvent`], each with its outcome and reason: does the role own
//! the event's **domain**, what does its **authority** allow for the
//! requested action, how **confident** is it (a score with the evidence
//! that produced it), and how much **impact** does the action have (with the
//! rule that fired). The steps lead to an [`Outcome`]: `Act`, `Propose`,
//! `Escalate` or `Refuse`. These are plain types; the decision engine that
//! fills them lives in the roles layer (`openvibe_roles::DecisionEngine`).

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a role may perform an action (seed 001, V2: `role.can_act`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Authority {
    /// On its own.
    Autonomous,
    /// Only when a person approves.
    NeedsApproval,
    /// Never.
    Forbidden,
}

impl Authority {
    /// The snake_case name (`"needs_approval"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Autonomous => "autonomous",
            Self::NeedsApproval => "needs_approval",
            Self::Forbidden => "forbidden",
        }
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Three ordered levels: of impact, and of confidence bands.
macro_rules! level {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            /// Low.
            Low,
            /// Medium.
            Medium,
            /// High.
            High,
        }

        impl $name {
            /// Every level, lowest first.
            pub const ALL: [Self; 3] = [Self::Low, Self::Medium, Self::High];

            /// The snake_case name.
            pub fn as_str(self) -> &'static str {
                match self {
                    Self::Low => "low",
                    Self::Medium => "medium",
                    Self::High => "high",
                }
            }

            /// Its place in [`Self::ALL`] (0, 1, 2).
            pub fn index(self) -> usize {
                self as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    "low" => Ok(Self::Low),
                    "medium" => Ok(Self::Medium),
                    "high" => Ok(Self::High),
                    other => Err(format!("`{other}` is not low, medium or high")),
                }
            }
        }
    };
}

level!(
    /// How much an action matters (the role's impact rules decide).
    Impact
);
level!(
    /// A confidence score's band (the decision matrix's thresholds decide).
    ConfidenceBand
);

/// What a role does with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Run the action now, on the role's own authority.
    Act,
    /// Ask a person to approve the action (a proposal).
    Propose,
    /// Hand the event to a person, who chooses what to do (a proposal
    /// with no action until they choose one).
    Escalate,
    /// Never run it (a forbidden action); recorded and audited.
    Refuse,
}

impl Outcome {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Act => "act",
            Self::Propose => "propose",
            Self::Escalate => "escalate",
            Self::Refuse => "refuse",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Outcome {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "act" => Ok(Self::Act),
            "propose" => Ok(Self::Propose),
            "escalate" => Ok(Self::Escalate),
            "refuse" => Ok(Self::Refuse),
            other => Err(format!("`{other}` is not act, propose, escalate or refuse")),
        }
    }
}

/// What running an action means: a tool call, or an operator's workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActionTarget {
    /// Call one of the role's tools with the action's input.
    Tool {
        /// The tool's name.
        tool: String,
    },
    /// Run a workflow of one of the role's operators, the action's input
    /// its initial state.
    Workflow {
        /// The operator's id.
        operator: String,
        /// The workflow's name.
        workflow: String,
    },
    /// Ask the role that owns `domain` in the role's space to do it (the
    /// action's name the task, its input the request's): the owner decides
    /// with its own engine and authority, and its answer is the result.
    Delegate {
        /// The domain whose owner is asked.
        domain: String,
    },
}

/// An action a role may take: its authority name, what runs, and with what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// The action's name in the role's authority (`give_discount`).
    pub action: String,
    /// What runs.
    pub target: ActionTarget,
    /// The tool's input, or the workflow's initial state (a JSON object).
    #[serde(default = "empty_object")]
    pub input: Value,
}

impl Action {
    /// `action` as a call of `tool` with `input`.
    pub fn tool(action: impl Into<String>, tool: impl Into<String>, input: Value) -> Self {
        Self {
            action: action.into(),
            target: ActionTarget::Tool { tool: tool.into() },
            input,
        }
    }

    /// `action` delegated to the owner of `domain` with `input`.
    pub fn delegate(action: impl Into<String>, domain: impl Into<String>, input: Value) -> Self {
        Self {
            action: action.into(),
            target: ActionTarget::Delegate {
                domain: domain.into(),
            },
            input,
        }
    }

    /// `action` as a run of `operator`'s `workflow` from the state `input`.
    pub fn workflow(
        action: impl Into<String>,
        operator: impl Into<String>,
        workflow: impl Into<String>,
        input: Value,
    ) -> Self {
        Self {
            action: action.into(),
            target: ActionTarget::Workflow {
                operator: operator.into(),
                workflow: workflow.into(),
            },
            input,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Something that happened, for a role to decide on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DecisionEvent {
    /// Its id where it came from (a decision is made once per event id).
    pub id: String,
    /// What kind of event it is (`discount.requested`).
    pub kind: String,
    /// The domain it belongs to (`revenue`).
    pub domain: String,
    /// What it is about, in words: the text the role's memory is searched
    /// with for evidence.
    #[serde(default)]
    pub summary: String,
    /// The entity it is about (`acme_corp`), when one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub entity: String,
    /// Its data (a JSON object): what the impact rules read.
    #[serde(default = "empty_object")]
    pub data: Value,
    /// The action it asks for, when it asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
}

impl DecisionEvent {
    /// An event of `kind` in `domain`, with no data and no action.
    pub fn new(id: impl Into<String>, kind: impl Into<String>, domain: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: kind.into(),
            domain: domain.into(),
            summary: String::new(),
            entity: String::new(),
            data: empty_object(),
            action: None,
        }
    }

    /// Set the summary.
    #[must_use]
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }

    /// Set the entity.
    #[must_use]
    pub fn entity(mut self, entity: impl Into<String>) -> Self {
        self.entity = entity.into();
        self
    }

    /// Set the data (a JSON object).
    #[must_use]
    pub fn data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    /// Set the action it asks for.
    #[must_use]
    pub fn action(mut self, action: Action) -> Self {
        self.action = Some(action);
        self
    }
}

/// Step 1: does the role own the event's domain?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DomainStep {
    /// Whether it does.
    pub owned: bool,
    /// Why (`the role owns revenue, customer`).
    pub reason: String,
}

/// Step 2: what the role's authority allows for the requested action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AuthorityStep {
    /// The authority over the requested action (`None`: the event asks for
    /// no action).
    pub authority: Option<Authority>,
    /// Why.
    pub reason: String,
}

/// Where a piece of evidence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// An L4 belief of the role (a person approved it).
    Belief,
    /// An L3 insight of the role.
    Insight,
    /// An L2 episode of the role.
    Episode,
}

/// One record that moved the confidence score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// Insight or episode.
    pub kind: EvidenceKind,
    /// Its id.
    pub id: String,
    /// How relevant it is to the event, `0..=1`: its similarity to the
    /// event (by the role's hybrid retrieval, its domain a boost) over its
    /// rank among the evidence of its kind (1 for the first, 1/2 for the
    /// second, …).
    pub relevance: f64,
    /// What it says: a belief's or an insight's confidence, an episode's
    /// success (1) or failure (0).
    pub value: f64,
    /// Its text, shortened.
    pub summary: String,
    /// A belief marked as a constraint: an action it bears on is proposed
    /// to a person rather than taken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constraint: bool,
    /// Why it was chosen: the retrievers that found it (rank and score)
    /// and its domain.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// A confidence assessor's change to the computed score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConfidenceAdjustment {
    /// Who adjusted it (the assessor's name, a model id).
    pub by: String,
    /// By how much (bounded; the score stays in `0..=1`).
    pub delta: f64,
    /// Why.
    pub reason: String,
}

/// Step 3: how confident the role is, and on what evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConfidenceStep {
    /// The score the decision used, `0..=1`.
    pub score: f64,
    /// The deterministic score, before any adjustment.
    pub computed: f64,
    /// An assessor's adjustment, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjustment: Option<ConfidenceAdjustment>,
    /// The score's band under the role's matrix thresholds.
    pub band: ConfidenceBand,
    /// The insights and episodes that produced it, most relevant first.
    pub evidence: Vec<Evidence>,
    /// How it was computed, in words.
    pub reason: String,
}

/// Step 4: how much the action matters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ImpactStep {
    /// The level.
    pub impact: Impact,
    /// The rule that fired (as written in the role's configuration), or
    /// `None` when none did and the default applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why.
    pub reason: String,
}

/// A role's decision on an event: the four steps and what follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Decision {
    /// Its id (unique per role and event).
    pub id: String,
    /// The role that decided.
    pub role_id: String,
    /// The event decided on.
    pub event: DecisionEvent,
    /// Step 1.
    pub domain: DomainStep,
    /// Step 2.
    pub authority: AuthorityStep,
    /// Step 3.
    pub confidence: ConfidenceStep,
    /// Step 4.
    pub impact: ImpactStep,
    /// What the role does.
    pub outcome: Outcome,
    /// Why that outcome, in words.
    pub reason: String,
    /// When it was decided.
    pub decided_at: DateTime<Utc>,
}

impl Decision {
    /// The four steps in order, one line each (what a person reviewing it
    /// reads first).
    pub fn explain(&self) -> Vec<String> {
        let authority = match self.authority.authority {
            Some(a) => a.as_str(),
            None => "no action",
        };
        vec![
            format!(
                "domain: {} ({})",
                if self.domain.owned {
                    "owned"
                } else {
                    "not owned"
                },
                self.domain.reason
            ),
            format!("authority: {authority} ({})", self.authority.reason),
            format!(
                "confidence: {:.2} {} ({})",
                self.confidence.score, self.confidence.band, self.confidence.reason
            ),
            format!("impact: {} ({})", self.impact.impact, self.impact.reason),
            format!("outcome: {} ({})", self.outcome, self.reason),
        ]
    }
}

/// Confidence × impact → outcome, and the score thresholds of the bands.
///
/// In a configuration file every part is optional (what is left out keeps
/// its default):
///
/// ```yaml
/// thresholds: { medium: 0.5, high: 0.8 }
/// outcomes:
///   high:   { low: act, medium: act, high: propose }
///   medium: { low: act, medium: propose, high: escalate }
///   low:    { low: propose, medium: escalate, high: escalate }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "MatrixSpec", into = "MatrixSpec")]
pub struct DecisionMatrix {
    /// A score at or above this is medium confidence (default 0.5).
    pub medium: f64,
    /// A score at or above this is high confidence (default 0.8).
    pub high: f64,
    /// The outcomes per confidence band, lowest band first; within a band,
    /// per impact, lowest first.
    pub cells: [[Outcome; 3]; 3],
}

/// [`DecisionMatrix`] as a file writes it: every part optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixSpec {
    #[serde(default)]
    thresholds: ThresholdsSpec,
    #[serde(default)]
    outcomes: OutcomesSpec,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThresholdsSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    medium: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    high: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutcomesSpec {
    #[serde(default)]
    low: RowSpec,
    #[serde(default)]
    medium: RowSpec,
    #[serde(default)]
    high: RowSpec,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    low: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    medium: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    high: Option<Outcome>,
}

impl RowSpec {
    fn cells(&self) -> [Option<Outcome>; 3] {
        [self.low, self.medium, self.high]
    }

    fn of(row: [Outcome; 3]) -> Self {
        let [low, medium, high] = row.map(Some);
        Self { low, medium, high }
    }
}

impl TryFrom<MatrixSpec> for DecisionMatrix {
    type Error = String;

    /// The matrix a file describes, checked ([`DecisionMatrix::check`]).
    fn try_from(spec: MatrixSpec) -> Result<Self, String> {
        let mut m = Self::default();
        m.medium = spec.thresholds.medium.unwrap_or(m.medium);
        m.high = spec.thresholds.high.unwrap_or(m.high);
        let rows = [
            &spec.outcomes.low,
            &spec.outcomes.medium,
            &spec.outcomes.high,
        ];
        for (band, row) in rows.into_iter().enumerate() {
            for (impact, cell) in row.cells().into_iter().enumerate() {
                if let (Some(outcome), Some(slot)) =
                    (cell, m.cells.get_mut(band).and_then(|r| r.get_mut(impact)))
                {
                    *slot = outcome;
                }
            }
        }
        m.check()?;
        Ok(m)
    }
}

impl From<DecisionMatrix> for MatrixSpec {
    fn from(m: DecisionMatrix) -> Self {
        let [low, medium, high] = m.cells.map(RowSpec::of);
        Self {
            thresholds: ThresholdsSpec {
                medium: Some(m.medium),
                high: Some(m.high),
            },
            outcomes: OutcomesSpec { low, medium, high },
        }
    }
}

impl Default for DecisionMatrix {
    /// The default matrix:
    ///
    /// | confidence \ impact | low | medium | high |
    /// |---|---|---|---|
    /// | high (≥ 0.8) | act | act | propose |
    /// | medium (≥ 0.5) | act | propose | escalate |
    /// | low | propose | escalate | escalate |
    fn default() -> Self {
        Self {
            medium: Self::default_medium(),
            high: Self::default_high(),
            cells: Self::default_cells(),
        }
    }
}

impl DecisionMatrix {
    fn default_medium() -> f64 {
        0.5
    }

    fn default_high() -> f64 {
        0.8
    }

    fn default_cells() -> [[Outcome; 3]; 3] {
        use Outcome::{Act, Escalate, Propose};
        [
            [Propose, Escalate, Escalate],
            [Act, Propose, Escalate],
            [Act, Act, Propose],
        ]
    }

    /// The band of `score`.
    pub fn band(&self, score: f64) -> ConfidenceBand {
        if score >= self.high {
            ConfidenceBand::High
        } else if score >= self.medium {
            ConfidenceBand::Medium
        } else {
            ConfidenceBand::Low
        }
    }

    /// The outcome of a decision in `band` about an action of `impact`.
    pub fn outcome(&self, band: ConfidenceBand, impact: Impact) -> Outcome {
        self.cells[band.index()][impact.index()]
    }

    /// Set the outcome of one cell.
    #[must_use]
    pub fn with(mut self, band: ConfidenceBand, impact: Impact, outcome: Outcome) -> Self {
        self.cells[band.index()][impact.index()] = outcome;
        self
    }

    /// Whether the matrix is sound: thresholds `0 < medium <= high <= 1`,
    /// and no cell `refuse` (refusal comes from authority alone). The
    /// problem, in words, when it is not.
    pub fn check(&self) -> Result<(), String> {
        if !(self.medium > 0.0 && self.medium <= self.high && self.high <= 1.0) {
            return Err(format!(
                "the thresholds must satisfy 0 < medium <= high <= 1 (medium {}, high {})",
                self.medium, self.high
            ));
        }
        for band in ConfidenceBand::ALL {
            for impact in Impact::ALL {
                if self.outcome(band, impact) == Outcome::Refuse {
                    return Err(format!(
                        "the cell {band} confidence × {impact} impact is `refuse`: only a forbidden action is refused"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_matrix_reads_as_documented() {
        let m = DecisionMatrix::default();
        assert_eq!(m.band(0.79), ConfidenceBand::Medium);
        assert_eq!(m.band(0.8), ConfidenceBand::High);
        assert_eq!(m.band(0.49), ConfidenceBand::Low);
        assert_eq!(m.outcome(ConfidenceBand::High, Impact::Low), Outcome::Act);
        assert_eq!(
            m.outcome(ConfidenceBand::High, Impact::High),
            Outcome::Propose
        );
        assert_eq!(
            m.outcome(ConfidenceBand::Medium, Impact::Medium),
            Outcome::Propose
        );
        assert_eq!(
            m.outcome(ConfidenceBand::Low, Impact::Low),
            Outcome::Propose
        );
        assert_eq!(
            m.outcome(ConfidenceBand::Low, Impact::High),
            Outcome::Escalate
        );
        assert!(m.check().is_ok());
        let refusing = m.with(ConfidenceBand::Low, Impact::High, Outcome::Refuse);
        assert!(refusing.check().unwrap_err().contains("refuse"));
    }

    #[test]
    fn a_matrix_reads_from_yaml_like_json() {
        let m: DecisionMatrix = serde_json::from_value(serde_json::json!({
            "thresholds": {"high": 0.9},
            "outcomes": {"high": {"high": "escalate"}, "low": {"low": "escalate"}}
        }))
        .unwrap();
        assert_eq!(m.medium, 0.5);
        assert_eq!(m.band(0.85), ConfidenceBand::Medium);
        assert_eq!(m.outcome(ConfidenceBand::High, Impact::Low), Outcome::Act);
        assert_eq!(
            m.outcome(ConfidenceBand::High, Impact::High),
            Outcome::Escalate
        );
        assert_eq!(
            m.outcome(ConfidenceBand::Low, Impact::Low),
            Outcome::Escalate
        );
        assert_eq!(
            m.outcome(ConfidenceBand::Medium, Impact::Medium),
            Outcome::Propose
        );
        let back: DecisionMatrix =
            serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert!(serde_json::from_value::<DecisionMatrix>(serde_json::json!({"hi": 1})).is_err());
        assert!(
            serde_json::from_value::<DecisionMatrix>(
                serde_json::json!({"outcomes": {"high": {"low": "maybe"}}})
            )
            .is_err()
        );
        let refused = serde_json::from_value::<DecisionMatrix>(
            serde_json::json!({"outcomes": {"low": {"high": "refuse"}}}),
        )
        .unwrap_err();
        assert!(
            refused.to_string().contains("only a forbidden action"),
            "{refused}"
        );
        let inverted = serde_json::from_value::<DecisionMatrix>(
            serde_json::json!({"thresholds": {"medium": 0.9, "high": 0.6}}),
        );
        assert!(inverted.is_err());
    }

    #[test]
    fn an_event_round_trips() {
        let event = DecisionEvent::new("e1", "discount.requested", "revenue")
            .summary("Acme asks for 15% off")
            .data(serde_json::json!({"amount": 1500}))
            .action(Action::tool(
                "give_discount",
                "apply_discount",
                serde_json::json!({"pct": 15}),
            ));
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(serde_json::from_str::<DecisionEvent>(&text).unwrap(), event);
        assert!(
            text.contains(r#""target":{"kind":"tool","tool":"apply_discount"}"#),
            "{text}"
        );
    }
}
