//! Semantic memory: knowledge with an embedding, upserted without
//! duplicates, private to its owner unless public.
//!
//! - **Upsert.** [`KnowledgeStore::store_knowledge`] upserts on
//!   `(tenant, owner, external_id)` when an external id is given, else on
//!   `(tenant, owner, content_hash)`: storing the same thing twice returns
//!   the same id and leaves one record.
//! - **Privacy.** Knowledge is readable by its owner, and by everyone in
//!   the tenant (and project) when `is_public` — never another principal's
//!   private knowledge, whatever their clearance ([`knowledge_read_allowed`]).
//! - **Identity.** The owner is the caller's principal. Where a caller names
//!   a user (`user_id`, as the source design's API does), it must be the
//!   caller's own principal id, or the call is [`StoreError::Unauthorized`]
//!   and nothing is written.
//! - **Embeddings.** An input without an embedding is embedded by the
//!   store's configured [`Embedder`](crate::Embedder); an embedding of the
//!   wrong dimension or with a non-finite value is [`StoreError::InvalidInput`].

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::retrieval_types::{RetrievalMode, RetrieverScore};
use super::{
    CallerContext, MAX_CONTENT_LEN, RecordMeta, StoreError, check_content, check_opt_label,
    check_tags, check_text,
};

/// One piece of knowledge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Knowledge {
    /// Unique id within the tenant (generated).
    pub id: String,
    /// Governance metadata (tenant, project and owner from the caller;
    /// `meta.source` is where it came from).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The text.
    pub content: String,
    /// The caller's id for it (the upsert key when given).
    pub external_id: Option<String>,
    /// Visible to everyone in the tenant (and project), not only the owner.
    pub is_public: bool,
    /// Free tags.
    pub tags: Vec<String>,
    /// The plan it was learned in.
    pub plan_id: Option<String>,
    /// The session it was learned in.
    pub session_id: Option<String>,
    /// Free metadata (a JSON object).
    pub metadata: Value,
    /// [`content_hash`](super::content_hash) of `content` (the upsert key
    /// without an external id).
    pub content_hash: String,
    /// The embedding, of the store's model.
    pub embedding: Vec<f32>,
}

/// What [`KnowledgeStore::store_knowledge`] needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct NewKnowledge {
    /// The text (required, not blank).
    pub content: String,
    /// Its embedding; `None`: the store's embedder computes it.
    pub embedding: Option<Vec<f32>>,
    /// The user it belongs to: must be the caller's principal id when given.
    pub user_id: Option<String>,
    /// Upsert on this instead of the content hash.
    pub external_id: Option<String>,
    /// Visible to everyone in the tenant (default: private).
    pub is_public: bool,
    /// Free tags.
    pub tags: Vec<String>,
    /// Where it came from.
    pub source: Option<String>,
    /// An existing plan it was learned in.
    pub plan_id: Option<String>,
    /// An existing session it was learned in.
    pub session_id: Option<String>,
    /// Free metadata; `null` means an empty object.
    pub metadata: Value,
    /// When it expires (`None`: never; capped by retention, see
    /// [`RecordMeta::expires_at`]). Storing it again renews it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl NewKnowledge {
    /// Knowledge with this content and defaults elsewhere (private).
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

/// What [`KnowledgeStore::query_knowledge`] looks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct KnowledgeQuery {
    /// Text to embed with the store's embedder (when no `embedding`).
    pub text: Option<String>,
    /// The query vector.
    pub embedding: Option<Vec<f32>>,
    /// The user asking: must be the caller's principal id when given.
    pub user_id: Option<String>,
    /// Include other principals' public knowledge (default `true`).
    pub include_public: bool,
    /// At most this many results (default 10).
    pub top_k: usize,
    /// Only knowledge with any of these tags.
    pub tags: Vec<String>,
    /// Only knowledge from this source.
    pub source: Option<String>,
    /// Only knowledge of this plan.
    pub plan_id: Option<String>,
    /// Only knowledge of this session.
    pub session_id: Option<String>,
    /// How to retrieve (default [`RetrievalMode::Hybrid`]: full text and
    /// vectors fused when there is a text, see `docs/retrieval.md`).
    pub mode: RetrievalMode,
}

impl Default for KnowledgeQuery {
    fn default() -> Self {
        Self {
            text: None,
            embedding: None,
            user_id: None,
            include_public: true,
            top_k: 10,
            tags: Vec::new(),
            source: None,
            plan_id: None,
            session_id: None,
            mode: RetrievalMode::Hybrid,
        }
    }
}

impl KnowledgeQuery {
    /// The audit entry of this search by `ctx`: every filter, whether an
    /// embedding was given (not the vector), and `top_k`. Both backends
    /// audit knowledge searches with it.
    pub fn audit_entry(&self, ctx: &super::CallerContext) -> super::AuditEntry {
        super::AuditEntry::search(ctx, "knowledge", &self.audit_view(), &[], self.top_k)
    }

