//! Semantic memory: upsert without duplicates, privacy, identity, filters,
//! bad input; the source design's tests.
//!
//! Backends run these with their knowledge store embedding with
//! [`HashEmbedder`] of 384 dimensions (checked by the first case).

use std::future::Future;

use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{
    CallerContext, KnowledgeHit, KnowledgeQuery, NewKnowledge, NewPlan, NewSession, RetrievalMode,
    Retriever, Stores, content_hash,
};
use serde_json::json;

use crate::support::{is_invalid, is_not_found, is_unauthorized};

/// The dimension conformance factories configure.
pub const DIMENSIONS: usize = 384;

fn user(id: &str) -> CallerContext {
    CallerContext::user(id).with_tenant("t1")
}

fn vector(text: &str) -> Vec<f32> {
    HashEmbedder::new(DIMENSIONS).vector(text)
}

pub(crate) fn knowledge(content: &str) -> NewKnowledge {
    NewKnowledge {
        embedding: Some(vector(content)),
        ..NewKnowledge::new(content)
    }
}

/// Same call twice: the same id and one record, by external id (content
/// updated) or by content hash.
pub async fn semantic_upsert_without_duplicates<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let k = &s.knowledge;
    assert_eq!(k.embedding_model(), (HashEmbedder::MODEL, DIMENSIONS));
    let v1 = k
        .store_knowledge(
            &user("user-1"),
            NewKnowledge {
                external_id: Some("doc-docker".into()),
                ..knowledge("Docker v1")
            },
        )
        .await
        .unwrap();
    let v2 = k
        .store_knowledge(
            &user("user-1"),
            NewKnowledge {
                external_id: Some("doc-docker".into()),
                ..knowledge("Docker v2")
            },
        )
        .await
        .unwrap();
    assert_eq!(v1.id, v2.id, "upsert on external id");
    assert_eq!(v2.content, "Docker v2");
    assert_eq!(v2.content_hash, content_hash("Docker v2"));
    assert_eq!(v2.meta.created_at, v1.meta.created_at);
    let content = "Python was created by Guido";
    let a = k
        .store_knowledge(&user("user-1"), knowledge(content))
        .await
        .unwrap();
    let b = k
        .store_knowledge(&user("user-1"), knowledge(content))
        .await
        .unwrap();
    assert_eq!(a.id, b.id, "upsert on content hash");
    // Another user's identical content is their own record.
    let c = k
        .store_knowledge(&user("user-2"), knowledge(content))
        .await
        .unwrap();
    assert_ne!(c.id, a.id);
    let all = k
        .query_knowledge(
            &user("user-1"),
            &KnowledgeQuery {
                top_k: 100,
                ..KnowledgeQuery::by_embedding(vector("docker python"))
            },
        )
        .await
        .unwrap();
    assert_eq!(all.len(), 2, "one record per upsert key: {all:?}");
    let got = k
        .get_knowledge(&user("user-1"), &v1.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.content, "Docker v2");
    assert_eq!(got.embedding.len(), DIMENSIONS);
}

