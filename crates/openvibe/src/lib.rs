//! # openvibe
//!
//! LLM agents that *remember*: roles with identity and authority, operators
//! with workflows, and a governed multi-agent memory.
//!
//! This crate re-exports the layered crates; depend on them directly to take
//! only a part (say, [`memory`] and a backend).
//!
//! | layer | crate | re-exported as |
//! |---|---|---|
//! | L3 | `openvibe-roles` | [`roles`]: [`Role`], [`RoleRuntime`], [`AuthorityConfig`]; V3/V4: [`DecisionEngine`], [`GoalSystem`], [`CognitiveLoop`] |
//! | L2 | `openvibe-operators` | [`operators`]: [`Operator`], [`OperatorRuntime`], [`StateGraph`] |
//! | L1 | `openvibe-primitives` | [`primitives`]: [`LlmNode`] ([`llm_node`](macro@llm_node)), [`AgentNode`] ([`agent_node`](macro@agent_node)), [`tool`] |
//! | memory | `openvibe-memory` | [`memory`]: [`AgentMemory`], [`WorkspaceMemory`], [`MemoryFilesystem`], [`ClearanceProfile`] |
//! | L0 | `openvibe-protocols` | [`protocols`]: [`Fact`], [`Episode`], [`Insight`], [`Classification`], traits; V3/V4: [`Decision`], [`Objective`] (the seed's OKR), [`Space`], [`Belief`], [`BeliefStore`], [`Clearance`] |
//!
//! ```
//! use std::sync::Arc;
//! use openvibe::{
//!     llm_node, AgentMemory, Classification, ClearanceProfile, Fact, Operator, Role,
//!     RoleRuntime, ScopeSpec, State, WorkspaceMemory,
//! };
//! use openvibe::primitives::testing::ScriptedLlm;
//! use openvibe::protocols::LlmResponse;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // Layer 1 + 2: an operator with one LLM step.
//! let qualify = llm_node("qualify_lead", "You are a lead qualification specialist.", |s: &State| {
//!     Ok(format!("Score this lead: {}", s.require_str("lead")?))
//! })
//! .model("sonnet")
//! .output_key("score")
//! .memory_scope(ScopeSpec::new().domain("revenue").entity_from_key("company"));
//! let revenue_ops = Operator::new("revenue_ops").node(qualify).sequence("qualify", ["qualify_lead"])?;
//!
//! // Layer 3: a role with a soul and clearance; memory shared through a workspace.
//! let cro = Role::new("cro")
//!     .soul("You are the CRO. Data-driven.")
//!     .operator(revenue_ops)
//!     .clearance(ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential));
//! let workspace = WorkspaceMemory::new();
//! workspace
//!     .store_fact(Fact::new("f1", "Acme renewed twice").entity("acme").domain("revenue"))
//!     .await?;
//!
//! let llm = ScriptedLlm::new([LlmResponse::text(r#"{"score": 88}"#)]);
//! let runtime = RoleRuntime::new(Arc::new(llm.clone())).with_workspace(workspace).role(cro)?;
//! let input: State = [("lead", "Acme Corp"), ("company", "acme")].into_iter().collect();
//! let out = runtime.activate("cro", "revenue_ops", "qualify", input).await?;
//!
//! assert_eq!(out.get("score").unwrap()["score"], 88);
//! let system = &llm.requests()[0].system;
//! assert!(system.starts_with("You are the CRO. Data-driven."));
//! assert!(system.contains("Acme renewed twice")); // recalled from the workspace
//! let memory: &AgentMemory = runtime.get_role("cro")?.agent_memory().unwrap();
//! assert_eq!(memory.recall_episodes(Default::default()).await?.len(), 1); // the run was remembered
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

pub mod full_example;

/// Governance policy: principals, namespace policies, the governance file.
pub use openvibe_governance as governance;
/// The embedded default memory backend (`openvibe-in-memory`).
pub use openvibe_in_memory as in_memory;
pub use openvibe_memory as memory;
pub use openvibe_operators as operators;
/// The PostgreSQL + pgvector backend (feature `postgres`):
/// `RoleRuntime::with_stores(PgStores::connect(url).await?.stores())`.
#[cfg(feature = "postgres")]
pub use openvibe_postgres as postgres;

