//! The loop tools: push an event into a role's cognitive loop, read its
//! trace.

use std::sync::Arc;

use openvibe_protocols::StoreError;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

use super::{MemoryTools, answer, to_value};

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

#[tool_router(router = loop_router, vis = "pub(super)")]
impl MemoryTools {
    /// The loop, or why there is none.
    fn inbox(&self, role: &str) -> Result<Arc<dyn openvibe_protocols::EventInbox>, StoreError> {
        crate::state::inbox(self.inbox.as_ref(), role)
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
