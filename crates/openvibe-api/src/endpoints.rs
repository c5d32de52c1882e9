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
    GoalQuery, InboxEvent, InboxOutcome, InboxQuery, InitiativeUpdate, Insight, InsightQuery,
    Knowledge, KnowledgeHit, KnowledgeQuery, LeaseRequest, LoopTrace, MetricReport, NamespaceCount,
    NewKnowledge, NewPlan, NewSession, Observed, Page, Plan, PlanContext, PlanDeleted, PlanQuery,
    PlanUpdate, Priorities, Proposal, ProposalQuery, RawCall, RawCallQuery, RecordVector, Renewal,
    ReportQuery, RevisableRecord, Session, SessionDeleted, SessionQuery, Space, SpaceMessage,
    SpaceQuery, StateEntry, StoreError, StoredRecord, TaskContext, VectorStatus, Verdict,
    VerifyChain,
};
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::Caller;
use crate::dto::{
    Ack, AppendRaw, AtomicAppend, AtomicIncrement, BeliefVerdict, Cursor, Decompose, DeleteExpired,
    Deleted, DeletedCount, EmbedPending, Embedded, EmbeddingModel, Erase, ExpireProposals,
    ExpiredCount, FinishProposal, Health, MaybeInsight, MoveNamespace, Moved, PostMessages,
    PrioritiesOf, Promote, PruneRaw, RedactAudit, Redacted, RetireBelief, SearchMemory, SetState,
    SimilarInsight, Strengthen, Touch, Touched, VectorLookup,
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

impl serde::Serialize for NoContent {
    /// Nothing (a `204` has no body; a handler answers no content).
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_unit()
    }
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
    ($trait:ident $ops:ident; { $($extra:tt)* } [ $($entries:tt)* ] [ $($only:tt)* ]) => {
        rows!(@rows $ops; $($entries)* $($only)*);
    };
    (@rows $ops:ident; $(
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
    (@input query $t:ty) => { $t };
    (@new GET (none) $($a:tt)*) => { Endpoint::get($($a)*) };
    (@new GET (query $t:ty) $($a:tt)*) => { Endpoint::get($($a)*).query() };
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
        PROMOTE.operation(),
        SEARCH_MEMORY.operation(),
    ];
    all.extend(proposal_ops());
    all.extend(space_ops());
    all.extend(inbox_ops());
    all.extend(goal_ops());
    all.extend(belief_ops());
    all.extend(audit_ops());
    all.extend(admin_ops());
    all.extend(vector_ops());
    all.extend(raw_ops());
    all.extend(insight_ops());
    all.extend(loop_ops());
    all.extend(knowledge_ops());
    all.extend(session_ops());
    all.extend(plan_ops());
    all.extend(context_ops());
    all.extend(state_ops());
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
        STORE_INSIGHT.operation(),
        GET_INSIGHT.operation(),
        UPDATE_INSIGHT.operation(),
        DELETE_INSIGHT.operation(),
        QUERY_INSIGHTS.operation(),
        TOUCH_INSIGHTS.operation(),
    ]);
    all
}

// --- System: health, the document, who the caller is, promotion, search ---

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

// --- The store traits' wire: declared once in `stores.rs`; these rows, the
// service's handlers and the remote's impls are expanded from it ---

crate::store_wire!(ProposalStore => rows);
crate::store_wire!(SpaceStore => rows);
crate::store_wire!(InboxStore => rows);
crate::store_wire!(GoalStore => rows);
crate::store_wire!(BeliefStore => rows);
crate::store_wire!(AuditLog => rows);
crate::store_wire!(NamespaceAdmin => rows);
crate::store_wire!(RecordVectors => rows);
crate::store_wire!(RawLogStore => rows);
crate::store_wire!(InsightStore => rows);
crate::store_wire!(EventInbox => rows);
crate::store_wire!(KnowledgeStore => rows);
crate::store_wire!(SessionStore => rows);
crate::store_wire!(PlanStore => rows);
crate::store_wire!(ContextStore => rows);
crate::store_wire!(PlanStateStore => rows);

// --- Records: facts, episodes, insights (every record kind's rows, for the
// generic record stores: `RecordEndpoints`) ---

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

/// `POST /v1/memory/insights/touch`: Count insights as accessed.
pub const TOUCH_INSIGHTS: Endpoint<Touch, Touched> = Endpoint::post(
    "/v1/memory/insights/touch",
    "touchInsights",
    "Count insights as accessed",
);
