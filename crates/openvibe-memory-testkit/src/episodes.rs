//! Episodes: writes, filters, order, limits and delete.

use std::future::Future;

use openvibe_protocols::{Classification, Episode, EpisodeQuery, Stores};

use crate::support::{
    agent, at, episode, episode_ids, is_invalid, is_not_found, is_unauthorized, sys,
};

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
