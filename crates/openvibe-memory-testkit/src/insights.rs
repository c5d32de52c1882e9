//! Insights: writes, filters, order, limits, similarity, access tracking, delete.

use std::future::Future;

use openvibe_protocols::{Classification, Insight, InsightQuery, InsightStatus, Stores};

use crate::support::{agent, at, insight_ids, is_invalid, is_not_found, is_unauthorized, sys};

/// `general` keeps only insights that name no entity.
pub async fn insight_filter_general<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for insight in [
        Insight::new("i1", "cro", "Acme needs a VP sponsor", 0.9).entity("acme"),
        Insight::new("i2", "cro", "Webinar leads convert 2x", 0.8),
    ] {
        s.insights.store(&sys(), insight).await.unwrap();
    }
    let found = s
        .insights
        .query(&sys(), &InsightQuery::new().general())
        .await
        .unwrap();
    let ids: Vec<&str> = found.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["i2"]);
}

/// `store` sets owner and tenant from the caller; `get` returns the insight.
pub async fn insight_store_then_get<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut ins = Insight::new("ins1", "cro", "Webinar leads convert 2x", 0.8);
    ins.meta.owner = "agent:mallory".into();
    let stored = s.insights.store(&cro, ins).await.unwrap();
    assert_eq!(stored.meta.owner, "agent:cro");
    assert_eq!(stored.meta.tenant_id, "t1");
    assert_eq!(s.insights.get(&cro, "ins1").await.unwrap().unwrap(), stored);
    assert!(s.insights.get(&cro, "missing").await.unwrap().is_none());
    assert!(is_invalid(
        s.insights
            .store(&cro, Insight::new("i2", "cro", "x", -0.1))
            .await
    ));
    assert!(is_invalid(
        s.insights
            .store(&cro, Insight::new("i2", "cro", "", 0.5))
            .await
    ));
}

/// Agent, entity, domain, tags, text, min_confidence, status and since filters.
pub async fn insight_filters<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let base = Insight::new("", "cro", "plain insight", 0.8).created_at(at(10));
    let put = |id: &str, i: Insight| Insight { id: id.into(), ..i };
    for i in [
        put("plain", base.clone()),
        put(
            "cmo",
            Insight {
                agent_id: "cmo".into(),
                ..base.clone()
            },
        ),
        put("acme", base.clone().entity("acme")),
        put("rev", base.clone().domain("revenue")),
        put("tagged", base.clone().tags(["q"])),
        put(
            "text",
            Insight {
                content: "VP sponsor predicts conversion".into(),
                ..base.clone()
            },
        ),
        put(
            "low",
            Insight {
                confidence: 0.2,
                ..base.clone()
            },
        ),
        put(
            "archived",
            Insight {
                status: InsightStatus::Archived,
                ..base.clone()
            },
        ),
        put("old", base.clone().created_at(at(0))),
    ] {
        s.insights.store(&sys(), i).await.unwrap();
    }
    let q = |q: InsightQuery| {
        let s = s.clone();
        async move {
            let mut ids: Vec<String> = s
                .insights
                .query(&sys(), &q.limit(100))
                .await
                .unwrap()
                .into_iter()
                .map(|i| i.id)
                .collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(q(InsightQuery::for_agent("cmo")).await, ["cmo"]);
    assert_eq!(q(InsightQuery::for_agent("cro")).await.len(), 8);
    assert_eq!(
        q(InsightQuery::for_agent("cro").entity("acme")).await,
        ["acme"]
    );
    assert_eq!(
        q(InsightQuery::for_agent("cro").domain("revenue")).await,
        ["rev"]
    );
    assert_eq!(q(InsightQuery::new().tags(["q", "z"])).await, ["tagged"]);
    assert_eq!(q(InsightQuery::new().text("vp sponsor")).await, ["text"]);
    assert_eq!(
        q(InsightQuery::for_agent("cro").min_confidence(0.5))
            .await
            .len(),
        7
    );
    assert_eq!(
        q(InsightQuery::new().status(InsightStatus::Archived)).await,
        ["archived"]
    );
    assert_eq!(
        q(InsightQuery::new().status(InsightStatus::Active))
            .await
            .len(),
        8
    );
    assert_eq!(q(InsightQuery::new().since(at(5))).await.len(), 8);
}

/// Confidence desc, then `created_at` desc, then id.
pub async fn insight_order_confidence_recency_id<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for (id, confidence, minute) in [
        ("b", 0.5, 1),
        ("a", 0.5, 1),
        ("newer", 0.5, 2),
        ("top", 0.9, 0),
        ("low", 0.1, 9),
    ] {
        s.insights
            .store(
                &sys(),
                Insight::new(id, "cro", "x", confidence).created_at(at(minute)),
            )
            .await
            .unwrap();
    }
    let found = s
        .insights
        .query(&sys(), &InsightQuery::for_agent("cro"))
        .await
        .unwrap();
    assert_eq!(insight_ids(&found), ["top", "newer", "a", "b", "low"]);
    let texted = s
        .insights
        .query(&sys(), &InsightQuery::for_agent("cro").text("x"))
        .await
        .unwrap();
    assert_eq!(
        insight_ids(&texted),
        insight_ids(&found),
        "text does not change insight order"
    );
}

