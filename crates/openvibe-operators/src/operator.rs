//! `Operator`: nodes and workflows under one `operator_id`; `BoundOperator`:
//! an operator with its infrastructure (LLM, memory hooks, tool gate) injected.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use openvibe_primitives::{Node, NodeContext};
use openvibe_protocols::{State, TriggerConfig};
use tracing::Instrument;

use crate::{Checkpointer, CompiledGraph, END, Error, StateGraph, Step};

/// What an operator can do: its nodes and its workflows (compiled graphs),
/// independent of which LLM or memory it runs with. Cheap to clone.
///
/// ```
/// use openvibe_operators::Operator;
/// use openvibe_primitives::LlmNode;
///
/// let op = Operator::new("revenue_ops")
///     .name("Revenue Operations")
///     .node(LlmNode::new("qualify_lead", "You qualify leads.", |_| Ok("lead".into())))
///     .node(LlmNode::new("route_lead", "You route leads.", |_| Ok("lead".into())))
///     .sequence("qualify", ["qualify_lead", "route_lead"])
///     .unwrap();
/// assert_eq!(op.workflow_ids(), vec!["qualify"]);
/// ```
#[derive(Clone)]
pub struct Operator {
    id: String,
    name: String,
    nodes: BTreeMap<String, Arc<dyn Node>>,
    workflows: BTreeMap<String, CompiledGraph>,
    triggers: Vec<TriggerConfig>,
}

impl Operator {
    /// An operator with no nodes yet.
    pub fn new(id: impl Into<String>) -> Self {
        let id = id.into();
        Self {
            name: id.clone(),
            id,
            nodes: BTreeMap::new(),
            workflows: BTreeMap::new(),
            triggers: Vec::new(),
        }
    }

    /// Add a trigger (registered with the scheduler when a role runtime starts).
    #[must_use]
    pub fn trigger(mut self, mut trigger: TriggerConfig) -> Self {
        trigger.operator_id = Some(self.id.clone());
        self.triggers.push(trigger);
        self
    }

    /// The triggers.
    pub fn triggers(&self) -> &[TriggerConfig] {
        &self.triggers
    }

    /// Its display name (defaults to the id).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Add a node (replacing one of the same name).
    #[must_use]
    pub fn node(self, node: impl Node + 'static) -> Self {
        self.node_arc(Arc::new(node))
    }

    /// Add a shared node (replacing one of the same name).
    #[must_use]
    pub fn node_arc(mut self, node: Arc<dyn Node>) -> Self {
        self.nodes.insert(node.name().to_owned(), node);
        self
    }

    /// Add a workflow.
    #[must_use]
    pub fn workflow(mut self, id: impl Into<String>, graph: CompiledGraph) -> Self {
        self.workflows.insert(id.into(), graph);
        self
    }

    /// Add a workflow that runs these nodes of the operator one after another.
    pub fn sequence<I, S>(self, id: impl Into<String>, node_names: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: Vec<String> = node_names.into_iter().map(Into::into).collect();
        let mut graph = StateGraph::new();
        for name in &names {
            let node = self.get_node(name).ok_or_else(|| Error::UnknownNode {
                node: name.clone(),
                context: format!("operator `{}`", self.id),
            })?;
            graph = graph.add_node_arc(node);
        }
        if let Some(first) = names.first() {
            graph = graph.set_entry_point(first.clone());
        }
        for pair in names.windows(2) {
            if let [from, to] = pair {
                graph = graph.add_edge(from.clone(), to.clone());
            }
        }
        if let Some(last) = names.last() {
            graph = graph.add_edge(last.clone(), END);
        }
        let compiled = graph.compile()?;
        Ok(self.workflow(id, compiled))
    }

