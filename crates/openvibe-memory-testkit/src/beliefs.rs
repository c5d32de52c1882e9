//! Beliefs (issue 40): proposed by roles, approved once by people, retired
//! or superseded atomically, on every backend: idempotent proposals, the
//! approve right (never one's own; people by default; the governance grant
//! otherwise), racing approvers (one wins), superseding (the old belief
//! retired in the same step, both kept and linked), paging and filters,
//! clearance on the belief's domain, and an audit entry naming every
//! transition.

use std::future::Future;
use std::sync::Arc;

use openvibe_protocols::{
    AuditOp, AuditQuery, Belief, BeliefQuery, BeliefStatus, CallerContext, Classification,
    Clearance, Grants, Rights, StoreError, Stores, Verdict,
};

use crate::support::{agent, history, is_conflict, is_invalid, is_not_found, is_unauthorized, sys};

fn person(id: &str) -> CallerContext {
    CallerContext::user(id)
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted())
}

fn cro() -> CallerContext {
    agent("cro").with_clearance(Clearance::unrestricted())
}

fn belief(id: &str, statement: &str) -> Belief {
    Belief::new("cro", statement, 0.8)
        .id(id)
        .domain("revenue")
        .from_insights(["i1", "i2"], 6)
}

/// A belief is proposed with version 1, owned by its proposer, whatever the
/// store-maintained fields said; proposing it again returns it; another
/// statement under its id is a conflict; a bad one, or one superseding a
/// belief that is not there, is refused and writes nothing.
pub async fn beliefs_are_proposed_idempotently<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let mut forged = belief("b1", "Webinar leads close faster");
    forged.status = BeliefStatus::Active;
    forged.decided_by = Some("user:mallory".into());
    forged.version = 9;
    forged.meta.owner = "user:mallory".into();
    let created = s.beliefs.propose(&cro(), forged).await.unwrap();
    assert_eq!(
        (
            created.status,
            created.version,
            created.decided_by.as_deref()
        ),
        (BeliefStatus::Proposed, 1, None)
    );
    assert_eq!(created.meta.owner, "agent:cro");
    assert_eq!(created.insight_ids, ["i1", "i2"]);
    assert_eq!(created.evidence, 6);
    let again = s
        .beliefs
        .propose(&cro(), belief("b1", "Webinar leads close faster"))
        .await
        .unwrap();
    assert_eq!(again.meta.created_at, created.meta.created_at);
    assert!(is_conflict(
        s.beliefs
            .propose(&cro(), belief("b1", "Something else"))
            .await
    ));
    assert!(is_invalid(
        s.beliefs.propose(&cro(), belief("b2", " ")).await
    ));
    assert!(is_invalid(
        s.beliefs
            .propose(&cro(), Belief::new("cro", "too sure", 1.5).id("b3"))
            .await
    ));
    assert!(is_not_found(
        s.beliefs
            .propose(&cro(), belief("b4", "x").supersedes("nope"))
            .await
    ));
    for id in ["b2", "b3", "b4"] {
        assert_eq!(s.beliefs.get(&cro(), id).await.unwrap(), None);
    }
    let generated = s
        .beliefs
        .propose(&cro(), Belief::new("cro", "Renewals need a QBR", 0.7))
        .await
        .unwrap();
    assert!(!generated.id.is_empty());
    let t2 = CallerContext::user("ann")
        .with_tenant("t2")
        .with_clearance(Clearance::unrestricted());
    assert_eq!(s.beliefs.get(&t2, "b1").await.unwrap(), None);
}

