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
//! | working and semantic memory, the raw log, the audit trail, vectors | [`WorkingStore`], [`KnowledgeStore`], [`RawLogStore`], [`AuditLog`], [`RecordVectors`] | [`StoreError`] |
//! | schedules and triggers | [`ScheduleProvider`] | [`ScheduleError`] |
//! | text embeddings | [`Embedder`] | [`EmbedError`] |
//!
//! Decisions ([`Decision`], [`DecisionEvent`], [`DecisionMatrix`]) are plain
//! types: a role's decision engine fills them.
//!
//! Every trait is `Send + Sync` and meant to be used as `Arc<dyn Trait>`.

mod cognitive;
mod decision;
mod embed;
mod goal;
mod hooks;
mod llm;
mod memory;
mod schedule;
mod state;
#[cfg(feature = "testing")]
pub mod testing;
mod vocabulary;

pub use cognitive::{
    ACT_INTERRUPTED, AFTER_EXPERIENCE, Accepted, ActOutcome, EventInbox, EventSource, LoopTrace,
    REFLECT_EVENT, Stage, StageRecord, loop_run_id,
};
pub use decision::{
    Action, ActionTarget, Authority, AuthorityStep, ConfidenceAdjustment, ConfidenceBand,
    ConfidenceStep, Decision, DecisionEvent, DecisionMatrix, DomainStep, Evidence, EvidenceKind,
    Impact, ImpactStep, Outcome,
};
pub use embed::{CacheStats, CachedEmbedder, EmbedError, Embedder, Generations};
pub use goal::{KeyResult, Objective};
pub use hooks::{ContextAssembler, DEFAULT_TOKEN_BUDGET, EpisodeSink, MemoryScope};
pub use llm::{
    CallOrigin, ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, MODEL_ALIASES,
    Message, MessageContent, MessageRole, StopReason, ToolCall, ToolChoice, ToolDefinition,
    json_candidates, resolve_model,
};
pub use memory::*;
pub use schedule::{
    Firing, FiringSource, ScheduleError, ScheduleInfo, ScheduleProvider, TriggerConfig, TriggerKind,
};
pub use state::{State, StateError};
pub(crate) use vocabulary::vocabulary;
pub use vocabulary::{OrAny, Vocabulary};

/// The most text of one tool result a model is shown: 100,000 bytes. A
/// longer result is cut at a character boundary and ends with a note of
/// how much was cut ([`bound_tool_result`]).
pub const MAX_TOOL_RESULT_BYTES: usize = 100_000;

/// `text` within [`MAX_TOOL_RESULT_BYTES`]: unchanged when it fits, else
/// cut at a character boundary with `…[N bytes cut]` appended.
///
/// ```
/// use openvibe_protocols::{MAX_TOOL_RESULT_BYTES, bound_tool_result};
/// assert_eq!(bound_tool_result("short".into()), "short");
/// let long = bound_tool_result("é".repeat(MAX_TOOL_RESULT_BYTES));
/// assert!(long.len() <= MAX_TOOL_RESULT_BYTES + 32 && long.ends_with("bytes cut]"));
/// ```
pub fn bound_tool_result(text: String) -> String {
    if text.len() <= MAX_TOOL_RESULT_BYTES {
        return text;
    }
    let mut end = MAX_TOOL_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[{} bytes cut]", &text[..end], text.len() - end)
}

/// Truncate `text` to at most `max_chars` characters, never splitting a
/// UTF-8 character. Used for episode summaries and error excerpts.
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    // No more bytes than allowed characters: nothing to count.
    if text.len() <= max_chars {
        return text;
    }
    match text.char_indices().nth(max_chars) {
        Some((idx, _)) => &text[..idx],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_TOOL_RESULT_BYTES, bound_tool_result, truncate_chars};

    #[test]
    fn tool_results_are_bounded_at_the_limit() {
        for n in [MAX_TOOL_RESULT_BYTES - 1, MAX_TOOL_RESULT_BYTES] {
            assert_eq!(bound_tool_result("a".repeat(n)).len(), n);
        }
        let over = bound_tool_result("a".repeat(MAX_TOOL_RESULT_BYTES + 1));
        assert_eq!(
            over,
            format!("{}…[1 bytes cut]", "a".repeat(MAX_TOOL_RESULT_BYTES))
        );
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("héllo", 10), "héllo");
        assert_eq!(truncate_chars("日本語", 1), "日");
        assert_eq!(truncate_chars("", 3), "");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abcd", 3), "abc");
        assert_eq!(truncate_chars("日本", 2), "日本");
    }
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
