//! Proposals (issue 38): created by roles, decided by people, run once.
//! The status machine on every backend: idempotent creation, the approve
//! right (never one's own proposal; people by default; the governance
//! grant otherwise), racing approvers and racing executors (one wins, the
//! others get a conflict), deadlines, paging and filters, and an audit
//! entry naming every transition.

use std::future::Future;
use std::sync::Arc;

use chrono::{Duration, Utc};
use openvibe_protocols::{
    Action, AuditOp, AuditQuery, CallerContext, Classification, Clearance, Grants, Proposal,
    ProposalQuery, ProposalStatus, Rights, StoreError, Stores, Verdict,
};
use serde_json::json;

use crate::support::{agent, history, is_conflict, is_invalid, is_not_found, is_unauthorized, sys};

/// A person of tenant `t1` who may read everything.
fn person(id: &str) -> CallerContext {
    CallerContext::user(id)
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted())
}

fn cro() -> CallerContext {
    agent("cro").with_clearance(Clearance::unrestricted())
}

fn discount(pct: u32) -> Action {
    Action::tool("give_discount", "apply_discount", json!({ "pct": pct }))
}

fn proposal(id: &str, pct: u32) -> Proposal {
    Proposal::new("cro", format!("Acme asks {pct}% off"), discount(pct))
        .id(id)
        .domain("revenue")
}

/// A proposal is created pending, owned by its creator, whatever the
/// store-maintained fields said; creating it again returns it; another
/// request under its id is a conflict; a bad one is refused and writes
/// nothing.
pub async fn proposals_are_created_pending_and_idempotently<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let mut forged = proposal("p1", 10);
    forged.status = ProposalStatus::Executed;
    forged.decided_by = Some("user:mallory".into());
    forged.meta.owner = "user:mallory".into();
    let created = s.proposals.create(&cro(), forged).await.unwrap();
    assert_eq!(created.status, ProposalStatus::Pending);
    assert_eq!(created.decided_by, None);
    assert_eq!(created.meta.owner, "agent:cro");
    assert_eq!(created.meta.tenant_id, "t1");
    let again = s
        .proposals
        .create(&cro(), proposal("p1", 10))
        .await
        .unwrap();
    assert_eq!(again.id, "p1");
    assert_eq!(again.meta.created_at, created.meta.created_at);
    assert!(is_conflict(
        s.proposals.create(&cro(), proposal("p1", 50)).await
    ));
    let got = s.proposals.get(&cro(), "p1").await.unwrap().unwrap();
    assert_eq!(got.action, Some(discount(10)));
    assert_eq!(got.domain, "revenue");
    // A proposal to act needs its action; a summary; a role.
    let mut no_action = proposal("p2", 1);
    no_action.action = None;
    assert!(is_invalid(s.proposals.create(&cro(), no_action).await));
    assert!(is_invalid(
        s.proposals
            .create(&cro(), Proposal::escalation("cro", " ").id("p3"))
            .await
    ));
    assert_eq!(s.proposals.get(&cro(), "p2").await.unwrap(), None);
    assert_eq!(s.proposals.get(&cro(), "p3").await.unwrap(), None);
    // Generated ids.
    let generated = s
        .proposals
        .create(&cro(), Proposal::escalation("cro", "renewal at risk"))
        .await
        .unwrap();
    assert!(!generated.id.is_empty());
    assert_eq!(generated.status, ProposalStatus::Pending);
    // Other tenants see nothing.
    let other = CallerContext::user("ann")
        .with_tenant("t2")
        .with_clearance(Clearance::unrestricted());
    assert_eq!(s.proposals.get(&other, "p1").await.unwrap(), None);
}

