//! [`GoalSystem`]: what a role does with the goals people set it (seed 001,
//! V3: "goal decomposition (LLM-driven); daily prioritization (LLM:
//! context + OKRs → top 3); progress tracking (episodes roll up to OKR
//! metrics); `role.goals.prioritize(context) -> list[Priority]`").
//!
//! - [`GoalSystem::sync`] puts the role's objectives of `goals.yaml` in the
//!   goal store (a changed objective becomes a new version);
//! - [`GoalSystem::decompose`] asks the model for an objective's
//!   initiatives once per version of it (re-running it on an unchanged
//!   objective calls no model and adds nothing);
//! - [`GoalSystem::prioritize`] asks the model for today's top
//!   [`TOP_PRIORITIES`] given the goals and where they stand, the role's
//!   recent episodes and insights, and stores them: the role's prompts show
//!   them under `## Priorities` ([`RoleAwareLlm`](crate::RoleAwareLlm));
//!   the [`Prioritization`] schedule runs it every day;
//! - a node whose output has a `metric` field reports it
//!   ([`MetricOutput`]): the goal store rolls reports up into progress,
//!   deterministically ([`GoalSystem::progress`]).

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use openvibe_memory::AgentMemory;
use openvibe_protocols::{
    CallerContext, Episode, EpisodeQuery, Goal, GoalProgress, GoalQuery, GoalStore, Initiative,
    InsightQuery, LlmRequest, Member, MetricReport, Priorities, Priority, StoreError,
    TriggerConfig, TriggerKind, json_candidates,
};
use serde_json::Value;
use tracing::Instrument;

use crate::goals::GoalsFile;
use crate::{Error, Role};

/// The workflow name a prioritization trigger carries: a firing of it runs
/// [`GoalSystem::prioritize`] for its role instead of a workflow.
pub const PRIORITIZE_WORKFLOW: &str = "openvibe.prioritize";

/// How many priorities a day holds (the source design's "top 3").
pub const TOP_PRIORITIES: usize = 3;

/// The model decomposition and prioritization ask by default.
pub const GOAL_MODEL: &str = "claude-sonnet";

/// Recent episodes a prioritization shows the model.
pub const PRIORITY_EPISODES: usize = 20;

/// Insights a prioritization shows the model.
pub const PRIORITY_INSIGHTS: usize = 10;

/// How far behind its pace a key result may fall before its people hear
/// of it ([`GoalSystem::check_pace`]): 10 percentage points.
pub const DEFAULT_PACE_MARGIN: f64 = 0.1;

/// How often, in days, a key result behind its pace escalates again.
pub const PACE_PERIOD_DAYS: u32 = 7;

/// A key result behind its pace, and the escalation filed for it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BehindPace {
    /// The goal.
    pub goal_id: String,
    /// The key result.
    pub key_result_id: String,
    /// How far towards its target, `0..=1`.
    pub progress: f64,
    /// The share of its time gone, `0..=1`.
    pub expected: f64,
    /// The escalation (the same one again within its period).
    pub proposal: openvibe_protocols::Proposal,
}

/// The event priority `index` (0-based) of `priorities` becomes in the
/// role's loop: kind `priority`, in the role's first owned domain (else
/// `general`), its id naming the day and rank (the same in every process:
/// a day's priorities are decided once), asking to take the priority's
/// action when it names one (without one a person chooses the action).
pub fn priority_event(
    role: &Role,
    priorities: &openvibe_protocols::Priorities,
    index: usize,
) -> Option<openvibe_protocols::DecisionEvent> {
    let item = priorities.items.get(index)?;
    let domain = role.home_domain();
    let mut summary = format!(
        "Priority {} of {}: {}",
        index + 1,
        priorities.day,
        item.title
    );
    if !item.reason.is_empty() {
        summary.push_str(&format!(" ({})", item.reason));
    }
    let mut event = openvibe_protocols::DecisionEvent::new(
        format!("priority-{}-{}", priorities.day, index + 1),
        PRIORITY_EVENT,
        domain,
    )
    .summary(openvibe_protocols::truncate_chars(&summary, 1_000).to_owned())
    .data(serde_json::json!({
        "rank": index + 1,
        "day": priorities.day,
        "goal_id": item.goal_id,
    }));
    if let Some(action) = &item.action {
        event = event.action(action.clone());
    }
    Some(event)
}