/// Private by default, public when asked; queries return the caller's own
/// plus (optionally) public knowledge, never another user's private.
pub async fn semantic_privacy<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let k = &s.knowledge;
    let private = k
        .store_knowledge(&user("alice"), knowledge("Alice's private research"))
        .await
        .unwrap();
    assert!(!private.is_public);
    assert_eq!(private.meta.owner, "user:alice");
    let public = k
        .store_knowledge(
            &user("bob"),
            NewKnowledge {
                is_public: true,
                ..knowledge("Bob's public best practices")
            },
        )
        .await
        .unwrap();
    assert!(public.is_public);
    k.store_knowledge(&user("bob"), knowledge("Bob's private notes"))
        .await
        .unwrap();
    let q = |include_public| KnowledgeQuery {
        include_public,
        top_k: 10,
        ..KnowledgeQuery::by_embedding(vector("research practices notes"))
    };
    let owners = |hits: Vec<openvibe_protocols::KnowledgeHit>| {
        let mut v: Vec<(String, bool)> = hits
            .into_iter()
            .map(|h| (h.knowledge.meta.owner, h.knowledge.is_public))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        owners(k.query_knowledge(&user("alice"), &q(false)).await.unwrap()),
        vec![("user:alice".to_owned(), false)]
    );
    assert_eq!(
        owners(k.query_knowledge(&user("alice"), &q(true)).await.unwrap()),
        vec![
            ("user:alice".to_owned(), false),
            ("user:bob".to_owned(), true)
        ]
    );
    assert!(
        k.query_knowledge(&user("carol"), &q(false))
            .await
            .unwrap()
            .is_empty()
    );
    // Clearance does not open private knowledge, and neither does get.
    let cleared = CallerContext::system().with_tenant("t1");
    let seen = owners(k.query_knowledge(&cleared, &q(true)).await.unwrap());
    assert_eq!(seen, vec![("user:bob".to_owned(), true)]);
    assert_eq!(
        k.get_knowledge(&user("bob"), &private.id).await.unwrap(),
        None
    );
    assert!(
        k.get_knowledge(&user("carol"), &public.id)
            .await
            .unwrap()
            .is_some()
    );
    // Another tenant sees nothing.
    let elsewhere = CallerContext::user("alice").with_tenant("t2");
    assert!(
        k.query_knowledge(&elsewhere, &q(true))
            .await
            .unwrap()
            .is_empty()
    );
    // Only the owner deletes.
    assert!(is_unauthorized(
        k.delete_knowledge(&user("carol"), &public.id).await
    ));
    assert!(is_not_found(
        k.delete_knowledge(&user("bob"), &private.id).await
    ));
    k.delete_knowledge(&user("alice"), &private.id)
        .await
        .unwrap();
    assert_eq!(
        k.get_knowledge(&user("alice"), &private.id).await.unwrap(),
        None
    );
}

/// A `user_id` must be the caller; otherwise refused and nothing written.
pub async fn semantic_identity_comes_from_the_caller<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let k = &s.knowledge;
    let spoofed = NewKnowledge {
        user_id: Some("bob".into()),
        ..knowledge("I am Bob, honestly")
    };
    assert!(is_unauthorized(
        k.store_knowledge(&user("alice"), spoofed).await
    ));
    let own = NewKnowledge {
        user_id: Some("alice".into()),
        ..knowledge("I am Alice")
    };
    let stored = k.store_knowledge(&user("alice"), own).await.unwrap();
    assert_eq!(stored.meta.owner, "user:alice");
    let everything = KnowledgeQuery {
        top_k: 10,
        ..KnowledgeQuery::by_embedding(vector("I am Alice Bob honestly"))
    };
    let hits = k
        .query_knowledge(&user("alice"), &everything)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "the refused write left nothing");
    assert!(is_unauthorized(
        k.query_knowledge(
            &user("alice"),
            &KnowledgeQuery {
                user_id: Some("bob".into()),
                ..everything.clone()
            }
        )
        .await
    ));
}