/// Who may approve: not the proposer, not an agent without a grant, a
/// person (ungoverned); eight people racing, one wins and the others get a
/// conflict; a rejection needs a reason and is final; only an active
/// belief retires, with a reason.
pub async fn beliefs_are_approved_once_by_people<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = Arc::new(factory().await);
    s.beliefs
        .propose(&cro(), belief("b1", "Webinar leads close faster"))
        .await
        .unwrap();
    s.beliefs
        .propose(&cro(), belief("b2", "Discounts above 20% lose money"))
        .await
        .unwrap();
    assert!(is_unauthorized(
        s.beliefs
            .decide(&cro(), "b1", &Verdict::approve("mine"))
            .await
    ));
    assert!(is_unauthorized(
        s.beliefs
            .decide(
                &agent("cmo").with_clearance(Clearance::unrestricted()),
                "b1",
                &Verdict::approve("ok")
            )
            .await
    ));
    let raced = futures::future::join_all((0..8).map(|i| {
        let s = s.clone();
        async move {
            s.beliefs
                .decide(&person(&format!("p{i}")), "b1", &Verdict::approve("yes"))
                .await
        }
    }))
    .await;
    let wins = raced.iter().filter(|r| r.is_ok()).count();
    let conflicts = raced
        .iter()
        .filter(|r| matches!(r, Err(StoreError::Conflict { .. })))
        .count();
    assert_eq!((wins, conflicts), (1, 7), "{raced:?}");
    let active = s.beliefs.get(&cro(), "b1").await.unwrap().unwrap();
    assert_eq!(active.status, BeliefStatus::Active);
    assert!(
        active
            .decided_by
            .as_deref()
            .is_some_and(|d| d.starts_with("user:p"))
    );
    assert!(is_invalid(
        s.beliefs
            .decide(&person("ann"), "b2", &Verdict::reject(" "))
            .await
    ));
    let rejected = s
        .beliefs
        .decide(
            &person("ann"),
            "b2",
            &Verdict::reject("not enough evidence"),
        )
        .await
        .unwrap();
    assert_eq!(rejected.status, BeliefStatus::Rejected);
    assert_eq!(rejected.reason.as_deref(), Some("not enough evidence"));
    assert!(is_conflict(
        s.beliefs
            .decide(&person("bob"), "b2", &Verdict::approve("late"))
            .await
    ));
    assert!(is_conflict(
        s.beliefs.retire(&person("ann"), "b2", "stale").await
    ));
    assert!(is_invalid(
        s.beliefs.retire(&person("ann"), "b1", " ").await
    ));
    let retired = s
        .beliefs
        .retire(&person("ann"), "b1", "the market changed")
        .await
        .unwrap();
    assert_eq!(retired.status, BeliefStatus::Retired);
    assert_eq!(retired.superseded_by, None);
    // Its history is in the order the store applied it.
    assert_eq!(
        history(&s, "belief", "b1").await,
        ["insert", "approve", "retire"]
    );
    assert!(is_not_found(
        s.beliefs
            .decide(&person("ann"), "nope", &Verdict::approve("x"))
            .await
    ));
}

/// Belief `b1`, "Webinar leads close faster", proposed by the CRO and
/// approved by `ann`.
async fn active_b1(s: &Stores, ann: &CallerContext) {
    s.beliefs
        .propose(&cro(), belief("b1", "Webinar leads close faster"))
        .await
        .unwrap();
    s.beliefs
        .decide(ann, "b1", &Verdict::approve("seen it"))
        .await
        .unwrap();
}

/// Approving a belief that supersedes an active one retires the old one in
/// the same step (both kept, linked, the new one a version up), and an
/// approval as a constraint ([`Verdict::constraint`]) makes it one; when the
/// old one is no longer active, the approval is a conflict and nothing
/// changes.
pub async fn beliefs_supersede_atomically<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let ann = person("ann");
    active_b1(&s, &ann).await;
    let newer = s
        .beliefs
        .propose(
            &cro(),
            belief("b2", "Webinar leads close slower than referrals").supersedes("b1"),
        )
        .await
        .unwrap();
    assert_eq!(
        (newer.version, newer.supersedes.as_deref()),
        (2, Some("b1"))
    );
    // Only an approval makes a constraint: a rejection as one changes nothing.
    assert!(is_invalid(
        s.beliefs
            .decide(&ann, "b2", &Verdict::reject("no").as_constraint())
            .await
    ));
    let approved = s
        .beliefs
        .decide(
            &ann,
            "b2",
            &Verdict::approve("the data moved").as_constraint(),
        )
        .await
        .unwrap();
    assert_eq!(
        (approved.status, approved.constraint),
        (BeliefStatus::Active, true)
    );
    let stored = s.beliefs.get(&cro(), "b2").await.unwrap().unwrap();
    assert!(stored.constraint, "the constraint is stored: {stored:?}");
    let old = s.beliefs.get(&cro(), "b1").await.unwrap().unwrap();
    assert!(!old.constraint);
    assert_eq!(
        (old.status, old.superseded_by.as_deref()),
        (BeliefStatus::Retired, Some("b2"))
    );
    // A third that supersedes the retired b1: a conflict, nothing changes.
    s.beliefs
        .propose(
            &cro(),
            belief("b3", "Referrals close fastest").supersedes("b1"),
        )
        .await
        .unwrap();
    assert!(is_conflict(
        s.beliefs
            .decide(&ann, "b3", &Verdict::approve("late"))
            .await
    ));
    let b3 = s.beliefs.get(&cro(), "b3").await.unwrap().unwrap();
    assert_eq!(b3.status, BeliefStatus::Proposed);
    let b1 = s.beliefs.get(&cro(), "b1").await.unwrap().unwrap();
    assert_eq!(b1.superseded_by.as_deref(), Some("b2"));
}

