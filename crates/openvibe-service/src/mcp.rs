//! The MCP server (the official Rust SDK, `rmcp`): memory tools over the
//! same governed stores, on stdio or streamable HTTP (`/mcp` of the
//! service).
//!
//! Tools, with the seed's per-caller rules (the stores enforce them), and
//! the route of the endpoint table each mirrors (the same store call, so
//! the same rules and audit):
//!
//! | tool | mirrors | what it does |
//! |---|---|---|
//! | `saveMemory` | [`POST /v1/memory/facts`](openvibe_api::endpoints::STORE_FACT) | store a fact in a namespace (`scope`); its owner (the seed's *creator*) and `source` are set by the server from the caller, whatever the arguments say |
//! | `searchMemory` | [`POST /v1/memory/search`](openvibe_api::endpoints::SEARCH_MEMORY) | text search over the facts the caller may read, in the namespaces it names or its recall namespaces, one per lineage (audited as a search) |
//! | `getMemoryStats` | [`POST /v1/memory/facts/query`](openvibe_api::endpoints::QUERY_FACTS) | how many facts the caller can see, per namespace |
//! | `deleteExpiredMemories` | [`POST /v1/memory/expired/delete`](openvibe_api::endpoints::DELETE_EXPIRED), batch after batch | delete expired records where the caller may clean up (the seed's restricted caller, which manages no namespace, is refused; see `openvibe_protocols::cleanup_scope`) |
//! | `promoteMemory` | [`POST /v1/memory/promote`](openvibe_api::endpoints::PROMOTE) | copy (or move) a fact or insight the caller may read into a scope it may write to (`shared` by default), with lineage; refused without those rights, audited |
//! | `setPlanState` | [`PUT /v1/memory/working/{plan_id}/{key}`](openvibe_api::endpoints::SET_PLAN_STATE) | one key of plan-scoped working memory, with optimistic locking (`expect_version`) |
//! | `getPlanState` | [`GET /v1/memory/working/{plan_id}/{key}`](openvibe_api::endpoints::GET_PLAN_STATE) | one key of plan-scoped working memory (a missing key reads as `null`) |
//! | `appendPlanState` | [`POST /v1/memory/atomic/append`](openvibe_api::endpoints::ATOMIC_APPEND) | append to a list of plan-scoped working memory, atomically |
//! | `listProposals` | [`POST /v1/memory/proposals/query`](openvibe_api::endpoints::QUERY_PROPOSALS) | the proposals the caller may read (pending by default), newest first, a page at a time |
//! | `decideProposal` | [`POST /v1/memory/proposals/{id}/decide`](openvibe_api::endpoints::DECIDE_PROPOSAL) | approve or reject a pending proposal; refused to callers without the `approve` right (and to the role that proposed it), audited |
//! | `listGoals` | [`POST /v1/memory/goals/query`](openvibe_api::endpoints::QUERY_GOALS) | the goals (objectives with key results, initiatives) the caller may read, by role, in id order, a page at a time |
//! | `goalProgress` | [`GET /v1/memory/goals/{id}/progress`](openvibe_api::endpoints::GOAL_PROGRESS) | where a goal stands: each key result's current value and progress, computed from its metric reports |
//! | `reportMetric` | [`POST /v1/memory/metrics`](openvibe_api::endpoints::REPORT_METRIC) | report a role's metric (`add`, or `set`), placed where the key may write; the same `id` twice counts once |
//! | `listBeliefs` | [`POST /v1/memory/beliefs/query`](openvibe_api::endpoints::QUERY_BELIEFS) | the beliefs (L4) the caller may read (proposed ones by default), newest first, each with the insights it came from |
//! | `pushEvent` | [`POST /v1/loop/{role}/events`](openvibe_api::endpoints::PUSH_EVENT) | push an event into a role's cognitive loop (a service that runs one: `openvibe run role.yaml --loop --listen`); an id seen before runs once; needs the write right in the role's namespace |
//! | `eventTrace` | [`GET /v1/loop/{role}/events/{id}`](openvibe_api::endpoints::EVENT_TRACE) | an event's path through the loop's stages so far |
//! | `listSpaces` | [`POST /v1/memory/spaces/query`](openvibe_api::endpoints::QUERY_SPACES) | the spaces the caller is a member of, with their members and the domains each owns |
//! | `postMessage` | [`POST /v1/memory/spaces/{id}/messages`](openvibe_api::endpoints::POST_MESSAGES) | post text, a request for a domain's owner, or an answer, in a space the caller is a member of; the caller is the author, whatever the arguments say |
//! | `readMessages` | [`POST /v1/memory/spaces/{id}/messages/query`](openvibe_api::endpoints::READ_MESSAGES) | a space's messages after a `seq`, in order (a thread, or those for the caller), waiting up to `wait_ms` for the next |
//! | `decideBelief` | [`POST /v1/memory/beliefs/{id}/decide`](openvibe_api::endpoints::DECIDE_BELIEF) | approve or reject a proposed belief; refused without the `approve` right (and to the role that proposed it); approving one that supersedes an active belief retires that one |
//!
//! A refusal or bad input is a tool result with `isError: true` and the
//! service's [`ErrorBody`] as structured content, so the model sees why.
//!
//! Each tool's input schema states what the stores check (the rules of the
//! HTTP document, `crate::rules::tool_schema`), and every call's arguments
//! are checked against it before they are read: arguments it refuses are
//! a `malformed_request` naming the argument, and reach no store.

