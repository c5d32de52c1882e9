//! # openvibe-operators — layer 2
//!
//! - [`Operator`]: nodes and workflows under one `operator_id`;
//!   [`Operator::bind`] injects the LLM, memory hooks and tool gate
//!   (a [`NodeContext`](openvibe_primitives::NodeContext)) and gives a
//!   [`BoundOperator`] that runs them.
//! - [`StateGraph`]: nodes, edges, conditional edges and an entry point,
//!   validated by [`StateGraph::compile`]; a [`CompiledGraph`] runs bounded
//!   by a recursion limit, with a `tracing` span per node and an optional
//!   [`Checkpointer`] so a failed run resumes where it stopped
//!   ([`FileCheckpointer`] keeps checkpoints across restarts).
//! - [`OperatorRuntime`]: operators loaded from YAML (see [`config`]),
//!   one graph factory per workflow, activation by trigger or workflow.

mod checkpoint;
pub mod config;
mod error;
mod graph;
mod operator;
mod runtime;

pub use checkpoint::FileCheckpointer;
pub use config::{OperatorConfig, RuntimeConfig};
pub use error::Error;
pub use graph::{
    Checkpoint, Checkpointer, CompiledGraph, DEFAULT_RECURSION_LIMIT, END, InMemoryCheckpointer,
    StateGraph, Step,
};
pub use operator::{BoundOperator, Operator};
pub use runtime::OperatorRuntime;

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
