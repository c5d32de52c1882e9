//! Proposals in the leak check: created by random roles, decided under the
//! approve rule, read by id and by page.

use openvibe_protocols::{
    Action, CallerContext, Classification, PROPOSAL_KIND, Proposal, ProposalQuery, ProposalStatus,
    StoreError,
};
use serde_json::json;

use super::{Kept, Leak, LeakKind, Verdicted, may_approve, random_verdict, verdicted};
use crate::governance::draw::{DOMAINS, Rng, admin_of, random_namespaces};

/// Proposals: random verdicts given or refused as the approve rule says
/// ([`CallerContext::may_approve`]), a refused one changing nothing; pages
/// filtered by namespace, domain and status, newest first.
pub(super) struct ProposalLeak;

impl LeakKind for ProposalLeak {
    const KIND: &'static str = PROPOSAL_KIND;
    const WRITES: usize = 80;
    const CHANGES: usize = 200;
    const READS: usize = 600;
    const MIX: [usize; 3] = [40, 60, 0];

    type Record = Proposal;
    type Query = ProposalQuery;
    type State = ();

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> Proposal {
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
        p
    }

    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        p: Proposal,
    ) -> Result<Proposal, StoreError> {
        cx.s.proposals.create(writer, p).await
    }

    async fn get(
        cx: &Leak<'_>,
        reader: &CallerContext,
        id: &str,
    ) -> Result<Option<Proposal>, StoreError> {
        cx.s.proposals.get(reader, id).await
    }

    fn random_query(rng: &mut Rng) -> ProposalQuery {
        let mut query = ProposalQuery::new().limit(1 + rng.below(30));
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        if rng.chance(30) {
            query.domain = Some((*rng.pick(DOMAINS)).to_owned());
        }
        if rng.chance(30) {
            query.status = Some(*rng.pick(&[ProposalStatus::Pending, ProposalStatus::Rejected]));
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &ProposalQuery,
    ) -> Result<Vec<Proposal>, StoreError> {
        Ok(cx.s.proposals.list(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &ProposalQuery, p: &Proposal) -> bool {
        reader
            .list_scope(&query.namespaces)
            .contains(&p.meta.namespace)
            && query.matches(p, chrono::Utc::now())
    }

    fn limit(query: &ProposalQuery) -> usize {
        query.limit
    }

    /// A verdict on a random proposal.
    async fn change(
        cx: &Leak<'_>,
        rng: &mut Rng,
        caller: &CallerContext,
        step: usize,
        stored: &mut [Proposal],
        _: &mut (),
    ) {
        let seed = cx.seed;
        let idx = rng.below(stored.len());
        let target = stored[idx].clone();
        let verdict = random_verdict(rng, step);
        let visible = target.readable(caller);
        let may = may_approve(seed, caller, &target.meta, visible);
        let open = target.status == ProposalStatus::Pending;
        let result = cx.s.proposals.decide(caller, &target.id, &verdict).await;
        let what = format!("{} ({}) as {caller:?}", target.id, target.status);
        match verdicted(seed, &what, result, visible, may, open) {
            Verdicted::Decided(decided) => {
                assert_eq!(
                    decided.decided_by,
                    Some(caller.owner_key()),
                    "seed {seed}: {what}"
                );
                stored[idx] = decided;
            }
            Verdicted::Closed => {}
            Verdicted::Refused => {
                let still =
                    cx.s.proposals
                        .get(&admin_of(&target.meta), &target.id)
                        .await
                        .unwrap();
                assert_eq!(
                    still.map(|p| (p.status, p.decided_by)),
                    Some((target.status, target.decided_by.clone())),
                    "seed {seed}: a refused verdict changed {}",
                    target.id
                );
            }
        }
    }
}
