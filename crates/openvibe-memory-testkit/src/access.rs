//! Access: tenant and project isolation, clearance inside the query,
//! ownership of changes; for every record kind.

use std::future::Future;

use openvibe_protocols::{
    CallerContext, Classification, EpisodeQuery, Fact, FactQuery, Insight, InsightQuery, Stores,
};

use crate::support::{agent, episode, episode_ids, is_not_found, is_unauthorized, sys};

/// Owner, tenant and project are taken from the caller, never the input.
pub async fn fact_owner_tenant_and_project_come_from_the_caller<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let mut forged = Fact::new("f1", "forged").classification(Classification::Public);
    forged.meta.owner = "agent:mallory".into();
    forged.meta.tenant_id = "victim".into();
    forged.meta.project_id = Some("other".into());
    forged.access_count = 99;
    let cro = agent("cro").with_project("p1");
    let stored = s.facts.store(&cro, forged).await.unwrap();
    assert_eq!(stored.meta.owner, "agent:cro");
    assert_eq!(stored.meta.tenant_id, "t1");
    assert_eq!(stored.meta.project_id.as_deref(), Some("p1"));
    assert_eq!(stored.access_count, 0, "access statistics are the store's");
    let victim = CallerContext::system().with_tenant("victim");
    assert!(s.facts.get(&victim, "f1").await.unwrap().is_none());
    let got = s.facts.get(&cro, "f1").await.unwrap().unwrap();
    assert_eq!(got.meta.owner, "agent:cro");
}

/// Tenants never see or change each other's facts; ids are per tenant.
pub async fn fact_tenant_isolation<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let other = CallerContext::system().with_tenant("t2");
    s.facts
        .store(&sys(), Fact::new("f1", "tenant one").entity("acme"))
        .await
        .unwrap();
    assert!(s.facts.get(&other, "f1").await.unwrap().is_none());
    assert!(
        s.facts
            .query(&other, &FactQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.facts
            .query(&other, &FactQuery::new().entity("acme"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(is_not_found(
        s.facts.update(&other, Fact::new("f1", "hijack")).await
    ));
    assert!(is_not_found(s.facts.delete(&other, "f1").await));
    assert_eq!(s.facts.touch(&other, &["f1".to_owned()]).await.unwrap(), 0);
    s.facts
        .store(&other, Fact::new("f1", "tenant two"))
        .await
        .unwrap();
    assert_eq!(
        s.facts.get(&sys(), "f1").await.unwrap().unwrap().content,
        "tenant one"
    );
    assert_eq!(
        s.facts.get(&other, "f1").await.unwrap().unwrap().content,
        "tenant two"
    );
}

/// Clearance is applied inside the query: `limit` readable facts come back
/// even when many unreadable ones rank first.
pub async fn fact_clearance_inside_the_query<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..50 {
        s.facts
            .store(
                &sys(),
                Fact::new(format!("secret{i:02}"), format!("revenue secret {i}"))
                    .entity("acme")
                    .domain("revenue")
                    .classification(Classification::Confidential)
                    .confidence(0.99),
            )
            .await
            .unwrap();
    }
    for i in 0..5 {
        s.facts
            .store(
                &sys(),
                Fact::new(format!("open{i}"), format!("revenue public {i}"))
                    .entity("acme")
                    .domain("revenue")
                    .classification(Classification::Public)
                    .confidence(0.1),
            )
            .await
            .unwrap();
    }
    let cmo = agent("cmo").with_domain_clearance("marketing", Classification::Restricted);
    for q in [
        FactQuery::new().limit(5),
        FactQuery::new().domain("revenue").limit(5),
        FactQuery::new().entity("acme").domain("revenue").limit(5),
        FactQuery::new().text("revenue").limit(5),
    ] {
        let found = s.facts.query(&cmo, &q).await.unwrap();
        assert_eq!(found.len(), 5, "{q:?}");
        assert!(found.iter().all(|f| f.id.starts_with("open")), "{q:?}");
    }
    assert!(
        s.facts.get(&cmo, "secret00").await.unwrap().is_none(),
        "unreadable looks missing"
    );
    let cro = agent("cro").with_domain_clearance("revenue", Classification::Confidential);
    let found = s
        .facts
        .query(&cro, &FactQuery::new().domain("revenue").limit(5))
        .await
        .unwrap();
    assert!(found.iter().all(|f| f.id.starts_with("secret")));
    let internal_only = agent("x").with_domain_clearance("revenue", Classification::Internal);
    let found = s
        .facts
        .query(&internal_only, &FactQuery::new().limit(100))
        .await
        .unwrap();
    assert_eq!(
        found.len(),
        5,
        "internal clearance does not read confidential"
    );
}

/// The owner reads its own facts whatever its clearance; others need clearance.
pub async fn fact_owner_reads_own_records<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    s.facts
        .store(
            &cro,
            Fact::new("mine", "restricted note")
                .domain("hr")
                .classification(Classification::Restricted),
        )
        .await
        .unwrap();
    assert!(s.facts.get(&cro, "mine").await.unwrap().is_some());
    assert_eq!(
        s.facts.query(&cro, &FactQuery::new()).await.unwrap().len(),
        1
    );
    assert!(s.facts.get(&agent("cmo"), "mine").await.unwrap().is_none());
    assert!(
        s.facts
            .get(&CallerContext::user("cro").with_tenant("t1"), "mine")
            .await
            .unwrap()
            .is_none(),
        "a user named cro is not agent cro"
    );
}

/// Records of a project are visible only within that project; records of no
/// project are visible to all.
pub async fn fact_project_isolation<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let p1 = sys().with_project("p1");
    let p2 = sys().with_project("p2");
    s.facts.store(&p1, Fact::new("in_p1", "x")).await.unwrap();
    s.facts
        .store(&sys(), Fact::new("global", "x"))
        .await
        .unwrap();
    let ids = |v: Vec<Fact>| {
        let mut ids: Vec<String> = v.into_iter().map(|f| f.id).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(s.facts.query(&p1, &FactQuery::new()).await.unwrap()),
        ["global", "in_p1"]
    );
    assert_eq!(
        ids(s.facts.query(&p2, &FactQuery::new()).await.unwrap()),
        ["global"]
    );
    assert_eq!(
        ids(s.facts.query(&sys(), &FactQuery::new()).await.unwrap()),
        ["global"]
    );
    assert!(is_not_found(s.facts.delete(&p2, "in_p1").await));
}

