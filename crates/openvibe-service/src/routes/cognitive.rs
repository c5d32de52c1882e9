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

/// The loop, or why there is none.
pub(crate) fn inbox(
    s: &AppState,
    role: &str,
) -> Result<std::sync::Arc<dyn EventInbox>, StoreError> {
    s.inbox.clone().ok_or_else(|| StoreError::NotFound {
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
    let inbox = inbox(&s, &role)?;
    Ok(Json(
        inbox.push(&ctx, &role, event, EventSource::Http).await?,
    ))
}

async fn trace(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path((role, id)): Path<(String, String)>,
) -> Answer<LoopTrace> {
    let inbox = inbox(&s, &role)?;
    let found = inbox.trace(&ctx, &role, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("event", &id))?))
}
