//! # openvibe-protocols — layer 0
//!
//! The contracts of openvibe: object-safe async traits and the plain data
//! types that cross them. Nothing here performs I/O; every implementation
//! lives in a crate above (providers in `openvibe-primitives`, stores in
//! `openvibe-memory` and `openvibe-postgres`).
//!
//! | capability | trait | error |
//! |---|---|---|
//! | one LLM call | [`LlmProvider`] | [`LlmError`] |
//! | V1 key/value memory | [`MemoryProvider`] | [`StoreError`] |
//! | memory context for a prompt | [`ContextAssembler`] | [`StoreError`] |
//! | receiving node-run episodes | [`EpisodeSink`] | [`StoreError`] |
//! | structured memory (facts, episodes, insights) | [`FactStore`], [`EpisodicStore`], [`InsightStore`] (each call takes a [`CallerContext`]; the whole contract is in [`memory`]) | [`StoreError`] |
//! | schedules and triggers | [`ScheduleProvider`] | [`ScheduleError`] |
//! | text embeddings | [`Embedder`] | [`EmbedError`] |
//!
//! Every trait is `Send + Sync` and meant to be used as `Arc<dyn Trait>`.

mod embed;
mod hooks;
mod llm;
pub mod memory;
mod schedule;
mod state;
#[cfg(feature = "testing")]
pub mod testing;

pub use embed::{EmbedError, Embedder};
pub use hooks::{ContextAssembler, DEFAULT_TOKEN_BUDGET, EpisodeSink, MemoryScope};
pub use llm::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, MODEL_ALIASES, Message,
    MessageContent, MessageRole, StopReason, ToolCall, ToolChoice, ToolDefinition, resolve_model,
};
pub use memory::{AuditEntry, AuditLog, AuditOp, AuditQuery, AuditStatus};
pub use memory::{
    CallerContext, Classification, Clearance, Episode, EpisodeQuery, EpisodicStore, ErrorSource,
    Fact, FactQuery, FactStore, Governed, Insight, InsightQuery, InsightStatus, InsightStore,
    MAX_CONTENT_LEN, MAX_LABEL_LEN, MAX_RECORD_ID_LEN, MemoryEntry, MemoryProvider,
    ParseClassificationError, Principal, PrincipalKind, RecordFilter, RecordMeta, RetrievalTrace,
    STRENGTHEN_STEP, StoreError, Stores, TraceAction, check_content, check_importance, check_unit,
    content_hash, modify_allowed, read_allowed, text_terms, validate_episode, validate_fact,
    validate_insight, validate_record_id,
};
pub use memory::{
    Change, Grants, NamespaceGrant, NamespaceScope, Placement, Rights, check_fixed_namespace,
};
pub use memory::{
    Expect, Knowledge, KnowledgeHit, KnowledgeQuery, KnowledgeStore, NewKnowledge, NewPlan,
    NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanStatus, PlanUpdate, Session,
    SessionDeleted, SessionQuery, StateEntry, TaskContext, WorkingStore, page_cursor, parse_cursor,
    store_time,
};
pub use memory::{NamespaceAdmin, NamespaceCount};
pub use schedule::{ScheduleError, ScheduleInfo, ScheduleProvider, TriggerConfig, TriggerKind};
pub use state::{State, StateError};

/// Truncate `text` to at most `max_chars` characters, never splitting a
/// UTF-8 character. Used for episode summaries and error excerpts.
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((idx, _)) => &text[..idx],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::truncate_chars;

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("héllo", 10), "héllo");
        assert_eq!(truncate_chars("日本語", 1), "日");
        assert_eq!(truncate_chars("", 3), "");
    }
}
