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

/// A row's answer: its JSON, or `204 No Content` for a row that answers
/// none ([`Output::SCHEMA`] is `None`).
pub(crate) fn reply<O: Output + serde::Serialize>(out: O) -> axum::response::Response {
    use axum::response::IntoResponse;
    match O::SCHEMA {
        Some(_) => axum::Json(out).into_response(),
        None => axum::http::StatusCode::NO_CONTENT.into_response(),
    }
}

/// A record `get` that found nothing: 404.
pub(crate) fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}

/// A store trait's handlers and its `routes` (every row of its wire),
/// expanded from its declaration: `openvibe_api::store_wire!(Trait =>
/// serve_store)` in the trait's route module, which imports the types the
/// declaration names. Each handler takes the state, the caller from the
/// key, the path's parameters and the checked body, runs the declaration's
/// `server` call and answers what it gives (a `None` of an `or_none` row
/// is a 404 naming its kind).
macro_rules! serve_store {
    ($trait:ident $ops:ident; { $($extra:tt)* } [ $($entries:tt)* ] [ $($only:tt)* ]) => {
        $crate::routes::api::serve_store!(@serve $ops; $($entries)* $($only)*);
    };
    (@serve $ops:ident; $(
        fn $name:ident $args:tt -> $ret:ty = $row:ident {
            $m:ident $path:literal $params:tt ($($input:tt)*) -> $out:ty;
            $op:literal, $summary:literal [$($flag:ident),*];
            $(or_none $kind:literal $(($id:expr))?;)?
            server (|$s:ident, $ctx:ident $(, $b:ident)?| $call:expr $(=> |$v:ident| $wrap:expr)?);
            client $client:tt;
        }
    )*) => {
        /// Every row of the trait's wire, served.
        pub(super) fn $ops(api: $crate::routes::Api) -> $crate::routes::Api {
            $ops::routes(api)
        }

        /// The handlers of the trait's rows.
        mod $ops {
            use super::*;

            pub(super) fn routes(api: $crate::routes::Api) -> $crate::routes::Api {
                api $(.route(&openvibe_api::endpoints::$row, $name))*
            }

            $(
                async fn $name(
                    axum::extract::State($s): axum::extract::State<$crate::state::AppState>,
                    $crate::auth::Ctx($ctx): $crate::auth::Ctx,
                    $crate::routes::api::serve_store!(@path_pat $params):
                        $crate::routes::api::serve_store!(@path_ty $params),
                    $crate::routes::api::serve_store!(@in_pat ($($input)*) $($b)?):
                        $crate::routes::api::serve_store!(@in_ty ($($input)*)),
                ) -> Result<axum::response::Response, $crate::error::Failure> {
                    // The id a 404 names, taken before the call moves what
                    // it is made of.
                    $(let missing = {
                        let _kind: &str = $kind;
                        ToString::to_string($crate::routes::api::serve_store!(@id $params $($id)?))
                    };)?
                    let out = ($call).await?;
                    $(let out = out.ok_or_else(|| {
                        $crate::routes::api::not_found($kind, &missing)
                    })?;)?
                    $(let out = { let $v = out; $wrap };)?
                    Ok($crate::routes::api::reply::<$out>(out))
                }
            )*
        }
    };
    (@path_pat []) => { () };
    (@path_ty []) => { () };
    (@path_pat [$a:ident]) => { axum::extract::Path($a) };
    (@path_ty [$a:ident]) => { axum::extract::Path<String> };
    (@path_pat [$a:ident, $b:ident]) => { axum::extract::Path(($a, $b)) };
    (@path_ty [$a:ident, $b:ident]) => { axum::extract::Path<(String, String)> };
    (@in_pat (none)) => { () };
    (@in_ty (none)) => { () };
    (@in_pat (body $t:ty) $b:ident) => { $crate::extract::Body($b) };
    (@in_ty (body $t:ty)) => { $crate::extract::Body<$t> };
    (@in_pat (query $t:ty) $b:ident) => { $crate::extract::Params($b) };
    (@in_ty (query $t:ty)) => { $crate::extract::Params<$t> };
    (@id [$first:ident $(, $rest:ident)*]) => { &$first };
    (@id $params:tt $id:expr) => { &$id };
}
pub(crate) use serve_store;
