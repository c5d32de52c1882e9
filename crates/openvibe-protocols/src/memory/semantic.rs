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

use super::retrieval::{FUSION, RetrievalMode, RetrieverScore, query_terms};
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
    /// vectors fused when there is a text, see [`super::retrieval`]).
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

    /// How this query runs, the same on every backend: its analyzed terms
    /// when full text takes part, its vector (given, or `embedder`'s
    /// embedding of the text) when vectors do, and how deep each list goes.
    /// `InvalidInput` when it cannot run: a full-text query without a text,
    /// no text and no embedding, a text to embed without an embedder, or a
    /// vector of the wrong dimension.
    pub async fn search(
        &self,
        embedder: Option<&dyn crate::Embedder>,
        dimensions: usize,
    ) -> Result<KnowledgeSearch, StoreError> {
        let text = self.text.as_deref().filter(|t| !t.trim().is_empty());
        let vectors = self.embedding.is_some() || (text.is_some() && embedder.is_some());
        let (full_text, vector) = match self.mode {
            RetrievalMode::FullText => (true, false),
            RetrievalMode::Vector => (false, true),
            RetrievalMode::Hybrid => (text.is_some(), vectors || text.is_none()),
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
                    self.embedding.as_ref(),
                    self.text.as_deref(),
                )
                .await?,
            )
        } else {
            None
        };
        let (depth, vector_depth) = if !terms.is_empty() && vector.is_some() {
            (
                FUSION.candidates(self.top_k),
                FUSION.vector_candidates(self.top_k),
            )
        } else {
            (self.top_k, self.top_k)
        };
        Ok(KnowledgeSearch {
            terms,
            vector,
            depth,
            vector_depth,
        })
    }
}

/// A [`KnowledgeQuery`] resolved for running ([`KnowledgeQuery::search`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeSearch {
    /// The query's analyzed terms (empty when full text takes no part, or
    /// the text has only stop words).
    pub terms: Vec<String>,
    /// The query vector, when vectors take part.
    pub vector: Option<Vec<f32>>,
    /// How many results the full-text list holds: the query's `top_k`, or
    /// [`FUSION`]'s candidate depth when two lists are fused.
    pub depth: usize,
    /// How many results the vector list holds: the query's `top_k`, or
    /// [`FUSION`]'s vector candidate depth when two lists are fused.
    pub vector_depth: usize,
}

impl KnowledgeSearch {
    /// Whether the full-text list is built: there are terms, or there is
    /// no vector (a full-text query of stop words finds nothing).
    pub fn full_text(&self) -> bool {
        !self.terms.is_empty() || self.vector.is_none()
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
    /// hybrid one ([`fuse`](super::fuse)).
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
            return Err(StoreError::invalid(
                field,
                "no embedding was given and the store has no embedder",
            ));
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

/// Cosine similarity of two vectors of the same length (0 when either is zero).
///
/// Accumulates in eight independent lanes so that the compiler can keep
/// them in SIMD registers (a single running sum is a dependency chain it
/// may not reorder).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let (mut dot, mut na, mut nb) = ([0.0f32; LANES], [0.0f32; LANES], [0.0f32; LANES]);
    let chunks = a.len().min(b.len()) / LANES;
    for (ca, cb) in a
        .chunks_exact(LANES)
        .zip(b.chunks_exact(LANES))
        .take(chunks)
    {
        for i in 0..LANES {
            dot[i] += ca[i] * cb[i];
            na[i] += ca[i] * ca[i];
            nb[i] += cb[i] * cb[i];
        }
    }
    let (mut dot, mut na, mut nb) = (
        dot.iter().sum::<f32>(),
        na.iter().sum::<f32>(),
        nb.iter().sum::<f32>(),
    );
    for (x, y) in a.iter().zip(b).skip(chunks * LANES) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
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
    fn cosine_of_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        // Lanes and remainder agree with the plain definition.
        let a: Vec<f32> = (0..387).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let b: Vec<f32> = (0..387).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
        let dot: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        assert!((f64::from(cosine(&a, &b)) - dot / (na * nb)).abs() < 1e-5);
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
