//! Governance through the gateway: contexts carry their principal's grants,
//! agents' writes land in their home namespace, other agents cannot see
//! them, publishing and automatic promotion go through the promotion path
//! and are audited.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use openvibe_governance::Governance;
use openvibe_memory::{ClearanceProfile, MemoryGateway, in_memory_stores};
use openvibe_protocols::Classification::Public;
use openvibe_protocols::{AuditOp, AuditQuery, CallerContext, FactQuery, Insight, InsightQuery};

const POLICY: &str = r#"
namespaces:
  shared: { read: ["*"], write: ["*"], delete: ["*"], manage: ["service:system"] }
auto_promote:
  enabled: true
  min_confidence: 0.9
"#;

fn gateway() -> MemoryGateway {
    let governance = Governance::from_yaml(POLICY, "policy.yaml").unwrap();
    MemoryGateway::new()
        .with_stores(in_memory_stores())
        .with_tenant("acme")
        .with_governance(Arc::new(governance))
}

#[tokio::test]
async fn agents_are_governed_and_promote_automatically() {
    let gateway = gateway();
    let stores = gateway.stores().unwrap().clone();
    let cro = gateway.agent_memory("cro", &ClearanceProfile::new("cro"));
    let cmo = gateway.agent_memory("cmo", &ClearanceProfile::new("cmo"));
    let grants = cro.context().grants().expect("governed");
    assert_eq!(grants.home(), "cro");
    assert_eq!(grants.recall_namespaces(), vec!["cro", "shared"]);

    // A private insight stays in cro's namespace: cmo cannot read it.
    let private = cro
        .store_insight(Insight::new("i1", "cro", "pricing hunch", 0.6).classification(Public))
        .await
        .unwrap();
    assert_eq!(private.meta.namespace, "cro");
    assert!(
        stores
            .insights
            .get(cmo.context(), "i1")
            .await
            .unwrap()
            .is_none()
    );

    // An explicit decision at high confidence is promoted to `shared`.
    let decision = Insight::new("i2", "cro", "We sell annual plans only", 0.95)
        .tags(["decision"])
        .classification(Public);
    cro.store_insight(decision).await.unwrap();
    let shared = cmo
        .workspace_facts(&FactQuery::new().namespaces(["shared"]))
        .await
        .unwrap();
    let ids: Vec<&str> = shared.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["i2@shared"]);
    assert_eq!(shared[0].meta.owner, "agent:cro");
    // Seed 004: an automatic copy says so.
    assert_eq!(shared[0].meta.source, "auto-promote");
    for tag in ["decision", "shared", "promoted:auto"] {
        assert!(
            shared[0].tags.iter().any(|t| t == tag),
            "{:?}",
            shared[0].tags
        );
    }

    // Publishing goes through the same path (and is idempotent).
    cro.publish_to_workspace(0.5).await.unwrap();
    cro.publish_to_workspace(0.5).await.unwrap();
    let shared = cmo
        .workspace_facts(&FactQuery::new().namespaces(["shared"]))
        .await
        .unwrap();
    let mut ids: Vec<&str> = shared.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["i1@shared", "i2@shared"]);
    // A published copy is no automatic one.
    let published = shared.iter().find(|f| f.id == "i1@shared").unwrap();
    assert!(!published.tags.iter().any(|t| t == "promoted:auto"));
    assert_ne!(published.meta.source, "auto-promote");
    assert!(
        cmo.recall_insights(InsightQuery::new())
            .await
            .unwrap()
            .is_empty(),
        "cmo has no insights of its own"
    );

    let admin = CallerContext::system().with_tenant("acme");
    let promotions = stores
        .audit
        .query(
            &admin,
            &AuditQuery {
                operation: Some(AuditOp::Promote),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert_eq!(promotions.len(), 5, "auto + 2 publishes of 2 insights");
    assert!(promotions.iter().all(|p| p.principal == "agent:cro"));
}
