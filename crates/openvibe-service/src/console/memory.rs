//! The memory pyramid as a table: by kind and namespace, filtered by text
//! (facts through the service's search, knowledge through hybrid
//! retrieval, the other kinds through their text filter), a page at a
//! time; and each record's page with its fields, its provenance and its
//! audit entries. Every read goes through the governed stores as the
//! signed-in person.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use openvibe_api::dto::SearchMemory;
use openvibe_protocols::{
    AuditQuery, EpisodeQuery, FactQuery, InsightQuery, KnowledgeQuery, NamespaceScope,
    RawCallQuery, RecordMeta, RetrievalMode, StoreError,
};
use serde::Deserialize;

use super::page::{Nav, encode, failed, json, not_found, page, record_link, respond, short, time};
use super::session::SignedIn;
use super::widgets::{chain_of_insight, entries_table, meta_fields, raw_calls_of, readable};
use crate::state::AppState;

/// Rows per page.
pub(crate) const MEMORY_PAGE: usize = 50;

/// The kinds the table shows, from the bottom of the pyramid up.
const KINDS: [(&str, &str); 5] = [
    ("raw", "Raw calls (L1)"),
    ("episode", "Episodes (L2)"),
    ("insight", "Insights (L3)"),
    ("fact", "Facts"),
    ("knowledge", "Knowledge"),
];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MemoryParams {
    kind: Option<String>,
    namespace: Option<String>,
    q: Option<String>,
    cursor: Option<String>,
}

/// One row of the table.
struct Row {
    kind: &'static str,
    id: String,
    text: String,
    namespace: String,
    owner: String,
    at: chrono::DateTime<chrono::Utc>,
}

fn row(kind: &'static str, id: &str, text: &str, meta: &RecordMeta) -> Row {
    Row {
        kind,
        id: id.to_owned(),
        text: short(text, 160),
        namespace: meta.namespace.clone(),
        owner: meta.owner.clone(),
        at: meta.created_at,
    }
}

