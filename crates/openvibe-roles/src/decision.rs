//! The decision engine (seed 001, V3): `Domain → Authority → Confidence →
//! Impact`, then the matrix. Deterministic without a model; an optional
//! [`ConfidenceAssessor`] may only adjust the confidence, by a bounded
//! amount that the decision records.
//!
//! **Confidence** is computed from the role's memory: the
//! [`EVIDENCE_BELIEFS`] active beliefs, [`EVIDENCE_INSIGHTS`] active
//! insights and [`EVIDENCE_EPISODES`] episodes most relevant to its summary,
//! by meaning ([`MemoryAssembler::recall_evidence`]: hybrid retrieval, of
//! any domain, the event's own a boost). The k-th most relevant record
//! (k = 0, 1, …) of each kind, of similarity `s`, has relevance
//! `r = s / (k + 1)`. An insight
//! of confidence `c` supports the action by `c·r`; an episode supports it
//! by `λ·r` when it went well and contradicts it by `λ·r` when it went
//! against what was decided ([`failed`]: it failed, its result was a
//! setback such as `{"status": "stalled"}`, or it records a person's
//! rejection), with `λ =` [`EPISODE_WEIGHT`]. A run that went against what
//! was decided on a belief or insight this decision cites contradicts it
//! too, by `λ·r` of that evidence, relevant or not: outcomes weigh before
//! any belief changes (a run was decided on the beliefs and insights its
//! decision cited at a relevance of at least [`BASIS_RELEVANCE`]). Then
//!
//! ```text
//! support       = 1 − Π (1 − c·r) over insights · Π (1 − λ·r) over good episodes
//! contradiction = 1 − Π (1 − λ·r) over adverse episodes
//! confidence    = support · (1 − contradiction)
//! ```
//!
//! so no evidence is no confidence (0), one strong insight (0.9, most
//! relevant) alone is 0.9, ten good episodes alone about 0.74, and failures
//! pull the score down whatever supports it.
//!
//! **Beliefs** (L4, approved by a person) relevant to the question, of any
//! domain, support it like insights of their confidence (ranked among
//! themselves). A belief marked as a constraint caps an `Act` at
//! `Propose`, naming the belief.
//!
//! **A person's rejection stands** ([`StandingRejection`]): when the latest
//! verdict on the role's proposals of an action is a rejection and the
//! rejection's episode is among the evidence (the event is like the one
//! rejected), an `Act` on that action is capped at `Propose`, citing it,
//! until a person approves a proposal of that action again.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use openvibe_memory::{Evidence as Recalled, EvidenceQuery, MemoryAssembler};
use openvibe_protocols::{
    Authority, AuthorityStep, ConfidenceAdjustment, ConfidenceStep, Decision, DecisionEvent,
    DecisionMatrix, DomainStep, Episode, Evidence, EvidenceKind, Impact, Outcome, truncate_chars,
};
use serde_json::Value;

use crate::{AuthorityConfig, Error, ImpactRules};

/// How many beliefs are weighed for a decision.
pub const EVIDENCE_BELIEFS: usize = 5;
/// How many insights are weighed for a decision.
pub const EVIDENCE_INSIGHTS: usize = 5;
/// How many episodes are weighed for a decision.
pub const EVIDENCE_EPISODES: usize = 10;
/// How much one episode (at relevance 1) counts for or against an action.
pub const EPISODE_WEIGHT: f64 = 0.4;
/// A belief or insight a decision cited at less than this relevance did
/// not carry it: a run that goes against the decision is not held against
/// that record next time (only what the decision rested on is).
pub const BASIS_RELEVANCE: f64 = 0.2;
/// The most an assessor may move the confidence, up or down.
pub const MAX_ADJUSTMENT: f64 = 0.2;
/// The domain that makes a role own every domain.
pub const ANY_DOMAIN: &str = "*";

/// An optional second opinion on the confidence (a model, a policy):
/// it sees the event and the computed step, and may move the score by at
/// most [`MAX_ADJUSTMENT`].
#[async_trait]
pub trait ConfidenceAssessor: Send + Sync {
    /// Its name in the decision record (`model:sonnet`, `policy:finance`).
    fn name(&self) -> &str;

