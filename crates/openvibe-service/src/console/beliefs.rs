//! Beliefs: active, proposed, rejected and retired, each with its
//! provenance chain (belief → insights → episodes → raw calls), one click
//! per level.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use openvibe_protocols::{Belief, BeliefQuery, BeliefStatus, StoreError};
use serde::Deserialize;

use super::page::{Nav, badge, encode, failed, not_found, page, record_link, respond, time};
use super::session::SignedIn;
use super::widgets::{chain_of_insight, meta_fields};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct BeliefParams {
    status: Option<String>,
    cursor: Option<String>,
}

/// `GET /console/beliefs`
pub(crate) async fn list(
    State(s): State<AppState>,
    who: SignedIn,
    Query(params): Query<BeliefParams>,
) -> Response {
    let status = match params.status.as_deref().filter(|v| !v.is_empty()) {
        None => BeliefStatus::Active,
        Some(name) => match BeliefStatus::parse(name) {
            Some(status) => status,
            None => {
                return failed(
                    &who,
                    StoreError::invalid("status", "must be active, proposed, rejected or retired"),
                );
            }
        },
    };
    let query = BeliefQuery {
        status: Some(status),
        cursor: params.cursor.filter(|c| !c.is_empty()),
        limit: 50,
        ..BeliefQuery::default()
    };
    let found = match s.stores.beliefs.list(who.ctx(), &query).await {
        Ok(found) => found,
        Err(err) => return failed(&who, err),
    };
    respond(page(
        "Beliefs",
        Nav::Beliefs,
        Some(&who),
        html! {
            nav.actions aria-label="Which beliefs" {
                @for st in [BeliefStatus::Active, BeliefStatus::Proposed, BeliefStatus::Rejected, BeliefStatus::Retired] {
                    @if st == status {
                        span.button aria-current="true" { (st.as_str()) }
                    } @else {
                        a.button.secondary href=(format!("/console/beliefs?status={}", st.as_str())) { (st.as_str()) }
                    }
                }
            }
            p.meta { "What roles hold true once a person approved it, newest first. A proposed belief is decided from its proposal in the inbox." }
            @if found.items.is_empty() { p { "No " (status.as_str()) " beliefs you may read." } }
            @for b in &found.items { (summary(b)) }
            @if let Some(next) = &found.next_cursor {
                nav.pager aria-label="Pages" {
                    a href=(format!("/console/beliefs?status={}&cursor={}", status.as_str(), encode(next))) { "Older beliefs →" }
                }
            }
        },
    ))
}

fn summary(b: &Belief) -> Markup {
    html! {
        article.card {
            header {
                h2 { a href=(format!("/console/beliefs/{}", encode(&b.id))) { (b.statement) } }
                (badge(b.status.as_str()))
                @if b.constraint { (badge("constraint")) }
            }
            p.meta {
                "Role " strong { (b.role_id) } " · domain " (b.domain)
                " · confidence " (format!("{:.2}", b.confidence))
                " · version " (b.version)
                " · " (b.insight_ids.len()) " insights"
            }
        }
    }
}

/// `GET /console/beliefs/{id}`
pub(crate) async fn detail(
    State(s): State<AppState>,
    who: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let belief = match s.stores.beliefs.get(who.ctx(), &id).await {
        Ok(Some(b)) => b,
        Ok(None) => return not_found(&who, "belief", &id),
        Err(err) => return failed(&who, err),
    };
    let chain = match provenance(&s, &who, &belief).await {
        Ok(chain) => chain,
        Err(err) => return failed(&who, err),
    };
    respond(page(
        "Belief",
        Nav::Beliefs,
        Some(&who),
        html! {
            (summary(&belief))
            dl.fields {
                @if let Some(by) = &belief.decided_by { dt { "Decided by" } dd { (by) @if let Some(at) = belief.decided_at { " at " (time(at)) } } }
                @if let Some(reason) = &belief.reason { dt { "Reason" } dd { (reason) } }
                @if let Some(prev) = &belief.supersedes { dt { "Supersedes" } dd { (record_link("belief", prev)) } }
                @if let Some(next) = &belief.superseded_by { dt { "Superseded by" } dd { (record_link("belief", next)) } }
                dt { "Evidence when proposed" } dd { (belief.evidence) }
            }
            h2 { "Provenance" }
            p.meta { "The insights it came from, their episodes, and the raw model calls behind each episode." }
            ul.chain { (chain) }
            h2 { "Governance" }
            (meta_fields(&belief.meta))
        },
    ))
}

/// belief → insights → episodes → raw calls, as nested lists.
async fn provenance(s: &AppState, who: &SignedIn, belief: &Belief) -> Result<Markup, StoreError> {
    let mut items = Vec::new();
    for id in &belief.insight_ids {
        match s.stores.insights.get(who.ctx(), id).await? {
            Some(insight) => {
                let episodes = chain_of_insight(s, who, &insight.source_episode_ids).await?;
                items.push(html! {
                    li { (record_link("insight", id)) " · " (insight.content) ul { (episodes) } }
                });
            }
            None => items.push(html! { li { "insight " code { (id) } " (not readable by you)" } }),
        }
    }
    Ok(html! { @for item in items { (item) } })
}
