//! The router: every route is a row of the endpoint table
//! ([`openvibe_api::endpoints`]) routed to its handler ([`Api::route`]);
//! the OpenAPI document is built from the same table, and a test checks
//! that the router serves every row exactly once.

mod api;
mod beliefs;
pub(crate) mod cognitive;
mod goals;
mod inbox;
mod proposals;
mod records;
mod spaces;
mod system;
mod working;

use std::sync::Arc;

use axum::Router;

use crate::Service;
use crate::state::AppState;
pub(crate) use api::Api;

/// Where the MCP server's streamable HTTP endpoint is.
pub const MCP_PATH: &str = "/mcp";

/// Every route of the service.
pub(crate) fn routes() -> Api {
    let api = Api::new();
    let api = system::routes(api);
    let api = records::routes(api);
    let api = proposals::proposal_ops(api);
    let api = goals::goal_ops(api);
    let api = beliefs::belief_ops(api);
    let api = spaces::space_ops(api);
    let api = inbox::inbox_ops(api);
    let api = cognitive::loop_ops(api);
    working::routes(api)
}

/// The full router with its middleware.
pub(crate) fn router(service: Service) -> Router {
    let Service {
        stores,
        access,
        ready,
        config,
        inbox,
    } = service;
    let state = AppState {
        stores,
        access,
        ready,
        inbox,
        // A long poll answers before the request's time limit.
        max_wait: config
            .request_timeout
            .saturating_sub(std::time::Duration::from_secs(2)),
        console: Arc::new(crate::console::Sessions::new(
            config.console_idle_timeout,
            config.console_secure_cookies,
        )),
    };
    let limit = Arc::new(tokio::sync::Semaphore::new(config.max_in_flight.max(1)));
    let mcp = crate::mcp::streamable_http(state.stores.clone(), state.inbox.clone(), &config);
    let mcp = Router::<AppState>::new().nest_service(MCP_PATH, mcp).layer(
        axum::middleware::from_fn_with_state(state.clone(), crate::auth::mcp_caller),
    );
    routes()
        .into_router()
        .merge(mcp)
        .merge(crate::console::router())
        .fallback(|| async {
            crate::error::Failure::new(openvibe_api::ErrorCode::NotFound, "no such route")
        })
        .layer(axum::extract::DefaultBodyLimit::max(config.body_limit))
        .layer(axum::middleware::from_fn_with_state(
            config.request_timeout,
            crate::middleware::time_limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            limit,
            crate::middleware::bounded,
        ))
        .layer(axum::middleware::from_fn(crate::middleware::request_id))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The router serves every row of the endpoint table, once, and nothing
    /// else: the OpenAPI document (built from the table) is what it serves.
    #[test]
    fn the_router_serves_the_endpoint_table_exactly() {
        let routed: Vec<(&str, &str)> = super::routes()
            .ops
            .iter()
            .map(|op| (op.method.as_str(), op.path))
            .collect();
        let unique: BTreeSet<_> = routed.iter().copied().collect();
        assert_eq!(unique.len(), routed.len(), "a row routed twice: {routed:?}");
        let table: BTreeSet<(&str, &str)> = openvibe_api::endpoints::all()
            .iter()
            .map(|op| (op.method.as_str(), op.path))
            .collect();
        assert_eq!(unique, table);
    }
}