/// Who may decide: not the proposer, not an agent without a grant, a
/// person (ungoverned); a rejection needs a reason; once decided, every
/// other verdict is a conflict; a rejected proposal never runs.
pub async fn proposals_are_decided_by_people_once<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.proposals
        .create(&cro(), proposal("p1", 10))
        .await
        .unwrap();
    s.proposals
        .create(&cro(), proposal("p2", 90))
        .await
        .unwrap();
    // No one approves their own proposal; an agent is no person.
    assert!(is_unauthorized(
        s.proposals
            .decide(&cro(), "p1", &Verdict::approve("me"))
            .await
    ));
    let cmo = agent("cmo").with_clearance(Clearance::unrestricted());
    assert!(is_unauthorized(
        s.proposals
            .decide(&cmo, "p1", &Verdict::approve("fine"))
            .await
    ));
    // A reader without the clearance does not find it.
    let blind = CallerContext::user("eve").with_tenant("t1");
    assert!(is_not_found(
        s.proposals
            .decide(&blind, "p1", &Verdict::approve("x"))
            .await
    ));
    assert!(is_invalid(
        s.proposals
            .decide(&person("ann"), "p2", &Verdict::reject(""))
            .await
    ));
    let approved = s
        .proposals
        .decide(&person("ann"), "p1", &Verdict::approve("within policy"))
        .await
        .unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("user:ann"));
    assert_eq!(approved.reason.as_deref(), Some("within policy"));
    assert!(approved.decided_at.is_some());
    assert!(is_conflict(
        s.proposals
            .decide(&person("bob"), "p1", &Verdict::reject("no"))
            .await
    ));
    let rejected = s
        .proposals
        .decide(
            &person("bob"),
            "p2",
            &Verdict::reject("too deep a discount"),
        )
        .await
        .unwrap();
    assert_eq!(rejected.status, ProposalStatus::Rejected);
    assert!(is_conflict(s.proposals.claim(&cro(), "p2").await));
    assert_eq!(
        s.proposals.get(&cro(), "p2").await.unwrap().unwrap().status,
        ProposalStatus::Rejected
    );
    // An escalation is approved with the action a person chooses.
    s.proposals
        .create(
            &cro(),
            Proposal::escalation("cro", "Acme wants to leave").id("e1"),
        )
        .await
        .unwrap();
    // An escalation approved without the action to take: the stored
    // proposal refuses it (a conflict).
    assert!(is_conflict(
        s.proposals
            .decide(&person("ann"), "e1", &Verdict::approve("ok"))
            .await
    ));
    let chosen = s
        .proposals
        .decide(
            &person("ann"),
            "e1",
            &Verdict::approve_with(discount(5), "keep them"),
        )
        .await
        .unwrap();
    assert_eq!(chosen.action, Some(discount(5)));
}

/// Eight approvers race on one proposal: one wins, seven get a conflict.
/// Then eight executors race to claim it: one claim succeeds. The winner
/// records the result, once.
pub async fn proposals_race_to_one_approval_and_one_execution<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = Arc::new(factory().await);
    s.proposals
        .create(&cro(), proposal("p1", 10))
        .await
        .unwrap();
    let decided = futures::future::join_all((0..8).map(|i| {
        let s = s.clone();
        async move {
            s.proposals
                .decide(
                    &person(&format!("approver{i}")),
                    "p1",
                    &Verdict::approve("yes"),
                )
                .await
        }
    }))
    .await;
    let wins = decided.iter().filter(|r| r.is_ok()).count();
    let conflicts = decided
        .iter()
        .filter(|r| matches!(r, Err(StoreError::Conflict { .. })))
        .count();
    assert_eq!((wins, conflicts), (1, 7), "{decided:?}");
    let claims = futures::future::join_all((0..8).map(|_| {
        let s = s.clone();
        async move { s.proposals.claim(&cro(), "p1").await }
    }))
    .await;
    assert_eq!(claims.iter().filter(|r| r.is_ok()).count(), 1, "{claims:?}");
    assert!(
        claims
            .iter()
            .filter(|r| r.is_err())
            .all(|r| matches!(r, Err(StoreError::Conflict { .. })))
    );
    // Another role may not claim it, nor finish it.
    assert!(is_unauthorized(
        s.proposals
            .finish(
                &agent("cmo").with_clearance(Clearance::unrestricted()),
                "p1",
                Ok(json!(1))
            )
            .await
    ));
    let done = s
        .proposals
        .finish(&cro(), "p1", Ok(json!("10% applied")))
        .await
        .unwrap();
    assert_eq!(done.status, ProposalStatus::Executed);
    assert_eq!(done.result, Some(json!("10% applied")));
    assert!(done.finished_at.is_some());
    assert!(is_conflict(
        s.proposals.finish(&cro(), "p1", Err("again".into())).await
    ));
    // Its history is in the order the store applied the transitions,
    // however the callers raced.
    assert_eq!(
        history(&s, "proposal", "p1").await,
        ["insert", "approve", "claim", "executed"]
    );
    // A failure is recorded as such.
    s.proposals.create(&cro(), proposal("p2", 5)).await.unwrap();
    s.proposals
        .decide(&person("ann"), "p2", &Verdict::approve("ok"))
        .await
        .unwrap();
    s.proposals.claim(&cro(), "p2").await.unwrap();
    let failed = s
        .proposals
        .finish(&cro(), "p2", Err("the billing system timed out".into()))
        .await
        .unwrap();
    assert_eq!(failed.status, ProposalStatus::Failed);
    assert_eq!(
        failed.error.as_deref(),
        Some("the billing system timed out")
    );
}

