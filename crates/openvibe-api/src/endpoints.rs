//! The endpoint table: every route of the memory service, once, with its
//! method, path template, operation id and summary, the types it takes and
//! answers, whether it may be sent twice and what a 404 means. The
//! service's router and its OpenAPI document are built from it, and the
//! remote client calls it, so the two ends cannot disagree on a path, a
//! method or a body.
//!
//! A `{name}` segment of a path is a parameter: the client percent-encodes
//! each value ([`Endpoint::segments`]). Record kinds name their endpoints
//! through [`RecordEndpoints`] (and [`RevisableEndpoints`]), so code written
//! once for every kind (the remote client's record stores, the service's
//! record routes) picks the right row.
//!
//! ```
//! use openvibe_api::endpoints::{self, Method};
//!
//! assert_eq!(endpoints::GET_FACT.method, Method::Get);
//! assert_eq!(endpoints::GET_FACT.path, "/v1/memory/facts/{id}");
//! assert_eq!(endpoints::GET_FACT.segments(&["f 1"]).unwrap(), ["v1", "memory", "facts", "f 1"]);
//! assert!(endpoints::all().iter().any(|op| op.operation_id == "storeFact"));
//! ```

mod stores;

use std::marker::PhantomData;

use openvibe_protocols::{
    Accepted, AuditEntry, AuditQuery, Belief, BeliefQuery, ChainHead, ChainReport, DecisionEvent,
    Episode, EpisodeQuery, ErasureCount, ErasureSubject, Fact, FactQuery, Goal, GoalProgress,
    GoalQuery, Insight, InsightQuery, Knowledge, KnowledgeHit, KnowledgeQuery, LoopTrace,
    MetricReport, NamespaceCount, NewKnowledge, NewPlan, NewSession, Observed, Page, Plan,
    PlanContext, PlanDeleted, PlanQuery, PlanUpdate, Priorities, Proposal, ProposalQuery, RawCall,
    RawCallQuery, RecordVector, ReportQuery, RevisableRecord, Session, SessionDeleted,
    SessionQuery, Space, SpaceMessage, SpaceQuery, StateEntry, StoreError, StoredRecord,
    TaskContext, VectorStatus, Verdict, VerifyChain,
};
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::Caller;
use crate::dto::{
    Ack, AppendRaw, AtomicAppend, AtomicIncrement, Cursor, Decompose, DeleteExpired, Deleted,
    DeletedCount, EmbedPending, Embedded, EmbeddingModel, Erase, ExpireProposals, ExpiredCount,
    FinishProposal, Health, MaybeInsight, MoveNamespace, Moved, PostMessages, PrioritiesOf,
    Promote, PruneRaw, RedactAudit, Redacted, RetireBelief, SearchMemory, SetState, SimilarInsight,
    Strengthen, Touch, Touched, VectorLookup,
};

/// An HTTP method of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`: reads.
    Get,
    /// `POST`: creates, appends, and searches with a body.
    Post,
    /// `PUT`: replaces.
    Put,
    /// `DELETE`: deletes.
    Delete,
}

impl Method {
    /// The method's name (`GET`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
        }
    }
}

/// How an endpoint's input travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Only the path's parameters.
    None,
    /// A JSON body.
    Body,
    /// Query-string parameters (the fields of a flat struct).
    Query,
}

/// The answer of an endpoint that answers `204 No Content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoContent;

impl<'de> serde::Deserialize<'de> for NoContent {
    /// Whatever the body holds (nothing, for a 204).
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(de).map(|_| Self)
    }
}

/// The JSON Schema of a type, for the OpenAPI document.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// What an endpoint answers: a JSON document, or no content.
pub trait Output {
    /// Its schema; `None`: `204 No Content`.
    const SCHEMA: Option<SchemaFn>;
}

impl<T: JsonSchema> Output for T {
    const SCHEMA: Option<SchemaFn> = Some(schema_of::<T>);
}

impl Output for NoContent {
    const SCHEMA: Option<SchemaFn> = None;
}

/// One row of the table: `method path`, taking an `I` (a body or query
/// parameters, see [`Endpoint::input`]; `()` for none) and answering an `O`
/// ([`NoContent`] for `204`).
pub struct Endpoint<I, O> {
    /// The method.
    pub method: Method,
    /// The path template (`{name}` segments are parameters).
    pub path: &'static str,
    /// The OpenAPI operation id (camelCase).
    pub operation_id: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// How `I` travels.
    pub input: Input,
    /// Whether sending it twice does what sending it once does (a client
    /// retries only such requests once they may have been received).
    pub idempotent: bool,
    /// It needs no API key.
    pub public: bool,
    /// A `404` naming this record kind means "none" (the answer of a
    /// lookup that found nothing), not an error.
    pub missing: Option<&'static str>,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for Endpoint<I, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I, O> Copy for Endpoint<I, O> {}

impl<I, O> std::fmt::Debug for Endpoint<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({})",
            self.method.as_str(),
            self.path,
            self.operation_id
        )
    }
}

