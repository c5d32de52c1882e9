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
//! | structured memory (facts, episodes, insights) | [`FactStore`], [`EpisodicStore`], [`InsightStore`] (each call takes a [`CallerContext`]) | [`StoreError`] |
//! | schedules and triggers | [`ScheduleProvider`] | [`ScheduleError`] |
//! | text embeddings | [`Embedder`] | [`EmbedError`] |
//!
//! Every trait is `Send + Sync` and meant to be used as `Arc<dyn Trait>`.

mod embed;
mod hooks;
mod llm;
mod memory;
mod records;
mod schedule;
mod state;
mod store;

pub use embed::{EmbedError, Embedder};
pub use hooks::{ContextAssembler, DEFAULT_TOKEN_BUDGET, EpisodeSink, MemoryScope};
pub use llm::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, MODEL_ALIASES, Message,
    MessageContent, MessageRole, StopReason, ToolCall, ToolChoice, ToolDefinition, resolve_model,
};
pub use memory::{MemoryEntry, MemoryProvider, StoreError};
pub use records::{Classification, Episode, ParseClassificationError, RecordMeta};
pub use records::{Fact, Insight, InsightStatus, RetrievalTrace, TraceAction, content_hash};
pub use schedule::{ScheduleError, ScheduleInfo, ScheduleProvider, TriggerConfig, TriggerKind};
pub use state::{State, StateError};
pub use store::{
    CallerContext, Clearance, EpisodeQuery, EpisodicStore, FactQuery, FactStore, InsightQuery,
    InsightStore, MAX_RECORD_ID_LEN, Principal, PrincipalKind, text_terms, validate_record_id,
};

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
