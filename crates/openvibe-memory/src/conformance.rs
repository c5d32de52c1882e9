//! The backend conformance suite: what every implementation of
//! [`FactStore`](openvibe_protocols::FactStore), [`EpisodicStore`](openvibe_protocols::EpisodicStore) and [`InsightStore`](openvibe_protocols::InsightStore) must do, written once
//! against the traits.
//!
//! Each case is an async function taking a factory that returns fresh, empty
//! [`Stores`]. A backend runs the whole suite with one macro call in an
//! integration test (the test crate needs `tokio` with the `macros` and `rt`
//! features):
//!
//! ```ignore
//! openvibe_memory::conformance_tests!(|| async { openvibe_memory::Stores::in_memory() });
//! ```
//!
//! which expands to one `#[tokio::test]` per case in [`CASES`].
//!
//! The cases fail by panicking (they are tests); that is why this module,
//! unlike the rest of the crate, uses `assert!` and `unwrap`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;

use chrono::{DateTime, Duration, TimeZone, Utc};
use openvibe_protocols::{
    CallerContext, Classification, Episode, EpisodeQuery, Fact, FactQuery, Insight, InsightQuery,
    InsightStatus, StoreError,
};

pub use crate::in_memory::Stores;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn at(minutes: i64) -> DateTime<Utc> {
    t0() + Duration::minutes(minutes)
}

/// The system of tenant `t1`.
fn sys() -> CallerContext {
    CallerContext::system().with_tenant("t1")
}

fn agent(id: &str) -> CallerContext {
    CallerContext::agent(id).with_tenant("t1")
}

fn fact_ids(facts: &[Fact]) -> Vec<&str> {
    facts.iter().map(|f| f.id.as_str()).collect()
}

fn insight_ids(insights: &[Insight]) -> Vec<&str> {
    insights.iter().map(|i| i.id.as_str()).collect()
}

fn episode_ids(episodes: &[Episode]) -> Vec<&str> {
    episodes.iter().map(|e| e.id.as_str()).collect()
}

fn episode(id: &str, agent_id: &str, minute: i64) -> Episode {
    Episode {
        id: id.into(),
        agent_id: agent_id.into(),
        operator_id: "op".into(),
        node_name: "node".into(),
        timestamp: at(minute),
        action: "act".into(),
        input_summary: "input".into(),
        output_summary: "output".into(),
        ..Episode::default()
    }
}

fn is_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::NotFound { .. }))
}

fn is_unauthorized<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Unauthorized { .. }))
}

fn is_invalid<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::InvalidInput { .. }))
}

macro_rules! cases {
    ($d:tt; $($name:ident;)*) => {
        /// The names of every case, in the order `conformance_tests!` expands them.
        pub const CASES: &[&str] = &[$(stringify!($name)),*];

        /// Expand to one `#[tokio::test]` per conformance case (see
        /// [`conformance::CASES`](crate::conformance::CASES)), each calling the
        /// case with `$factory`: an expression evaluating to a
        /// `Fn() -> impl Future<Output = Stores>` that returns fresh, empty stores.
        #[macro_export]
        macro_rules! conformance_tests {
            ($d factory:expr) => {
                $(
                    #[tokio::test]
                    async fn $name() {
                        $d crate::conformance::$name($d factory).await;
                    }
                )*
            };
        }
    };
}

cases! {
    $;
    fact_store_then_get;
    fact_owner_tenant_and_project_come_from_the_caller;
    fact_get_missing_is_none;
    fact_empty_id_is_generated;
    fact_invalid_input_is_rejected;
    fact_filter_entity;
    fact_filter_general;
    insight_filter_general;
    fact_filter_domain;
    fact_filter_tags_any;
    fact_filter_text_every_term;
    fact_filter_min_confidence;
    fact_filter_since;
    fact_filters_combine;
    fact_order_confidence_recency_id;
    fact_order_relevance_first_with_text;
    fact_limit;
    fact_tenant_isolation;
    fact_clearance_inside_the_query;
    fact_owner_reads_own_records;
    fact_project_isolation;
    fact_access_tracking_is_persisted;
    fact_update_replaces_and_keeps_store_fields;
    fact_update_missing_is_not_found;
    fact_changes_need_ownership;
    fact_store_over_a_foreign_record_is_refused;
    fact_store_twice_is_an_upsert;
    fact_delete_then_not_found;
    episode_store_then_get;
    episode_filters;
    episode_order_newest_first;
    episode_limit;
    episode_tenant_isolation;
    episode_clearance_inside_the_query;
    episode_delete_then_not_found;
    insight_store_then_get;
    insight_filters;
    insight_order_confidence_recency_id;
    insight_limit;
    insight_tenant_isolation;
    insight_clearance_inside_the_query;
    insight_update_and_ownership;
    insight_delete_then_not_found;
    insight_find_similar;
    insight_access_tracking_is_persisted;
}

// ---------------------------------------------------------------- facts

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
}

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

// ---------------------------------------------------------------- episodes

