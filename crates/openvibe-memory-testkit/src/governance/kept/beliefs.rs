//! Beliefs in the leak check: proposed by random roles, decided under the
//! approve rule, read by id and by page.

use openvibe_protocols::{
    BELIEF_KIND, Belief, BeliefQuery, BeliefStatus, CallerContext, Classification, StoreError,
};

use super::{Kept, Leak, LeakKind, Verdicted, may_approve, random_verdict, verdicted};
use crate::governance::draw::{DOMAINS, Rng, admin_of, random_namespaces};

/// Beliefs: random verdicts given or refused as the approve rule says, a
/// refused one changing nothing; pages filtered by namespace, domain and
/// status, newest first.
pub(super) struct BeliefLeak;

impl LeakKind for BeliefLeak {
    const KIND: &'static str = BELIEF_KIND;
    const WRITES: usize = 60;
    const CHANGES: usize = 100;
    const READS: usize = 300;
    const MIX: [usize; 3] = [50, 50, 0];

    type Record = Belief;
    type Query = BeliefQuery;
    type State = ();

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> Belief {
        let mut b = Belief::new(format!("role{}", rng.below(2)), format!("belief {i}"), 0.7)
            .id(format!("bl{i}"))
            .domain(*rng.pick(DOMAINS))
            .namespace(ns);
        b.meta.classification = *rng.pick(&Classification::ALL);
        b
    }

    async fn write(cx: &Leak<'_>, writer: &CallerContext, b: Belief) -> Result<Belief, StoreError> {
        cx.s.beliefs.propose(writer, b).await
    }

    async fn get(
        cx: &Leak<'_>,
        reader: &CallerContext,
        id: &str,
    ) -> Result<Option<Belief>, StoreError> {
        cx.s.beliefs.get(reader, id).await
    }

    fn random_query(rng: &mut Rng) -> BeliefQuery {
        let mut query = BeliefQuery::new().limit(1 + rng.below(30));
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        if rng.chance(30) {
            query.domain = Some((*rng.pick(DOMAINS)).to_owned());
        }
        if rng.chance(30) {
            query.status = Some(*rng.pick(&[
                BeliefStatus::Proposed,
                BeliefStatus::Active,
                BeliefStatus::Rejected,
            ]));
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &BeliefQuery,
    ) -> Result<Vec<Belief>, StoreError> {
        Ok(cx.s.beliefs.list(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &BeliefQuery, b: &Belief) -> bool {
        reader
            .list_scope(&query.namespaces)
            .contains(&b.meta.namespace)
            && query.matches(b)
    }

    fn limit(query: &BeliefQuery) -> usize {
        query.limit
    }

    /// A verdict on a random belief.
    async fn change(
        cx: &Leak<'_>,
        rng: &mut Rng,
        caller: &CallerContext,
        step: usize,
        stored: &mut [Belief],
        _: &mut (),
    ) {
        let seed = cx.seed;
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let verdict = random_verdict(rng, step);
        let visible = target.readable(caller);
        let may = may_approve(seed, caller, &target.meta, visible);
        let open = target.status == BeliefStatus::Proposed;
        let result = cx.s.beliefs.decide(caller, &target.id, &verdict).await;
        let what = format!("{} ({}) as {caller:?}", target.id, target.status);
        match verdicted(seed, &what, result, visible, may, open) {
            Verdicted::Decided(decided) => stored[idx] = decided,
            Verdicted::Closed => {}
            Verdicted::Refused => {
                let still =
                    cx.s.beliefs
                        .get(&admin_of(&target.meta), &target.id)
                        .await
                        .unwrap();
                assert_eq!(
                    still.map(|b| b.status),
                    Some(target.status),
                    "seed {seed}: a refused verdict changed {}",
                    target.id
                );
            }
        }
    }
}
