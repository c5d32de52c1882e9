//! Operator configuration files (YAML).
//!
//! ```yaml
//! operators:
//!   - id: revenue_ops
//!     name: Revenue Operations
//!     model: sonnet                  # default model of its nodes
//!     prompts:                       # system prompts by node name
//!       qualify_lead: You are a lead qualification specialist.
//!       enrich_lead: { file: prompts/enrich.md }   # relative to this file
//!     nodes:                         # per-node overrides
//!       qualify_lead: { model: haiku, temperature: 0.2, max_tokens: 512 }
//!     workflows:
//!       - id: qualify
//!         triggers:
//!           - { id: new_lead, type: on_demand }
//!           - { id: daily, type: cron, schedule: "CRON_TZ=Europe/Berlin 0 9 * * 1-5" }
//!           - { id: sync, type: interval, schedule: 15m }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openvibe_primitives::{AgentNode, LlmNode, Node};
use openvibe_protocols::{TriggerConfig, TriggerKind};
use serde::Deserialize;
use serde_json::Value;

use crate::Error;

/// A whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// The operators.
    #[serde(default)]
    pub operators: Vec<OperatorConfig>,
}

/// One operator.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorConfig {
    /// Operator id.
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// Default model of its nodes.
    #[serde(default)]
    pub model: Option<String>,
    /// System prompts by node name (inline text or `{file: path}`), resolved to text on load.
    #[serde(default)]
    pub prompts: BTreeMap<String, PromptSource>,
    /// Per-node overrides.
    #[serde(default)]
    pub nodes: BTreeMap<String, NodeOverride>,
    /// Workflows.
    #[serde(default)]
    pub workflows: Vec<WorkflowConfig>,
}

/// A prompt given inline or as a file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum PromptSource {
    /// The text itself.
    Inline(String),
    /// A file (relative paths are relative to the configuration file).
    File {
        /// The file.
        file: PathBuf,
    },
}

/// Settings that replace a node's own.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOverride {
    /// Model.
    #[serde(default)]
    pub model: Option<String>,
    /// Temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Max tokens.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

/// One workflow and what triggers it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowConfig {
    /// Workflow id.
    pub id: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its triggers.
    #[serde(default)]
    pub triggers: Vec<TriggerDef>,
}

/// A trigger as written in the file (its workflow is the enclosing one).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerDef {
    /// Trigger id, unique within the operator.
    pub id: String,
    /// Kind: `cron`, `interval`, `webhook`, `event` or `on_demand`.
    #[serde(rename = "type")]
    pub kind: TriggerKind,
    /// Cron expression (`0 9 * * *`; `CRON_TZ=Europe/Berlin 0 9 * * *` in
    /// a time zone), period of an interval (`15m`) or event name.
    #[serde(default)]
    pub schedule: Option<String>,
    /// Input given to the workflow.
    #[serde(default)]
    pub input: Value,
}

impl OperatorConfig {
    /// The system prompt configured for `node` (loaded text).
    pub fn prompt(&self, node: &str) -> Option<&str> {
        match self.prompts.get(node)? {
            PromptSource::Inline(text) => Some(text),
            PromptSource::File { .. } => None,
        }
    }

    /// Every trigger of every workflow, as scheduler triggers.
    pub fn triggers(&self) -> Vec<TriggerConfig> {
        self.workflows
            .iter()
            .flat_map(|wf| {
                wf.triggers.iter().map(|t| TriggerConfig {
                    id: t.id.clone(),
                    kind: t.kind,
                    schedule: t.schedule.clone(),
                    workflow: wf.id.clone(),
                    operator_id: Some(self.id.clone()),
                    input: t.input.clone(),
                })
            })
            .collect()
    }

    /// Apply the configured prompt, default model and overrides to an `LlmNode`.
    pub fn apply_llm(&self, node: LlmNode) -> LlmNode {
        apply(self, node)
    }

    /// Apply the configured prompt, default model and overrides to an `AgentNode`.
    pub fn apply_agent(&self, node: AgentNode) -> AgentNode {
        apply(self, node)
    }
}

/// The builder methods both node kinds share, so overrides are applied once.
trait Tunable: Node + Sized {
    fn set_model(self, model: &str) -> Self;
    fn set_temperature(self, t: f32) -> Self;
    fn set_max_tokens(self, n: u32) -> Self;
    fn set_prompt(self, prompt: &str) -> Self;
}

