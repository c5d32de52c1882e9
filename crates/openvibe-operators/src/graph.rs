//! `StateGraph`: nodes, edges, conditional edges, an entry point; compiled,
//! validated, bounded, checkpointed.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use openvibe_primitives::{Node, NodeContext};
use openvibe_protocols::{State, StoreError};
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use crate::Error;

/// The name of the virtual node that ends a run.
pub const END: &str = "__end__";

/// Default bound on the number of node executions in one run.
pub const DEFAULT_RECURSION_LIMIT: u32 = 25;

type Router = Arc<dyn Fn(&State) -> String + Send + Sync>;

#[derive(Clone)]
enum Edge {
    To(String),
    Conditional {
        router: Router,
        targets: Vec<String>,
    },
}

/// A workflow under construction: nodes joined by edges.
///
/// ```
/// use std::sync::Arc;
/// use openvibe_operators::{StateGraph, END};
/// use openvibe_primitives::{LlmNode, NodeContext, testing::ScriptedLlm};
/// use openvibe_protocols::{LlmResponse, State};
///
/// let research = LlmNode::new("research", "You research.", |_| Ok("go".into())).output_key("notes");
/// let write = LlmNode::new("write", "You write.", |_| Ok("write".into())).output_key("draft");
/// let graph = StateGraph::new()
///     .add_node(research)
///     .add_node(write)
///     .set_entry_point("research")
///     .add_edge("research", "write")
///     .add_edge("write", END)
///     .compile()
///     .unwrap();
///
/// let llm = ScriptedLlm::new([LlmResponse::text("facts"), LlmResponse::text("a draft")]);
/// let ctx = NodeContext::new(Arc::new(llm));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let out = graph.invoke(&ctx, State::new()).await.unwrap();
/// assert_eq!(out.get_str("draft"), Some("a draft"));
/// # });
/// ```
#[derive(Clone, Default)]
pub struct StateGraph {
    nodes: Vec<(String, Arc<dyn Node>)>,
    edges: Vec<(String, Edge)>,
    entry: Option<String>,
}

