//! The memory contract: everything a memory backend implements and every
//! memory user talks through.
//!
//! | part | module |
//! |---|---|
//! | who is calling: [`Principal`], [`Clearance`], [`CallerContext`] (trusted identity) | `context` |
//! | namespace governance as the stores see it: [`Grants`], [`Rights`], [`NamespaceScope`], [`Placement`] | `governance` |
//! | the audit trail: [`AuditLog`], [`AuditEntry`], [`AuditQuery`] | `audit` |
//! | the access decision: [`read_allowed`], [`modify_allowed`], [`CallerContext::can_read`], [`Governed`] | `access` |
//! | records: [`Fact`], [`Episode`], [`Insight`], [`RetrievalTrace`], [`RecordMeta`], [`Classification`] | `records` |
//! | queries: [`FactQuery`], [`EpisodeQuery`], [`InsightQuery`] and the normalised [`RecordFilter`] | `query` |
//! | the L1 raw log of LLM calls: [`RawLogStore`], [`RawCallQuery`], [`RawRetention`] | `raw` |
//! | store traits: [`RecordStore`] and [`RevisableStore`] for every [`StoredRecord`] kind, named per kind [`FactStore`], [`EpisodicStore`], [`InsightStore`]; a set of them: [`Stores`] | `store` |
//! | input validation shared by every backend | `validate` |
//! | errors: [`StoreError`] (with its source and [`StoreError::is_transient`]) | `error` |
//! | working memory: sessions, plans, task and plan contexts, plan state ([`SessionStore`], [`PlanStore`], [`ContextStore`], [`PlanStateStore`]; all four: [`WorkingStore`]) | `working` |
//! | semantic memory: knowledge with embeddings, upsert, privacy ([`KnowledgeStore`]) | `semantic` |
//! | record vectors: embeddings of facts, insights, episodes and knowledge beside them ([`RecordVectors`]) | `vectors` |
//! | what a ranked search reports: [`RetrievalMode`], [`Retriever`], [`RetrieverScore`] (the ranking itself is `openvibe-retrieval`'s) | `retrieval_types` |
//! | promotion (copy or move to `shared` with lineage): [`promotion`] | `promotion` |
//! | goals: objectives, their decomposition, daily priorities, metric reports and progress ([`GoalStore`]) | `goals` |
//! | beliefs (L4): what a role holds true once a person approved it ([`BeliefStore`]) | `beliefs` |
//! | the durable event inbox of the roles' loops: events leased to one loop process at a time ([`InboxStore`]) | `inbox` |
//! | spaces: members, an ordered message log per space, cursors, routing by domain, delegation's request and answer ([`SpaceStore`]) | `spaces` |
//! | the kind registry: every governed store kind with its table, expiry, erasure order, embedding and statuses ([`KINDS`], [`KindSpec`]) | `kinds` |
//! | V1 key/value memory: [`MemoryProvider`] | `kv` |
//!
//! Everything here is re-exported at the crate root, its one import path.

mod access;
mod admin;
mod audit;
mod beliefs;
mod context;
mod cursor;
mod erasure;
mod error;
mod forget;
mod goals;
mod governance;
mod inbox;
mod kinds;
mod kv;
pub mod promotion;
mod proposals;
mod query;
mod raw;
mod records;
mod retrieval_types;
mod semantic;
mod spaces;
mod store;
mod validate;
mod vectors;
mod working;