impl<I, O> Endpoint<I, O> {
    const fn new(
        method: Method,
        path: &'static str,
        operation_id: &'static str,
        summary: &'static str,
    ) -> Self {
        Self {
            method,
            path,
            operation_id,
            summary,
            input: match method {
                Method::Post | Method::Put => Input::Body,
                Method::Get | Method::Delete => Input::None,
            },
            idempotent: !matches!(method, Method::Post),
            public: false,
            missing: None,
            types: PhantomData,
        }
    }

    const fn get(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new(Method::Get, path, id, summary)
    }

    const fn post(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new(Method::Post, path, id, summary)
    }

    const fn put(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new(Method::Put, path, id, summary)
    }

    const fn delete(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new(Method::Delete, path, id, summary)
    }

    /// It takes no input but its path's parameters.
    const fn no_input(mut self) -> Self {
        self.input = Input::None;
        self
    }

    /// It takes its input as query-string parameters.
    const fn query(mut self) -> Self {
        self.input = Input::Query;
        self
    }

    /// It needs no API key.
    const fn public(mut self) -> Self {
        self.public = true;
        self
    }

    /// Sending it twice does what sending it once does.
    const fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// A `404` naming `kind` is "none".
    const fn or_none(mut self, kind: &'static str) -> Self {
        self.missing = Some(kind);
        self
    }

    /// The names of the path's parameters, in order.
    pub fn params(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
    }

    /// The path's segments with `values` in place of its parameters, in
    /// order (unencoded: a client percent-encodes each). A wrong number of
    /// values, or an empty one (no store accepts an empty id or key), is
    /// [`StoreError::InvalidInput`].
    pub fn segments(&self, values: &[&str]) -> Result<Vec<String>, StoreError> {
        let mut values = values.iter();
        let mut out = Vec::new();
        for segment in self.path.split('/').filter(|s| !s.is_empty()) {
            if segment.starts_with('{') {
                let value = values.next().ok_or_else(|| {
                    StoreError::invalid("path", format!("{self:?} needs a value for {segment}"))
                })?;
                if value.is_empty() {
                    return Err(StoreError::invalid("id", "must not be empty"));
                }
                out.push((*value).to_owned());
            } else {
                out.push(segment.to_owned());
            }
        }
        if values.next().is_some() {
            return Err(StoreError::invalid(
                "path",
                format!("{self:?} takes fewer values"),
            ));
        }
        Ok(out)
    }
}

/// An endpoint with its types' schemas, for documents and route tables
/// ([`Endpoint::operation`], [`all`]).
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// The method.
    pub method: Method,
    /// The path template.
    pub path: &'static str,
    /// The OpenAPI operation id.
    pub operation_id: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// The schema of its JSON body, when it takes one.
    pub body: Option<SchemaFn>,
    /// The schema whose fields are its query-string parameters, when it takes them.
    pub query: Option<SchemaFn>,
    /// The schema of its answer; `None`: `204 No Content`.
    pub response: Option<SchemaFn>,
    /// It needs no API key.
    pub public: bool,
    /// Sending it twice does what sending it once does.
    pub idempotent: bool,
}

impl<I: JsonSchema, O: Output> Endpoint<I, O> {
    /// This endpoint with its schemas.
    pub fn operation(&self) -> Operation {
        Operation {
            method: self.method,
            path: self.path,
            operation_id: self.operation_id,
            summary: self.summary,
            body: (self.input == Input::Body).then_some(schema_of::<I> as SchemaFn),
            query: (self.input == Input::Query).then_some(schema_of::<I> as SchemaFn),
            response: O::SCHEMA,
            public: self.public,
            idempotent: self.idempotent,
        }
    }
}

/// The endpoints of a record kind ([`Fact`], [`Episode`], [`Insight`]).
pub trait RecordEndpoints: StoredRecord {
    /// Store (insert or replace) one.
    const STORE: Endpoint<Self, Self>;
    /// One by id (`404`: none).
    const GET: Endpoint<(), Self>;
    /// Those matching a query.
    const QUERY: Endpoint<Self::Query, Vec<Self>>;
    /// Delete one.
    const DELETE: Endpoint<(), NoContent>;
}

/// The endpoints of a record kind that changes after it is written.
pub trait RevisableEndpoints: RecordEndpoints + RevisableRecord {
    /// Replace one (the body's id must be the path's).
    const UPDATE: Endpoint<Self, Self>;
    /// Count some as accessed.
    const TOUCH: Endpoint<Touch, Touched>;
}

impl RecordEndpoints for Fact {
    const STORE: Endpoint<Self, Self> = STORE_FACT;
    const GET: Endpoint<(), Self> = GET_FACT;
    const QUERY: Endpoint<FactQuery, Vec<Self>> = QUERY_FACTS;
    const DELETE: Endpoint<(), NoContent> = DELETE_FACT;
}

impl RevisableEndpoints for Fact {
    const UPDATE: Endpoint<Self, Self> = UPDATE_FACT;
    const TOUCH: Endpoint<Touch, Touched> = TOUCH_FACTS;
}

impl RecordEndpoints for Episode {
    const STORE: Endpoint<Self, Self> = STORE_EPISODE;
    const GET: Endpoint<(), Self> = GET_EPISODE;
    const QUERY: Endpoint<EpisodeQuery, Vec<Self>> = QUERY_EPISODES;
    const DELETE: Endpoint<(), NoContent> = DELETE_EPISODE;
}

