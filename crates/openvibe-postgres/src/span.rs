//! The `tracing` span of every store call.

use openvibe_protocols::CallerContext;

/// A span for one store call.
pub(crate) fn span(kind: &'static str, op: &'static str, ctx: &CallerContext) -> tracing::Span {
    tracing::debug_span!(
        "store",
        backend = "postgres",
        kind,
        op,
        tenant = %ctx.tenant_id(),
        principal = %ctx.principal()
    )
}