    /// What an audit entry records of this query.
    fn audit_view(&self) -> Value {
        serde_json::json!({
            "text": self.text,
            "embedding_given": self.embedding.is_some(),
            "user_id": self.user_id,
            "include_public": self.include_public,
            "top_k": self.top_k,
            "tags": self.tags,
            "source": self.source,
            "plan_id": self.plan_id,
            "session_id": self.session_id,
            "mode": self.mode,
        })
    }

    /// Knowledge nearest to `embedding`.
    pub fn by_embedding(embedding: Vec<f32>) -> Self {
        Self {
            embedding: Some(embedding),
            ..Self::default()
        }
    }

    /// Knowledge that best matches `text`: full text and the store's
    /// embedding of it, fused ([`RetrievalMode::Hybrid`]).
    pub fn by_text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// This query, retrieving by `mode`.
    #[must_use]
    pub fn mode(mut self, mode: RetrievalMode) -> Self {
        self.mode = mode;
        self
    }

    /// The query's filters, normalised ([`KnowledgeFilter`]).
    pub fn filter(&self) -> KnowledgeFilter {
        KnowledgeFilter {
            include_public: self.include_public,
            tags: self.tags.clone(),
            source: self.source.clone(),
            plan_id: self.plan_id.clone(),
            session_id: self.session_id.clone(),
        }
    }
}

/// A [`KnowledgeQuery`] resolved for running, the same on every backend
/// (`openvibe_retrieval::knowledge_search` makes it): its analyzed terms,
/// its vector, how deep each retriever's list goes, and its filters.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeSearch {
    /// The query's analyzed terms (empty when full text takes no part, or
    /// the text has only stop words).
    pub terms: Vec<String>,
    /// The query vector, when vectors take part.
    pub vector: Option<Vec<f32>>,
    /// How many results the full-text list holds: the query's `top_k`, or
    /// the fusion's candidate depth when two lists are fused.
    pub depth: usize,
    /// How many results the vector list holds: the query's `top_k`, or
    /// the fusion's vector candidate depth when two lists are fused.
    pub vector_depth: usize,
    /// How many results the query asks for.
    pub top_k: usize,
    /// Which knowledge the query keeps.
    pub filter: KnowledgeFilter,
}

impl KnowledgeSearch {
    /// Whether the full-text list is built: there are terms, or there is
    /// no vector (a full-text query of stop words finds nothing).
    pub fn full_text(&self) -> bool {
        !self.terms.is_empty() || self.vector.is_none()
    }
}

/// The filters of a [`KnowledgeQuery`], normalised once for every backend
/// (the in-memory backend calls [`KnowledgeFilter::keeps`]; PostgreSQL
/// writes the same conditions in SQL). The read rule
/// ([`knowledge_read_allowed`]) applies besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeFilter {
    /// Other principals' public knowledge is kept too (else only the caller's own).
    pub include_public: bool,
    /// Only knowledge with any of these tags (none: any).
    pub tags: Vec<String>,
    /// Only knowledge from this source.
    pub source: Option<String>,
    /// Only knowledge of this plan.
    pub plan_id: Option<String>,
    /// Only knowledge of this session.
    pub session_id: Option<String>,
}

impl KnowledgeFilter {
    /// Whether any filter besides ownership narrows the search (tags,
    /// source, plan or session).
    pub fn narrows(&self) -> bool {
        !self.tags.is_empty()
            || self.source.is_some()
            || self.plan_id.is_some()
            || self.session_id.is_some()
    }

    /// Whether the filter keeps `k`, which the caller owns when `owned`.
    pub fn keeps(&self, k: &Knowledge, owned: bool) -> bool {
        (self.include_public || owned)
            && (self.tags.is_empty() || k.tags.iter().any(|t| self.tags.contains(t)))
            && self.source.as_deref().is_none_or(|s| k.meta.source == s)
            && self
                .plan_id
                .as_deref()
                .is_none_or(|p| k.plan_id.as_deref() == Some(p))
            && self
                .session_id
                .as_deref()
                .is_none_or(|s| k.session_id.as_deref() == Some(s))
    }
}

/// A query result: the knowledge, its score and which retrievers found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KnowledgeHit {
    /// The knowledge.
    pub knowledge: Knowledge,
    /// Higher is better: the cosine similarity (`-1.0..=1.0`) of a vector
    /// query, the BM25 score of a full-text one, the fused score of a
    /// hybrid one (reciprocal rank fusion).
    pub score: f32,
    /// What each retriever that found it said (rank and own score).
    #[serde(default)]
    pub retrievers: Vec<RetrieverScore>,
}

/// The read rule of knowledge, for a record of the caller's tenant:
/// project visible, and owned or public (clearance plays no part: private
/// knowledge is its owner's alone).
pub fn knowledge_read_allowed(project_visible: bool, owned: bool, is_public: bool) -> bool {
    project_visible && (owned || is_public)
}

/// Check an embedding: `dimensions` finite values.
pub fn check_embedding(
    field: &str,
    embedding: &[f32],
    dimensions: usize,
) -> Result<(), StoreError> {
    if embedding.len() != dimensions {
        return Err(StoreError::invalid(
            field,
            format!(
                "has {} dimensions, the store's model has {dimensions}",
                embedding.len()
            ),
        ));
    }
    if let Some(i) = embedding.iter().position(|v| !v.is_finite()) {
        return Err(StoreError::invalid(
            field,
            format!("value {i} is not a finite number"),
        ));
    }
    Ok(())
}

