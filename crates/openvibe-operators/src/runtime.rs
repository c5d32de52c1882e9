//! `OperatorRuntime`: operators loaded from YAML, graphs registered per
//! workflow, activation by trigger or workflow.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use openvibe_primitives::NodeContext;
use openvibe_protocols::{ContextAssembler, EpisodeSink, LlmProvider, State, TriggerConfig};
use tracing::Instrument;

use crate::config::{self, OperatorConfig, RuntimeConfig};
use crate::{CompiledGraph, Error, Operator};

type Factory = Arc<dyn Fn(&OperatorConfig) -> Result<CompiledGraph, Error> + Send + Sync>;

/// Operators from a configuration file, with a graph factory per workflow.
///
/// ```
/// use std::sync::Arc;
/// use openvibe_operators::{OperatorRuntime, StateGraph, END};
/// use openvibe_primitives::{LlmNode, testing::ScriptedLlm};
/// use openvibe_protocols::{LlmResponse, State};
///
/// let yaml = r#"
/// operators:
///   - id: company_intel
///     prompts: { research: You are a research analyst. }
///     workflows:
///       - id: research
///         triggers: [{ id: t1, type: on_demand }]
/// "#;
/// let mut runtime = OperatorRuntime::from_yaml_str(yaml, "operators.yaml").unwrap();
/// runtime.register_workflow("company_intel", "research", |config| {
///     let node = config.apply_llm(
///         LlmNode::new("research", "", |s: &State| Ok(format!("Research {}", s.require_str("company_name")?)))
///             .output_key("research"),
///     );
///     StateGraph::new().add_node(node).set_entry_point("research").add_edge("research", END).compile()
/// }).unwrap();
/// let llm = ScriptedLlm::new([LlmResponse::text("Acme makes anvils.")]);
/// let runtime = runtime.with_llm(Arc::new(llm.clone()));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let input: State = [("company_name", "Acme")].into_iter().collect();
/// let out = runtime.activate("company_intel", "t1", input).await.unwrap();
/// assert_eq!(out.get_str("research"), Some("Acme makes anvils."));
/// assert_eq!(llm.requests()[0].system, "You are a research analyst.");
/// # });
/// ```
#[derive(Clone, Default)]
pub struct OperatorRuntime {
    operators: BTreeMap<String, OperatorConfig>,
    factories: BTreeMap<(String, String), Factory>,
    llm: Option<Arc<dyn LlmProvider>>,
    assembler: Option<Arc<dyn ContextAssembler>>,
    episode_sink: Option<Arc<dyn EpisodeSink>>,
}

impl OperatorRuntime {
    /// Load operators from a YAML file. Malformed files fail with file, line,
    /// column and the offending key.
    pub fn from_yaml(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Self::from_yaml_str(&text, path)
    }

    /// Load operators from YAML text; `path` names it in errors and anchors
    /// relative prompt files.
    pub fn from_yaml_str(text: &str, path: impl AsRef<Path>) -> Result<Self, Error> {
        Ok(Self::from_config(config::parse(text, path.as_ref())?))
    }

    /// A runtime over an already parsed configuration.
    pub fn from_config(config: RuntimeConfig) -> Self {
        Self {
            operators: config
                .operators
                .into_iter()
                .map(|op| (op.id.clone(), op))
                .collect(),
            ..Self::default()
        }
    }