use std::sync::Arc;

use openvibe_api::ErrorBody;
use openvibe_governance::Projects;
use openvibe_protocols::promotion::{PromoteMode, Promotion};
use openvibe_protocols::{
    BeliefQuery, BeliefStatus, CallerContext, Expect, Fact, FactQuery, GOAL_KIND, GoalQuery,
    MetricMode, MetricReport, ProposalQuery, ProposalStatus, StoreError, Stores, Verdict,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

/// The largest number of facts `getMemoryStats` counts.
pub const STATS_LIMIT: usize = 10_000;

/// Where a tool call's caller comes from.
#[derive(Clone)]
enum Caller {
    /// Fixed for the whole connection (stdio: the key given at start), with
    /// the projects it may name.
    Fixed(Arc<CallerContext>, Projects),
    /// Per HTTP request: set by the service's authentication in the
    /// request's extensions.
    PerRequest,
}

/// The memory tools over one set of stores.
#[derive(Clone)]
pub struct MemoryTools {
    stores: Stores,
    /// The cognitive loop of the process, when it runs one.
    inbox: Option<Arc<dyn openvibe_protocols::EventInbox>>,
    caller: Caller,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for MemoryTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTools").finish_non_exhaustive()
    }
}

/// `saveMemory`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemory {
    /// What to remember.
    pub content: String,
    /// The namespace (scope) to save it in; the caller's home by default.
    #[serde(default)]
    pub scope: Option<String>,
    /// The project you work in: a memory in a project-scoped scope
    /// belongs to it and is seen only from it.
    #[serde(default)]
    pub project: Option<String>,
    /// What it is about.
    #[serde(default)]
    pub entity: Option<String>,
    /// Its domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Forget it this many seconds from now (the scope's retention may
    /// make it sooner); kept until deleted when absent.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
    /// Free annotations (`agent`, `tool_name`, `notes`, …): a JSON object
    /// of at most 64 KiB.
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
}

/// `deleteExpiredMemories`' arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteExpiredMemories {
    /// Records deleted per batch (one transaction each): 500 by default.
    #[serde(default)]
    pub batch: Option<usize>,
    /// The project you work in (its project-scoped memories are cleaned
    /// too; those of other projects are not).
    #[serde(default)]
    pub project: Option<String>,
}

/// The batch `deleteExpiredMemories` uses when none is given.
pub const CLEANUP_BATCH: usize = 500;

/// `searchMemory`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemory {
    /// Words to look for (every one must appear).
    pub query: String,
    /// Namespaces to search (the caller's recall namespaces by default).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The project you work in (project-scoped memories of other projects
    /// are not searched).
    #[serde(default)]
    pub project: Option<String>,
    /// At most this many results (10 by default).
    #[serde(default)]
    pub top_k: Option<usize>,
}

/// `promoteMemory`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromoteMemory {
    /// The memory (a fact's id, or an insight's with `kind: insight`).
    pub id: String,
    /// `fact` (default) or `insight`.
    #[serde(default)]
    pub kind: Option<String>,
    /// The scope it goes to (`shared` by default).
    #[serde(default)]
    pub to: Option<String>,
    /// Move it instead of copying it (the original is deleted).
    #[serde(default, rename = "move")]
    pub moving: bool,
    /// Why (kept in the audit trail).
    #[serde(default)]
    pub note: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `getMemoryStats`'s arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryStats {
    /// The project you work in (counts its project-scoped memories).
    #[serde(default)]
    pub project: Option<String>,
}

/// `setPlanState`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPlanState {
    /// The plan.
    pub plan_id: String,
    /// The key.
    pub key: String,
    /// The value (any JSON).
    pub value: Value,
    /// Write only if the key is at this version (0: only if absent).
    #[serde(default)]
    pub expect_version: Option<u64>,
}

/// `getPlanState`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanKey {
    /// The plan.
    pub plan_id: String,
    /// The key.
    pub key: String,
}

/// `appendPlanState`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendPlanState {
    /// The plan.
    pub plan_id: String,
    /// The key of the list.
    pub key: String,
    /// The item to append.
    pub value: Value,
}