    /// The change to the score and why, or `None` to leave it.
    async fn assess(
        &self,
        event: &DecisionEvent,
        computed: &ConfidenceStep,
    ) -> Result<Option<(f64, String)>, String>;
}

/// Decides what a role does with an event. Built by
/// [`Role::decision_engine`](crate::Role::decision_engine) from the role's
/// identity, or by hand.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use openvibe_protocols::{Action, DecisionEvent, Impact, Outcome};
/// use openvibe_roles::{AuthorityConfig, DecisionEngine, ImpactRules};
/// use serde_json::json;
///
/// let engine = DecisionEngine::new("cro")
///     .domains(["revenue"])
///     .authority(AuthorityConfig::new().autonomous(["give_discount"]).forbidden(["sign_contract"]))
///     .impact_rules(ImpactRules::new().rule("amount > 10000", Impact::High)?);
/// let ask = |id: &str, action: &str, amount: u32| {
///     DecisionEvent::new(id, "discount.requested", "revenue")
///         .data(json!({"amount": amount}))
///         .action(Action::tool(action, "apply_discount", json!({})))
/// };
/// // No memory: no evidence, low confidence; low impact → propose.
/// assert_eq!(engine.evaluate(&ask("e1", "give_discount", 500)).await?.outcome, Outcome::Propose);
/// assert_eq!(engine.evaluate(&ask("e2", "give_discount", 50_000)).await?.outcome, Outcome::Escalate);
/// assert_eq!(engine.evaluate(&ask("e3", "sign_contract", 5)).await?.outcome, Outcome::Refuse);
/// let elsewhere = DecisionEvent::new("e4", "brief.requested", "marketing");
/// assert_eq!(engine.evaluate(&elsewhere).await?.outcome, Outcome::Escalate);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct DecisionEngine {
    role_id: String,
    domains: Vec<String>,
    authority: Option<AuthorityConfig>,
    impact: ImpactRules,
    matrix: DecisionMatrix,
    memory: Option<MemoryAssembler>,
    assessor: Option<Arc<dyn ConfidenceAssessor>>,
    rejections: std::collections::BTreeMap<String, StandingRejection>,
}

/// A person's rejection of a proposal of the role that still stands: the
/// latest verdict on proposals of its action. A decision to act on an event
/// like it (its episode among the evidence) is proposed instead, citing
/// it, until a person approves a proposal of that action again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingRejection {
    /// The rejected proposal.
    pub proposal_id: String,
    /// The episode that records the rejection.
    pub episode_id: String,
    /// Who rejected it.
    pub by: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Debug for DecisionEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionEngine")
            .field("role_id", &self.role_id)
            .field("domains", &self.domains)
            .field("authority", &self.authority)
            .field("impact", &self.impact)
            .field("matrix", &self.matrix)
            .field("memory", &self.memory.is_some())
            .field(
                "assessor",
                &self.assessor.as_ref().map(|a| a.name().to_owned()),
            )
            .field("rejections", &self.rejections)
            .finish()
    }
}

impl DecisionEngine {
    /// An engine for `role_id` owning no domain, with every action
    /// autonomous, the default impact (`low`) and matrix, and no memory.
    pub fn new(role_id: impl Into<String>) -> Self {
        Self {
            role_id: role_id.into(),
            domains: Vec::new(),
            authority: None,
            impact: ImpactRules::new(),
            matrix: DecisionMatrix::default(),
            memory: None,
            assessor: None,
            rejections: std::collections::BTreeMap::new(),
        }
    }

    /// The people's rejections that stand, by action (see
    /// [`StandingRejection`]).
    #[must_use]
    pub fn standing_rejections(
        mut self,
        rejections: std::collections::BTreeMap<String, StandingRejection>,
    ) -> Self {
        self.rejections = rejections;
        self
    }

