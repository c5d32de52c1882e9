//! The inbox tools: what waits for a person (proposals, beliefs), listed and
//! decided by one pair of tools written once for every kind a person
//! decides ([`Decided`]): `listProposals` and `decideProposal`,
//! `listBeliefs` and `decideBelief`. A kind's status vocabulary, its page
//! limit and its decision come from the contract; its tools are rows of
//! [`routes`].

use std::future::Future;
use std::pin::Pin;

use openvibe_memory::Decisions;
use openvibe_protocols::{
    Belief, BeliefQuery, BeliefStatus, CallerContext, OrAny, Page, Proposal, ProposalQuery,
    ProposalStatus, StoreError, Stores, Verdict, Vocabulary,
};
use rmcp::handler::server::router::tool::ToolRoute;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars};
use serde::Deserialize;

use super::{MemoryTools, PROPOSAL_PAGE, answer, to_value};

/// A list tool's arguments: `listProposals`' ([`ListProposals`]) and
/// `listBeliefs`' ([`ListBeliefs`]).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInbox<S: Vocabulary> {
    /// Only those with this status, or `any` (by default those waiting for
    /// a person).
    #[serde(default)]
    pub status: Option<OrAny<S>>,
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

/// `listProposals`' arguments.
pub type ListProposals = ListInbox<ProposalStatus>;

/// `listBeliefs`' arguments.
pub type ListBeliefs = ListInbox<BeliefStatus>;

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
    /// Approving a belief (or its proposal) that refines an active one:
    /// retire that one too, as the approved belief supersedes it.
    #[serde(default)]
    pub supersede: bool,
    /// Approving a belief (or its proposal) as a constraint: an action it
    /// bears on is then proposed to a person, never taken alone.
    #[serde(default)]
    pub constraint: bool,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// A list filter, as the list tools' arguments give it.
pub(super) struct Filter<S> {
    status: Option<S>,
    role: Option<String>,
    domain: Option<String>,
    cursor: Option<String>,
    limit: usize,
}

/// A kind a person decides, as MCP offers it: its status vocabulary, its
/// tools' names and descriptions, its list and its decision (which decide
/// the kind's other half with it: a belief's proposal, a proposal's
/// belief).
pub(super) trait Decided: serde::Serialize + Send + Sync + Sized + 'static {
    /// Its status vocabulary (the list tool's `status` argument).
    type Status: Vocabulary
        + schemars::JsonSchema
        + Default
        + std::fmt::Debug
        + for<'de> Deserialize<'de>;
    /// What its list shows without a status: what waits for a person.
    const WAITING: Self::Status;
    /// The list tool's name and description.
    const LIST: (&'static str, &'static str);
    /// The decide tool's name and description.
    const DECIDE: (&'static str, &'static str);

    /// A page of its records `caller` may read, filtered.
    fn list(
        stores: &Stores,
        caller: &CallerContext,
        filter: Filter<Self::Status>,
    ) -> impl Future<Output = Result<Page<Self>, StoreError>> + Send;

    /// `verdict` on the record `id`, as `caller`.
    fn decide(
        stores: &Stores,
        caller: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> impl Future<Output = Result<Self, StoreError>> + Send;
}

impl Decided for Proposal {
    type Status = ProposalStatus;
    const WAITING: ProposalStatus = ProposalStatus::Pending;
    const LIST: (&'static str, &'static str) = (
        "listProposals",
        "The proposals you may read (what roles ask a person to approve), pending ones by default, newest first; each with its decision's steps and its action.",
    );
    const DECIDE: (&'static str, &'static str) = (
        "decideProposal",
        "Approve or reject a pending proposal (a reason is required to reject). Only callers with the approve right may, never the role that proposed it; the runtime then runs an approved action once.",
    );

    async fn list(
        stores: &Stores,
        caller: &CallerContext,
        f: Filter<ProposalStatus>,
    ) -> Result<Page<Self>, StoreError> {
        let query = ProposalQuery {
            status: f.status,
            role_id: f.role,
            domain: f.domain,
            cursor: f.cursor,
            limit: f.limit,
            ..ProposalQuery::default()
        };
        stores.proposals.list(caller, &query).await
    }