    /// The operator id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn display_name(&self) -> &str {
        &self.name
    }

    /// A node by name.
    pub fn get_node(&self, name: &str) -> Option<Arc<dyn Node>> {
        self.nodes.get(name).cloned()
    }

    /// Node names, sorted.
    pub fn node_names(&self) -> Vec<&str> {
        self.nodes.keys().map(String::as_str).collect()
    }

    /// A workflow by id.
    pub fn get_workflow(&self, id: &str) -> Option<&CompiledGraph> {
        self.workflows.get(id)
    }

    /// Workflow ids, sorted.
    pub fn workflow_ids(&self) -> Vec<&str> {
        self.workflows.keys().map(String::as_str).collect()
    }

    /// Inject the infrastructure; the context's `operator_id` is set to this operator's id.
    pub fn bind(&self, ctx: NodeContext) -> BoundOperator {
        BoundOperator {
            ctx: ctx.with_operator_id(self.id.clone()),
            operator: self.clone(),
        }
    }
}

impl fmt::Debug for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operator")
            .field("id", &self.id)
            .field("nodes", &self.node_names())
            .field("workflows", &self.workflow_ids())
            .finish()
    }
}

/// An operator with its LLM, memory hooks and tool gate injected: ready to run.
#[derive(Clone, Debug)]
pub struct BoundOperator {
    operator: Operator,
    ctx: NodeContext,
}

impl BoundOperator {
    /// The operator.
    pub fn operator(&self) -> &Operator {
        &self.operator
    }

    /// What the nodes run with.
    pub fn context(&self) -> &NodeContext {
        &self.ctx
    }

    /// Run one node.
    pub async fn run_node(&self, node: &str, state: State) -> Result<State, Error> {
        let n = self
            .operator
            .get_node(node)
            .ok_or_else(|| Error::UnknownNode {
                node: node.to_owned(),
                context: format!("operator `{}`", self.operator.id),
            })?;
        let span = tracing::info_span!("operator_run", operator = %self.operator.id, node);
        n.run(&self.ctx, state)
            .instrument(span)
            .await
            .map_err(|source| Error::Node {
                node: node.to_owned(),
                source: Box::new(source),
            })
    }

    /// Run a workflow to its end.
    pub async fn run_workflow(&self, workflow: &str, state: State) -> Result<State, Error> {
        let graph = self.workflow(workflow)?;
        let span = tracing::info_span!("operator_run", operator = %self.operator.id, workflow);
        graph.invoke(&self.ctx, state).instrument(span).await
    }

    /// Run a workflow as run `run_id`, saving a checkpoint (with `origin`,
    /// what started it) before its first node and after every node: when
    /// `checkpointer` already holds an unfinished checkpoint of the run, it
    /// resumes there, so a run cut off by a crash finishes without running
    /// its completed nodes again.
    pub async fn run_workflow_durably(
        &self,
        workflow: &str,
        run_id: &str,
        origin: serde_json::Value,
        checkpointer: Arc<dyn Checkpointer>,
        state: State,
    ) -> Result<State, Error> {
        let graph = self
            .workflow(workflow)?
            .clone()
            .with_checkpointer(checkpointer);
        let span =
            tracing::info_span!("operator_run", operator = %self.operator.id, workflow, run_id);
        graph
            .invoke_run_from(&self.ctx, run_id, origin, state)
            .instrument(span)
            .await
    }

    /// Run one node of a workflow (`node`, or its entry point when `None`)
    /// and say which comes next: how a durable engine (Temporal) runs a
    /// workflow, one recorded step at a time.
    pub async fn step_workflow(
        &self,
        workflow: &str,
        node: Option<&str>,
        state: State,
    ) -> Result<Step, Error> {
        let graph = self.workflow(workflow)?;
        let span =
            tracing::info_span!("operator_step", operator = %self.operator.id, workflow, node);
        graph.step(&self.ctx, node, state).instrument(span).await
    }

    fn workflow(&self, workflow: &str) -> Result<&CompiledGraph, Error> {
        self.operator
            .get_workflow(workflow)
            .ok_or_else(|| Error::UnknownWorkflow {
                operator: self.operator.id.clone(),
                workflow: workflow.to_owned(),
                known: self
                    .operator
                    .workflow_ids()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            })
    }
}
