//! The L1 raw log: append (all or none), get, paged newest-first queries,
//! the episode link, governance, bad input and retention.

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use openvibe_protocols::{
    CallOrigin, CallerContext, Classification, Grants, LlmRequest, LlmResponse, RawCall,
    RawCallQuery, RawRetention, Rights, StopReason, StoreError, Stores,
};

use crate::support::{agent, at, is_invalid, sys};

/// A raw call of `agent_id` at minute `minute`, made for `episode`.
pub(crate) fn raw(id: &str, agent_id: &str, minute: i64, episode: Option<&str>) -> RawCall {
    let mut request =
        LlmRequest::new("sonnet", format!("Score lead {id}")).system("You are the CRO.");
    request.origin = Some(CallOrigin {
        operator_id: "revenue_ops".into(),
        node_name: "qualify_lead".into(),
        episode_id: episode.unwrap_or_default().into(),
        entity: "acme".into(),
        domain: String::new(),
    });
    let mut response = LlmResponse::text(format!("score for {id}: 85"));
    response.tokens_in = 12;
    response.tokens_out = 5;
    response.model = "claude-sonnet".into();
    let mut call = RawCall::new(agent_id, at(minute), 1234, request, Ok(response));
    call.id = id.into();
    call.meta.namespace = agent_id.into();
    call
}

fn ids(calls: &[RawCall]) -> Vec<&str> {
    calls.iter().map(|c| c.id.as_str()).collect()
}

/// Append sets owner, tenant and namespace from the caller and generates
/// ids; `get` returns the call exactly as appended (request, response,
/// tokens, latency, stop reason, origin); a failed call keeps its error.
pub async fn raw_append_then_get<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut forged = raw("r1", "cro", 0, Some("ep_1"));
    forged.meta.owner = "agent:mallory".into();
    forged.meta.tenant_id = "elsewhere".into();
    let mut failed = raw("", "cro", 1, None);
    failed.response = None;
    failed.error = Some("rate limited".into());
    failed.stop_reason = None;
    let stored = s.raw.append(&cro, vec![forged, failed]).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].meta.owner, "agent:cro");
    assert_eq!(stored[0].meta.tenant_id, "t1");
    assert!(stored[1].id.starts_with("raw_"), "{}", stored[1].id);
    for call in &stored {
        assert_eq!(
            s.raw.get(&cro, &call.id).await.unwrap().as_ref(),
            Some(call)
        );
    }
    let got = s.raw.get(&cro, "r1").await.unwrap().unwrap();
    assert_eq!(got.operator_id, "revenue_ops");
    assert_eq!(got.node_name, "qualify_lead");
    assert_eq!(got.episode_id.as_deref(), Some("ep_1"));
    assert_eq!(got.entity, "acme");
    assert_eq!(
        (got.tokens_in, got.tokens_out, got.latency_us),
        (12, 5, 1234)
    );
    assert_eq!(got.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(got.request.system, "You are the CRO.");
    assert_eq!(got.response.unwrap().content, "score for r1: 85");
    let failed = s.raw.get(&cro, &stored[1].id).await.unwrap().unwrap();
    assert_eq!(failed.error.as_deref(), Some("rate limited"));
    assert!(failed.response.is_none());
    assert!(s.raw.get(&cro, "missing").await.unwrap().is_none());
    assert!(s.raw.append(&cro, Vec::new()).await.unwrap().is_empty());
}