/// Nearest first with scores; top k; filters on tags, source, plan and
/// session; a text query is embedded by the store.
pub async fn semantic_query_filters_and_order<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let k = &s.knowledge;
    let alice = user("alice");
    let session = s
        .working
        .create_session(&alice, NewSession::default())
        .await
        .unwrap();
    let plan = s
        .working
        .create_plan(
            &alice,
            NewPlan {
                goal_event: "g".into(),
                ..NewPlan::default()
            },
        )
        .await
        .unwrap();
    let items = [
        ("docker containers run images", "docs", vec!["ops"]),
        (
            "kubernetes schedules containers",
            "docs",
            vec!["ops", "k8s"],
        ),
        ("python was created by guido", "wiki", vec!["lang"]),
        ("rust has no garbage collector", "wiki", vec!["lang"]),
    ];
    for (i, (content, source, tags)) in items.iter().enumerate() {
        k.store_knowledge(
            &alice,
            NewKnowledge {
                source: Some((*source).into()),
                tags: tags.iter().map(|t| (*t).to_owned()).collect(),
                plan_id: (i == 0).then(|| plan.id.clone()),
                session_id: (i == 1).then(|| session.id.clone()),
                metadata: json!({"n": i}),
                ..NewKnowledge::new(*content)
            },
        )
        .await
        .unwrap();
    }
    let hits = k
        .query_knowledge(
            &alice,
            &KnowledgeQuery::by_text("Docker containers run images").mode(RetrievalMode::Vector),
        )
        .await
        .unwrap();
    assert_eq!(hits.len(), 4);
    assert_eq!(hits[0].knowledge.content, "docker containers run images");
    assert!(
        (hits[0].score - 1.0).abs() < 1e-4,
        "the same text: {}",
        hits[0].score
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits[1].score < hits[0].score);
    let top = |q: KnowledgeQuery| {
        let k = k.clone();
        let alice = alice.clone();
        async move {
            k.query_knowledge(&alice, &q)
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.knowledge.content)
                .collect::<Vec<_>>()
        }
    };
    let base = KnowledgeQuery::by_embedding(vector("containers"));
    assert_eq!(
        top(KnowledgeQuery {
            top_k: 1,
            ..base.clone()
        })
        .await
        .len(),
        1
    );
    let mut by_tag = top(KnowledgeQuery {
        tags: vec!["k8s".into(), "lang".into()],
        ..base.clone()
    })
    .await;
    by_tag.sort();
    assert_eq!(
        by_tag,
        vec![
            "kubernetes schedules containers",
            "python was created by guido",
            "rust has no garbage collector"
        ]
    );
    assert_eq!(
        top(KnowledgeQuery {
            source: Some("docs".into()),
            top_k: 10,
            ..base.clone()
        })
        .await
        .len(),
        2
    );
    assert_eq!(
        top(KnowledgeQuery {
            plan_id: Some(plan.id.clone()),
            ..base.clone()
        })
        .await,
        vec!["docker containers run images"]
    );
    assert_eq!(
        top(KnowledgeQuery {
            session_id: Some(session.id.clone()),
            ..base.clone()
        })
        .await,
        vec!["kubernetes schedules containers"]
    );
    // The filters hold for full text too ("containers" is in the first two).
    let text = KnowledgeQuery::by_text("containers").mode(RetrievalMode::FullText);
    for (filtered, expected) in [
        (
            KnowledgeQuery {
                tags: vec!["k8s".into()],
                ..text.clone()
            },
            vec!["kubernetes schedules containers"],
        ),
        (
            KnowledgeQuery {
                plan_id: Some(plan.id.clone()),
                ..text.clone()
            },
            vec!["docker containers run images"],
        ),
        (
            KnowledgeQuery {
                session_id: Some(session.id.clone()),
                ..text.clone()
            },
            vec!["kubernetes schedules containers"],
        ),
        (
            KnowledgeQuery {
                source: Some("wiki".into()),
                ..text.clone()
            },
            vec![],
        ),
    ] {
        assert_eq!(top(filtered.clone()).await, expected, "{filtered:?}");
    }
    // Deleting the plan keeps its knowledge, detached.
    s.working.delete_plan(&alice, &plan.id).await.unwrap();
    assert!(
        top(KnowledgeQuery {
            plan_id: Some(plan.id.clone()),
            ..base
        })
        .await
        .is_empty()
    );
}

