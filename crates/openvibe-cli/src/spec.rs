//! Role files: a role, its tools, operators, workflows, workspace facts and
//! runs, declared in YAML (see `demo/cro/role.yaml`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openvibe::memory::WorkspaceMemory;
use openvibe::operators::config::{TriggerDef, parse_yaml};
use openvibe::primitives::{AgentNode, LlmNode, Node, ScopeSpec, Tool};
use openvibe::protocols::{Classification, Fact, State, TriggerConfig};
use openvibe::{Operator, Role};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::CliError;
use crate::template::Template;
use crate::tools::JsonSearchTool;

/// A whole role file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleFile {
    /// The role.
    pub role: RoleDef,
    /// Tools by name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolDef>,
    /// Operators.
    #[serde(default)]
    pub operators: Vec<OperatorDef>,
    /// Facts stored in the workspace before the runs.
    #[serde(default)]
    pub workspace: Vec<FactDef>,
    /// Activations, in order.
    #[serde(default)]
    pub runs: Vec<RunDef>,
}

/// The role itself: id, soul (inline, or a `.md`/`.yaml` file relative to
/// the role file), authority and clearance, as in a configuration
/// directory's `roles.yaml`. Its `operators` list must stay empty here: a
/// role file declares its operators at the top level.
pub use openvibe::roles::config::RoleDef;

/// A tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// The kind of tool (only `json_search` for now).
    pub kind: ToolKind,
    /// What it does, for the model.
    pub description: String,
    /// The JSON file it searches (an array of objects), relative to the role file.
    pub file: PathBuf,
    /// The fields a query is matched against (default: all string fields).
    #[serde(default)]
    pub fields: Vec<String>,
    /// The authority action it performs.
    #[serde(default)]
    pub action: Option<String>,
}

/// Tool kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Case-insensitive search over the records of a JSON file.
    JsonSearch,
}

/// An operator.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorDef {
    /// Operator id.
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Default model of its nodes.
    #[serde(default)]
    pub model: Option<String>,
    /// Nodes.
    pub nodes: Vec<NodeDef>,
    /// Workflows.
    #[serde(default)]
    pub workflows: Vec<WorkflowDef>,
}

/// A node.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDef {
    /// Name.
    pub name: String,
    /// `llm` or `agent`.
    pub kind: NodeKind,
    /// System prompt.
    pub prompt: String,
    /// User message template; `{key}` is replaced by the state's value.
    pub user: String,
    /// Where the answer goes in the state.
    #[serde(default)]
    pub output_key: Option<String>,
    /// Model (overrides the operator's).
    #[serde(default)]
    pub model: Option<String>,
    /// Temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Max tokens.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Tools (agent nodes).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Max model calls (agent nodes).
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Memory scope; values are templates.
    #[serde(default)]
    pub memory_scope: Option<ScopeDef>,
}

/// Node kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// One LLM call.
    Llm,
    /// A tool-use loop.
    Agent,
}

/// A memory scope; each value may contain `{key}` placeholders.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeDef {
    /// Entity.
    #[serde(default)]
    pub entity: Option<String>,
    /// Domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Query.
    #[serde(default)]
    pub query: Option<String>,
}

/// A workflow: its nodes run in sequence.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowDef {
    /// Workflow id.
    pub id: String,
    /// The nodes, in order.
    pub nodes: Vec<String>,
    /// Its triggers.
    #[serde(default)]
    pub triggers: Vec<TriggerDef>,
}

/// A workspace fact.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactDef {
    /// Fact id.
    pub id: String,
    /// Content.
    pub content: String,
    /// Entity.
    #[serde(default)]
    pub entity: String,
    /// Domain.
    #[serde(default)]
    pub domain: String,
    /// Classification (default internal).
    #[serde(default)]
    pub classification: Classification,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// One activation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDef {
    /// Operator id.
    pub operator: String,
    /// Workflow id.
    pub workflow: String,
    /// Input state.
    #[serde(default)]
    pub input: Map<String, Value>,
}