/// Newest first, a page at a time: every call exactly once across pages,
/// also when calls share a timestamp; filters by agent, episode, text, since.
pub async fn raw_pages_newest_first_and_filters<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut calls: Vec<RawCall> = (0..7)
        .map(|i| {
            raw(
                &format!("c{i}"),
                "cro",
                i,
                Some(if i < 3 { "ep_a" } else { "ep_b" }),
            )
        })
        .collect();
    // Three calls in the same microsecond: the id breaks the tie.
    for id in ["t1", "t0", "t2"] {
        calls.push(raw(id, "cro", 10, None));
    }
    s.raw.append(&cro, calls).await.unwrap();
    s.raw
        .append(&agent("cmo"), vec![raw("other", "cmo", 20, None)])
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut query = RawCallQuery::for_agent("cro").limit(3);
    let mut pages = 0;
    loop {
        let page = s.raw.query(&cro, &query).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 3);
        seen.extend(page.items.iter().map(|c| c.id.clone()));
        match page.next_cursor {
            Some(cursor) => query = query.cursor(cursor),
            None => break,
        }
    }
    assert_eq!(pages, 4);
    assert_eq!(
        seen,
        ["t0", "t1", "t2", "c6", "c5", "c4", "c3", "c2", "c1", "c0"]
    );

    let of = |q: RawCallQuery| {
        let s = s.clone();
        let cro = cro.clone();
        async move {
            let page = s.raw.query(&cro, &q).await.unwrap();
            page.items.into_iter().map(|c| c.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        of(RawCallQuery::new().episode("ep_a")).await,
        ["c2", "c1", "c0"]
    );
    assert_eq!(
        of(RawCallQuery::new().episode("ep_none")).await,
        Vec::<String>::new()
    );
    assert_eq!(
        of(RawCallQuery::new().episodes(["ep_none", "ep_a"]).limit(2)).await,
        ["c2", "c1"]
    );
    assert_eq!(of(RawCallQuery::new().text("lead c4")).await, ["c4"]);
    assert_eq!(of(RawCallQuery::new().text("score c5")).await, ["c5"]);
    assert_eq!(
        of(RawCallQuery::for_agent("cro").since(at(5))).await,
        ["t0", "t1", "t2", "c6", "c5"]
    );
    assert!(is_invalid(
        s.raw
            .query(&cro, &RawCallQuery::new().cursor("nonsense"))
            .await
    ));
    assert!(is_invalid(
        s.raw.query(&cro, &RawCallQuery::new().limit(1001)).await
    ));
}

/// Raw calls are governed like every record: tenants are isolated,
/// another agent without clearance sees nothing, clearance on the call's
/// domain opens it, and namespace grants decide for governed callers.
pub async fn raw_governance<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut secret = raw("secret", "cro", 0, None);
    secret.domain = "revenue".into();
    secret.meta.classification = Classification::Confidential;
    s.raw
        .append(&cro, vec![secret, raw("plain", "cro", 1, None)])
        .await
        .unwrap();
    let all = |ctx: CallerContext| {
        let s = s.clone();
        async move {
            let page = s
                .raw
                .query(&ctx, &RawCallQuery::for_agent("cro"))
                .await
                .unwrap();
            let mut found: Vec<String> = page.items.into_iter().map(|c| c.id).collect();
            found.sort();
            found
        }
    };
    assert_eq!(all(cro.clone()).await, ["plain", "secret"]);
    assert!(all(agent("cmo")).await.is_empty());
    assert!(s.raw.get(&agent("cmo"), "plain").await.unwrap().is_none());
    assert!(
        all(CallerContext::system().with_tenant("t2"))
            .await
            .is_empty()
    );
    let cleared = agent("cmo").with_domain_clearance("revenue", Classification::Confidential);
    assert_eq!(all(cleared).await, ["secret"]);
    assert_eq!(all(sys()).await, ["plain", "secret"]);

    // Governed callers: the namespace decides (the agent's own by default).
    let grants = |own: &str| {
        Grants::new(own)
            .grant(own, Rights::OWN, false)
            .grant("cro", Rights::READ, false)
            .recall([own, "cro"])
    };
    let reader = CallerContext::agent("auditor")
        .with_tenant("t1")
        .with_grants(grants("auditor"))
        .with_domain_clearance("revenue", Classification::Restricted);
    // It reads the namespace `cro`, within its clearance (revenue only).
    assert_eq!(all(reader).await, ["secret"]);
    let outsider = CallerContext::agent("outsider")
        .with_tenant("t1")
        .with_grants(Grants::new("outsider").grant("outsider", Rights::OWN, false))
        .with_domain_clearance("revenue", Classification::Restricted);
    assert!(all(outsider.clone()).await.is_empty());
    // Nor can it prune what it cannot delete.
    let gone = s
        .raw
        .prune(&outsider, "cro", &RawRetention::default().max_calls(0))
        .await
        .unwrap();
    assert_eq!(gone, 0);
    assert_eq!(all(cro).await.len(), 2);
}