impl RecordEndpoints for Insight {
    const STORE: Endpoint<Self, Self> = STORE_INSIGHT;
    const GET: Endpoint<(), Self> = GET_INSIGHT;
    const QUERY: Endpoint<InsightQuery, Vec<Self>> = QUERY_INSIGHTS;
    const DELETE: Endpoint<(), NoContent> = DELETE_INSIGHT;
}

impl RevisableEndpoints for Insight {
    const UPDATE: Endpoint<Self, Self> = UPDATE_INSIGHT;
    const TOUCH: Endpoint<Touch, Touched> = TOUCH_INSIGHTS;
}

/// The rows of a store trait's wire ([`store_wire!`](crate::store_wire)),
/// each documented as `` `METHOD path`: summary. ``, and the function
/// that lists them in their order (for [`all`]).
macro_rules! rows {
    ($trait:ident $ops:ident; $(
        fn $name:ident $args:tt -> $ret:ty = $row:ident {
            $m:ident $path:literal [$($p:ident),*] ($($input:tt)*) -> $out:ty;
            $op:literal, $summary:literal [$($flag:ident),*];
            $(or_none $kind:literal $(($id:expr))?;)?
            server $server:tt;
            client $client:tt;
        }
    )*) => {
        $(
            #[doc = concat!("`", stringify!($m), " ", $path, "`: ", $summary, ".")]
            pub const $row: Endpoint<rows!(@input $($input)*), $out> =
                rows!(@new $m ($($input)*) $path, $op, $summary) $(.$flag())* $(.or_none($kind))?;
        )*

        /// The rows of the trait, in the table's order.
        fn $ops() -> Vec<Operation> {
            vec![$($row.operation()),*]
        }

        #[cfg(test)]
        mod $ops {
            /// Each row's path has one `{…}` segment per path argument.
            #[test]
            fn the_path_arguments_fill_the_paths() {
                $(assert_eq!(
                    super::$row.params().count(),
                    <[&str]>::len(&[$(stringify!($p)),*]),
                    "{:?}",
                    super::$row
                );)*
            }
        }
    };
    (@input none) => { () };
    (@input body $t:ty) => { $t };
    (@new GET (none) $($a:tt)*) => { Endpoint::get($($a)*) };
    (@new DELETE (none) $($a:tt)*) => { Endpoint::delete($($a)*) };
    (@new POST (none) $($a:tt)*) => { Endpoint::post($($a)*).no_input() };
    (@new POST (body $t:ty) $($a:tt)*) => { Endpoint::post($($a)*) };
    (@new PUT (body $t:ty) $($a:tt)*) => { Endpoint::put($($a)*) };
}

/// Every endpoint of the table, with its schemas, in the table's order.
pub fn all() -> Vec<Operation> {
    let mut all = vec![
        HEALTHZ.operation(),
        READYZ.operation(),
        OPENAPI.operation(),
        WHOAMI.operation(),
        APPEND_AUDIT.operation(),
        QUERY_AUDIT.operation(),
        FLUSH_AUDIT.operation(),
        VERIFY_AUDIT.operation(),
        AUDIT_ANCHOR.operation(),
        NAMESPACE_COUNTS.operation(),
        MOVE_NAMESPACE.operation(),
        DELETE_EXPIRED.operation(),
        ERASURE_COUNTS.operation(),
        ERASE.operation(),
        REDACT_AUDIT.operation(),
        RECORD_VECTORS.operation(),
        VECTOR_STATUS.operation(),
        EMBED_PENDING.operation(),
        PROMOTE.operation(),
        SEARCH_MEMORY.operation(),
    ];
    all.extend(proposal_ops());
    all.extend(space_ops());
    all.extend(goal_ops());
    all.extend(belief_ops());
    all.extend([
        STORE_FACT.operation(),
        GET_FACT.operation(),
        UPDATE_FACT.operation(),
        DELETE_FACT.operation(),
        QUERY_FACTS.operation(),
        TOUCH_FACTS.operation(),
        STORE_EPISODE.operation(),
        GET_EPISODE.operation(),
        DELETE_EPISODE.operation(),
        QUERY_EPISODES.operation(),
        APPEND_RAW_CALLS.operation(),
        GET_RAW_CALL.operation(),
        QUERY_RAW_CALLS.operation(),
        PRUNE_RAW_CALLS.operation(),
        STORE_INSIGHT.operation(),
        GET_INSIGHT.operation(),
        UPDATE_INSIGHT.operation(),
        DELETE_INSIGHT.operation(),
        QUERY_INSIGHTS.operation(),
        SIMILAR_INSIGHT.operation(),
        TOUCH_INSIGHTS.operation(),
        STRENGTHEN_INSIGHT.operation(),
        OBSERVE_INSIGHT.operation(),
        PUSH_EVENT.operation(),
        EVENT_TRACE.operation(),
        STORE_KNOWLEDGE.operation(),
        QUERY_KNOWLEDGE.operation(),
        SEARCH_KNOWLEDGE.operation(),
        EMBEDDING_MODEL.operation(),
        GET_KNOWLEDGE.operation(),
        DELETE_KNOWLEDGE.operation(),
        CREATE_SESSION.operation(),
        LIST_SESSIONS.operation(),
        GET_SESSION.operation(),
        DELETE_SESSION.operation(),
        CREATE_PLAN.operation(),
        LIST_PLANS.operation(),
        GET_PLAN.operation(),
        UPDATE_PLAN.operation(),
        DELETE_PLAN.operation(),
        STORE_TASK_CONTEXT.operation(),
        GET_TASK_CONTEXT.operation(),
        DELETE_TASK_CONTEXT.operation(),
        GET_TASK_BY_SUBTASK.operation(),
        STORE_PLAN_CONTEXT.operation(),
        GET_PLAN_CONTEXT.operation(),
        GET_PLAN_BY_CORRELATION.operation(),
        LIST_PLAN_STATE.operation(),
        DELETE_PLAN_STATE.operation(),
        SET_PLAN_STATE.operation(),
        GET_PLAN_STATE.operation(),
        DELETE_PLAN_STATE_KEY.operation(),
        ATOMIC_APPEND.operation(),
        ATOMIC_INCREMENT.operation(),
    ]);
    all
}

