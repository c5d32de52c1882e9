//! The audit trail: what it records of each change, search and refusal,
//! its filters and pages, and its hash chain per tenant.

use std::future::Future;

use openvibe_protocols::{
    CallerContext, Fact, FactQuery, NewKnowledge, NewSession, Rights, Stores,
};
use serde_json::json;

use super::{fact, only};
use crate::support::{is_invalid, is_unauthorized, sys};

/// The audit trail: every insert, update and delete with the record's
/// namespace and project, every search with its filters and top k, every
/// refused change with its reason; read back by principal, namespace,
/// operation and time; a caller that is not privileged reads only its own.
pub async fn governance_audit_trail<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{AuditOp, AuditQuery, AuditStatus, KnowledgeQuery};
    let s = factory().await;
    let start = chrono::Utc::now() - chrono::Duration::seconds(5);
    let ann = CallerContext::user("ann")
        .with_tenant("t1")
        .with_project("p1")
        .with_grants(only("team", Rights::OWN).grant("lab", Rights::OWN, true));
    let bob = CallerContext::user("bob")
        .with_tenant("t1")
        .with_clearance(openvibe_protocols::Clearance::unrestricted())
        .with_grants(only("team", Rights::OWN));
    s.facts.store(&ann, fact("f1", "team")).await.unwrap();
    s.facts.store(&ann, fact("f2", "lab")).await.unwrap();
    s.facts
        .update(&ann, Fact::new("f1", "changed"))
        .await
        .unwrap();
    let q = FactQuery::new().text("changed").limit(7);
    s.facts.query(&ann, &q).await.unwrap();
    assert!(is_unauthorized(s.facts.delete(&bob, "f1").await));
    s.facts.delete(&ann, "f1").await.unwrap();
    s.episodes
        .store(&ann, crate::support::episode("e1", "ann", 0))
        .await
        .unwrap();
    let k = s
        .knowledge
        .store_knowledge(&ann, NewKnowledge::new("a note"))
        .await
        .unwrap();
    s.knowledge
        .query_knowledge(
            &ann,
            &KnowledgeQuery {
                top_k: 3,
                ..KnowledgeQuery::by_text("note")
            },
        )
        .await
        .unwrap();
    let session = s
        .working
        .create_session(&ann, NewSession::default())
        .await
        .unwrap();
    s.audit.flush().await.unwrap();

    let admin = CallerContext::system().with_tenant("t1");
    let trail = s.audit.query(&admin, &AuditQuery::new()).await.unwrap();
    assert!(
        trail.windows(2).all(|w| w[0].chain_seq > w[1].chain_seq),
        "newest first, in the order the trail was written"
    );
    let mut seen: Vec<(AuditOp, String, Option<String>, AuditStatus, String)> = trail
        .iter()
        .map(|e| {
            (
                e.operation,
                e.kind.clone(),
                e.record_id.clone(),
                e.status,
                e.principal.clone(),
            )
        })
        .collect();
    seen.sort_by_key(|e| format!("{e:?}"));
    let entry = |op, kind: &str, id: Option<&str>, status, who: &str| {
        (
            op,
            kind.to_owned(),
            id.map(str::to_owned),
            status,
            who.to_owned(),
        )
    };
    let mut want = vec![
        entry(
            AuditOp::Insert,
            "fact",
            Some("f1"),
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(
            AuditOp::Insert,
            "fact",
            Some("f2"),
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(
            AuditOp::Update,
            "fact",
            Some("f1"),
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(AuditOp::Search, "fact", None, AuditStatus::Ok, "user:ann"),
        entry(
            AuditOp::Delete,
            "fact",
            Some("f1"),
            AuditStatus::Refused,
            "user:bob",
        ),
        entry(
            AuditOp::Delete,
            "fact",
            Some("f1"),
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(
            AuditOp::Insert,
            "episode",
            Some("e1"),
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(
            AuditOp::Insert,
            "knowledge",
            Some(&k.id),
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(
            AuditOp::Search,
            "knowledge",
            None,
            AuditStatus::Ok,
            "user:ann",
        ),
        entry(
            AuditOp::Insert,
            "session",
            Some(&session.id),
            AuditStatus::Ok,
            "user:ann",
        ),
    ];
    want.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(seen, want);

    // Details: placement of changes, filters and top k of searches, reasons of refusals.
    let f2 = trail
        .iter()
        .find(|e| e.record_id.as_deref() == Some("f2"))
        .unwrap();
    assert_eq!(
        (f2.namespace.as_deref(), f2.project_id.as_deref()),
        (Some("lab"), Some("p1"))
    );
    let search = trail
        .iter()
        .find(|e| e.operation == AuditOp::Search && e.kind == "fact")
        .unwrap();
    assert_eq!(search.top_k, Some(7));
    let filters = search.filters.as_ref().unwrap();
    assert_eq!(filters["text"], "changed");
    assert_eq!(filters["scope"], json!(["team"]));
    let refused = trail
        .iter()
        .find(|e| e.status == AuditStatus::Refused)
        .unwrap();
    assert!(
        refused
            .reason
            .as_deref()
            .unwrap()
            .contains("owned by user:ann")
    );

    // Filters of the query API.
    let by = |q: AuditQuery| {
        let s = &s;
        let admin = admin.clone();
        async move { s.audit.query(&admin, &q).await.unwrap() }
    };
    let bobs = by(AuditQuery {
        principal: Some("user:bob".into()),
        ..AuditQuery::new()
    })
    .await;
    assert_eq!(bobs.len(), 1);
    let lab = by(AuditQuery {
        namespace: Some("lab".into()),
        ..AuditQuery::new()
    })
    .await;
    assert_eq!(lab.len(), 1);
    let deletes = by(AuditQuery {
        operation: Some(AuditOp::Delete),
        ..AuditQuery::new()
    })
    .await;
    assert_eq!(deletes.len(), 2);
    let window = by(AuditQuery {
        since: Some(start),
        until: Some(chrono::Utc::now() + chrono::Duration::seconds(5)),
        limit: 3,
        ..AuditQuery::new()
    })
    .await;
    assert_eq!(window.len(), 3);
    let before = by(AuditQuery {
        until: Some(start),
        ..AuditQuery::new()
    })
    .await;
    assert!(before.is_empty());
    // Not privileged: only one's own entries; another tenant: none.
    let own = s.audit.query(&bob, &AuditQuery::new()).await.unwrap();
    assert!(own.iter().all(|e| e.principal == "user:bob") && own.len() == 1);
    let other = CallerContext::system().with_tenant("t2");
    assert!(
        s.audit
            .query(&other, &AuditQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
}

/// The audit trail filters by record kind, record and status, and pages
/// by cursor in its order (newest first) without losing or repeating an
/// entry.
pub async fn governance_audit_filters_and_pages<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{AuditQuery, AuditStatus};
    let s = factory().await;
    let ann = CallerContext::user("ann")
        .with_tenant("t1")
        .with_grants(only("team", Rights::OWN));
    let bob = CallerContext::user("bob")
        .with_tenant("t1")
        .with_clearance(openvibe_protocols::Clearance::unrestricted())
        .with_grants(only("team", Rights::OWN));
    for i in 0..7 {
        s.facts
            .store(&ann, fact(&format!("a{i}"), "team"))
            .await
            .unwrap();
    }
    s.facts
        .update(&ann, Fact::new("a3", "changed"))
        .await
        .unwrap();
    assert!(is_unauthorized(s.facts.delete(&bob, "a3").await));
    s.audit.flush().await.unwrap();
    let about = s
        .audit
        .query(
            &sys(),
            &AuditQuery {
                record_id: Some("a3".into()),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        about.len(),
        3,
        "insert, update and bob's refused delete: {about:?}"
    );
    assert!(about.iter().all(|e| e.record_id.as_deref() == Some("a3")));
    let refused = s
        .audit
        .query(
            &sys(),
            &AuditQuery {
                status: Some(AuditStatus::Refused),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].principal, "user:bob");
    let facts_only = AuditQuery {
        kind: Some("fact".into()),
        limit: 3,
        ..AuditQuery::new()
    };
    let whole = s
        .audit
        .query(
            &sys(),
            &AuditQuery {
                limit: 100,
                ..facts_only.clone()
            },
        )
        .await
        .unwrap();
    assert!(whole.iter().all(|e| e.kind == "fact"));
    let mut paged = Vec::new();
    let mut q = facts_only;
    loop {
        let page = s.audit.query(&sys(), &q).await.unwrap();
        let Some(last) = page.last() else { break };
        q.cursor = Some(last.cursor());
        paged.extend(page.into_iter().map(|e| e.seq));
    }
    assert_eq!(
        paged,
        whole.iter().map(|e| e.seq).collect::<Vec<_>>(),
        "pages by cursor, no entry lost or repeated"
    );
    assert!(is_invalid(
        s.audit
            .query(
                &sys(),
                &AuditQuery {
                    cursor: Some("nope".into()),
                    ..AuditQuery::new()
                },
            )
            .await
    ));
}

/// Every audit entry of a tenant has a place in its tenant's hash chain,
/// one per number from 1 without gaps, also when eight writers race, and
/// the trail lists (and pages) newest first in that order; the
/// chain verifies and its head (the anchor) is its last entry; a stale or
/// forged anchor is reported; another tenant's chain is its own; only a
/// privileged caller verifies or anchors.
pub async fn governance_audit_chain_holds<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{AuditQuery, ChainHead, VerifyChain};
    let s = std::sync::Arc::new(factory().await);
    let writers = (0..8).map(|w| {
        let s = s.clone();
        async move {
            let ctx = CallerContext::agent(format!("w{w}")).with_tenant("t1");
            for i in 0..6 {
                s.facts
                    .store(
                        &ctx,
                        Fact::new(format!("c{w}-{i}"), format!("fact {i} of {w}")),
                    )
                    .await
                    .unwrap();
                s.facts
                    .query(&ctx, &FactQuery::new().text("fact").limit(3))
                    .await
                    .unwrap();
            }
        }
    });
    futures::future::join_all(writers).await;
    let other = CallerContext::agent("x").with_tenant("t2");
    s.facts
        .store(&other, Fact::new("t2-only", "elsewhere"))
        .await
        .unwrap();
    s.audit.flush().await.unwrap();

    let head = s.audit.anchor(&sys()).await.unwrap();
    let mut entries = s
        .audit
        .query(
            &sys(),
            &AuditQuery {
                limit: 10_000,
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    // Listed newest first in the order the trail was written, whatever the
    // racing writers' clocks said (issue 65), a page at a time too.
    let listed: Vec<u64> = entries.iter().map(|e| e.chain_seq).collect();
    assert!(
        listed.windows(2).all(|w| w[0] > w[1]),
        "the trail lists in the chain's order: {listed:?}"
    );
    let mut paged = Vec::new();
    let mut q = AuditQuery {
        limit: 7,
        ..AuditQuery::new()
    };
    loop {
        let page = s.audit.query(&sys(), &q).await.unwrap();
        let Some(last) = page.last() else { break };
        q.cursor = Some(last.cursor());
        paged.extend(page.iter().map(|e| e.chain_seq));
    }
    assert_eq!(paged, listed, "pages by cursor, in the chain's order");
    entries.sort_by_key(|e| e.chain_seq);
    let numbers: Vec<u64> = entries.iter().map(|e| e.chain_seq).collect();
    assert!(
        entries.len() >= 96,
        "48 writes and 48 searches: {}",
        entries.len()
    );
    assert_eq!(
        numbers,
        (1..=entries.len() as u64).collect::<Vec<_>>(),
        "one place per entry, no gap"
    );
    assert_eq!(head.chain_seq, entries.len() as u64);
    assert_eq!(
        Some(&head.hash),
        entries.last().and_then(|e| e.hash.as_ref())
    );
    assert!(
        entries
            .iter()
            .all(|e| e.hash.as_deref().is_some_and(|h| h.len() == 64))
    );

    let report = s
        .audit
        .verify(&sys(), &VerifyChain::default())
        .await
        .unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!((report.from, report.checked), (1, head.chain_seq));
    assert_eq!(report.head, head);
    let anchored = VerifyChain {
        anchor: Some(head.clone()),
        ..VerifyChain::default()
    };
    assert!(s.audit.verify(&sys(), &anchored).await.unwrap().ok());
    let forged = VerifyChain {
        anchor: Some(ChainHead {
            hash: "0".repeat(63) + "1",
            ..head.clone()
        }),
        ..VerifyChain::default()
    };
    let broken = s
        .audit
        .verify(&sys(), &forged)
        .await
        .unwrap()
        .broken
        .unwrap();
    assert_eq!(
        (broken.what.as_str(), broken.chain_seq),
        ("anchor", head.chain_seq)
    );
    let later = VerifyChain {
        since: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
        ..VerifyChain::default()
    };
    let none = s.audit.verify(&sys(), &later).await.unwrap();
    assert!(none.ok() && none.checked == 0);

    // Another tenant's chain is its own.
    let t2 = CallerContext::system().with_tenant("t2");
    let t2_head = s.audit.anchor(&t2).await.unwrap();
    assert_eq!(t2_head.chain_seq, 1);
    assert!(
        s.audit
            .verify(&t2, &VerifyChain::default())
            .await
            .unwrap()
            .ok()
    );
    // Only a privileged caller.
    let agent = CallerContext::agent("w0").with_tenant("t1");
    assert!(is_unauthorized(s.audit.anchor(&agent).await));
    assert!(is_unauthorized(
        s.audit.verify(&agent, &VerifyChain::default()).await
    ));
}
