//! The memory contract: everything a memory backend implements and every
//! memory user talks through.
//!
//! | part | module |
//! |---|---|
//! | who is calling: [`Principal`], [`Clearance`], [`CallerContext`] (trusted identity) | `context` |
//! | the access decision: [`read_allowed`], [`modify_allowed`], [`CallerContext::can_read`], [`Governed`] | `access` |
//! | records: [`Fact`], [`Episode`], [`Insight`], [`RetrievalTrace`], [`RecordMeta`], [`Classification`] | `records` |
//! | queries: [`FactQuery`], [`EpisodeQuery`], [`InsightQuery`] and the normalised [`RecordFilter`] | `query` |
//! | store traits: [`FactStore`], [`EpisodicStore`], [`InsightStore`]; a set of them: [`Stores`] | `store` |
//! | input validation shared by every backend | `validate` |
//! | errors: [`StoreError`] (with its source and [`StoreError::is_transient`]) | `error` |
//! | V1 key/value memory: [`MemoryProvider`] | `kv` |
//!
//! Everything here is re-exported at the crate root.

mod access;
mod context;
mod error;
mod kv;
mod query;
mod records;
mod store;
mod validate;

pub use access::{Governed, modify_allowed, read_allowed};
pub use context::{CallerContext, Clearance, Principal, PrincipalKind};
pub use error::{ErrorSource, StoreError};
pub use kv::{MemoryEntry, MemoryProvider};
pub use query::{EpisodeQuery, FactQuery, InsightQuery, RecordFilter, text_terms};
pub use records::{
    Classification, Episode, Fact, Insight, InsightStatus, ParseClassificationError, RecordMeta,
    RetrievalTrace, TraceAction, content_hash,
};
pub use store::{EpisodicStore, FactStore, InsightStore, Stores};
pub use validate::{
    MAX_RECORD_ID_LEN, check_content, check_importance, check_unit, validate_episode,
    validate_fact, validate_insight, validate_record_id,
};