// --- System: health, the document, audit, namespaces, expiry, vectors, promotion ---

/// `GET /healthz`: Liveness: the process answers.
pub const HEALTHZ: Endpoint<(), Health> =
    Endpoint::get("/healthz", "healthz", "Liveness: the process answers").public();

/// `GET /readyz`: Readiness: the database answers (503 when not).
pub const READYZ: Endpoint<(), Health> = Endpoint::get(
    "/readyz",
    "readyz",
    "Readiness: the database answers (503 when not)",
)
.public();

/// `GET /openapi.json`: This document.
pub const OPENAPI: Endpoint<(), serde_json::Value> =
    Endpoint::get("/openapi.json", "openapi", "This document").public();

/// `GET /v1/whoami`: Who the caller is (from its API key): tenant, principal, project, clearance and grants.
pub const WHOAMI: Endpoint<(), Caller> = Endpoint::get(
    "/v1/whoami",
    "whoami",
    "Who the caller is (from its API key): tenant, principal, project, clearance and grants",
);

/// `POST /v1/memory/audit`: Append an audit entry for an operation composed above the stores.
pub const APPEND_AUDIT: Endpoint<AuditEntry, NoContent> = Endpoint::post(
    "/v1/memory/audit",
    "appendAudit",
    "Append an audit entry for an operation composed above the stores",
);

/// `POST /v1/memory/audit/query`: Audit entries, newest first (a non-privileged caller sees its own).
pub const QUERY_AUDIT: Endpoint<AuditQuery, Vec<AuditEntry>> = Endpoint::post(
    "/v1/memory/audit/query",
    "queryAudit",
    "Audit entries, newest first (a non-privileged caller sees its own)",
)
.idempotent();

/// `POST /v1/memory/audit/flush`: Write batched audit entries now.
pub const FLUSH_AUDIT: Endpoint<(), NoContent> = Endpoint::post(
    "/v1/memory/audit/flush",
    "flushAudit",
    "Write batched audit entries now",
)
.no_input()
.idempotent();

/// `POST /v1/memory/audit/verify`: Walk the tenant's audit chain and report the first entry that does not hold (privileged).
pub const VERIFY_AUDIT: Endpoint<VerifyChain, ChainReport> = Endpoint::post(
    "/v1/memory/audit/verify",
    "verifyAuditChain",
    "Walk the tenant's audit chain and report the first entry that does not hold (privileged)",
)
.idempotent();

/// `GET /v1/memory/audit/anchor`: The head of the tenant's audit chain, to keep elsewhere (privileged).
pub const AUDIT_ANCHOR: Endpoint<(), ChainHead> = Endpoint::get(
    "/v1/memory/audit/anchor",
    "auditAnchor",
    "The head of the tenant's audit chain (its last entry's number and hash), to keep elsewhere (privileged)",
);

/// `GET /v1/memory/namespaces`: Records per kind and namespace (privileged).
pub const NAMESPACE_COUNTS: Endpoint<(), Vec<NamespaceCount>> = Endpoint::get(
    "/v1/memory/namespaces",
    "namespaceCounts",
    "Records per kind and namespace (privileged)",
);

/// `POST /v1/memory/namespaces/move`: Move one kind's records to another namespace (privileged, batched, audited).
pub const MOVE_NAMESPACE: Endpoint<MoveNamespace, Moved> = Endpoint::post(
    "/v1/memory/namespaces/move",
    "moveNamespace",
    "Move one kind's records to another namespace (privileged, batched, audited)",
)
.idempotent();

/// `POST /v1/memory/expired/delete`: Delete one batch of expired records, whoever owns them, where the caller manages the namespace (or everywhere when privileged); each deletion is audited.
pub const DELETE_EXPIRED: Endpoint<DeleteExpired, DeletedCount> = Endpoint::post(
    "/v1/memory/expired/delete",
    "deleteExpired",
    "Delete one batch of expired records, whoever owns them, where the caller manages \
             the namespace (or everywhere when privileged); each deletion is audited",
)
.idempotent();

