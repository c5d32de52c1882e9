//! The approve rule for everyone (issue 65): no principal decides a
//! proposal or a belief it proposed or owns, privileged or not; being
//! privileged grants no approve right (a privileged key approves where its
//! grants give it `approve`, or as a person when ungoverned, like anyone).
//! A refused verdict changes nothing.

use std::future::Future;

use openvibe_protocols::{
    Action, Belief, BeliefStatus, CallerContext, Clearance, Grants, Proposal, ProposalStatus,
    Rights, Stores, Verdict,
};
use serde_json::json;

use crate::support::is_unauthorized;

/// A person of tenant `t1` who reads everything, `privileged` as asked,
/// governed by `grants` when some are given.
fn person(id: &str, privileged: bool, grants: Option<Grants>) -> CallerContext {
    let ctx = CallerContext::user(id)
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted())
        .with_privileged(privileged);
    match grants {
        Some(g) => ctx.with_grants(g),
        None => ctx,
    }
}

/// Grants in namespace `ops` with `rights`.
fn in_ops(home: &str, rights: Rights) -> Grants {
    Grants::new(home)
        .grant("ops", rights, false)
        .recall(["ops"])
}

fn proposal(id: &str) -> Proposal {
    Proposal::new(
        "cro",
        "Acme asks 10% off",
        Action::tool("give_discount", "apply_discount", json!({ "pct": 10 })),
    )
    .id(id)
    .domain("revenue")
    .namespace("ops")
}

fn belief(id: &str) -> Belief {
    Belief::new("cro", "Webinar leads close faster", 0.8)
        .id(id)
        .domain("revenue")
        .namespace("ops")
        .from_insights(["i1", "i2"], 6)
}

/// A privileged person, ungoverned or governed with every right in the
/// namespace, files a proposal and a belief and tries to decide them:
/// refused, naming the rule, and both stay open; another person decides
/// them.
pub async fn approval_is_never_ones_own_even_privileged<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let governed = || Some(in_ops("ops", Rights::ALL));
    for (n, grants) in [None, governed()].into_iter().enumerate() {
        let boss = person("boss", true, grants.clone());
        let (p, b) = (format!("p{n}"), format!("b{n}"));
        s.proposals.create(&boss, proposal(&p)).await.unwrap();
        s.beliefs.propose(&boss, belief(&b)).await.unwrap();
        for verdict in [Verdict::approve("mine"), Verdict::reject("mine too")] {
            let refused = s.proposals.decide(&boss, &p, &verdict).await;
            assert!(is_unauthorized(refused), "proposal {p}, grants {grants:?}");
            let refused = s.beliefs.decide(&boss, &b, &verdict).await;
            assert!(is_unauthorized(refused), "belief {b}, grants {grants:?}");
        }
        let got = s.proposals.get(&boss, &p).await.unwrap().unwrap();
        assert_eq!(
            (got.status, got.decided_by),
            (ProposalStatus::Pending, None)
        );
        let got = s.beliefs.get(&boss, &b).await.unwrap().unwrap();
        assert_eq!((got.status, got.decided_by), (BeliefStatus::Proposed, None));
        // Someone else (with the right, where governed) decides them.
        let ann = person("ann", false, grants.map(|_| in_ops("ops", Rights::ALL)));
        let approved = s
            .proposals
            .decide(&ann, &p, &Verdict::approve("fine"))
            .await
            .unwrap();
        assert_eq!(approved.decided_by.as_deref(), Some("user:ann"));
        let active = s
            .beliefs
            .decide(&ann, &b, &Verdict::approve("seen it"))
            .await
            .unwrap();
        assert_eq!(active.status, BeliefStatus::Active);
    }
}

/// Being privileged grants no approve right: a privileged person whose
/// grants in the namespace lack `approve` is refused, as is the privileged
/// system (a service) ungoverned; the same person with `approve` decides
/// another's proposal and belief.
pub async fn approval_is_not_granted_by_privilege<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = CallerContext::agent("cro")
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted());
    s.proposals.create(&cro, proposal("p1")).await.unwrap();
    s.beliefs.propose(&cro, belief("b1")).await.unwrap();
    let without = Rights {
        approve: false,
        ..Rights::ALL
    };
    let boss = person("boss", true, Some(in_ops("ops", without)));
    let system = CallerContext::system().with_tenant("t1");
    for caller in [&boss, &system] {
        assert!(
            is_unauthorized(
                s.proposals
                    .decide(caller, "p1", &Verdict::approve("I may"))
                    .await
            ),
            "{caller:?}"
        );
        assert!(
            is_unauthorized(
                s.beliefs
                    .decide(caller, "b1", &Verdict::approve("I may"))
                    .await
            ),
            "{caller:?}"
        );
    }
    let got = s.proposals.get(&cro, "p1").await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Pending);
    let got = s.beliefs.get(&cro, "b1").await.unwrap().unwrap();
    assert_eq!(got.status, BeliefStatus::Proposed);
    // With the approve right, the privileged person decides like anyone.
    let boss = person("boss", true, Some(in_ops("ops", Rights::ALL)));
    let decided = s
        .proposals
        .decide(&boss, "p1", &Verdict::reject("too deep"))
        .await
        .unwrap();
    assert_eq!(
        (decided.status, decided.decided_by.as_deref()),
        (ProposalStatus::Rejected, Some("user:boss"))
    );
    let decided = s
        .beliefs
        .decide(&boss, "b1", &Verdict::approve("seen it"))
        .await
        .unwrap();
    assert_eq!(decided.status, BeliefStatus::Active);
}
