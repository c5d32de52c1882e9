//! The randomized leak check: facts against the reference model (gets,
//! queries, updates and deletes), then every other kind of the kind
//! registry kept by id (`kept`), all from one seed.

use std::future::Future;

use openvibe_protocols::{Change, Classification, Fact, FactQuery, StoreError, Stores};

use super::draw::{
    DOMAINS, NAMESPACES, Rng, WORDS, admin_of, leak_seed, random_caller, random_namespaces,
};
use super::kept;
use crate::model;
use crate::support::t0;

/// How many random reads and searches of facts the leak check makes per
/// backend.
pub const LEAK_CHECKS: usize = 10_000;

/// A random fact query: limit, namespaces, domain, text, tags, confidence.
fn random_query(rng: &mut Rng) -> FactQuery {
    let mut q = FactQuery::new().limit(1 + rng.below(40));
    if rng.chance(35) {
        q = q.namespaces(random_namespaces(rng));
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

/// Randomized leak check: random tenants, principals, grants, projects,
/// clearances, owners and records; [`LEAK_CHECKS`] random reads and
/// searches, each compared with the reference model (a leak or a record
/// wrongly hidden fails, with the seed); then random updates and deletes,
/// each allowed or refused exactly as the contract's rule says, and a
/// refused one changes nothing. Then the same for every other kind of the
/// kind registry kept by id (placement, gets, pages in order, and each
/// kind's changes and own reads); a registry kind checked nowhere fails.
pub async fn governance_randomized_leak_check<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let seed = leak_seed();
    eprintln!("governance leak check: seed {seed} (OPENVIBE_LEAK_SEED={seed} reproduces it)");
    let mut rng = Rng::new(seed);
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
            Change::Delete
        } else {
            Change::Write
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
    let kinds = kept::every_kind(&kept::Leak { s: &s, seed }, &mut rng).await;
    eprintln!(
        "governance leak check: {checks} fact reads and searches matched the model over {} \
         records ({refused_writes} writes refused); {allowed} changes allowed, {refused} refused \
         as the rule says; every other kind of the registry:",
        stored.len()
    );
    for line in &kinds {
        eprintln!("  {line}");
    }
    assert!(
        allowed > 0 && refused > 0 && refused_writes > 0,
        "seed {seed}: the generator exercised too little"
    );
}