/// Hybrid retrieval: full text (BM25 over stemmed terms) and vectors,
/// fused; each hit says which retriever found it and where; the same
/// order on every backend; the caller's access rules hold in every mode.
pub async fn semantic_hybrid_retrieval<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let k = &s.knowledge;
    let alice = user("alice");
    for content in [
        "docker containers run images",
        "kubernetes schedules containers",
        "python was created by guido",
        "rust has no garbage collector",
        "the garbage truck comes on tuesday",
    ] {
        k.store_knowledge(&alice, knowledge(content)).await.unwrap();
    }
    k.store_knowledge(&user("bob"), knowledge("bob keeps secret containers"))
        .await
        .unwrap();
    k.store_knowledge(
        &user("bob"),
        NewKnowledge {
            is_public: true,
            ..knowledge("a public guide to containers")
        },
    )
    .await
    .unwrap();
    let ask = |q: KnowledgeQuery| {
        let k = k.clone();
        let alice = alice.clone();
        async move { k.query_knowledge(&alice, &q).await.unwrap() }
    };
    let contents = |hits: &[KnowledgeHit]| -> Vec<String> {
        hits.iter().map(|h| h.knowledge.content.clone()).collect()
    };

    // Full text: stems match ("container" finds "containers"); nothing
    // without a shared term (or a term the query expansion adds); BM25
    // scores, the same order on every backend.
    let full = ask(KnowledgeQuery {
        include_public: false,
        ..KnowledgeQuery::by_text("container").mode(RetrievalMode::FullText)
    })
    .await;
    assert_eq!(
        contents(&full),
        vec![
            "docker containers run images",
            "kubernetes schedules containers",
        ]
    );
    for (i, hit) in full.iter().enumerate() {
        assert_eq!(hit.retrievers.len(), 1, "{hit:?}");
        assert_eq!(hit.retrievers[0].retriever, Retriever::FullText);
        assert_eq!(hit.retrievers[0].rank as usize, i + 1);
        assert!(hit.score > 0.0 && hit.score == hit.retrievers[0].score);
    }
    assert!(full[0].score > full[1].score);
    // With public knowledge asked for: bob's public guide, never his private note.
    let with_public = ask(KnowledgeQuery {
        include_public: true,
        ..KnowledgeQuery::by_text("containers").mode(RetrievalMode::FullText)
    })
    .await;
    let found = contents(&with_public);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.contains(&"a public guide to containers".to_owned()));
    assert!(!found.iter().any(|c| c.contains("secret")), "{found:?}");

    // Vectors only: every readable record (alice's five and bob's public
    // one: public knowledge is included by default), most similar first.
    let nearest =
        ask(KnowledgeQuery::by_text("rust garbage collector").mode(RetrievalMode::Vector)).await;
    assert_eq!(nearest.len(), 6);
    assert_eq!(
        nearest[0].knowledge.content,
        "rust has no garbage collector"
    );
    assert!(nearest.iter().all(|h| h.retrievers.len() == 1
        && h.retrievers[0].retriever == Retriever::Vector
        && h.retrievers[0].score == h.score));
    assert!(nearest.windows(2).all(|w| w[0].score >= w[1].score));

    // Hybrid (the default): found by both comes first and carries both
    // retrievers' ranks; what only the vectors found follows.
    let hybrid = ask(KnowledgeQuery::by_text("rust garbage collector")).await;
    assert_eq!(hybrid.len(), 6);
    assert_eq!(hybrid[0].knowledge.content, "rust has no garbage collector");
    let sources: Vec<Retriever> = hybrid[0].retrievers.iter().map(|r| r.retriever).collect();
    assert_eq!(sources, vec![Retriever::FullText, Retriever::Vector]);
    assert!(hybrid[0].retrievers.iter().all(|r| r.rank == 1));
    assert_eq!(
        hybrid[1].knowledge.content,
        "the garbage truck comes on tuesday",
        "the other full-text match: {:?}",
        contents(&hybrid)
    );
    assert_eq!(hybrid[1].retrievers[0].retriever, Retriever::FullText);
    assert!(hybrid.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hybrid[2..].iter().all(|h| {
        h.retrievers
            .iter()
            .all(|r| r.retriever == Retriever::Vector)
    }));
    // The same query again: the same order and scores.
    let again = ask(KnowledgeQuery::by_text("rust garbage collector")).await;
    assert_eq!(contents(&again), contents(&hybrid));
    assert_eq!(
        again.iter().map(|h| h.score).collect::<Vec<_>>(),
        hybrid.iter().map(|h| h.score).collect::<Vec<_>>()
    );
    // top_k cuts the fused list.
    let two = ask(KnowledgeQuery {
        top_k: 2,
        ..KnowledgeQuery::by_text("rust garbage collector")
    })
    .await;
    assert_eq!(contents(&two), contents(&hybrid)[..2].to_vec());
    // An embedding without text is a vector search.
    let by_vector = ask(KnowledgeQuery::by_embedding(vector(
        "rust garbage collector",
    )))
    .await;
    assert!(
        by_vector
            .iter()
            .all(|h| h.retrievers[0].retriever == Retriever::Vector)
    );
    // Full text needs a text: a typed error.
    assert!(is_invalid(
        k.query_knowledge(
            &alice,
            &KnowledgeQuery::by_embedding(vector("containers")).mode(RetrievalMode::FullText)
        )
        .await
    ));
    // A text of stop words only finds nothing by full text.
    assert!(
        ask(KnowledgeQuery::by_text("the and of").mode(RetrievalMode::FullText))
            .await
            .is_empty()
    );
    // Another user sees only their own (and public) knowledge, in every mode.
    for mode in [
        RetrievalMode::FullText,
        RetrievalMode::Vector,
        RetrievalMode::Hybrid,
    ] {
        let hits = k
            .query_knowledge(
                &user("carol"),
                &KnowledgeQuery {
                    include_public: true,
                    ..KnowledgeQuery::by_text("containers garbage").mode(mode)
                },
            )
            .await
            .unwrap();
        assert_eq!(
            contents(&hits),
            vec!["a public guide to containers"],
            "{mode:?}"
        );
    }
}