/// `store` sets owner and tenant from the caller; `get` returns the episode.
pub async fn episode_store_then_get<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut ep = episode("ep1", "cro", 0);
    ep.meta.owner = "agent:mallory".into();
    ep.meta.tenant_id = "elsewhere".into();
    let stored = s.episodes.store(&cro, ep).await.unwrap();
    assert_eq!(stored.meta.owner, "agent:cro");
    assert_eq!(stored.meta.tenant_id, "t1");
    assert!(stored.content_hash.is_some());
    assert_eq!(s.episodes.get(&cro, "ep1").await.unwrap().unwrap(), stored);
    assert!(s.episodes.get(&cro, "missing").await.unwrap().is_none());
    let generated = s.episodes.store(&cro, episode("", "cro", 1)).await.unwrap();
    assert!(!generated.id.is_empty());
    assert!(is_invalid(
        s.episodes.store(&cro, episode("a/b", "cro", 1)).await
    ));
}

/// Agent, entity, domain, tags (any), text (every term) and since filters.
pub async fn episode_filters<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let base = episode("", "cro", 10);
    let put = |id: &str, e: Episode| Episode { id: id.into(), ..e };
    for e in [
        put("plain", base.clone()),
        put(
            "cmo",
            Episode {
                agent_id: "cmo".into(),
                ..base.clone()
            },
        ),
        put(
            "acme",
            Episode {
                entity: "acme".into(),
                ..base.clone()
            },
        ),
        put(
            "rev",
            Episode {
                domain: "revenue".into(),
                ..base.clone()
            },
        ),
        put(
            "tagged",
            Episode {
                tags: vec!["q".into(), "x".into()],
                ..base.clone()
            },
        ),
        put(
            "text",
            Episode {
                output_summary: "Qualified ACME at 85".into(),
                ..base.clone()
            },
        ),
        put(
            "old",
            Episode {
                timestamp: at(0),
                ..base.clone()
            },
        ),
    ] {
        s.episodes.store(&sys(), e).await.unwrap();
    }
    let q = |q: EpisodeQuery| {
        let s = s.clone();
        async move {
            let mut ids: Vec<String> = s
                .episodes
                .query(&sys(), &q)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.id)
                .collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(q(EpisodeQuery::for_agent("cmo")).await, ["cmo"]);
    assert_eq!(q(EpisodeQuery::for_agent("cro")).await.len(), 6);
    assert_eq!(q(EpisodeQuery::new()).await.len(), 7);
    assert_eq!(
        q(EpisodeQuery::for_agent("cro").entity("acme")).await,
        ["acme"]
    );
    assert_eq!(
        q(EpisodeQuery::for_agent("cro").domain("revenue")).await,
        ["rev"]
    );
    assert_eq!(q(EpisodeQuery::new().tags(["x", "nope"])).await, ["tagged"]);
    assert_eq!(
        q(EpisodeQuery::new().text("acme qualified")).await,
        ["text"]
    );
    assert_eq!(
        q(EpisodeQuery::new().text("act input")).await.len(),
        7,
        "action and input are searched"
    );
    assert_eq!(q(EpisodeQuery::new().since(at(5))).await.len(), 6);
    assert!(q(EpisodeQuery::for_agent("nobody")).await.is_empty());
}

/// Newest first; equal timestamps by id.
pub async fn episode_order_newest_first<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for (id, minute) in [("b", 5), ("a", 5), ("old", 1), ("new", 9)] {
        s.episodes
            .store(&sys(), episode(id, "cro", minute))
            .await
            .unwrap();
    }
    let found = s
        .episodes
        .query(&sys(), &EpisodeQuery::for_agent("cro"))
        .await
        .unwrap();
    assert_eq!(episode_ids(&found), ["new", "a", "b", "old"]);
    let since = s
        .episodes
        .query(&sys(), &EpisodeQuery::for_agent("cro").since(at(5)))
        .await
        .unwrap();
    assert_eq!(episode_ids(&since), ["new", "a", "b"]);
}

/// `limit` keeps the newest.
pub async fn episode_limit<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..20 {
        s.episodes
            .store(&sys(), episode(&format!("ep{i:02}"), "cro", i))
            .await
            .unwrap();
    }
    let found = s
        .episodes
        .query(&sys(), &EpisodeQuery::for_agent("cro").limit(3))
        .await
        .unwrap();
    assert_eq!(episode_ids(&found), ["ep19", "ep18", "ep17"]);
    assert!(
        s.episodes
            .query(&sys(), &EpisodeQuery::new().limit(0))
            .await
            .unwrap()
            .is_empty()
    );
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

/// `delete` removes the episode; again is `NotFound`; others' need ownership.
pub async fn episode_delete_then_not_found<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut e = episode("ep1", "cro", 0);
    e.meta.classification = Classification::Public;
    s.episodes.store(&cro, e).await.unwrap();
    assert!(is_unauthorized(
        s.episodes.delete(&agent("cmo"), "ep1").await
    ));
    s.episodes.delete(&cro, "ep1").await.unwrap();
    assert!(s.episodes.get(&cro, "ep1").await.unwrap().is_none());
    assert!(
        s.episodes
            .query(&cro, &EpisodeQuery::for_agent("cro"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(is_not_found(s.episodes.delete(&cro, "ep1").await));
}

// ---------------------------------------------------------------- insights

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
