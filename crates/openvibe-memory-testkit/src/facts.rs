//! Facts: writes, filters, order, limits, access tracking, update and delete.

use std::future::Future;

use openvibe_protocols::{Classification, Fact, FactQuery, Stores};

use crate::support::{agent, at, fact_ids, is_invalid, is_not_found, sys, t0};

/// `store` returns the stored fact and `get` returns the same.
pub async fn fact_store_then_get<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let stored = s
        .facts
        .store(
            &sys(),
            Fact::new("f1", "Acme has 200 employees")
                .entity("acme")
                .domain("customer"),
        )
        .await
        .unwrap();
    assert_eq!(stored.id, "f1");
    assert_eq!(
        stored.content_hash.as_deref(),
        Some(openvibe_protocols::content_hash("Acme has 200 employees").as_str())
    );
    let got = s
        .facts
        .get(&sys(), "f1")
        .await
        .unwrap()
        .expect("stored fact");
    assert_eq!(got, stored);
    // Tags that look like array syntax or SQL NULL come back as written.
    let odd = vec![
        "NULL".to_owned(),
        "a,b".to_owned(),
        "\"q\"".to_owned(),
        "{x}".to_owned(),
    ];
    let stored = s
        .facts
        .store(&sys(), Fact::new("f2", "odd tags").tags(odd.clone()))
        .await
        .unwrap();
    assert_eq!(stored.tags, odd);
    let got = s.facts.get(&sys(), "f2").await.unwrap().expect("f2");
    assert_eq!(got.tags, odd);
}

/// A missing id is `None`.
pub async fn fact_get_missing_is_none<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    assert!(s.facts.get(&sys(), "missing").await.unwrap().is_none());
}

/// An empty id is replaced by a generated one.
pub async fn fact_empty_id_is_generated<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let a = s.facts.store(&sys(), Fact::new("", "one")).await.unwrap();
    let b = s.facts.store(&sys(), Fact::new("", "two")).await.unwrap();
    assert!(!a.id.is_empty());
    assert_ne!(a.id, b.id);
    assert_eq!(
        s.facts.get(&sys(), &a.id).await.unwrap().unwrap().content,
        "one"
    );
}

