//! Record vectors: facts, insights and episodes embedded on write with the
//! store's model, kept current through updates, gone with their record,
//! read only by callers who may read the record; status and reindex for
//! privileged callers only. [`vectors_wait_for_a_failed_embedder`] is for
//! backends to run with an embedder they can make fail (it is not in
//! [`CASES`](crate::CASES): its factory takes the embedder).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{
    Classification, EmbedError, Embedder, Fact, Insight, RecordVector, Stores,
};

use crate::semantic::DIMENSIONS;
use crate::support::{agent, episode, is_invalid, is_unauthorized, sys};

fn vector(text: &str) -> Vec<f32> {
    HashEmbedder::new(DIMENSIONS).vector(text)
}

fn ids(vectors: &[RecordVector]) -> Vec<&str> {
    let mut ids: Vec<&str> = vectors.iter().map(|v| v.id.as_str()).collect();
    ids.sort_unstable();
    ids
}

fn internal_fact(id: &str, content: &str) -> Fact {
    Fact {
        meta: openvibe_protocols::RecordMeta {
            classification: Classification::Internal,
            ..Default::default()
        },
        ..Fact::new(id, content)
    }
}

/// Written records get vectors of the store's model, current through an
/// update, gone with a delete, and only for callers who may read them.
pub async fn vectors_embedded_on_write<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let model = HashEmbedder::MODEL;
    let a = agent("a");
    s.facts
        .store(&a, internal_fact("f1", "Acme runs Snowflake"))
        .await
        .unwrap();
    s.facts
        .store(&a, internal_fact("f2", "Globex prefers BigQuery"))
        .await
        .unwrap();
    s.insights
        .store(&a, Insight::new("i1", "a", "webinar leads convert", 0.8))
        .await
        .unwrap();
    let e1 = s.episodes.store(&a, episode("e1", "a", 1)).await.unwrap();

    let got = s
        .vectors
        .vectors(
            &a,
            model,
            "fact",
            &["f1".into(), "f2".into(), "nope".into()],
        )
        .await
        .unwrap();
    assert_eq!(ids(&got), ["f1", "f2"]);
    let f1 = got.iter().find(|v| v.id == "f1").unwrap();
    assert_eq!(
        f1.vector,
        vector("Acme runs Snowflake"),
        "the content, embedded"
    );
    let insight = s
        .vectors
        .vectors(&a, model, "insight", &["i1".into()])
        .await
        .unwrap();
    assert_eq!(insight[0].vector, vector("webinar leads convert"));
    let ep = s
        .vectors
        .vectors(&a, model, "episode", &["e1".into()])
        .await
        .unwrap();
    assert_eq!(
        ep[0].vector,
        vector(&e1.searchable_text()),
        "an episode embeds its searchable text"
    );

    // Another model's vectors: none. Another reader: only what it may read.
    assert!(
        s.vectors
            .vectors(&a, "another-model", "fact", &["f1".into()])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.vectors
            .vectors(&agent("b"), model, "fact", &["f1".into(), "f2".into()])
            .await
            .unwrap()
            .is_empty(),
        "internal facts of another agent are not readable by a public-only caller"
    );
    let other_tenant = agent("a").with_tenant("t2");
    assert!(
        s.vectors
            .vectors(&other_tenant, model, "fact", &["f1".into()])
            .await
            .unwrap()
            .is_empty()
    );

    // An update re-embeds; a delete takes the vector along.
    s.facts
        .update(&a, internal_fact("f1", "Acme moved to Databricks"))
        .await
        .unwrap();
    let got = s
        .vectors
        .vectors(&a, model, "fact", &["f1".into()])
        .await
        .unwrap();
    assert_eq!(got[0].vector, vector("Acme moved to Databricks"));
    s.facts.delete(&a, "f2").await.unwrap();
    assert_eq!(
        ids(&s
            .vectors
            .vectors(&a, model, "fact", &["f1".into(), "f2".into()])
            .await
            .unwrap()),
        ["f1"]
    );

    // Status and reindex: privileged callers only; nothing waits.
    let status = s.vectors.vector_status(&sys()).await.unwrap();
    assert_eq!(status.model.as_deref(), Some(model));
    let per_kind: Vec<(&str, u64, u64)> = status
        .kinds
        .iter()
        .map(|k| (k.kind.as_str(), k.embedded, k.pending))
        .collect();
    assert_eq!(
        per_kind,
        [
            ("fact", 1, 0),
            ("insight", 1, 0),
            ("episode", 1, 0),
            ("knowledge", 0, 0)
        ]
    );
    assert_eq!(s.vectors.embed_pending(&sys(), 10).await.unwrap(), 0);
    assert!(is_unauthorized(s.vectors.vector_status(&a).await));
    assert!(is_unauthorized(s.vectors.embed_pending(&a, 10).await));
    assert!(is_invalid(s.vectors.embed_pending(&sys(), 0).await));
    assert!(is_invalid(
        s.vectors.vectors(&a, model, "plan", &["p1".into()]).await
    ));
}

