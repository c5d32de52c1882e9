//! What a role with a goal store adds to its operators' runs: the episode
//! sink that reports a node's `metric` output ([`MetricSink`]) and the
//! `## Priorities` section of its prompts ([`PrioritySource`]). Apart from
//! [`GoalSystem`](crate::GoalSystem), so that the role's binding code uses
//! them without depending on it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::NaiveDate;
use openvibe_memory::AgentMemory;
use openvibe_protocols::{
    CallerContext, Episode, EpisodeSink, GoalQuery, GoalStore, MetricMode, MetricOutput,
    MetricReport, Priorities, StoreError,
};

/// How long a role's prompts reuse the priorities they read (the store is
/// read at most this often per bound operator).
pub const PRIORITIES_REFRESH: Duration = Duration::from_secs(60);

/// How a role reports its metrics (a node's output, a tool result, an
/// action's result), in one place: the report is filed as the role, and a
/// report that moves a key result of the role away from its target is a
/// lesson ([`MetricReport::moves_against`]): the role reflects after the
/// event, and an episode (a setback) says what moved, for reflection to
/// read and later decisions to weigh.
#[derive(Clone)]
pub(crate) struct MetricReporter {
    pub(crate) goals: Arc<dyn GoalStore>,
    pub(crate) ctx: CallerContext,
    pub(crate) role_id: String,
    pub(crate) domain: String,
    pub(crate) experience: Arc<crate::experience::Experience>,
    pub(crate) memory: Option<AgentMemory>,
}

impl MetricReporter {
    /// File `metric` as the role's, its id made of `by` (what reported it:
    /// a replay counts once).
    pub(crate) async fn report(
        &self,
        metric: &MetricOutput,
        by: &str,
    ) -> Result<MetricReport, StoreError> {
        let report = self
            .goals
            .report(&self.ctx, metric.report(&self.role_id, by))
            .await?;
        self.check_against(&report).await;
        Ok(report)
    }

    /// When `report` moved a key result of the role away from its target:
    /// note the lesson and record it as an episode (failures are logged:
    /// the report stands).
    async fn check_against(&self, report: &MetricReport) {
        if report.mode != MetricMode::Add || report.value == 0.0 {
            return;
        }
        let goals = match self
            .goals
            .list(&self.ctx, &GoalQuery::new().role(self.role_id.clone()))
            .await
        {
            Ok(page) => page.items,
            Err(e) => {
                tracing::warn!(role = %self.role_id, metric = %report.metric, error = %e, "the goals of a metric report could not be read");
                return;
            }
        };
        let Some((goal, kr)) = goals.iter().find_map(|g| {
            g.objective
                .key_results
                .iter()
                .find(|k| report.moves_against(k))
                .map(|k| (g, k))
        }) else {
            return;
        };
        self.experience.note_lesson();
        tracing::info!(role = %self.role_id, goal = %goal.id(), key_result = %kr.id, value = report.value, "a metric moved against its key result");
        let Some(memory) = &self.memory else {
            return;
        };
        let what = format!(
            "{} moved {:+} against key result `{}` of `{}` (now {} of {} {}){}",
            report.metric,
            report.value,
            kr.id,
            goal.id(),
            report.total,
            kr.target,
            kr.unit,
            if report.note.is_empty() {
                String::new()
            } else {
                format!(": {}", report.note)
            }
        );
        let episode = Episode {
            id: format!("{}-against", report.id),
            agent_id: self.role_id.clone(),
            operator_id: "goals".to_owned(),
            node_name: "metric".to_owned(),
            action: format!("metric.{}", report.metric),
            input_summary: format!("{} {:+}", report.metric, report.value),
            output_summary: openvibe_protocols::truncate_chars(&format!("missed: {what}"), 500)
                .to_owned(),
            outcome: serde_json::json!({
                "status": "missed",
                "goal_id": goal.id(),
                "key_result": kr.id,
                "value": report.value,
                "total": report.total,
                "report": report.id,
            }),
            domain: self.domain.clone(),
            tags: vec!["metric".to_owned(), openvibe_memory::SETBACK_TAG.to_owned()],
            external_id: Some(format!("metric:{}", report.id)),
            ..Episode::default()
        };
        if let Err(e) = memory.record_episode(episode).await {
            tracing::warn!(role = %self.role_id, metric = %report.metric, error = %e, "a metric that moved against its key result was not recorded");
        }
    }
}

/// The episode sink of a role with goals: records each episode in the
/// role's agent memory, then reports the metrics its node's output names
/// ([`MetricOutput`]) as the role's, with ids from the episode, so a
/// replayed node counts them once.
pub(crate) struct MetricSink {
    pub(crate) memory: AgentMemory,
    pub(crate) reporter: MetricReporter,
}

#[async_trait]
impl EpisodeSink for MetricSink {
    async fn record(&self, episode: Episode) -> Result<(), StoreError> {
        let metrics = episode
            .outcome
            .get("value")
            .map(MetricOutput::all_in)
            .transpose()?
            .unwrap_or_default();
        let recorded = self.memory.record_episode(episode).await?;
        for metric in &metrics {
            self.reporter.report(metric, &recorded.id).await?;
        }
        Ok(())
    }
}

/// Today's priorities of a role, as its prompts show them, read from the
/// store at most every [`PRIORITIES_REFRESH`].
pub(crate) struct PrioritySource {
    store: Arc<dyn GoalStore>,
    ctx: CallerContext,
    role_id: String,
    cached: Mutex<Option<(Instant, NaiveDate, Option<String>)>>,
}

impl PrioritySource {
    pub(crate) fn new(store: Arc<dyn GoalStore>, ctx: CallerContext, role_id: String) -> Self {
        Self {
            store,
            ctx,
            role_id,
            cached: Mutex::new(None),
        }
    }

    /// The `## Priorities` section of today, when the role has priorities.
    pub(crate) async fn section(&self) -> Result<Option<String>, StoreError> {
        let today = chrono::Utc::now().date_naive();
        if let Ok(cached) = self.cached.lock()
            && let Some((at, day, section)) = cached.as_ref()
            && *day == today
            && at.elapsed() < PRIORITIES_REFRESH
        {
            return Ok(section.clone());
        }
        let found = self
            .store
            .priorities(&self.ctx, &self.role_id, today)
            .await?;
        let section = found.map(|p| priorities_section(&p));
        if let Ok(mut cached) = self.cached.lock() {
            *cached = Some((Instant::now(), today, section.clone()));
        }
        Ok(section)
    }
}

/// The `## Priorities` section of a role's prompts.
pub fn priorities_section(p: &Priorities) -> String {
    let mut out = format!("## Priorities\nSet on {}, most important first:", p.day);
    for (i, item) in p.items.iter().enumerate() {
        out.push_str(&format!("\n{}. {}", i + 1, item.title));
        if !item.reason.is_empty() {
            out.push_str(&format!(": {}", item.reason));
        }
        if let Some(goal) = &item.goal_id {
            out.push_str(&format!(" (goal `{goal}`)"));
        }
    }
    out
}