/// Malformed input is `InvalidInput` and stores nothing.
pub async fn fact_invalid_input_is_rejected<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for bad in [
        Fact::new("f1", "x").confidence(1.5),
        Fact::new("f1", "x").confidence(f64::NAN),
        Fact::new("f1", "x").importance(-1.0),
        Fact::new("f1", "  "),
        Fact::new("a/b", "x"),
        Fact::new("a\nb", "x"),
        Fact::new("x".repeat(openvibe_protocols::MAX_RECORD_ID_LEN + 1), "x"),
    ] {
        let id = bad.id.clone();
        assert!(is_invalid(s.facts.store(&sys(), bad).await), "{id:?}");
    }
    assert!(
        s.facts
            .query(&sys(), &FactQuery::new().limit(100))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `entity` keeps only that entity's facts.
pub async fn fact_filter_entity<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(&sys(), Fact::new("f1", "Acme info").entity("acme"))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f2", "Beta info").entity("beta"))
        .await
        .unwrap();
    let found = s
        .facts
        .query(&sys(), &FactQuery::new().entity("acme"))
        .await
        .unwrap();
    assert_eq!(fact_ids(&found), ["f1"]);
    assert!(
        s.facts
            .query(&sys(), &FactQuery::new().entity("nobody"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `general` keeps only facts that name no entity; `entity` wins over it.
pub async fn fact_filter_general<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for fact in [
        Fact::new("f1", "Acme info")
            .entity("acme")
            .domain("revenue"),
        Fact::new("f2", "Webinars convert").domain("revenue"),
        Fact::new("f3", "Brand voice").domain("marketing"),
    ] {
        s.facts.store(&sys(), fact).await.unwrap();
    }
    let general = s
        .facts
        .query(&sys(), &FactQuery::new().general().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(fact_ids(&general), ["f2"]);
    let all = s
        .facts
        .query(&sys(), &FactQuery::new().general())
        .await
        .unwrap();
    let mut all_general = fact_ids(&all);
    all_general.sort_unstable();
    assert_eq!(all_general, ["f2", "f3"]);
    let specific = s
        .facts
        .query(&sys(), &FactQuery::new().general().entity("acme"))
        .await
        .unwrap();
    assert_eq!(fact_ids(&specific), ["f1"]);
}

/// `domain` keeps only that domain's facts.
pub async fn fact_filter_domain<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(&sys(), Fact::new("f1", "Revenue data").domain("revenue"))
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("f2", "Marketing data").domain("marketing"),
        )
        .await
        .unwrap();
    let found = s
        .facts
        .query(&sys(), &FactQuery::new().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(fact_ids(&found), ["f1"]);
}

/// `tags` keeps facts with any of the tags.
pub async fn fact_filter_tags_any<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &sys(),
            Fact::new("f1", "a")
                .tags(["qualification", "lead"])
                .confidence(0.9),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("f2", "b").tags(["competitor"]).confidence(0.8),
        )
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f3", "c").tags(["other"]))
        .await
        .unwrap();
    let one = s
        .facts
        .query(&sys(), &FactQuery::new().tags(["qualification"]))
        .await
        .unwrap();
    assert_eq!(fact_ids(&one), ["f1"]);
    let any = s
        .facts
        .query(
            &sys(),
            &FactQuery::new().tags(["lead", "competitor", "missing"]),
        )
        .await
        .unwrap();
    assert_eq!(fact_ids(&any), ["f1", "f2"]);
    assert!(
        s.facts
            .query(&sys(), &FactQuery::new().tags(["missing"]))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `text`: every term must occur (case-insensitively) as a word or word prefix.
pub async fn fact_filter_text_every_term<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(&sys(), Fact::new("f1", "VP sponsor predicts conversion"))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f2", "Cold email has low response"))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f3", "A sponsor without a VP title"))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f4", "Sponsorship budgets, vp level"))
        .await
        .unwrap();
    let q = |t: &str| FactQuery::new().text(t);
    let found = s.facts.query(&sys(), &q("vp SPONSOR")).await.unwrap();
    let mut ids = fact_ids(&found);
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["f1", "f3", "f4"],
        "terms in any order, any case, prefixes count"
    );
    assert_eq!(
        fact_ids(&s.facts.query(&sys(), &q("sponsor predicts")).await.unwrap()),
        ["f1"]
    );
    assert!(
        s.facts
            .query(&sys(), &q("ponsor"))
            .await
            .unwrap()
            .is_empty(),
        "not infixes"
    );
    assert!(
        s.facts
            .query(&sys(), &q("sponsor missing"))
            .await
            .unwrap()
            .is_empty(),
        "every term"
    );
    assert_eq!(
        s.facts.query(&sys(), &q("  ")).await.unwrap().len(),
        4,
        "no terms: no filter"
    );
}

/// `min_confidence` keeps facts at or above it.
pub async fn fact_filter_min_confidence<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(&sys(), Fact::new("f1", "High").confidence(0.9))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f2", "Edge").confidence(0.5))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("f3", "Low").confidence(0.3))
        .await
        .unwrap();
    let found = s
        .facts
        .query(&sys(), &FactQuery::new().min_confidence(0.5))
        .await
        .unwrap();
    assert_eq!(fact_ids(&found), ["f1", "f2"]);
}

/// `since` keeps facts created at or after it.
pub async fn fact_filter_since<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(&sys(), Fact::new("old", "x").created_at(at(0)))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("edge", "x").created_at(at(10)))
        .await
        .unwrap();
    s.facts
        .store(&sys(), Fact::new("new", "x").created_at(at(20)))
        .await
        .unwrap();
    let found = s
        .facts
        .query(&sys(), &FactQuery::new().since(at(10)))
        .await
        .unwrap();
    assert_eq!(fact_ids(&found), ["new", "edge"]);
}

/// All filters apply together.
pub async fn fact_filters_combine<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let base = || {
        Fact::new("", "acme revenue note")
            .entity("acme")
            .domain("revenue")
            .tags(["q"])
            .confidence(0.9)
            .created_at(at(5))
    };
    s.facts
        .store(
            &sys(),
            Fact {
                id: "hit".into(),
                ..base()
            },
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact {
                id: "e".into(),
                ..base().entity("beta")
            },
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact {
                id: "d".into(),
                ..base().domain("marketing")
            },
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact {
                id: "t".into(),
                ..base().tags(["z"])
            },
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact {
                id: "x".into(),
                content: "acme other".into(),
                ..base()
            },
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact {
                id: "c".into(),
                ..base().confidence(0.2)
            },
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact {
                id: "s".into(),
                ..base().created_at(at(0))
            },
        )
        .await
        .unwrap();
    let q = FactQuery::new()
        .entity("acme")
        .domain("revenue")
        .tags(["q"])
        .text("revenue")
        .min_confidence(0.5)
        .since(at(1));
    assert_eq!(fact_ids(&s.facts.query(&sys(), &q).await.unwrap()), ["hit"]);
}

