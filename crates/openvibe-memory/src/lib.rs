//! # openvibe-memory — the memory layer
//!
//! Structured, governed memory for agents, over any backend's
//! [`Stores`] (in process with
//! `openvibe-in-memory`, on PostgreSQL with `openvibe-postgres`, over the
//! wire with `openvibe-remote`):
//!
//! | part | what it does |
//! |---|---|
//! | [`in_memory_stores`] | the embedded default backend's stores (`openvibe-in-memory`), which every type here starts with unless given others |
//! | [`ClearanceProfile`], [`AccessFilter`], [`CLASSIFICATION_RANK`] | per-agent clearance, and filtering records in hand by it (the rule itself is the contract's) |
//! | [`WorkspaceMemory`] | shared, classified facts of the organisation |
//! | [`AgentMemory`] | one agent's episodes (L2) and insights (L3); `reflect` (L2 → L3 with an LLM); publishing insights as workspace facts; V1 [`MemoryProvider`](openvibe_protocols::MemoryProvider) and [`EpisodeSink`](openvibe_protocols::EpisodeSink) |
//! | [`MemoryFilesystem`] | a browsable, searchable, writable virtual tree over one role's memory, with traces |
//! | [`MemoryAssembler`] | a [`ContextAssembler`](openvibe_protocols::ContextAssembler): scope → prompt context within a token budget |
//! | [`MemoryGateway`] | the one entry point from an identity (principal, tenant, project, clearance) to memory |
//! | [`Decisions`], [`decide_proposal`], [`decide_belief`] | deciding what waits for a person: a belief's proposal and its belief together, at every edge |
//! | [`forget`] | an erasure by subject run to the end and recorded in the audit trail, with proof (counts after) |
//!
//! Every store call carries a [`CallerContext`](openvibe_protocols::CallerContext);
//! see `docs/memory.md` for the flow of a record and the ordering guarantees.
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! # rt.block_on(async {
//! use openvibe_memory::{AgentMemory, ClearanceProfile, MemoryAssembler, WorkspaceMemory};
//! use openvibe_protocols::{Classification, ContextAssembler, Fact, MemoryScope};
//!
//! let workspace = WorkspaceMemory::new();
//! workspace
//!     .store_fact(Fact::new("f1", "Acme has 200 employees").entity("acme").classification(Classification::Public))
//!     .await?;
//! let memory = AgentMemory::new("cro").with_workspace(workspace);
//! let assembler = MemoryAssembler::new(memory, ClearanceProfile::new("cro"));
//! let scope = MemoryScope { entity: Some("acme".into()), ..MemoryScope::default() };
//! let context = assembler.assemble(&scope, 200).await?;
//! assert_eq!(context, "## Context\n- Acme has 200 employees");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod access;
mod agent;
mod assembler;
mod decide;
mod error;
mod evidence;
mod filesystem;
mod forget;
mod gateway;
mod pyramid;
mod raw_writer;
mod reindex;
mod subject;
mod workflow;
mod workspace;

pub use access::{
    AccessFilter, CLASSIFICATION_RANK, ClassificationRanks, ClearanceProfile, Governed,
};
pub use agent::{
    AgentMemory, DEFAULT_PUBLISH_CONFIDENCE, InMemoryStore, MAX_PROMPT_BELIEFS, PUBLISH_LIMIT,
    ReflectOptions, ReflectionReport, same_subject,
};
pub use assembler::{
    ApproxTokenCounter, Assembly, AssemblyLimits, MemoryAssembler, RecallCache, RecallKind,
    RecallObserver, Recalled, TokenCounter, approx_tokens, describe_retrievers,
};
pub use decide::{Decisions, decide_belief, decide_proposal};
pub use error::MemoryError;
pub use evidence::{
    DECISION_TAG, Evidence, EvidenceQuery, FULL_EVIDENCE_SIMILARITY, MIN_EVIDENCE_SIMILARITY,
    OTHER_DOMAIN_WEIGHT, REJECTED_TAG, SETBACK_STATUSES, SETBACK_TAG, Weighed, went_against,
};
pub use filesystem::{
    BROWSE_LIMIT, MAX_PATH_LEN, MemoryFilesystem, SEARCH_LIMIT, SearchHit, WriteOptions,
};
pub use forget::{ForgetOptions, forget};
pub use gateway::MemoryGateway;
/// The embedded default backend's stores (`openvibe-in-memory`), so that a
/// project depending on this crate alone starts in one line.
pub use openvibe_in_memory::{in_memory_stores, in_memory_stores_with_embedder};
/// One set of stores (defined in the contract; re-exported for convenience).
pub use openvibe_protocols::Stores;
pub use pyramid::{BeliefLineage, Distillation, Lineage, MemoryPyramid};
pub use raw_writer::{RawLogConfig, RawLogStats, RawLogWriter, Redactor};

/// The contract this crate implements (record types, `CallerContext`, the
/// store traits), so a project depending on `openvibe-memory` alone has it.
pub use openvibe_protocols as protocols;
pub use reindex::{Reindex, ReindexProgress};
pub use subject::{Relation, SubjectScore, SubjectThresholds, Subjects};
pub use workflow::{ACTION_HISTORY, WorkflowState};
pub use workspace::WorkspaceMemory;

/// `docs/governance.md`, whose worked example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/governance.md")]
pub struct GovernanceGuide;

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