    /// The domains the role owns ([`ANY_DOMAIN`] for all).
    #[must_use]
    pub fn domains<I: IntoIterator<Item = S>, S: Into<String>>(mut self, domains: I) -> Self {
        self.domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// The role's authority (none: every action autonomous).
    #[must_use]
    pub fn authority(mut self, authority: AuthorityConfig) -> Self {
        self.authority = Some(authority);
        self
    }

    /// The impact rules.
    #[must_use]
    pub fn impact_rules(mut self, rules: ImpactRules) -> Self {
        self.impact = rules;
        self
    }

    /// The matrix (default: [`DecisionMatrix::default`]).
    #[must_use]
    pub fn matrix(mut self, matrix: DecisionMatrix) -> Self {
        self.matrix = matrix;
        self
    }

    /// The memory evidence comes from (the role's assembler: its agent
    /// memory within its clearance, with its embedder).
    #[must_use]
    pub fn memory(mut self, assembler: MemoryAssembler) -> Self {
        self.memory = Some(assembler);
        self
    }

    /// A second opinion on the confidence.
    #[must_use]
    pub fn assessor(mut self, assessor: Arc<dyn ConfidenceAssessor>) -> Self {
        self.assessor = Some(assessor);
        self
    }

    /// The decision on `event`: its four steps, the outcome and why. Bad
    /// input (no id, kind or domain; data that is not an object; an
    /// action with no name) is [`Error::InvalidEvent`].
    pub async fn evaluate(&self, event: &DecisionEvent) -> Result<Decision, Error> {
        self.evaluate_without(event, &[]).await
    }

    /// The decision `event` would get if the role's memory held none of the
    /// records `without` (beliefs, insights or episodes, by id): the same
    /// steps over the same candidates less those, the next most relevant
    /// taking their places. A what-if that writes nothing (what a belief
    /// changed: `without` = its id).
    pub async fn evaluate_without(
        &self,
        event: &DecisionEvent,
        without: &[&str],
    ) -> Result<Decision, Error> {
        check_event(event)?;
        let span = tracing::info_span!(
            "decision",
            role = %self.role_id,
            event = %event.id,
            kind = %event.kind,
            outcome = tracing::field::Empty,
        );
        let _entered = span.enter();
        let domain = self.domain_step(&event.domain);
        let authority = self.authority_step(event);
        let confidence = self.confidence_step(event, without).await?;
        let impact = self.impact.assess(&event.data);
        let (outcome, reason) =
            self.outcome(event, &domain, &authority, &confidence, impact.impact);
        span.record("outcome", outcome.as_str());
        Ok(Decision {
            id: decision_id(&self.role_id, &event.id),
            role_id: self.role_id.clone(),
            event: event.clone(),
            domain,
            authority,
            confidence,
            impact,
            outcome,
            reason,
            decided_at: Utc::now(),
        })
    }

    fn domain_step(&self, domain: &str) -> DomainStep {
        let owned = self.domains.iter().any(|d| d == domain || d == ANY_DOMAIN);
        let reason = if self.domains.is_empty() {
            "the role declares no domains".to_owned()
        } else if owned {
            format!("the role owns `{domain}`")
        } else {
            format!(
                "the role owns {}, not `{domain}`",
                self.domains
                    .iter()
                    .map(|d| format!("`{d}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        DomainStep { owned, reason }
    }

    fn authority_step(&self, event: &DecisionEvent) -> AuthorityStep {
        let Some(action) = &event.action else {
            return AuthorityStep {
                authority: None,
                reason: "the event asks for no action".to_owned(),
            };
        };
        let (authority, reason) = match &self.authority {
            None => (
                Authority::Autonomous,
                "the role has no authority configuration: every action is autonomous".to_owned(),
            ),
            Some(config) => {
                let authority = config.can_act(&action.action);
                let listed = [
                    &config.forbidden,
                    &config.needs_approval,
                    &config.autonomous,
                ]
                .iter()
                .any(|list| list.iter().any(|a| a == &action.action));
                let reason = if listed {
                    format!("`{}` is {authority} for the role", action.action)
                } else {
                    format!(
                        "`{}` is not listed in the role's authority: it needs approval",
                        action.action
                    )
                };
                (authority, reason)
            }
        };
        AuthorityStep {
            authority: Some(authority),
            reason,
        }
    }

    async fn confidence_step(
        &self,
        event: &DecisionEvent,
        without: &[&str],
    ) -> Result<ConfidenceStep, Error> {
        let (recalled, source) = match &self.memory {
            None => (Recalled::default(), "the role has no agent memory"),
            Some(assembler) => {
                let mut text = event.summary.clone();
                for extra in [
                    Some(event.kind.as_str()),
                    event.action.as_ref().map(|a| a.action.as_str()),
                ]
                .into_iter()
                .flatten()
                {
                    text.push(' ');
                    text.push_str(&extra.replace(['.', '_', '-'], " "));
                }
                let query = EvidenceQuery {
                    text,
                    domain: event.domain.clone(),
                    insights: EVIDENCE_INSIGHTS,
                    episodes: EVIDENCE_EPISODES,
                    beliefs: EVIDENCE_BELIEFS,
                    without: without.iter().map(|id| (*id).to_owned()).collect(),
                };
                (assembler.recall_evidence(&query).await?, "")
            }
        };
        let computed = confidence(&recalled);
        let reason = if !source.is_empty() {
            format!("{source}: no evidence, no confidence")
        } else {
            computed.reason
        };
        let mut step = ConfidenceStep {
            score: computed.score,
            computed: computed.score,
            adjustment: None,
            band: self.matrix.band(computed.score),
            evidence: computed.evidence,
            reason,
        };
        if let Some(assessor) = &self.assessor {
            let adjusted =
                assessor
                    .assess(event, &step)
                    .await
                    .map_err(|message| Error::Assessor {
                        assessor: assessor.name().to_owned(),
                        message,
                    })?;
            if let Some((delta, why)) = adjusted {
                let delta = if delta.is_finite() {
                    delta.clamp(-MAX_ADJUSTMENT, MAX_ADJUSTMENT)
                } else {
                    0.0
                };
                step.score = (step.computed + delta).clamp(0.0, 1.0);
                step.band = self.matrix.band(step.score);
                step.adjustment = Some(ConfidenceAdjustment {
                    by: assessor.name().to_owned(),
                    delta: step.score - step.computed,
                    reason: why,
                });
            }
        }
        Ok(step)
    }

    fn outcome(
        &self,
        event: &DecisionEvent,
        domain: &DomainStep,
        authority: &AuthorityStep,
        confidence: &ConfidenceStep,
        impact: Impact,
    ) -> (Outcome, String) {
        let action = event.action.as_ref().map_or("", |a| a.action.as_str());
        if authority.authority == Some(Authority::Forbidden) {
            return (
                Outcome::Refuse,
                format!("`{action}` is forbidden for role `{}`", self.role_id),
            );
        }
        if !domain.owned {
            return (
                Outcome::Escalate,
                format!(
                    "role `{}` does not own `{}`: a person decides",
                    self.role_id, event.domain
                ),
            );
        }
        if event.action.is_none() {
            return (
                Outcome::Escalate,
                "nothing to act on: a person chooses the action".to_owned(),
            );
        }
        let cell = self.matrix.outcome(confidence.band, impact);
        let reason = format!("{} confidence × {impact} impact → {cell}", confidence.band);
        if cell == Outcome::Act && authority.authority == Some(Authority::NeedsApproval) {
            return (
                Outcome::Propose,
                format!("{reason}, capped at propose: `{action}` needs approval"),
            );
        }
        if cell == Outcome::Act
            && let Some(constraint) = confidence.evidence.iter().find(|e| e.constraint)
        {
            return (
                Outcome::Propose,
                format!(
                    "{reason}, capped at propose: belief `{}` is a constraint (\"{}\")",
                    constraint.id, constraint.summary
                ),
            );
        }
        if cell == Outcome::Act
            && let Some(rejected) = self.rejections.get(action)
            && confidence
                .evidence
                .iter()
                .any(|e| e.kind == EvidenceKind::Episode && e.id == rejected.episode_id)
        {
            return (
                Outcome::Propose,
                format!(
                    "{reason}, capped at propose: {} rejected `{action}` on a like event (proposal `{}`: \"{}\"); proposed until a person approves `{action}` again",
                    rejected.by, rejected.proposal_id, rejected.reason
                ),
            );
        }
        (cell, reason)
    }
}

/// A role's decision on an event has one id.
pub fn decision_id(role_id: &str, event_id: &str) -> String {
    let hash = openvibe_protocols::content_hash(&format!("{role_id}\n{event_id}"));
    format!("dec-{}", hash.get(..20).unwrap_or(&hash))
}

/// Check a decision event before anything is decided: an id, a kind and a
/// domain; `data` and an action's input are JSON objects. [`Error::InvalidEvent`]
/// names the field.
pub fn check_event(event: &DecisionEvent) -> Result<(), Error> {
    let invalid = |field: &str, message: &str| {
        Err(Error::InvalidEvent {
            field: field.to_owned(),
            message: message.to_owned(),
        })
    };
    for (field, value) in [
        ("id", &event.id),
        ("kind", &event.kind),
        ("domain", &event.domain),
    ] {
        if value.trim().is_empty() {
            return invalid(field, "must not be empty");
        }
    }
    if !event.data.is_object() {
        return invalid("data", "must be a JSON object");
    }
    if let Some(action) = &event.action {
        if action.action.trim().is_empty() {
            return invalid("action.action", "must not be empty");
        }
        if !action.input.is_object() {
            return invalid("action.input", "must be a JSON object");
        }
        if matches!(&action.target, openvibe_protocols::ActionTarget::Tool { tool } if tool == openvibe_protocols::ADOPT_BELIEF_TOOL)
        {
            return invalid(
                "action.target",
                "`openvibe.adopt_belief` is reserved: beliefs are proposed by the learn step",
            );
        }
    }
    Ok(())
}

/// Whether an episode went against what was decided: a failure, a setback
/// result or a person's rejection ([`openvibe_memory::went_against`]).
pub fn failed(episode: &Episode) -> bool {
    openvibe_memory::went_against(episode)
}

struct Computed {
    score: f64,
    evidence: Vec<Evidence>,
    reason: String,
}

/// The ids of the beliefs and insights the decision behind a run episode
/// cited (its outcome's `decided_on`).
fn decided_on(episode: &Episode) -> Vec<&str> {
    episode
        .outcome
        .get("decided_on")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// An episode as evidence.
fn episode_evidence(episode: &Episode, relevance: f64, value: f64, why: String) -> Evidence {
    Evidence {
        kind: EvidenceKind::Episode,
        id: episode.id.clone(),
        relevance,
        value,
        summary: truncate_chars(
            &format!("{}: {}", episode.action, episode.output_summary),
            200,
        )
        .to_owned(),
        constraint: false,
        why,
    }
}

/// The most relevant belief or insight of `cited` that the decision behind
/// `episode` was decided on: its relevance and id.
fn basis(cited: &[Evidence], episode: &Episode) -> Option<(f64, String)> {
    let decided_on = decided_on(episode);
    cited
        .iter()
        .filter(|e| decided_on.contains(&e.id.as_str()))
        .max_by(|a, b| a.relevance.total_cmp(&b.relevance))
        .map(|e| (e.relevance, e.id.clone()))
}

/// The documented formula (see the module).
fn confidence(recalled: &Recalled) -> Computed {
    let relevance = |k: usize, similarity: f64| similarity.clamp(0.0, 1.0) / (k as f64 + 1.0);
    let mut evidence = Vec::new();
    let mut unsupported = 1.0;
    let mut uncontradicted = 1.0;
    // A belief a person approved weighs like an insight of its confidence,
    // ranked among the beliefs.
    for (k, w) in recalled.beliefs.iter().enumerate() {
        let r = relevance(k, w.similarity);
        let c = w.record.confidence.clamp(0.0, 1.0);
        unsupported *= 1.0 - c * r;
        evidence.push(Evidence {
            kind: EvidenceKind::Belief,
            id: w.record.id.clone(),
            relevance: r,
            value: c,
            summary: truncate_chars(&w.record.statement, 200).to_owned(),
            constraint: w.record.constraint,
            why: w.why.clone(),
        });
    }
    for (k, w) in recalled.insights.iter().enumerate() {
        let r = relevance(k, w.similarity);
        let c = w.record.confidence.clamp(0.0, 1.0);
        unsupported *= 1.0 - c * r;
        evidence.push(Evidence {
            kind: EvidenceKind::Insight,
            id: w.record.id.clone(),
            relevance: r,
            value: c,
            summary: truncate_chars(&w.record.content, 200).to_owned(),
            constraint: false,
            why: w.why.clone(),
        });
    }
    let (mut good, mut bad) = (0, 0);
    let cited = evidence.len();
    for (k, w) in recalled.episodes.iter().enumerate() {
        let episode = &w.record;
        let mut r = relevance(k, w.similarity);
        let failure = failed(episode);
        let mut why = w.why.clone();
        if failure {
            // Decided on evidence cited here: it weighs as that evidence.
            if let Some((basis, id)) = basis(&evidence[..cited], episode) {
                r = r.max(basis);
                why = format!("{why}; a run decided on `{id}` went against it");
            }
            bad += 1;
            uncontradicted *= 1.0 - EPISODE_WEIGHT * r;
        } else {
            good += 1;
            unsupported *= 1.0 - EPISODE_WEIGHT * r;
        }
        evidence.push(episode_evidence(
            episode,
            r,
            if failure { 0.0 } else { 1.0 },
            why,
        ));
    }
    // Runs that went against what was decided on the evidence cited here
    // contradict it, as much as that evidence bears on this decision,
    // relevant to the event or not.
    let mut against = 0;
    for episode in &recalled.adverse {
        if against >= EVIDENCE_EPISODES || evidence.iter().any(|e| e.id == episode.id) {
            continue;
        }
        let Some((r, id)) = basis(&evidence[..cited], episode) else {
            continue;
        };
        let why = format!("a run decided on `{id}` went against it");
        against += 1;
        bad += 1;
        uncontradicted *= 1.0 - EPISODE_WEIGHT * r;
        evidence.push(episode_evidence(episode, r, 0.0, why));
    }
    let support = 1.0 - unsupported;
    let contradiction = 1.0 - uncontradicted;
    let score = (support * (1.0 - contradiction)).clamp(0.0, 1.0);
    let reason = if evidence.is_empty() {
        "no relevant insight or episode in memory: no evidence, no confidence".to_owned()
    } else {
        let beliefs = if recalled.beliefs.is_empty() {
            String::new()
        } else {
            format!("{} belief(s), ", recalled.beliefs.len())
        };
        format!(
            "{beliefs}{} insight(s), {good} good and {bad} adverse episode(s): support {support:.2} × (1 − contradiction {contradiction:.2})",
            recalled.insights.len()
        )
    };
    Computed {
        score,
        evidence,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::{Action, ConfidenceBand, Insight};
    use serde_json::json;

    fn insight(id: &str, confidence: f64) -> Insight {
        Insight::new(id, "cro", "discounts close annual deals", confidence)
    }

    fn episode(id: &str, ok: bool) -> Episode {
        let mut e = Episode {
            id: id.into(),
            agent_id: "cro".into(),
            action: "discount".into(),
            ..Episode::default()
        };
        e.outcome = if ok {
            json!({"status": "ok"})
        } else {
            json!({"status": "failed"})
        };
        e
    }

    fn fully<T>(records: Vec<T>) -> Vec<openvibe_memory::Weighed<T>> {
        records
            .into_iter()
            .map(|record| openvibe_memory::Weighed {
                record,
                similarity: 1.0,
                why: String::new(),
            })
            .collect()
    }

    fn score(insights: Vec<Insight>, episodes: Vec<Episode>) -> f64 {
        confidence(&Recalled {
            beliefs: Vec::new(),
            insights: fully(insights),
            episodes: fully(episodes),
            adverse: Vec::new(),
        })
        .score
    }

    #[test]
    fn evidence_weighs_by_its_similarity() {
        let mut half = fully(vec![insight("i", 0.8)]);
        half[0].similarity = 0.5;
        let computed = confidence(&Recalled {
            beliefs: Vec::new(),
            insights: half,
            episodes: Vec::new(),
            adverse: Vec::new(),
        });
        assert!((computed.score - 0.4).abs() < 1e-9, "{}", computed.score);
        assert!((computed.evidence[0].relevance - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_formula_reads_as_documented() {
        assert_eq!(score(vec![], vec![]), 0.0);
        assert!((score(vec![insight("i", 0.9)], vec![]) - 0.9).abs() < 1e-9);
        let ten_good: Vec<Episode> = (0..10).map(|i| episode(&format!("e{i}"), true)).collect();
        let alone = score(vec![], ten_good.clone());
        assert!((0.73..0.75).contains(&alone), "{alone}");
        let both = score(vec![insight("i", 0.9)], ten_good);
        assert!(both > 0.97, "{both}");
        let ten_bad: Vec<Episode> = (0..10).map(|i| episode(&format!("e{i}"), false)).collect();
        let contradicted = score(vec![insight("i", 0.9)], ten_bad);
        assert!((0.23..0.25).contains(&contradicted), "{contradicted}");
        let one_bad = score(vec![insight("i", 0.9)], vec![episode("e", false)]);
        assert!((one_bad - 0.54).abs() < 1e-9, "{one_bad}");
    }

    #[test]
    fn an_episode_fails_by_tag_status_or_error() {
        let mut e = episode("e", true);
        assert!(!failed(&e));
        e.tags = vec!["failure".into()];
        assert!(failed(&e));
        e.tags.clear();
        e.outcome = json!({"error": "timeout"});
        assert!(failed(&e));
        e.outcome = json!({"error": null});
        assert!(!failed(&e));
    }

    struct Nudge(f64);

    #[async_trait]
    impl ConfidenceAssessor for Nudge {
        fn name(&self) -> &str {
            "nudge"
        }
        async fn assess(
            &self,
            _event: &DecisionEvent,
            _computed: &ConfidenceStep,
        ) -> Result<Option<(f64, String)>, String> {
            Ok(Some((self.0, "a second opinion".into())))
        }
    }

    #[tokio::test]
    async fn an_assessor_moves_the_score_a_bounded_amount_on_record() {
        let event = DecisionEvent::new("e1", "discount.requested", "revenue").action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({}),
        ));
        let engine = DecisionEngine::new("cro")
            .domains(["revenue"])
            .assessor(Arc::new(Nudge(0.9)));
        let decision = engine.evaluate(&event).await.unwrap();
        let c = &decision.confidence;
        assert_eq!(c.computed, 0.0);
        assert!((c.score - MAX_ADJUSTMENT).abs() < 1e-12);
        assert_eq!(c.band, ConfidenceBand::Low);
        let adjustment = c.adjustment.as_ref().unwrap();
        assert_eq!(adjustment.by, "nudge");
        assert!((adjustment.delta - MAX_ADJUSTMENT).abs() < 1e-12);
        let down = DecisionEngine::new("cro")
            .domains(["revenue"])
            .assessor(Arc::new(Nudge(-0.5)));
        let decision = down.evaluate(&event).await.unwrap();
        assert_eq!(decision.confidence.score, 0.0, "the score stays in 0..=1");
        assert_eq!(decision.confidence.adjustment.unwrap().delta, 0.0);
    }

    #[tokio::test]
    async fn bad_events_are_typed_errors() {
        let engine = DecisionEngine::new("cro");
        let cases = [
            (DecisionEvent::new("", "k", "d"), "id"),
            (DecisionEvent::new("e", " ", "d"), "kind"),
            (DecisionEvent::new("e", "k", ""), "domain"),
            (DecisionEvent::new("e", "k", "d").data(json!([1])), "data"),
            (
                DecisionEvent::new("e", "k", "d").action(Action::tool("", "t", json!({}))),
                "action.action",
            ),
            (
                DecisionEvent::new("e", "k", "d").action(Action::tool("a", "t", json!(3))),
                "action.input",
            ),
        ];
        for (event, field) in cases {
            match engine.evaluate(&event).await {
                Err(Error::InvalidEvent { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn decision_ids_are_stable_per_role_and_event() {
        assert_eq!(decision_id("cro", "e1"), decision_id("cro", "e1"));
        assert_ne!(decision_id("cro", "e1"), decision_id("cmo", "e1"));
        assert!(decision_id("cro", "e1").starts_with("dec-"));
    }
}