/// `POST /v1/memory/erasure/count`: Records about a subject per kind, and derived rows left without their record (privileged).
pub const ERASURE_COUNTS: Endpoint<ErasureSubject, Vec<ErasureCount>> = Endpoint::post(
    "/v1/memory/erasure/count",
    "erasureCounts",
    "Records about a subject (an entity, an owner or a namespace) per kind, expired ones \
             included, then the vectors and postings left without their record (privileged)",
)
.idempotent();

/// `POST /v1/memory/erasure/erase`: Delete one batch of the records about a subject, with their derived data (privileged, audited).
pub const ERASE: Endpoint<Erase, Vec<ErasureCount>> = Endpoint::post(
    "/v1/memory/erasure/erase",
    "erase",
    "Delete one batch of the records about a subject with their vectors, postings and \
             dependent rows, each audited; the kinds that lost records, none when nothing is left \
             (privileged)",
)
.idempotent();

/// `POST /v1/memory/audit/redact`: Redact the audit entries quoting a subject, recorded in the chain (privileged).
pub const REDACT_AUDIT: Endpoint<RedactAudit, Redacted> = Endpoint::post(
    "/v1/memory/audit/redact",
    "redactAudit",
    "Redact the tenant's audit entries that quote a subject (their filters and reason), \
             with a redaction entry in the chain so that verification still passes (privileged)",
)
.idempotent();

/// `POST /v1/memory/vectors`: The current vectors of a model for records the caller may read (the others are left out).
pub const RECORD_VECTORS: Endpoint<VectorLookup, Vec<RecordVector>> = Endpoint::post(
    "/v1/memory/vectors",
    "recordVectors",
    "The current vectors of a model for records the caller may read (the others are \
             left out)",
)
.idempotent();

/// `GET /v1/memory/vectors/status`: The store's embedding model and, per kind, records with a current vector and records waiting (privileged).
pub const VECTOR_STATUS: Endpoint<(), VectorStatus> = Endpoint::get(
    "/v1/memory/vectors/status",
    "vectorStatus",
    "The store's embedding model and, per kind, records with a current vector and \
             records waiting (privileged)",
);

/// `POST /v1/memory/vectors/embed`: Embed one batch of records waiting for a vector, without rewriting them (privileged).
pub const EMBED_PENDING: Endpoint<EmbedPending, Embedded> = Endpoint::post(
    "/v1/memory/vectors/embed",
    "embedPending",
    "Embed one batch of records waiting for a vector, without rewriting them \
             (privileged)",
)
.idempotent();

/// `POST /v1/memory/promote`: Promote a fact or insight into another namespace as a fact (audited).
pub const PROMOTE: Endpoint<Promote, Fact> = Endpoint::post(
    "/v1/memory/promote",
    "promote",
    "Promote a fact or insight into another namespace as a fact (audited)",
)
.idempotent();

/// `POST /v1/memory/search`: Search the facts the caller may read, one per lineage (a fact and its promoted copies are one result).
pub const SEARCH_MEMORY: Endpoint<SearchMemory, Vec<Fact>> = Endpoint::post(
    "/v1/memory/search",
    "searchMemory",
    "Search the facts the caller may read, one per lineage (a fact and its promoted copies are one result)",
)
.idempotent();

// --- Proposals, spaces, goals, beliefs: the wire of their store traits ---
// (declared once in `stores.rs`; these rows, the service's handlers and the
// remote's impls are expanded from it)

crate::store_wire!(ProposalStore => rows);
crate::store_wire!(SpaceStore => rows);
crate::store_wire!(GoalStore => rows);
crate::store_wire!(BeliefStore => rows);

// --- Records: facts, episodes, the raw log, insights, semantic knowledge ---

/// `POST /v1/memory/facts`: Store a fact (its namespace and owner are set from the caller).
pub const STORE_FACT: Endpoint<Fact, Fact> = Endpoint::post(
    "/v1/memory/facts",
    "storeFact",
    "Store a fact (its namespace and owner are set from the caller)",
);

/// `GET /v1/memory/facts/{id}`: A fact the caller may read.
pub const GET_FACT: Endpoint<(), Fact> = Endpoint::get(
    "/v1/memory/facts/{id}",
    "getFact",
    "A fact the caller may read",
)
.or_none("fact");

/// `PUT /v1/memory/facts/{id}`: Replace a fact (the body's id must match).
pub const UPDATE_FACT: Endpoint<Fact, Fact> = Endpoint::put(
    "/v1/memory/facts/{id}",
    "updateFact",
    "Replace a fact (the body's id must match)",
);

/// `DELETE /v1/memory/facts/{id}`: Delete a fact.
pub const DELETE_FACT: Endpoint<(), NoContent> =
    Endpoint::delete("/v1/memory/facts/{id}", "deleteFact", "Delete a fact");

/// `POST /v1/memory/facts/query`: Facts matching a query.
pub const QUERY_FACTS: Endpoint<FactQuery, Vec<Fact>> = Endpoint::post(
    "/v1/memory/facts/query",
    "queryFacts",
    "Facts matching a query",
)
.idempotent();