/// `listProposals`' arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProposals {
    /// Only those with this status: pending (default), approved, rejected,
    /// expired, executed, failed, or `any`.
    #[serde(default)]
    pub status: Option<String>,
    /// Only those of this role.
    #[serde(default)]
    pub role: Option<String>,
    /// Only those of this domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// At most this many (20 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Continue after the page that returned this cursor.
    #[serde(default)]
    pub cursor: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `listGoals`' arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListGoals {
    /// Only the goals of this role.
    #[serde(default)]
    pub role: Option<String>,
    /// At most this many (20 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Continue after the page that returned this cursor.
    #[serde(default)]
    pub cursor: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `goalProgress`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalProgressArgs {
    /// The goal's id (its objective's).
    pub id: String,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `reportMetric`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportMetric {
    /// The role whose metric it is (`cro`).
    pub role: String,
    /// The metric (a key result's `metric`, e.g. `pipeline_usd`).
    pub metric: String,
    /// The amount: added to the metric, or its new value with `mode: set`.
    pub value: f64,
    /// `add` (default) or `set`.
    #[serde(default)]
    pub mode: Option<String>,
    /// What happened (`closed Acme, $40k`).
    #[serde(default)]
    pub note: String,
    /// An id for the report: sending it again with the same id counts once.
    #[serde(default)]
    pub id: Option<String>,
    /// The scope to file it in (your home scope by default).
    #[serde(default)]
    pub scope: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `listBeliefs`' arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListBeliefs {
    /// Only those with this status: proposed (default), active, rejected,
    /// retired, or `any`.
    #[serde(default)]
    pub status: Option<String>,
    /// Only those of this role.
    #[serde(default)]
    pub role: Option<String>,
    /// Only those of this domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// At most this many (20 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Continue after the page that returned this cursor.
    #[serde(default)]
    pub cursor: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `decideProposal`'s and `decideBelief`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideProposal {
    /// The proposal's (or belief's) id.
    pub id: String,
    /// Approve (true) or reject (false).
    pub approve: bool,
    /// Why (required to reject; kept in the record and the audit trail).
    #[serde(default)]
    pub reason: String,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

impl MemoryTools {
    /// Every tool: the memory tools and the proposal tools.
    /// Every tool, with the input schemas `schemars` gives.
    fn generated_router() -> ToolRouter<Self> {
        Self::tool_router()
            + Self::proposal_router()
            + Self::goal_router()
            + Self::belief_router()
            + Self::loop_router()
            + Self::space_router()
    }

    fn router() -> ToolRouter<Self> {
        let mut router = Self::generated_router();
        // Each tool's input schema states what the stores check (the same
        // rules as the HTTP document), and every call is checked against it.
        for route in router.map.values_mut() {
            let (schema, _missed) = tool_schema(&route.attr.name, &route.attr.input_schema);
            route.attr.input_schema = Arc::new(schema);
        }
        router
    }
}

/// The page size `listProposals` uses when none is given.
pub const PROPOSAL_PAGE: usize = 20;

impl MemoryTools {
    /// Tools whose every call acts as `caller` (stdio), which may name any
    /// project (the caller is the code's; see [`MemoryTools::with_projects`]).
    pub fn for_caller(stores: Stores, caller: CallerContext) -> Self {
        Self {
            stores,
            inbox: None,
            caller: Caller::Fixed(Arc::new(caller), Projects::All),
            tool_router: Self::router(),
        }
    }

    /// Push events into (and read traces of) this cognitive loop with
    /// `pushEvent` and `eventTrace`.
    #[must_use]
    pub fn with_inbox(mut self, inbox: Arc<dyn openvibe_protocols::EventInbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// The projects the fixed caller's tool calls may name: its API key's
    /// (`projects` in the governance file). Per-request tools get them from
    /// each request's authentication.
    #[must_use]
    pub fn with_projects(mut self, projects: Projects) -> Self {
        if let Caller::Fixed(caller, _) = self.caller {
            self.caller = Caller::Fixed(caller, projects);
        }
        self
    }

    /// Tools whose caller comes from each HTTP request (the service's
    /// streamable HTTP endpoint authenticates it first).
    pub(crate) fn per_request(
        stores: Stores,
        inbox: Option<Arc<dyn openvibe_protocols::EventInbox>>,
    ) -> Self {
        Self {
            stores,
            inbox,
            caller: Caller::PerRequest,
            tool_router: Self::router(),
        }
    }

    /// Every tool: its name and description, in the order the server lists
    /// them (what `openvibe mcp --help` prints).
    pub fn tools() -> Vec<(String, String)> {
        let mut tools: Vec<(String, String)> = Self::router()
            .list_all()
            .into_iter()
            .map(|t| {
                (
                    t.name.to_string(),
                    t.description.map(|d| d.to_string()).unwrap_or_default(),
                )
            })
            .collect();
        tools.sort();
        tools
    }

    /// Who calls `tool`; says so in an info event (tool, tenant,
    /// principal: never the arguments).
    fn caller(
        &self,
        ctx: &RequestContext<RoleServer>,
        tool: &'static str,
    ) -> Result<Who, ErrorData> {
        let (caller, projects) = match &self.caller {
            Caller::Fixed(c, projects) => (c.as_ref().clone(), projects.clone()),
            Caller::PerRequest => {
                let parts = ctx.extensions.get::<axum::http::request::Parts>();
                let caller = parts
                    .and_then(|p| p.extensions.get::<CallerContext>())
                    .cloned()
                    .ok_or_else(|| {
                        ErrorData::internal_error("the request carries no caller", None)
                    })?;
                let projects = parts
                    .and_then(|p| p.extensions.get::<Projects>())
                    .cloned()
                    .unwrap_or_default();
                (caller, projects)
            }
        };
        let caller = caller.with_tool(format!("mcp:{tool}"));
        tracing::info!(
            tool,
            tenant = caller.tenant_id(),
            principal = %caller.principal(),
            "mcp tool call"
        );
        Ok(Who { caller, projects })
    }
}

/// A tool call's caller and the projects it may name.
struct Who {
    caller: CallerContext,
    projects: Projects,
}

impl Who {
    /// The caller working in `project` (none: as it is), if its key may
    /// name it; otherwise the refusal naming the rule.
    fn in_project(self, project: Option<&str>) -> Result<CallerContext, StoreError> {
        self.projects.apply(self.caller, project)
    }
}

/// A store outcome as a tool result.
fn answer(result: Result<Value, StoreError>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::structured(value),
        Err(e) => {
            let body = ErrorBody::from_store(&e);
            CallToolResult::structured_error(serde_json::to_value(body).unwrap_or(Value::Null))
        }
    }
}

fn fact_json(f: &Fact) -> Value {
    json!({
        "id": f.id,
        "content": f.content,
        "scope": f.meta.namespace,
        "creator": f.meta.owner,
        "source": f.meta.source,
        "entity": f.entity,
        "domain": f.domain,
        "tags": f.tags,
        "confidence": f.confidence,
        "metadata": f.metadata,
        "created_at": f.meta.created_at,
        "expires_at": f.meta.expires_at,
    })
}

impl MemoryTools {
    /// `saveMemory`: the fact its arguments describe, written as `who`.
    async fn save(&self, who: Who, args: SaveMemory) -> Result<Value, StoreError> {
        let caller = who.in_project(args.project.as_deref())?;
        let mut fact = Fact::new("", args.content);
        if let Some(scope) = args.scope {
            fact = fact.namespace(scope);
        }
        fact.entity = args.entity.unwrap_or_default();
        fact.domain = args.domain.unwrap_or_default();
        fact.tags = args.tags;
        fact.metadata = args.metadata;
        if let Some(ttl) = args.ttl_seconds {
            let ttl = i64::try_from(ttl)
                .ok()
                .and_then(chrono::TimeDelta::try_seconds)
                .unwrap_or(chrono::TimeDelta::MAX);
            fact.meta.expires_at = Some(
                chrono::Utc::now()
                    .checked_add_signed(ttl)
                    .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC),
            );
        }
        // The seed's `source`: who wrote it, never the caller's choice: the
        // key's (stamped by the store), or `mcp:<principal>` for a caller
        // without one (development mode).
        fact.meta.source = format!("mcp:{}", caller.principal());
        let stored = self.stores.facts.store(&caller, fact).await?;
        Ok(fact_json(&stored))
    }
}

#[tool_router]
impl MemoryTools {
    /// Mirrors [`STORE_FACT`](openvibe_api::endpoints::STORE_FACT).
    #[tool(
        name = "saveMemory",
        description = "Save a memory (a fact) in a scope you may write to. Its creator and source are set by the server from who you are."
    )]
    async fn save_memory(
        &self,
        Parameters(args): Parameters<SaveMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "saveMemory")?;
        Ok(answer(self.save(who, args).await))
    }

    /// Mirrors [`SEARCH_MEMORY`](openvibe_api::endpoints::SEARCH_MEMORY).
    #[tool(
        name = "searchMemory",
        description = "Search the memories you may read for words (all must appear), in the scopes you name or your usual ones; a memory and its promoted copies are one result."
    )]
    async fn search_memory(
        &self,
        Parameters(args): Parameters<SearchMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "searchMemory")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let request = openvibe_api::dto::SearchMemory {
                    query: args.query,
                    scopes: args.scopes,
                    top_k: args.top_k,
                };
                let facts = crate::edges::search(&self.stores, &caller, request).await?;
                Ok(json!({"memories": facts.iter().map(fact_json).collect::<Vec<_>>()}))
            }
            .await,
        ))
    }

    /// Mirrors [`QUERY_FACTS`](openvibe_api::endpoints::QUERY_FACTS), counted per namespace.
    #[tool(
        name = "getMemoryStats",
        description = "How many memories you can see, in all and per scope."
    )]
    async fn get_memory_stats(
        &self,
        Parameters(args): Parameters<MemoryStats>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "getMemoryStats")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let query = FactQuery::default().limit(STATS_LIMIT);
                let facts = self.stores.facts.query(&caller, &query).await?;
                let mut per_scope = std::collections::BTreeMap::<String, usize>::new();
                for f in &facts {
                    *per_scope.entry(f.meta.namespace.clone()).or_default() += 1;
                }
                Ok(json!({
                    "total": facts.len(),
                    "per_scope": per_scope,
                    "capped": facts.len() >= STATS_LIMIT,
                }))
            }
            .await,
        ))
    }

    /// Mirrors [`DELETE_EXPIRED`](openvibe_api::endpoints::DELETE_EXPIRED), batch after batch.
    #[tool(
        name = "deleteExpiredMemories",
        description = "Delete expired memories (any kind, any owner) in the scopes you manage, in batches; each deletion is audited. Callers that manage no scope may not run this cleanup."
    )]
    async fn delete_expired_memories(
        &self,
        Parameters(args): Parameters<DeleteExpiredMemories>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "deleteExpiredMemories")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let batch = args.batch.unwrap_or(CLEANUP_BATCH);
                let (mut deleted, mut batches) = (0, 0);
                loop {
                    let n = self.stores.admin.delete_expired(&caller, batch).await?;
                    batches += 1;
                    deleted += n;
                    // A short batch: nothing else had expired when it ran.
                    if usize::try_from(n).is_ok_and(|n| n < batch) {
                        return Ok(json!({"deleted": deleted, "batches": batches}));
                    }
                }
            }
            .await,
        ))
    }

    /// Mirrors [`PROMOTE`](openvibe_api::endpoints::PROMOTE).
    #[tool(
        name = "promoteMemory",
        description = "Promote a memory you may read into a scope you may write to (shared by default): a copy with its lineage, or a move. Refused without those rights; audited."
    )]
    async fn promote_memory(
        &self,
        Parameters(args): Parameters<PromoteMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "promoteMemory")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let request = openvibe_api::dto::Promote {
                    kind: args.kind.unwrap_or_else(|| "fact".to_owned()),
                    id: args.id,
                    to: args.to.unwrap_or_else(|| Promotion::SHARED.to_owned()),
                    mode: if args.moving {
                        PromoteMode::Move
                    } else {
                        PromoteMode::Copy
                    },
                    note: args.note.unwrap_or_default(),
                };
                let promoted = crate::edges::promote(&self.stores, &caller, request).await?;
                Ok(fact_json(&promoted))
            }
            .await,
        ))
    }

    /// Mirrors [`SET_PLAN_STATE`](openvibe_api::endpoints::SET_PLAN_STATE).
    #[tool(
        name = "setPlanState",
        description = "Set one key of a plan's working memory; with expect_version the write happens only at that version (0: only if absent)."
    )]
    async fn set_plan_state(
        &self,
        Parameters(args): Parameters<SetPlanState>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx, "setPlanState")?.caller;
        let expect = match args.expect_version {
            None => Expect::Any,
            Some(0) => Expect::Absent,
            Some(v) => Expect::Version(v),
        };
        let entry = self
            .stores
            .working
            .set_state(&caller, &args.plan_id, &args.key, args.value, expect)
            .await;
        Ok(answer(entry.and_then(to_value)))
    }

    /// Mirrors [`GET_PLAN_STATE`](openvibe_api::endpoints::GET_PLAN_STATE).
    #[tool(
        name = "getPlanState",
        description = "One key of a plan's working memory."
    )]
    async fn get_plan_state(
        &self,
        Parameters(args): Parameters<PlanKey>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx, "getPlanState")?.caller;
        let entry = self
            .stores
            .working
            .get_state(&caller, &args.plan_id, &args.key)
            .await;
        Ok(answer(entry.and_then(|e| match e {
            Some(e) => to_value(e),
            None => Ok(json!({"plan_id": args.plan_id, "key": args.key, "value": null})),
        })))
    }

    /// Mirrors [`ATOMIC_APPEND`](openvibe_api::endpoints::ATOMIC_APPEND).
    #[tool(
        name = "appendPlanState",
        description = "Append an item to a list in a plan's working memory, atomically."
    )]
    async fn append_plan_state(
        &self,
        Parameters(args): Parameters<AppendPlanState>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx, "appendPlanState")?.caller;
        let done = self
            .stores
            .working
            .append_state(&caller, &args.plan_id, &args.key, args.value)
            .await;
        Ok(answer(done.map(|()| json!({"appended": true}))))
    }
}

