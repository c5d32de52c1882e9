//! A model change on PostgreSQL: the new model gets its own side table,
//! every record waits for it (knowledge stays listed and found by full
//! text meanwhile), a reindex embeds them without rewriting one, and the
//! old model's vectors stay where they were.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_postgres::PgStores;
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{
    CallerContext, EmbedError, Embedder, Episode, Fact, Insight, KnowledgeQuery, KnowledgeStore,
    NewKnowledge, RecordStore, RecordVectors, RetrievalMode, Retriever,
};

/// A second model: hashed vectors of another size, under another name.
struct Other(HashEmbedder);

#[async_trait]
impl Embedder for Other {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0.embed(texts).await
    }
    fn dimensions(&self) -> usize {
        self.0.dimensions()
    }
    fn model_id(&self) -> &str {
        "openvibe-test-hash-32"
    }
}

#[tokio::test]
async fn a_model_change_reembeds_without_rewriting_records() {
    if openvibe_memory_testkit::skip::database_url().is_none() {
        return;
    }
    let first = common::fresh_stores()
        .await
        .with_embedder(Arc::new(HashEmbedder::new(384)))
        .await
        .unwrap();
    let user = CallerContext::user("ann").with_tenant("t1");
    let sys = CallerContext::system().with_tenant("t1");
    first
        .facts()
        .store(&user, Fact::new("f1", "Acme runs Snowflake"))
        .await
        .unwrap();
    let stored = first
        .knowledge()
        .store_knowledge(&user, NewKnowledge::new("Docker packs containers"))
        .await
        .unwrap();
    let before = first.facts().get(&user, "f1").await.unwrap().unwrap();

    let second = PgStores::from_pool(first.pool().clone())
        .with_embedder(Arc::new(Other(HashEmbedder::new(32))))
        .await
        .unwrap();
    let status = second.vectors().vector_status(&sys).await.unwrap();
    assert_eq!(status.model.as_deref(), Some("openvibe-test-hash-32"));
    assert_eq!((status.embedded(), status.pending()), (0, 2), "{status:?}");
    let listed = second
        .knowledge()
        .get_knowledge(&user, &stored.id)
        .await
        .unwrap()
        .expect("knowledge without a vector of the new model is still there");
    assert!(listed.embedding.is_empty());
    let by_text = second
        .knowledge()
        .query_knowledge(
            &user,
            &KnowledgeQuery::by_text("docker").mode(RetrievalMode::FullText),
        )
        .await
        .unwrap();
    assert_eq!(by_text.len(), 1, "found by full text meanwhile");

    let mut batches = Vec::new();
    loop {
        let n = second.vectors().embed_pending(&sys, 1).await.unwrap();
        if n == 0 {
            break;
        }
        batches.push(n);
    }
    assert_eq!(batches, [1, 1]);
    assert_eq!(
        second
            .vectors()
            .vector_status(&sys)
            .await
            .unwrap()
            .pending(),
        0
    );
    let hits = second
        .knowledge()
        .query_knowledge(
            &user,
            &KnowledgeQuery::by_text("docker containers").mode(RetrievalMode::Vector),
        )
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].retrievers[0].retriever, Retriever::Vector);
    assert_eq!(hits[0].knowledge.embedding.len(), 32);
    let after = second.facts().get(&user, "f1").await.unwrap().unwrap();
    assert_eq!(
        after.meta.updated_at, before.meta.updated_at,
        "not rewritten"
    );
    let old = first
        .vectors()
        .vectors(&user, HashEmbedder::MODEL, "fact", &["f1".into()])
        .await
        .unwrap();
    assert_eq!(old.len(), 1, "the old model's vectors stay");
    assert_eq!(old[0].vector.len(), 384);
}

/// An embedder that is down.
struct Down;

#[async_trait]
impl Embedder for Down {
    async fn embed(&self, _texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Model("the embedding service is down".into()))
    }
    fn dimensions(&self) -> usize {
        384
    }
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL
    }
}

/// `store_batch` embeds what it wrote, as single writes do: every record
/// of the batch has a current vector of exactly its text; with the
/// embedder down the batch is stored all the same and its records wait.
#[tokio::test]
async fn batches_are_embedded_on_write() {
    if openvibe_memory_testkit::skip::database_url().is_none() {
        return;
    }
    let embedder = Arc::new(HashEmbedder::new(384));
    let pg = common::fresh_stores()
        .await
        .with_embedder(embedder.clone())
        .await
        .unwrap();
    let user = CallerContext::agent("cro").with_tenant("t1");
    let sys = CallerContext::system().with_tenant("t1");
    let facts: Vec<Fact> = (0..3)
        .map(|i| Fact::new(format!("f{i}"), format!("Acme fact number {i}")))
        .collect();
    assert_eq!(pg.facts().store_batch(&user, facts).await.unwrap(), 3);
    let insights = (0..2)
        .map(|i| Insight::new(format!("i{i}"), "cro", format!("insight {i}"), 0.5))
        .collect();
    assert_eq!(pg.insights().store_batch(&user, insights).await.unwrap(), 2);
    let episodes = (0..2)
        .map(|i| Episode {
            id: format!("e{i}"),
            agent_id: "cro".into(),
            action: "qualify".into(),
            input_summary: format!("lead {i}"),
            output_summary: "score 85".into(),
            ..Episode::default()
        })
        .collect();
    assert_eq!(pg.episodes().store_batch(&user, episodes).await.unwrap(), 2);

    let status = pg.vectors().vector_status(&sys).await.unwrap();
    assert_eq!((status.embedded(), status.pending()), (7, 0), "{status:?}");
    let ids: Vec<String> = (0..3).map(|i| format!("f{i}")).collect();
    let got = pg
        .vectors()
        .vectors(&user, HashEmbedder::MODEL, "fact", &ids)
        .await
        .unwrap();
    assert_eq!(got.len(), 3);
    for v in &got {
        let fact = pg.facts().get(&user, &v.id).await.unwrap().unwrap();
        let want = embedder.embed(&[fact.content]).await.unwrap();
        assert_eq!(v.vector, want[0], "{}", v.id);
    }
    let episode = pg.episodes().get(&user, "e1").await.unwrap().unwrap();
    let got = pg
        .vectors()
        .vectors(&user, HashEmbedder::MODEL, "episode", &["e1".into()])
        .await
        .unwrap();
    let want = embedder.embed(&[episode.searchable_text()]).await.unwrap();
    assert_eq!(got[0].vector, want[0], "an episode's searchable text");

    let down = PgStores::from_pool(pg.pool().clone())
        .with_embedder(Arc::new(Down))
        .await
        .unwrap();
    let more: Vec<Fact> = (3..5)
        .map(|i| Fact::new(format!("f{i}"), format!("Acme fact number {i}")))
        .collect();
    assert_eq!(down.facts().store_batch(&user, more).await.unwrap(), 2);
    let status = pg.vectors().vector_status(&sys).await.unwrap();
    assert_eq!((status.embedded(), status.pending()), (7, 2), "{status:?}");
    assert_eq!(pg.vectors().embed_pending(&sys, 10).await.unwrap(), 2);
}