impl StateGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a node under its own name.
    #[must_use]
    pub fn add_node(self, node: impl Node + 'static) -> Self {
        self.add_node_arc(Arc::new(node))
    }

    /// Add a shared node under its own name.
    #[must_use]
    pub fn add_node_arc(mut self, node: Arc<dyn Node>) -> Self {
        self.nodes.push((node.name().to_owned(), node));
        self
    }

    /// Add a node that runs a closure on the state (no LLM call).
    #[must_use]
    pub fn add_fn_node(
        self,
        name: impl Into<String>,
        f: impl Fn(State) -> Result<State, openvibe_primitives::Error> + Send + Sync + 'static,
    ) -> Self {
        self.add_node(FnNode {
            name: name.into(),
            f: Box::new(f),
        })
    }

    /// Always go from `from` to `to` (which may be [`END`]).
    #[must_use]
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges.push((from.into(), Edge::To(to.into())));
        self
    }

    /// After `from`, go where `router` says: one of `targets` or [`END`].
    #[must_use]
    pub fn add_conditional_edges<I, S>(
        mut self,
        from: impl Into<String>,
        router: impl Fn(&State) -> String + Send + Sync + 'static,
        targets: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.edges.push((
            from.into(),
            Edge::Conditional {
                router: Arc::new(router),
                targets: targets.into_iter().map(Into::into).collect(),
            },
        ));
        self
    }

    /// The node a run starts at.
    #[must_use]
    pub fn set_entry_point(mut self, node: impl Into<String>) -> Self {
        self.entry = Some(node.into());
        self
    }

    /// Validate and freeze the graph: every edge names known nodes, there is
    /// an entry point, every node has exactly one way out, and every node is
    /// reachable from the entry point.
    pub fn compile(self) -> Result<CompiledGraph, Error> {
        let mut nodes = HashMap::with_capacity(self.nodes.len());
        for (name, node) in self.nodes {
            if name == END {
                return Err(Error::UnknownNode {
                    node: name,
                    context: "END is reserved and cannot be a node".into(),
                });
            }
            if nodes.insert(name.clone(), node).is_some() {
                return Err(Error::DuplicateNode(name));
            }
        }
        let entry = self.entry.ok_or(Error::MissingEntryPoint)?;
        if !nodes.contains_key(&entry) {
            return Err(Error::UnknownNode {
                node: entry,
                context: "entry point".into(),
            });
        }
        let known = |name: &str, context: String| {
            if name == END || nodes.contains_key(name) {
                Ok(())
            } else {
                Err(Error::UnknownNode {
                    node: name.to_owned(),
                    context,
                })
            }
        };
        let mut out: HashMap<String, Edge> = HashMap::with_capacity(self.edges.len());
        for (from, edge) in self.edges {
            if !nodes.contains_key(&from) {
                return Err(Error::UnknownNode {
                    node: from,
                    context: "source of an edge".into(),
                });
            }
            match &edge {
                Edge::To(to) => known(to, format!("edge from `{from}`"))?,
                Edge::Conditional { targets, .. } => {
                    for target in targets {
                        known(target, format!("conditional edge from `{from}`"))?;
                    }
                }
            }
            if out.insert(from.clone(), edge).is_some() {
                return Err(Error::AmbiguousEdges(from));
            }
        }
        let mut names: Vec<&String> = nodes.keys().collect();
        names.sort();
        if let Some(dead_end) = names.iter().find(|n| !out.contains_key(n.as_str())) {
            return Err(Error::NoOutgoingEdge((*dead_end).clone()));
        }
        // Reachability from the entry point.
        let mut seen: HashSet<&str> = HashSet::from([entry.as_str()]);
        let mut queue = VecDeque::from([entry.as_str()]);
        while let Some(current) = queue.pop_front() {
            let next: Vec<&str> = match out.get(current) {
                Some(Edge::To(to)) => vec![to.as_str()],
                Some(Edge::Conditional { targets, .. }) => {
                    targets.iter().map(String::as_str).collect()
                }
                None => Vec::new(),
            };
            for n in next {
                if n != END && seen.insert(n) {
                    queue.push_back(n);
                }
            }
        }
        let unreachable: Vec<String> = names
            .iter()
            .filter(|n| !seen.contains(n.as_str()))
            .map(|n| (*n).clone())
            .collect();
        if !unreachable.is_empty() {
            return Err(Error::UnreachableNodes {
                entry,
                nodes: unreachable,
            });
        }
        Ok(CompiledGraph {
            inner: Arc::new(Compiled {
                nodes,
                edges: out,
                entry,
            }),
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            checkpointer: None,
        })
    }
}

impl fmt::Debug for StateGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.nodes.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("StateGraph")
            .field("nodes", &names)
            .field("entry", &self.entry)
            .finish_non_exhaustive()
    }
}

struct FnNode {
    name: String,
    f: Box<dyn Fn(State) -> Result<State, openvibe_primitives::Error> + Send + Sync>,
}

#[async_trait]
impl Node for FnNode {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(
        &self,
        _ctx: &NodeContext,
        state: State,
    ) -> Result<State, openvibe_primitives::Error> {
        (self.f)(state)
    }
}

struct Compiled {
    nodes: HashMap<String, Arc<dyn Node>>,
    edges: HashMap<String, Edge>,
    entry: String,
}

/// A state saved after a node completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run.
    pub run_id: String,
    /// How many nodes have completed in this run.
    pub step: u32,
    /// The node that just completed.
    pub completed: String,
    /// The node to run next ([`END`] when the run is finished).
    pub next: String,
    /// The state after `completed`.
    pub state: State,
    /// What started the run, as whoever started it recorded it (a
    /// scheduled firing names its role, operator, workflow and due time),
    /// so that a process that restarts knows how to resume it; null when
    /// nobody said.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub origin: serde_json::Value,
}

impl Checkpoint {
    /// Whether the run has reached [`END`].
    pub fn is_finished(&self) -> bool {
        self.next == END
    }
}

