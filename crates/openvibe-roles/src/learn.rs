//! The *learn* step (seed 001, V4): after reflection, a role proposes its
//! strongest insights (L3) as beliefs (L4) that wait for a person.
//!
//! Each insight at least [`Learning::min_confidence`] confident with at
//! least [`Learning::min_evidence`] observations becomes a proposed belief
//! citing it, filed as a proposal ([`Belief::to_proposal`]) in the role's
//! inbox: a person with the `approve` right approves it there (or with
//! `openvibe beliefs approve`), which makes the belief active exactly once.
//! An insight already held (a proposed or active belief cites it) is not
//! proposed again; one whose belief was rejected or retired is proposed
//! again only once its evidence grew past what that belief saw.
//!
//! A new belief about the same subject as an active one of its domain (by
//! meaning when the role has an embedder, by words otherwise:
//! [`Role::subjects`]) follows it. With [`Learning::check_with_model`] the
//! role's model says how ([`Relation`]): a contradiction is proposed as
//! superseding it, a refinement as refining it, a duplicate is not proposed
//! (the belief is held already). Without, it is proposed as refining it,
//! and the person approving chooses whether it supersedes
//! ([`Verdict::supersede`](openvibe_protocols::Verdict::supersede)).

use openvibe_memory::{AgentMemory, Relation};
use openvibe_protocols::{
    Belief, BeliefStatus, Insight, InsightQuery, InsightStatus, content_hash,
};
use serde_json::Value;
use tracing::Instrument;

use crate::{Error, Role};

/// The most insights one learn step looks at (most confident first).
pub const LEARN_INSIGHTS: usize = 200;

/// When insights become belief proposals.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Learning {
    /// Insights at least this confident (default 0.8).
    pub min_confidence: f64,
    /// Insights observed at least this often (default 3).
    pub min_evidence: u64,
    /// Ask the role's model how a new belief stands to an active one on
    /// the same subject ([`Relation`]: supersede it, refine it, or hold
    /// nothing new); default off: it is proposed as refining it, and the
    /// person approving chooses whether it supersedes.
    pub check_with_model: bool,
    /// In the cognitive loop, reflect and learn right after an event that
    /// taught something: a failed run, a run whose result was a setback, a
    /// person's rejection seen (default on).
    pub after_setbacks: bool,
    /// In the cognitive loop, also reflect and learn after every this many
    /// events of the role (default off).
    pub every: Option<u32>,
}

impl Default for Learning {
    fn default() -> Self {
        Self {
            min_confidence: 0.8,
            min_evidence: 3,
            check_with_model: false,
            after_setbacks: true,
            every: None,
        }
    }
}

impl Learning {
    /// Propose insights at least this confident.
    #[must_use]
    pub fn min_confidence(mut self, min_confidence: f64) -> Self {
        self.min_confidence = min_confidence;
        self
    }

    /// Propose insights observed at least this often.
    #[must_use]
    pub fn min_evidence(mut self, min_evidence: u64) -> Self {
        self.min_evidence = min_evidence;
        self
    }

    /// Ask the model whether a same-subject belief is contradicted.
    #[must_use]
    pub fn check_with_model(mut self, on: bool) -> Self {
        self.check_with_model = on;
        self
    }

    /// In the loop, reflect right after a setback (or not).
    #[must_use]
    pub fn after_setbacks(mut self, on: bool) -> Self {
        self.after_setbacks = on;
        self
    }

    /// In the loop, also reflect after every `events` events of the role.
    #[must_use]
    pub fn every(mut self, events: u32) -> Self {
        self.every = (events > 0).then_some(events);
        self
    }

    /// The thresholds as a trigger input (`{"min_confidence",
    /// "min_evidence", "check_with_model", "after_setbacks", "every"}`).
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "min_confidence": self.min_confidence,
            "min_evidence": self.min_evidence,
            "check_with_model": self.check_with_model,
            "after_setbacks": self.after_setbacks,
            "every": self.every,
        })
    }

    /// The thresholds of a trigger input ([`Learning::to_value`]); missing
    /// keys keep their defaults.
    pub fn from_value(value: &Value) -> Self {
        let d = Self::default();
        Self {
            min_confidence: value
                .get("min_confidence")
                .and_then(Value::as_f64)
                .unwrap_or(d.min_confidence),
            min_evidence: value
                .get("min_evidence")
                .and_then(Value::as_u64)
                .unwrap_or(d.min_evidence),
            check_with_model: value
                .get("check_with_model")
                .and_then(Value::as_bool)
                .unwrap_or(d.check_with_model),
            after_setbacks: value
                .get("after_setbacks")
                .and_then(Value::as_bool)
                .unwrap_or(d.after_setbacks),
            every: value
                .get("every")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .or(d.every),
        }
    }

    /// Whether `insight` is strong enough to become a belief.
    pub fn eligible(&self, insight: &Insight) -> bool {
        insight.status == InsightStatus::Active
            && insight.confidence >= self.min_confidence
            && insight.evidence_count >= self.min_evidence
    }
}

/// What one learn step did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LearnReport {
    /// Insights strong enough to become beliefs.
    pub eligible: usize,
    /// Beliefs proposed now (each filed as a proposal).
    pub proposed: Vec<Belief>,
    /// Insights already held by a proposed or active belief, or rejected
    /// at their present evidence.
    pub held: usize,
}

