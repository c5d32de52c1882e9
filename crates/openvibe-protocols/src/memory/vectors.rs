//! Record vectors: the embeddings a store keeps of its facts, insights,
//! episodes and knowledge, beside the records (never inside them).
//!
//! A store configured with an [`Embedder`](crate::Embedder) embeds each
//! record it writes (a batch in one embedder call) and keeps the vector
//! with the hash of the text it embedded ([`embedding_text`]). A vector is
//! *current* when that hash is the record's `content_hash`: a changed text
//! makes it stale, a deleted record takes it along. Embedding on write is
//! best effort: when the embedder fails, the record is written all the same
//! and waits for [`RecordVectors::embed_pending`], which also fills in
//! what a new model lacks, so a model change re-embeds without rewriting a
//! record. Readers ask for vectors of *their* model
//! ([`RecordVectors::vectors`]); a store of another model answers none.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::kinds::{Select, count, names};
use super::{CallerContext, Episode, Fact, Insight, Knowledge, StoreError, check_embedding};
use crate::Embedder;

/// The record kinds a store embeds (the kind registry's embedded kinds).
pub const EMBEDDED_KINDS: [&str; N_EMBEDDED] = names(Select::Embedded);
const N_EMBEDDED: usize = count(Select::Embedded);

/// The most records [`RecordVectors::vectors`] answers for in one call.
pub const MAX_VECTOR_IDS: usize = 1000;

/// The text of a record that is embedded (and whose hash is its
/// `content_hash`): a fact's, insight's or knowledge's content, an
/// episode's [`searchable_text`](Episode::searchable_text).
pub trait EmbeddingText {
    /// The record kind (one of [`EMBEDDED_KINDS`]).
    const KIND: &'static str;
    /// The text to embed.
    fn embedding_text(&self) -> std::borrow::Cow<'_, str>;
    /// The record's `content_hash` (of [`EmbeddingText::embedding_text`],
    /// kept by the store).
    fn text_hash(&self) -> Option<&str>;
    /// The record's id.
    fn record_id(&self) -> &str;
}

/// `EmbeddingText` for a record kind with `id` and `content_hash` fields,
/// embedding what `$text` gives.
macro_rules! embedding_text {
    ($($record:ty => $kind:literal, |$r:ident| $text:expr;)*) => {$(
        impl EmbeddingText for $record {
            const KIND: &'static str = $kind;
            fn embedding_text(&self) -> std::borrow::Cow<'_, str> {
                let $r = self;
                $text.into()
            }
            fn text_hash(&self) -> Option<&str> {
                Some(self.content_hash.as_ref()?.as_ref())
            }
            fn record_id(&self) -> &str {
                &self.id
            }
        }
    )*};
}

embedding_text! {
    Fact => "fact", |r| r.content.as_str();
    Insight => "insight", |r| r.content.as_str();
    Episode => "episode", |r| r.searchable_text();
}

impl EmbeddingText for Knowledge {
    const KIND: &'static str = "knowledge";
    fn embedding_text(&self) -> std::borrow::Cow<'_, str> {
        self.content.as_str().into()
    }
    fn text_hash(&self) -> Option<&str> {
        Some(&self.content_hash)
    }
    fn record_id(&self) -> &str {
        &self.id
    }
}

/// A belief's statement, embedded when it is weighed as evidence (beliefs
/// keep no vector: the few a role holds are embedded with the question, by
/// a caching embedder once).
impl EmbeddingText for crate::Belief {
    const KIND: &'static str = "belief";
    fn embedding_text(&self) -> std::borrow::Cow<'_, str> {
        self.statement.as_str().into()
    }
    fn text_hash(&self) -> Option<&str> {
        None
    }
    fn record_id(&self) -> &str {
        &self.id
    }
}

/// A record waiting for its vector: what a backend embeds and keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingText {
    /// The record kind (one of [`EMBEDDED_KINDS`]).
    pub kind: &'static str,
    /// The record's id.
    pub id: String,
    /// The record's `content_hash` (the vector is current while it holds).
    pub hash: String,
    /// The text to embed.
    pub text: String,
}

impl PendingText {
    /// `record` as one, when its store has hashed its text.
    pub fn of<R: EmbeddingText>(record: &R) -> Option<Self> {
        Some(Self {
            kind: R::KIND,
            id: record.record_id().to_owned(),
            hash: record.text_hash()?.to_owned(),
            text: record.embedding_text().into_owned(),
        })
    }
}

/// The text of `record` that is embedded.
pub fn embedding_text<R: EmbeddingText>(record: &R) -> std::borrow::Cow<'_, str> {
    record.embedding_text()
}

/// One record's current vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RecordVector {
    /// The record's id.
    pub id: String,
    /// Its embedding.
    pub vector: Vec<f32>,
}

/// How many records of one kind have a current vector and how many wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KindVectors {
    /// The record kind (one of [`EMBEDDED_KINDS`]).
    pub kind: String,
    /// Records with a current vector of the store's model.
    pub embedded: u64,
    /// Records without one (never embedded, embedded by another model, or
    /// changed since).
    pub pending: u64,
}

/// What [`RecordVectors::vector_status`] says of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VectorStatus {
    /// The model the store embeds with (`None`: the store has no embedder,
    /// and nothing is embedded on write).
    pub model: Option<String>,
    /// Per kind, in [`EMBEDDED_KINDS`] order.
    pub kinds: Vec<KindVectors>,
}