#[tool_router(router = proposal_router)]
impl MemoryTools {
    /// Mirrors [`QUERY_PROPOSALS`](openvibe_api::endpoints::QUERY_PROPOSALS).
    #[tool(
        name = "listProposals",
        description = "The proposals you may read (what roles ask a person to approve), pending ones by default, newest first; each with its decision's steps and its action."
    )]
    async fn list_proposals(
        &self,
        Parameters(args): Parameters<ListProposals>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "listProposals")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let status = match args.status.as_deref() {
                    None => Some(ProposalStatus::Pending),
                    Some("any") => None,
                    Some(s) => Some(ProposalStatus::parse(s).ok_or_else(|| {
                        StoreError::invalid(
                            "status",
                            "one of pending, approved, rejected, expired, executed, failed, any",
                        )
                    })?),
                };
                let query = ProposalQuery {
                    status,
                    role_id: args.role,
                    domain: args.domain,
                    cursor: args.cursor,
                    limit: args.limit.unwrap_or(PROPOSAL_PAGE),
                    ..ProposalQuery::default()
                };
                let page = self.stores.proposals.list(&caller, &query).await?;
                to_value(page)
            }
            .await,
        ))
    }

    /// Mirrors [`DECIDE_PROPOSAL`](openvibe_api::endpoints::DECIDE_PROPOSAL).
    #[tool(
        name = "decideProposal",
        description = "Approve or reject a pending proposal (a reason is required to reject). Only callers with the approve right may, never the role that proposed it; the runtime then runs an approved action once."
    )]
    async fn decide_proposal(
        &self,
        Parameters(args): Parameters<DecideProposal>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "decideProposal")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let verdict = Verdict {
                    approve: args.approve,
                    reason: args.reason,
                    action: None,
                };
                let decided = self
                    .stores
                    .decide_proposal(&caller, &args.id, &verdict)
                    .await?;
                to_value(decided)
            }
            .await,
        ))
    }
}