macro_rules! tunable {
    ($ty:ty) => {
        impl Tunable for $ty {
            fn set_model(self, model: &str) -> Self {
                self.model(model)
            }
            fn set_temperature(self, t: f32) -> Self {
                self.temperature(t)
            }
            fn set_max_tokens(self, n: u32) -> Self {
                self.max_tokens(n)
            }
            fn set_prompt(self, prompt: &str) -> Self {
                self.prompt(prompt)
            }
        }
    };
}
tunable!(LlmNode);
tunable!(AgentNode);

/// Precedence: per-node override > operator default > what the code set.
fn apply<N: Tunable>(config: &OperatorConfig, mut node: N) -> N {
    let name = node.name().to_owned();
    if let Some(prompt) = config.prompt(&name) {
        node = node.set_prompt(prompt);
    }
    if let Some(model) = &config.model {
        node = node.set_model(model);
    }
    if let Some(o) = config.nodes.get(&name) {
        if let Some(model) = &o.model {
            node = node.set_model(model);
        }
        if let Some(t) = o.temperature {
            node = node.set_temperature(t);
        }
        if let Some(n) = o.max_tokens {
            node = node.set_max_tokens(n);
        }
    }
    node
}

/// Parse a configuration from text; `path` is used in error messages and to
/// resolve prompt files.
pub fn parse(text: &str, path: &Path) -> Result<RuntimeConfig, Error> {
    let mut config: RuntimeConfig = parse_yaml(text, path)?;
    validate(&config, path)?;
    let base = path.parent().map(Path::to_owned).unwrap_or_default();
    for (op_index, op) in config.operators.iter_mut().enumerate() {
        for (node, source) in op.prompts.iter_mut() {
            if let PromptSource::File { file } = source {
                let full = if file.is_absolute() {
                    file.clone()
                } else {
                    base.join(&*file)
                };
                let text = std::fs::read_to_string(&full).map_err(|e| Error::Io {
                    path: full.clone(),
                    message: format!(
                        "{e} (prompt of node `{node}`, operators[{op_index}].prompts.{node})"
                    ),
                })?;
                *source = PromptSource::Inline(text.trim().to_owned());
            }
        }
    }
    Ok(config)
}

/// Deserialize YAML text into `T`; a malformed document is an
/// [`Error::Config`] with `path`, line, column and the offending key.
pub fn parse_yaml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T, Error> {
    openvibe_config::from_yaml(text).map_err(|p| Error::Config {
        path: path.to_owned(),
        line: p.line,
        column: p.column,
        key: p.key,
        message: p.message,
    })
}

/// Semantic checks serde cannot do: unique ids, cron triggers with schedules.
fn validate(config: &RuntimeConfig, path: &Path) -> Result<(), Error> {
    let problem = |key: String, message: String| Error::Config {
        path: path.to_owned(),
        line: 0,
        column: 0,
        key,
        message,
    };
    let mut seen_ops = std::collections::HashSet::new();
    for (i, op) in config.operators.iter().enumerate() {
        if op.id.trim().is_empty() {
            return Err(problem(
                format!("operators[{i}].id"),
                "operator id is empty".into(),
            ));
        }
        if !seen_ops.insert(op.id.as_str()) {
            return Err(problem(
                format!("operators[{i}].id"),
                format!("operator id `{}` is used twice", op.id),
            ));
        }
        let mut seen_wf = std::collections::HashSet::new();
        let mut seen_tr = std::collections::HashSet::new();
        for (j, wf) in op.workflows.iter().enumerate() {
            if !seen_wf.insert(wf.id.as_str()) {
                return Err(problem(
                    format!("operators[{i}].workflows[{j}].id"),
                    format!(
                        "workflow id `{}` is used twice in operator `{}`",
                        wf.id, op.id
                    ),
                ));
            }
            for (k, t) in wf.triggers.iter().enumerate() {
                let key = format!("operators[{i}].workflows[{j}].triggers[{k}]");
                if !seen_tr.insert(t.id.as_str()) {
                    return Err(problem(
                        format!("{key}.id"),
                        format!(
                            "trigger id `{}` is used twice in operator `{}`",
                            t.id, op.id
                        ),
                    ));
                }
                if t.kind.is_timed() && t.schedule.as_deref().is_none_or(str::is_empty) {
                    return Err(problem(
                        format!("{key}.schedule"),
                        format!(
                            "{} trigger `{}` needs a schedule",
                            if t.kind == TriggerKind::Cron {
                                "cron"
                            } else {
                                "interval"
                            },
                            t.id
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
