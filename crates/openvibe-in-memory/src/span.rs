//! The `tracing` spans of the in-memory stores.

use openvibe_protocols::CallerContext;

/// The `tracing` span of one in-memory store operation: the same fields as
/// the PostgreSQL backend's (`backend`, `kind`, `op`, `tenant`, `principal`).
pub(crate) fn store_span(
    kind: &'static str,
    op: &'static str,
    ctx: &CallerContext,
) -> tracing::span::EnteredSpan {
    store_span_of(kind, op, ctx).entered()
}

/// [`store_span`], not entered (for a future to be instrumented with).
pub(crate) fn store_span_of(
    kind: &'static str,
    op: &'static str,
    ctx: &CallerContext,
) -> tracing::Span {
    tracing::debug_span!(
        "store",
        backend = "memory",
        kind,
        op,
        tenant = %ctx.tenant_id(),
        principal = %ctx.principal(),
    )
}