/// `limit` keeps the most confident.
pub async fn insight_limit<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..20 {
        s.insights
            .store(
                &sys(),
                Insight::new(format!("i{i:02}"), "cro", "x", f64::from(i) / 20.0),
            )
            .await
            .unwrap();
    }
    let found = s
        .insights
        .query(&sys(), &InsightQuery::for_agent("cro").limit(3))
        .await
        .unwrap();
    assert_eq!(insight_ids(&found), ["i19", "i18", "i17"]);
    assert!(
        s.insights
            .query(&sys(), &InsightQuery::new().limit(0))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `delete` removes the insight; again is `NotFound`.
pub async fn insight_delete_then_not_found<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.insights
        .store(
            &sys(),
            Insight::new("i1", "cro", "webinar leads convert", 0.5).domain("d"),
        )
        .await
        .unwrap();
    s.insights.delete(&sys(), "i1").await.unwrap();
    assert!(s.insights.get(&sys(), "i1").await.unwrap().is_none());
    assert!(
        s.insights
            .query(&sys(), &InsightQuery::for_agent("cro").domain("d"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.insights
            .find_similar(&sys(), "cro", "webinar leads convert")
            .await
            .unwrap()
            .is_none()
    );
    assert!(is_not_found(s.insights.delete(&sys(), "i1").await));
}

/// `find_similar`: most shared words (at least `min(3, words)`), the agent's
/// active insights only, ties by confidence then id.
pub async fn insight_find_similar<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in [
        Insight::new(
            "ins1",
            "cro",
            "Webinar leads convert 2x vs cold inbound",
            0.8,
        ),
        Insight::new(
            "ins2",
            "cro",
            "Webinar leads convert well when followed up fast",
            0.6,
        ),
        Insight::new(
            "ins3",
            "cmo",
            "Webinar leads convert 2x vs cold inbound",
            0.9,
        ),
        Insight {
            status: InsightStatus::Archived,
            ..Insight::new(
                "ins4",
                "cro",
                "webinar leads convert 2x vs cold inbound always",
                1.0,
            )
        },
        Insight::new("ins5", "cro", "Completely different", 0.8),
    ] {
        s.insights.store(&sys(), i).await.unwrap();
    }
    let found = |agent_id: &'static str, text: &'static str| {
        let s = s.clone();
        async move {
            s.insights
                .find_similar(&sys(), agent_id, text)
                .await
                .unwrap()
                .map(|i| i.id)
        }
    };
    assert_eq!(
        found("cro", "webinar leads convert").await.as_deref(),
        Some("ins1"),
        "tie: higher confidence"
    );
    assert_eq!(
        found("cro", "Webinar LEADS convert, 2x vs cold")
            .await
            .as_deref(),
        Some("ins1")
    );
    assert_eq!(
        found("cro", "leads followed up fast").await.as_deref(),
        Some("ins2")
    );
    assert_eq!(
        found("cmo", "webinar leads convert").await.as_deref(),
        Some("ins3")
    );
    assert_eq!(
        found("cro", "webinar leads").await.as_deref(),
        Some("ins1"),
        "two words need two shared"
    );
    assert_eq!(found("cro", "webinar budgets").await, None);
    assert_eq!(
        found("cro", "leads webinar budgets timing").await,
        None,
        "three shared words needed"
    );
    assert_eq!(found("cro", "").await, None);
    assert_eq!(found("nobody", "webinar leads convert").await, None);
}

/// Tracked insight queries and `touch` persist access statistics.
pub async fn insight_access_tracking_is_persisted<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.insights
        .store(&sys(), Insight::new("i1", "cro", "x", 0.5))
        .await
        .unwrap();
    let q = InsightQuery::for_agent("cro").track_access(true);
    assert_eq!(
        s.insights.query(&sys(), &q).await.unwrap()[0].access_count,
        1
    );
    assert_eq!(
        s.insights.query(&sys(), &q).await.unwrap()[0].access_count,
        2
    );
    assert_eq!(s.insights.touch(&sys(), &["i1".into()]).await.unwrap(), 1);
    let got = s.insights.get(&sys(), "i1").await.unwrap().unwrap();
    assert_eq!(got.access_count, 3);
    assert!(got.last_accessed.is_some());
}

