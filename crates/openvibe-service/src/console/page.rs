//! What every console page shares: the layout (header, navigation, the
//! signed-in person, sign-out), the security headers, error pages, and
//! small pieces of markup (times, JSON, statuses, forms' CSRF field).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use openvibe_protocols::StoreError;

use super::session::SignedIn;
use crate::error::Failure;

/// The Content-Security-Policy of every console response: nothing from
/// another origin, no inline script or style, no framing.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// htmx's configuration (read from a meta tag, so no inline script): no
/// injected indicator styles (the CSP forbids inline style), no `eval`,
/// no script tags from swapped content, and error responses swapped in
/// (they carry the refusal's words).
const HTMX_CONFIG: &str = r#"{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"historyCacheSize":0,"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},{"code":"[45]..","swap":true,"error":true}]}"#;

/// The sections of the console, in navigation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Inbox,
    Beliefs,
    Memory,
    Audit,
    Goals,
    Spaces,
    /// Sign-in and error pages.
    None,
}

const SECTIONS: [(Nav, &str, &str); 6] = [
    (Nav::Inbox, "Inbox", "/console/inbox"),
    (Nav::Beliefs, "Beliefs", "/console/beliefs"),
    (Nav::Memory, "Memory", "/console/memory"),
    (Nav::Audit, "Audit trail", "/console/audit"),
    (Nav::Goals, "Goals", "/console/goals"),
    (Nav::Spaces, "Spaces", "/console/spaces"),
];

/// A whole page.
pub(crate) fn page(title: &str, nav: Nav, who: Option<&SignedIn>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="htmx-config" content=(HTMX_CONFIG);
                title { (title) " · openvibe console" }
                link rel="stylesheet" href="/console/assets/console.css";
                script src="/console/assets/htmx.min.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/console/inbox" { "openvibe" }
                    @if let Some(who) = who {
                        nav aria-label="Sections" {
                            ul {
                                @for (section, label, href) in SECTIONS {
                                    li {
                                        @if section == nav {
                                            a href=(href) aria-current="page" { (label) }
                                        } @else {
                                            a href=(href) { (label) }
                                        }
                                    }
                                }
                            }
                        }
                        form.signout method="post" action="/console/logout" {
                            (csrf_field(who))
                            span.who { (who.ctx().principal().to_string()) " · " (who.ctx().tenant_id()) }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The hidden field that carries the session's CSRF token in a form.
pub(crate) fn csrf_field(who: &SignedIn) -> Markup {
    html! { input type="hidden" name="csrf" value=(who.session.csrf); }
}

/// A page as a response (`200`).
pub(crate) fn respond(markup: Markup) -> Response {
    Html(markup.into_string()).into_response()
}

/// A fragment or page with `status`.
pub(crate) fn respond_with(status: StatusCode, markup: Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

/// The error page of a refused or failed request: the status, the message
/// and, for a refusal, the rule's reason.
pub(crate) fn error_page(who: Option<&SignedIn>, failure: &Failure) -> Response {
    let status = failure.status();
    respond_with(
        status,
        page(
            status.canonical_reason().unwrap_or("Error"),
            Nav::None,
            who,
            refusal(failure),
        ),
    )
}

/// The words of a refusal or failure, as an alert.
pub(crate) fn refusal(failure: &Failure) -> Markup {
    let body = &failure.error_body().error;
    html! {
        div.alert role="alert" {
            p { strong { (body.message) } }
            @if let Some(reason) = &body.reason {
                p { "Rule: " (reason) }
            }
        }
    }
}

impl Failure {
    /// The HTTP status of this failure.
    pub(crate) fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.error_body().status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// A store error as the console shows it.
pub(crate) fn failed(who: &SignedIn, err: StoreError) -> Response {
    error_page(Some(who), &Failure::from(err))
}

/// 404 for a record the caller cannot see (or that does not exist: the
/// console does not tell the two apart, as the API does not).
pub(crate) fn not_found(who: &SignedIn, kind: &'static str, id: &str) -> Response {
    failed(
        who,
        StoreError::NotFound {
            kind,
            id: id.to_owned(),
        },
    )
}

/// A time as people read it.
pub(crate) fn time(at: DateTime<Utc>) -> Markup {
    html! { time datetime=(at.to_rfc3339()) { (at.format("%Y-%m-%d %H:%M:%S UTC")) } }
}

/// A JSON value, pretty-printed (escaped like all text).
pub(crate) fn json(value: &serde_json::Value) -> Markup {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    html! { pre.json { code { (text) } } }
}

/// A status as a badge (its class colours it).
pub(crate) fn badge(status: &str) -> Markup {
    html! { span class=(format!("badge badge-{status}")) { (status) } }
}

/// A link to the detail page of a memory record.
pub(crate) fn record_link(kind: &str, id: &str) -> Markup {
    let href = match kind {
        "belief" => format!("/console/beliefs/{}", encode(id)),
        "proposal" => format!("/console/proposals/{}", encode(id)),
        _ => format!("/console/memory/{kind}/{}", encode(id)),
    };
    html! { a href=(href) { (kind) " " code { (id) } } }
}

/// `value` percent-encoded for a path segment or a query value.
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Add the console's security headers to `response`.
pub(crate) async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Text shortened to `max` characters, with an ellipsis.
pub(crate) fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_everywhere_it_is_interpolated() {
        let markup = html! { p title=("\"><script>") { ("<script>alert(1)</script>") } };
        let s = markup.into_string();
        assert!(!s.contains("<script>"), "{s}");
        assert!(s.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(
            json(&serde_json::json!({"x": "<b>"}))
                .into_string()
                .contains("&lt;b&gt;")
        );
    }

    #[test]
    fn values_are_encoded_for_urls() {
        assert_eq!(encode("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
        assert_eq!(encode("plain-id_1.2~"), "plain-id_1.2~");
    }
}