    /// The LLM nodes run with.
    #[must_use]
    pub fn with_llm(mut self, llm: Arc<dyn LlmProvider>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// A memory context assembler for nodes with a memory scope.
    #[must_use]
    pub fn with_assembler(mut self, assembler: Arc<dyn ContextAssembler>) -> Self {
        self.assembler = Some(assembler);
        self
    }

    /// Where episodes go.
    #[must_use]
    pub fn with_episode_sink(mut self, sink: Arc<dyn EpisodeSink>) -> Self {
        self.episode_sink = Some(sink);
        self
    }

    /// Register how to build the graph of `operator`/`workflow`; the factory
    /// gets the operator's configuration (prompts, models, overrides).
    pub fn register_workflow(
        &mut self,
        operator: &str,
        workflow: &str,
        factory: impl Fn(&OperatorConfig) -> Result<CompiledGraph, Error> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let config = self.operator_config(operator)?;
        if !config.workflows.iter().any(|w| w.id == workflow) {
            return Err(unknown_workflow(config, workflow));
        }
        self.factories.insert(
            (operator.to_owned(), workflow.to_owned()),
            Arc::new(factory),
        );
        Ok(())
    }

    /// The configuration of an operator.
    pub fn operator_config(&self, operator: &str) -> Result<&OperatorConfig, Error> {
        self.operators
            .get(operator)
            .ok_or_else(|| Error::UnknownOperator {
                operator: operator.to_owned(),
                known: self.operators.keys().cloned().collect(),
            })
    }

    /// Operator ids, sorted.
    pub fn operator_ids(&self) -> Vec<&str> {
        self.operators.keys().map(String::as_str).collect()
    }

    /// Every trigger of every operator.
    pub fn triggers(&self) -> Vec<TriggerConfig> {
        self.operators
            .values()
            .flat_map(OperatorConfig::triggers)
            .collect()
    }

    /// Build the [`Operator`] with every registered workflow of `operator`
    /// (for roles, which bind it to their own LLM and memory).
    pub fn operator(&self, operator: &str) -> Result<Operator, Error> {
        let config = self.operator_config(operator)?;
        let mut op = Operator::new(config.id.clone()).name(if config.name.is_empty() {
            config.id.clone()
        } else {
            config.name.clone()
        });
        for wf in &config.workflows {
            if let Some(factory) = self.factories.get(&(config.id.clone(), wf.id.clone())) {
                op = op.workflow(wf.id.clone(), factory(config)?);
            }
        }
        for trigger in config.triggers() {
            op = op.trigger(trigger);
        }
        Ok(op)
    }

    /// Run the workflow that `trigger` of `operator` starts.
    pub async fn activate(
        &self,
        operator: &str,
        trigger: &str,
        input: State,
    ) -> Result<State, Error> {
        let config = self.operator_config(operator)?;
        let workflow = config
            .workflows
            .iter()
            .find(|w| w.triggers.iter().any(|t| t.id == trigger))
            .ok_or_else(|| Error::UnknownTrigger {
                operator: operator.to_owned(),
                trigger: trigger.to_owned(),
                known: config.triggers().into_iter().map(|t| t.id).collect(),
            })?;
        self.activate_workflow(operator, &workflow.id, input).await
    }

    /// Run a workflow of `operator` directly.
    pub async fn activate_workflow(
        &self,
        operator: &str,
        workflow: &str,
        input: State,
    ) -> Result<State, Error> {
        let config = self.operator_config(operator)?;
        if !config.workflows.iter().any(|w| w.id == workflow) {
            return Err(unknown_workflow(config, workflow));
        }
        let factory = self
            .factories
            .get(&(operator.to_owned(), workflow.to_owned()))
            .ok_or_else(|| Error::NoFactory {
                operator: operator.to_owned(),
                workflow: workflow.to_owned(),
            })?;
        let llm = self.llm.clone().ok_or(Error::NoLlm)?;
        let graph = factory(config)?;
        let mut ctx = NodeContext::new(llm).with_operator_id(operator);
        ctx.assembler = self.assembler.clone();
        ctx.episode_sink = self.episode_sink.clone();
        let span = tracing::info_span!("operator_run", operator, workflow);
        graph.invoke(&ctx, input).instrument(span).await
    }
}

fn unknown_workflow(config: &OperatorConfig, workflow: &str) -> Error {
    Error::UnknownWorkflow {
        operator: config.id.clone(),
        workflow: workflow.to_owned(),
        known: config.workflows.iter().map(|w| w.id.clone()).collect(),
    }
}

impl fmt::Debug for OperatorRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorRuntime")
            .field("operators", &self.operator_ids())
            .field("registered", &self.factories.keys().collect::<Vec<_>>())
            .field("llm", &self.llm.is_some())
            .finish_non_exhaustive()
    }
}
