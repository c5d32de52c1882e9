//! The randomized leak check of knowledge search (the `knowledge` kind of
//! the registry), in every retrieval mode.

use std::future::Future;

use openvibe_protocols::{NewKnowledge, StoreError, Stores};

use super::draw::{Rng, WORDS, leak_seed, random_caller};

/// Randomized leak check of knowledge search in every retrieval mode (full
/// text, vector, hybrid): random writers, readers, public flags and
/// queries; a hit the reader may not read (by `get_knowledge`, the single
/// record rule) or another owner's private record is a leak; a vector
/// search asking for everything returns exactly what the reader may read,
/// and a full-text one at least every readable record holding a query term.
pub async fn governance_hybrid_search_leak_check<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::testing::HashEmbedder;
    use openvibe_protocols::{KnowledgeQuery, RetrievalMode};
    use openvibe_retrieval::query_terms;
    let seed = leak_seed();
    eprintln!("hybrid search leak check: seed {seed} (OPENVIBE_LEAK_SEED={seed} reproduces it)");
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    let s = factory().await;
    let embedder = HashEmbedder::new(crate::semantic::DIMENSIONS);
    let mut stored: Vec<(String, String)> = Vec::new();
    for i in 0..120 {
        let writer = random_caller(&mut rng);
        let words: Vec<&str> = (0..2).map(|_| *rng.pick(WORDS)).collect();
        let content = format!("{} {i}", words.join(" "));
        let input = NewKnowledge {
            is_public: rng.chance(30),
            embedding: Some(embedder.vector(&content)),
            ..NewKnowledge::new(content.clone())
        };
        match s.knowledge.store_knowledge(&writer, input).await {
            Ok(k) => stored.push((k.id, content)),
            Err(StoreError::Unauthorized { .. }) => {}
            Err(e) => panic!("seed {seed}: store knowledge {i}: {e}"),
        }
    }
    assert!(stored.len() > 20, "seed {seed}: too few stored");
    let modes = [
        RetrievalMode::FullText,
        RetrievalMode::Vector,
        RetrievalMode::Hybrid,
    ];
    let mut found = 0;
    for _ in 0..90 {
        let reader = random_caller(&mut rng);
        let include_public = rng.chance(50);
        let mode = *rng.pick(&modes);
        let text = format!("{} {}", rng.pick(WORDS), rng.below(120));
        let q = KnowledgeQuery {
            include_public,
            top_k: 500,
            ..KnowledgeQuery::by_text(text.clone()).mode(mode)
        };
        let got: std::collections::BTreeSet<String> = s
            .knowledge
            .query_knowledge(&reader, &q)
            .await
            .unwrap()
            .into_iter()
            .map(|h| h.knowledge.id)
            .collect();
        let mut visible = std::collections::BTreeSet::new();
        let terms = query_terms(&text);
        let mut matching = std::collections::BTreeSet::new();
        for (id, content) in &stored {
            let Some(k) = s.knowledge.get_knowledge(&reader, id).await.unwrap() else {
                continue;
            };
            if include_public || reader.is_owner(&k.meta.owner) {
                visible.insert(id.clone());
                if query_terms(content).iter().any(|t| terms.contains(t)) {
                    matching.insert(id.clone());
                }
            }
        }
        let leaked: Vec<&String> = got.difference(&visible).collect();
        assert!(
            leaked.is_empty(),
            "seed {seed}: {mode:?} search {text:?} (public {include_public}) as {reader:?} leaked {leaked:?}"
        );
        match mode {
            RetrievalMode::Vector => {
                assert_eq!(got, visible, "seed {seed}: {mode:?} as {reader:?}")
            }
            _ => assert!(
                matching.is_subset(&got),
                "seed {seed}: {mode:?} search {text:?} as {reader:?} missed {:?}",
                matching.difference(&got).collect::<Vec<_>>()
            ),
        }
        found += got.len();
    }
    assert!(found > 0, "seed {seed}: the searches found nothing at all");
}
