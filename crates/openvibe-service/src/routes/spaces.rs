//! Spaces: members, ordered message logs, cursors (`/v1/memory/spaces`).
//! The author of a message is the caller (its key), never the body.

use axum::Json;
use axum::extract::{Path, State};
use openvibe_api::dto::{Ack, Cursor, PostMessages};
use openvibe_api::endpoints as E;
use openvibe_protocols::{Member, MessageQuery, Page, Space, SpaceMessage, SpaceQuery};

use super::api::{Answer, Api, not_found};
use crate::auth::Ctx;
use crate::extract::Body;
use crate::state::AppState;

pub(super) fn routes(api: Api) -> Api {
    api.route(&E::CREATE_SPACE, create)
        .route(&E::GET_SPACE, get)
        .route(&E::QUERY_SPACES, query)
        .route(&E::ADD_SPACE_MEMBER, add_member)
        .route(&E::REMOVE_SPACE_MEMBER, remove_member)
        .route(&E::POST_MESSAGES, post)
        .route(&E::READ_MESSAGES, read)
        .route(&E::ACK_MESSAGES, ack)
        .route(&E::SPACE_CURSOR, cursor)
}

async fn create(State(s): State<AppState>, Ctx(ctx): Ctx, Body(sp): Body<Space>) -> Answer<Space> {
    Ok(Json(s.stores.spaces.create(&ctx, sp).await?))
}

async fn get(State(s): State<AppState>, Ctx(ctx): Ctx, Path(id): Path<String>) -> Answer<Space> {
    let found = s.stores.spaces.get(&ctx, &id).await?;
    Ok(Json(found.ok_or_else(|| not_found("space", &id))?))
}

async fn query(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<SpaceQuery>,
) -> Answer<Page<Space>> {
    Ok(Json(s.stores.spaces.list(&ctx, &q).await?))
}

async fn add_member(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(m): Body<Member>,
) -> Answer<Space> {
    Ok(Json(s.stores.spaces.add_member(&ctx, &id, m).await?))
}

async fn remove_member(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path((id, principal)): Path<(String, String)>,
) -> Answer<Space> {
    Ok(Json(
        s.stores.spaces.remove_member(&ctx, &id, &principal).await?,
    ))
}

async fn post(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(p): Body<PostMessages>,
) -> Answer<Vec<SpaceMessage>> {
    Ok(Json(s.stores.spaces.post_all(&ctx, &id, p.messages).await?))
}

async fn read(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(mut q): Body<MessageQuery>,
) -> Answer<Vec<SpaceMessage>> {
    let max_wait = u64::try_from(s.max_wait.as_millis()).unwrap_or(u64::MAX);
    q.wait_ms = q.wait_ms.min(max_wait);
    Ok(Json(s.stores.spaces.messages(&ctx, &id, &q).await?))
}

async fn ack(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(a): Body<Ack>,
) -> Answer<Cursor> {
    let cursor = s.stores.spaces.ack(&ctx, &id, a.seq).await?;
    Ok(Json(Cursor { cursor }))
}

async fn cursor(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Cursor> {
    let cursor = s.stores.spaces.cursor(&ctx, &id).await?;
    Ok(Json(Cursor { cursor }))
}
