//! Promotion: a fact or an insight copied or moved to another namespace,
//! with lineage and an audit entry.

use std::future::Future;

use openvibe_protocols::{CallerContext, FactQuery, Rights, Stores};

use super::{fact, ids_of, only};
use crate::support::{is_conflict, is_not_found, is_unauthorized};

/// Promotion: copy or move to `shared` with lineage and an audit entry;
/// read on the source and write on the target required; idempotent.
pub async fn governance_promotion<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::promotion::{Promotion, promote_fact, promote_insight};
    use openvibe_protocols::{AuditOp, AuditQuery, Insight};
    let s = factory().await;
    let audit = Some(s.audit.as_ref());
    let ann = CallerContext::user("ann")
        .with_tenant("t1")
        .with_grants(only("ann", Rights::OWN).grant("shared", Rights::OWN, false));
    let reader = CallerContext::user("ann")
        .with_tenant("t1")
        .with_grants(only("ann", Rights::OWN).grant("shared", Rights::READ, false));
    let bob = CallerContext::user("bob")
        .with_tenant("t1")
        .with_clearance(openvibe_protocols::Clearance::unrestricted())
        .with_grants(only("shared", Rights::OWN));
    s.facts.store(&ann, fact("f1", "ann")).await.unwrap();
    s.facts.store(&ann, fact("f2", "ann")).await.unwrap();

    // Copy: lineage, the source stays.
    let promotion = Promotion::to_shared().note("useful for everyone");
    let copy = promote_fact(s.facts.as_ref(), audit, &ann, "f1", &promotion)
        .await
        .unwrap();
    assert_eq!(copy.id, "f1@shared");
    assert_eq!(copy.meta.namespace, "shared");
    assert_eq!(copy.external_id.as_deref(), Some("fact:f1"));
    assert_eq!(copy.content, "f1 lives in ann");
    assert!(s.facts.get(&ann, "f1").await.unwrap().is_some());
    assert!(
        s.facts.get(&bob, "f1@shared").await.unwrap().is_some(),
        "bob reads shared"
    );
    assert!(
        s.facts.get(&bob, "f1").await.unwrap().is_none(),
        "not ann's namespace"
    );
    // Twice: still one shared record, nothing rewritten.
    let again = promote_fact(s.facts.as_ref(), audit, &ann, "f1", &promotion)
        .await
        .unwrap();
    assert_eq!(again.id, copy.id);
    assert_eq!(
        again.meta.updated_at, copy.meta.updated_at,
        "unchanged: not written again"
    );
    let shared = FactQuery::new().namespaces(["shared"]).limit(10);
    assert_eq!(
        ids_of(&s.facts.query(&bob, &shared).await.unwrap()),
        ["f1@shared"]
    );

    // Refusals change nothing: no write right on the target, no delete
    // right on the source of a move, an unreadable source.
    assert!(is_unauthorized(
        promote_fact(
            s.facts.as_ref(),
            audit,
            &reader,
            "f2",
            &Promotion::to_shared()
        )
        .await
    ));
    let no_delete = CallerContext::user("ann").with_tenant("t1").with_grants(
        only(
            "ann",
            Rights {
                delete: false,
                ..Rights::OWN
            },
        )
        .grant("shared", Rights::OWN, false),
    );
    assert!(is_unauthorized(
        promote_fact(
            s.facts.as_ref(),
            audit,
            &no_delete,
            "f2",
            &Promotion::to_shared().moving()
        )
        .await
    ));
    assert!(is_not_found(
        promote_fact(s.facts.as_ref(), audit, &bob, "f2", &Promotion::to_shared()).await
    ));
    // Already there: a conflict with where it lives.
    assert!(is_conflict(
        promote_fact(s.facts.as_ref(), audit, &ann, "f2", &Promotion::to("ann")).await
    ));
    assert_eq!(
        ids_of(&s.facts.query(&bob, &shared).await.unwrap()),
        ["f1@shared"]
    );

    // Move: the source goes.
    let moved = promote_fact(
        s.facts.as_ref(),
        audit,
        &ann,
        "f2",
        &Promotion::to_shared().moving(),
    )
    .await
    .unwrap();
    assert_eq!(moved.id, "f2@shared");
    assert!(s.facts.get(&ann, "f2").await.unwrap().is_none());

    // Insights are promoted as facts.
    let insight = Insight::new("i1", "ann", "ann learned this", 0.9).namespace("ann");
    s.insights.store(&ann, insight).await.unwrap();
    let published = promote_insight(
        s.insights.as_ref(),
        s.facts.as_ref(),
        audit,
        &ann,
        "i1",
        &Promotion::to_shared(),
    )
    .await
    .unwrap();
    assert_eq!(
        (published.id.as_str(), published.external_id.as_deref()),
        ("i1@shared", Some("insight:i1"))
    );
    assert_eq!(published.content, "ann learned this");

    // The audit trail has each promotion with its lineage.
    let admin = CallerContext::system().with_tenant("t1");
    let promotions = s
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
    assert_eq!(promotions.len(), 4, "{promotions:#?}");
    let first = promotions
        .iter()
        .find(|e| e.record_id.as_deref() == Some("f1@shared"))
        .unwrap();
    let lineage = first.filters.as_ref().unwrap();
    assert_eq!(lineage["source_id"], "f1");
    assert_eq!(lineage["source_namespace"], "ann");
    assert_eq!(lineage["note"], "useful for everyone");
    assert_eq!(first.principal, "user:ann");
    assert_eq!(first.namespace.as_deref(), Some("shared"));
}
