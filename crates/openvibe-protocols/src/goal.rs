//! Goals set by people (seed 001, V3: "OKR config (from human/CEO)"): an
//! [`Objective`] owned by a role, measured by [`KeyResult`]s, each a metric
//! with a baseline, a target and a due date. Progress is computed from the
//! metric's current value, deterministically ([`KeyResult::progress`]).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// An objective: what a role should achieve, by when, and how it is measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Objective {
    /// Unique among the objectives (`pipeline-q4`).
    pub id: String,
    /// The role that owns it (its id).
    pub owner: String,
    /// What it is, in words.
    pub title: String,
    /// When it is due.
    pub due: NaiveDate,
    /// How it is measured (at least one).
    pub key_results: Vec<KeyResult>,
}

/// One measurable result of an objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KeyResult {
    /// Unique within its objective (`pipeline-value`).
    pub id: String,
    /// The metric episodes and reports name (`pipeline_usd`): unique among
    /// the key results of one owner, so a report moves one key result.
    pub metric: String,
    /// Where the metric starts (0 by default).
    #[serde(default)]
    pub baseline: f64,
    /// Where it should get to (above or below the baseline: a key result
    /// may ask to bring a metric down).
    pub target: f64,
    /// Its unit, for people (`USD`, `leads`).
    #[serde(default)]
    pub unit: String,
    /// When it is due (the objective's date when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<NaiveDate>,
}

impl KeyResult {
    /// How far `current` is from the baseline towards the target, in
    /// `0..=1` (clamped: overshooting is done, going the wrong way is 0).
    pub fn progress(&self, current: f64) -> f64 {
        let span = self.target - self.baseline;
        if !current.is_finite() || span == 0.0 || !span.is_finite() {
            return 0.0;
        }
        ((current - self.baseline) / span).clamp(0.0, 1.0)
    }

    /// Its due date, given its objective's.
    pub fn due_by(&self, objective: &Objective) -> NaiveDate {
        self.due.unwrap_or(objective.due)
    }
}

impl Objective {
    /// Its problems, each with the path of the field at fault (relative to
    /// the objective: `key_results[1].target`): empty ids and titles, no
    /// key result, repeated key-result ids or metrics, a target that is not
    /// a finite number other than the baseline, a key result due after the
    /// objective.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut problem = |key: String, message: String| found.push((key, message));
        if !is_label(&self.id) {
            problem(
                "id".into(),
                "must be a label: letters, digits, `-`, `_`, `.`, at most 64".into(),
            );
        }
        if self.owner.trim().is_empty() {
            problem("owner".into(), "must name the role that owns it".into());
        }
        if self.title.trim().is_empty() {
            problem("title".into(), "must not be empty".into());
        }
        if self.key_results.is_empty() {
            problem(
                "key_results".into(),
                "an objective needs at least one key result to be measured".into(),
            );
        }
        for (i, kr) in self.key_results.iter().enumerate() {
            let at = |field: &str| format!("key_results[{i}].{field}");
            if !is_label(&kr.id) {
                problem(
                    at("id"),
                    "must be a label: letters, digits, `-`, `_`, `.`, at most 64".into(),
                );
            }
            if !is_label(&kr.metric) {
                problem(
                    at("metric"),
                    "must be a label: letters, digits, `-`, `_`, `.`, at most 64".into(),
                );
            }
            if let Some(first) = self.key_results[..i].iter().position(|k| k.id == kr.id) {
                problem(
                    at("id"),
                    format!("`{}` is also key_results[{first}]'s id", kr.id),
                );
            }
            if let Some(first) = self.key_results[..i]
                .iter()
                .position(|k| k.metric == kr.metric)
            {
                problem(
                    at("metric"),
                    format!(
                        "`{}` is also key_results[{first}]'s metric: a report would move both",
                        kr.metric
                    ),
                );
            }
            if !kr.target.is_finite() || !kr.baseline.is_finite() {
                problem(at("target"), "target and baseline must be numbers".into());
            } else if kr.target == kr.baseline {
                problem(
                    at("target"),
                    format!("equals the baseline ({}): nothing to achieve", kr.baseline),
                );
            }
            if kr.due.is_some_and(|due| due > self.due) {
                problem(
                    at("due"),
                    format!("is after the objective's due date ({})", self.due),
                );
            }
        }
        found
    }
}

/// Whether an objective's problem (from [`Objective::problems`]) is a rule
/// between fields: a duplicate key result id or metric, a target equal to
/// its baseline, a key result due after its objective.
pub(crate) fn is_cross_field(message: &str) -> bool {
    message.contains("is also key_results[")
        || message.contains("nothing to achieve")
        || message.contains("after the objective's due date")
}

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kr(baseline: f64, target: f64) -> KeyResult {
        KeyResult {
            id: "k".into(),
            metric: "m".into(),
            baseline,
            target,
            unit: String::new(),
            due: None,
        }
    }

    #[test]
    fn progress_runs_from_baseline_to_target_either_way() {
        assert_eq!(kr(0.0, 200.0).progress(50.0), 0.25);
        assert_eq!(kr(0.0, 200.0).progress(400.0), 1.0);
        assert_eq!(kr(0.0, 200.0).progress(-5.0), 0.0);
        // Bringing churn down from 10% to 5%.
        assert_eq!(kr(10.0, 5.0).progress(7.5), 0.5);
        assert_eq!(kr(10.0, 5.0).progress(12.0), 0.0);
        assert_eq!(kr(1.0, 1.0).progress(1.0), 0.0);
        assert_eq!(kr(0.0, 1.0).progress(f64::NAN), 0.0);
    }

    proptest! {
        #[test]
        fn progress_is_a_fraction_and_moves_towards_the_target(
            baseline in -1e6f64..1e6,
            target in -1e6f64..1e6,
            a in -2e6f64..2e6,
            b in -2e6f64..2e6,
        ) {
            let k = kr(baseline, target);
            let (pa, pb) = (k.progress(a), k.progress(b));
            prop_assert!((0.0..=1.0).contains(&pa));
            // Closer to the target (on its side of the baseline) is never less progress.
            let towards = |x: f64| (x - baseline) * (target - baseline).signum();
            if towards(a) <= towards(b) {
                prop_assert!(pa <= pb + 1e-12, "{pa} > {pb}");
            }
        }
    }
}