/// A pending proposal past its deadline reads as expired, cannot be
/// decided, and `expire_due` writes the status (audited).
pub async fn proposals_expire_at_their_deadline<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let past = Utc::now() - Duration::minutes(5);
    s.proposals
        .create(&cro(), proposal("late", 10).deadline(past))
        .await
        .unwrap();
    s.proposals
        .create(
            &cro(),
            proposal("open", 10).deadline(Utc::now() + Duration::hours(1)),
        )
        .await
        .unwrap();
    let late = s.proposals.get(&cro(), "late").await.unwrap().unwrap();
    assert_eq!(late.status, ProposalStatus::Expired);
    assert!(is_conflict(
        s.proposals
            .decide(&person("ann"), "late", &Verdict::approve("late"))
            .await
    ));
    let ids = |page: openvibe_protocols::Page<Proposal>| {
        page.items.into_iter().map(|p| p.id).collect::<Vec<_>>()
    };
    let expired = s
        .proposals
        .list(
            &cro(),
            &ProposalQuery::new().status(ProposalStatus::Expired),
        )
        .await
        .unwrap();
    assert_eq!(ids(expired), ["late"]);
    let pending = s
        .proposals
        .list(
            &cro(),
            &ProposalQuery::new().status(ProposalStatus::Pending),
        )
        .await
        .unwrap();
    assert_eq!(ids(pending), ["open"]);
    // Someone who may not change it expires nothing.
    assert_eq!(
        s.proposals
            .expire_due(&agent("cmo").with_clearance(Clearance::unrestricted()), 10)
            .await
            .unwrap(),
        0
    );
    assert_eq!(s.proposals.expire_due(&cro(), 10).await.unwrap(), 1);
    assert_eq!(s.proposals.expire_due(&cro(), 10).await.unwrap(), 0);
    // At most `limit` at a time.
    for id in ["late-2", "late-3", "late-4"] {
        s.proposals
            .create(&cro(), proposal(id, 10).deadline(past))
            .await
            .unwrap();
    }
    assert_eq!(s.proposals.expire_due(&cro(), 2).await.unwrap(), 2);
    assert_eq!(s.proposals.expire_due(&cro(), 2).await.unwrap(), 1);
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    assert!(
        trail.iter().any(|e| e.kind == "proposal"
            && e.record_id.as_deref() == Some("late")
            && e.filters
                .as_ref()
                .is_some_and(|f| f["transition"] == "expire")),
        "{trail:#?}"
    );
}