/// Update and delete need ownership (or a privileged caller); a refused
/// change modifies nothing. Unreadable records look missing.
pub async fn fact_changes_need_ownership<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &agent("cro"),
            Fact::new("f1", "cro's fact")
                .domain("revenue")
                .classification(Classification::Internal),
        )
        .await
        .unwrap();
    let cleared = agent("cmo").with_domain_clearance("revenue", Classification::Internal);
    assert!(is_unauthorized(
        s.facts
            .update(&cleared, Fact::new("f1", "changed").domain("revenue"))
            .await
    ));
    assert!(is_unauthorized(s.facts.delete(&cleared, "f1").await));
    let blind = agent("cmo");
    assert!(is_not_found(
        s.facts.update(&blind, Fact::new("f1", "changed")).await
    ));
    assert!(is_not_found(s.facts.delete(&blind, "f1").await));
    assert_eq!(
        s.facts.get(&sys(), "f1").await.unwrap().unwrap().content,
        "cro's fact"
    );
    let updated = s
        .facts
        .update(&sys(), Fact::new("f1", "fixed by admin").domain("revenue"))
        .await
        .unwrap();
    assert_eq!(
        updated.meta.owner, "agent:cro",
        "privileged changes keep the owner"
    );
    s.facts.delete(&sys(), "f1").await.unwrap();
}

/// `store` over an id owned by someone else is refused and changes nothing.
pub async fn fact_store_over_a_foreign_record_is_refused<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.facts
        .store(
            &agent("cro"),
            Fact::new("f1", "original").classification(Classification::Public),
        )
        .await
        .unwrap();
    assert!(is_unauthorized(
        s.facts
            .store(&agent("cmo"), Fact::new("f1", "overwrite"))
            .await
    ));
    let got = s.facts.get(&sys(), "f1").await.unwrap().unwrap();
    assert_eq!(got.content, "original");
    assert_eq!(got.meta.owner, "agent:cro");
}