/// The memory service (feature `service`): the HTTP API over any stores.
#[cfg(feature = "service")]
pub use openvibe_service as service;

/// Local embeddings on candle (feature `local-embed`).
#[cfg(feature = "local-embed")]
pub use openvibe_local_embed as local_embed;
/// The memory service's remote client (feature `remote`): every store
/// trait over HTTP.
#[cfg(feature = "remote")]
pub use openvibe_remote as remote;

/// The memory service's wire format (features `service` or `remote`).
#[cfg(any(feature = "service", feature = "remote"))]
pub use openvibe_api as api;
pub use openvibe_primitives as primitives;
pub use openvibe_protocols as protocols;
/// The ranking every memory backend shares (`openvibe-retrieval`).
pub use openvibe_retrieval as retrieval;
pub use openvibe_roles as roles;
/// The in-process scheduler (the embedded default `ScheduleProvider`).
pub use openvibe_schedule as schedule;
/// Temporal (feature `temporal`): a `ScheduleProvider` whose schedules
/// live in Temporal, and a worker that runs role activations durably.
#[cfg(feature = "temporal")]
pub use openvibe_temporal as temporal;

// Layer 3
pub use openvibe_roles::{Authority, AuthorityConfig, Role, RoleRuntime};
// The seed's V3 (`DecisionEngine, GoalSystem, OKR, Decision`): an OKR is an
// [`Objective`] with its [`KeyResult`]s.
pub use openvibe_protocols::{Decision, DecisionEvent, KeyResult, Objective};
pub use openvibe_roles::{DecisionEngine, GoalSystem};
// The seed's V4 (`CognitiveLoop, Space, BeliefStore, MemoryAccessControl`):
// memory access control is the [`ClearanceProfile`] of each role (domain ×
// classification) and the [`Clearance`] of each caller, with namespace
// policies in [`governance`].
pub use openvibe_protocols::{Belief, BeliefStore, Clearance, Space};
pub use openvibe_roles::CognitiveLoop;
// Layer 2
pub use openvibe_operators::{END, Operator, OperatorRuntime, StateGraph};
// Layer 1
pub use openvibe_primitives::{AgentNode, LlmNode, ScopeSpec, Tool, tool};
/// Attribute forms of [`llm_node()`] and [`agent_node()`] (doc comment →
/// system prompt); see [`primitives::llm_node`](macro@primitives::llm_node).
pub use openvibe_primitives::{agent_node, llm_node};
// Memory
pub use openvibe_memory::{
    AgentMemory, ClearanceProfile, MemoryFilesystem, MemoryPyramid, WorkspaceMemory,
};
// Layer 0
pub use openvibe_protocols::{Classification, Episode, Fact, Insight, RawCall, State};

use openvibe_protocols::StateError;

/// An [`LlmNode`]: one LLM call (the seed's `@llm_node`).
pub fn llm_node(
    name: impl Into<String>,
    system_prompt: impl Into<String>,
    user_message: impl Fn(&State) -> Result<String, StateError> + Send + Sync + 'static,
) -> LlmNode {
    LlmNode::new(name, system_prompt, user_message)
}

/// An [`AgentNode`]: a bounded tool-use loop (the seed's `@agent_node`).
pub fn agent_node(
    name: impl Into<String>,
    system_prompt: impl Into<String>,
    user_message: impl Fn(&State) -> Result<String, StateError> + Send + Sync + 'static,
) -> AgentNode {
    AgentNode::new(name, system_prompt, user_message)
}

#[cfg(test)]
mod tests {
    /// The seed's V2 summary (with `MemoryPyramid` and the L1 `RawCall`).
    #[test]
    fn v2_public_api_exports() {
        #[allow(unused_imports)]
        use crate::{
            AgentMemory, AuthorityConfig, Classification, ClearanceProfile, Episode, Fact, Insight,
            MemoryFilesystem, MemoryPyramid, Operator, OperatorRuntime, RawCall, Role, RoleRuntime,
            WorkspaceMemory, agent_node, llm_node,
        };
        let a = llm_node("a", "s", |_| Ok("u".into()));
        let b = agent_node("b", "s", |_| Ok("u".into()));
        assert_eq!((a.get_model(), b.get_model()), ("haiku", "haiku"));
    }
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