#[tool_router(router = belief_router)]
impl MemoryTools {
    /// Mirrors [`QUERY_BELIEFS`](openvibe_api::endpoints::QUERY_BELIEFS).
    #[tool(
        name = "listBeliefs",
        description = "The beliefs (what a role holds true once a person approves it) you may read, proposed ones by default, newest first; each with its statement, domain, confidence and the insights it came from."
    )]
    async fn list_beliefs(
        &self,
        Parameters(args): Parameters<ListBeliefs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "listBeliefs")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let status = match args.status.as_deref() {
                    None => Some(BeliefStatus::Proposed),
                    Some("any") => None,
                    Some(s) => Some(BeliefStatus::parse(s).ok_or_else(|| {
                        StoreError::invalid(
                            "status",
                            "one of proposed, active, rejected, retired, any",
                        )
                    })?),
                };
                let query = BeliefQuery {
                    status,
                    role_id: args.role,
                    domain: args.domain,
                    cursor: args.cursor,
                    limit: args.limit.unwrap_or(PROPOSAL_PAGE),
                    ..BeliefQuery::default()
                };
                to_value(self.stores.beliefs.list(&caller, &query).await?)
            }
            .await,
        ))
    }

    /// Mirrors [`DECIDE_BELIEF`](openvibe_api::endpoints::DECIDE_BELIEF).
    #[tool(
        name = "decideBelief",
        description = "Approve or reject a proposed belief (a reason is required to reject). Only callers with the approve right may, never the role that proposed it; an approved belief shapes the role's prompts and decisions, and one that supersedes an active belief retires it."
    )]
    async fn decide_belief(
        &self,
        Parameters(args): Parameters<DecideProposal>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "decideBelief")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let verdict = Verdict {
                    approve: args.approve,
                    reason: args.reason,
                    action: None,
                };
                to_value(
                    self.stores
                        .decide_belief(&caller, &args.id, &verdict)
                        .await?,
                )
            }
            .await,
        ))
    }
}

