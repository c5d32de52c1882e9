//! The randomized leak check of the kinds kept by id, driven by the kind
//! registry (`KINDS`). One driver, [`run`], does what every kind shares:
//! random writes compared with the placement rule, the kind's changes,
//! then random reads (by id, by page, and the kind's own read) compared
//! with the contract's read rule. Each kind states only what differs, in
//! [`LeakKind`]: its raw calls, proposals, goals (with metric reports and
//! progress), priorities, metric reports, beliefs, spaces (with their
//! messages) and inbox events each have a file here. [`every_kind`] walks the registry: a
//! kind with neither a check here nor a case named in
//! [`CHECKED_ELSEWHERE`] fails the case, and the unit test below.

use std::fmt::{self, Debug};

use openvibe_protocols::{
    Belief, CallerContext, Goal, Governed, InboxEvent, KINDS, KeptRecord, MetricReport,
    PrincipalKind, Priorities, Proposal, RecordMeta, Space, StoreError, Stores, Verdict,
};

use super::draw::{NAMESPACES, Rng, random_caller};

mod beliefs;
mod goals;
mod inbox;
mod proposals;
mod raw;
mod spaces;

use beliefs::BeliefLeak;
use goals::{GoalLeak, MetricLeak, PrioritiesLeak};
use inbox::InboxLeak;
use proposals::ProposalLeak;
use raw::RawLeak;
use spaces::SpaceLeak;

/// What every step needs: the stores and the run's seed (named in every
/// failure).
pub(super) struct Leak<'a> {
    /// The backend's stores.
    pub(super) s: &'a Stores,
    /// The seed of the run (`OPENVIBE_LEAK_SEED` replays it).
    pub(super) seed: u64,
}

/// What the driver reads of a record: its id, its governance metadata,
/// and whether a caller may read it.
trait Kept: Clone + Debug {
    /// Its id.
    fn key(&self) -> &str;
    /// Its governance metadata (placement, owner, creation time).
    fn record_meta(&self) -> &RecordMeta;
    /// The contract's read rule for it.
    fn readable(&self, reader: &CallerContext) -> bool;
}

/// `Kept` of the contract's kinds kept by id: all three from
/// [`KeptRecord`] (a space's read rule includes membership).
macro_rules! kept_records {
    ($($record:ty),* $(,)?) => {$(
        impl Kept for $record {
            fn key(&self) -> &str {
                KeptRecord::record_id(self)
            }
            fn record_meta(&self) -> &RecordMeta {
                Governed::meta(self)
            }
            fn readable(&self, reader: &CallerContext) -> bool {
                KeptRecord::readable_by(self, reader)
            }
        }
    )*};
}
kept_records!(
    Proposal,
    Goal,
    Priorities,
    MetricReport,
    Belief,
    Space,
    InboxEvent
);