/// The events each of `priorities` becomes in `role`'s loop
/// ([`priority_event`]), most important first.
pub fn priority_events(
    role: &Role,
    priorities: &openvibe_protocols::Priorities,
) -> Vec<openvibe_protocols::DecisionEvent> {
    (0..priorities.items.len())
        .filter_map(|i| priority_event(role, priorities, i))
        .collect()
}

/// The kind of the events a day's priorities become in the loop.
pub const PRIORITY_EVENT: &str = "priority";

/// When roles with goals prioritize their day.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Prioritization {
    /// `Cron` or `Interval`.
    pub kind: TriggerKind,
    /// The cron expression or the period.
    pub schedule: String,
}

impl Prioritization {
    /// Every day at 06:00 UTC.
    pub fn daily() -> Self {
        Self::cron("0 6 * * *")
    }

    /// On a cron expression (`CRON_TZ=Europe/Berlin 0 7 * * 1-5` for a zone).
    pub fn cron(expression: impl Into<String>) -> Self {
        Self {
            kind: TriggerKind::Cron,
            schedule: expression.into(),
        }
    }

    /// Every `period` (`12h`).
    pub fn every(period: impl Into<String>) -> Self {
        Self {
            kind: TriggerKind::Interval,
            schedule: period.into(),
        }
    }

    /// The trigger registered for each role with goals.
    pub fn trigger(&self) -> TriggerConfig {
        TriggerConfig {
            id: "prioritization".into(),
            kind: self.kind,
            schedule: Some(self.schedule.clone()),
            workflow: PRIORITIZE_WORKFLOW.into(),
            operator_id: None,
            input: Value::Object(serde_json::Map::new()),
        }
    }
}

impl Default for Prioritization {
    fn default() -> Self {
        Self::daily()
    }
}

fn goal_error(id: &str) -> impl FnOnce(StoreError) -> Error + '_ {
    move |source| Error::Goal {
        id: id.to_owned(),
        source,
    }
}

/// A role's goals: its objectives in the goal store, their decomposition,
/// its daily priorities and its progress ([`Role::goals`]).
pub struct GoalSystem<'r> {
    role: &'r Role,
    store: Arc<dyn GoalStore>,
    ctx: CallerContext,
    model: String,
}

impl Role {
    /// Keep the role's goals, priorities and metric reports in `store`: its
    /// prompts then show its priorities of the day (`## Priorities`), and
    /// its nodes' `metric` outputs are reported ([`Role::goals`]).
    #[must_use]
    pub fn with_goals(mut self, store: Arc<dyn GoalStore>) -> Self {
        self.goals = Some(store);
        self
    }

    /// Where the role keeps its goals, when it has a store.
    pub fn goal_store(&self) -> Option<&Arc<dyn GoalStore>> {
        self.goals.as_ref()
    }

    /// The role's goal system, over its goal store, as the role (its
    /// [caller context](Role::proposal_context)).
    pub fn goals(&self) -> Result<GoalSystem<'_>, Error> {
        let store = self.goals.clone().ok_or_else(|| Error::NoGoals {
            role: self.role_id().to_owned(),
        })?;
        Ok(GoalSystem {
            role: self,
            store,
            ctx: self.proposal_context(),
            model: GOAL_MODEL.to_owned(),
        })
    }
}