/// One node of a run, as a durable engine (Temporal) drives a graph: it
/// runs one node, records the step, and asks for the next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Step {
    /// The node that ran.
    pub node: String,
    /// The state after it.
    pub state: State,
    /// The node to run next ([`END`] when the run is finished).
    pub next: String,
    /// At most this many nodes run in one run of this graph (its
    /// [recursion limit](CompiledGraph::recursion_limit)): the engine stops
    /// a run that reaches it.
    pub max_steps: u32,
}

/// Saves the state after each node so a failed run can resume.
#[async_trait]
pub trait Checkpointer: Send + Sync {
    /// Save the latest checkpoint of a run (replacing the previous one).
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError>;
    /// The latest checkpoint of a run, if any.
    async fn load(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError>;
    /// The latest checkpoint of every run that has not reached [`END`]:
    /// what a restarted process resumes.
    async fn unfinished(&self) -> Result<Vec<Checkpoint>, StoreError>;
}

/// Keeps checkpoints in memory.
#[derive(Debug, Default)]
pub struct InMemoryCheckpointer {
    runs: Mutex<BTreeMap<String, Checkpoint>>,
}

impl InMemoryCheckpointer {
    /// An empty checkpointer.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Checkpointer for InMemoryCheckpointer {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        self.runs
            .lock()
            .map_err(|_| StoreError::backend("checkpoint lock poisoned"))?
            .insert(checkpoint.run_id.clone(), checkpoint.clone());
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<Checkpoint>, StoreError> {
        Ok(self
            .runs
            .lock()
            .map_err(|_| StoreError::backend("checkpoint lock poisoned"))?
            .values()
            .filter(|c| !c.is_finished())
            .cloned()
            .collect())
    }

    async fn load(&self, run_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        Ok(self
            .runs
            .lock()
            .map_err(|_| StoreError::backend("checkpoint lock poisoned"))?
            .get(run_id)
            .cloned())
    }
}

/// A validated graph, ready to run. Cheap to clone.
#[derive(Clone)]
pub struct CompiledGraph {
    inner: Arc<Compiled>,
    recursion_limit: u32,
    checkpointer: Option<Arc<dyn Checkpointer>>,
}

impl CompiledGraph {
    /// At most this many node executions per run (default 25).
    #[must_use]
    pub fn recursion_limit(mut self, limit: u32) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Save a checkpoint after every node.
    #[must_use]
    pub fn with_checkpointer(mut self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// The entry point.
    pub fn entry_point(&self) -> &str {
        &self.inner.entry
    }

    /// Node names, sorted.
    pub fn node_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.inner.nodes.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Run from the entry point to [`END`] under a fresh run id.
    pub async fn invoke(&self, ctx: &NodeContext, state: State) -> Result<State, Error> {
        let run_id = format!("run_{}", uuid::Uuid::new_v4().simple());
        self.invoke_run_from(ctx, &run_id, serde_json::Value::Null, state)
            .await
    }

    /// Run under `run_id`: when the checkpointer holds a checkpoint of that
    /// run, resume after its last completed node with its saved state (the
    /// given `state` is then ignored); otherwise start from the entry point.
    pub async fn invoke_run(
        &self,
        ctx: &NodeContext,
        run_id: &str,
        state: State,
    ) -> Result<State, Error> {
        self.invoke_run_from(ctx, run_id, serde_json::Value::Null, state)
            .await
    }

    /// [`invoke_run`](Self::invoke_run), recording `origin` (what started
    /// the run) in its checkpoints. A fresh run with a checkpointer saves a
    /// first checkpoint before its entry node, so a run cut off anywhere is
    /// found by [`Checkpointer::unfinished`].
    pub async fn invoke_run_from(
        &self,
        ctx: &NodeContext,
        run_id: &str,
        origin: serde_json::Value,
        state: State,
    ) -> Result<State, Error> {
        let saved = match &self.checkpointer {
            Some(cp) => cp.load(run_id).await.map_err(|source| Error::Checkpoint {
                run_id: run_id.to_owned(),
                source,
            })?,
            None => None,
        };
        match saved {
            Some(cp) if cp.is_finished() => Ok(cp.state),
            Some(cp) => {
                tracing::info!(run_id, resume_at = %cp.next, step = cp.step, "resuming run from checkpoint");
                let origin = if origin.is_null() { cp.origin } else { origin };
                self.execute(ctx, run_id, &origin, cp.next, cp.step, cp.state)
                    .await
            }
            None => {
                let entry = self.inner.entry.clone();
                if self.checkpointer.is_some() {
                    let start = Checkpoint {
                        run_id: run_id.to_owned(),
                        step: 0,
                        completed: String::new(),
                        next: entry.clone(),
                        state: state.clone(),
                        origin: origin.clone(),
                    };
                    self.save(&start).await?;
                }
                self.execute(ctx, run_id, &origin, entry, 0, state).await
            }
        }
    }

    /// Run one node, `node` or the entry point when `None`, on `state`, and
    /// say which comes next: what a durable engine records between nodes.
    /// Saves no checkpoint (the engine keeps the history).
    pub async fn step(
        &self,
        ctx: &NodeContext,
        node: Option<&str>,
        state: State,
    ) -> Result<Step, Error> {
        let node = node.unwrap_or(&self.inner.entry).to_owned();
        let (state, next) = self.run_node(ctx, &node, state, None).await?;
        Ok(Step {
            node,
            state,
            next,
            max_steps: self.recursion_limit,
        })
    }

    /// Run `current` on `state`; returns the new state and the next node.
    async fn run_node(
        &self,
        ctx: &NodeContext,
        current: &str,
        state: State,
        at: Option<(&str, u32)>,
    ) -> Result<(State, String), Error> {
        let Some(node) = self.inner.nodes.get(current) else {
            return Err(Error::UnknownNode {
                node: current.to_owned(),
                context: match at {
                    Some(_) => "resumed checkpoint".into(),
                    None => "a step of the graph".into(),
                },
            });
        };
        let (run_id, step) = at.unwrap_or_default();
        let span = tracing::info_span!("graph_node", node = %current, step, run_id);
        let state = node
            .run(ctx, state)
            .instrument(span)
            .await
            .map_err(|source| Error::Node {
                node: current.to_owned(),
                source: Box::new(source),
            })?;
        let next = self.next_node(current, &state)?;
        Ok((state, next))
    }

    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), Error> {
        match &self.checkpointer {
            Some(cp) => cp
                .save(checkpoint)
                .await
                .map_err(|source| Error::Checkpoint {
                    run_id: checkpoint.run_id.clone(),
                    source,
                }),
            None => Ok(()),
        }
    }

