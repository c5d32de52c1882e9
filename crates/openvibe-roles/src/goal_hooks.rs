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
    CallerContext, Episode, EpisodeSink, GoalStore, MetricOutput, Priorities, StoreError,
};

/// How long a role's prompts reuse the priorities they read (the store is
/// read at most this often per bound operator).
pub const PRIORITIES_REFRESH: Duration = Duration::from_secs(60);

/// The episode sink of a role with goals: records each episode in the
/// role's agent memory, then reports the metrics its node's output names
/// ([`MetricOutput`]) as the role's, with ids from the episode, so a
/// replayed node counts them once.
pub(crate) struct MetricSink {
    pub(crate) memory: AgentMemory,
    pub(crate) goals: Arc<dyn GoalStore>,
    pub(crate) ctx: CallerContext,
    pub(crate) role_id: String,
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
        for metric in metrics {
            self.goals
                .report(&self.ctx, metric.report(&self.role_id, &recorded.id))
                .await?;
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
