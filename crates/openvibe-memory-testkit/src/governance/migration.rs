//! Namespace administration: counts per kind and namespace, and moving
//! legacy records into a namespace in batches.

use std::future::Future;

use openvibe_protocols::{
    CallerContext, Classification, Fact, FactQuery, NewSession, Rights, Stores,
};

use super::{fact, only};
use crate::support::{is_invalid, is_unauthorized};

/// Namespace administration: counts per kind and namespace, and moving
/// legacy (namespace-less) records into a namespace in resumable batches;
/// privileged callers only.
pub async fn governance_namespace_migration<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{AuditOp, AuditQuery, NamespaceCount};
    let s = factory().await;
    let admin = CallerContext::system().with_tenant("t1");
    for i in 0..5 {
        s.facts
            .store(
                &admin,
                Fact::new(format!("legacy{i}"), "old").classification(Classification::Public),
            )
            .await
            .unwrap();
    }
    s.facts.store(&admin, fact("kept", "team")).await.unwrap();
    s.working
        .create_session(&admin, NewSession::default())
        .await
        .unwrap();
    let count = |kind: &str, ns: &str, records: u64| NamespaceCount {
        kind: kind.into(),
        namespace: ns.into(),
        records,
    };
    assert_eq!(
        s.admin.namespace_counts(&admin).await.unwrap(),
        [
            count("fact", "", 5),
            count("fact", "team", 1),
            count("session", "", 1)
        ]
    );
    let reader = CallerContext::agent("r")
        .with_tenant("t1")
        .with_grants(only("default", Rights::READ));
    assert!(is_unauthorized(s.admin.namespace_counts(&reader).await));
    assert!(is_unauthorized(
        s.admin
            .move_namespace(&reader, "fact", "", "default", 10)
            .await
    ));
    assert!(is_invalid(
        s.admin
            .move_namespace(&admin, "pebble", "", "default", 10)
            .await
    ));
    assert!(
        s.facts
            .query(&reader, &FactQuery::new())
            .await
            .unwrap()
            .is_empty(),
        "legacy records are invisible to governed callers"
    );
    let mut batches = Vec::new();
    loop {
        let moved = s
            .admin
            .move_namespace(&admin, "fact", "", "default", 2)
            .await
            .unwrap();
        batches.push(moved);
        if moved == 0 {
            break;
        }
    }
    assert_eq!(batches, [2, 2, 1, 0]);
    assert_eq!(
        s.admin
            .move_namespace(&admin, "session", "", "default", 10)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        s.admin.namespace_counts(&admin).await.unwrap(),
        [
            count("fact", "default", 5),
            count("fact", "team", 1),
            count("session", "default", 1)
        ]
    );
    assert_eq!(
        s.facts
            .query(&reader, &FactQuery::new())
            .await
            .unwrap()
            .len(),
        5
    );
    let moved = s
        .audit
        .query(
            &admin,
            &AuditQuery {
                operation: Some(AuditOp::Update),
                namespace: Some("default".into()),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.len(), 6, "every moved record is audited");
}
