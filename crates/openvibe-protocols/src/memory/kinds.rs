//! The kind registry: every governed store kind once, with what the
//! backends, maintenance (counts, moves, expiry, erasure) and the edges
//! need to know of it. The lists of kinds the contract publishes
//! ([`RECORD_KINDS`](crate::RECORD_KINDS), [`EXPIRING_KINDS`](crate::EXPIRING_KINDS),
//! [`ERASURE_KINDS`](crate::ERASURE_KINDS), [`EMBEDDED_KINDS`](crate::EMBEDDED_KINDS))
//! are derived from it when the crate compiles, so a new kind is one row
//! here and each list picks it up.

use super::{
    BELIEF_KIND, BeliefStatus, GOAL_KIND, InsightStatus, MESSAGE_KIND, METRIC_KIND,
    PRIORITIES_KIND, PROPOSAL_KIND, PlanStatus, ProposalStatus, SPACE_KIND,
};
use crate::Vocabulary;

/// One governed store kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindSpec {
    /// Its name: a record's kind in the audit trail, errors and maintenance.
    pub name: &'static str,
    /// Its table on PostgreSQL.
    pub table: &'static str,
    /// Its records live in namespaces (counted and moved by maintenance:
    /// [`RECORD_KINDS`](crate::RECORD_KINDS)). The raw log's calls belong
    /// to their agent's namespace but are not moved.
    pub namespaced: bool,
    /// Its records can expire ([`RecordMeta::expires_at`](crate::RecordMeta::expires_at)):
    /// the cleanup of expired records deletes them.
    pub expires: bool,
    /// Its place in the order an erasure deletes kinds in (what hangs on
    /// a record goes before the record): 0 first.
    pub erasure: u8,
    /// Its place among the kinds a store embeds, when it embeds.
    pub embedded: Option<u8>,
    /// The names of its status (or mode) vocabulary, when it has one.
    pub statuses: &'static [&'static str],
}

impl KindSpec {
    const fn new(name: &'static str, table: &'static str, erasure: u8) -> Self {
        Self {
            name,
            table,
            namespaced: true,
            expires: true,
            erasure,
            embedded: None,
            statuses: &[],
        }
    }

    /// Its records never expire (working memory ends with its plan or
    /// session; a metric report with its stream).
    const fn lasting(mut self) -> Self {
        self.expires = false;
        self
    }

    const fn embedded_at(mut self, at: u8) -> Self {
        self.embedded = Some(at);
        self
    }

    const fn with_statuses<V: Vocabulary>(mut self) -> Self {
        self.statuses = V::NAMES;
        self
    }
}

/// Every governed store kind. The order is the order kinds are listed in
/// ([`RECORD_KINDS`](crate::RECORD_KINDS)); erasure and embedding have
/// orders of their own ([`KindSpec::erasure`], [`KindSpec::embedded`]).
pub const KINDS: [KindSpec; 15] = [
    KindSpec::new("fact", "facts", 1).embedded_at(0),
    KindSpec::new("episode", "episodes", 2).embedded_at(2),
    KindSpec::new("insight", "insights", 3)
        .embedded_at(1)
        .with_statuses::<InsightStatus>(),
    KindSpec::new("session", "sessions", 7).lasting(),
    KindSpec::new("plan", "plans", 6)
        .lasting()
        .with_statuses::<PlanStatus>(),
    KindSpec::new("task_context", "task_contexts", 5).lasting(),
    KindSpec::new("knowledge", "knowledge", 4).embedded_at(3),
    KindSpec {
        // The raw log: an agent's calls, pruned by retention, not moved.
        namespaced: false,
        ..KindSpec::new("raw_call", "raw_calls", 0)
    },
    KindSpec::new(PROPOSAL_KIND, "proposals", 8).with_statuses::<ProposalStatus>(),
    KindSpec::new(GOAL_KIND, "goals", 9),
    KindSpec::new(PRIORITIES_KIND, "goal_priorities", 10),
    // A report is part of its stream's total: it goes with the stream's
    // namespace or an erasure, never alone by age.
    KindSpec::new(METRIC_KIND, "metric_reports", 11).lasting(),
    KindSpec::new(BELIEF_KIND, "beliefs", 12).with_statuses::<BeliefStatus>(),
    KindSpec::new(SPACE_KIND, "spaces", 14),
    KindSpec::new(MESSAGE_KIND, "space_messages", 13),
];