/// Tenants never see each other's episodes.
pub async fn episode_tenant_isolation<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let other = CallerContext::system().with_tenant("t2");
    s.episodes
        .store(&sys(), episode("ep1", "cro", 0))
        .await
        .unwrap();
    assert!(s.episodes.get(&other, "ep1").await.unwrap().is_none());
    assert!(
        s.episodes
            .query(&other, &EpisodeQuery::for_agent("cro"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(is_not_found(s.episodes.delete(&other, "ep1").await));
}

/// Clearance is applied inside episode queries too.
pub async fn episode_clearance_inside_the_query<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..30 {
        let mut e = episode(&format!("secret{i:02}"), "cro", 100 + i);
        e.domain = "revenue".into();
        e.meta.classification = Classification::Confidential;
        s.episodes.store(&sys(), e).await.unwrap();
    }
    for i in 0..3 {
        let mut e = episode(&format!("open{i}"), "cro", i);
        e.meta.classification = Classification::Public;
        s.episodes.store(&sys(), e).await.unwrap();
    }
    let found = s
        .episodes
        .query(&agent("cmo"), &EpisodeQuery::for_agent("cro").limit(3))
        .await
        .unwrap();
    assert_eq!(episode_ids(&found), ["open2", "open1", "open0"]);
    let cro = agent("cro").with_domain_clearance("revenue", Classification::Confidential);
    assert_eq!(
        s.episodes
            .query(&cro, &EpisodeQuery::for_agent("cro").limit(100))
            .await
            .unwrap()
            .len(),
        33
    );
}

/// Tenants never see or change each other's insights.
pub async fn insight_tenant_isolation<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let other = CallerContext::system().with_tenant("t2");
    s.insights
        .store(
            &sys(),
            Insight::new("i1", "cro", "webinar leads convert", 0.8),
        )
        .await
        .unwrap();
    assert!(s.insights.get(&other, "i1").await.unwrap().is_none());
    assert!(
        s.insights
            .query(&other, &InsightQuery::for_agent("cro"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.insights
            .find_similar(&other, "cro", "webinar leads convert")
            .await
            .unwrap()
            .is_none()
    );
    assert!(is_not_found(
        s.insights
            .update(&other, Insight::new("i1", "cro", "x", 0.1))
            .await
    ));
    assert!(is_not_found(s.insights.delete(&other, "i1").await));
    assert_eq!(s.insights.touch(&other, &["i1".into()]).await.unwrap(), 0);
}

/// Clearance is applied inside insight queries too.
pub async fn insight_clearance_inside_the_query<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..30 {
        s.insights
            .store(
                &sys(),
                Insight::new(format!("secret{i:02}"), "cro", "secret", 0.99)
                    .domain("revenue")
                    .classification(Classification::Restricted),
            )
            .await
            .unwrap();
    }
    for i in 0..3 {
        s.insights
            .store(
                &sys(),
                Insight::new(format!("open{i}"), "cro", "open", 0.1)
                    .classification(Classification::Public),
            )
            .await
            .unwrap();
    }
    let found = s
        .insights
        .query(&agent("cmo"), &InsightQuery::for_agent("cro").limit(3))
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|i| i.id.starts_with("open")));
    assert!(
        s.insights
            .find_similar(&agent("cmo"), "cro", "secret")
            .await
            .unwrap()
            .is_none()
    );
}

/// `update` keeps owner and statistics, needs ownership, and is `NotFound` when missing.
pub async fn insight_update_and_ownership<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut ins = s
        .insights
        .store(
            &cro,
            Insight::new("i1", "cro", "x", 0.5).classification(Classification::Public),
        )
        .await
        .unwrap();
    s.insights.touch(&cro, &["i1".into()]).await.unwrap();
    ins.confidence = 0.9;
    ins.evidence_count = 4;
    let updated = s.insights.update(&cro, ins).await.unwrap();
    assert_eq!(updated.confidence, 0.9);
    assert_eq!(updated.evidence_count, 4);
    assert_eq!(updated.access_count, 1);
    let found = s
        .insights
        .query(&cro, &InsightQuery::for_agent("cro"))
        .await
        .unwrap();
    assert_eq!(found[0].confidence, 0.9);
    assert!(is_unauthorized(
        s.insights
            .update(&agent("cmo"), Insight::new("i1", "cro", "hijack", 0.1))
            .await
    ));
    assert_eq!(
        s.insights.get(&cro, "i1").await.unwrap().unwrap().content,
        "x"
    );
    assert!(is_not_found(
        s.insights
            .update(&cro, Insight::new("nope", "cro", "x", 0.5))
            .await
    ));
}