/// The check of a `user_id` a caller named: it must be the caller.
pub fn check_user(ctx: &CallerContext, user_id: Option<&str>) -> Result<(), StoreError> {
    match user_id {
        Some(user) if user != ctx.principal().id => Err(ctx.unauthorized(
            format!("act for user `{user}`"),
            "user_id must be the caller's own principal id",
        )),
        _ => Ok(()),
    }
}

/// The checks every backend makes on knowledge before writing it (all but
/// the embedding, which depends on the store's model, and the plan and
/// session, which must exist): the named user is the caller; content not
/// blank, at most [`MAX_CONTENT_LEN`] bytes, no NUL; labels and tags short,
/// no NUL.
pub fn validate_knowledge(ctx: &CallerContext, input: &NewKnowledge) -> Result<(), StoreError> {
    check_user(ctx, input.user_id.as_deref())?;
    check_content(&input.content)?;
    check_text("content", &input.content)?;
    if input.content.len() > MAX_CONTENT_LEN {
        return Err(StoreError::invalid(
            "content",
            format!("longer than {MAX_CONTENT_LEN} bytes"),
        ));
    }
    check_opt_label("external_id", input.external_id.as_deref())?;
    check_opt_label("source", input.source.as_deref())?;
    check_opt_label("plan_id", input.plan_id.as_deref())?;
    check_opt_label("session_id", input.session_id.as_deref())?;
    check_tags("tags", &input.tags)
}

/// The embedding a write or a query uses: `given` (checked), else
/// `embedder`'s for `text`; `InvalidInput` when neither is possible.
pub async fn resolve_embedding(
    embedder: Option<&dyn crate::Embedder>,
    dimensions: usize,
    field: &str,
    given: Option<&Vec<f32>>,
    text: Option<&str>,
) -> Result<Vec<f32>, StoreError> {
    let vector = match (given, text, embedder) {
        (Some(v), _, _) => v.clone(),
        (None, Some(text), Some(embedder)) => embedder
            .embed(&[text.to_owned()])
            .await
            .map_err(|e| StoreError::backend_from(format!("embedding failed: {e}"), false, e))?
            .pop()
            .unwrap_or_default(),
        (None, Some(_), None) => {
            // The store's configuration refuses it: a conflict.
            return Err(StoreError::conflict(format!(
                "{field}: no embedding was given and the store has no embedder"
            )));
        }
        (None, None, _) => {
            return Err(StoreError::invalid(
                field,
                "give an embedding or a text to embed",
            ));
        }
    };
    check_embedding(field, &vector, dimensions)?;
    Ok(vector)
}

/// Semantic memory.
#[async_trait]
pub trait KnowledgeStore: Send + Sync {
    /// The model the store's embeddings belong to, and their dimension.
    fn embedding_model(&self) -> (&str, usize);

    /// Insert or update (see the module documentation) knowledge owned by the caller.
    async fn store_knowledge(
        &self,
        ctx: &CallerContext,
        knowledge: NewKnowledge,
    ) -> Result<Knowledge, StoreError>;

    /// Readable knowledge nearest to the query, most similar first (ties by id).
    async fn query_knowledge(
        &self,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, StoreError>;

    /// Readable knowledge by id.
    async fn get_knowledge(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Knowledge>, StoreError>;

    /// Delete knowledge the caller may change.
    async fn delete_knowledge(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError>;

    /// Finish, for the caller's tenant, the vector indexing a backend defers
    /// past its writes (PostgreSQL puts new vectors into its HNSW graph in
    /// the background), and wait for it; returns how many records it
    /// indexed. Queries never need it (deferred vectors are found by exact
    /// comparison meanwhile); it settles which index answers, for a caller
    /// that wants the same ranking on every run. Default: nothing deferred.
    async fn index_pending(&self, ctx: &CallerContext) -> Result<u64, StoreError> {
        let _ = ctx;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_are_checked() {
        assert!(check_embedding("embedding", &[0.1, 0.2], 2).is_ok());
        assert!(check_embedding("embedding", &[0.1], 2).is_err());
        assert!(check_embedding("embedding", &[0.1, f32::NAN], 2).is_err());
        assert!(check_embedding("embedding", &[f32::INFINITY, 0.0], 2).is_err());
    }

    #[test]
    fn only_the_caller_may_be_named() {
        let alice = CallerContext::user("alice");
        assert!(check_user(&alice, None).is_ok());
        assert!(check_user(&alice, Some("alice")).is_ok());
        assert!(matches!(
            check_user(&alice, Some("bob")),
            Err(StoreError::Unauthorized { .. })
        ));
        assert!(knowledge_read_allowed(true, false, true));
        assert!(!knowledge_read_allowed(true, false, false));
        assert!(!knowledge_read_allowed(false, true, true));
    }
}
