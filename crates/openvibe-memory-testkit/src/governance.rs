//! Governance: namespace policies, project isolation and ownership enforced
//! by the store, on every record kind; the access matrix of the source
//! design (seed 003) as written; and a randomized leak check against the
//! reference model.

use std::collections::HashMap;
use std::future::Future;

use openvibe_governance::{Governance, Projects, Resolved, examples};
use openvibe_protocols::{
    Action, CallerContext, Classification, Fact, FactQuery, Grants, NewKnowledge, NewPlan,
    NewSession, Principal, PrincipalKind, Proposal, ProposalQuery, ProposalStatus, RawCall,
    RawCallQuery, Rights, StoreError, Stores, Verdict,
};
use serde_json::json;

use crate::model;
use crate::support::{fact_ids, is_conflict, is_invalid, is_not_found, is_unauthorized, sys, t0};

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

fn ids_of(facts: &[Fact]) -> Vec<String> {
    let mut ids: Vec<String> = fact_ids(facts).into_iter().map(str::to_owned).collect();
    ids.sort();
    ids
}

fn fact(id: &str, ns: &str) -> Fact {
    Fact::new(id, format!("{id} lives in {ns}")).namespace(ns)
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

/// Grants in one namespace: `rights`, not project-scoped, recall = it.
fn only(ns: &str, rights: Rights) -> Grants {
    Grants::new(ns).grant(ns, rights, false).recall([ns])
}

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

/// A small deterministic generator (SplitMix64): no dependency, the same
/// sequence for the same seed on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const NAMESPACES: &[&str] = &["shared", "ns-a", "ns-b", "ns-proj", ""];
const PROJECTS: &[Option<&str>] = &[None, Some("p1"), Some("p2")];
const PRINCIPALS: &[(&str, PrincipalKind)] = &[
    ("a0", PrincipalKind::Agent),
    ("a1", PrincipalKind::Agent),
    ("u0", PrincipalKind::User),
    ("s0", PrincipalKind::Service),
];
const DOMAINS: &[&str] = &["d0", "d1"];
const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta"];

/// How many random reads and searches the leak check makes per backend.
pub const LEAK_CHECKS: usize = 10_000;

/// The projects an API key of principal `id` may name (as a governance
/// file grants them): the one rule every edge applies before a store sees
/// the request.
fn key_projects(id: &str) -> Projects {
    match id {
        "a0" => Projects::All,
        "a1" => Projects::Listed(["p1".to_owned()].into()),
        "u0" => Projects::Listed(["p1".to_owned(), "p2".to_owned()].into()),
        _ => Projects::None,
    }
}

/// A random caller: tenant, principal, the project its request names (kept
/// only where its key's projects allow it: another is refused naming the
/// rule, and the caller goes on in no project), clearance, and (mostly)
/// random namespace grants.
fn random_caller(rng: &mut Rng) -> CallerContext {
    let (id, kind) = rng.pick(PRINCIPALS);
    let tenant = if rng.chance(85) { "t1" } else { "t2" };
    let principal = Principal {
        id: (*id).to_owned(),
        kind: *kind,
    };
    let asked = *rng.pick(PROJECTS);
    let projects = key_projects(id);
    let base = CallerContext::new(tenant, principal);
    let mut ctx = match projects.apply(base.clone(), asked) {
        Ok(ctx) => {
            assert_eq!(ctx.project_id(), asked, "a granted project is the caller's");
            ctx
        }
        Err(StoreError::Unauthorized {
            operation, reason, ..
        }) => {
            let asked = asked.unwrap_or_default();
            assert!(
                !projects.allows(asked) && operation.contains(asked) && reason.contains("grants"),
                "{operation}: {reason}"
            );
            base
        }
        Err(e) => panic!("a project refusal is Unauthorized: {e:?}"),
    };
    for d in DOMAINS {
        if rng.chance(50) {
            ctx = ctx.with_domain_clearance(*d, *rng.pick(&Classification::ALL));
        }
    }
    if rng.chance(10) {
        ctx = ctx.with_privileged(true);
    }
    if rng.chance(12) {
        return ctx; // ungoverned
    }
    let governed: Vec<&str> = NAMESPACES
        .iter()
        .copied()
        .filter(|n| !n.is_empty())
        .collect();
    let mut grants = Grants::new(*rng.pick(&governed));
    for ns in &governed {
        let rights = Rights {
            read: rng.chance(65),
            write: rng.chance(55),
            delete: rng.chance(45),
            manage: rng.chance(20),
            approve: rng.chance(30),
        };
        grants = grants.grant(*ns, rights, *ns == "ns-proj");
    }
    let recall: Vec<&str> = governed
        .iter()
        .copied()
        .filter(|_| rng.chance(60))
        .collect();
    ctx.with_grants(grants.recall(recall))
}

fn random_query(rng: &mut Rng) -> FactQuery {
    let mut q = FactQuery::new().limit(1 + rng.below(40));
    if rng.chance(35) {
        let names: Vec<&str> = NAMESPACES
            .iter()
            .copied()
            .filter(|_| rng.chance(40))
            .collect();
        q = q.namespaces(names);
    }
    if rng.chance(30) {
        q = q.domain(*rng.pick(DOMAINS));
    }
    if rng.chance(25) {
        q = q.text(*rng.pick(WORDS));
    }
    if rng.chance(15) {
        q = q.tags([format!("t{}", rng.below(3))]);
    }
    if rng.chance(15) {
        q = q.min_confidence(0.5);
    }
    q
}

/// The seed of a run: `OPENVIBE_LEAK_SEED` when set (to reproduce a
/// failure), else derived from the clock. Printed either way.
fn leak_seed() -> u64 {
    std::env::var("OPENVIBE_LEAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// Randomized leak check: random tenants, principals, grants, projects,
/// clearances, owners and records; [`LEAK_CHECKS`] random reads and
/// searches, each compared with the reference model (a leak or a record
/// wrongly hidden fails, with the seed); then random updates and deletes,
/// each allowed or refused exactly as the contract's rule says, and a
/// refused one changes nothing.
pub async fn governance_randomized_leak_check<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let seed = leak_seed();
    eprintln!("governance leak check: seed {seed} (OPENVIBE_LEAK_SEED={seed} reproduces it)");
    let mut rng = Rng(seed);
    let s = factory().await;
    let mut stored: Vec<Fact> = Vec::new();
    let mut refused_writes = 0;
    for i in 0..240 {
        let writer = random_caller(&mut rng);
        let ns = *rng.pick(NAMESPACES);
        let words: Vec<&str> = (0..3).map(|_| *rng.pick(WORDS)).collect();
        let f = Fact::new(format!("r{i}"), format!("{} {i}", words.join(" ")))
            .namespace(ns)
            .domain(*rng.pick(DOMAINS))
            .tags([format!("t{}", rng.below(3))])
            .classification(*rng.pick(&Classification::ALL))
            .confidence(rng.below(11) as f64 / 10.0)
            .created_at(t0() + chrono::Duration::seconds(i));
        let expected = writer.placement(ns, "store");
        match (s.facts.store(&writer, f).await, expected) {
            (Ok(fact), Ok(place)) => {
                assert_eq!(
                    (&fact.meta.namespace, &fact.meta.project_id),
                    (&place.namespace, &place.project_id),
                    "seed {seed}: placement of r{i}"
                );
                stored.push(fact);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => refused_writes += 1,
            (got, want) => panic!("seed {seed}: store r{i}: got {got:?}, want {want:?}"),
        }
    }
    let mut checks = 0;
    while checks < LEAK_CHECKS {
        let reader = random_caller(&mut rng);
        if rng.chance(30) {
            let f = rng.pick(&stored).clone();
            let got = s.facts.get(&reader, &f.id).await.unwrap().map(|x| x.id);
            let want = model::fact_get(&stored, &reader, &f.id);
            assert_eq!(got, want, "seed {seed}: get {} as {reader:?}", f.id);
        } else {
            let q = random_query(&mut rng);
            let got: Vec<String> = s
                .facts
                .query(&reader, &q)
                .await
                .unwrap()
                .into_iter()
                .map(|f| f.id)
                .collect();
            let want = model::fact_query(&stored, &reader, &q);
            assert_eq!(got, want, "seed {seed}: {q:?} as {reader:?}");
        }
        checks += 1;
    }
    let (mut allowed, mut refused) = (0, 0);
    for step in 0..300 {
        let caller = random_caller(&mut rng);
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let delete = rng.chance(40);
        let change = if delete {
            openvibe_protocols::Change::Delete
        } else {
            openvibe_protocols::Change::Write
        };
        let readable = caller.can_read_record(&target);
        let may = readable && caller.can_change(&target.meta, change);
        let result = if delete {
            s.facts.delete(&caller, &target.id).await.map(|()| None)
        } else {
            let new = Fact::new(target.id.clone(), format!("changed {step}"))
                .domain(target.domain.clone())
                .classification(target.meta.classification)
                .confidence(target.confidence);
            s.facts.update(&caller, new).await.map(Some)
        };
        match (result, readable, may) {
            (Ok(None), _, true) => {
                stored.remove(idx);
                allowed += 1;
            }
            (Ok(Some(updated)), _, true) => {
                assert_eq!(updated.meta.owner, target.meta.owner, "seed {seed}");
                assert_eq!(updated.meta.namespace, target.meta.namespace, "seed {seed}");
                stored[idx] = updated;
                allowed += 1;
            }
            (Err(StoreError::NotFound { .. }), false, _)
            | (Err(StoreError::Unauthorized { .. }), true, false) => {
                let admin = admin_of(&target.meta);
                let still = s.facts.get(&admin, &target.id).await.unwrap();
                assert_eq!(
                    still.map(|f| f.content),
                    Some(target.content.clone()),
                    "seed {seed}: a refused change modified {}",
                    target.id
                );
                refused += 1;
            }
            (got, readable, may) => panic!(
                "seed {seed}: {change:?} of {} as {caller:?}: got {got:?}, readable {readable}, may {may}",
                target.id
            ),
        }
    }
    let raw_checks = raw_leak_check(&s, &mut rng, seed).await;
    let (proposal_checks, verdicts) = proposal_leak_check(&s, &mut rng, seed).await;
    let goal_checks = goal_leak_check(&s, &mut rng, seed).await;
    let (belief_checks, belief_verdicts) = belief_leak_check(&s, &mut rng, seed).await;
    let (space_checks, space_changes) = space_leak_check(&s, &mut rng, seed).await;
    eprintln!(
        "governance leak check: {checks} reads and searches matched the model over {} records \
         ({refused_writes} writes refused); {allowed} changes allowed, {refused} refused as the rule says; \
         {raw_checks} raw-log reads, {proposal_checks} proposal reads, {goal_checks} goal reads \
         {belief_checks} belief reads and {space_checks} space reads matched too; {verdicts} proposal \
         and {belief_verdicts} belief verdicts given or refused as the approve rule says, and \
         {space_changes} posts and member changes as the space rules say",
        stored.len()
    );
    assert!(
        allowed > 0 && refused > 0 && refused_writes > 0,
        "seed {seed}: the generator exercised too little"
    );
}

/// Randomized leak check of knowledge search in every retrieval mode (full
/// text, vector, hybrid): random writers, readers, public flags and
/// queries; a hit the reader may not read (by `get_knowledge`, the single
/// record rule) or another owner's private record is a leak; a vector
/// search asking for everything returns exactly what the reader may read,
/// and a full-text one at least every readable record holding a query term.
pub async fn governance_hybrid_search_leak_check<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::testing::HashEmbedder;
    use openvibe_protocols::{KnowledgeQuery, RetrievalMode};
    use openvibe_retrieval::query_terms;
    let seed = leak_seed();
    eprintln!("hybrid search leak check: seed {seed} (OPENVIBE_LEAK_SEED={seed} reproduces it)");
    let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
    let s = factory().await;
    let embedder = HashEmbedder::new(crate::semantic::DIMENSIONS);
    let mut stored: Vec<(String, String)> = Vec::new();
    for i in 0..120 {
        let writer = random_caller(&mut rng);
        let words: Vec<&str> = (0..2).map(|_| *rng.pick(WORDS)).collect();
        let content = format!("{} {i}", words.join(" "));
        let input = NewKnowledge {
            is_public: rng.chance(30),
            embedding: Some(embedder.vector(&content)),
            ..NewKnowledge::new(content.clone())
        };
        match s.knowledge.store_knowledge(&writer, input).await {
            Ok(k) => stored.push((k.id, content)),
            Err(StoreError::Unauthorized { .. }) => {}
            Err(e) => panic!("seed {seed}: store knowledge {i}: {e}"),
        }
    }
    assert!(stored.len() > 20, "seed {seed}: too few stored");
    let modes = [
        RetrievalMode::FullText,
        RetrievalMode::Vector,
        RetrievalMode::Hybrid,
    ];
    let mut found = 0;
    for _ in 0..90 {
        let reader = random_caller(&mut rng);
        let include_public = rng.chance(50);
        let mode = *rng.pick(&modes);
        let text = format!("{} {}", rng.pick(WORDS), rng.below(120));
        let q = KnowledgeQuery {
            include_public,
            top_k: 500,
            ..KnowledgeQuery::by_text(text.clone()).mode(mode)
        };
        let got: std::collections::BTreeSet<String> = s
            .knowledge
            .query_knowledge(&reader, &q)
            .await
            .unwrap()
            .into_iter()
            .map(|h| h.knowledge.id)
            .collect();
        let mut visible = std::collections::BTreeSet::new();
        let terms = query_terms(&text);
        let mut matching = std::collections::BTreeSet::new();
        for (id, content) in &stored {
            let Some(k) = s.knowledge.get_knowledge(&reader, id).await.unwrap() else {
                continue;
            };
            if include_public || reader.is_owner(&k.meta.owner) {
                visible.insert(id.clone());
                if query_terms(content).iter().any(|t| terms.contains(t)) {
                    matching.insert(id.clone());
                }
            }
        }
        let leaked: Vec<&String> = got.difference(&visible).collect();
        assert!(
            leaked.is_empty(),
            "seed {seed}: {mode:?} search {text:?} (public {include_public}) as {reader:?} leaked {leaked:?}"
        );
        match mode {
            RetrievalMode::Vector => {
                assert_eq!(got, visible, "seed {seed}: {mode:?} as {reader:?}")
            }
            _ => assert!(
                matching.is_subset(&got),
                "seed {seed}: {mode:?} search {text:?} as {reader:?} missed {:?}",
                matching.difference(&got).collect::<Vec<_>>()
            ),
        }
        found += got.len();
    }
    assert!(found > 0, "seed {seed}: the searches found nothing at all");
}

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
        trail
            .windows(2)
            .all(|w| (w[0].at, w[0].seq) >= (w[1].at, w[1].seq)),
        "newest first"
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

/// The raw log in the leak check: random writers append raw calls (placed,
/// owned and classified as facts are), then random gets and pages, each
/// compared with the contract's read rule; returns how many were checked.
async fn raw_leak_check(s: &Stores, rng: &mut Rng, seed: u64) -> usize {
    let mut calls: Vec<RawCall> = Vec::new();
    for i in 0..80 {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let mut call = crate::raw::raw(&format!("raw{i}"), "a0", i, None);
        call.meta.namespace = ns.to_owned();
        call.meta.classification = *rng.pick(&Classification::ALL);
        call.domain = (*rng.pick(DOMAINS)).to_owned();
        let expected = writer.placement(ns, "append");
        match (s.raw.append(&writer, vec![call]).await, expected) {
            (Ok(mut written), Ok(place)) => {
                let call = written.remove(0);
                assert_eq!(
                    (&call.meta.namespace, &call.meta.project_id),
                    (&place.namespace, &place.project_id),
                    "seed {seed}: placement of raw{i}"
                );
                calls.push(call);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: append raw{i}: got {got:?}, want {want:?}"),
        }
    }
    assert!(!calls.is_empty(), "seed {seed}: no raw call was written");
    let readable = |reader: &CallerContext, c: &RawCall| reader.can_read(&c.meta, &c.domain);
    let mut checks = 0;
    for _ in 0..1_000 {
        let reader = random_caller(rng);
        if rng.chance(40) {
            let call = rng.pick(&calls).clone();
            let got = s.raw.get(&reader, &call.id).await.unwrap().map(|c| c.id);
            let want = (call.meta.tenant_id == reader.tenant_id() && readable(&reader, &call))
                .then(|| call.id.clone());
            assert_eq!(got, want, "seed {seed}: raw get {} as {reader:?}", call.id);
        } else {
            let mut query = RawCallQuery {
                limit: 1 + rng.below(30),
                ..RawCallQuery::default()
            };
            if rng.chance(40) {
                query.namespaces = NAMESPACES
                    .iter()
                    .filter(|_| rng.chance(40))
                    .map(|n| (*n).to_owned())
                    .collect();
            }
            let scope = reader.search_scope(&query.namespaces);
            let want: Vec<&RawCall> = calls
                .iter()
                .filter(|c| readable(&reader, c) && scope.contains(&c.meta.namespace))
                .collect();
            // Newest first, ids ascending among equals (the raw log's order).
            let want = newest_ids(
                want,
                |c| (c.timestamp, std::cmp::Reverse(c.id.clone())),
                |c| &c.id,
                query.limit,
            );
            let page = s.raw.query(&reader, &query).await.unwrap();
            let got: Vec<&str> = page.items.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(got, want, "seed {seed}: raw {query:?} as {reader:?}");
        }
        checks += 1;
    }
    checks
}

/// Proposals in the leak check: random roles create proposals (placed,
/// owned and classified as facts are); random gets and lists are compared
/// with the read rule, and random verdicts with the approve rule
/// ([`CallerContext::may_approve`]): a refused verdict changes nothing.
/// Returns (reads checked, verdicts checked).
async fn proposal_leak_check(s: &Stores, rng: &mut Rng, seed: u64) -> (usize, usize) {
    let mut stored: Vec<Proposal> = Vec::new();
    for i in 0..80 {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let action = Action::tool("give_discount", "discount", json!({ "i": i }));
        let mut p = Proposal::new(
            format!("role{}", rng.below(2)),
            format!("proposal {i}"),
            action,
        )
        .id(format!("pr{i}"))
        .domain(*rng.pick(DOMAINS))
        .namespace(ns);
        p.meta.classification = *rng.pick(&Classification::ALL);
        let expected = writer.placement(ns, "create");
        match (s.proposals.create(&writer, p).await, expected) {
            (Ok(p), Ok(place)) => {
                assert_eq!(
                    (&p.meta.namespace, &p.meta.project_id, &p.meta.owner),
                    (&place.namespace, &place.project_id, &writer.owner_key()),
                    "seed {seed}: placement of pr{i}"
                );
                stored.push(p);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: create pr{i}: got {got:?}, want {want:?}"),
        }
    }
    assert!(!stored.is_empty(), "seed {seed}: no proposal was created");
    let readable = |reader: &CallerContext, p: &Proposal| {
        p.meta.tenant_id == reader.tenant_id() && reader.can_read(&p.meta, &p.domain)
    };
    let mut checks = 0;
    for _ in 0..600 {
        let reader = random_caller(rng);
        if rng.chance(40) {
            let p = rng.pick(&stored).clone();
            let got = s.proposals.get(&reader, &p.id).await.unwrap().map(|p| p.id);
            let want = readable(&reader, &p).then(|| p.id.clone());
            assert_eq!(
                got, want,
                "seed {seed}: proposal get {} as {reader:?}",
                p.id
            );
        } else {
            let mut query = ProposalQuery::new().limit(1 + rng.below(30));
            if rng.chance(40) {
                query.namespaces = NAMESPACES
                    .iter()
                    .filter(|_| rng.chance(40))
                    .map(|n| (*n).to_owned())
                    .collect();
            }
            if rng.chance(30) {
                query.domain = Some((*rng.pick(DOMAINS)).to_owned());
            }
            if rng.chance(30) {
                query.status =
                    Some(*rng.pick(&[ProposalStatus::Pending, ProposalStatus::Rejected]));
            }
            let scope = reader.list_scope(&query.namespaces);
            let now = chrono::Utc::now();
            let want: Vec<&Proposal> = stored
                .iter()
                .filter(|p| {
                    readable(&reader, p)
                        && scope.contains(&p.meta.namespace)
                        && query.matches(p, now)
                })
                .collect();
            // Newest first, ids descending among equals (the keyset order).
            let want = newest_ids(
                want,
                |p| (p.meta.created_at, p.id.clone()),
                |p| &p.id,
                query.limit,
            );
            let page = s.proposals.list(&reader, &query).await.unwrap();
            let got: Vec<&str> = page.items.iter().map(|p| p.id.as_str()).collect();
            assert_eq!(got, want, "seed {seed}: proposals {query:?} as {reader:?}");
        }
        checks += 1;
    }
    let mut verdicts = 0;
    for step in 0..200 {
        let caller = random_caller(rng);
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let verdict = if rng.chance(50) {
            Verdict::approve(format!("ok {step}"))
        } else {
            Verdict::reject(format!("no {step}"))
        };
        let visible = readable(&caller, &target);
        let may = visible && caller.may_approve(&target.meta, "decide").is_ok();
        let pending = target.status == ProposalStatus::Pending;
        match (
            s.proposals.decide(&caller, &target.id, &verdict).await,
            visible,
            may,
        ) {
            (Ok(decided), _, true) if pending => {
                assert_eq!(decided.decided_by, Some(caller.owner_key()), "seed {seed}");
                stored[idx] = decided;
            }
            (Err(StoreError::Conflict { .. }), _, true) if !pending => {}
            (Err(StoreError::NotFound { .. }), false, _)
            | (Err(StoreError::Unauthorized { .. }), true, false) => {
                let admin = admin_of(&target.meta);
                let still = s.proposals.get(&admin, &target.id).await.unwrap();
                assert_eq!(
                    still.map(|p| (p.status, p.decided_by)),
                    Some((target.status, target.decided_by.clone())),
                    "seed {seed}: a refused verdict changed {}",
                    target.id
                );
            }
            (got, visible, may) => panic!(
                "seed {seed}: verdict on {} ({}) as {caller:?}: got {got:?}, readable {visible}, may approve {may}",
                target.id, target.status
            ),
        }
        verdicts += 1;
    }
    (checks, verdicts)
}

/// Goals in the leak check: random callers put goals (placed, owned and
/// classified as facts are) and report metrics into random namespaces
/// (allowed where they may write); random gets, lists and progress reads
/// are compared with the read rule, and each goal's progress with the sum
/// of the reports the model accepted in the goal's namespace. Returns the
/// reads checked.
async fn goal_leak_check(s: &Stores, rng: &mut Rng, seed: u64) -> usize {
    use openvibe_protocols::{Goal, GoalQuery, KeyResult, MetricReport, Objective};
    let mut stored: Vec<Goal> = Vec::new();
    for i in 0..40 {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let objective = Objective {
            id: format!("g{i}"),
            owner: format!("role{}", rng.below(2)),
            title: format!("goal {i}"),
            due: chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
            key_results: vec![KeyResult {
                id: "kr".into(),
                metric: "m".into(),
                baseline: 0.0,
                target: 1_000.0,
                unit: String::new(),
                due: None,
            }],
        };
        let mut goal = Goal::new(objective).namespace(ns);
        goal.meta.classification = *rng.pick(&Classification::ALL);
        let expected = writer.placement(ns, "create");
        match (s.goals.put(&writer, goal).await, expected) {
            (Ok(g), Ok(place)) => {
                assert_eq!(
                    (&g.meta.namespace, &g.meta.project_id, &g.meta.owner),
                    (&place.namespace, &place.project_id, &writer.owner_key()),
                    "seed {seed}: placement of g{i}"
                );
                stored.push(g);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: put g{i}: got {got:?}, want {want:?}"),
        }
    }
    assert!(!stored.is_empty(), "seed {seed}: no goal was put");
    // Reports: the model's sum per (tenant, namespace, role).
    let mut sums: HashMap<(String, String, String), f64> = HashMap::new();
    for i in 0..120 {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let role = format!("role{}", rng.below(2));
        let value = f64::from(u32::try_from(1 + rng.below(9)).unwrap_or(1));
        let report = MetricReport::add(role.clone(), "m", value)
            .id(format!("mr{i}"))
            .namespace(ns);
        match (
            s.goals.report(&writer, report).await,
            writer.placement(ns, "report"),
        ) {
            (Ok(r), Ok(place)) => {
                assert_eq!(r.meta.namespace, place.namespace, "seed {seed}: mr{i}");
                *sums
                    .entry((writer.tenant_id().to_owned(), place.namespace, role))
                    .or_default() += value;
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: report mr{i}: got {got:?}, want {want:?}"),
        }
    }
    let readable = |reader: &CallerContext, g: &Goal| {
        g.meta.tenant_id == reader.tenant_id() && reader.can_read(&g.meta, "")
    };
    let mut checks = 0;
    for _ in 0..300 {
        let reader = random_caller(rng);
        let g = rng.pick(&stored).clone();
        match rng.below(3) {
            0 => {
                let got = s
                    .goals
                    .get(&reader, g.id())
                    .await
                    .unwrap()
                    .map(|g| g.version);
                let want = readable(&reader, &g).then_some(1);
                assert_eq!(got, want, "seed {seed}: goal get {} as {reader:?}", g.id());
            }
            1 => {
                let got = s
                    .goals
                    .progress(&reader, g.id())
                    .await
                    .unwrap()
                    .map(|p| p.key_results[0].current);
                let want = readable(&reader, &g).then(|| {
                    sums.get(&(
                        g.meta.tenant_id.clone(),
                        g.meta.namespace.clone(),
                        g.role_id().to_owned(),
                    ))
                    .copied()
                    .unwrap_or(0.0)
                });
                assert_eq!(
                    got,
                    want,
                    "seed {seed}: progress of {} as {reader:?}",
                    g.id()
                );
            }
            _ => {
                let mut query = GoalQuery::new().limit(MAX_GOALS);
                if rng.chance(40) {
                    query.namespaces = NAMESPACES
                        .iter()
                        .filter(|_| rng.chance(40))
                        .map(|n| (*n).to_owned())
                        .collect();
                }
                let scope = reader.list_scope(&query.namespaces);
                let mut want: Vec<&str> = stored
                    .iter()
                    .filter(|g| readable(&reader, g) && scope.contains(&g.meta.namespace))
                    .map(Goal::id)
                    .collect();
                want.sort_unstable();
                let page = s.goals.list(&reader, &query).await.unwrap();
                let got: Vec<&str> = page.items.iter().map(Goal::id).collect();
                assert_eq!(got, want, "seed {seed}: goals {query:?} as {reader:?}");
            }
        }
        checks += 1;
    }
    checks
}

/// Beliefs in the leak check: random roles propose beliefs (placed, owned
/// and classified as facts are, in random domains); random gets and lists
/// are compared with the read rule, and random verdicts with the approve
/// rule: a refused verdict changes nothing. Returns (reads, verdicts).
async fn belief_leak_check(s: &Stores, rng: &mut Rng, seed: u64) -> (usize, usize) {
    use openvibe_protocols::{Belief, BeliefQuery, BeliefStatus};
    let mut stored: Vec<Belief> = Vec::new();
    for i in 0..60 {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let mut b = Belief::new(format!("role{}", rng.below(2)), format!("belief {i}"), 0.7)
            .id(format!("bl{i}"))
            .domain(*rng.pick(DOMAINS))
            .namespace(ns);
        b.meta.classification = *rng.pick(&Classification::ALL);
        match (
            s.beliefs.propose(&writer, b).await,
            writer.placement(ns, "propose"),
        ) {
            (Ok(b), Ok(place)) => {
                assert_eq!(
                    (&b.meta.namespace, &b.meta.owner),
                    (&place.namespace, &writer.owner_key()),
                    "seed {seed}: placement of bl{i}"
                );
                stored.push(b);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: propose bl{i}: got {got:?}, want {want:?}"),
        }
    }
    assert!(!stored.is_empty(), "seed {seed}: no belief was proposed");
    let readable = |reader: &CallerContext, b: &Belief| {
        b.meta.tenant_id == reader.tenant_id() && reader.can_read(&b.meta, &b.domain)
    };
    let mut checks = 0;
    for _ in 0..300 {
        let reader = random_caller(rng);
        if rng.chance(50) {
            let b = rng.pick(&stored).clone();
            let got = s.beliefs.get(&reader, &b.id).await.unwrap().map(|b| b.id);
            let want = readable(&reader, &b).then(|| b.id.clone());
            assert_eq!(got, want, "seed {seed}: belief get {} as {reader:?}", b.id);
        } else {
            let mut query = BeliefQuery::new().limit(MAX_GOALS);
            if rng.chance(30) {
                query.domain = Some((*rng.pick(DOMAINS)).to_owned());
            }
            let scope = reader.list_scope(&query.namespaces);
            let mut want: Vec<&str> = stored
                .iter()
                .filter(|b| {
                    readable(&reader, b) && scope.contains(&b.meta.namespace) && query.matches(b)
                })
                .map(|b| b.id.as_str())
                .collect();
            want.sort_unstable();
            let page = s.beliefs.list(&reader, &query).await.unwrap();
            let mut got: Vec<&str> = page.items.iter().map(|b| b.id.as_str()).collect();
            got.sort_unstable();
            assert_eq!(got, want, "seed {seed}: beliefs {query:?} as {reader:?}");
        }
        checks += 1;
    }
    let mut verdicts = 0;
    for step in 0..100 {
        let caller = random_caller(rng);
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let verdict = if rng.chance(50) {
            Verdict::approve(format!("ok {step}"))
        } else {
            Verdict::reject(format!("no {step}"))
        };
        let visible = readable(&caller, &target);
        let may = visible && caller.may_approve(&target.meta, "decide").is_ok();
        let proposed = target.status == BeliefStatus::Proposed;
        match (
            s.beliefs.decide(&caller, &target.id, &verdict).await,
            visible,
            may,
        ) {
            (Ok(decided), _, true) if proposed => stored[idx] = decided,
            (Err(StoreError::Conflict { .. }), _, true) if !proposed => {}
            (Err(StoreError::NotFound { .. }), false, _)
            | (Err(StoreError::Unauthorized { .. }), true, false) => {
                let admin = admin_of(&target.meta);
                let still = s.beliefs.get(&admin, &target.id).await.unwrap();
                assert_eq!(
                    still.map(|b| b.status),
                    Some(target.status),
                    "seed {seed}: a refused verdict changed {}",
                    target.id
                );
            }
            (got, visible, may) => panic!(
                "seed {seed}: verdict on {} ({}) as {caller:?}: got {got:?}, readable {visible}, may approve {may}",
                target.id, target.status
            ),
        }
        verdicts += 1;
    }
    (checks, verdicts)
}

/// Spaces in the leak check: random callers create spaces (placed, owned
/// and classified as facts are) with random members; random posts and
/// member changes are allowed or refused exactly as the rules say
/// (members with the write right post; admins with it, or managers, change
/// members), and random gets, lists and message reads are compared with
/// the read rule (the tenant, the namespace, the clearance on the space's
/// domain, and membership). Returns (reads checked, changes checked).
async fn space_leak_check(s: &Stores, rng: &mut Rng, seed: u64) -> (usize, usize) {
    use openvibe_protocols::{Change, Member, MessageQuery, Space, SpaceMessage, SpaceQuery};
    let keys: Vec<String> = PRINCIPALS
        .iter()
        .map(|(id, kind)| format!("{}:{id}", kind.as_str()))
        .collect();
    let mut stored: Vec<Space> = Vec::new();
    for i in 0..60 {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let mut space = Space::new(format!("space {i}"))
            .id(format!("sp{i}"))
            .domain(*rng.pick(DOMAINS))
            .namespace(ns);
        for key in &keys {
            if rng.chance(40) {
                let mut m = Member::new(key.clone());
                m.admin = rng.chance(30);
                space = space.member(m);
            }
        }
        space.meta.classification = *rng.pick(&Classification::ALL);
        match (
            s.spaces.create(&writer, space).await,
            writer.placement(ns, "create"),
        ) {
            (Ok(created), Ok(place)) => {
                assert_eq!(
                    (
                        &created.meta.namespace,
                        &created.meta.project_id,
                        &created.meta.owner
                    ),
                    (&place.namespace, &place.project_id, &writer.owner_key()),
                    "seed {seed}: placement of sp{i}"
                );
                stored.push(created);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: create sp{i}: got {got:?}, want {want:?}"),
        }
    }
    assert!(!stored.is_empty(), "seed {seed}: no space was created");
    let visible = |reader: &CallerContext, sp: &Space| {
        sp.meta.tenant_id == reader.tenant_id()
            && reader.can_read(&sp.meta, &sp.domain)
            && (reader.is_privileged()
                || sp.members.iter().any(|m| m.principal == reader.owner_key()))
    };
    let member = |reader: &CallerContext, sp: &Space| {
        sp.members
            .iter()
            .find(|m| m.principal == reader.owner_key())
            .cloned()
    };
    // Posts and member changes, each allowed or refused as the rules say.
    let mut posted: HashMap<String, usize> = HashMap::new();
    let mut changes = 0;
    for step in 0..300 {
        let caller = random_caller(rng);
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let seen = visible(&caller, &target);
        let writes = caller.rights(&target.meta.namespace).allows(Change::Write);
        if rng.chance(70) {
            let may = seen && member(&caller, &target).is_some() && writes;
            let text = SpaceMessage::text(format!("post {step}"));
            match (s.spaces.post(&caller, &target.id, text).await, seen, may) {
                (Ok(m), _, true) => {
                    assert_eq!(m.meta.owner, caller.owner_key(), "seed {seed}");
                    *posted.entry(target.id.clone()).or_default() += 1;
                }
                (Err(StoreError::NotFound { .. }), false, _)
                | (Err(StoreError::Unauthorized { .. }), true, false) => {}
                (got, seen, may) => panic!(
                    "seed {seed}: post to {} as {caller:?}: got {got:?}, visible {seen}, may {may}",
                    target.id
                ),
            }
        } else {
            let rights = caller.rights(&target.meta.namespace);
            let may = seen
                && ((rights.manage && rights.write)
                    || (member(&caller, &target).is_some_and(|m| m.admin) && writes));
            let who = rng.pick(&keys).clone();
            match (
                s.spaces
                    .add_member(&caller, &target.id, Member::new(who.clone()))
                    .await,
                seen,
                may,
            ) {
                (Ok(updated), _, true) => {
                    assert!(updated.find_member(&who).is_some(), "seed {seed}");
                    stored[idx] = updated;
                }
                // Demoting the last admin is refused whoever asks.
                (Err(StoreError::Conflict { .. }), _, true) => {}
                (Err(StoreError::NotFound { .. }), false, _)
                | (Err(StoreError::Unauthorized { .. }), true, false) => {
                    let admin = admin_of(&target.meta);
                    let still = s.spaces.get(&admin, &target.id).await.unwrap();
                    assert_eq!(
                        still.map(|sp| sp.members),
                        Some(target.members.clone()),
                        "seed {seed}: a refused member change changed {}",
                        target.id
                    );
                }
                (got, seen, may) => panic!(
                    "seed {seed}: add {who} to {} as {caller:?}: got {got:?}, visible {seen}, may {may}",
                    target.id
                ),
            }
        }
        changes += 1;
    }
    assert!(
        posted.values().sum::<usize>() > 0,
        "seed {seed}: no post was allowed"
    );
    // Reads.
    let mut checks = 0;
    for _ in 0..500 {
        let reader = random_caller(rng);
        let sp = rng.pick(&stored).clone();
        match rng.below(3) {
            0 => {
                let got = s.spaces.get(&reader, &sp.id).await.unwrap().map(|x| x.id);
                let want = visible(&reader, &sp).then(|| sp.id.clone());
                assert_eq!(got, want, "seed {seed}: space get {} as {reader:?}", sp.id);
            }
            1 => {
                let got = s
                    .spaces
                    .messages(&reader, &sp.id, &MessageQuery::after(0).limit(1000))
                    .await;
                match (got, visible(&reader, &sp)) {
                    (Ok(messages), true) => assert_eq!(
                        messages.len(),
                        posted.get(&sp.id).copied().unwrap_or(0),
                        "seed {seed}: messages of {}",
                        sp.id
                    ),
                    (Err(StoreError::NotFound { .. }), false) => {}
                    (got, seen) => panic!(
                        "seed {seed}: messages of {} as {reader:?}: got {got:?}, visible {seen}",
                        sp.id
                    ),
                }
            }
            _ => {
                let mut query = SpaceQuery::new().limit(1 + rng.below(30));
                if rng.chance(40) {
                    query.namespaces = NAMESPACES
                        .iter()
                        .filter(|_| rng.chance(40))
                        .map(|n| (*n).to_owned())
                        .collect();
                }
                let scope = reader.list_scope(&query.namespaces);
                let want: Vec<&Space> = stored
                    .iter()
                    .filter(|x| visible(&reader, x) && scope.contains(&x.meta.namespace))
                    .collect();
                let want = newest_ids(
                    want,
                    |x| (x.meta.created_at, x.id.clone()),
                    |x| &x.id,
                    query.limit,
                );
                let page = s.spaces.list(&reader, &query).await.unwrap();
                let got: Vec<&str> = page.items.iter().map(|x| x.id.as_str()).collect();
                assert_eq!(got, want, "seed {seed}: spaces {query:?} as {reader:?}");
            }
        }
        checks += 1;
    }
    (checks, changes)
}

/// More goals than the leak check puts: one page holds them all.
const MAX_GOALS: usize = 100;

/// The ids of the first `limit` of `items` by `key`, greatest first: the
/// order a paged list returns.
fn newest_ids<'a, T, K: Ord>(
    mut items: Vec<&'a T>,
    key: impl Fn(&T) -> K,
    id: impl Fn(&'a T) -> &'a String,
    limit: usize,
) -> Vec<&'a str> {
    items.sort_by_key(|t| std::cmp::Reverse(key(t)));
    items
        .into_iter()
        .take(limit)
        .map(|t| id(t).as_str())
        .collect()
}

/// The system, in the tenant and project of a record with `meta`: sees it
/// whoever owns it (to check that a refused change changed nothing).
fn admin_of(meta: &openvibe_protocols::RecordMeta) -> CallerContext {
    CallerContext::system()
        .with_tenant(meta.tenant_id.clone())
        .with_project_id(meta.project_id.clone())
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
/// one per number from 1 without gaps, also when eight writers race; the
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
