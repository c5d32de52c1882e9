//! The cognitive loop of the process that serves (`/v1/loop`): events
//! pushed over HTTP, and their traces. A service without a loop
//! ([`Service::with_inbox`](crate::Service::with_inbox)) answers 404.

use axum::Json;
use axum::extract::{Path, State};
use openvibe_api::endpoints as E;
use openvibe_protocols::{Accepted, DecisionEvent, EventInbox, EventSource, LoopTrace, StoreError};

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api.route(&E::PUSH_EVENT, push)
        .route(&E::EVENT_TRACE, trace)
}

/// The loop of a service that has one, or why there is none (the routes
/// and the MCP tools alike).
pub(crate) fn inbox(
    inbox: Option<&std::sync::Arc<dyn EventInbox>>,
    role: &str,
) -> Result<std::sync::Arc<dyn EventInbox>, StoreError> {
    inbox.cloned().ok_or_else(|| StoreError::NotFound {
        kind: "loop",
        id: role.to_owned(),
    })
}

async fn push(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(role): Path<String>,
    Body(event): Body<DecisionEvent>,
) -> Answer<Accepted> {
    let inbox = inbox(s.inbox.as_ref(), &role)?;
    Ok(Json(
        inbox.push(&ctx, &role, event, EventSource::Http).await?,
    ))
}

async fn trace(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path((role, id)): Path<(String, String)>,
) -> Answer<LoopTrace> {
    let inbox = inbox(s.inbox.as_ref(), &role)?;
    let found = inbox.trace(&ctx, &role, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("event", &id))?))
}