fn non_empty(value: Option<&String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// `GET /console/memory`
pub(crate) async fn table(
    State(s): State<AppState>,
    who: SignedIn,
    Query(params): Query<MemoryParams>,
) -> Response {
    let kind = params.kind.as_deref().unwrap_or("fact");
    let Some((kind, label)) = KINDS.iter().copied().find(|(k, _)| *k == kind) else {
        return failed(
            &who,
            StoreError::invalid("kind", "must be raw, episode, insight, fact or knowledge"),
        );
    };
    let namespace = non_empty(params.namespace.as_ref());
    let text = non_empty(params.q.as_ref());
    let cursor = non_empty(params.cursor.as_ref());
    let (rows, next) = match rows(&s, &who, kind, namespace.clone(), text.clone(), cursor).await {
        Ok(found) => found,
        Err(err) => return failed(&who, err),
    };
    let namespaces = match who.ctx().list_scope(&[]) {
        NamespaceScope::Only(readable) => readable,
        // Ungoverned: every namespace; the privileged count names them.
        _ => s
            .stores
            .admin
            .namespace_counts(who.ctx())
            .await
            .map(|counts| counts.into_iter().map(|c| c.namespace).collect())
            .unwrap_or_default(),
    };
    let base = format!(
        "/console/memory?kind={kind}&namespace={}&q={}",
        encode(namespace.as_deref().unwrap_or_default()),
        encode(text.as_deref().unwrap_or_default())
    );
    respond(page(
        "Memory",
        Nav::Memory,
        Some(&who),
        html! {
            form.filters method="get" action="/console/memory" role="search" {
                div {
                    label for="kind" { "Kind" }
                    select id="kind" name="kind" {
                        @for (k, l) in KINDS {
                            option value=(k) selected[k == kind] { (l) }
                        }
                    }
                }
                div {
                    label for="namespace" { "Namespace" }
                    input id="namespace" name="namespace" list="namespaces" value=[namespace.as_deref()] placeholder="every one you may read";
                    datalist id="namespaces" {
                        @for n in &namespaces { option value=(n) {} }
                    }
                }
                div {
                    label for="q" { "Text" }
                    input id="q" name="q" type="search" value=[text.as_deref()];
                }
                div { button type="submit" { "Show" } }
            }
            h2 { (label) }
            @if kind == "knowledge" && text.is_none() {
                p.notice { "Knowledge is found by hybrid search (full text and vectors): enter some text." }
            } @else if rows.is_empty() {
                p { "No records you may read match." }
            } @else {
                div.table-wrap {
                    table {
                        caption.meta { (rows.len()) " records" @if text.is_some() { ", most relevant first" } }
                        thead { tr { th scope="col" { "Record" } th scope="col" { "Text" } th scope="col" { "Namespace" } th scope="col" { "Owner" } th scope="col" { "Created" } } }
                        tbody {
                            @for r in &rows {
                                tr {
                                    td { (record_link(r.kind, &r.id)) }
                                    td { (r.text) }
                                    td { (r.namespace) }
                                    td { (r.owner) }
                                    td { (time(r.at)) }
                                }
                            }
                        }
                    }
                }
            }
            @if let Some(next) = next {
                nav.pager aria-label="Pages" {
                    a href=(format!("{base}&cursor={}", encode(&next))) { "Next page →" }
                }
            }
        },
    ))
}

/// The rows of one page, and the cursor of the next.
async fn rows(
    s: &AppState,
    who: &SignedIn,
    kind: &str,
    namespace: Option<String>,
    text: Option<String>,
    cursor: Option<String>,
) -> Result<(Vec<Row>, Option<String>), StoreError> {
    let ctx = who.ctx();
    // No namespace chosen: every one the person may read (not only their
    // recall namespaces, the stores' default).
    let namespaces: Vec<String> = match namespace {
        Some(n) => vec![n],
        None => readable(ctx),
    };
    let found = match kind {
        "raw" => {
            let page = s
                .stores
                .raw
                .query(
                    ctx,
                    &RawCallQuery {
                        namespaces,
                        text,
                        cursor,
                        limit: MEMORY_PAGE,
                        ..RawCallQuery::default()
                    },
                )
                .await?;
            let rows = page
                .items
                .iter()
                .map(|c| {
                    let mut r = row("raw", &c.id, &c.searchable_text(), &c.meta);
                    r.at = c.timestamp;
                    r
                })
                .collect();
            (rows, page.next_cursor)
        }
        "episode" => {
            let q = EpisodeQuery {
                text,
                namespaces,
                cursor,
                limit: MEMORY_PAGE + 1,
                ..EpisodeQuery::default()
            };
            let (found, next) = paged(
                s.stores.episodes.query(ctx, &q).await?,
                EpisodeQuery::cursor_of,
            );
            let rows = found
                .iter()
                .map(|e| {
                    let mut r = row(
                        "episode",
                        &e.id,
                        &format!("{} · {}", e.action, e.output_summary),
                        &e.meta,
                    );
                    r.at = e.timestamp;
                    r
                })
                .collect();
            (rows, next)
        }
        "insight" => {
            let q = InsightQuery {
                text,
                namespaces,
                cursor,
                limit: MEMORY_PAGE + 1,
                ..InsightQuery::default()
            };
            let (found, next) = paged(
                s.stores.insights.query(ctx, &q).await?,
                InsightQuery::cursor_of,
            );
            let rows = found
                .iter()
                .map(|i| row("insight", &i.id, &i.content, &i.meta))
                .collect();
            (rows, next)
        }
        "fact" => match text {
            Some(query) => {
                let found = crate::edges::search(
                    &s.stores,
                    ctx,
                    SearchMemory {
                        query,
                        scopes: namespaces,
                        top_k: Some(MEMORY_PAGE),
                    },
                )
                .await?;
                let rows = found
                    .iter()
                    .map(|f| row("fact", &f.id, &f.content, &f.meta))
                    .collect();
                (rows, None)
            }
            None => {
                let q = FactQuery {
                    namespaces,
                    cursor,
                    limit: MEMORY_PAGE + 1,
                    ..FactQuery::default()
                };
                let (found, next) =
                    paged(s.stores.facts.query(ctx, &q).await?, FactQuery::cursor_of);
                let rows = found
                    .iter()
                    .map(|f| row("fact", &f.id, &f.content, &f.meta))
                    .collect();
                (rows, next)
            }
        },
        _ => {
            let Some(text) = text else {
                return Ok((Vec::new(), None));
            };
            let q = KnowledgeQuery {
                text: Some(text),
                top_k: MEMORY_PAGE,
                mode: RetrievalMode::Hybrid,
                ..KnowledgeQuery::default()
            };
            let found = s.stores.knowledge.query_knowledge(ctx, &q).await?;
            let rows = found
                .iter()
                .map(|h| {
                    row(
                        "knowledge",
                        &h.knowledge.id,
                        &h.knowledge.content,
                        &h.knowledge.meta,
                    )
                })
                .collect();
            (rows, None)
        }
    };
    Ok(found)
}

/// A page of `found` (fetched one past the page), and the cursor of the
/// next when there is one.
fn paged<T>(mut found: Vec<T>, cursor_of: fn(&T) -> String) -> (Vec<T>, Option<String>) {
    if found.len() > MEMORY_PAGE {
        found.truncate(MEMORY_PAGE);
        let next = found.last().map(cursor_of);
        (found, next)
    } else {
        (found, None)
    }
}

/// `GET /console/memory/{kind}/{id}`
pub(crate) async fn record(
    State(s): State<AppState>,
    who: SignedIn,
    Path((kind, id)): Path<(String, String)>,
) -> Response {
    match record_body(&s, &who, &kind, &id).await {
        Ok(Some((title, body))) => respond(page(&title, Nav::Memory, Some(&who), body)),
        Ok(None) => not_found(&who, "record", &id),
        Err(err) => failed(&who, err),
    }
}

async fn record_body(
    s: &AppState,
    who: &SignedIn,
    kind: &str,
    id: &str,
) -> Result<Option<(String, Markup)>, StoreError> {
    let ctx = who.ctx();
    let (title, fields, meta, provenance) = match kind {
        "fact" => {
            let Some(f) = s.stores.facts.get(ctx, id).await? else {
                return Ok(None);
            };
            let provenance = html! {
                @if let Some(prev) = &f.supersedes { li { "Supersedes " (record_link("fact", prev)) } }
                @if !f.metadata.is_empty() { li { "Metadata" (json(&serde_json::Value::Object(f.metadata.clone()))) } }
            };
            let fields = html! {
                dt { "Content" } dd { (f.content) }
                dt { "Entity" } dd { (f.entity) }
                dt { "Domain" } dd { (f.domain) }
                dt { "Tags" } dd { (f.tags.join(", ")) }
                dt { "Confidence" } dd { (format!("{:.2}", f.confidence)) }
            };
            (
                format!("Fact {}", short(&f.content, 60)),
                fields,
                f.meta,
                provenance,
            )
        }
        "insight" => {
            let Some(i) = s.stores.insights.get(ctx, id).await? else {
                return Ok(None);
            };
            let provenance = chain_of_insight(s, who, &i.source_episode_ids).await?;
            let fields = html! {
                dt { "Content" } dd { (i.content) }
                dt { "Agent" } dd { (i.agent_id) }
                dt { "Status" } dd { (i.status.as_str()) }
                dt { "Confidence" } dd { (format!("{:.2}", i.confidence)) }
                dt { "Evidence" } dd { (i.evidence_count) " episodes" }
                dt { "Domain" } dd { (i.domain) }
            };
            (
                format!("Insight {}", short(&i.content, 60)),
                fields,
                i.meta,
                provenance,
            )
        }
        "episode" => {
            let Some(e) = s.stores.episodes.get(ctx, id).await? else {
                return Ok(None);
            };
            let provenance = raw_calls_of(s, who, &e.id).await?;
            let fields = html! {
                dt { "Agent" } dd { (e.agent_id) }
                dt { "Operator" } dd { (e.operator_id) " / " (e.node_name) }
                dt { "When" } dd { (time(e.timestamp)) }
                dt { "Action" } dd { (e.action) }
                dt { "Input" } dd { (e.input_summary) }
                dt { "Output" } dd { (e.output_summary) }
                dt { "Outcome" } dd { (json(&e.outcome)) }
            };
            (
                format!("Episode {}", short(&e.action, 60)),
                fields,
                e.meta,
                provenance,
            )
        }
        "raw" => {
            let Some(c) = s.stores.raw.get(ctx, id).await? else {
                return Ok(None);
            };
            let provenance = html! {
                @if let Some(ep) = &c.episode_id { li { "Made for " (record_link("episode", ep)) } }
            };
            let request = serde_json::to_value(&c.request).unwrap_or_default();
            let response = serde_json::to_value(&c.response).unwrap_or_default();
            let fields = html! {
                dt { "Agent" } dd { (c.agent_id) }
                dt { "Model" } dd { (c.model) }
                dt { "When" } dd { (time(c.timestamp)) }
                dt { "Tokens" } dd { (c.tokens_in) " in, " (c.tokens_out) " out" }
                dt { "Request" } dd { (json(&request)) }
                dt { "Response" } dd { (json(&response)) }
                @if let Some(error) = &c.error { dt { "Error" } dd { (error) } }
            };
            (format!("Raw call {}", c.id), fields, c.meta, provenance)
        }
        "knowledge" => {
            let Some(k) = s.stores.knowledge.get_knowledge(ctx, id).await? else {
                return Ok(None);
            };
            let fields = html! {
                dt { "Content" } dd { (k.content) }
                dt { "Tags" } dd { (k.tags.join(", ")) }
                dt { "Public" } dd { (k.is_public) }
            };
            (
                format!("Knowledge {}", short(&k.content, 60)),
                fields,
                k.meta,
                html! {},
            )
        }
        _ => return Ok(None),
    };
    let audit = s
        .stores
        .audit
        .query(
            ctx,
            &AuditQuery {
                record_id: Some(id.to_owned()),
                kind: Some(kind.replace("raw", "raw_call")),
                limit: 50,
                ..AuditQuery::new()
            },
        )
        .await?;
    Ok(Some((
        title,
        html! {
            dl.fields { (fields) }
            h2 { "Provenance" }
            ul.chain { (provenance) }
            h2 { "Governance" }
            (meta_fields(&meta))
            h2 { "Audit entries" }
            (entries_table(&audit, ctx.is_privileged()))
        },
    )))
}
