//! Signing in and out, and the console's static files.
//!
//! Sign-in takes an API key of the governance file, resolves it through
//! the service's one authentication path ([`Access::identify`]) and keeps
//! the resulting caller in a server-side session; the key itself is
//! dropped. In development mode (no governance file, served on loopback
//! only) no key is needed.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::page::{Nav, error_page, page, respond, respond_with};
use super::session::{OpenError, SignedIn, csrf_matches};
use super::widgets::bad_csrf;
use crate::access::Access;
use crate::error::Failure;
use crate::state::AppState;

/// The tool the console's calls carry in the audit trail.
pub(crate) const TOOL: &str = "console";

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LoginNotice {
    expired: Option<String>,
    signed_out: Option<String>,
}

/// `GET /console/login`
pub(crate) async fn login_page(
    State(s): State<AppState>,
    Query(notice): Query<LoginNotice>,
) -> Response {
    respond(login_form(&s.access, &notice, None))
}

fn login_form(access: &Access, notice: &LoginNotice, error: Option<&str>) -> maud::Markup {
    let dev = matches!(access, Access::Open { .. });
    page(
        "Sign in",
        Nav::None,
        None,
        html! {
            @if notice.expired.is_some() {
                p.notice role="status" { "Your session ended. Sign in again." }
            }
            @if notice.signed_out.is_some() {
                p.notice role="status" { "You are signed out." }
            }
            @if let Some(error) = error {
                div.alert role="alert" { p { (error) } }
            }
            form.signin method="post" action="/console/login" {
                @if dev {
                    p { "Development mode: this service has no governance file and listens on loopback only. "
                        "You act as the anonymous developer of its tenant; no key is needed." }
                    button type="submit" { "Continue" }
                } @else {
                    p { "Sign in with one of the API keys of the service's governance file. "
                        "The key is checked once and not kept: the browser holds only a session cookie." }
                    label for="key" { "API key" }
                    input id="key" name="key" type="password" autocomplete="off" required;
                    div.actions { button type="submit" { "Sign in" } }
                }
            }
        },
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Credentials {
    key: String,
}

/// `POST /console/login`
pub(crate) async fn login(
    State(s): State<AppState>,
    headers: HeaderMap,
    Peer(peer): Peer,
    Form(credentials): Form<Credentials>,
) -> Response {
    if !same_origin(&headers) {
        return forbidden_origin();
    }
    let identified = match &s.access {
        Access::Open { .. } => {
            if peer.is_some_and(|addr| !addr.ip().is_loopback()) {
                return respond_with(
                    StatusCode::FORBIDDEN,
                    login_form(
                        &s.access,
                        &LoginNotice::default(),
                        Some("Development mode signs in from this machine only."),
                    ),
                );
            }
            s.access.identify(None, None)
        }
        Access::Governed(_) => {
            let key = credentials.key.trim();
            if key.is_empty() {
                return respond_with(
                    StatusCode::UNAUTHORIZED,
                    login_form(
                        &s.access,
                        &LoginNotice::default(),
                        Some("Enter an API key."),
                    ),
                );
            }
            s.access.identify(Some(&format!("Bearer {key}")), None)
        }
    };
    let ctx = match identified {
        Ok((ctx, _)) => ctx.with_tool(TOOL),
        Err(failure) => {
            tracing::info!("console sign-in refused");
            return respond_with(
                failure.status(),
                login_form(
                    &s.access,
                    &LoginNotice::default(),
                    Some(&failure.error_body().error.message),
                ),
            );
        }
    };
    match s.console.open(ctx) {
        Ok((id, session)) => {
            tracing::info!(principal = %session.ctx.principal(), tenant = session.ctx.tenant_id(), "console sign-in");
            let mut response = Redirect::to("/console/inbox").into_response();
            response
                .headers_mut()
                .insert(header::SET_COOKIE, s.console.cookie(&id, &headers));
            response
        }
        Err(OpenError::Full) => error_page(
            None,
            &Failure::new(
                openvibe_api::ErrorCode::Unavailable,
                "too many console sessions are open; try again shortly",
            ),
        ),
        Err(OpenError::Random) => error_page(
            None,
            &Failure::new(
                openvibe_api::ErrorCode::Internal,
                "the operating system gave no randomness for a session",
            ),
        ),
    }
}

/// The peer's address, when the service was served with it
/// ([`Service::serve`](crate::Service::serve) is).
pub(crate) struct Peer(Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| *addr),
        ))
    }
}

/// A form that carries only the CSRF token (sign-out).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CsrfOnly {
    pub(crate) csrf: String,
}

/// `POST /console/logout`
pub(crate) async fn logout(
    State(s): State<AppState>,
    who: SignedIn,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !csrf_matches(&who.session, &form.csrf) {
        return bad_csrf(&who);
    }
    s.console.close(&who.id);
    tracing::info!(principal = %who.ctx().principal(), "console sign-out");
    let mut response = Redirect::to("/console/login?signed_out=1").into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, s.console.removal());
    response
}

/// `GET /console`
pub(crate) async fn home() -> Redirect {
    Redirect::to("/console/inbox")
}

/// Whether a change came from the console's own pages: no `Origin`, or
/// one naming the host the request was sent to.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let bare = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or(origin);
    !host.is_empty() && bare == host
}

fn forbidden_origin() -> Response {
    error_page(
        None,
        &Failure::new(
            openvibe_api::ErrorCode::Forbidden,
            "this form was sent from another site",
        ),
    )
}

/// The console's static files, compiled into the binary.
pub(crate) async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let (body, kind): (&'static [u8], &'static str) = match name.as_str() {
        "console.css" => (
            include_bytes!("../../console/console.css"),
            "text/css; charset=utf-8",
        ),
        "htmx.min.js" => (
            include_bytes!("../../console/vendor/htmx.org/htmx.min.js"),
            "text/javascript; charset=utf-8",
        ),
        "htmx.LICENSE.txt" => (
            include_bytes!("../../console/vendor/htmx.org/LICENSE"),
            "text/plain; charset=utf-8",
        ),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}