/// A belief that refines an active one keeps both active when approved;
/// approved superseding ([`Verdict::supersede`]) it retires the refined one
/// in the same step, and then names it as superseded. A superseding
/// rejection is invalid, superseding a belief that refines none a conflict;
/// either changes nothing.
pub async fn beliefs_refine_or_supersede_as_the_person_chooses<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let ann = person("ann");
    active_b1(&s, &ann).await;
    assert!(is_conflict(
        s.beliefs
            .decide(&ann, "b1", &Verdict::approve("again").superseding())
            .await
    ));
    let kept = s
        .beliefs
        .propose(
            &cro(),
            belief("b2", "Webinar leads close faster in the mid-market").refines("b1"),
        )
        .await
        .unwrap();
    assert_eq!((kept.version, kept.refines.as_deref()), (2, Some("b1")));
    assert!(is_invalid(
        s.beliefs
            .decide(&ann, "b2", &Verdict::reject("no").superseding())
            .await
    ));
    assert_eq!(
        s.beliefs.get(&cro(), "b2").await.unwrap().unwrap().status,
        BeliefStatus::Proposed,
        "an invalid verdict changes nothing"
    );
    let both = s
        .beliefs
        .decide(&ann, "b2", &Verdict::approve("both hold"))
        .await
        .unwrap();
    assert_eq!(
        (
            both.status,
            both.refines.as_deref(),
            both.supersedes.as_deref()
        ),
        (BeliefStatus::Active, Some("b1"), None)
    );
    let b1 = s.beliefs.get(&cro(), "b1").await.unwrap().unwrap();
    assert_eq!(b1.status, BeliefStatus::Active, "refined, still held");
    s.beliefs
        .propose(
            &cro(),
            belief("b3", "Webinar leads now close slower than referrals").refines("b1"),
        )
        .await
        .unwrap();
    let replaced = s
        .beliefs
        .decide(&ann, "b3", &Verdict::approve("it changed").superseding())
        .await
        .unwrap();
    assert_eq!(
        (
            replaced.status,
            replaced.refines.as_deref(),
            replaced.supersedes.as_deref()
        ),
        (BeliefStatus::Active, None, Some("b1"))
    );
    let stored = s.beliefs.get(&cro(), "b3").await.unwrap().unwrap();
    assert_eq!(stored, replaced, "as stored");
    let b1 = s.beliefs.get(&cro(), "b1").await.unwrap().unwrap();
    assert_eq!(
        (b1.status, b1.superseded_by.as_deref()),
        (BeliefStatus::Retired, Some("b3"))
    );
    assert!(
        is_invalid(
            s.beliefs
                .propose(&cro(), belief("b4", "x").refines("b1").supersedes("b2"))
                .await
        ),
        "one predecessor"
    );
}

/// Lists: newest first, by status, role and domain, a page at a time.
pub async fn beliefs_list_newest_first_by_page<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..5 {
        let mut b = belief(&format!("b{i}"), &format!("belief {i}"));
        if i % 2 == 1 {
            b.domain = "marketing".into();
        }
        s.beliefs.propose(&cro(), b).await.unwrap();
    }
    s.beliefs
        .decide(&person("ann"), "b0", &Verdict::approve("ok"))
        .await
        .unwrap();
    let ids = |page: &openvibe_protocols::Page<Belief>| -> Vec<String> {
        page.items.iter().map(|b| b.id.clone()).collect()
    };
    let first = s
        .beliefs
        .list(&sys(), &BeliefQuery::new().limit(2))
        .await
        .unwrap();
    assert_eq!(ids(&first), ["b4", "b3"]);
    let rest = s
        .beliefs
        .list(
            &sys(),
            &BeliefQuery {
                cursor: first.next_cursor.clone(),
                ..BeliefQuery::new().limit(10)
            },
        )
        .await
        .unwrap();
    assert_eq!(ids(&rest), ["b2", "b1", "b0"]);
    assert_eq!(rest.next_cursor, None);
    let active = s
        .beliefs
        .list(&sys(), &BeliefQuery::new().status(BeliefStatus::Active))
        .await
        .unwrap();
    assert_eq!(ids(&active), ["b0"]);
    let marketing = s
        .beliefs
        .list(&sys(), &BeliefQuery::new().domain("marketing").role("cro"))
        .await
        .unwrap();
    assert_eq!(ids(&marketing), ["b3", "b1"]);
    assert!(is_invalid(
        s.beliefs.list(&sys(), &BeliefQuery::new().limit(0)).await
    ));
}

