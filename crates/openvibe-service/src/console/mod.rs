//! The web console at `/console`: what waits for a person (proposals and
//! escalations), beliefs with their provenance, the memory pyramid, the
//! audit trail, goals and spaces, for the people in the loop.
//!
//! Server-rendered HTML ([`maud`]: markup checked when it compiles, every
//! interpolation escaped) with a little htmx (vendored from its npm
//! package, served from `/console/assets`). A person signs in with an API
//! key of the governance file; the console keeps the caller it resolved to
//! in a server-side session and calls the governed stores as that caller,
//! exactly as the HTTP API does: what a key may not read, no page shows.
//! Every response carries a Content-Security-Policy without
//! `unsafe-inline`; every change needs the session's CSRF token.

mod audit;
mod beliefs;
mod goals;
pub(crate) mod inbox;
mod memory;
pub(crate) mod page;
pub(crate) mod session;
mod signin;
mod spaces;
mod widgets;

use axum::Router;
use axum::routing::{get, post};

use crate::state::AppState;

pub(crate) use session::Sessions;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/console";

/// The console's routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(signin::home))
        .route("/console/", get(signin::home))
        .route(
            "/console/login",
            get(signin::login_page).post(signin::login),
        )
        .route("/console/logout", post(signin::logout))
        .route("/console/assets/{name}", get(signin::asset))
        .route("/console/inbox", get(inbox::inbox))
        .route("/console/proposals/{id}", get(inbox::proposal_page))
        .route("/console/proposals/{id}/card", get(inbox::proposal_card))
        .route("/console/proposals/{id}/decide", post(inbox::decide))
        .route("/console/beliefs", get(beliefs::list))
        .route("/console/beliefs/{id}", get(beliefs::detail))
        .route("/console/memory", get(memory::table))
        .route("/console/memory/{kind}/{id}", get(memory::record))
        .route("/console/audit", get(audit::trail))
        .route("/console/goals", get(goals::goals))
        .route("/console/spaces", get(spaces::list))
        .route("/console/spaces/{id}", get(spaces::space))
        .layer(axum::middleware::map_response(page::security_headers))
}