/// `POST /v1/memory/facts/touch`: Count facts as accessed.
pub const TOUCH_FACTS: Endpoint<Touch, Touched> = Endpoint::post(
    "/v1/memory/facts/touch",
    "touchFacts",
    "Count facts as accessed",
);

/// `POST /v1/memory/episodes`: Store an episode.
pub const STORE_EPISODE: Endpoint<Episode, Episode> =
    Endpoint::post("/v1/memory/episodes", "storeEpisode", "Store an episode");

/// `GET /v1/memory/episodes/{id}`: An episode the caller may read.
pub const GET_EPISODE: Endpoint<(), Episode> = Endpoint::get(
    "/v1/memory/episodes/{id}",
    "getEpisode",
    "An episode the caller may read",
)
.or_none("episode");

/// `DELETE /v1/memory/episodes/{id}`: Delete an episode.
pub const DELETE_EPISODE: Endpoint<(), NoContent> = Endpoint::delete(
    "/v1/memory/episodes/{id}",
    "deleteEpisode",
    "Delete an episode",
);

/// `POST /v1/memory/episodes/query`: Episodes matching a query.
pub const QUERY_EPISODES: Endpoint<EpisodeQuery, Vec<Episode>> = Endpoint::post(
    "/v1/memory/episodes/query",
    "queryEpisodes",
    "Episodes matching a query",
)
.idempotent();

/// `POST /v1/memory/raw`: Append LLM calls to the raw log, all or none.
pub const APPEND_RAW_CALLS: Endpoint<AppendRaw, Vec<RawCall>> = Endpoint::post(
    "/v1/memory/raw",
    "appendRawCalls",
    "Append LLM calls to the raw log, all or none",
);

/// `GET /v1/memory/raw/{id}`: A raw call the caller may read.
pub const GET_RAW_CALL: Endpoint<(), RawCall> = Endpoint::get(
    "/v1/memory/raw/{id}",
    "getRawCall",
    "A raw call the caller may read",
)
.or_none("raw_call");

/// `POST /v1/memory/raw/query`: A page of raw calls, newest first.
pub const QUERY_RAW_CALLS: Endpoint<RawCallQuery, Page<RawCall>> = Endpoint::post(
    "/v1/memory/raw/query",
    "queryRawCalls",
    "A page of raw calls, newest first",
)
.idempotent();

/// `POST /v1/memory/raw/prune`: Delete an agent's raw calls beyond a retention.
pub const PRUNE_RAW_CALLS: Endpoint<PruneRaw, DeletedCount> = Endpoint::post(
    "/v1/memory/raw/prune",
    "pruneRawCalls",
    "Delete an agent's raw calls beyond a retention",
)
.idempotent();

/// `POST /v1/memory/insights`: Store an insight.
pub const STORE_INSIGHT: Endpoint<Insight, Insight> =
    Endpoint::post("/v1/memory/insights", "storeInsight", "Store an insight");

/// `GET /v1/memory/insights/{id}`: An insight the caller may read.
pub const GET_INSIGHT: Endpoint<(), Insight> = Endpoint::get(
    "/v1/memory/insights/{id}",
    "getInsight",
    "An insight the caller may read",
)
.or_none("insight");

/// `PUT /v1/memory/insights/{id}`: Replace an insight (the body's id must match).
pub const UPDATE_INSIGHT: Endpoint<Insight, Insight> = Endpoint::put(
    "/v1/memory/insights/{id}",
    "updateInsight",
    "Replace an insight (the body's id must match)",
);

/// `DELETE /v1/memory/insights/{id}`: Delete an insight.
pub const DELETE_INSIGHT: Endpoint<(), NoContent> = Endpoint::delete(
    "/v1/memory/insights/{id}",
    "deleteInsight",
    "Delete an insight",
);

/// `POST /v1/memory/insights/query`: Insights matching a query.
pub const QUERY_INSIGHTS: Endpoint<InsightQuery, Vec<Insight>> = Endpoint::post(
    "/v1/memory/insights/query",
    "queryInsights",
    "Insights matching a query",
)
.idempotent();

/// `POST /v1/memory/insights/similar`: The agent's insight most similar to a text.
pub const SIMILAR_INSIGHT: Endpoint<SimilarInsight, MaybeInsight> = Endpoint::post(
    "/v1/memory/insights/similar",
    "similarInsight",
    "The agent's insight most similar to a text",
)
.idempotent();

/// `POST /v1/memory/insights/touch`: Count insights as accessed.
pub const TOUCH_INSIGHTS: Endpoint<Touch, Touched> = Endpoint::post(
    "/v1/memory/insights/touch",
    "touchInsights",
    "Count insights as accessed",
);

/// `POST /v1/loop/{role}/events`: Push an event into a role's cognitive loop (an event id seen before runs once; a full queue is 503, retry later).
pub const PUSH_EVENT: Endpoint<DecisionEvent, Accepted> = Endpoint::post(
    "/v1/loop/{role}/events",
    "pushEvent",
    "Push an event into a role's cognitive loop (an event id seen before runs once; a full queue is 503, retry later)",
);

