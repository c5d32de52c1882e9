//! Provenance (issue 37, seed 003 and 004): a caller's stamped source on
//! every record it writes and in the audit trail with the tool it came
//! through; a fact's metadata; one result per lineage when recall merges a
//! record and its promoted copies; versioned plan contexts.

use std::future::Future;

use openvibe_protocols::promotion::{Promotion, one_per_lineage, promote_fact};
use openvibe_protocols::{
    AuditOp, AuditQuery, CallerContext, Clearance, Fact, FactQuery, Insight, NewKnowledge, NewPlan,
    PlanContext, StoreError, Stores,
};
use serde_json::json;

use crate::support::{agent, episode, fact_ids, is_invalid, sys};

/// A caller with a stamped source writes that source on every record kind,
/// whatever the record says; the audit entry of the write names the source
/// and the tool the call came through. A caller without one keeps the
/// record's own.
pub async fn provenance_source_is_stamped_from_the_caller<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cursor = agent("cursor")
        .with_source("cursor-ide")
        .with_tool("mcp:saveMemory");
    let fact = s
        .facts
        .store(&cursor, Fact::new("f1", "use tabs").source("l9-kernel"))
        .await
        .unwrap();
    assert_eq!(
        fact.meta.source, "cursor-ide",
        "the caller cannot claim another source"
    );
    assert_eq!(
        s.facts
            .get(&cursor, "f1")
            .await
            .unwrap()
            .unwrap()
            .meta
            .source,
        "cursor-ide"
    );
    let updated = s
        .facts
        .update(&cursor, Fact::new("f1", "use spaces").source("someone"))
        .await
        .unwrap();
    assert_eq!(updated.meta.source, "cursor-ide");
    let mut e = episode("e1", "cursor", 0);
    e.meta.source = "forged".into();
    assert_eq!(
        s.episodes.store(&cursor, e).await.unwrap().meta.source,
        "cursor-ide"
    );
    let mut insight = Insight::new("i1", "cursor", "tabs win", 0.7);
    insight.meta.source = "forged".into();
    assert_eq!(
        s.insights
            .store(&cursor, insight)
            .await
            .unwrap()
            .meta
            .source,
        "cursor-ide"
    );
    let knowledge = s
        .knowledge
        .store_knowledge(
            &cursor,
            NewKnowledge {
                source: Some("forged".into()),
                embedding: Some(vec![0.5; crate::semantic::DIMENSIONS]),
                ..NewKnowledge::new("the build uses cargo")
            },
        )
        .await
        .unwrap();
    assert_eq!(knowledge.meta.source, "cursor-ide");
    let mut raw = crate::raw::raw("r1", "cursor", 0, None);
    raw.meta.source = "forged".into();
    let raw = s.raw.append(&cursor, vec![raw]).await.unwrap();
    assert_eq!(raw[0].meta.source, "cursor-ide");
    // Without a stamped source the record's own is kept.
    let own = s
        .facts
        .store(
            &agent("kernel"),
            Fact::new("f2", "ship it").source("l9-kernel"),
        )
        .await
        .unwrap();
    assert_eq!(own.meta.source, "l9-kernel");
    // The audit trail: the write's source and tool, beside the principal.
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    let write = trail
        .iter()
        .find(|e| e.operation == AuditOp::Insert && e.record_id.as_deref() == Some("f1"))
        .expect("the insert of f1 is audited");
    assert_eq!(write.principal, "agent:cursor");
    assert_eq!(write.source.as_deref(), Some("cursor-ide"));
    assert_eq!(write.tool.as_deref(), Some("mcp:saveMemory"));
    let kernel = trail
        .iter()
        .find(|e| e.operation == AuditOp::Insert && e.record_id.as_deref() == Some("f2"))
        .expect("the insert of f2 is audited");
    assert_eq!(kernel.source.as_deref(), Some("l9-kernel"));
    // A call that names no tool: none in process, the route over the wire.
    assert!(
        kernel
            .tool
            .as_deref()
            .is_none_or(|t| t.starts_with("http:")),
        "{:?}",
        kernel.tool
    );
}

