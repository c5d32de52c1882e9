//! A namespace's rules on every record kind: a record's namespace is fixed
//! at creation, each change needs its right, and working and semantic
//! records are placed and governed like every other record.

use std::future::Future;

use openvibe_protocols::{
    CallerContext, Fact, NewKnowledge, NewPlan, NewSession, Rights, StoreError, Stores,
};
use serde_json::json;

use super::{fact, only};
use crate::support::{is_conflict, is_not_found, is_unauthorized};

/// A record's namespace is fixed at creation; rights are checked per
/// change (write for updates, delete for deletes) on every record kind.
pub async fn governance_changes_need_the_right<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let writer = CallerContext::agent("w")
        .with_tenant("t1")
        .with_grants(only("team", Rights::OWN).grant("other", Rights::OWN, false));
    let reader = CallerContext::agent("w")
        .with_tenant("t1")
        .with_grants(only("team", Rights::READ));
    s.facts.store(&writer, fact("f1", "team")).await.unwrap();
    // Moving it by naming another namespace is refused (a conflict with
    // the stored record).
    assert!(is_conflict(
        s.facts.store(&writer, fact("f1", "other")).await
    ));
    assert!(is_conflict(
        s.facts.update(&writer, fact("f1", "other")).await
    ));
    // The same owner with read-only rights can neither change nor delete.
    match s.facts.update(&reader, Fact::new("f1", "x")).await {
        Err(StoreError::Unauthorized { reason, .. }) => {
            assert!(reason.contains("no write right"), "{reason}");
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    match s.facts.delete(&reader, "f1").await {
        Err(StoreError::Unauthorized { reason, .. }) => {
            assert!(reason.contains("no delete right"), "{reason}");
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    let kept = s.facts.get(&reader, "f1").await.unwrap().unwrap();
    assert_eq!(kept.content, "f1 lives in team");
    assert_eq!(kept.meta.namespace, "team");
    // An update naming no namespace keeps it.
    let updated = s
        .facts
        .update(&writer, Fact::new("f1", "kept home"))
        .await
        .unwrap();
    assert_eq!(updated.meta.namespace, "team");

    // Episodes and insights follow the same rule.
    let ep = crate::support::episode("e1", "w", 0).namespace("team");
    s.episodes.store(&writer, ep).await.unwrap();
    assert!(is_unauthorized(s.episodes.delete(&reader, "e1").await));
    let blind = CallerContext::agent("w")
        .with_tenant("t1")
        .with_grants(only("else", Rights::ALL));
    assert!(s.episodes.get(&blind, "e1").await.unwrap().is_none());
    assert!(is_not_found(s.episodes.delete(&blind, "e1").await));
    let insight = openvibe_protocols::Insight::new("i1", "w", "an insight", 0.8).namespace("team");
    s.insights.store(&writer, insight).await.unwrap();
    assert!(s.insights.get(&blind, "i1").await.unwrap().is_none());
    assert!(is_unauthorized(s.insights.delete(&reader, "i1").await));
    s.insights.delete(&writer, "i1").await.unwrap();
    s.episodes.delete(&writer, "e1").await.unwrap();
    s.facts.delete(&writer, "f1").await.unwrap();
}

/// Working and semantic records are placed in the caller's home namespace
/// and governed like every other record.
pub async fn governance_working_and_semantic_records<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let ann = CallerContext::user("ann")
        .with_tenant("t1")
        .with_grants(only("ann", Rights::OWN).grant("shared", Rights::OWN, false));
    let bob_reads_ann = CallerContext::user("ann")
        .with_tenant("t1")
        .with_grants(only("bob", Rights::OWN));
    let session = s
        .working
        .create_session(&ann, NewSession::default())
        .await
        .unwrap();
    assert_eq!(session.meta.namespace, "ann");
    let plan = s
        .working
        .create_plan(
            &ann,
            NewPlan {
                goal_event: "g".into(),
                goal_data: json!({}),
                response_event: "g.done".into(),
                ..NewPlan::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(plan.meta.namespace, "ann");
    // Plan state under a policy: appends and increments as any write.
    s.working
        .append_state(&ann, &plan.id, "history", json!("a"))
        .await
        .unwrap();
    let n = s
        .working
        .increment_state(&ann, &plan.id, "n", 2)
        .await
        .unwrap();
    assert_eq!(n.value, json!(2));
    // Same principal, but a policy without `ann`: nothing is visible.
    assert!(is_not_found(
        s.working
            .append_state(&bob_reads_ann, &plan.id, "history", json!("b"))
            .await
    ));
    assert!(is_not_found(
        s.working
            .increment_state(&bob_reads_ann, &plan.id, "n", 1)
            .await
    ));
    assert!(
        s.working
            .get_session(&bob_reads_ann, &session.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.working
            .get_plan(&bob_reads_ann, &plan.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(is_not_found(
        s.working.delete_plan(&bob_reads_ann, &plan.id).await
    ));
    let k = s
        .knowledge
        .store_knowledge(
            &ann,
            NewKnowledge {
                is_public: true,
                ..NewKnowledge::new("ann's public note")
            },
        )
        .await
        .unwrap();
    assert_eq!(k.meta.namespace, "ann");
    assert!(
        s.knowledge
            .get_knowledge(&bob_reads_ann, &k.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.knowledge
            .get_knowledge(&ann, &k.id)
            .await
            .unwrap()
            .is_some()
    );
    // No write right at home: creating anything is refused.
    let read_only = CallerContext::user("ann")
        .with_tenant("t1")
        .with_grants(only("ann", Rights::READ));
    assert!(is_unauthorized(
        s.working
            .create_session(&read_only, NewSession::default())
            .await
    ));
    assert!(is_unauthorized(
        s.knowledge
            .store_knowledge(&read_only, NewKnowledge::new("x"))
            .await
    ));
    // Nor is changing the plan's state, and nothing changes.
    assert!(is_unauthorized(
        s.working
            .append_state(&read_only, &plan.id, "history", json!("c"))
            .await
    ));
    assert!(is_unauthorized(
        s.working
            .increment_state(&read_only, &plan.id, "n", 1)
            .await
    ));
    let state = s.working.list_state(&ann, &plan.id).await.unwrap();
    let values: Vec<_> = state.into_iter().map(|e| (e.key, e.value)).collect();
    assert_eq!(
        values,
        vec![
            ("history".to_owned(), json!(["a"])),
            ("n".to_owned(), json!(2))
        ]
    );
}
