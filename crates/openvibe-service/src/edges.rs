//! What the HTTP routes and the MCP tools serve alike: promotion
//! (`POST /v1/memory/promote`, `promoteMemory`) and merged recall
//! (`POST /v1/memory/search`, `searchMemory`), one path for both edges.

use openvibe_api::dto::{Promote, SearchMemory};
use openvibe_protocols::promotion::{Promotion, one_per_lineage, promote_fact, promote_insight};
use openvibe_protocols::{CallerContext, Fact, FactQuery, StoreError, Stores};

/// How many results a search returns when it names no `top_k`.
pub const SEARCH_TOP_K: usize = 10;

/// The most results one search returns.
pub const MAX_SEARCH_TOP_K: usize = 1_000;

/// Search the facts `ctx` may read for `request`'s words, in its scopes (or
/// `ctx`'s recall namespaces), one per lineage: a fact and its promoted
/// copies are one result, the one in `ctx`'s home namespace (else the
/// original) winning (seed 004's "merge + dedupe"). Audited as a search.
pub(crate) async fn search(
    stores: &Stores,
    ctx: &CallerContext,
    request: SearchMemory,
) -> Result<Vec<Fact>, StoreError> {
    let top_k = request.top_k.unwrap_or(SEARCH_TOP_K);
    if top_k == 0 || top_k > MAX_SEARCH_TOP_K {
        return Err(StoreError::invalid(
            "top_k",
            format!("must be between 1 and {MAX_SEARCH_TOP_K}, not {top_k}"),
        ));
    }
    // Room for the copies that one per lineage leaves out.
    let mut query = FactQuery::new().text(request.query).limit(top_k * 2);
    if !request.scopes.is_empty() {
        query = query.namespaces(request.scopes);
    }
    let found = stores.facts.query(ctx, &query).await?;
    let mut facts = one_per_lineage(ctx, found, |f| f);
    facts.truncate(top_k);
    Ok(facts)
}

/// Promote the fact or insight `request` names, as `ctx`, into its target
/// namespace: the stores check that `ctx` may read the source and write the
/// target (and delete the source for a move), and the promotion is audited.
pub(crate) async fn promote(
    stores: &Stores,
    ctx: &CallerContext,
    request: Promote,
) -> Result<Fact, StoreError> {
    let promotion = Promotion {
        mode: request.mode,
        ..Promotion::to(request.to).note(request.note)
    };
    let audit = Some(stores.audit.as_ref());
    match request.kind.as_str() {
        "fact" => promote_fact(stores.facts.as_ref(), audit, ctx, &request.id, &promotion).await,
        "insight" => {
            promote_insight(
                stores.insights.as_ref(),
                stores.facts.as_ref(),
                audit,
                ctx,
                &request.id,
                &promotion,
            )
            .await
        }
        other => Err(StoreError::invalid(
            "kind",
            format!("`{other}` cannot be promoted (fact or insight)"),
        )),
    }
}
