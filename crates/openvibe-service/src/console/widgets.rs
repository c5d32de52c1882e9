//! Pieces of markup that several console pages show: a record's
//! governance fields, an insight's chain of provenance down to the raw
//! calls, audit entries as a table, and the refusal of a stale form. A
//! page borrows these from here, never from another page.

use axum::response::Response;
use maud::{Markup, html};
use openvibe_protocols::{
    AuditEntry, AuditStatus, NamespaceScope, RawCallQuery, RecordMeta, StoreError,
};

use super::page::{error_page, record_link, time};
use super::session::SignedIn;
use crate::error::Failure;
use crate::state::AppState;

/// The refusal of a change without the session's CSRF token.
pub(crate) fn bad_csrf(who: &SignedIn) -> Response {
    error_page(
        Some(who),
        &Failure::new(
            openvibe_api::ErrorCode::Forbidden,
            "this form is stale or was not sent by the console (its CSRF token is missing or wrong); reload the page and try again",
        ),
    )
}

/// An insight's episodes, each with its raw calls.
pub(crate) async fn chain_of_insight(
    s: &AppState,
    who: &SignedIn,
    episodes: &[String],
) -> Result<Markup, StoreError> {
    let mut items = Vec::new();
    for id in episodes {
        let readable = s.stores.episodes.get(who.ctx(), id).await?;
        let calls = match &readable {
            Some(_) => Some(raw_calls_of(s, who, id).await?),
            None => None,
        };
        items.push((id.clone(), readable.map(|e| e.action), calls));
    }
    Ok(html! {
        @for (id, action, calls) in &items {
            li {
                @match action {
                    Some(action) => { (record_link("episode", id)) " · " (action) ul { @if let Some(calls) = calls { (calls) } } }
                    None => { "episode " code { (id) } " (not readable by you)" }
                }
            }
        }
    })
}

/// An episode's raw calls, as list items.
pub(crate) async fn raw_calls_of(
    s: &AppState,
    who: &SignedIn,
    episode: &str,
) -> Result<Markup, StoreError> {
    let calls = s
        .stores
        .raw
        .query(
            who.ctx(),
            &RawCallQuery {
                namespaces: readable(who.ctx()),
                ..RawCallQuery::new().episode(episode)
            },
        )
        .await?;
    Ok(html! {
        @for c in &calls.items {
            li { (record_link("raw", &c.id)) " · " (c.model) " · " (time(c.timestamp)) }
        }
    })
}

/// Every namespace `ctx` may read, for a query that should span them all
/// (empty when ungoverned: the stores then search every namespace).
pub(crate) fn readable(ctx: &openvibe_protocols::CallerContext) -> Vec<String> {
    match ctx.list_scope(&[]) {
        NamespaceScope::Only(readable) => readable,
        NamespaceScope::All => Vec::new(),
    }
}

/// A record's governance metadata.
pub(crate) fn meta_fields(meta: &RecordMeta) -> Markup {
    html! {
        dl.fields {
            dt { "Namespace" } dd { (meta.namespace) }
            dt { "Owner" } dd { (meta.owner) }
            dt { "Classification" } dd { (meta.classification.as_str()) }
            dt { "Source" } dd { (meta.source) }
            @if let Some(project) = &meta.project_id { dt { "Project" } dd { (project) } }
            dt { "Created" } dd { (time(meta.created_at)) }
            dt { "Updated" } dd { (time(meta.updated_at)) }
            @if let Some(expires) = meta.expires_at { dt { "Expires" } dd { (time(expires)) } }
        }
    }
}

/// Audit entries as a table, refusals highlighted.
pub(crate) fn entries_table(entries: &[AuditEntry], with_principal: bool) -> Markup {
    if entries.is_empty() {
        return html! { p { "No entries you may read." } };
    }
    html! {
        div.table-wrap {
            table {
                thead { tr {
                    th scope="col" { "When" }
                    @if with_principal { th scope="col" { "Principal" } }
                    th scope="col" { "Operation" } th scope="col" { "Record" } th scope="col" { "Namespace" } th scope="col" { "Status" } th scope="col" { "Through" }
                } }
                tbody {
                    @for e in entries {
                        tr class=[(e.status == AuditStatus::Refused).then_some("refused")] {
                            td { (time(e.at)) }
                            @if with_principal { td { (e.principal) } }
                            td { (e.operation.as_str()) }
                            td {
                                @match (&e.record_id, record_kind(&e.kind)) {
                                    (Some(id), Some(kind)) => { (record_link(kind, id)) }
                                    (Some(id), None) => { (e.kind) " " code { (id) } }
                                    (None, _) => { (e.kind) }
                                }
                            }
                            td { (e.namespace.as_deref().unwrap_or("—")) }
                            td {
                                @if e.status == AuditStatus::Refused {
                                    strong { "refused" } @if let Some(reason) = &e.reason { ": " (reason) }
                                } @else { "ok" }
                            }
                            td { (e.tool.as_deref().unwrap_or("—")) }
                        }
                    }
                }
            }
        }
    }
}

/// The console's name of an audited kind that has a page (raw calls are
/// `raw`).
fn record_kind(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "raw_call" => "raw",
        "fact" => "fact",
        "episode" => "episode",
        "insight" => "insight",
        "knowledge" => "knowledge",
        "belief" => "belief",
        "proposal" => "proposal",
        _ => return None,
    })
}