/// `GET /v1/loop/{role}/events/{id}`: An event's path through the loop's stages so far.
pub const EVENT_TRACE: Endpoint<(), LoopTrace> = Endpoint::get(
    "/v1/loop/{role}/events/{id}",
    "eventTrace",
    "An event's path through the loop's stages so far",
)
.or_none("event");

/// `POST /v1/memory/insights/observe`: Create the pattern an insight names by its id, or strengthen it when it exists, atomically.
pub const OBSERVE_INSIGHT: Endpoint<Insight, Observed> = Endpoint::post(
    "/v1/memory/insights/observe",
    "observeInsight",
    "Create the pattern an insight names by its id, or strengthen it when it exists, atomically",
);

/// `POST /v1/memory/insights/{id}/strengthen`: Observe an insight again, atomically (confidence +0.1 up to 1, evidence +1).
pub const STRENGTHEN_INSIGHT: Endpoint<Strengthen, Insight> = Endpoint::post(
    "/v1/memory/insights/{id}/strengthen",
    "strengthenInsight",
    "Observe an insight again, atomically (confidence +0.1 up to 1, evidence +1)",
);

/// `POST /v1/memory/semantic`: Store knowledge, upserting on external_id or on the content hash.
pub const STORE_KNOWLEDGE: Endpoint<NewKnowledge, Knowledge> = Endpoint::post(
    "/v1/memory/semantic",
    "storeKnowledge",
    "Store knowledge, upserting on external_id or on the content hash",
)
.idempotent();

/// `POST /v1/memory/semantic/query`: Search knowledge (private to the caller plus public).
pub const QUERY_KNOWLEDGE: Endpoint<KnowledgeQuery, Vec<KnowledgeHit>> = Endpoint::post(
    "/v1/memory/semantic/query",
    "queryKnowledge",
    "Search knowledge (private to the caller plus public)",
)
.idempotent();

/// `POST /v1/memory/semantic/search`: The seed's name for queryKnowledge.
pub const SEARCH_KNOWLEDGE: Endpoint<KnowledgeQuery, Vec<KnowledgeHit>> = Endpoint::post(
    "/v1/memory/semantic/search",
    "searchKnowledge",
    "The seed's name for queryKnowledge",
)
.idempotent();

/// `GET /v1/memory/semantic/model`: The embedding model semantic knowledge uses.
pub const EMBEDDING_MODEL: Endpoint<(), EmbeddingModel> = Endpoint::get(
    "/v1/memory/semantic/model",
    "embeddingModel",
    "The embedding model semantic knowledge uses",
);

/// `GET /v1/memory/semantic/{id}`: Knowledge the caller may read.
pub const GET_KNOWLEDGE: Endpoint<(), Knowledge> = Endpoint::get(
    "/v1/memory/semantic/{id}",
    "getKnowledge",
    "Knowledge the caller may read",
)
.or_none("knowledge");

/// `DELETE /v1/memory/semantic/{id}`: Delete knowledge.
pub const DELETE_KNOWLEDGE: Endpoint<(), NoContent> = Endpoint::delete(
    "/v1/memory/semantic/{id}",
    "deleteKnowledge",
    "Delete knowledge",
);

// --- Working memory: sessions, plans, task and plan contexts, plan state ---

/// `POST /v1/memory/sessions`: Create a session.
pub const CREATE_SESSION: Endpoint<NewSession, Session> =
    Endpoint::post("/v1/memory/sessions", "createSession", "Create a session");

/// `GET /v1/memory/sessions`: Sessions, newest first, a page at a time.
pub const LIST_SESSIONS: Endpoint<SessionQuery, Page<Session>> = Endpoint::get(
    "/v1/memory/sessions",
    "listSessions",
    "Sessions, newest first, a page at a time",
)
.query();

/// `GET /v1/memory/sessions/{id}`: A session.
pub const GET_SESSION: Endpoint<(), Session> =
    Endpoint::get("/v1/memory/sessions/{id}", "getSession", "A session").or_none("session");

/// `DELETE /v1/memory/sessions/{id}`: Delete a session; its plans stay, detached.
pub const DELETE_SESSION: Endpoint<(), SessionDeleted> = Endpoint::delete(
    "/v1/memory/sessions/{id}",
    "deleteSession",
    "Delete a session; its plans stay, detached",
);

/// `POST /v1/memory/plans`: Create a plan.
pub const CREATE_PLAN: Endpoint<NewPlan, Plan> =
    Endpoint::post("/v1/memory/plans", "createPlan", "Create a plan");

/// `GET /v1/memory/plans`: Plans, newest first, filtered by status and session, a page at a time.
pub const LIST_PLANS: Endpoint<PlanQuery, Page<Plan>> = Endpoint::get(
    "/v1/memory/plans",
    "listPlans",
    "Plans, newest first, filtered by status and session, a page at a time",
)
.query();

/// `GET /v1/memory/plans/{id}`: A plan.
pub const GET_PLAN: Endpoint<(), Plan> =
    Endpoint::get("/v1/memory/plans/{id}", "getPlan", "A plan").or_none("plan");

