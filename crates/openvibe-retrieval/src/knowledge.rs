//! A knowledge query resolved for running: what every backend's
//! `query_knowledge` starts with.

use openvibe_protocols::{
    AuditEntry, CallerContext, Embedder, KnowledgeQuery, KnowledgeSearch, RetrievalMode,
    StoreError, check_user, resolve_embedding,
};

use crate::analyzer::query_terms;
use crate::fusion::FUSION;

/// How `query` runs, the same on every backend: its analyzed terms
/// when full text takes part, its vector (given, or `embedder`'s
/// embedding of the text) when vectors do, and how deep each list goes.
/// The caller may name no other user (`user_id`: `Unauthorized`); then
/// `audit` is handed the search's audit entry (built when it is called),
/// before the search is resolved, whether it can run or not.
/// `InvalidInput` when it cannot run: a full-text query without a text,
/// no text and no embedding, a text to embed without an embedder, or a
/// vector of the wrong dimension.
pub async fn knowledge_search(
    ctx: &CallerContext,
    query: &KnowledgeQuery,
    embedder: Option<&dyn Embedder>,
    dimensions: usize,
    audit: impl FnOnce(&dyn Fn() -> AuditEntry),
) -> Result<KnowledgeSearch, StoreError> {
    check_user(ctx, query.user_id.as_deref())?;
    audit(&|| query.audit_entry(ctx));
    let text = query.text.as_deref().filter(|t| !t.trim().is_empty());
    let vectors = query.embedding.is_some() || (text.is_some() && embedder.is_some());
    let (full_text, vector) = match query.mode {
        RetrievalMode::FullText => (true, false),
        RetrievalMode::Vector => (false, true),
        // Hybrid (and a later mode, until it says otherwise).
        _ => (text.is_some(), vectors || text.is_none()),
    };
    if full_text && text.is_none() {
        return Err(StoreError::invalid(
            "text",
            "a full-text query needs a text",
        ));
    }
    let terms = if full_text {
        query_terms(text.unwrap_or_default())
    } else {
        Vec::new()
    };
    let vector = if vector {
        Some(
            resolve_embedding(
                embedder,
                dimensions,
                "embedding",
                query.embedding.as_ref(),
                query.text.as_deref(),
            )
            .await?,
        )
    } else {
        None
    };
    let (depth, vector_depth) = if !terms.is_empty() && vector.is_some() {
        (
            FUSION.candidates(query.top_k),
            FUSION.vector_candidates(query.top_k),
        )
    } else {
        (query.top_k, query.top_k)
    };
    Ok(KnowledgeSearch {
        terms,
        vector,
        depth,
        vector_depth,
        top_k: query.top_k,
        filter: query.filter(),
    })
}
