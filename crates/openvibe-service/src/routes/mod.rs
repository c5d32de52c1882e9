//! The router: every route is declared once, with its OpenAPI operation,
//! in [`routes`]; the axum router and the OpenAPI document are both built
//! from that table.

mod records;
mod system;
mod working;

use std::sync::Arc;

use axum::Router;
use axum::http::Method;
use axum::routing::{MethodRouter, delete, get, post, put};
use openvibe_protocols::{StoreError, Stores};

use crate::auth::Access;
use crate::openapi::Op;
use crate::{Readiness, Service};

/// Where the MCP server's streamable HTTP endpoint is.
pub const MCP_PATH: &str = "/mcp";

/// A handler's answer: a JSON body or an error response.
pub(crate) type Answer<T> = Result<axum::Json<T>, crate::error::Failure>;

/// What handlers share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) stores: Stores,
    pub(crate) access: Access,
    pub(crate) ready: Readiness,
}

/// Routes and their operations, built together.
pub(crate) struct Api {
    router: Router<AppState>,
    pub(crate) ops: Vec<Op>,
}

impl Api {
    fn new() -> Self {
        Self {
            router: Router::new(),
            ops: Vec::new(),
        }
    }

    /// Route `op` to `handler`.
    pub(crate) fn op(mut self, op: Op, handler: MethodRouter<AppState>) -> Self {
        self.router = self.router.route(op.path, handler);
        self.ops.push(op);
        self
    }
}

/// Every route of the service.
pub(crate) fn routes() -> Api {
    let api = Api::new();
    let api = system::routes(api);
    let api = records::routes(api);
    working::routes(api)
}

/// The axum method router for `method`.
pub(crate) fn on<H, T>(method: &Method, handler: H) -> MethodRouter<AppState>
where
    H: axum::handler::Handler<T, AppState>,
    T: 'static,
{
    match *method {
        Method::GET => get(handler),
        Method::PUT => put(handler),
        Method::DELETE => delete(handler),
        _ => post(handler),
    }
}

/// The full router with its middleware.
pub(crate) fn router(service: Service) -> Router {
    let Service {
        stores,
        access,
        ready,
        config,
    } = service;
    let state = AppState {
        stores,
        access,
        ready,
    };
    let limit = Arc::new(tokio::sync::Semaphore::new(config.max_in_flight.max(1)));
    let mcp = crate::mcp::streamable_http(state.stores.clone(), &config);
    let mcp = Router::<AppState>::new().nest_service(MCP_PATH, mcp).layer(
        axum::middleware::from_fn_with_state(state.clone(), crate::auth::mcp_caller),
    );
    routes()
        .router
        .merge(mcp)
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

/// A record `get` that found nothing: 404.
pub(crate) fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}
