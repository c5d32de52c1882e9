//! [`Api`]: the routes being built, row by row of the endpoint table, and
//! what handlers share.

use axum::Router;
use axum::routing::{MethodRouter, delete, get, post, put};
use openvibe_api::endpoints::{Endpoint, Method, Operation, Output};
use openvibe_protocols::StoreError;
use schemars::JsonSchema;

use crate::auth::OperationId;
use crate::state::AppState;

/// A handler's answer: a JSON body or an error response.
pub(crate) type Answer<T> = Result<axum::Json<T>, crate::error::Failure>;

/// Routes and the table rows they serve, built together.
pub(crate) struct Api {
    router: Router<AppState>,
    pub(crate) ops: Vec<Operation>,
}

impl Api {
    pub(super) fn new() -> Self {
        Self {
            router: Router::new(),
            ops: Vec::new(),
        }
    }

    /// Serve `endpoint` with `handler`.
    pub(crate) fn route<I: JsonSchema, O: Output, H, T>(
        mut self,
        endpoint: &Endpoint<I, O>,
        handler: H,
    ) -> Self
    where
        H: axum::handler::Handler<T, AppState>,
        T: 'static,
    {
        let method: MethodRouter<AppState> = match endpoint.method {
            Method::Get => get(handler),
            Method::Post => post(handler),
            Method::Put => put(handler),
            Method::Delete => delete(handler),
        };
        // The caller's tool in the audit trail: `http:<operation id>`.
        let method = method.layer(axum::Extension(OperationId(endpoint.operation_id)));
        self.router = self.router.route(endpoint.path, method);
        self.ops.push(endpoint.operation());
        self
    }

    /// The axum router of the routes.
    pub(super) fn into_router(self) -> Router<AppState> {
        self.router
    }
}

/// A record `get` that found nothing: 404.
pub(crate) fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}