/// An embedder that fails while told to, then embeds as [`HashEmbedder`].
#[derive(Debug, Clone)]
pub struct FlakyEmbedder {
    failing: Arc<AtomicBool>,
    inner: HashEmbedder,
}

impl FlakyEmbedder {
    /// A [`HashEmbedder`] of [`DIMENSIONS`] that works until [`FlakyEmbedder::fail`].
    pub fn new() -> Self {
        Self {
            failing: Arc::new(AtomicBool::new(false)),
            inner: HashEmbedder::new(DIMENSIONS),
        }
    }

    /// Fail (`true`) or work (`false`) from now on.
    pub fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl Default for FlakyEmbedder {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Embedder for FlakyEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(EmbedError::Request("the embedding service is down".into()));
        }
        self.inner.embed(texts).await
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL
    }
}

/// With the embedder down, writes still succeed and their records wait;
/// once it is back, `embed_pending` embeds them batch by batch (nothing
/// rewritten) until none waits. `factory` returns fresh stores embedding
/// with the embedder it is given.
pub async fn vectors_wait_for_a_failed_embedder<F, Fut>(factory: F)
where
    F: Fn(Arc<dyn Embedder>) -> Fut,
    Fut: Future<Output = Stores>,
{
    let flaky = FlakyEmbedder::new();
    let s = factory(Arc::new(flaky.clone())).await;
    let a = agent("a");
    flaky.fail(true);
    for i in 0..5 {
        s.facts
            .store(
                &a,
                internal_fact(&format!("f{i}"), &format!("fact number {i}")),
            )
            .await
            .expect("a write succeeds while the embedder is down");
    }
    s.insights
        .store(&a, Insight::new("i1", "a", "webinar leads convert", 0.8))
        .await
        .unwrap();
    let before = s.facts.get(&a, "f3").await.unwrap().unwrap();
    let status = s.vectors.vector_status(&sys()).await.unwrap();
    assert_eq!((status.embedded(), status.pending()), (0, 6));
    assert!(
        s.vectors.embed_pending(&sys(), 4).await.is_err(),
        "still down: the batch fails, nothing changes"
    );
    flaky.fail(false);
    let mut batches = Vec::new();
    loop {
        let n = s.vectors.embed_pending(&sys(), 4).await.unwrap();
        if n == 0 {
            break;
        }
        batches.push(n);
    }
    assert_eq!(batches, [4, 2]);
    let status = s.vectors.vector_status(&sys()).await.unwrap();
    assert_eq!((status.embedded(), status.pending()), (6, 0));
    let got = s
        .vectors
        .vectors(&a, HashEmbedder::MODEL, "fact", &["f3".into()])
        .await
        .unwrap();
    assert_eq!(got[0].vector, vector("fact number 3"));
    let after = s.facts.get(&a, "f3").await.unwrap().unwrap();
    assert_eq!(
        after.meta.updated_at, before.meta.updated_at,
        "reindexing does not rewrite the record"
    );
}
