//! The source design's access matrix (seed 003), on every backend: its
//! governance file resolved as the edges resolve it, then who writes
//! where, who reads what, project isolation, and what C may never do.

use std::future::Future;

use openvibe_governance::{Governance, Resolved, examples};
use openvibe_protocols::{CallerContext, Fact, FactQuery, StoreError, Stores};

use super::{fact, ids_of};
use crate::support::{is_not_found, is_unauthorized};

/// L (the kernel) and C (the IDE) of seed 003, in tenant `t1` and project `project`.
fn seed_003_actors(project: &str) -> (CallerContext, CallerContext) {
    let env = |name: &str| Some(format!("key-{name}"));
    let gov = Governance::from_yaml_with_env(examples::SEED_003, "seed-003.governance.yaml", env)
        .unwrap();
    let l = gov.resolve_api_key("key-MCP_API_KEY_L").unwrap();
    let c = gov.resolve_api_key("key-MCP_API_KEY_C").unwrap();
    let ctx = |who: &Resolved| {
        gov.context("t1", who)
            .with_project(project)
            .with_clearance(openvibe_protocols::Clearance::unrestricted())
    };
    (ctx(&l), ctx(&c))
}

/// The phase-4 validation list of seed 003, on this backend: who writes
/// where, who reads what, project isolation, and what C may never do.
pub async fn governance_seed_003_access_matrix<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let (l, c) = seed_003_actors("l9");
    // L writes to every scope; C to developer and global.
    for (who, id, ns) in [
        (&l, "l-dev", "developer"),
        (&l, "l-global", "global"),
        (&l, "l-private", "l-private"),
        (&c, "c-dev", "developer"),
        (&c, "c-global", "global"),
    ] {
        let stored = s.facts.store(who, fact(id, ns)).await.unwrap();
        assert_eq!(stored.meta.namespace, ns);
        assert_eq!(
            stored.meta.project_id.as_deref(),
            (ns != "global").then_some("l9"),
            "project-scoped namespaces keep the project; global spans projects"
        );
    }
    // C cannot write to l-private: refused, nothing written.
    let refused = s.facts.store(&c, fact("c-private", "l-private")).await;
    match &refused {
        Err(StoreError::Unauthorized { reason, .. }) => {
            assert!(
                reason.contains("`l-private`") && reason.contains("no write right"),
                "{reason}"
            );
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(s.facts.get(&l, "c-private").await.unwrap().is_none());
    // A write with no namespace goes home (C: developer).
    let home = s
        .facts
        .store(&c, Fact::new("c-home", "no namespace"))
        .await
        .unwrap();
    assert_eq!(home.meta.namespace, "developer");
    assert_eq!(home.meta.owner, "service:cursor-ide");

    let all = FactQuery::new().limit(100);
    // C: developer + global only, both actors' records.
    assert_eq!(
        ids_of(&s.facts.query(&c, &all).await.unwrap()),
        ["c-dev", "c-global", "c-home", "l-dev", "l-global"]
    );
    // L: everything.
    assert_eq!(
        ids_of(&s.facts.query(&l, &all).await.unwrap()),
        [
            "c-dev",
            "c-global",
            "c-home",
            "l-dev",
            "l-global",
            "l-private"
        ]
    );
    // An explicit namespace list is intersected, never widened.
    let private_only = all.clone().namespaces(["l-private"]);
    assert!(s.facts.query(&c, &private_only).await.unwrap().is_empty());
    assert_eq!(
        ids_of(&s.facts.query(&l, &private_only).await.unwrap()),
        ["l-private"]
    );
    let mixed = all.clone().namespaces(["l-private", "global"]);
    assert_eq!(
        ids_of(&s.facts.query(&c, &mixed).await.unwrap()),
        ["c-global", "l-global"]
    );
    assert!(s.facts.get(&c, "l-private").await.unwrap().is_none());
    assert!(s.facts.get(&c, "l-dev").await.unwrap().is_some());

    // Project isolation: in another project C sees only global.
    let (l_x, c_x) = seed_003_actors("future-x");
    assert_eq!(
        ids_of(&s.facts.query(&c_x, &all).await.unwrap()),
        ["c-global", "l-global"]
    );
    assert_eq!(
        ids_of(&s.facts.query(&l_x, &all).await.unwrap()),
        ["c-global", "l-global"]
    );
    assert!(s.facts.get(&l_x, "l-private").await.unwrap().is_none());

    // C deletes and updates only its own; L manages everyone's.
    match s.facts.delete(&c, "l-dev").await {
        Err(StoreError::Unauthorized { reason, .. }) => {
            assert!(
                reason.contains("owned by service:l-cto") && reason.contains("manage"),
                "{reason}"
            );
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(is_unauthorized(
        s.facts
            .update(&c, Fact::new("l-global", "changed by C"))
            .await
    ));
    assert!(is_not_found(s.facts.delete(&c, "l-private").await));
    assert_eq!(
        s.facts.get(&l, "l-global").await.unwrap().unwrap().content,
        "l-global lives in global",
        "a refused change modifies nothing"
    );
    s.facts.delete(&c, "c-global").await.unwrap();
    let changed = s
        .facts
        .update(&l, Fact::new("c-dev", "fixed by L"))
        .await
        .unwrap();
    assert_eq!(
        changed.meta.owner, "service:cursor-ide",
        "manage keeps the owner"
    );
    assert_eq!(changed.meta.namespace, "developer", "and the namespace");
    s.facts.delete(&l, "c-dev").await.unwrap();
    assert_eq!(
        ids_of(&s.facts.query(&l, &all).await.unwrap()),
        ["c-home", "l-dev", "l-global", "l-private"]
    );
}
