//! The inbox: the proposals and escalations waiting for a person, and the
//! decision on one (approve or reject, with a reason). An approved card
//! polls until the role has run its action, so the result appears without
//! reloading.

use axum::extract::{Form, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use openvibe_memory::Decisions;
use openvibe_protocols::{
    Action, ActionTarget, EvidenceKind, Proposal, ProposalQuery, ProposalStatus, StoreError,
    Verdict,
};
use serde::Deserialize;

use super::page::{
    Nav, badge, csrf_field, encode, failed, json, not_found, page, record_link, refusal, respond,
    respond_with, short, time,
};
use super::session::{SignedIn, csrf_matches};
use super::widgets::{bad_csrf, meta_fields};
use crate::error::Failure;
use crate::state::AppState;

/// The inbox's page size.
pub(crate) const INBOX_PAGE: usize = 50;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct InboxParams {
    /// `mine`: only the proposals assigned to the person (escalations
    /// name an assignee); otherwise every pending one they may read.
    view: Option<String>,
    cursor: Option<String>,
}

/// `GET /console/inbox`
pub(crate) async fn inbox(
    State(s): State<AppState>,
    who: SignedIn,
    Query(params): Query<InboxParams>,
) -> Response {
    match render_inbox(&s, &who, &params).await {
        Ok(markup) => respond(markup),
        Err(err) => failed(&who, err),
    }
}

/// The inbox page of `who` (also what the bench renders).
pub(crate) async fn render_inbox(
    s: &AppState,
    who: &SignedIn,
    params: &InboxParams,
) -> Result<Markup, StoreError> {
    let all = params.view.as_deref() != Some("mine");
    let query = ProposalQuery {
        status: Some(ProposalStatus::Pending),
        assignee: (!all).then(|| who.ctx().owner_key()),
        cursor: params.cursor.clone().filter(|c| !c.is_empty()),
        limit: INBOX_PAGE,
        ..ProposalQuery::default()
    };
    let found = s.stores.proposals.list(who.ctx(), &query).await?;
    let view = if all { "all" } else { "mine" };
    Ok(page(
        "Inbox",
        Nav::Inbox,
        Some(who),
        html! {
            nav.actions aria-label="Which proposals" {
                @if all {
                    span.button aria-current="true" { "Everything waiting" }
                    a.button.secondary href="/console/inbox?view=mine" { "Assigned to you" }
                } @else {
                    a.button.secondary href="/console/inbox" { "Everything waiting" }
                    span.button aria-current="true" { "Assigned to you" }
                }
            }
            p.meta { "Pending proposals and escalations, newest first." }
            @if found.items.is_empty() {
                p { "Nothing waits for you." }
            }
            @for p in &found.items {
                (card(p, who, None))
            }
            @if let Some(next) = &found.next_cursor {
                nav.pager aria-label="Pages" {
                    a href=(format!("/console/inbox?view={view}&cursor={}", encode(next))) { "Older proposals →" }
                }
            }
        },
    ))
}

/// `GET /console/proposals/{id}`
pub(crate) async fn proposal_page(
    State(s): State<AppState>,
    who: SignedIn,
    Path(id): Path<String>,
) -> Response {
    match s.stores.proposals.get(who.ctx(), &id).await {
        Ok(Some(p)) => respond(page(
            &format!("Proposal {}", short(&p.summary, 60)),
            Nav::Inbox,
            Some(&who),
            html! {
                (card(&p, &who, None))
                h2 { "Record" }
                (meta_fields(&p.meta))
            },
        )),
        Ok(None) => not_found(&who, "proposal", &id),
        Err(err) => failed(&who, err),
    }
}

/// `GET /console/proposals/{id}/card`: the card alone (what an approved
/// card polls).
pub(crate) async fn proposal_card(
    State(s): State<AppState>,
    who: SignedIn,
    Path(id): Path<String>,
) -> Response {
    match s.stores.proposals.get(who.ctx(), &id).await {
        Ok(Some(p)) => respond(card(&p, &who, None)),
        Ok(None) => not_found(&who, "proposal", &id),
        Err(err) => failed(&who, err),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct DecideForm {
    csrf: String,
    /// `approve`, `supersede` (approve a refining belief and retire the
    /// one it refines) or `reject`.
    verdict: String,
    reason: String,
    /// For an escalation: the action to run (JSON), when approving.
    action: String,
    /// For a belief: `on` approves it as a constraint.
    constraint: String,
}

/// `POST /console/proposals/{id}/decide`
pub(crate) async fn decide(
    State(s): State<AppState>,
    who: SignedIn,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Response {
    if !csrf_matches(&who.session, &form.csrf) {
        return bad_csrf(&who);
    }
    let htmx = headers.contains_key("hx-request");
    let verdict = match verdict_of(&form) {
        Ok(v) => v,
        Err(err) => return decided(&s, &who, &id, htmx, Err(err)).await,
    };
    let result = s.stores.decide_proposal(who.ctx(), &id, &verdict).await;
    if let Ok(p) = &result {
        tracing::info!(proposal = %p.id, status = %p.status, principal = %who.ctx().principal(), "console decision");
    }
    decided(&s, &who, &id, htmx, result).await
}

fn verdict_of(form: &DecideForm) -> Result<Verdict, StoreError> {
    let (approve, supersede) = match form.verdict.as_str() {
        "approve" => (true, false),
        "supersede" => (true, true),
        "reject" => (false, false),
        _ => {
            return Err(StoreError::invalid(
                "verdict",
                "must be approve, supersede or reject",
            ));
        }
    };
    let action = match form.action.trim() {
        "" => None,
        text => Some(
            serde_json::from_str::<Action>(text)
                .map_err(|e| StoreError::invalid("action", format!("not an action: {e}")))?,
        ),
    };
    Ok(Verdict {
        approve,
        reason: form.reason.trim().to_owned(),
        action,
        supersede,
        constraint: match form.constraint.as_str() {
            "" => false,
            "on" => true,
            _ => return Err(StoreError::invalid("constraint", "must be on or absent")),
        },
    })
}

/// The answer to a decision: the card (htmx) or the proposal's page.
async fn decided(
    s: &AppState,
    who: &SignedIn,
    id: &str,
    htmx: bool,
    result: Result<Proposal, StoreError>,
) -> Response {
    match (result, htmx) {
        (Ok(_), false) => {
            Redirect::to(&format!("/console/proposals/{}", encode(id))).into_response()
        }
        (Ok(p), true) => respond(card(&p, who, None)),
        (Err(err), true) => {
            let failure = Failure::from(err);
            match s.stores.proposals.get(who.ctx(), id).await {
                Ok(Some(p)) => respond_with(failure.status(), card(&p, who, Some(&failure))),
                _ => respond_with(failure.status(), refusal(&failure)),
            }
        }
        (Err(err), false) => failed(who, err),
    }
}

/// One proposal as a card: what was decided and why, the evidence, the
/// action, and the form to decide it (for those who may).
pub(crate) fn card(p: &Proposal, who: &SignedIn, error: Option<&Failure>) -> Markup {
    let href = format!("/console/proposals/{}", encode(&p.id));
    // An element id of letters, digits, `-` and `_` (CSS- and URL-safe).
    let heading: String = format!("proposal-{}", p.id)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // An approved proposal waits for its role to run it: poll until then.
    let poll = (p.status == ProposalStatus::Approved).then(|| format!("{href}/card"));
    html! {
        article.card id=(heading) data-proposal=(p.id) aria-labelledby=(format!("{heading}-title")) hx-get=[poll.as_deref()] hx-trigger=[poll.as_ref().map(|_| "every 1s")] hx-swap=[poll.as_ref().map(|_| "outerHTML")] {
            header {
                h2 id=(format!("{heading}-title")) { a href=(href) { (p.summary) } }
                (badge(p.status.as_str()))
                (badge(match p.outcome.as_str() { "escalate" => "escalated", _ => "proposed" }))
            }
            p.meta {
                "Role " strong { (p.role_id) }
                " · domain " (p.domain)
                " · filed " (time(p.meta.created_at))
                @if let Some(deadline) = p.deadline { " · decide by " (time(deadline)) }
                @if let Some(assignee) = &p.assignee { " · assigned to " (assignee) }
            }
            @if let Some(d) = &p.decision {
                h3 { "The decision's four steps" }
                ol.steps {
                    @for line in d.explain() { li { (line) } }
                }
                @if !d.confidence.evidence.is_empty() {
                    h3 { "Evidence" }
                    ul.plain {
                        @for e in &d.confidence.evidence {
                            li {
                                (record_link(evidence_kind(e.kind), &e.id))
                                " · relevance " (format!("{:.2}", e.relevance))
                                " · value " (format!("{:.2}", e.value))
                                @if e.constraint { " · constraint" }
                                br;
                                span.meta { (e.summary) }
                                @if !e.why.is_empty() {
                                    br;
                                    span.meta { "Chosen by " (e.why) }
                                }
                            }
                        }
                    }
                }
            }
            @if let Some(action) = &p.action {
                h3 { "Action" }
                p {
                    code { (action.action) } " → "
                    @match &action.target {
                        ActionTarget::Tool { tool } => { "tool " code { (tool) } }
                        ActionTarget::Workflow { operator, workflow } => { "workflow " code { (operator) "/" (workflow) } }
                        ActionTarget::Delegate { domain } => { "delegated to the owner of " code { (domain) } }
                    }
                }
                (json(&action.input))
            }
            @if let Some(by) = &p.decided_by {
                p {
                    (p.status.as_str()) " by " strong { (by) }
                    @if let Some(at) = p.decided_at { " at " (time(at)) }
                    @if let Some(reason) = &p.reason { ": " (reason) }
                }
            }
            @if p.status == ProposalStatus::Approved {
                p.notice role="status" aria-live="polite" { "Approved: waiting for " (p.role_id) " to run it…" }
            }
            @if let Some(result) = &p.result {
                h3 { "Result" }
                (json(result))
            }
            @if let Some(error) = &p.error {
                div.alert role="alert" { p { "The action failed: " (error) } }
            }
            @if let Some(failure) = error { (refusal(failure)) }
            @if p.status == ProposalStatus::Pending {
                (decide_form(p, who))
            }
        }
    }
}

fn decide_form(p: &Proposal, who: &SignedIn) -> Markup {
    if let Err(err) = who.ctx().may_approve(&p.meta, "decide") {
        let failure = Failure::from(err);
        return html! {
            div.notice {
                p { "You may not decide this proposal." }
                @if let Some(reason) = &failure.error_body().error.reason {
                    p { "Rule: " (reason) }
                } @else {
                    p { (failure.error_body().error.message) }
                }
            }
        };
    }
    let href = format!("/console/proposals/{}/decide", encode(&p.id));
    let reason_id = format!("reason-{}", encode(&p.id));
    let action_id = format!("action-{}", encode(&p.id));
    html! {
        form method="post" action=(href) hx-post=(href) hx-target="closest article" hx-swap="outerHTML" {
            (csrf_field(who))
            label for=(reason_id) { "Reason (required to reject)" }
            textarea id=(reason_id) name="reason" {}
            @if p.action.is_none() {
                label for=(action_id) { "Action to run, as JSON (required to approve an escalation)" }
                textarea id=(action_id) name="action" placeholder=r#"{"action": "...", "target": {"kind": "tool", "tool": "..."}, "input": {}}"# {}
            }
            @if p.belief_id().is_some() {
                label.check {
                    input type="checkbox" name="constraint" value="on";
                    " As a constraint: an action this belief bears on is proposed to a person, never taken alone"
                }
            }
            @if let Some(old) = p.refined_belief() {
                p.meta { "This belief refines " (record_link("belief", old)) ": approving keeps both; approving superseding retires that one." }
            }
            div.actions {
                button type="submit" name="verdict" value="approve" { "Approve" }
                @if p.refined_belief().is_some() {
                    button type="submit" name="verdict" value="supersede" { "Approve superseding" }
                }
                button.danger type="submit" name="verdict" value="reject" { "Reject" }
            }
        }
    }
}

/// The record kind of a piece of evidence (for its link).
fn evidence_kind(kind: EvidenceKind) -> &'static str {
    match kind {
        EvidenceKind::Belief => "belief",
        EvidenceKind::Insight => "insight",
        EvidenceKind::Episode => "episode",
    }
}
