//! The goal tools: list goals, read a goal's progress, move an initiative,
//! report a metric.

use openvibe_protocols::{
    GOAL_KIND, GoalQuery, InitiativeStatus, InitiativeUpdate, MetricMode, MetricReport, StoreError,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

use super::{MemoryTools, PROPOSAL_PAGE, answer, to_value};

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
    pub mode: Option<MetricMode>,
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

/// `updateInitiative`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateInitiativeArgs {
    /// The goal's id (its objective's).
    pub goal: String,
    /// The initiative's id in the goal (`i2`).
    pub initiative: String,
    /// Its new status: `open` (reopens a done or dropped one), `working`,
    /// `delegated`, `done`, `blocked` or `dropped`.
    pub status: InitiativeStatus,
    /// Why, in a few words (the last note stays when none is given).
    #[serde(default)]
    pub note: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

#[tool_router(router = goal_router, vis = "pub(super)")]
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

    /// Mirrors [`UPDATE_INITIATIVE`](openvibe_api::endpoints::UPDATE_INITIATIVE).
    #[tool(
        name = "updateInitiative",
        description = "Move an initiative of a goal: drop it, reopen it, mark it done or blocked, with a note. Roles move their own as they work them; a done or dropped one changes only when reopened (status `open`). Needs the right to change the goal; answers the goal."
    )]
    async fn update_initiative(
        &self,
        Parameters(args): Parameters<UpdateInitiativeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "updateInitiative")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let update = InitiativeUpdate {
                    status: args.status,
                    note: args.note,
                };
                to_value(
                    self.stores
                        .goals
                        .update_initiative(&caller, &args.goal, &args.initiative, update)
                        .await?,
                )
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
                let mode = args.mode.unwrap_or_default();
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