/// One kind in the leak check: only what differs per kind; [`run`] does
/// the rest. A kind implements the reads its `MIX` weighs, and `change`
/// when it has `CHANGES`: the defaults of the others are never called.
trait LeakKind {
    /// Its name in the registry.
    const KIND: &'static str;
    /// Registry kinds read only through this kind's own read.
    const CARRIES: &'static [&'static str] = &[];
    /// How many records random writers write.
    const WRITES: usize;
    /// How many changes random callers try, after the writes.
    const CHANGES: usize = 0;
    /// How many random reads follow the changes.
    const READS: usize;
    /// The weights of the reads: by id, by page, the kind's own read.
    const MIX: [usize; 3];

    /// Its records.
    type Record: Kept;
    /// A query of its pages.
    type Query: Debug;
    /// What the changes leave for the kind's own read.
    type State: Default;

    /// Record number `i`, asking for namespace `ns`, the rest drawn.
    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> Self::Record;

    /// Create `record` as `writer`.
    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        record: Self::Record,
    ) -> Result<Self::Record, StoreError>;

    /// The record `id`, when `reader` may read it.
    async fn get(
        _cx: &Leak<'_>,
        _reader: &CallerContext,
        _id: &str,
    ) -> Result<Option<Self::Record>, StoreError> {
        unreachable!("{}: MIX weighs no read by id", Self::KIND)
    }

    /// A random query of a page.
    fn random_query(_rng: &mut Rng) -> Self::Query {
        unreachable!("{}: MIX weighs no page", Self::KIND)
    }

    /// The page `query` answers `reader`.
    async fn page(
        _cx: &Leak<'_>,
        _reader: &CallerContext,
        _query: &Self::Query,
    ) -> Result<Vec<Self::Record>, StoreError> {
        unreachable!("{}: MIX weighs no page", Self::KIND)
    }

    /// Whether `record`, which `reader` may read, is in the result of
    /// `query`: its namespace scope and filters.
    fn selects(_reader: &CallerContext, _query: &Self::Query, _record: &Self::Record) -> bool {
        unreachable!("{}: MIX weighs no page", Self::KIND)
    }

    /// The most a page of `query` holds.
    fn limit(_query: &Self::Query) -> usize {
        unreachable!("{}: MIX weighs no page", Self::KIND)
    }

    /// Sort `records` in the order of its pages. Default: newest first,
    /// ids descending among equals (the keyset order of lists by creation).
    fn order(records: &mut [&Self::Record]) {
        records.sort_by(|a, b| {
            (b.record_meta().created_at, b.key()).cmp(&(a.record_meta().created_at, a.key()))
        });
    }

    /// The kind's own read of `record` as `reader`, compared with what the
    /// writes (`stored`) and the changes (`state`) left.
    async fn special(
        _cx: &Leak<'_>,
        _rng: &mut Rng,
        _reader: &CallerContext,
        _record: &Self::Record,
        _stored: &[Self::Record],
        _state: &Self::State,
    ) {
        unreachable!("{}: MIX weighs no read of its own", Self::KIND)
    }

    /// Change number `step` by `caller`, allowed or refused as the
    /// contract says; `stored` and `state` follow what it changed.
    async fn change(
        _cx: &Leak<'_>,
        _rng: &mut Rng,
        _caller: &CallerContext,
        _step: usize,
        _stored: &mut [Self::Record],
        _state: &mut Self::State,
    ) {
        unreachable!("{}: it has no CHANGES", Self::KIND)
    }

    /// Whether the changes exercised the rules (some post allowed, say).
    fn enough(_state: &Self::State) -> bool {
        true
    }
}

/// What one kind's check did, for the case's summary.
struct Tally {
    kind: &'static str,
    written: usize,
    refused: usize,
    changes: usize,
    reads: usize,
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            kind,
            written,
            refused,
            changes,
            reads,
        } = self;
        write!(
            f,
            "{kind}: {written} written ({refused} refused as the rule says), \
             {changes} changes, {reads} reads matched"
        )
    }
}

