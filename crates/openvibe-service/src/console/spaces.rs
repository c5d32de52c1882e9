//! Spaces: the spaces a person is a member of, and each one's threads with
//! their messages and delegations (requests, and the answers that followed).

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use openvibe_protocols::{MessageBody, MessageQuery, SpaceMessage, SpaceQuery};
use serde::Deserialize;

use super::page::{Nav, badge, encode, failed, json, not_found, page, record_link, respond, time};
use super::session::SignedIn;
use crate::state::AppState;

/// Messages per page of a space.
const MESSAGES_PAGE: usize = 200;

/// `GET /console/spaces`
pub(crate) async fn list(State(s): State<AppState>, who: SignedIn) -> Response {
    let found = match s
        .stores
        .spaces
        .list(who.ctx(), &SpaceQuery::default())
        .await
    {
        Ok(found) => found,
        Err(err) => return failed(&who, err),
    };
    respond(page(
        "Spaces",
        Nav::Spaces,
        Some(&who),
        html! {
            p.meta { "The spaces you are a member of: where roles and people post, delegate and answer." }
            @if found.items.is_empty() { p { "You are a member of no space." } }
            @for space in &found.items {
                article.card {
                    header {
                        h2 { a href=(format!("/console/spaces/{}", encode(&space.id))) { (space.title) } }
                        span.meta { (space.head) " messages · " (space.members.len()) " members" }
                    }
                    p.meta {
                        @for (i, m) in space.members.iter().enumerate() {
                            @if i > 0 { ", " }
                            (m.principal)
                            @if !m.domains.is_empty() { " (" (m.domains.join(", ")) ")" }
                        }
                    }
                }
            }
        },
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ThreadParams {
    after: Option<u64>,
}

/// `GET /console/spaces/{id}`
pub(crate) async fn space(
    State(s): State<AppState>,
    who: SignedIn,
    Path(id): Path<String>,
    Query(params): Query<ThreadParams>,
) -> Response {
    let space = match s.stores.spaces.get(who.ctx(), &id).await {
        Ok(Some(space)) => space,
        Ok(None) => return not_found(&who, "space", &id),
        Err(err) => return failed(&who, err),
    };
    let after = params.after.unwrap_or(0);
    let query = MessageQuery {
        after,
        limit: MESSAGES_PAGE,
        ..MessageQuery::default()
    };
    let messages = match s.stores.spaces.messages(who.ctx(), &id, &query).await {
        Ok(m) => m,
        Err(err) => return failed(&who, err),
    };
    // Threads in order of their first message; a reply whose first
    // message is on an earlier page opens its own group.
    let mut threads: Vec<(String, Vec<&SpaceMessage>)> = Vec::new();
    for m in &messages {
        let root = m.thread.clone().unwrap_or_else(|| m.id.clone());
        match threads.iter_mut().find(|(r, _)| *r == root) {
            Some((_, list)) => list.push(m),
            None => threads.push((root, vec![m])),
        }
    }
    let next = (messages.len() == MESSAGES_PAGE)
        .then(|| messages.last().map(|m| m.seq))
        .flatten();
    respond(page(
        &space.title,
        Nav::Spaces,
        Some(&who),
        html! {
            p.meta { (space.head) " messages · members: "
                @for (i, m) in space.members.iter().enumerate() {
                    @if i > 0 { ", " } (m.principal) @if m.admin { " (admin)" }
                }
            }
            @if threads.is_empty() { p { "No messages yet." } }
            @for (root, list) in &threads {
                section.thread aria-label=(format!("Thread {root}")) {
                    @for m in list { (message(m)) }
                }
            }
            @if let Some(seq) = next {
                nav.pager aria-label="Pages" {
                    a href=(format!("/console/spaces/{}?after={seq}", encode(&id))) { "Later messages →" }
                }
            }
        },
    ))
}

fn message(m: &SpaceMessage) -> Markup {
    html! {
        div.message id=(format!("m{}", m.seq)) {
            p.meta {
                "#" (m.seq) " · " strong { (m.meta.owner) } " · " (time(m.meta.created_at))
                @if let Some(domain) = &m.domain { " · to the owner of " (domain) }
                @if !m.to.is_empty() { " · for " (m.to.join(", ")) }
                @if m.escalated { " · " (badge("escalated")) }
            }
            @match &m.body {
                MessageBody::Text { text } => { p { (text) } }
                MessageBody::Request(r) => {
                    p { "Request: " strong { (r.task) } @if let Some(d) = r.deadline { " · by " (time(d)) } }
                    (json(&r.input))
                }
                MessageBody::Answer(a) => {
                    p {
                        "Answer " (badge(a.status.as_str()))
                        @if let Some(reason) = &a.reason { " " (reason) }
                        @if let Some(p) = &a.proposal { " · " (record_link("proposal", p)) }
                    }
                    @if !a.output.is_null() { (json(&a.output)) }
                }
            }
        }
    }
}