/// Without text: confidence desc, then `created_at` desc, then id asc.
pub async fn fact_order_confidence_recency_id<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &sys(),
            Fact::new("b", "x").confidence(0.5).created_at(at(1)),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("a", "x").confidence(0.5).created_at(at(1)),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("newer", "x").confidence(0.5).created_at(at(2)),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("top", "x").confidence(0.9).created_at(at(0)),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("low", "x").confidence(0.1).created_at(at(9)),
        )
        .await
        .unwrap();
    let found = s.facts.query(&sys(), &FactQuery::new()).await.unwrap();
    assert_eq!(fact_ids(&found), ["top", "newer", "a", "b", "low"]);
    let tagged = s
        .facts
        .query(&sys(), &FactQuery::new().entity(""))
        .await
        .unwrap();
    assert_eq!(
        fact_ids(&tagged),
        fact_ids(&found),
        "an empty filter is no filter"
    );
}

/// With text: relevance first (whole-word matches beat prefix matches), then
/// confidence, recency, id.
pub async fn fact_order_relevance_first_with_text<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &sys(),
            Fact::new("prefix", "sponsorship budget").confidence(1.0),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("exact_low", "the sponsor budget").confidence(0.2),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("exact_high", "sponsor budget approved").confidence(0.8),
        )
        .await
        .unwrap();
    let found = s
        .facts
        .query(&sys(), &FactQuery::new().text("sponsor budget"))
        .await
        .unwrap();
    assert_eq!(fact_ids(&found), ["exact_high", "exact_low", "prefix"]);
}

/// `limit` caps the results (0 gives none) and keeps the top of the order.
pub async fn fact_limit<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..20 {
        s.facts
            .store(
                &sys(),
                Fact::new(format!("f{i:02}"), format!("fact {i}")).confidence(f64::from(i) / 20.0),
            )
            .await
            .unwrap();
    }
    let found = s
        .facts
        .query(&sys(), &FactQuery::new().limit(5))
        .await
        .unwrap();
    assert_eq!(fact_ids(&found), ["f19", "f18", "f17", "f16", "f15"]);
    assert!(
        s.facts
            .query(&sys(), &FactQuery::new().limit(0))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.facts
            .query(&sys(), &FactQuery::new().limit(100))
            .await
            .unwrap()
            .len(),
        20
    );
}

/// Access tracking is persisted by the store: tracked queries and `touch`
/// count; untracked reads do not.
pub async fn fact_access_tracking_is_persisted<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &sys(),
            Fact::new("f1", "tracked").classification(Classification::Public),
        )
        .await
        .unwrap();
    s.facts
        .store(
            &sys(),
            Fact::new("f2", "hidden")
                .domain("hr")
                .classification(Classification::Restricted),
        )
        .await
        .unwrap();
    let reader = agent("cro");
    let tracked = FactQuery::new().track_access(true);
    let first = s.facts.query(&reader, &tracked).await.unwrap();
    assert_eq!(first[0].access_count, 1);
    assert!(first[0].last_accessed.is_some());
    let second = s.facts.query(&reader, &tracked).await.unwrap();
    assert_eq!(second[0].access_count, 2);
    s.facts.query(&reader, &FactQuery::new()).await.unwrap();
    let got = s.facts.get(&sys(), "f1").await.unwrap().unwrap();
    assert_eq!(got.access_count, 2, "untracked reads do not count");
    let touched = s
        .facts
        .touch(&reader, &["f1".into(), "f2".into(), "missing".into()])
        .await
        .unwrap();
    assert_eq!(touched, 1, "unreadable and missing ids are not touched");
    assert_eq!(
        s.facts
            .get(&sys(), "f1")
            .await
            .unwrap()
            .unwrap()
            .access_count,
        3
    );
    assert_eq!(
        s.facts
            .get(&sys(), "f2")
            .await
            .unwrap()
            .unwrap()
            .access_count,
        0
    );
}