/// `strengthen` is one atomic step: 8 concurrent calls add 8 evidence and
/// 8 steps of confidence (capped at 1.0), and merge episode ids without
/// duplicates; it needs the right to change the insight.
pub async fn insight_strengthen_is_atomic<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let low = Insight {
        source_episode_ids: vec!["e0".into()],
        ..Insight::new("low", "cro", "webinar leads convert", 0.1).evidence(1)
    };
    let high = Insight::new("high", "cro", "vp sponsors close", 0.5).evidence(2);
    s.insights.store(&cro, low).await.unwrap();
    s.insights.store(&cro, high).await.unwrap();
    let calls: Vec<_> = (0..8)
        .flat_map(|i| {
            let insights = s.insights.clone();
            let other = s.insights.clone();
            let episodes = vec![format!("e{}", i % 3), "e0".to_owned()];
            let again = episodes.clone();
            [
                Box::pin(async move {
                    insights
                        .strengthen(&agent("cro"), "low", &episodes)
                        .await
                        .unwrap();
                }) as std::pin::Pin<Box<dyn Future<Output = ()>>>,
                Box::pin(async move {
                    other
                        .strengthen(&agent("cro"), "high", &again)
                        .await
                        .unwrap();
                }),
            ]
        })
        .collect();
    crate::support::futures_join_all(calls).await;
    let low = s.insights.get(&cro, "low").await.unwrap().unwrap();
    assert_eq!(low.evidence_count, 9);
    assert!((low.confidence - 0.9).abs() < 1e-9, "{}", low.confidence);
    assert!(low.last_confirmed.is_some());
    // Each source once; concurrent strengthenings append in the order they
    // commit, which the calls do not determine.
    let mut sources = low.source_episode_ids.clone();
    sources.sort();
    assert_eq!(sources, vec!["e0", "e1", "e2"]);
    assert_eq!(
        low.source_episode_ids[0], "e0",
        "the first source stays first"
    );
    let high = s.insights.get(&cro, "high").await.unwrap().unwrap();
    assert_eq!(high.evidence_count, 10);
    assert_eq!(high.confidence, 1.0, "capped");
    assert!(is_unauthorized(
        s.insights
            .strengthen(
                &agent("cmo").with_domain_clearance("", Classification::Internal),
                "low",
                &[]
            )
            .await
    ));
    assert!(is_not_found(
        s.insights.strengthen(&agent("cmo"), "low", &[]).await
    ));
    assert!(is_not_found(s.insights.strengthen(&cro, "nope", &[]).await));
    assert_eq!(
        s.insights
            .get(&cro, "low")
            .await
            .unwrap()
            .unwrap()
            .evidence_count,
        9,
        "refusals changed nothing"
    );
}

/// `observe` creates the pattern an insight names by id exactly once when
/// 8 observers see it at once, and strengthens it once for each other
/// observer (evidence 8, no insight twice); an empty id is the pattern's
/// own ([`Insight::pattern_id`]);
/// another principal's insight under the id is refused; nothing changes on
/// a refusal.
pub async fn insight_observe_creates_each_pattern_once<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let id = Insight::pattern_id("cro", "VP sponsors close deals");
    assert_eq!(id, Insight::pattern_id("cro", "deals close: vp sponsors"));
    let created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let insights = s.insights.clone();
            let created = created.clone();
            let insight = Insight {
                source_episode_ids: vec![format!("e{i}")],
                ..Insight::new(id.clone(), "cro", "VP sponsors close deals", 0.5)
            };
            async move {
                if insights
                    .observe(&agent("cro"), insight)
                    .await
                    .unwrap()
                    .created
                {
                    created.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        })
        .collect();
    crate::support::futures_join_all(calls).await;
    assert_eq!(
        created.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one observer creates the pattern"
    );
    let got = s.insights.get(&agent("cro"), &id).await.unwrap().unwrap();
    assert_eq!(got.evidence_count, 8, "each observation counted once");
    assert!((got.confidence - 1.0).abs() < 1e-9, "{}", got.confidence);
    let mut sources = got.source_episode_ids.clone();
    sources.sort();
    assert_eq!(sources, (0..8).map(|i| format!("e{i}")).collect::<Vec<_>>());
    let all = s
        .insights
        .query(&agent("cro"), &InsightQuery::new().agent("cro"))
        .await
        .unwrap();
    assert_eq!(all.len(), 1, "no second insight for the same pattern");
    // No id: the pattern's own, from the agent and the content.
    let unnamed = s
        .insights
        .observe(&agent("cro"), Insight::new("", "cro", "anything new", 0.5))
        .await
        .unwrap();
    assert!(unnamed.created);
    assert_eq!(
        unnamed.insight.id,
        Insight::pattern_id("cro", "anything new")
    );
    s.insights
        .delete(&agent("cro"), &unnamed.insight.id)
        .await
        .unwrap();
    assert!(is_unauthorized(
        s.insights
            .observe(
                &agent("cmo"),
                Insight::new(id.clone(), "cmo", "VP sponsors close deals", 0.5)
            )
            .await
    ));
    let again = s.insights.get(&agent("cro"), &id).await.unwrap().unwrap();
    assert_eq!(again.evidence_count, 8, "refusals changed nothing");
}