    async fn execute(
        &self,
        ctx: &NodeContext,
        run_id: &str,
        origin: &serde_json::Value,
        mut current: String,
        mut step: u32,
        mut state: State,
    ) -> Result<State, Error> {
        let mut executed = 0u32;
        loop {
            if executed >= self.recursion_limit {
                return Err(Error::RecursionLimit {
                    limit: self.recursion_limit,
                    node: current,
                });
            }
            let (after, next) = self
                .run_node(ctx, &current, state, Some((run_id, step)))
                .await?;
            state = after;
            executed += 1;
            step += 1;
            if self.checkpointer.is_some() {
                self.save(&Checkpoint {
                    run_id: run_id.to_owned(),
                    step,
                    completed: current.clone(),
                    next: next.clone(),
                    state: state.clone(),
                    origin: origin.clone(),
                })
                .await?;
            }
            if next == END {
                return Ok(state);
            }
            current = next;
        }
    }

    fn next_node(&self, current: &str, state: &State) -> Result<String, Error> {
        match self.inner.edges.get(current) {
            Some(Edge::To(to)) => Ok(to.clone()),
            Some(Edge::Conditional { router, targets }) => {
                let target = router(state);
                if target == END || targets.contains(&target) {
                    Ok(target)
                } else {
                    Err(Error::InvalidRoute {
                        from: current.to_owned(),
                        target,
                        targets: targets.clone(),
                    })
                }
            }
            None => Err(Error::NoOutgoingEdge(current.to_owned())),
        }
    }
}

impl fmt::Debug for CompiledGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.node_names())
            .field("entry", &self.inner.entry)
            .field("recursion_limit", &self.recursion_limit)
            .field("checkpointer", &self.checkpointer.is_some())
            .finish()
    }
}