/// `pushEvent`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushEvent {
    /// The role whose loop perceives it.
    pub role: String,
    /// The event: its id (an id seen before runs once), kind, domain,
    /// summary, data and the action it asks for.
    pub event: openvibe_protocols::DecisionEvent,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `eventTrace`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventTrace {
    /// The role.
    pub role: String,
    /// The event's id.
    pub id: String,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

#[tool_router(router = loop_router)]
impl MemoryTools {
    /// The loop, or why there is none.
    fn inbox(&self, role: &str) -> Result<Arc<dyn openvibe_protocols::EventInbox>, StoreError> {
        crate::routes::cognitive::inbox(self.inbox.as_ref(), role)
    }

    /// Mirrors [`PUSH_EVENT`](openvibe_api::endpoints::PUSH_EVENT).
    #[tool(
        name = "pushEvent",
        description = "Push an event into a role's cognitive loop: the role perceives it, decides (act, propose, escalate or refuse, within its authority), acts, and records the outcome. An event id seen before runs once. Needs the write right in the role's namespace; a full queue is refused (retry later)."
    )]
    async fn push_event(
        &self,
        Parameters(args): Parameters<PushEvent>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "pushEvent")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let inbox = self.inbox(&args.role)?;
                to_value(
                    inbox
                        .push(
                            &caller,
                            &args.role,
                            args.event,
                            openvibe_protocols::EventSource::Mcp,
                        )
                        .await?,
                )
            }
            .await,
        ))
    }

    /// Mirrors [`EVENT_TRACE`](openvibe_api::endpoints::EVENT_TRACE).
    #[tool(
        name = "eventTrace",
        description = "An event's path through a role's cognitive loop so far: each stage (perceive, decide, act, observe, reflect, learn) with when it ran, how long it took and what it did; the decision and what the action returned."
    )]
    async fn event_trace(
        &self,
        Parameters(args): Parameters<EventTrace>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "eventTrace")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let inbox = self.inbox(&args.role)?;
                match inbox.trace(&caller, &args.role, &args.id).await? {
                    Some(trace) => to_value(trace),
                    None => Err(StoreError::NotFound {
                        kind: "event",
                        id: args.id.clone(),
                    }),
                }
            }
            .await,
        ))
    }
}

/// `listSpaces`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSpaces {
    /// At most this many (20 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Continue after the page that returned this cursor.
    #[serde(default)]
    pub cursor: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `postMessage`'s arguments. Its author is your key, never an argument.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The space.
    pub space: String,
    /// What it says: `{"type": "text", "text": ...}`, a request
    /// `{"type": "request", "task": ..., "input": {...}}`, or an answer
    /// `{"type": "answer", "request": ..., "status": ..., "output": ...}`.
    pub body: openvibe_protocols::MessageBody,
    /// Its id (posting the same id again returns the stored message).
    #[serde(default)]
    pub id: Option<String>,
    /// The id of the message whose thread it continues.
    #[serde(default)]
    pub thread: Option<String>,
    /// Route it to the member owning this domain (no owner: the space's
    /// people, escalated).
    #[serde(default)]
    pub domain: Option<String>,
    /// Address it to these members (owner keys) instead.
    #[serde(default)]
    pub to: Vec<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `readMessages`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMessages {
    /// The space.
    pub space: String,
    /// Only messages with a greater `seq` (0: from the start).
    #[serde(default)]
    pub after: u64,
    /// At most this many (100 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only this thread (the id of its first message).
    #[serde(default)]
    pub thread: Option<String>,
    /// Only the messages addressed to you (or to everyone).
    #[serde(default)]
    pub for_me: bool,
    /// When none follows `after`, wait up to this many milliseconds (at
    /// most 30000) for one.
    #[serde(default)]
    pub wait_ms: u64,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// The page size `listSpaces` uses when none is given.
pub const SPACE_PAGE: usize = 20;

#[tool_router(router = space_router)]
impl MemoryTools {
    /// Mirrors [`QUERY_SPACES`](openvibe_api::endpoints::QUERY_SPACES).
    #[tool(
        name = "listSpaces",
        description = "The spaces you are a member of (shared environments of roles and people, each with an ordered message log), newest first, a page at a time, with their members and the domains each owns."
    )]
    async fn list_spaces(
        &self,
        Parameters(args): Parameters<ListSpaces>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "listSpaces")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mut query =
                    openvibe_protocols::SpaceQuery::new().limit(args.limit.unwrap_or(SPACE_PAGE));
                query.cursor = args.cursor.clone();
                to_value(self.stores.spaces.list(&caller, &query).await?)
            }
            .await,
        ))
    }

    /// Mirrors [`POST_MESSAGES`](openvibe_api::endpoints::POST_MESSAGES).
    #[tool(
        name = "postMessage",
        description = "Post a message in a space you are a member of (with the write right in its namespace): text, a request for the owner of a domain (its loop decides and answers in the thread), or an answer. You are its author. Naming a domain routes it to the member owning it, or to the space's people when none does."
    )]
    async fn post_message(
        &self,
        Parameters(args): Parameters<PostMessage>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "postMessage")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mut message = openvibe_protocols::SpaceMessage::text("");
                message.body = args.body.clone();
                message.id = args.id.clone().unwrap_or_default();
                message.thread = args.thread.clone();
                message.domain = args.domain.clone();
                message.to = args.to.clone();
                to_value(
                    self.stores
                        .spaces
                        .post(&caller, &args.space, message)
                        .await?,
                )
            }
            .await,
        ))
    }

    /// Mirrors [`READ_MESSAGES`](openvibe_api::endpoints::READ_MESSAGES).
    #[tool(
        name = "readMessages",
        description = "The messages of a space you are a member of after a seq, in order (`messages`), optionally only a thread or those addressed to you; with wait_ms, waits for the next one when none follows."
    )]
    async fn read_messages(
        &self,
        Parameters(args): Parameters<ReadMessages>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "readMessages")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mut query = openvibe_protocols::MessageQuery::after(args.after)
                    .limit(args.limit.unwrap_or(100))
                    .wait_ms(args.wait_ms);
                query.thread = args.thread.clone();
                query.for_me = args.for_me;
                let messages = self
                    .stores
                    .spaces
                    .messages(&caller, &args.space, &query)
                    .await?;
                Ok(serde_json::json!({ "messages": messages }))
            }
            .await,
        ))
    }
}

