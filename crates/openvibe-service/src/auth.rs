//! The caller of a request, as handlers and the MCP endpoint get it: the
//! [`Ctx`] extractor and the MCP middleware, both through
//! [`Access::caller_of`](crate::access::Access::caller_of).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use openvibe_protocols::CallerContext;

use crate::error::Failure;
use crate::state::AppState;

/// The operation a route serves (its row of the endpoint table), put in the
/// request's extensions by the router: the caller's tool in the audit trail
/// is `http:<operation id>`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OperationId(pub(crate) &'static str);

/// The caller of a request.
#[derive(Debug, Clone)]
pub struct Ctx(pub CallerContext);

impl FromRequestParts<AppState> for Ctx {
    type Rejection = Failure;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let (ctx, _) = state.access.caller_of(&parts.headers)?;
        // The route names the tool, unless a trusted runtime already did.
        let ctx = match parts.extensions.get::<OperationId>() {
            Some(OperationId(id)) if ctx.tool().is_none() => ctx.with_tool(format!("http:{id}")),
            _ => ctx,
        };
        record_caller(&ctx);
        Ok(Self(ctx))
    }
}

/// Name the caller on the request's span (`tenant`, `principal`).
fn record_caller(ctx: &CallerContext) {
    let span = tracing::Span::current();
    span.record("tenant", ctx.tenant_id());
    span.record("principal", tracing::field::display(ctx.principal()));
}

/// Authenticate a request to the MCP endpoint as any other, and hand the
/// caller (and the projects it may name) to the tools in the request's
/// extensions.
pub(crate) async fn mcp_caller(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match state.access.caller_of(req.headers()) {
        Ok((ctx, projects)) => {
            record_caller(&ctx);
            req.extensions_mut().insert(ctx);
            req.extensions_mut().insert(projects);
            next.run(req).await
        }
        Err(failure) => failure.into_response(),
    }
}
