//! The audit trail: filtered by principal, namespace, operation, status
//! and time, newest first, a page at a time; refusals highlighted. A
//! person reads their own entries; a privileged key reads the tenant's.

use axum::extract::{Query, State};
use axum::response::Response;
use chrono::{DateTime, NaiveDateTime, Utc};
use maud::html;
use openvibe_protocols::{AuditEntry, AuditOp, AuditQuery, AuditStatus, StoreError};
use serde::Deserialize;

use super::page::{Nav, encode, failed, page, respond};
use super::session::SignedIn;
use super::widgets::entries_table;
use crate::state::AppState;

/// Entries per page.
const AUDIT_PAGE: usize = 100;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AuditParams {
    principal: Option<String>,
    namespace: Option<String>,
    operation: Option<String>,
    status: Option<String>,
    since: Option<String>,
    until: Option<String>,
    cursor: Option<String>,
}

fn given(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// A time from a `datetime-local` field (UTC) or RFC 3339.
fn parse_time(field: &'static str, value: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M").map(|t| t.and_utc()))
        .or_else(|_| NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S").map(|t| t.and_utc()))
        .map_err(|_| StoreError::invalid(field, "not a time (YYYY-MM-DDTHH:MM, UTC)"))
}

fn query_of(p: &AuditParams) -> Result<AuditQuery, StoreError> {
    let operation = match given(&p.operation) {
        None => None,
        Some(op) => Some(AuditOp::parse(&op).ok_or_else(|| {
            StoreError::invalid(
                "operation",
                "must be insert, update, delete, search or promote",
            )
        })?),
    };
    let status = match given(&p.status).as_deref() {
        None => None,
        Some("ok") => Some(AuditStatus::Ok),
        Some("refused") => Some(AuditStatus::Refused),
        Some(_) => return Err(StoreError::invalid("status", "must be ok or refused")),
    };
    Ok(AuditQuery {
        principal: given(&p.principal),
        namespace: given(&p.namespace),
        operation,
        status,
        since: given(&p.since)
            .map(|t| parse_time("since", &t))
            .transpose()?,
        until: given(&p.until)
            .map(|t| parse_time("until", &t))
            .transpose()?,
        cursor: given(&p.cursor),
        limit: AUDIT_PAGE,
        ..AuditQuery::new()
    })
}

/// `GET /console/audit`
pub(crate) async fn trail(
    State(s): State<AppState>,
    who: SignedIn,
    Query(params): Query<AuditParams>,
) -> Response {
    let query = match query_of(&params) {
        Ok(q) => q,
        Err(err) => return failed(&who, err),
    };
    let entries = match s.stores.audit.query(who.ctx(), &query).await {
        Ok(entries) => entries,
        Err(err) => return failed(&who, err),
    };
    let privileged = who.ctx().is_privileged();
    let next = (entries.len() == AUDIT_PAGE)
        .then(|| entries.last().map(AuditEntry::cursor))
        .flatten();
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let base = format!(
        "/console/audit?principal={}&namespace={}&operation={}&status={}&since={}&until={}",
        encode(&value(&params.principal)),
        encode(&value(&params.namespace)),
        encode(&value(&params.operation)),
        encode(&value(&params.status)),
        encode(&value(&params.since)),
        encode(&value(&params.until)),
    );
    respond(page(
        "Audit trail",
        Nav::Audit,
        Some(&who),
        html! {
            @if !privileged {
                p.meta { "Your own entries (a privileged key reads the whole tenant's trail)." }
            }
            form.filters method="get" action="/console/audit" {
                @if privileged {
                    div { label for="principal" { "Principal" } input id="principal" name="principal" value=[params.principal.as_deref()] placeholder="agent:cro"; }
                }
                div { label for="namespace" { "Namespace" } input id="namespace" name="namespace" value=[params.namespace.as_deref()]; }
                div {
                    label for="operation" { "Operation" }
                    select id="operation" name="operation" {
                        option value="" { "any" }
                        @for op in AuditOp::ALL {
                            option value=(op.as_str()) selected[params.operation.as_deref() == Some(op.as_str())] { (op.as_str()) }
                        }
                    }
                }
                div {
                    label for="status" { "Status" }
                    select id="status" name="status" {
                        option value="" { "any" }
                        option value="ok" selected[params.status.as_deref() == Some("ok")] { "ok" }
                        option value="refused" selected[params.status.as_deref() == Some("refused")] { "refused" }
                    }
                }
                div { label for="since" { "Since (UTC)" } input id="since" name="since" type="datetime-local" value=[params.since.as_deref()]; }
                div { label for="until" { "Until (UTC)" } input id="until" name="until" type="datetime-local" value=[params.until.as_deref()]; }
                div { button type="submit" { "Filter" } }
            }
            (entries_table(&entries, true))
            @if let Some(next) = next {
                nav.pager aria-label="Pages" { a href=(format!("{base}&cursor={}", encode(&next))) { "Older entries →" } }
            }
        },
    ))
}