/// Where a role file's relative paths are read from.
#[derive(Debug, Clone)]
pub enum Files {
    /// The directory of the role file.
    Disk(PathBuf),
    /// Files compiled into the binary (name → text).
    Embedded(&'static [(&'static str, &'static str)]),
}

impl Files {
    /// The text of `path`.
    pub fn read(&self, path: &Path) -> Result<String, CliError> {
        match self {
            Self::Disk(base) => {
                let full = if path.is_absolute() {
                    path.to_owned()
                } else {
                    base.join(path)
                };
                std::fs::read_to_string(&full).map_err(|e| CliError::Io {
                    path: full,
                    message: e.to_string(),
                })
            }
            Self::Embedded(files) => files
                .iter()
                .find(|(name, _)| Path::new(name) == path)
                .map(|(_, text)| (*text).to_owned())
                .ok_or_else(|| CliError::Io {
                    path: path.to_owned(),
                    message: "not one of the embedded demo files".into(),
                }),
        }
    }
}

impl RoleFile {
    /// The role files `path` names: the file itself, or every `*.yaml` and
    /// `*.yml` file of a directory (sorted by name; at least one, and no two
    /// with the same role id).
    pub fn load_all(path: &Path) -> Result<Vec<(Self, Files)>, CliError> {
        if !path.is_dir() {
            return Ok(vec![Self::load(path)?]);
        }
        let io = |e: std::io::Error| CliError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(CliError::Usage(format!(
                "{}: no role files (*.yaml) in this directory",
                path.display()
            )));
        }
        let mut loaded: Vec<(Self, Files)> = Vec::with_capacity(paths.len());
        for (i, p) in paths.iter().enumerate() {
            let (file, files) = Self::load(p)?;
            if let Some(twin) = loaded.iter().position(|(f, _)| f.role.id == file.role.id) {
                return Err(CliError::Spec {
                    path: p.clone(),
                    message: format!(
                        "role `{}` is declared in {} too: one file per role",
                        file.role.id,
                        paths[twin].display()
                    ),
                });
            }
            debug_assert_eq!(loaded.len(), i);
            loaded.push((file, files));
        }
        Ok(loaded)
    }

    /// Parse a role file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, CliError> {
        let file: Self = parse_yaml(text, path)?;
        file.validate(path)?;
        Ok(file)
    }

    /// Read and parse a role file from disk.
    pub fn load(path: &Path) -> Result<(Self, Files), CliError> {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let base = path.parent().map(Path::to_owned).unwrap_or_default();
        Ok((Self::parse(&text, path)?, Files::Disk(base)))
    }

    fn validate(&self, path: &Path) -> Result<(), CliError> {
        let fail = |message: String| CliError::Spec {
            path: path.to_owned(),
            message,
        };
        if !self.role.operators.is_empty() {
            return Err(fail(
                "`role.operators` names operators of a configuration directory; a role file declares its operators under the top-level `operators`".to_owned(),
            ));
        }
        for op in &self.operators {
            let names: Vec<&str> = op.nodes.iter().map(|n| n.name.as_str()).collect();
            for node in &op.nodes {
                for tool in &node.tools {
                    if !self.tools.contains_key(tool) {
                        return Err(fail(format!(
                            "node `{}` of operator `{}` uses tool `{tool}`, which is not declared under `tools`",
                            node.name, op.id
                        )));
                    }
                }
                if node.kind == NodeKind::Llm && !node.tools.is_empty() {
                    return Err(fail(format!(
                        "node `{}` is an llm node and cannot have tools; make it an agent node",
                        node.name
                    )));
                }
            }
            for wf in &op.workflows {
                if wf.nodes.is_empty() {
                    return Err(fail(format!("workflow `{}` has no nodes", wf.id)));
                }
                if let Some(missing) = wf.nodes.iter().find(|n| !names.contains(&n.as_str())) {
                    return Err(fail(format!(
                        "workflow `{}` of operator `{}` names node `{missing}`, which the operator does not have",
                        wf.id, op.id
                    )));
                }
            }
        }
        for run in &self.runs {
            let op = self
                .operators
                .iter()
                .find(|o| o.id == run.operator)
                .ok_or_else(|| {
                    fail(format!(
                        "a run names operator `{}`, which is not declared",
                        run.operator
                    ))
                })?;
            if !op.workflows.iter().any(|w| w.id == run.workflow) {
                return Err(fail(format!(
                    "a run names workflow `{}` of operator `{}`, which is not declared",
                    run.workflow, run.operator
                )));
            }
        }
        Ok(())
    }

    /// The role (without LLM or memory: a `RoleRuntime` adds those).
    pub fn build_role(&self, files: &Files) -> Result<Role, CliError> {
        let mut tools: BTreeMap<&str, Arc<dyn Tool>> = BTreeMap::new();
        for (name, def) in &self.tools {
            let text = files.read(&def.file)?;
            let tool = JsonSearchTool::from_json(name, &def.description, &text, def.fields.clone())
                .map_err(|message| CliError::Io {
                    path: def.file.clone(),
                    message,
                })?
                .with_action(def.action.clone());
            tools.insert(name, Arc::new(tool));
        }
        let mut role = Role::new(self.role.id.clone());
        if let Some(soul) = &self.role.soul {
            let soul = Soul::classify(soul);
            role = match soul {
                Soul::File(path) => role.soul(files.read(&path)?),
                Soul::Text(text) => role.soul(text),
            };
        }
        let mut role = self.role.apply(role);
        for op in &self.operators {
            role = role.operator(build_operator(op, &tools)?);
        }
        Ok(role)
    }

    /// Store the declared workspace facts.
    pub async fn seed_workspace(&self, workspace: &WorkspaceMemory) -> Result<(), CliError> {
        for f in &self.workspace {
            let fact = Fact::new(f.id.clone(), f.content.clone())
                .entity(f.entity.clone())
                .domain(f.domain.clone())
                .classification(f.classification)
                .tags(f.tags.clone())
                .source("role file");
            workspace.store_fact(fact).await?;
        }
        Ok(())
    }
}