/// The kind named `name`.
pub fn kind_spec(name: &str) -> Option<&'static KindSpec> {
    KINDS.iter().find(|k| k.name == name)
}

/// A property of kinds that selects a list of them.
#[derive(Clone, Copy)]
pub(crate) enum Select {
    /// Namespaced, in the registry's order.
    Namespaced,
    /// Expiring, in the registry's order.
    Expiring,
    /// Every kind, in erasure order.
    Erasure,
    /// Embedded, in embedding order.
    Embedded,
}

impl Select {
    /// Where `k` stands in the list (`None`: not in it).
    const fn rank(self, k: &KindSpec, index: usize) -> Option<usize> {
        match self {
            Self::Namespaced if k.namespaced => Some(index),
            Self::Expiring if k.expires => Some(index),
            Self::Erasure => Some(k.erasure as usize),
            Self::Embedded => match k.embedded {
                Some(at) => Some(at as usize),
                None => None,
            },
            _ => None,
        }
    }
}

/// How many kinds `select` lists.
pub(crate) const fn count(select: Select) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < KINDS.len() {
        if select.rank(&KINDS[i], i).is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of the kinds `select` lists, in its order. `N` must be
/// [`count`]`(select)`, and ranks must be distinct (checked as the crate
/// compiles).
// Evaluated only in constants: a panic here is a compile error, never a
// run-time one.
#[allow(clippy::panic)]
pub(crate) const fn names<const N: usize>(select: Select) -> [&'static str; N] {
    assert!(count(select) == N, "a kind list's length is not its count");
    let mut out = [""; N];
    // Kinds with a rank, smallest first: select the next rank each round.
    let mut filled = 0;
    let mut last: Option<usize> = None;
    while filled < N {
        let mut best: Option<(usize, usize)> = None;
        let mut i = 0;
        while i < KINDS.len() {
            if let Some(rank) = select.rank(&KINDS[i], i) {
                let after = match last {
                    Some(l) => rank > l,
                    None => true,
                };
                let better = match best {
                    Some((b, _)) => rank < b,
                    None => true,
                };
                if after && better {
                    best = Some((rank, i));
                }
            }
            i += 1;
        }
        let Some((rank, i)) = best else {
            panic!("two kinds share a rank in one kind list");
        };
        out[filled] = KINDS[i].name;
        last = Some(rank);
        filled += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EMBEDDED_KINDS, ERASURE_KINDS, EXPIRING_KINDS, RECORD_KINDS};

    #[test]
    fn the_lists_of_kinds_are_the_registry_in_their_orders() {
        assert_eq!(
            RECORD_KINDS,
            [
                "fact",
                "episode",
                "insight",
                "session",
                "plan",
                "task_context",
                "knowledge",
                "proposal",
                "goal",
                "priorities",
                "metric",
                "belief",
                "space",
                "message",
            ]
        );
        assert_eq!(
            EXPIRING_KINDS,
            [
                "fact",
                "episode",
                "insight",
                "knowledge",
                "raw_call",
                "proposal",
                "goal",
                "priorities",
                "belief",
                "space",
                "message",
            ]
        );
        assert_eq!(
            ERASURE_KINDS,
            [
                "raw_call",
                "fact",
                "episode",
                "insight",
                "knowledge",
                "task_context",
                "plan",
                "session",
                "proposal",
                "goal",
                "priorities",
                "metric",
                "belief",
                "message",
                "space",
            ]
        );
        assert_eq!(EMBEDDED_KINDS, ["fact", "insight", "episode", "knowledge"]);
    }

    #[test]
    fn every_kind_has_one_name_and_one_table() {
        let mut names: Vec<_> = KINDS.iter().map(|k| k.name).collect();
        let mut tables: Vec<_> = KINDS.iter().map(|k| k.table).collect();
        names.sort_unstable();
        names.dedup();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(names.len(), KINDS.len());
        assert_eq!(tables.len(), KINDS.len());
        assert_eq!(kind_spec("belief").map(|k| k.table), Some("beliefs"));
        assert_eq!(
            kind_spec("proposal").map(|k| k.statuses),
            Some(ProposalStatus::NAMES)
        );
        assert!(kind_spec("nothing").is_none());
    }
}