/// Bad input is refused with `InvalidInput` naming the item, and a batch
/// with one bad call (or an id already taken) writes nothing.
pub async fn raw_bad_input_writes_nothing<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let mut nul = raw("nul", "cro", 1, None);
    nul.request.system = "a\0b".into();
    let mut long = raw("long", "cro", 1, None);
    long.agent_id = "a".repeat(openvibe_protocols::MAX_LABEL_LEN + 1);
    let mut bad_id = raw("a/b", "cro", 1, None);
    bad_id.meta.namespace = "cro".into();
    for bad in [nul, long, bad_id] {
        let result = s
            .raw
            .append(&cro, vec![raw("good", "cro", 0, None), bad])
            .await;
        match result {
            // The second call is named: by the store (`[1].…`), or by the
            // service's schema as a JSON pointer into the body.
            Err(StoreError::InvalidInput { field, .. }) => {
                assert!(
                    field.starts_with("[1].") || field.starts_with("/calls/1/"),
                    "{field}"
                );
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }
    assert!(s.raw.get(&cro, "good").await.unwrap().is_none());
    s.raw
        .append(&cro, vec![raw("taken", "cro", 0, None)])
        .await
        .unwrap();
    for batch in [
        vec![raw("new", "cro", 0, None), raw("taken", "cro", 0, None)],
        vec![raw("twice", "cro", 0, None), raw("twice", "cro", 0, None)],
    ] {
        assert!(matches!(
            s.raw.append(&cro, batch).await,
            Err(StoreError::Conflict { .. })
        ));
    }
    assert!(s.raw.get(&cro, "new").await.unwrap().is_none());
    assert!(s.raw.get(&cro, "twice").await.unwrap().is_none());
    let page = s.raw.query(&cro, &RawCallQuery::new()).await.unwrap();
    assert_eq!(ids(&page.items), ["taken"]);
}

/// Retention: by count (the newest stay) and by age, for one agent only;
/// the governance retention of kind `raw_call` caps expiry on append.
pub async fn raw_retention<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let now = Utc::now();
    let minutes_ago = |m: i64| now - chrono::TimeDelta::minutes(m);
    let mut calls = Vec::new();
    for i in 0..6 {
        let mut c = raw(&format!("c{i}"), "cro", 0, None);
        c.timestamp = minutes_ago(60 - i * 10); // c0 oldest (60 min), c5 newest (10 min)
        calls.push(c);
    }
    s.raw.append(&cro, calls).await.unwrap();
    s.raw
        .append(&agent("cmo"), vec![raw("m0", "cmo", 0, None)])
        .await
        .unwrap();
    let left = |ctx: CallerContext, agent_id: &'static str| {
        let s = s.clone();
        async move {
            let page = s
                .raw
                .query(&ctx, &RawCallQuery::for_agent(agent_id))
                .await
                .unwrap();
            page.items.into_iter().map(|c| c.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        s.raw
            .prune(&cro, "cro", &RawRetention::default())
            .await
            .unwrap(),
        0
    );
    let by_age = RawRetention::default().max_age(Duration::from_secs(35 * 60));
    assert_eq!(s.raw.prune(&cro, "cro", &by_age).await.unwrap(), 3);
    assert_eq!(left(cro.clone(), "cro").await, ["c5", "c4", "c3"]);
    let by_count = RawRetention::default().max_calls(1);
    assert_eq!(s.raw.prune(&cro, "cro", &by_count).await.unwrap(), 2);
    assert_eq!(left(cro.clone(), "cro").await, ["c5"]);
    assert_eq!(
        left(agent("cmo"), "cmo").await,
        ["m0"],
        "other agents untouched"
    );

    // A governance retention for raw calls caps their expiry.
    let governed = CallerContext::agent("cro").with_tenant("t1").with_grants(
        Grants::new("cro")
            .grant("cro", Rights::OWN, false)
            .retain(openvibe_protocols::Retention {
                namespace: None,
                kind: Some("raw_call".into()),
                keep_secs: 3600,
            }),
    );
    let mut fresh = raw("fresh", "cro", 0, None);
    fresh.timestamp = now;
    let stored = s.raw.append(&governed, vec![fresh]).await.unwrap();
    let expires = stored[0].meta.expires_at.expect("capped by the retention");
    let hour = chrono::TimeDelta::hours(1);
    assert!(
        expires <= now + hour + chrono::TimeDelta::seconds(1),
        "{expires}"
    );
    assert!(
        expires >= now + hour - chrono::TimeDelta::seconds(5),
        "{expires}"
    );
}
