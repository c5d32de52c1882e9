//! Goals in a configuration directory: `goals.yaml` beside `roles.yaml`
//! (seed 001, V3: "OKR config (from human/CEO)").
//!
//! ```yaml
//! objectives:
//!   - id: pipeline-q4
//!     owner: cro                       # a role of roles.yaml
//!     title: Build a $2M pipeline this quarter
//!     due: 2026-12-31
//!     key_results:
//!       - { id: pipeline-value, metric: pipeline_usd, target: 2000000, unit: USD }
//!       - { id: qualified-leads, metric: qualified_leads, target: 40, unit: leads, due: 2026-12-15 }
//! ```
//!
//! Every problem is reported with the file, line, column and key: what the
//! YAML reader finds (a wrong type, an unknown field, a date that is not
//! `YYYY-MM-DD`), and then what it cannot (repeated ids, a metric two key
//! results of one role would share, a target equal to its baseline, a key
//! result due after its objective, an owner that is no role).

use std::path::Path;

use openvibe_operators::config::parse_yaml;
use openvibe_protocols::Objective;
use serde::Deserialize;

use crate::Error;

/// The goals file of a configuration directory.
pub const GOALS_FILE: &str = "goals.yaml";

/// A goals file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalsFile {
    /// The objectives.
    #[serde(default)]
    pub objectives: Vec<Objective>,
}

impl GoalsFile {
    /// The objectives `role_id` owns.
    pub fn of(&self, role_id: &str) -> impl Iterator<Item = &Objective> {
        self.objectives.iter().filter(move |o| o.owner == role_id)
    }
}

/// The line and column of the first line at or after the line of
/// objective `objective` (0-based line index of its `id`) that contains
/// `needle`; the objective's own line when none does.
fn locate(text: &str, from: usize, needle: &str) -> (usize, usize) {
    text.lines()
        .enumerate()
        .skip(from)
        .find_map(|(i, l)| l.find(needle).map(|c| (i + 1, c + 1)))
        .unwrap_or((from + 1, 1))
}

/// The 0-based line where the `n`-th (0-based) objective starts: the
/// `n`-th list item at the indentation of the first one after
/// `objectives:` (0 when the file is written otherwise).
fn objective_line(text: &str, n: usize) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let item = |l: &str| l.trim_start().starts_with("- ");
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with("objectives:"))
        .map_or(0, |i| i + 1);
    let Some(depth) = lines
        .iter()
        .skip(start)
        .find(|l| item(l))
        .map(|l| indent(l))
    else {
        return 0;
    };
    lines
        .iter()
        .enumerate()
        .skip(start)
        .filter(|(_, l)| item(l) && indent(l) == depth)
        .nth(n)
        .map_or(0, |(i, _)| i)
}

/// Read the goals file at `path`, checked (see the module documentation);
/// `roles` are the role ids an objective may name as its owner (`None`:
/// not checked).
pub fn read_goals(path: &Path, roles: Option<&[&str]>) -> Result<GoalsFile, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Operator(openvibe_operators::Error::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })
    })?;
    parse_goals(&text, path, roles)
}

/// [`read_goals`] of `text` (`path` names it in errors).
pub fn parse_goals(text: &str, path: &Path, roles: Option<&[&str]>) -> Result<GoalsFile, Error> {
    let file: GoalsFile = parse_yaml(text, path)?;
    let problem = |i: usize, key: &str, message: String| {
        let field = key.rsplit('.').next().unwrap_or(key);
        let from = objective_line(text, i);
        // A key result's problem is found from its own id on.
        let from = key
            .split_once("key_results[")
            .and_then(|(_, rest)| rest.split_once(']'))
            .and_then(|(n, _)| n.parse::<usize>().ok())
            .and_then(|n| file.objectives[i].key_results.get(n))
            .map_or(from, |kr| {
                locate(text, from, &format!("id: {}", kr.id))
                    .0
                    .saturating_sub(1)
            });
        let (line, column) = locate(text, from, &format!("{field}:"));
        Error::Operator(openvibe_operators::Error::Config {
            path: path.to_owned(),
            line,
            column,
            key: format!("objectives[{i}].{key}"),
            message,
        })
    };
    let mut metrics: Vec<(&str, &str, usize)> = Vec::new();
    for (i, objective) in file.objectives.iter().enumerate() {
        if let Some((key, message)) = objective.problems().into_iter().next() {
            return Err(problem(i, &key, message));
        }
        if let Some(first) = file.objectives[..i]
            .iter()
            .position(|o| o.id == objective.id)
        {
            return Err(problem(
                i,
                "id",
                format!("`{}` is also objectives[{first}]'s id", objective.id),
            ));
        }
        if let Some(roles) = roles
            && !roles.contains(&objective.owner.as_str())
        {
            return Err(problem(
                i,
                "owner",
                format!(
                    "`{}` is not a role of roles.yaml (roles: {})",
                    objective.owner,
                    roles.join(", ")
                ),
            ));
        }
        for (k, kr) in objective.key_results.iter().enumerate() {
            if let Some((_, _, other)) = metrics
                .iter()
                .find(|(owner, metric, _)| *owner == objective.owner && *metric == kr.metric)
            {
                return Err(problem(
                    i,
                    &format!("key_results[{k}].metric"),
                    format!(
                        "role `{}` already measures `{}` in objectives[{other}]: a report would move both",
                        objective.owner, kr.metric
                    ),
                ));
            }
            metrics.push((&objective.owner, &kr.metric, i));
        }
    }
    Ok(file)
}

/// The goals of `config_path`'s [`GOALS_FILE`] (none when there is no
/// such file), their owners checked against `roles`.
pub fn load_goals(config_path: &Path, roles: &[&str]) -> Result<GoalsFile, Error> {
    let path = config_path.join(GOALS_FILE);
    if !path.exists() {
        return Ok(GoalsFile::default());
    }
    read_goals(&path, Some(roles))
}