/// Lists: newest first, a page at a time, filtered by status, role,
/// domain and assignee; a bad limit or cursor is refused.
pub async fn proposals_list_newest_first_by_page<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..5 {
        let mut p =
            proposal(&format!("p{i}"), i).domain(if i % 2 == 0 { "revenue" } else { "pricing" });
        if i == 3 {
            p = p.assignee("user:ann");
        }
        s.proposals.create(&cro(), p).await.unwrap();
        // Distinct creation times (microseconds apart at least).
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let cmo = agent("cmo").with_clearance(Clearance::unrestricted());
    s.proposals
        .create(
            &cmo,
            Proposal::new("cmo", "a case study", discount(0)).id("m1"),
        )
        .await
        .unwrap();
    s.proposals
        .decide(&person("ann"), "p1", &Verdict::approve("ok"))
        .await
        .unwrap();
    let reader = person("ann");
    let ids = |page: &openvibe_protocols::Page<Proposal>| {
        page.items.iter().map(|p| p.id.clone()).collect::<Vec<_>>()
    };
    let first = s
        .proposals
        .list(&reader, &ProposalQuery::new().role("cro").limit(2))
        .await
        .unwrap();
    assert_eq!(ids(&first), ["p4", "p3"]);
    let cursor = first.next_cursor.clone().expect("more pages");
    let second = s
        .proposals
        .list(
            &reader,
            &ProposalQuery::new().role("cro").limit(2).after(cursor),
        )
        .await
        .unwrap();
    assert_eq!(ids(&second), ["p2", "p1"]);
    let last = s
        .proposals
        .list(
            &reader,
            &ProposalQuery::new()
                .role("cro")
                .limit(2)
                .after(second.next_cursor.clone().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(ids(&last), ["p0"]);
    assert_eq!(last.next_cursor, None);
    let query = |q: ProposalQuery| {
        let s = &s;
        let reader = reader.clone();
        async move { ids(&s.proposals.list(&reader, &q).await.unwrap()) }
    };
    assert_eq!(
        query(ProposalQuery::new().domain("pricing")).await,
        ["p3", "p1"]
    );
    assert_eq!(
        query(ProposalQuery::new().assignee("user:ann")).await,
        ["p3"]
    );
    assert_eq!(
        query(ProposalQuery::new().status(ProposalStatus::Approved)).await,
        ["p1"]
    );
    assert_eq!(query(ProposalQuery::new().role("cmo")).await, ["m1"]);
    assert!(is_invalid(
        s.proposals
            .list(&reader, &ProposalQuery::new().limit(0))
            .await
    ));
    assert!(is_invalid(
        s.proposals
            .list(&reader, &ProposalQuery::new().after("garbage"))
            .await
    ));
}

/// Governed: the approve right of the proposal's namespace decides, and
/// the proposal is read like every record (namespace, clearance, project).
/// Every transition is audited with its name, refusals too.
pub async fn proposals_are_governed_and_audited<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let role = agent("cro")
        .with_clearance(Clearance::unrestricted())
        .with_grants(
            Grants::new("cro")
                .grant("cro", Rights::OWN, false)
                .recall(["cro"]),
        );
    let mut p = proposal("p1", 20);
    p.meta.classification = Classification::Confidential;
    s.proposals.create(&role, p).await.unwrap();
    let approver = |rights: Rights| {
        CallerContext::user("ann")
            .with_tenant("t1")
            .with_clearance(Clearance::unrestricted())
            .with_grants(
                Grants::new("ann")
                    .grant("cro", rights, false)
                    .recall(["cro"]),
            )
    };
    // Read without approve: refused, naming the rule; nothing changed.
    let refused = s
        .proposals
        .decide(&approver(Rights::READ), "p1", &Verdict::approve("ok"))
        .await;
    match &refused {
        Err(StoreError::Unauthorized { reason, .. }) => {
            assert!(reason.contains("approve"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Without read, nothing is there.
    let none = Rights {
        approve: true,
        ..Rights::NONE
    };
    assert!(is_not_found(
        s.proposals
            .decide(&approver(none), "p1", &Verdict::approve("ok"))
            .await
    ));
    let public_only = CallerContext::user("bob").with_tenant("t1").with_grants(
        Grants::new("bob")
            .grant(
                "cro",
                Rights {
                    approve: true,
                    ..Rights::READ
                },
                false,
            )
            .recall(["cro"]),
    );
    assert_eq!(s.proposals.get(&public_only, "p1").await.unwrap(), None);
    assert!(
        s.proposals
            .list(&public_only, &ProposalQuery::new())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let approved = s
        .proposals
        .decide(
            &approver(Rights {
                approve: true,
                ..Rights::READ
            }),
            "p1",
            &Verdict::approve("fine"),
        )
        .await
        .unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    s.proposals.claim(&role, "p1").await.unwrap();
    s.proposals
        .finish(&role, "p1", Ok(json!("done")))
        .await
        .unwrap();
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    let of_p1: Vec<_> = trail
        .iter()
        .filter(|e| e.kind == "proposal" && e.record_id.as_deref() == Some("p1"))
        .collect();
    let transitions: Vec<String> = of_p1
        .iter()
        .filter(|e| e.operation == AuditOp::Update && e.reason.is_none())
        .filter_map(|e| {
            e.filters
                .as_ref()
                .map(|f| f["transition"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    for expected in ["approve", "claim", "executed"] {
        assert!(transitions.iter().any(|t| t == expected), "{transitions:?}");
    }
    assert!(of_p1.iter().any(|e| e.operation == AuditOp::Insert));
    assert!(
        of_p1
            .iter()
            .any(|e| e.reason.as_deref().is_some_and(|r| r.contains("approve"))),
        "the refusal is audited: {of_p1:#?}"
    );
}
