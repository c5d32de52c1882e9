//! Knowledge's vector search through the HNSW graph: governed inside the
//! walk (a reader gets `top_k` of what it may read whenever that many
//! exist), in step with writes, deletes and expiry, and close to the exact
//! scan over the same data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use openvibe_in_memory::{InMemoryWorkingStore, VectorSearch};
use openvibe_protocols::{CallerContext, KnowledgeQuery, KnowledgeStore, NewKnowledge};

const DIMS: usize = 384;
const ITEMS: u32 = 1_500;

fn user(i: u32) -> CallerContext {
    CallerContext::user(format!("user{i}")).with_tenant("graph")
}

/// A deterministic vector near one of 40 centres.
fn vector(seed: u32) -> Vec<f32> {
    let mut state = u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 10_000) as f32 / 10_000.0 - 0.5
    };
    let centre = seed % 40;
    (0..DIMS)
        .map(|d| {
            let c = if (d as u32 + centre * 7) % 40 < 6 {
                1.0
            } else {
                0.0
            };
            c + 0.5 * next()
        })
        .collect()
}

/// Owner of item `i`: thirty users; every fiftieth item is public; tag
/// `t<i % 7>`.
fn item(i: u32) -> (CallerContext, NewKnowledge) {
    let k = NewKnowledge {
        embedding: Some(vector(i)),
        is_public: i.is_multiple_of(50),
        tags: vec![format!("t{}", i % 7)],
        ..NewKnowledge::new(format!("item {i}"))
    };
    (user(i % 30), k)
}

async fn ids(store: &InMemoryWorkingStore, ctx: &CallerContext, q: &KnowledgeQuery) -> Vec<String> {
    store
        .query_knowledge(ctx, q)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.knowledge.content)
        .collect()
}

fn by_vector(seed: u32, top_k: usize) -> KnowledgeQuery {
    KnowledgeQuery {
        top_k,
        ..KnowledgeQuery::by_embedding(vector(seed))
    }
}

