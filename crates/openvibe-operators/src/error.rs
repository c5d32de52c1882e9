//! The error type of this crate.

use std::path::PathBuf;

use openvibe_protocols::StoreError;

/// What can go wrong building or running operators and graphs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A graph refers to a node it does not have.
    #[error("graph: unknown node `{node}` ({context})")]
    UnknownNode {
        /// The missing node.
        node: String,
        /// Where it was referred to.
        context: String,
    },
    /// Two nodes have the same name.
    #[error("graph: node `{0}` is added twice")]
    DuplicateNode(String),
    /// `compile` was called without an entry point.
    #[error("graph: no entry point; call set_entry_point")]
    MissingEntryPoint,
    /// Nodes that no path from the entry point reaches.
    #[error("graph: node(s) {} cannot be reached from the entry point `{entry}`", nodes.join(", "))]
    UnreachableNodes {
        /// The entry point.
        entry: String,
        /// The unreachable nodes.
        nodes: Vec<String>,
    },
    /// A node has no outgoing edge (use an edge to `END` to finish).
    #[error("graph: node `{0}` has no outgoing edge; add an edge to END to finish there")]
    NoOutgoingEdge(String),
    /// A node has more than one way out.
    #[error("graph: node `{0}` has several outgoing edges; use one edge or one conditional edge")]
    AmbiguousEdges(String),
    /// A router returned a target it did not declare.
    #[error("graph: the router of `{from}` chose `{target}`, which is not one of its targets ({})", targets.join(", "))]
    InvalidRoute {
        /// The node the router follows.
        from: String,
        /// What it returned.
        target: String,
        /// What it declared.
        targets: Vec<String>,
    },
    /// The run went on for more steps than allowed (a cycle that never ends?).
    #[error(
        "graph: recursion limit of {limit} steps reached at node `{node}`; raise it with recursion_limit or check the routing"
    )]
    RecursionLimit {
        /// The limit.
        limit: u32,
        /// The node that would have run next.
        node: String,
    },
    /// A node failed.
    #[error("node `{node}` failed: {source}")]
    Node {
        /// The node.
        node: String,
        /// Its error (boxed: node errors are large and rare).
        #[source]
        source: Box<openvibe_primitives::Error>,
    },
    /// Saving or loading a checkpoint failed.
    #[error("checkpoint of run `{run_id}`: {source}")]
    Checkpoint {
        /// The run.
        run_id: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// A configuration file could not be read.
    #[error("cannot read {}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A configuration file is malformed.
    #[error("{}:{line}:{column}: {message} (at `{key}`)", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// 1-based line (0 when unknown).
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// The offending key, as a path like `operators[0].workflows[1].triggers`.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// No operator with this id.
    #[error("unknown operator `{operator}` (known: {})", known.join(", "))]
    UnknownOperator {
        /// What was asked for.
        operator: String,
        /// What exists.
        known: Vec<String>,
    },
    /// The operator has no workflow with this id.
    #[error("operator `{operator}` has no workflow `{workflow}` (known: {})", known.join(", "))]
    UnknownWorkflow {
        /// The operator.
        operator: String,
        /// What was asked for.
        workflow: String,
        /// What exists.
        known: Vec<String>,
    },
    /// The operator has no trigger with this id.
    #[error("operator `{operator}` has no trigger `{trigger}` (known: {})", known.join(", "))]
    UnknownTrigger {
        /// The operator.
        operator: String,
        /// What was asked for.
        trigger: String,
        /// What exists.
        known: Vec<String>,
    },
    /// A workflow is configured but no graph factory was registered for it.
    #[error("workflow `{operator}/{workflow}` has no registered graph; call register_workflow")]
    NoFactory {
        /// The operator.
        operator: String,
        /// The workflow.
        workflow: String,
    },
    /// The runtime has no LLM to run nodes with.
    #[error("the operator runtime has no LLM; call with_llm before activating")]
    NoLlm,
}