/// A fact's metadata is stored and read back as given, and bounded: too
/// large or with a NUL, the write is refused and nothing is written.
pub async fn provenance_fact_metadata_round_trips_and_is_bounded<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let fact = Fact::new("f1", "the IDE saved this")
        .metadata("agent", "cursor")
        .metadata("tool_name", "saveMemory")
        .metadata("notes", json!({"file": "src/main.rs", "lines": [1, 2]}));
    let stored = s.facts.store(&sys(), fact.clone()).await.unwrap();
    assert_eq!(stored.metadata, fact.metadata);
    let got = s.facts.get(&sys(), "f1").await.unwrap().unwrap();
    assert_eq!(got.metadata, fact.metadata);
    assert_eq!(got.metadata["notes"]["lines"], json!([1, 2]));
    // Without metadata, none comes back.
    let plain = s
        .facts
        .store(&sys(), Fact::new("f2", "no metadata"))
        .await
        .unwrap();
    assert!(plain.metadata.is_empty());
    let big = Fact::new("f3", "too much")
        .metadata("notes", "x".repeat(openvibe_protocols::MAX_METADATA_BYTES));
    assert!(is_invalid(s.facts.store(&sys(), big).await));
    let nul = Fact::new("f3", "a NUL").metadata("notes", "a\u{0}b");
    assert!(is_invalid(s.facts.store(&sys(), nul).await));
    assert_eq!(s.facts.get(&sys(), "f3").await.unwrap(), None);
}

/// Recall across a caller's own namespace and `shared` finds a fact and its
/// promoted copy; one result per lineage keeps the caller's own, and an
/// auto-promoted-style copy of an insight counts as the insight's lineage.
pub async fn provenance_merged_recall_is_one_per_lineage<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let ann = CallerContext::user("ann").with_tenant("t1");
    s.facts
        .store(&ann, Fact::new("f1", "ann prefers tabs").namespace("ann"))
        .await
        .unwrap();
    s.facts
        .store(
            &ann,
            Fact::new("f2", "ann ships on fridays").namespace("ann"),
        )
        .await
        .unwrap();
    let copy = promote_fact(
        s.facts.as_ref(),
        Some(s.audit.as_ref()),
        &ann,
        "f1",
        &Promotion::to_shared(),
    )
    .await
    .unwrap();
    assert_eq!(copy.id, "f1@shared");
    let query = FactQuery::default()
        .text("ann")
        .namespaces(["ann".to_owned(), "shared".to_owned()]);
    let both = s.facts.query(&ann, &query).await.unwrap();
    let mut ids = fact_ids(&both);
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["f1", "f1@shared", "f2"],
        "the store returns every record"
    );
    let merged = one_per_lineage(&ann, both, |f| f);
    let mut ids = fact_ids(&merged);
    ids.sort_unstable();
    assert_eq!(ids, ["f1", "f2"], "one per lineage, the caller's own");
    // Someone who reads only `shared` keeps the copy.
    let bob = CallerContext::user("bob")
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted());
    let shared = s
        .facts
        .query(
            &bob,
            &FactQuery::default()
                .text("ann")
                .namespaces(["shared".to_owned()]),
        )
        .await
        .unwrap();
    assert_eq!(
        fact_ids(&one_per_lineage(&bob, shared, |f| f)),
        ["f1@shared"]
    );
}

/// A plan context moves to the next version at every save; a save that
/// expects a version no longer there (or expects none where one is) is a
/// conflict and writes nothing.
pub async fn provenance_plan_context_versions<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let ann = CallerContext::user("ann").with_tenant("t1");
    let plan = s
        .working
        .create_plan(
            &ann,
            NewPlan {
                goal_event: "goal".into(),
                ..NewPlan::default()
            },
        )
        .await
        .unwrap();
    let first = s
        .working
        .store_plan_context(
            &ann,
            PlanContext::new(&plan.id, json!({"step": 1})).expecting(0),
        )
        .await
        .unwrap();
    assert_eq!(first.version, 1);
    assert_eq!(first.expected_version, None);
    let save = |step: i64, expecting: u64| {
        s.working.store_plan_context(
            &ann,
            PlanContext::new(&plan.id, json!({"step": step})).expecting(expecting),
        )
    };
    let conflict = save(9, 0).await;
    assert!(
        matches!(conflict, Err(StoreError::Conflict { .. })),
        "{conflict:?}"
    );
    let second = save(2, 1).await.unwrap();
    assert_eq!(second.version, 2);
    let stale = save(3, 1).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    let stored = s
        .working
        .get_plan_context(&ann, &plan.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.version, &stored.context), (2, &json!({"step": 2})));
    // Without an expectation the last write wins, and still counts.
    let third = s
        .working
        .store_plan_context(&ann, PlanContext::new(&plan.id, json!({"step": 3})))
        .await
        .unwrap();
    assert_eq!(third.version, 3);
}