#[tokio::test]
async fn the_graph_is_governed_kept_in_step_and_close_to_the_exact_scan() {
    // Vectors are filed by reader (the public's, each owner's): a graph
    // from 16 rows gives every one of them a graph here.
    let graph =
        InMemoryWorkingStore::new().with_vector_search(VectorSearch::APPROXIMATE.exact_below(16));
    let exact = InMemoryWorkingStore::new().with_vector_search(VectorSearch::EXACT);
    let both = [&graph, &exact];
    // Record ids per store, by item.
    let mut stored: Vec<[String; 2]> = Vec::new();
    for i in 0..ITEMS {
        let (ctx, k) = item(i);
        let g = graph.store_knowledge(&ctx, k.clone()).await.unwrap().id;
        let e = exact.store_knowledge(&ctx, k).await.unwrap().id;
        stored.push([g, e]);
    }
    // user0 may read its own 50 and the 30 public: its search walks their
    // two graphs, never the other owners'.
    let readable = |content: &str| {
        let i: u32 = content.trim_start_matches("item ").parse().unwrap();
        i.is_multiple_of(30) || i.is_multiple_of(50)
    };
    let (mut same, mut total) = (0, 0);
    for seed in 0..40 {
        let q = by_vector(10_000 + seed, 10);
        let got = ids(&graph, &user(0), &q).await;
        let want = ids(&exact, &user(0), &q).await;
        assert_eq!(got.len(), 10, "top_k of what user0 may read");
        assert!(got.iter().all(|c| readable(c)), "{got:?}");
        same += got.iter().filter(|c| want.contains(c)).count();
        total += want.len();
    }
    assert!(
        same * 100 >= total * 95,
        "{same} of {total} as the exact scan"
    );

    // A filter inside the walk: one tag in seven. The walks pass over the
    // other six and still return as many as the exact scan (every tagged
    // record user0 may read, or `top_k` of them).
    let tagged = |content: &str| {
        let i: u32 = content.trim_start_matches("item ").parse().unwrap();
        i % 7 == 1
    };
    for seed in 0..20 {
        let q = KnowledgeQuery {
            tags: vec!["t1".into()],
            ..by_vector(30_000 + seed, 5)
        };
        let got = ids(&graph, &user(0), &q).await;
        let want = ids(&exact, &user(0), &q).await;
        assert_eq!(got.len(), 5, "{want:?}");
        assert_eq!(got.len(), want.len());
        assert!(got.iter().all(|c| readable(c) && tagged(c)), "{got:?}");
    }

    // A reader of three private records, public ones left out: exactly those
    // three, however far apart in the graph.
    let lonely = CallerContext::user("lonely").with_tenant("graph");
    for seed in [3, 17, 29] {
        let k = NewKnowledge {
            embedding: Some(vector(seed)),
            ..NewKnowledge::new(format!("lonely {seed}"))
        };
        graph.store_knowledge(&lonely, k).await.unwrap();
    }
    let q = KnowledgeQuery {
        include_public: false,
        ..by_vector(5, 10)
    };
    let got: BTreeSet<String> = ids(&graph, &lonely, &q).await.into_iter().collect();
    assert_eq!(
        got,
        BTreeSet::from(["lonely 3".into(), "lonely 17".into(), "lonely 29".into()])
    );

    // Deleted: never again; rewritten with another vector: found there.
    let q = by_vector(10_001, 5);
    let first = ids(&graph, &user(0), &q).await;
    for content in &first[..3] {
        let i: usize = content.trim_start_matches("item ").parse().unwrap();
        let owner = item(i as u32).0;
        for (s, store) in both.iter().enumerate() {
            store.delete_knowledge(&owner, &stored[i][s]).await.unwrap();
        }
    }
    let after = ids(&graph, &user(0), &q).await;
    assert_eq!(after.len(), 5);
    assert!(first[..3].iter().all(|c| !after.contains(c)));
    for store in both {
        let moved = NewKnowledge {
            embedding: Some(vector(777_777)),
            ..NewKnowledge::new("item 60")
        };
        store.store_knowledge(&user(0), moved).await.unwrap();
    }
    assert_eq!(
        ids(&graph, &user(0), &by_vector(777_777, 1)).await,
        ["item 60"]
    );

    // Expired: gone from the walk without a sweep.
    let soon = NewKnowledge {
        embedding: Some(vector(888_888)),
        expires_at: Some(chrono::Utc::now() + chrono::Duration::milliseconds(300)),
        ..NewKnowledge::new("short-lived")
    };
    graph.store_knowledge(&user(0), soon).await.unwrap();
    assert_eq!(
        ids(&graph, &user(0), &by_vector(888_888, 1)).await,
        ["short-lived"]
    );
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_ne!(
        ids(&graph, &user(0), &by_vector(888_888, 1)).await,
        ["short-lived"]
    );

    // Most records deleted (the graph is rebuilt without them): the rest
    // are still found, as the exact scan finds them.
    for i in (0..ITEMS).filter(|i| i % 5 != 0 && *i != 60) {
        let owner = item(i).0;
        for (s, store) in both.iter().enumerate() {
            // Some were deleted above.
            let _ = store.delete_knowledge(&owner, &stored[i as usize][s]).await;
        }
    }
    let (mut same, mut total) = (0, 0);
    for seed in 0..20 {
        let q = by_vector(20_000 + seed, 10);
        let got = ids(&graph, &user(0), &q).await;
        let want = ids(&exact, &user(0), &q).await;
        assert_eq!(got.len(), want.len());
        assert!(got.iter().all(|c| readable(c)), "{got:?}");
        same += got.iter().filter(|c| want.contains(c)).count();
        total += want.len();
    }
    assert!(
        same * 100 >= total * 95,
        "{same} of {total} after the rebuild"
    );
}