#[tool_router(router = goal_router)]
impl MemoryTools {
    /// Mirrors [`QUERY_GOALS`](openvibe_api::endpoints::QUERY_GOALS).
    #[tool(
        name = "listGoals",
        description = "The goals you may read: objectives people set for roles, with their key results (metric, baseline, target, due date) and initiatives, in id order, a page at a time."
    )]
    async fn list_goals(
        &self,
        Parameters(args): Parameters<ListGoals>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "listGoals")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let query = GoalQuery {
                    role_id: args.role,
                    after: args.cursor,
                    limit: args.limit.unwrap_or(PROPOSAL_PAGE),
                    ..GoalQuery::default()
                };
                to_value(self.stores.goals.list(&caller, &query).await?)
            }
            .await,
        ))
    }

    /// Mirrors [`GOAL_PROGRESS`](openvibe_api::endpoints::GOAL_PROGRESS).
    #[tool(
        name = "goalProgress",
        description = "Where a goal stands: each key result's current value, its progress from baseline to target (0 to 1) and how many reports moved it, and the goal's mean progress. Computed from metric reports, never estimated."
    )]
    async fn goal_progress(
        &self,
        Parameters(args): Parameters<GoalProgressArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "goalProgress")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let found = self.stores.goals.progress(&caller, &args.id).await?;
                to_value(found.ok_or_else(|| StoreError::NotFound {
                    kind: GOAL_KIND,
                    id: args.id.clone(),
                })?)
            }
            .await,
        ))
    }

    /// Mirrors [`REPORT_METRIC`](openvibe_api::endpoints::REPORT_METRIC).
    #[tool(
        name = "reportMetric",
        description = "Report a role's metric: `add` an amount (a deal closed: 40000) or `set` its value. It moves the key results measuring that metric; the same id twice counts once. Needs the write right in the scope it is filed in."
    )]
    async fn report_metric(
        &self,
        Parameters(args): Parameters<ReportMetric>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "reportMetric")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mode = match args.mode.as_deref() {
                    None => MetricMode::Add,
                    Some(m) => MetricMode::parse(m)
                        .ok_or_else(|| StoreError::invalid("mode", "`add` or `set`"))?,
                };
                let mut report = MetricReport::add(args.role, args.metric, args.value)
                    .note(args.note)
                    .namespace(args.scope.unwrap_or_default());
                report.mode = mode;
                if let Some(id) = args.id {
                    report = report.id(id);
                }
                to_value(self.stores.goals.report(&caller, report).await?)
            }
            .await,
        ))
    }
}

fn to_value(v: impl serde::Serialize) -> Result<Value, StoreError> {
    serde_json::to_value(v).map_err(|e| {
        StoreError::backend_from(format!("the answer does not serialise: {e}"), false, e)
    })
}

/// The input schema of the tool `tool` as rmcp gives it (`schemars`: the
/// arguments type at the root, the types it uses in `$defs`) with the
/// stores' rules: the tool's rows of `rules::TOOL_RULES`, the document's
/// rows for the types it uses, every object closed as the document's are
/// (`close_objects`), and the relations between properties. Returns the
/// schema and the rows for this tool that found no property.
pub(crate) fn tool_schema(
    tool: &str,
    input: &serde_json::Map<String, Value>,
) -> (serde_json::Map<String, Value>, Vec<String>) {
    use crate::rules::{ARGUMENTS, retarget};
    let mut root = input.clone();
    let mut schemas = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => serde_json::Map::new(),
    };
    schemas.insert(ARGUMENTS.to_owned(), Value::Object(root));
    retarget(&mut schemas, "#/$defs/", "#/components/schemas/");
    crate::rules::add_json_schemas(&mut schemas);
    // The document's rows name the types they are about; most are absent.
    let _absent = crate::rules::constrain(&mut schemas);
    let missed = crate::rules::constrain_tool(tool, &mut schemas);
    crate::openapi::close_objects(&mut schemas);
    let _absent = crate::rules::relate(&mut schemas);
    retarget(&mut schemas, "#/components/schemas/", "#/$defs/");
    let mut root = match schemas.remove(ARGUMENTS) {
        Some(Value::Object(root)) => root,
        _ => serde_json::Map::new(),
    };
    root.insert("$defs".to_owned(), Value::Object(schemas));
    (root, missed)
}