enum Soul {
    File(PathBuf),
    Text(String),
}

impl Soul {
    /// As in the source design: a single line ending in `.md`/`.yaml` is a file.
    fn classify(value: &str) -> Self {
        match openvibe::roles::Soul::from_value(value) {
            openvibe::roles::Soul::File(path) => Self::File(path),
            _ => Self::Text(value.to_owned()),
        }
    }
}

/// The settings both node kinds share.
macro_rules! configure {
    ($n:ident, $def:ident, $model:ident) => {{
        let mut n = $n;
        if let Some(model) = &$model {
            n = n.model(model.clone());
        }
        if let Some(t) = $def.temperature {
            n = n.temperature(t);
        }
        if let Some(m) = $def.max_tokens {
            n = n.max_tokens(m);
        }
        if let Some(key) = &$def.output_key {
            n = n.output_key(key.clone());
        }
        if let Some(scope) = &$def.memory_scope {
            n = n.memory_scope(scope_spec(scope));
        }
        n
    }};
}

fn build_operator(
    def: &OperatorDef,
    tools: &BTreeMap<&str, Arc<dyn Tool>>,
) -> Result<Operator, CliError> {
    let mut op = Operator::new(def.id.clone());
    if let Some(name) = &def.name {
        op = op.name(name.clone());
    }
    for node in &def.nodes {
        let user = Template::parse(&node.user);
        let user_fn = move |state: &State| user.render(state);
        let model = node.model.clone().or_else(|| def.model.clone());
        let node_arc: Arc<dyn Node> = match node.kind {
            NodeKind::Llm => {
                let mut n = LlmNode::new(node.name.clone(), node.prompt.clone(), user_fn);
                n = configure!(n, node, model);
                Arc::new(n)
            }
            NodeKind::Agent => {
                let mut n = AgentNode::new(node.name.clone(), node.prompt.clone(), user_fn);
                for tool in &node.tools {
                    if let Some(t) = tools.get(tool.as_str()) {
                        n = n.tool_arc(t.clone());
                    }
                }
                if let Some(turns) = node.max_turns {
                    n = n.max_turns(turns);
                }
                n = configure!(n, node, model);
                Arc::new(n)
            }
        };
        op = op.node_arc(node_arc);
    }
    for wf in &def.workflows {
        op = op.sequence(wf.id.clone(), wf.nodes.clone())?;
        for t in &wf.triggers {
            op = op.trigger(TriggerConfig {
                id: t.id.clone(),
                kind: t.kind,
                schedule: t.schedule.clone(),
                workflow: wf.id.clone(),
                operator_id: None,
                input: t.input.clone(),
            });
        }
    }
    Ok(op)
}

fn scope_spec(def: &ScopeDef) -> ScopeSpec {
    let mut spec = ScopeSpec::new();
    if let Some(entity) = &def.entity {
        let t = Template::parse(entity);
        spec = match t.as_constant() {
            Some(c) => spec.entity(c),
            None => spec.entity_from(move |s| t.render(s).ok()),
        };
    }
    if let Some(domain) = &def.domain {
        let t = Template::parse(domain);
        spec = match t.as_constant() {
            Some(c) => spec.domain(c),
            None => spec.domain_from(move |s| t.render(s).ok()),
        };
    }
    if let Some(query) = &def.query {
        let t = Template::parse(query);
        spec = match t.as_constant() {
            Some(c) => spec.query(c),
            None => spec.query_from(move |s| t.render(s).ok()),
        };
    }
    if !def.tags.is_empty() {
        spec = spec.tags(def.tags.clone());
    }
    spec
}
