//! The service's paths. `{name}` segments are path parameters; the client
//! percent-encodes each one.

/// Liveness: the process answers.
pub const HEALTHZ: &str = "/healthz";
/// Readiness: the database answers.
pub const READYZ: &str = "/readyz";
/// The OpenAPI 3.1 document.
pub const OPENAPI: &str = "/openapi.json";

/// Facts: `POST` stores one.
pub const FACTS: &str = "/v1/memory/facts";
/// Episodes: `POST` stores one.
pub const EPISODES: &str = "/v1/memory/episodes";
/// The L1 raw log: `POST` appends a batch of raw calls.
pub const RAW: &str = "/v1/memory/raw";
/// Insights: `POST` stores one.
pub const INSIGHTS: &str = "/v1/memory/insights";
/// Sessions: `POST` creates, `GET` lists.
pub const SESSIONS: &str = "/v1/memory/sessions";
/// Plans: `POST` creates, `GET` lists.
pub const PLANS: &str = "/v1/memory/plans";
/// Task contexts: `POST` stores one.
pub const TASK_CONTEXT: &str = "/v1/memory/task-context";
/// Plan contexts: `POST` stores one.
pub const PLAN_CONTEXT: &str = "/v1/memory/plan-context";
/// Plan-scoped working memory: `/{plan_id}` and `/{plan_id}/{key}`.
pub const WORKING: &str = "/v1/memory/working";
/// Atomic append to a plan-state list.
pub const ATOMIC_APPEND: &str = "/v1/memory/atomic/append";
/// Atomic increment of a plan-state counter.
pub const ATOMIC_INCREMENT: &str = "/v1/memory/atomic/increment";
/// Semantic memory: `POST` stores (upserts) knowledge.
pub const SEMANTIC: &str = "/v1/memory/semantic";
/// Semantic search (`/search` is the seed's alias).
pub const SEMANTIC_QUERY: &str = "/v1/memory/semantic/query";
/// The seed's name for [`SEMANTIC_QUERY`].
pub const SEMANTIC_SEARCH: &str = "/v1/memory/semantic/search";
/// The embedding model the semantic store expects.
pub const SEMANTIC_MODEL: &str = "/v1/memory/semantic/model";
/// The audit trail: `POST` appends an entry.
pub const AUDIT: &str = "/v1/memory/audit";
/// Audit search.
pub const AUDIT_QUERY: &str = "/v1/memory/audit/query";
/// Write batched audit entries now.
pub const AUDIT_FLUSH: &str = "/v1/memory/audit/flush";
/// Record counts per kind and namespace.
pub const NAMESPACES: &str = "/v1/memory/namespaces";
/// Move one kind's records between namespaces.
pub const NAMESPACES_MOVE: &str = "/v1/memory/namespaces/move";
/// Delete expired records, one batch.
pub const EXPIRED_DELETE: &str = "/v1/memory/expired/delete";
/// The current vectors of records the caller may read.
pub const VECTORS: &str = "/v1/memory/vectors";
/// How many records have a current vector, per kind (privileged).
pub const VECTORS_STATUS: &str = "/v1/memory/vectors/status";
/// Embed one batch of records waiting for a vector (privileged).
pub const VECTORS_EMBED: &str = "/v1/memory/vectors/embed";
/// Promote a fact or insight to another namespace.
pub const PROMOTE: &str = "/v1/memory/promote";