/// The id of the belief insight `insight` proposes at its present evidence:
/// the same in every process, so two learn steps propose it once.
pub fn belief_id_of(insight: &Insight) -> String {
    let hash = content_hash(&format!("{}\u{0}{}", insight.id, insight.evidence_count));
    format!("bel_{}", hash.trim_start_matches("fnv1a64:"))
}

impl Role {
    /// The learn step: propose the role's strong insights as beliefs (see
    /// the module documentation), each filed in its proposal store. Needs
    /// agent memory and a proposal store ([`Error::NoProposals`]).
    pub async fn learn(&self, learning: &Learning) -> Result<LearnReport, Error> {
        let span = tracing::info_span!(
            "learn",
            role = %self.role_id(),
            proposed = tracing::field::Empty
        );
        let report = self.learn_inner(learning).instrument(span.clone()).await?;
        span.record("proposed", report.proposed.len());
        Ok(report)
    }

    async fn learn_inner(&self, learning: &Learning) -> Result<LearnReport, Error> {
        let memory = self.agent_memory().ok_or_else(|| Error::Firing {
            trigger: "learn".into(),
            message: format!(
                "role `{}` has no agent memory to learn from",
                self.role_id()
            ),
        })?;
        let proposals = self.proposals().ok_or_else(|| Error::NoProposals {
            role: self.role_id().to_owned(),
        })?;
        let insights = memory
            .recall_insights(
                InsightQuery::new()
                    .min_confidence(learning.min_confidence)
                    .status(InsightStatus::Active)
                    .limit(LEARN_INSIGHTS),
            )
            .await?;
        let beliefs = memory.all_beliefs().await?;
        let ctx = self.proposal_context();
        let mut report = LearnReport::default();
        for insight in insights.iter().filter(|i| learning.eligible(i)) {
            report.eligible += 1;
            let citing: Vec<&Belief> = beliefs
                .iter()
                .filter(|b| b.insight_ids.contains(&insight.id))
                .collect();
            let evidence = u32::try_from(insight.evidence_count).unwrap_or(u32::MAX);
            let pending = citing.iter().find(|b| b.status == BeliefStatus::Proposed);
            if let Some(pending) = pending {
                // Filed again in case a crash came between the belief and
                // its proposal (filing the same proposal twice is a no-op).
                file(proposals.as_ref(), &ctx, pending).await?;
                report.held += 1;
                continue;
            }
            if citing
                .iter()
                .any(|b| b.status == BeliefStatus::Active || b.evidence >= evidence)
            {
                report.held += 1;
                continue;
            }
            let mut belief =
                Belief::new(self.role_id(), insight.content.clone(), insight.confidence)
                    .id(belief_id_of(insight))
                    .domain(insight.domain.clone())
                    .from_insights([insight.id.clone()], evidence);
            match self.follows(memory, learning, &belief).await? {
                Follows::Nothing => {}
                Follows::Held => {
                    report.held += 1;
                    continue;
                }
                Follows::Belief(old, relation) => {
                    // One successor at a time: another waits for its
                    // person first (approving both could not retire one
                    // twice).
                    if beliefs.iter().any(|b| {
                        b.status == BeliefStatus::Proposed && b.predecessor() == Some(&old)
                    }) {
                        report.held += 1;
                        continue;
                    }
                    belief = if relation == Relation::Contradicts {
                        belief.supersedes(old)
                    } else {
                        belief.refines(old)
                    };
                }
            }
            let proposed = memory.propose_belief(belief).await?;
            file(proposals.as_ref(), &ctx, &proposed).await?;
            tracing::info!(
                role = %self.role_id(),
                belief = %proposed.id,
                insight = %insight.id,
                supersedes = ?proposed.supersedes,
                refines = ?proposed.refines,
                "belief proposed"
            );
            report.proposed.push(proposed);
        }
        Ok(report)
    }

    /// The active belief of `belief`'s domain it follows on its subject,
    /// and how (see the module documentation).
    async fn follows(
        &self,
        memory: &AgentMemory,
        learning: &Learning,
        belief: &Belief,
    ) -> Result<Follows, Error> {
        let subjects = self.subjects();
        for old in memory
            .beliefs_about(&belief.statement, &belief.domain, &subjects)
            .await?
        {
            if old.statement == belief.statement {
                return Ok(Follows::Held);
            }
            if !learning.check_with_model {
                return Ok(Follows::Belief(old.id, Relation::Refines));
            }
            let llm = self.llm()?;
            let relation = Relation::ask(
                llm.as_ref(),
                crate::GOAL_MODEL,
                &old.statement,
                &belief.statement,
            )
            .await?;
            match relation {
                Relation::Duplicate => return Ok(Follows::Held),
                Relation::Unrelated => {}
                Relation::Refines | Relation::Contradicts => {
                    return Ok(Follows::Belief(old.id, relation));
                }
            }
        }
        Ok(Follows::Nothing)
    }
}

/// How a new belief follows the role's active ones.
enum Follows {
    /// It follows none: a belief of its own.
    Nothing,
    /// An active one holds it already.
    Held,
    /// It refines or contradicts this active belief.
    Belief(String, Relation),
}

/// File `belief`'s proposal (idempotent: the same proposal again returns
/// the first).
async fn file(
    proposals: &dyn openvibe_protocols::ProposalStore,
    ctx: &openvibe_protocols::CallerContext,
    belief: &Belief,
) -> Result<(), Error> {
    let proposal = belief.to_proposal();
    let id = proposal.id.clone();
    proposals
        .create(ctx, proposal)
        .await
        .map(|_| ())
        .map_err(|source| Error::Proposal { id, source })
}