pub use access::{Governed, modify_allowed, read_allowed};
pub use admin::{
    EXPIRING_KINDS, NamespaceAdmin, NamespaceCount, RECORD_KINDS, check_admin, cleanup_scope,
};
pub use audit::{
    AuditEntry, AuditLog, AuditOp, AuditQuery, AuditStatus, CHAIN_GENESIS, ChainBreak, ChainHead,
    ChainReport, ChainWalk, Redaction, VerifyChain, audit_canonical, audit_chain_hash,
    check_chain_reader, refusal_entry,
};
pub use beliefs::{
    BELIEF_KIND, Belief, BeliefQuery, BeliefStatus, BeliefStore, MAX_BELIEF_INSIGHTS,
    MAX_BELIEF_PAGE, check_belief_verdict, validate_belief,
};
pub use context::{CallerContext, Clearance, Principal, PrincipalKind};
pub use cursor::{Listed, MIN_CURSOR_MICROS, PageQuery, check_limit, page_cursor, parse_cursor};
pub(crate) use cursor::{listed_by_creation, page_query};
pub use erasure::{
    DERIVED_KINDS, ERASURE_AUDIT_KIND, ERASURE_KINDS, ErasureCount, ErasureReport, ErasureSubject,
    KindErasure, REDACTED_REASON, REDACTION_AUDIT_KIND, REDACTIONS_PER_ENTRY, Sweep, mentions,
    mentions_json, mentions_regex, record_content, redacted_filters,
};
pub use error::{ErrorSource, StoreError};
pub use forget::{check_erasure, quotes_subject, redact_entry};
pub use goals::{
    GOAL_KIND, Goal, GoalProgress, GoalQuery, GoalStore, INITIATIVE_KIND, Initiative,
    InitiativeStatus, InitiativeUpdate, KeyResultProgress, MAX_GOAL_PAGE, MAX_INITIATIVES,
    MAX_PRIORITIES, MAX_REASON_CHARS, MAX_REPORT_PAGE, MAX_TITLE_CHARS, METRIC_KIND, MetricMode,
    MetricOutput, MetricReport, MetricValue, PRIORITIES_KIND, Priorities, Priority, ReportQuery,
    objective_fingerprint, stream_conflict, total_out_of_range, validate_goal,
    validate_initiatives, validate_metric_report, validate_priorities,
};
pub use governance::{
    Change, Grants, NamespaceGrant, NamespaceScope, Placement, Retention, Rights,
    check_fixed_namespace,
};
pub use inbox::{
    INBOX_KIND, InboxEvent, InboxOutcome, InboxQuery, InboxStatus, InboxStore, LeaseRequest,
    MAX_INBOX_PAGE, MAX_LEASE_BATCH, MAX_LEASE_MS, MAX_LEASE_ROLES, MAX_NOTE_CHARS, MIN_LEASE_MS,
    Renewal, StoreInbox, check_pushed_kind, inbox_event_id, inbox_trace, lease_end, push_to_inbox,
    validate_inbox_event,
};
pub use kinds::{KINDS, KeptRecord, KindSpec, kind_spec, member_change, table_of};
pub use kv::{MemoryEntry, MemoryProvider};
pub use proposals::{
    ADOPT_BELIEF_ACTION, ADOPT_BELIEF_TOOL, MAX_ERROR_CHARS, MAX_PROPOSAL_PAGE, PROPOSAL_KIND,
    Proposal, ProposalQuery, ProposalStatus, ProposalStore, Verdict, belief_proposal_id,
    validate_proposal,
};
pub use query::{
    EpisodeQuery, FactQuery, InsightQuery, RecordFilter, RecordQuery, record_cursor, text_terms,
};
pub use raw::{MAX_RAW_PAGE, RawCallQuery, RawLogStore, RawRetention};
pub use records::{
    Classification, Episode, Fact, Insight, InsightStatus, Observed, ParseClassificationError,
    RawCall, RecordMeta, RetrievalTrace, TraceAction, content_hash,
};
pub use retrieval_types::{RetrievalMode, Retriever, RetrieverScore};
pub use semantic::{
    Knowledge, KnowledgeFilter, KnowledgeHit, KnowledgeQuery, KnowledgeSearch, KnowledgeStore,
    NewKnowledge, check_embedding, check_user, knowledge_read_allowed, resolve_embedding,
    validate_knowledge,
};
pub use spaces::{
    AnswerStatus, DelegationAnswer, DelegationRequest, MAX_MESSAGE_PAGE, MAX_SPACE_MEMBERS,
    MAX_SPACE_PAGE, MAX_WAIT_MS, MESSAGE_KIND, Member, MessageBody, MessageQuery, SPACE_KIND,
    Space, SpaceMessage, SpaceQuery, SpaceStore, merge_posted, space_not_found, split_reposts,
    validate_message,
};
pub use store::{
    EpisodicStore, FactStore, InsightStore, RecordStore, RevisableRecord, RevisableStore,
    STRENGTHEN_STEP, StoredRecord, Stores, observe_with,
};
pub use validate::{
    MAX_BATCH_LEN, MAX_CONTENT_LEN, MAX_JSON_BYTES, MAX_JSON_DEPTH, MAX_LABEL_LEN,
    MAX_METADATA_BYTES, MAX_RECORD_ID_LEN, MAX_SEARCH_BYTES, MAX_WORD_LEN, at_index, check_batch,
    check_caller, check_content, check_importance, check_json, check_label, check_meta,
    check_metadata, check_opt_label, check_tags, check_text, check_unit, json_object, record_terms,
    validate_episode, validate_fact, validate_insight, validate_raw_call, validate_record_id,
};
pub use vectors::{
    EMBEDDED_KINDS, EmbeddingText, KindVectors, MAX_VECTOR_IDS, PendingText, RecordVector,
    RecordVectors, VectorStatus, check_vector_admin, check_vector_lookup, embed_checked,
    embedding_text, no_embedder,
};
pub use working::{
    ContextStore, Expect, NewPlan, NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery,
    PlanStateStore, PlanStatus, PlanStore, PlanUpdate, Session, SessionDeleted, SessionQuery,
    SessionStore, StateEntry, TaskContext, WorkingStore, check_state_key, normalize_ids,
    store_time,
};