/// The leak check of kind `K`: writes, then changes, then reads.
async fn run<K: LeakKind>(cx: &Leak<'_>, rng: &mut Rng) -> Tally {
    let seed = cx.seed;
    let mut stored: Vec<K::Record> = Vec::new();
    let mut refused = 0;
    for i in 0..K::WRITES {
        let writer = random_caller(rng);
        let ns = *rng.pick(NAMESPACES);
        let record = K::random_record(rng, i, ns);
        match (
            K::write(cx, &writer, record).await,
            writer.placement(ns, K::KIND),
        ) {
            (Ok(written), Ok(place)) => {
                let m = written.record_meta();
                assert_eq!(
                    (&m.namespace, &m.project_id, &m.owner, m.tenant_id.as_str()),
                    (
                        &place.namespace,
                        &place.project_id,
                        &writer.owner_key(),
                        writer.tenant_id()
                    ),
                    "seed {seed}: placement of {} {}",
                    K::KIND,
                    written.key()
                );
                stored.push(written);
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => refused += 1,
            (got, want) => panic!(
                "seed {seed}: write {} {i} as {writer:?}: got {got:?}, want {want:?}",
                K::KIND
            ),
        }
    }
    assert!(
        !stored.is_empty(),
        "seed {seed}: no {} was written",
        K::KIND
    );
    let mut state: K::State = Default::default();
    for step in 0..K::CHANGES {
        let caller = random_caller(rng);
        K::change(cx, rng, &caller, step, &mut stored, &mut state).await;
    }
    assert!(
        K::enough(&state),
        "seed {seed}: the {} changes exercised too little",
        K::KIND
    );
    let [by_id, paged, own] = K::MIX;
    for _ in 0..K::READS {
        let reader = random_caller(rng);
        let roll = rng.below(by_id + paged + own);
        if roll < by_id {
            let r = rng.pick(&stored);
            let got = K::get(cx, &reader, r.key()).await.unwrap();
            let want = r.readable(&reader).then_some(r.key());
            assert_eq!(
                got.as_ref().map(Kept::key),
                want,
                "seed {seed}: {} get {} as {reader:?}",
                K::KIND,
                r.key()
            );
        } else if roll < by_id + paged {
            let query = K::random_query(rng);
            let mut want: Vec<&K::Record> = stored
                .iter()
                .filter(|r| r.readable(&reader) && K::selects(&reader, &query, r))
                .collect();
            K::order(&mut want);
            let want: Vec<&str> = want
                .into_iter()
                .take(K::limit(&query))
                .map(Kept::key)
                .collect();
            let page = K::page(cx, &reader, &query).await.unwrap();
            let got: Vec<&str> = page.iter().map(Kept::key).collect();
            assert_eq!(
                got,
                want,
                "seed {seed}: {} {query:?} as {reader:?}",
                K::KIND
            );
        } else {
            let r = rng.pick(&stored);
            K::special(cx, rng, &reader, r, &stored, &state).await;
        }
    }
    Tally {
        kind: K::KIND,
        written: stored.len(),
        refused,
        changes: K::CHANGES,
        reads: K::READS,
    }
}

/// The kinds with a check here: the list of them, and the check of one
/// by its registry name.
macro_rules! leak_kinds {
    ($($kind:ty),* $(,)?) => {
        /// The kinds checked here, each with the kinds read through it.
        const CHECKED: &[(&str, &[&str])] =
            &[$((<$kind as LeakKind>::KIND, <$kind as LeakKind>::CARRIES)),*];

        /// The check of registry kind `name`, when it has one here.
        async fn run_kind(name: &str, cx: &Leak<'_>, rng: &mut Rng) -> Option<Tally> {
            $(
                if name == <$kind as LeakKind>::KIND {
                    return Some(run::<$kind>(cx, rng).await);
                }
            )*
            None
        }
    };
}
leak_kinds!(
    RawLeak,
    ProposalLeak,
    InboxLeak,
    GoalLeak,
    PrioritiesLeak,
    MetricLeak,
    BeliefLeak,
    SpaceLeak
);

/// Registry kinds checked by other cases, with the cases. Facts and
/// knowledge have randomized checks of their own; episodes, insights and
/// working memory (sessions, plans, task contexts) are checked by
/// deterministic cases only, until a check here replaces these lines.
const CHECKED_ELSEWHERE: &[(&str, &str)] = &[
    (
        "fact",
        "governance_randomized_leak_check (its fact part, against the reference model)",
    ),
    ("knowledge", "governance_hybrid_search_leak_check"),
    (
        "episode",
        "access::episode_tenant_isolation, access::episode_clearance_inside_the_query, \
         governance_changes_need_the_right (not randomized)",
    ),
    (
        "insight",
        "access::insight_tenant_isolation, access::insight_clearance_inside_the_query, \
         access::insight_update_and_ownership (not randomized)",
    ),
    (
        "session",
        "governance_working_and_semantic_records, working::working_sessions (not randomized)",
    ),
    (
        "plan",
        "governance_working_and_semantic_records, working::working_plans (not randomized)",
    ),
    (
        "task_context",
        "working::working_task_context, working::working_bad_input_writes_nothing \
         (not randomized)",
    ),
];

/// Where a registry kind is leak-checked.
enum Coverage {
    /// By its check here.
    Here,
    /// Through the check of another kind here (named).
    Through(&'static str),
    /// By another case (named).
    Elsewhere(&'static str),
}

/// Where registry kind `name` is leak-checked, when it is.
fn coverage(name: &str) -> Option<Coverage> {
    if CHECKED.iter().any(|(kind, _)| *kind == name) {
        return Some(Coverage::Here);
    }
    if let Some((by, _)) = CHECKED.iter().find(|(_, carried)| carried.contains(&name)) {
        return Some(Coverage::Through(by));
    }
    CHECKED_ELSEWHERE
        .iter()
        .find(|(kind, _)| *kind == name)
        .map(|(_, case)| Coverage::Elsewhere(case))
}

/// The leak check of every registry kind kept by id, in the registry's
/// order; one summary line per registry kind. A registry kind with no
/// check here and no case named elsewhere fails first.
pub(super) async fn every_kind(cx: &Leak<'_>, rng: &mut Rng) -> Vec<String> {
    let missing: Vec<&str> = KINDS
        .iter()
        .map(|k| k.name)
        .filter(|name| coverage(name).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "registry kinds without a leak check: {missing:?}; implement LeakKind for each and \
         list it in leak_kinds!, or name the case that checks it in CHECKED_ELSEWHERE"
    );
    let mut lines = Vec::new();
    for spec in &KINDS {
        let line = match coverage(spec.name) {
            Some(Coverage::Here) => run_kind(spec.name, cx, rng)
                .await
                .expect("every kind in CHECKED has a check")
                .to_string(),
            Some(Coverage::Through(by)) => format!("{}: read through the {by} check", spec.name),
            Some(Coverage::Elsewhere(case)) => format!("{}: {case}", spec.name),
            None => unreachable!("checked above"),
        };
        lines.push(line);
    }
    lines
}

/// A verdict for change `step`: approve or reject, half each.
fn random_verdict(rng: &mut Rng, step: usize) -> Verdict {
    if rng.chance(50) {
        Verdict::approve(format!("ok {step}"))
    } else {
        Verdict::reject(format!("no {step}"))
    }
}

/// A verdict's result, as the approve rule expects it.
enum Verdicted<R> {
    /// Given: the record as decided.
    Decided(R),
    /// Refused because decided already.
    Closed,
    /// Refused: invisible to the caller, or not its to approve (the
    /// record must be unchanged).
    Refused,
}

/// The approve rule, written here apart from [`CallerContext::may_approve`]
/// so that the stores and the contract's function are both checked against
/// it: never one's own record, privileged or not; governed, the read and
/// `approve` rights in the record's namespace; ungoverned, a person.
/// Being privileged grants nothing here (docs/governance.md, "What
/// privileged may do").
fn may_decide(caller: &CallerContext, meta: &RecordMeta) -> bool {
    if caller.is_owner(&meta.owner) {
        return false;
    }
    match caller.grants() {
        Some(g) => {
            let rights = g.rights(&meta.namespace);
            rights.read && rights.approve
        }
        None => caller.principal().kind == PrincipalKind::User,
    }
}

/// Whether `caller`, which `visible` says can read `meta`'s record, may
/// decide it: the model ([`may_decide`]), checked against the contract's
/// [`CallerContext::may_approve`] on the way.
pub(super) fn may_approve(
    seed: u64,
    caller: &CallerContext,
    meta: &RecordMeta,
    visible: bool,
) -> bool {
    let model = may_decide(caller, meta);
    assert_eq!(
        caller.may_approve(meta, "decide").is_ok(),
        model,
        "seed {seed}: CallerContext::may_approve disagrees with the approve rule for {caller:?} on a record of {} in `{}`",
        meta.owner,
        meta.namespace
    );
    visible && model
}

/// `result` of a verdict on `what`, checked against the approve rule:
/// the caller can read it (`visible`), may approve it (`may`), and it
/// waits for a verdict (`open`). Any other result fails the case.
fn verdicted<R: Debug>(
    seed: u64,
    what: &str,
    result: Result<R, StoreError>,
    visible: bool,
    may: bool,
    open: bool,
) -> Verdicted<R> {
    match (result, visible, may) {
        (Ok(decided), _, true) if open => Verdicted::Decided(decided),
        (Err(StoreError::Conflict { .. }), _, true) if !open => Verdicted::Closed,
        (Err(StoreError::NotFound { .. }), false, _)
        | (Err(StoreError::Unauthorized { .. }), true, false) => Verdicted::Refused,
        (got, visible, may) => panic!(
            "seed {seed}: verdict on {what}: got {got:?}, readable {visible}, may approve {may}, \
             open {open}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use openvibe_protocols::{KINDS, kind_spec};

    use super::{CHECKED, CHECKED_ELSEWHERE, coverage};

    /// A new registry row fails here, without a backend, until it is
    /// leak-checked or its case is named.
    #[test]
    fn every_registry_kind_is_leak_checked() {
        for spec in &KINDS {
            assert!(
                coverage(spec.name).is_some(),
                "kind `{}` has no leak check",
                spec.name
            );
        }
    }

    /// The lists name registry kinds only, each once.
    #[test]
    fn the_lists_name_each_registry_kind_once() {
        let mut names: Vec<&str> = CHECKED
            .iter()
            .flat_map(|(kind, carried)| std::iter::once(*kind).chain(carried.iter().copied()))
            .chain(CHECKED_ELSEWHERE.iter().map(|(kind, _)| *kind))
            .collect();
        for name in &names {
            assert!(kind_spec(name).is_some(), "`{name}` is not a registry kind");
        }
        let listed = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), listed, "a kind is listed twice");
        assert_eq!(listed, KINDS.len(), "every registry kind is listed");
    }
}