    async fn decide(
        stores: &Stores,
        caller: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Self, StoreError> {
        stores.decide_proposal(caller, id, verdict).await
    }
}

impl Decided for Belief {
    type Status = BeliefStatus;
    const WAITING: BeliefStatus = BeliefStatus::Proposed;
    const LIST: (&'static str, &'static str) = (
        "listBeliefs",
        "The beliefs (what a role holds true once a person approves it) you may read, proposed ones by default, newest first; each with its statement, domain, confidence and the insights it came from.",
    );
    const DECIDE: (&'static str, &'static str) = (
        "decideBelief",
        "Approve or reject a proposed belief (a reason is required to reject). Only callers with the approve right may, never the role that proposed it; an approved belief shapes the role's prompts and decisions, and one that supersedes an active belief retires it.",
    );

    async fn list(
        stores: &Stores,
        caller: &CallerContext,
        f: Filter<BeliefStatus>,
    ) -> Result<Page<Self>, StoreError> {
        let query = BeliefQuery {
            status: f.status,
            role_id: f.role,
            domain: f.domain,
            cursor: f.cursor,
            limit: f.limit,
            ..BeliefQuery::default()
        };
        stores.beliefs.list(caller, &query).await
    }

    async fn decide(
        stores: &Stores,
        caller: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Self, StoreError> {
        stores.decide_belief(caller, id, verdict).await
    }
}

/// The inbox tools: each decided kind's list and decide tool.
pub(super) fn routes() -> Vec<ToolRoute<MemoryTools>> {
    vec![
        list_route::<Proposal>(),
        decide_route::<Proposal>(),
        list_route::<Belief>(),
        decide_route::<Belief>(),
    ]
}

/// A tool call's answer, as rmcp takes it from a generic handler.
type Answered<'a> = Pin<Box<dyn Future<Output = Result<CallToolResult, ErrorData>> + Send + 'a>>;

/// `K`'s list tool, its input schema from [`ListInbox`] of its statuses.
fn list_route<K: Decided>() -> ToolRoute<MemoryTools> {
    let (name, description) = K::LIST;
    let schema = input_schema::<ListInbox<K::Status>>();
    ToolRoute::new(Tool::new(name, description, schema), list::<K>)
}

/// `K`'s decide tool.
fn decide_route<K: Decided>() -> ToolRoute<MemoryTools> {
    let (name, description) = K::DECIDE;
    let schema = input_schema::<DecideProposal>();
    ToolRoute::new(Tool::new(name, description, schema), decide::<K>)
}

/// The input schema rmcp gives the arguments `T` (as for a `#[tool]`).
fn input_schema<T: schemars::JsonSchema + 'static>() -> std::sync::Arc<rmcp::model::JsonObject> {
    rmcp::handler::server::common::schema_for_input::<T>()
        .unwrap_or_else(|_| rmcp::handler::server::common::schema_for_type::<T>())
}

/// Mirrors `K`'s list route (`QUERY_PROPOSALS`, `QUERY_BELIEFS`).
fn list<K: Decided>(
    tools: &MemoryTools,
    Parameters(args): Parameters<ListInbox<K::Status>>,
    ctx: RequestContext<RoleServer>,
) -> Answered<'_> {
    Box::pin(async move {
        let who = tools.caller(&ctx, K::LIST.0)?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let filter = Filter {
                    status: args.status.map_or(Some(K::WAITING), OrAny::value),
                    role: args.role,
                    domain: args.domain,
                    cursor: args.cursor,
                    limit: args.limit.unwrap_or(PROPOSAL_PAGE),
                };
                to_value(K::list(&tools.stores, &caller, filter).await?)
            }
            .await,
        ))
    })
}

/// Mirrors `K`'s decide route (`DECIDE_PROPOSAL`, `DECIDE_BELIEF`).
fn decide<K: Decided>(
    tools: &MemoryTools,
    Parameters(args): Parameters<DecideProposal>,
    ctx: RequestContext<RoleServer>,
) -> Answered<'_> {
    Box::pin(async move {
        let who = tools.caller(&ctx, K::DECIDE.0)?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let verdict = Verdict {
                    approve: args.approve,
                    reason: args.reason,
                    action: None,
                    supersede: args.supersede,
                    constraint: args.constraint,
                };
                to_value(K::decide(&tools.stores, &caller, &args.id, &verdict).await?)
            }
            .await,
        ))
    })
}