impl VectorStatus {
    /// Records waiting for a vector, over every kind.
    pub fn pending(&self) -> u64 {
        self.kinds.iter().map(|k| k.pending).sum()
    }

    /// Records with a current vector, over every kind.
    pub fn embedded(&self) -> u64 {
        self.kinds.iter().map(|k| k.embedded).sum()
    }
}

/// The vectors a backend keeps of its records.
#[async_trait]
pub trait RecordVectors: Send + Sync {
    /// The current vectors of `model` of the records `ids` of `kind` the
    /// caller may read, in no particular order; records without one (not
    /// embedded yet, changed since, unreadable or missing) are left out. A
    /// `model` other than the store's answers none. At most
    /// [`MAX_VECTOR_IDS`] ids.
    async fn vectors(
        &self,
        ctx: &CallerContext,
        model: &str,
        kind: &str,
        ids: &[String],
    ) -> Result<Vec<RecordVector>, StoreError>;

    /// The store's model and, per kind, how many records of the caller's
    /// tenant have a current vector and how many wait (privileged callers).
    async fn vector_status(&self, ctx: &CallerContext) -> Result<VectorStatus, StoreError>;

    /// Embed at most `batch` waiting records of the caller's tenant in one
    /// embedder call and keep their vectors (privileged callers); returns
    /// how many (0: none wait). Records are not rewritten. A store without
    /// an embedder refuses with [`StoreError::InvalidInput`] on `embedder`.
    async fn embed_pending(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError>;
}

/// `Ok` when `kind` is one of [`EMBEDDED_KINDS`] and `ids` are at most
/// [`MAX_VECTOR_IDS`].
pub fn check_vector_lookup(kind: &str, ids: &[String]) -> Result<(), StoreError> {
    if !EMBEDDED_KINDS.contains(&kind) {
        return Err(StoreError::invalid(
            "kind",
            format!(
                "`{kind}` is not an embedded record kind ({})",
                EMBEDDED_KINDS.join(", ")
            ),
        ));
    }
    if ids.len() > MAX_VECTOR_IDS {
        return Err(StoreError::invalid(
            "ids",
            format!("{} ids; at most {MAX_VECTOR_IDS} per call", ids.len()),
        ));
    }
    Ok(())
}

/// `Ok` when `ctx` may run vector maintenance (privileged) and `batch` is
/// at least 1.
pub fn check_vector_admin(
    ctx: &CallerContext,
    operation: &str,
    batch: Option<usize>,
) -> Result<(), StoreError> {
    if !ctx.is_privileged() {
        return Err(ctx.unauthorized(
            operation,
            "vector maintenance reads every record of the tenant: privileged (maintenance) \
             callers only",
        ));
    }
    if batch == Some(0) {
        return Err(StoreError::invalid("batch", "must be at least 1"));
    }
    Ok(())
}

/// Embed `texts` with `embedder` and check what comes back: one vector per
/// text, each of the embedder's size and finite. A failure is a transient
/// backend error naming the model (the records it was for stay as they are).
pub async fn embed_checked(
    embedder: &dyn Embedder,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, StoreError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let model = embedder.model_id();
    let vectors = embedder.embed(texts).await.map_err(|e| {
        StoreError::backend_from(format!("embedding with {model} failed: {e}"), true, e)
    })?;
    if vectors.len() != texts.len() {
        return Err(StoreError::backend(format!(
            "{model} answered {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    for vector in &vectors {
        check_embedding("embedding", vector, embedder.dimensions())?;
    }
    Ok(vectors)
}

/// The refusal of [`RecordVectors::embed_pending`] by a store without an
/// embedder.
pub fn no_embedder() -> StoreError {
    // The store's configuration refuses it: a conflict, not bad input.
    StoreError::conflict(
        "the store has no embedder, so it keeps no record vectors: configure one \
         (`PgStores::with_embedder`, `in_memory_stores_with_embedder`)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_text_is_what_the_content_hash_covers() {
        let episode = Episode {
            action: "qualify".into(),
            input_summary: "lead".into(),
            output_summary: "tier A".into(),
            ..Episode::default()
        };
        assert_eq!(embedding_text(&episode), "qualify\nlead\ntier A");
        let fact = Fact::new("f1", "Acme uses Snowflake");
        assert_eq!(embedding_text(&fact), "Acme uses Snowflake");
    }

    #[test]
    fn lookups_and_maintenance_are_checked() {
        assert!(check_vector_lookup("fact", &[]).is_ok());
        assert!(matches!(
            check_vector_lookup("plan", &[]),
            Err(StoreError::InvalidInput { field, .. }) if field == "kind"
        ));
        let many = vec![String::new(); MAX_VECTOR_IDS + 1];
        assert!(check_vector_lookup("fact", &many).is_err());
        let agent = CallerContext::agent("cro");
        assert!(matches!(
            check_vector_admin(&agent, "reindex", Some(10)),
            Err(StoreError::Unauthorized { .. })
        ));
        let system = CallerContext::system();
        assert!(check_vector_admin(&system, "reindex", Some(10)).is_ok());
        assert!(check_vector_admin(&system, "reindex", Some(0)).is_err());
    }
}
