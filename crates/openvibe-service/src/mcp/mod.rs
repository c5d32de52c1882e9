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
//! | `updateInitiative` | [`POST /v1/memory/goals/{id}/initiatives/{initiative}`](openvibe_api::endpoints::UPDATE_INITIATIVE) | move an initiative of a goal (drop, reopen, done, blocked) with a note; a done or dropped one changes only when reopened; needs the right to change the goal |
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

mod events;
mod goals;
mod inbox;
mod memory;
mod plans;
mod schema;
mod spaces;

use std::sync::Arc;

use openvibe_api::ErrorBody;
use openvibe_governance::Projects;
use openvibe_protocols::{CallerContext, StoreError, Stores};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use serde_json::Value;

pub use events::{EventTrace, PushEvent};
pub use goals::{GoalProgressArgs, ListGoals, ReportMetric};
pub use inbox::{DecideProposal, ListBeliefs, ListInbox, ListProposals};
pub use memory::{
    CLEANUP_BATCH, DeleteExpiredMemories, MemoryStats, PromoteMemory, STATS_LIMIT, SaveMemory,
    SearchMemory,
};
pub use plans::{AppendPlanState, PlanKey, SetPlanState};
use schema::{refused_arguments, tool_schema};
pub use spaces::{ListSpaces, PostMessage, ReadMessages, SPACE_PAGE};

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

impl MemoryTools {
    /// Every tool (each group's, and the inbox tools of each kind a person
    /// decides), with the input schemas `schemars` gives.
    fn generated_router() -> ToolRouter<Self> {
        let mut router = Self::memory_router()
            + Self::plan_router()
            + Self::goal_router()
            + Self::loop_router()
            + Self::space_router();
        for route in inbox::routes() {
            router.add_route(route);
        }
        router
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

fn to_value(v: impl serde::Serialize) -> Result<Value, StoreError> {
    serde_json::to_value(v).map_err(|e| {
        StoreError::backend_from(format!("the answer does not serialise: {e}"), false, e)
    })
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
