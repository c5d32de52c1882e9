//! The plan tools: one key of a plan's working memory, set, read or
//! appended to.

use openvibe_protocols::Expect;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{MemoryTools, answer, to_value};

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

#[tool_router(router = plan_router, vis = "pub(super)")]
impl MemoryTools {
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