/// Bad input gets a typed error and writes nothing: empty or over-long
/// content, NUL bytes, wrong dimensions, non-finite values, unknown plan or
/// session.
pub async fn semantic_bad_input_writes_nothing<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let k = &s.knowledge;
    let alice = user("alice");
    let mut nan = vector("x");
    nan[3] = f32::NAN;
    let mut inf = vector("x");
    inf[0] = f32::INFINITY;
    let bad = [
        NewKnowledge::new(""),
        NewKnowledge::new("   "),
        NewKnowledge::new("nul \u{0} byte"),
        NewKnowledge::new("x".repeat(openvibe_protocols::MAX_CONTENT_LEN + 1)),
        NewKnowledge {
            embedding: Some(vec![0.5; DIMENSIONS - 1]),
            ..NewKnowledge::new("short vector")
        },
        NewKnowledge {
            embedding: Some(nan),
            ..NewKnowledge::new("nan")
        },
        NewKnowledge {
            embedding: Some(inf),
            ..NewKnowledge::new("inf")
        },
        NewKnowledge {
            tags: vec!["t\u{0}".into()],
            ..knowledge("nul tag")
        },
        NewKnowledge {
            metadata: json!("not an object"),
            ..knowledge("bad metadata")
        },
    ];
    for input in bad {
        let content = input.content.chars().take(20).collect::<String>();
        let result = k.store_knowledge(&alice, input).await;
        assert!(is_invalid(result), "{content:?}");
    }
    assert!(is_not_found(
        k.store_knowledge(
            &alice,
            NewKnowledge {
                plan_id: Some("nope".into()),
                ..knowledge("unknown plan")
            }
        )
        .await
    ));
    assert!(is_not_found(
        k.store_knowledge(
            &alice,
            NewKnowledge {
                session_id: Some("nope".into()),
                ..knowledge("unknown session")
            }
        )
        .await
    ));
    assert!(is_invalid(
        k.query_knowledge(&alice, &KnowledgeQuery::by_embedding(vec![1.0; 3]))
            .await
    ));
    let hits = k
        .query_knowledge(
            &alice,
            &KnowledgeQuery {
                top_k: 100,
                ..KnowledgeQuery::by_text("anything at all")
            },
        )
        .await
        .unwrap();
    assert!(hits.is_empty(), "nothing was written: {hits:?}");
}
