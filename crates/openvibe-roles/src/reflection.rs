//! The [`Reflection`] schedule: when roles with agent memory reflect on
//! their recent episodes and publish what they learned.

use openvibe_memory::DEFAULT_PUBLISH_CONFIDENCE;
use openvibe_protocols::{TriggerConfig, TriggerKind};

use crate::Learning;

/// The workflow name a reflection trigger carries: a firing of it runs
/// `reflect` and `publish_to_workspace` for its role instead of a workflow.
pub const REFLECTION_WORKFLOW: &str = "openvibe.reflect";

/// When roles with agent memory reflect on their recent episodes and
/// publish what they learned to the workspace (the source design's L2 → L3
/// "reflection cron").
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reflection {
    /// `Cron` or `Interval`.
    pub kind: TriggerKind,
    /// The cron expression or the period.
    pub schedule: String,
    /// Insights at least this confident are published (default [`DEFAULT_PUBLISH_CONFIDENCE`]).
    pub min_confidence: f64,
    /// After reflecting, propose the strong insights as beliefs (the learn
    /// step; default off).
    pub learning: Option<Learning>,
}

impl Reflection {
    /// Every day at 03:00 UTC.
    pub fn daily() -> Self {
        Self::cron("0 3 * * *")
    }

    /// On a cron expression (`CRON_TZ=Europe/Berlin 0 3 * * *` for a zone).
    pub fn cron(expression: impl Into<String>) -> Self {
        Self {
            kind: TriggerKind::Cron,
            schedule: expression.into(),
            min_confidence: DEFAULT_PUBLISH_CONFIDENCE,
            learning: None,
        }
    }

    /// Every `period` (`6h`, `30m`).
    pub fn every(period: impl Into<String>) -> Self {
        Self {
            kind: TriggerKind::Interval,
            schedule: period.into(),
            min_confidence: DEFAULT_PUBLISH_CONFIDENCE,
            learning: None,
        }
    }

    /// Publish insights at least this confident.
    #[must_use]
    pub fn min_confidence(mut self, min_confidence: f64) -> Self {
        self.min_confidence = min_confidence;
        self
    }

    /// After reflecting, learn: propose the insights `learning` names as
    /// beliefs ([`Role::learn`](crate::Role::learn)).
    #[must_use]
    pub fn learn(mut self, learning: Learning) -> Self {
        self.learning = Some(learning);
        self
    }

    /// The trigger registered for each role with agent memory.
    pub fn trigger(&self) -> TriggerConfig {
        TriggerConfig {
            id: "reflection".into(),
            kind: self.kind,
            schedule: Some(self.schedule.clone()),
            workflow: REFLECTION_WORKFLOW.into(),
            operator_id: None,
            input: match &self.learning {
                Some(learning) => serde_json::json!({
                    "min_confidence": self.min_confidence,
                    "learn": learning.to_value(),
                }),
                None => serde_json::json!({ "min_confidence": self.min_confidence }),
            },
        }
    }
}

impl Default for Reflection {
    fn default() -> Self {
        Self::daily()
    }
}