/// Each tool's compiled input schema, by name.
fn argument_validators() -> &'static std::collections::HashMap<String, jsonschema::Validator> {
    static VALIDATORS: std::sync::OnceLock<
        std::collections::HashMap<String, jsonschema::Validator>,
    > = std::sync::OnceLock::new();
    VALIDATORS.get_or_init(|| {
        MemoryTools::router()
            .list_all()
            .into_iter()
            .filter_map(|tool| {
                let schema = Value::Object(tool.input_schema.as_ref().clone());
                crate::contract::compile_schema(&tool.name, &schema)
                    .map(|v| (tool.name.to_string(), v))
            })
            .collect()
    })
}

/// Why `arguments` are not what the tool `name` takes (as the HTTP API
/// refuses a body its document refuses), after integral floats are read
/// as the integers they are; `None` when they are.
fn refused_arguments(name: &str, arguments: &mut Value) -> Option<ErrorBody> {
    let validator = argument_validators().get(name)?;
    crate::contract::integral(arguments);
    crate::contract::refusal(validator, crate::contract::Part::Arguments, arguments)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryTools {
    /// Check the arguments against the tool's input schema first: what it
    /// refuses is a tool error (`malformed_request`, naming the argument)
    /// and reaches no store.
    async fn call_tool(
        &self,
        mut request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let mut arguments = Value::Object(request.arguments.take().unwrap_or_default());
        if let Some(body) = refused_arguments(&request.name, &mut arguments) {
            let body = serde_json::to_value(body).unwrap_or(Value::Null);
            return Ok(CallToolResult::structured_error(body).into());
        }
        if let Value::Object(arguments) = arguments {
            request.arguments = Some(arguments);
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "openvibe memory: save and search memories in the scopes your key may use, \
             keep plan-scoped working memory, list and decide the proposals and beliefs \
             roles wait on (deciding needs the approve right), read goals and their \
             progress or report the metrics that move them, and talk in the spaces you \
             are a member of.",
        )
    }
}

/// The streamable HTTP endpoint: stateless (no session kept in the
/// instance, so any instance behind a load balancer answers any request),
/// JSON responses.
pub(crate) fn streamable_http(
    stores: Stores,
    inbox: Option<Arc<dyn openvibe_protocols::EventInbox>>,
    config: &crate::ServiceConfig,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    MemoryTools,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let mut http =
        StreamableHttpServerConfig::default().with_allowed_hosts(config.mcp_allowed_hosts.clone());
    http.legacy_session_mode = false;
    http.json_response = true;
    http.max_request_body_bytes = config.body_limit;
    StreamableHttpService::new(
        move || Ok(MemoryTools::per_request(stores.clone(), inbox.clone())),
        Default::default(),
        http,
    )
}

/// Serve the memory tools on stdin/stdout as `caller` (naming only
/// `projects`) until the client closes the connection. Nothing but the protocol is written to stdout.
pub async fn serve_stdio(
    stores: Stores,
    caller: CallerContext,
    projects: Projects,
) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt;
    tracing::info!(principal = %caller.principal(), tenant = caller.tenant_id(), "MCP server on stdio");
    let running = MemoryTools::for_caller(stores, caller)
        .with_projects(projects)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_rule_finds_its_argument_and_every_schema_compiles() {
        let mut titles = Vec::new();
        for tool in MemoryTools::generated_router().list_all() {
            let (_, missed) = tool_schema(&tool.name, &tool.input_schema);
            assert!(missed.is_empty(), "{}: {missed:?}", tool.name);
            titles.push(tool.name.to_string());
        }
        for name in crate::rules::tool_rule_types() {
            assert!(titles.iter().any(|t| t == name), "no tool {name}");
        }
        assert_eq!(
            argument_validators().len(),
            MemoryTools::tools().len(),
            "every input schema compiles"
        );
    }

    #[test]
    fn arguments_are_checked_against_the_tools_schema() {
        let mut args = json!({"content": "  "});
        let body = refused_arguments("saveMemory", &mut args).unwrap();
        assert_eq!(body.error.pointer.as_deref(), Some("/content"));
        let mut args = json!({"content": "fine", "creator": "agent:x"});
        let body = refused_arguments("saveMemory", &mut args).unwrap();
        assert_eq!(body.error.pointer.as_deref(), Some("/creator"));
        let mut args = json!({"limit": 10.0, "status": "any"});
        assert!(refused_arguments("listProposals", &mut args).is_none());
        assert_eq!(args["limit"], json!(10));
        let mut args = json!({"status": "someday"});
        assert!(refused_arguments("listProposals", &mut args).is_some());
        let mut args = json!({"plan_id": "p1", "key": "", "value": 1});
        assert!(refused_arguments("setPlanState", &mut args).is_some());
    }
}