/// `update` replaces content and indexes but keeps owner, `created_at` and
/// access statistics.
pub async fn fact_update_replaces_and_keeps_store_fields<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let original = s
        .facts
        .store(
            &cro,
            Fact::new("f1", "Original").entity("acme").created_at(at(3)),
        )
        .await
        .unwrap();
    s.facts.touch(&cro, &["f1".into()]).await.unwrap();
    let mut changed = original.clone();
    changed.content = "Updated".into();
    changed.entity = "beta".into();
    changed.meta.created_at = at(99);
    changed.meta.owner = "agent:mallory".into();
    changed.access_count = 0;
    let updated = s.facts.update(&cro, changed).await.unwrap();
    assert_eq!(updated.content, "Updated");
    assert_eq!(updated.meta.owner, "agent:cro");
    assert_eq!(updated.meta.created_at, at(3));
    assert_eq!(updated.access_count, 1);
    assert!(updated.meta.updated_at >= original.meta.updated_at);
    assert_ne!(updated.content_hash, original.content_hash);
    assert_eq!(s.facts.get(&cro, "f1").await.unwrap().unwrap(), updated);
    assert!(
        s.facts
            .query(&cro, &FactQuery::new().entity("acme"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.facts
            .query(&cro, &FactQuery::new().entity("beta"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        s.facts
            .query(&cro, &FactQuery::new().text("original"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `update` of a missing fact is `NotFound`.
pub async fn fact_update_missing_is_not_found<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    assert!(is_not_found(
        s.facts.update(&sys(), Fact::new("nope", "x")).await
    ));
    assert!(
        s.facts.get(&sys(), "nope").await.unwrap().is_none(),
        "update does not insert"
    );
}

/// Storing the same id twice replaces it: one record, original `created_at`.
pub async fn fact_store_twice_is_an_upsert<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(&sys(), Fact::new("f1", "first").created_at(at(1)))
        .await
        .unwrap();
    let second = s
        .facts
        .store(&sys(), Fact::new("f1", "second").created_at(at(2)))
        .await
        .unwrap();
    assert_eq!(second.meta.created_at, at(1));
    let all = s
        .facts
        .query(&sys(), &FactQuery::new().limit(10))
        .await
        .unwrap();
    assert_eq!(fact_ids(&all), ["f1"]);
    assert_eq!(all[0].content, "second");
    assert!(
        s.facts
            .query(&sys(), &FactQuery::new().text("first"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `delete` removes the fact from `get` and every index; a second delete is `NotFound`.
pub async fn fact_delete_then_not_found<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &sys(),
            Fact::new("f1", "To delete")
                .entity("acme")
                .domain("d")
                .tags(["t"]),
        )
        .await
        .unwrap();
    s.facts.delete(&sys(), "f1").await.unwrap();
    assert!(s.facts.get(&sys(), "f1").await.unwrap().is_none());
    for q in [
        FactQuery::new(),
        FactQuery::new().entity("acme"),
        FactQuery::new().domain("d"),
        FactQuery::new().tags(["t"]),
        FactQuery::new().text("delete"),
    ] {
        assert!(s.facts.query(&sys(), &q).await.unwrap().is_empty(), "{q:?}");
    }
    assert!(is_not_found(s.facts.delete(&sys(), "f1").await));
    s.facts
        .store(&sys(), Fact::new("f1", "again"))
        .await
        .unwrap();
    assert_eq!(
        s.facts.get(&sys(), "f1").await.unwrap().unwrap().content,
        "again"
    );
}

/// Text terms (whole words, prefixes, non-ASCII, digits), relevance,
/// clearance, ownership and `general` agree with the reference model, for
/// several readers and queries.
pub async fn fact_queries_match_the_reference_model<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let contents = [
        "VP-sponsor signed at 2.5x the usual rate",
        "Sponsorship budgets: Ärger über Preise",
        "email alice@example.com about the renewal",
        "acme_corp renewal needs a VP",
        "Über-fast onboarding; 2x conversion",
        "cosponsor of the webinar",
        "renewals renew renewal",
    ];
    let writer = agent("writer");
    let mut stored = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        let third = [0.0, 1.0 / 3.0, 2.0 / 3.0][i % 3];
        let fact = Fact::new(format!("f{i}"), *content)
            .entity(if i % 3 == 0 { "" } else { "acme" })
            .domain(if i % 2 == 0 { "revenue" } else { "hr" })
            .tags([format!("t{}", i % 2)])
            .classification(Classification::ALL[i % 4])
            .confidence(third)
            .created_at(t0());
        stored.push(s.facts.store(&writer, fact).await.unwrap());
    }
    let readers = [
        agent("reader"),
        agent("reader").with_domain_clearance("revenue", Classification::Confidential),
        sys(),
        writer.clone(),
    ];
    let texts = [
        "",
        "sponsor",
        "vp",
        "2",
        "2x",
        "5x",
        "über",
        "ÄRGER",
        "renew",
        "renewal",
        "cosponsor",
        "ponsor",
        "the",
        "x",
        "vp sponsor",
    ];
    let mut checked = 0;
    for reader in &readers {
        for text in texts {
            for general in [false, true] {
                let mut queries = vec![FactQuery::new().text(text).limit(50)];
                queries.push(queries[0].clone().domain("revenue"));
                queries.push(queries[0].clone().tags(["t1"]).min_confidence(0.3));
                queries.push(queries[0].clone().entity("acme").limit(2));
                for mut q in queries {
                    q.general = general;
                    let got: Vec<String> = s
                        .facts
                        .query(reader, &q)
                        .await
                        .unwrap()
                        .into_iter()
                        .map(|f| f.id)
                        .collect();
                    let expected = crate::model::fact_query(&stored, reader, &q);
                    assert_eq!(got, expected, "{q:?} as {}", reader.principal());
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, readers.len() * texts.len() * 2 * 4);
}

/// The size limits of the contract hold on every backend, at the boundary
/// (limit: stored; limit + 1: `InvalidInput`, nothing written), and NUL
/// bytes are refused everywhere.
pub async fn record_limits_hold_at_the_boundary<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{Episode, Insight, MAX_LABEL_LEN, MAX_RECORD_ID_LEN, MAX_WORD_LEN};
    let s = factory().await;
    let ctx = sys();
    let label = |n: usize| "e".repeat(n);
    let ok = [
        Fact::new("x".repeat(MAX_RECORD_ID_LEN), "at the id limit"),
        Fact::new("entity-at-limit", "x").entity(label(MAX_LABEL_LEN)),
        Fact::new("tag-at-limit", "x").tags([label(MAX_LABEL_LEN)]),
        Fact::new("word-at-limit", format!("a {} b", "w".repeat(MAX_WORD_LEN))),
        // A longer word is stored, not indexed: no one searches for it.
        Fact::new(
            "word-over",
            format!("a {} zebra", "w".repeat(MAX_WORD_LEN + 1)),
        ),
    ];
    for fact in ok {
        let id = fact.id.clone();
        s.facts
            .store(&ctx, fact)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", &id[..20.min(id.len())]));
    }
    let over = [
        Fact::new("x".repeat(MAX_RECORD_ID_LEN + 1), "over the id limit"),
        Fact::new("entity-over", "x").entity(label(MAX_LABEL_LEN + 1)),
        Fact::new("domain-over", "x").domain(label(MAX_LABEL_LEN + 1)),
        Fact::new("tag-over", "x").tags([label(MAX_LABEL_LEN + 1)]),
        Fact::new("source-over", "x").source(label(MAX_LABEL_LEN + 1)),
        Fact::new("nul", "a \u{0} b"),
        Fact::new("nul-entity", "x").entity("a\u{0}"),
    ];
    for fact in over {
        let id = fact.id.clone();
        assert!(
            is_invalid(s.facts.store(&ctx, fact).await),
            "{}",
            &id[..20.min(id.len())]
        );
        if id.len() <= MAX_RECORD_ID_LEN {
            assert_eq!(s.facts.get(&ctx, &id).await.unwrap(), None, "{id}");
        }
    }
    let insight = Insight::new("i-over", label(MAX_LABEL_LEN + 1), "x", 0.5);
    assert!(is_invalid(s.insights.store(&ctx, insight).await));
    assert_eq!(s.insights.get(&ctx, "i-over").await.unwrap(), None);
    let episode = Episode {
        id: "ep-over".into(),
        operator_id: label(MAX_LABEL_LEN + 1),
        ..Episode::default()
    };
    assert!(is_invalid(s.episodes.store(&ctx, episode).await));
    let episode = Episode {
        id: "ep-nul".into(),
        outcome: serde_json::json!({"k": "a\u{0}"}),
        ..Episode::default()
    };
    assert!(is_invalid(s.episodes.store(&ctx, episode).await));
    assert_eq!(s.episodes.get(&ctx, "ep-over").await.unwrap(), None);
    assert_eq!(s.episodes.get(&ctx, "ep-nul").await.unwrap(), None);
    // The over-long word is not searchable; the record's other words are.
    let found = |text: String| {
        let s = &s;
        let ctx = &ctx;
        async move {
            s.facts
                .query(ctx, &FactQuery::new().text(text))
                .await
                .unwrap()
                .iter()
                .any(|f| f.id == "word-over")
        }
    };
    assert!(found("zebra".into()).await);
    assert!(!found("w".repeat(MAX_WORD_LEN + 1)).await);
    assert!(!found("w".repeat(MAX_WORD_LEN)).await);
}

/// Facts, insights and episodes page by cursor in their query's order
/// (confidence, then newest, then id; episodes newest first): the pages
/// together are exactly the whole result, ties on confidence and time
/// included; a cursor with a relevance-ordered text or one no query
/// returned is refused.
pub async fn records_page_by_cursor_in_query_order<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{EpisodeQuery, Insight, InsightQuery};
    let s = factory().await;
    let ctx = agent("pager");
    // Ties: three confidences, several records each, some created in the
    // same microsecond range (ids break the ties).
    for i in 0..23 {
        let confidence = [0.9, 0.5, 0.5, 0.2][i % 4];
        s.facts
            .store(
                &ctx,
                Fact::new(format!("f{i:02}"), format!("fact {i}")).confidence(confidence),
            )
            .await
            .unwrap();
        s.insights
            .store(
                &ctx,
                Insight::new(
                    format!("i{i:02}"),
                    "pager",
                    format!("insight {i}"),
                    confidence,
                ),
            )
            .await
            .unwrap();
        s.episodes
            .store(
                &ctx,
                crate::support::episode(
                    &format!("e{i:02}"),
                    "pager",
                    i64::try_from(i % 5).unwrap(),
                ),
            )
            .await
            .unwrap();
    }
    let whole: Vec<String> = s
        .facts
        .query(&ctx, &FactQuery::new().limit(100))
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(whole.len(), 23);
    let mut paged = Vec::new();
    let mut q = FactQuery::new().limit(4);
    loop {
        let page = s.facts.query(&ctx, &q).await.unwrap();
        let Some(last) = page.last() else { break };
        q.cursor = Some(FactQuery::cursor_of(last));
        paged.extend(page.iter().map(|f| f.id.clone()));
    }
    assert_eq!(paged, whole, "fact pages are the whole result, in order");

    let whole: Vec<String> = s
        .insights
        .query(&ctx, &InsightQuery::new().limit(100))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    let mut paged = Vec::new();
    let mut q = InsightQuery::new().limit(5);
    loop {
        let page = s.insights.query(&ctx, &q).await.unwrap();
        let Some(last) = page.last() else { break };
        q.cursor = Some(InsightQuery::cursor_of(last));
        paged.extend(page.iter().map(|i| i.id.clone()));
    }
    assert_eq!(paged, whole, "insight pages are the whole result, in order");

    let whole: Vec<String> = s
        .episodes
        .query(&ctx, &EpisodeQuery::new().limit(100))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(whole.len(), 23);
    let mut paged = Vec::new();
    let mut q = EpisodeQuery::new().limit(3);
    loop {
        let page = s.episodes.query(&ctx, &q).await.unwrap();
        let Some(last) = page.last() else { break };
        q.cursor = Some(EpisodeQuery::cursor_of(last));
        paged.extend(page.iter().map(|e| e.id.clone()));
    }
    assert_eq!(
        paged, whole,
        "episode pages are the whole result, newest first"
    );

    // A relevance-ordered text is one page; a made-up cursor is refused.
    let first = s
        .facts
        .query(&ctx, &FactQuery::new().limit(1))
        .await
        .unwrap();
    let cursor = FactQuery::cursor_of(&first[0]);
    let mut with_text = FactQuery::new().text("fact");
    with_text.cursor = Some(cursor);
    assert!(is_invalid(s.facts.query(&ctx, &with_text).await));
    for bad in ["", "nope", "zz|1|x", "3fe0000000000000|x|y"] {
        let mut q = FactQuery::new();
        q.cursor = Some(bad.to_owned());
        assert!(is_invalid(s.facts.query(&ctx, &q).await), "{bad:?}");
    }
    let mut q = EpisodeQuery::new();
    q.cursor = Some("3fe0000000000000|1|x".to_owned());
    assert!(
        is_invalid(s.episodes.query(&ctx, &q).await),
        "an insight's cursor is no episode's"
    );
}