/// Governed: a confidential belief of `revenue` is invisible to a reader
/// cleared for public records only; the approve right comes from the
/// governance grant; every transition is audited by name, and a refused
/// verdict too.
pub async fn beliefs_are_governed_and_audited<F, Fut>(factory: F)
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
    let mut b = belief("b1", "Annual plans renew more");
    b.meta.classification = Classification::Confidential;
    s.beliefs.propose(&role, b).await.unwrap();
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
    let refused = s
        .beliefs
        .decide(&approver(Rights::READ), "b1", &Verdict::approve("ok"))
        .await;
    match &refused {
        Err(StoreError::Unauthorized { reason, .. }) => {
            assert!(reason.contains("approve"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
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
    assert_eq!(s.beliefs.get(&public_only, "b1").await.unwrap(), None);
    assert!(
        s.beliefs
            .list(&public_only, &BeliefQuery::new())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(is_not_found(
        s.beliefs
            .decide(&public_only, "b1", &Verdict::approve("ok"))
            .await
    ));
    let may = approver(Rights {
        approve: true,
        ..Rights::READ
    });
    s.beliefs
        .decide(&may, "b1", &Verdict::approve("fine"))
        .await
        .unwrap();
    s.beliefs
        .propose(
            &role,
            belief("b2", "Annual plans renew less").supersedes("b1"),
        )
        .await
        .unwrap();
    s.beliefs
        .decide(&may, "b2", &Verdict::approve("newer data"))
        .await
        .unwrap();
    s.beliefs.retire(&may, "b2", "obsolete").await.unwrap();
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    let transitions: Vec<(String, String)> = trail
        .iter()
        .filter(|e| e.kind == "belief" && e.operation == AuditOp::Update && e.reason.is_none())
        .filter_map(|e| {
            Some((
                e.record_id.clone()?,
                e.filters.as_ref()?["transition"].as_str()?.to_owned(),
            ))
        })
        .collect();
    for expected in [
        ("b1", "approve"),
        ("b1", "supersede"),
        ("b2", "approve"),
        ("b2", "retire"),
    ] {
        assert!(
            transitions
                .iter()
                .any(|(id, t)| id == expected.0 && t == expected.1),
            "{expected:?} in {transitions:?}"
        );
    }
    assert!(
        trail
            .iter()
            .any(|e| e.kind == "belief"
                && e.reason.as_deref().is_some_and(|r| r.contains("approve"))),
        "the refusal is audited"
    );
}

/// A belief's provenance round-trips to the raw calls: belief → its
/// insights → their episodes → the raw calls made for them, each link read
/// back from the store (L4 → L3 → L2 → L1).
pub async fn belief_provenance_reaches_the_raw_calls<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = cro();
    s.raw
        .append(
            &cro,
            vec![
                crate::raw::raw("r1", "cro", 1, Some("e1")),
                crate::raw::raw("r2", "cro", 2, Some("e2")),
                crate::raw::raw("r-other", "cro", 3, Some("e-other")),
            ],
        )
        .await
        .unwrap();
    for (id, minute) in [("e1", 1), ("e2", 2), ("e-other", 3)] {
        s.episodes
            .store(&cro, crate::support::episode(id, "cro", minute))
            .await
            .unwrap();
    }
    let insight = openvibe_protocols::Insight {
        source_episode_ids: vec!["e1".into(), "e2".into()],
        ..openvibe_protocols::Insight::new("i-vp", "cro", "VP sponsors close deals", 0.9)
            .evidence(4)
    };
    s.insights.store(&cro, insight).await.unwrap();
    let proposed = s
        .beliefs
        .propose(
            &cro,
            Belief::new("cro", "VP sponsors close deals", 0.9)
                .id("b-vp")
                .from_insights(["i-vp"], 4),
        )
        .await
        .unwrap();
    assert_eq!(proposed.insight_ids, vec!["i-vp"]);
    s.beliefs
        .decide(&person("ann"), "b-vp", &Verdict::approve("seen it"))
        .await
        .unwrap();

    let belief = s.beliefs.get(&cro, "b-vp").await.unwrap().unwrap();
    let mut raw_ids = Vec::new();
    for insight_id in &belief.insight_ids {
        let insight = s.insights.get(&cro, insight_id).await.unwrap().unwrap();
        assert_eq!(insight.source_episode_ids, vec!["e1", "e2"]);
        for episode_id in &insight.source_episode_ids {
            assert!(s.episodes.get(&cro, episode_id).await.unwrap().is_some());
        }
        let calls = s
            .raw
            .query(
                &cro,
                &openvibe_protocols::RawCallQuery::new()
                    .episodes(insight.source_episode_ids.iter().cloned()),
            )
            .await
            .unwrap();
        raw_ids.extend(calls.items.into_iter().map(|c| c.id));
    }
    raw_ids.sort();
    assert_eq!(
        raw_ids,
        vec!["r1", "r2"],
        "exactly the calls under the belief"
    );
}