impl GoalSystem<'_> {
    /// Ask `model` instead of [`GOAL_MODEL`].
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Put the role's objectives of `file` in the store: a new objective is
    /// version 1, a changed one a new version, an unchanged one stays.
    pub async fn sync(&self, file: &GoalsFile) -> Result<Vec<Goal>, Error> {
        let mut out = Vec::new();
        for objective in file.of(self.role.role_id()) {
            let goal = self
                .store
                .put(&self.ctx, Goal::new(objective.clone()))
                .await
                .map_err(goal_error(&objective.id))?;
            out.push(goal);
        }
        Ok(out)
    }

    /// The role's goals the store holds, in id order.
    pub async fn list(&self) -> Result<Vec<Goal>, Error> {
        let query = GoalQuery::new().role(self.role.role_id());
        openvibe_protocols::Page::all(|cursor| {
            let mut query = query.clone();
            query.after = cursor;
            async move { self.store.list(&self.ctx, &query).await }
        })
        .await
        .map_err(goal_error(self.role.role_id()))
    }

    /// Where each of the role's goals stands.
    pub async fn progress(&self) -> Result<Vec<GoalProgress>, Error> {
        let mut out = Vec::new();
        for goal in self.list().await? {
            if let Some(p) = self
                .store
                .progress(&self.ctx, goal.id())
                .await
                .map_err(goal_error(goal.id()))?
            {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// Report a metric of the role (see [`GoalStore::report`]).
    pub async fn report(&self, report: MetricReport) -> Result<MetricReport, Error> {
        let id = report.id.clone();
        self.store
            .report(&self.ctx, report)
            .await
            .map_err(goal_error(&id))
    }

    /// The request that asks the model to decompose `goal`'s objective,
    /// given the role's domains and, in its space, the members (`team`)
    /// that own others (an initiative in one of those is delegated).
    pub fn decomposition_request(&self, goal: &Goal, team: &[Member]) -> LlmRequest {
        let objective = &goal.objective;
        let mut user = format!(
            "Objective `{}`: {} (due {}).\nKey results:\n",
            objective.id, objective.title, objective.due
        );
        for kr in &objective.key_results {
            user.push_str(&format!(
                "- `{}`: {} from {} to {} {} by {}\n",
                kr.id,
                kr.metric,
                kr.baseline,
                kr.target,
                kr.unit,
                kr.due_by(objective)
            ));
        }
        let own = self.role.owned_domains();
        if !own.is_empty() {
            user.push_str(&format!("\nYour domains: {}.\n", own.join(", ")));
        }
        let me = openvibe_protocols::Principal::agent(self.role.role_id());
        let others: Vec<String> = team
            .iter()
            .filter(|m| !me.is_owner(&m.principal) && !m.domains.is_empty())
            .map(|m| format!("- {} owns {}", m.principal, m.domains.join(", ")))
            .collect();
        if !others.is_empty() {
            user.push_str("\n## Team\n");
            for line in &others {
                user.push_str(line);
                user.push('\n');
            }
        }
        self.push_actions(&mut user);
        user.push_str("\nWhich initiatives will achieve it?");
        LlmRequest::new(self.model.clone(), user)
            .system(format!(
                "You decompose an objective of role `{}` into 2 to 5 initiatives: concrete lines \
                 of work that move its key results. Answer with a JSON array only:\n\
                 [{{\"title\": \"...\", \"description\": \"...\", \"key_results\": [\"<key result id>\"], \
                 \"domain\": \"<domain or null>\", \"due\": \"<YYYY-MM-DD or null>\"}}]\n\
                 An initiative in a domain a team member owns is asked of them. One that an action \
                 works on may name it: \"action\": {{\"action\": \"<action>\", \"target\": \
                 {{\"kind\": \"tool\", \"tool\": \"<tool>\"}}, \"input\": {{...}}}}.",
                self.role.role_id()
            ))
            .temperature(0.2)
    }

    /// The `## Actions` section of a request: the actions a priority or an
    /// initiative may name (the role's action tools); whether it has any.
    fn push_actions(&self, user: &mut String) -> bool {
        let mut any = false;
        for tool in self.role.action_tools() {
            let Some(action) = tool.action() else {
                continue;
            };
            if !any {
                user.push_str("\n## Actions\n");
                any = true;
            }
            user.push_str(&format!("- `{action}` (tool `{}`)\n", tool.name()));
        }
        any
    }

    /// The members of the role's space (none without one; a space the role
    /// cannot read is an error).
    async fn team(&self) -> Result<Vec<Member>, Error> {
        let Some((spaces, space)) = self.role.space() else {
            return Ok(Vec::new());
        };
        let found = spaces
            .get(&self.ctx, space)
            .await
            .map_err(|source| Error::Space {
                role: self.role.role_id().to_owned(),
                source,
            })?;
        Ok(found.map(|s| s.members).unwrap_or_default())
    }

    /// Decompose goal `id` into initiatives with the model, once per
    /// version of its objective: when the goal is decomposed at its
    /// current version already, the model is not called and the stored
    /// initiatives are returned; when two processes decompose it at once,
    /// the first stored decomposition stays. Output that is not a list of
    /// initiatives naming the objective's key results is
    /// [`Error::MalformedPlan`] and nothing is stored.
    pub async fn decompose(&self, id: &str) -> Result<Goal, Error> {
        let goal = self
            .store
            .get(&self.ctx, id)
            .await
            .map_err(goal_error(id))?
            .ok_or_else(|| Error::Goal {
                id: id.to_owned(),
                source: StoreError::NotFound {
                    kind: openvibe_protocols::GOAL_KIND,
                    id: id.to_owned(),
                },
            })?;
        if goal.is_decomposed() {
            return Ok(goal);
        }
        let team = self.team().await?;
        let request = self.decomposition_request(&goal, &team);
        let answer = self.ask(&request, "decompose").await?;
        let mut initiatives = parse_items::<Initiative>(&answer, "initiatives", INITIATIVE_FIELDS)
            .map_err(|message| Error::MalformedPlan {
                what: "decomposition",
                of: id.to_owned(),
                message,
            })?;
        // Who works each: the role, or the member owning its domain (none
        // when nobody in the space owns it: the space's people hear of it
        // when it is delegated).
        for initiative in &mut initiatives {
            if initiative.due.is_some_and(|due| due > goal.objective.due) {
                initiative.due = Some(goal.objective.due);
            }
            initiative.owner = match &initiative.domain {
                Some(d) if !self.role.owned_domains().contains(d) => {
                    crate::domain_owner(&team, d, self.role.role_id())
                }
                _ => Some(self.role.role_id().to_owned()),
            };
        }
        openvibe_protocols::validate_initiatives(&goal.objective, &initiatives).map_err(|e| {
            Error::MalformedPlan {
                what: "decomposition",
                of: id.to_owned(),
                message: e.to_string(),
            }
        })?;
        self.store
            .decompose(&self.ctx, id, &goal.fingerprint, initiatives)
            .await
            .map_err(goal_error(id))
    }

    /// The request that asks the model for `day`'s priorities, given where
    /// the goals stand, the role's recent episodes and insights, and
    /// `context` (what the caller knows of the day; may be empty).
    pub fn prioritization_request(
        &self,
        goals: &[GoalProgress],
        episodes: &[Episode],
        insights: &[openvibe_protocols::Insight],
        context: &str,
        day: NaiveDate,
    ) -> LlmRequest {
        let mut user = format!("Today is {day}.\n\n## Goals\n");
        if goals.is_empty() {
            user.push_str("(none)\n");
        }
        for g in goals {
            let o = &g.goal.objective;
            user.push_str(&format!(
                "- `{}` {} (due {}): {:.0}% done\n",
                o.id,
                o.title,
                o.due,
                g.progress * 100.0
            ));
            for kr in &g.key_results {
                user.push_str(&format!(
                    "  - {}: {} of {} {} ({:.0}%)\n",
                    kr.key_result.metric,
                    kr.current,
                    kr.key_result.target,
                    kr.key_result.unit,
                    kr.progress * 100.0
                ));
            }
            for initiative in &g.goal.initiatives {
                user.push_str(&format!("  - initiative: {}\n", initiative.title));
            }
        }
        user.push_str("\n## Recent Activity\n");
        if episodes.is_empty() {
            user.push_str("(none)\n");
        }
        for e in episodes {
            user.push_str(&format!("- {}: {}\n", e.action, e.output_summary));
        }
        user.push_str("\n## Insights\n");
        if insights.is_empty() {
            user.push_str("(none)\n");
        }
        for i in insights {
            user.push_str(&format!(
                "- {} (confidence {:.2})\n",
                i.content, i.confidence
            ));
        }
        if !context.trim().is_empty() {
            user.push_str(&format!("\n## Context\n{}\n", context.trim()));
        }
        // The actions a priority may name: the role's action tools.
        let any_action = self.push_actions(&mut user);
        user.push_str(&format!(
            "\nWhat are the {TOP_PRIORITIES} most important things to do today?"
        ));
        let naming = if !any_action {
            String::new()
        } else {
            " A priority that one of the actions works on may name it: \
             \"action\": {\"action\": \"<action>\", \"target\": {\"kind\": \"tool\", \"tool\": \"<tool>\"}, \"input\": {...}}."
                .to_owned()
        };
        LlmRequest::new(self.model.clone(), user)
            .system(format!(
                "You set the daily priorities of role `{}`: the {TOP_PRIORITIES} things that move \
                 its goals most today, most important first. Answer with a JSON array only:\n\
                 [{{\"title\": \"...\", \"reason\": \"...\", \"goal_id\": \"<goal id or null>\"}}]{naming}",
                self.role.role_id()
            ))
            .temperature(0.2)
    }

    /// Ask the model for `day`'s top [`TOP_PRIORITIES`] priorities (seed
    /// 001: `role.goals.prioritize(context)`) and store them as the role's
    /// priorities of that day (replacing that day's). Output that is not a
    /// list of priorities is [`Error::MalformedPlan`] and nothing is
    /// stored; more than [`TOP_PRIORITIES`] are cut to the first ones.
    pub async fn prioritize(&self, context: &str, day: NaiveDate) -> Result<Priorities, Error> {
        let goals = self.progress().await?;
        let (episodes, insights) = match self.role.agent_memory() {
            Some(memory) => recent(memory).await?,
            None => (Vec::new(), Vec::new()),
        };
        let request = self.prioritization_request(&goals, &episodes, &insights, context, day);
        let answer = self.ask(&request, "prioritize").await?;
        let role_id = self.role.role_id();
        let mut items =
            parse_items::<Priority>(&answer, "priorities", PRIORITY_FIELDS).map_err(|message| {
                Error::MalformedPlan {
                    what: "prioritization",
                    of: role_id.to_owned(),
                    message,
                }
            })?;
        items.truncate(TOP_PRIORITIES);
        // A goal the model names that the role does not have is dropped
        // from the priority, not trusted.
        for item in &mut items {
            if item
                .goal_id
                .as_deref()
                .is_some_and(|g| !goals.iter().any(|p| p.goal.id() == g))
            {
                item.goal_id = None;
            }
        }
        let priorities = Priorities::new(role_id, day, items);
        openvibe_protocols::validate_priorities(&priorities).map_err(|e| Error::MalformedPlan {
            what: "prioritization",
            of: role_id.to_owned(),
            message: e.to_string(),
        })?;
        self.store
            .put_priorities(&self.ctx, priorities)
            .await
            .map_err(goal_error(role_id))
    }

    /// The role's key results behind their pace at `now`: progress
    /// towards the target less than the share of the time gone (from the
    /// goal's creation to the key result's due date, else the objective's)
    /// less `margin`. Each files an escalation (a proposal for a person,
    /// assigned to the role's [escalation assignee](Role::escalate_to)),
    /// with the numbers, once per `period_days` days (its id names the
    /// goal, the key result and the period: filing it again within the
    /// period changes nothing). Needs a proposal store
    /// ([`Error::NoProposals`]).
    pub async fn check_pace(
        &self,
        now: DateTime<Utc>,
        margin: f64,
        period_days: u32,
    ) -> Result<Vec<BehindPace>, Error> {
        let proposals = self.role.proposals().ok_or_else(|| Error::NoProposals {
            role: self.role.role_id().to_owned(),
        })?;
        let period = i64::from(period_days.max(1));
        let domain = self.role.home_domain();
        let mut behind = Vec::new();
        for goal in self.progress().await? {
            let start = goal.goal.meta.created_at;
            for kr in &goal.key_results {
                let due_day = kr.key_result.due_by(&goal.goal.objective);
                let Some(due) = due_day.and_hms_opt(23, 59, 59).map(|t| t.and_utc()) else {
                    continue;
                };
                let total = (due - start).num_seconds().max(1) as f64;
                let gone = ((now - start).num_seconds() as f64 / total).clamp(0.0, 1.0);
                if kr.progress >= gone - margin {
                    continue;
                }
                let days = (now - start).num_days();
                let summary = format!(
                    "Key result `{}` of goal `{}` is behind its pace: {:.0}% of the way ({} of {} {}, from {}) with {:.0}% of the time gone (day {} of {}, due {due_day}); margin {:.0}%",
                    kr.key_result.id,
                    goal.goal.id(),
                    kr.progress * 100.0,
                    kr.current,
                    kr.key_result.target,
                    kr.key_result.unit,
                    kr.key_result.baseline,
                    gone * 100.0,
                    days,
                    (due - start).num_days(),
                    margin * 100.0,
                );
                let mut proposal = openvibe_protocols::Proposal::escalation(
                    self.role.role_id().to_owned(),
                    openvibe_protocols::truncate_chars(&summary, 400).to_owned(),
                )
                .id(format!(
                    "pace-{}-{}-{}",
                    goal.goal.id(),
                    kr.key_result.id,
                    days.div_euclid(period)
                ))
                .domain(domain.clone());
                proposal.assignee = self.role.escalation_assignee().map(str::to_owned);
                let filed = proposals
                    .create(&self.ctx, proposal)
                    .await
                    .map_err(goal_error(goal.goal.id()))?;
                behind.push(BehindPace {
                    goal_id: goal.goal.id().to_owned(),
                    key_result_id: kr.key_result.id.clone(),
                    progress: kr.progress,
                    expected: gone,
                    proposal: filed,
                });
            }
        }
        Ok(behind)
    }

    /// The role's latest priorities on or before `day`.
    pub async fn priorities(&self, day: NaiveDate) -> Result<Option<Priorities>, Error> {
        self.store
            .priorities(&self.ctx, self.role.role_id(), day)
            .await
            .map_err(goal_error(self.role.role_id()))
    }

    /// The model's answer to `request`, through the role's LLM (soul
    /// injected, the call in its raw log).
    async fn ask(&self, request: &LlmRequest, purpose: &'static str) -> Result<String, Error> {
        let llm = self.role.llm()?;
        let span = tracing::info_span!(
            "llm_call",
            purpose,
            role = %self.role.role_id(),
            model = %request.model,
        );
        let response = llm
            .call(request)
            .instrument(span)
            .await
            .map_err(|source| Error::Llm {
                role: self.role.role_id().to_owned(),
                source,
            })?;
        Ok(response.content)
    }
}

/// The role's recent episodes and active insights.
async fn recent(
    memory: &AgentMemory,
) -> Result<(Vec<Episode>, Vec<openvibe_protocols::Insight>), Error> {
    let episodes = memory
        .recall_episodes(EpisodeQuery::new().limit(PRIORITY_EPISODES))
        .await?;
    let insights = memory
        .recall_insights(InsightQuery::new().limit(PRIORITY_INSIGHTS))
        .await?;
    Ok((episodes, insights))
}

/// The fields of a model's initiative kept (others, like an owner or a
/// status, are dropped rather than refused: the role sets those).
const INITIATIVE_FIELDS: &[&str] = &[
    "title",
    "description",
    "key_results",
    "domain",
    "due",
    "action",
];

/// The fields of a model's priority kept.
const PRIORITY_FIELDS: &[&str] = &["title", "reason", "goal_id", "action"];

/// The items of a model's JSON answer: a list, or an object holding the
/// list under `key`; each item read as `T` (fields other than `fields`
/// left aside).
fn parse_items<T: serde::de::DeserializeOwned>(
    answer: &str,
    key: &str,
    fields: &[&str],
) -> Result<Vec<T>, String> {
    let mut reason = String::from("no JSON found");
    for candidate in json_candidates(answer) {
        let items = match serde_json::from_str::<Value>(candidate) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Object(mut map)) => match map.remove(key) {
                Some(Value::Array(items)) => items,
                _ => {
                    reason = format!("a JSON object without a `{key}` list");
                    continue;
                }
            },
            Ok(_) => {
                reason = "JSON that is not a list".to_owned();
                continue;
            }
            Err(e) => {
                if reason == "no JSON found" {
                    reason = e.to_string();
                }
                continue;
            }
        };
        return items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let item = match item {
                    Value::Object(mut map) => {
                        map.retain(|k, v| fields.contains(&k.as_str()) && !v.is_null());
                        Value::Object(map)
                    }
                    other => other,
                };
                serde_json::from_value(item).map_err(|e| format!("item {i}: {e}"))
            })
            .collect();
    }
    Err(reason)
}