/// `PUT /v1/memory/plans/{id}`: Change a plan's status, goal data or response event.
pub const UPDATE_PLAN: Endpoint<PlanUpdate, Plan> = Endpoint::put(
    "/v1/memory/plans/{id}",
    "updatePlan",
    "Change a plan's status, goal data or response event",
);

/// `DELETE /v1/memory/plans/{id}`: Delete a plan with its context and state; sub-plans stay, detached.
pub const DELETE_PLAN: Endpoint<(), PlanDeleted> = Endpoint::delete(
    "/v1/memory/plans/{id}",
    "deletePlan",
    "Delete a plan with its context and state; sub-plans stay, detached",
);

/// `POST /v1/memory/task-context`: Store a task's context (a worker that delegated sub-tasks).
pub const STORE_TASK_CONTEXT: Endpoint<TaskContext, TaskContext> = Endpoint::post(
    "/v1/memory/task-context",
    "storeTaskContext",
    "Store a task's context (a worker that delegated sub-tasks)",
)
.idempotent();

/// `GET /v1/memory/task-context/{id}`: A task's context.
pub const GET_TASK_CONTEXT: Endpoint<(), TaskContext> = Endpoint::get(
    "/v1/memory/task-context/{id}",
    "getTaskContext",
    "A task's context",
)
.or_none("task_context");

/// `DELETE /v1/memory/task-context/{id}`: Delete a task's context.
pub const DELETE_TASK_CONTEXT: Endpoint<(), Deleted> = Endpoint::delete(
    "/v1/memory/task-context/{id}",
    "deleteTaskContext",
    "Delete a task's context",
);

/// `GET /v1/memory/task-context/by-subtask/{id}`: The task that delegated a sub-task.
pub const GET_TASK_BY_SUBTASK: Endpoint<(), TaskContext> = Endpoint::get(
    "/v1/memory/task-context/by-subtask/{id}",
    "getTaskBySubtask",
    "The task that delegated a sub-task",
)
.or_none("task_context");

/// `POST /v1/memory/plan-context`: Store a plan's context (a planner's state machine).
pub const STORE_PLAN_CONTEXT: Endpoint<PlanContext, PlanContext> = Endpoint::post(
    "/v1/memory/plan-context",
    "storePlanContext",
    "Store a plan's context (a planner's state machine)",
)
.idempotent();

/// `GET /v1/memory/plan-context/{id}`: A plan's context.
pub const GET_PLAN_CONTEXT: Endpoint<(), PlanContext> = Endpoint::get(
    "/v1/memory/plan-context/{id}",
    "getPlanContext",
    "A plan's context",
)
.or_none("plan_context");

/// `GET /v1/memory/plan-context/by-correlation/{id}`: The plan context waiting for a correlation id.
pub const GET_PLAN_BY_CORRELATION: Endpoint<(), PlanContext> = Endpoint::get(
    "/v1/memory/plan-context/by-correlation/{id}",
    "getPlanByCorrelation",
    "The plan context waiting for a correlation id",
)
.or_none("plan_context");

/// `GET /v1/memory/working/{plan_id}`: Every key of a plan's working memory.
pub const LIST_PLAN_STATE: Endpoint<(), Vec<StateEntry>> = Endpoint::get(
    "/v1/memory/working/{plan_id}",
    "listPlanState",
    "Every key of a plan's working memory",
);

/// `DELETE /v1/memory/working/{plan_id}`: Delete every key of a plan's working memory.
pub const DELETE_PLAN_STATE: Endpoint<(), DeletedCount> = Endpoint::delete(
    "/v1/memory/working/{plan_id}",
    "deletePlanState",
    "Delete every key of a plan's working memory",
);

/// `PUT /v1/memory/working/{plan_id}/{key}`: Set one key (optimistic locking with expect).
pub const SET_PLAN_STATE: Endpoint<SetState, StateEntry> = Endpoint::put(
    "/v1/memory/working/{plan_id}/{key}",
    "setPlanState",
    "Set one key (optimistic locking with expect)",
);

/// `GET /v1/memory/working/{plan_id}/{key}`: One key.
pub const GET_PLAN_STATE: Endpoint<(), StateEntry> = Endpoint::get(
    "/v1/memory/working/{plan_id}/{key}",
    "getPlanState",
    "One key",
)
.or_none("state");

/// `DELETE /v1/memory/working/{plan_id}/{key}`: Delete one key.
pub const DELETE_PLAN_STATE_KEY: Endpoint<(), Deleted> = Endpoint::delete(
    "/v1/memory/working/{plan_id}/{key}",
    "deletePlanStateKey",
    "Delete one key",
);

/// `POST /v1/memory/atomic/append`: Append to a list, atomically (no lost update).
pub const ATOMIC_APPEND: Endpoint<AtomicAppend, NoContent> = Endpoint::post(
    "/v1/memory/atomic/append",
    "atomicAppend",
    "Append to a list, atomically (no lost update)",
);

/// `POST /v1/memory/atomic/increment`: Add to a counter, atomically (no lost update).
pub const ATOMIC_INCREMENT: Endpoint<AtomicIncrement, StateEntry> = Endpoint::post(
    "/v1/memory/atomic/increment",
    "atomicIncrement",
    "Add to a counter, atomically (no lost update)",
);
