//! The kind registry: every governed store kind once, with what the
//! backends, maintenance (counts, moves, expiry, erasure) and the edges
//! need to know of it. The lists of kinds the contract publishes
//! ([`RECORD_KINDS`](crate::RECORD_KINDS), [`EXPIRING_KINDS`](crate::EXPIRING_KINDS),
//! [`ERASURE_KINDS`](crate::ERASURE_KINDS), [`EMBEDDED_KINDS`](crate::EMBEDDED_KINDS))
//! are derived from it when the crate compiles, so a new kind is one row
//! here and each list picks it up.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    BELIEF_KIND, Belief, BeliefStatus, CallerContext, GOAL_KIND, Goal, Governed, INBOX_KIND,
    InboxEvent, InboxStatus, InsightStatus, MESSAGE_KIND, METRIC_KIND, MetricReport,
    PRIORITIES_KIND, PROPOSAL_KIND, PlanStatus, Priorities, Proposal, ProposalStatus, RecordMeta,
    SPACE_KIND, Space, SpaceMessage, StoreError,
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
pub const KINDS: [KindSpec; 16] = [
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
    KindSpec::new(INBOX_KIND, "inbox_events", 15).with_statuses::<InboxStatus>(),
];

/// The kind named `name`.
pub fn kind_spec(name: &str) -> Option<&'static KindSpec> {
    KINDS.iter().find(|k| k.name == name)
}

/// The table of the kind named `kind`, for constants (a backend's table
/// name is the registry's: `const TABLE: &str = table_of(PROPOSAL_KIND)`).
/// A name not in the registry fails to compile.
// Evaluated in constants: a panic here is a compile error.
#[allow(clippy::panic)]
pub const fn table_of(kind: &str) -> &'static str {
    let mut i = 0;
    while i < KINDS.len() {
        if same(KINDS[i].name.as_bytes(), kind.as_bytes()) {
            return KINDS[i].table;
        }
        i += 1;
    }
    panic!("not a kind of the registry")
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A record of a governed kind kept by id: proposals, goals, priorities,
/// metric reports, beliefs, spaces and their messages. What each backend's
/// governed-table kernel needs of it, so that creating, reading, listing,
/// changing and maintaining one is written once per backend, and a kind
/// states only what differs (its checks, its transitions, its queries).
pub trait KeptRecord: Governed + Serialize + Clone + Send + Sync + 'static {
    /// Its kind: a row of [`KINDS`].
    const KIND: &'static str;

    /// Whether a store chooses an id for a record created without one (a
    /// goal's id is its objective's: it must be given).
    const GENERATED_ID: bool = true;

    /// Its id, unique in its tenant.
    fn record_id(&self) -> &str;

    /// Its id, to set (a store generates one when a create gives none).
    fn id_mut(&mut self) -> &mut String;

    /// Its governance metadata, to change before a write.
    fn meta_mut(&mut self) -> &mut RecordMeta;

    /// Whether `ctx` may read it: the read rule on its metadata and
    /// domain ([`CallerContext::can_read`]), unless the kind says more.
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(self.meta(), self.domain())
    }

    /// Whether `other`, created with this one's id, asks for what this one
    /// holds (an idempotent create answers the stored record when it does).
    fn same_request(&self, other: &Self) -> bool;

    /// The refusal of a create whose id a record asking for something
    /// else holds.
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!("{} `{}` exists", Self::KIND, self.record_id()))
    }

    /// The audit `filters` of the change from `before` to this one (the
    /// transition's name and what it moved), or none for a plain update.
    fn transition_detail(&self, before: &Self) -> Option<Value> {
        let _ = before;
        None
    }

    /// This record as a reader sees it at `now`: itself, except where time
    /// changes what it says (a pending proposal past its deadline reads
    /// expired, [`Proposal::as_of`]). What every backend answers.
    #[must_use]
    fn read_at(self, now: DateTime<Utc>) -> Self {
        let _ = now;
        self
    }

    /// Whether its records expire ([`KindSpec::expires`] of its row).
    fn expires() -> bool {
        kind_spec(Self::KIND).is_some_and(|k| k.expires)
    }
}

/// `Governed` and `KeptRecord` for a kind kept by id: its kind, its domain
/// (`""` for kinds without one), the field its id lives in.
macro_rules! kept {
    ($($record:ty => $kind:expr, domain $domain:tt, id $($id:ident).+ $(, read $read:ident)? $(, generated $generated:literal)?;)*) => {$(
        impl Governed for $record {
            fn meta(&self) -> &RecordMeta {
                &self.meta
            }
            fn domain(&self) -> &str {
                kept!(@domain self $domain)
            }
        }

        impl KeptRecord for $record {
            const KIND: &'static str = $kind;
            $(const GENERATED_ID: bool = $generated;)?
            fn record_id(&self) -> &str {
                &self.$($id).+
            }
            fn id_mut(&mut self) -> &mut String {
                &mut self.$($id).+
            }
            fn meta_mut(&mut self) -> &mut RecordMeta {
                &mut self.meta
            }
            fn same_request(&self, other: &Self) -> bool {
                <$record>::same_request(self, other)
            }
            fn id_taken(&self) -> StoreError {
                <$record>::id_taken(self)
            }
            fn transition_detail(&self, before: &Self) -> Option<Value> {
                <$record>::audit_detail(self, before)
            }
            fn readable_by(&self, ctx: &CallerContext) -> bool {
                <$record>::readable_by(self, ctx)
            }
            $(
                fn read_at(self, now: DateTime<Utc>) -> Self {
                    <$record>::$read(self, now)
                }
            )?
        }
    )*};
    (@domain $self:ident none) => { "" };
    (@domain $self:ident field) => { &$self.domain };
    (@domain $self:ident optional) => { $self.domain.as_deref().unwrap_or("") };
}

kept! {
    Proposal => PROPOSAL_KIND, domain field, id id, read as_of;
    Belief => BELIEF_KIND, domain field, id id;
    Goal => GOAL_KIND, domain none, id objective.id, generated false;
    Priorities => PRIORITIES_KIND, domain none, id id;
    MetricReport => METRIC_KIND, domain none, id id;
    Space => SPACE_KIND, domain field, id id;
    SpaceMessage => MESSAGE_KIND, domain optional, id id;
    InboxEvent => INBOX_KIND, domain field, id id, generated false;
}

/// What each kind kept by id says of itself beyond its fields: written
/// here, one block per kind, so that the `KeptRecord` impls above are one
/// line each.
impl Proposal {
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!(
            "proposal `{}` exists and proposes something else",
            self.id
        ))
    }
    fn audit_detail(&self, before: &Self) -> Option<Value> {
        Some(self.transition_detail(before))
    }
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, &self.domain)
    }
}

impl Belief {
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!(
            "belief `{}` exists and holds something else",
            self.id
        ))
    }
    fn audit_detail(&self, before: &Self) -> Option<Value> {
        Some(self.transition_detail(before))
    }
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, &self.domain)
    }
}

impl Goal {
    /// Putting a goal is an upsert (a new version), never a duplicate.
    fn same_request(&self, other: &Self) -> bool {
        self.objective == other.objective
    }
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!(
            "goal `{}` exists in a namespace this caller may not read",
            self.id()
        ))
    }
    fn audit_detail(&self, before: &Self) -> Option<Value> {
        Some(self.transition_detail(before))
    }
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, "")
    }
}

impl Priorities {
    /// A role's priorities of a day are replaced, never duplicated.
    fn same_request(&self, other: &Self) -> bool {
        self.items == other.items
    }
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!(
            "priorities `{}` exist in a namespace this caller may not read",
            self.id
        ))
    }
    fn audit_detail(&self, _before: &Self) -> Option<Value> {
        None
    }
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, "")
    }
}

impl MetricReport {
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!(
            "metric report `{}` exists and reports something else",
            self.id
        ))
    }
    fn audit_detail(&self, _before: &Self) -> Option<Value> {
        None
    }
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, "")
    }
}

impl Space {
    /// Creating a space twice with one id and title is one space.
    fn same_request(&self, other: &Self) -> bool {
        self.title == other.title
    }
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!("space `{}` exists", self.id))
    }
    fn audit_detail(&self, _before: &Self) -> Option<Value> {
        None
    }
}

impl SpaceMessage {
    /// Posting a message twice with one id is one message.
    fn same_request(&self, other: &Self) -> bool {
        self.body == other.body
    }
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!("message `{}` exists", self.id))
    }
    fn audit_detail(&self, _before: &Self) -> Option<Value> {
        None
    }
    /// A message is governed by its space: a reader of the space reads it.
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, self.domain.as_deref().unwrap_or(""))
    }
}

impl InboxEvent {
    fn id_taken(&self) -> StoreError {
        StoreError::conflict(format!(
            "inbox event `{}` holds another event of role `{}`",
            self.id, self.role_id
        ))
    }
    fn audit_detail(&self, before: &Self) -> Option<Value> {
        Some(self.transition_detail(before))
    }
    fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, &self.domain)
    }
}

/// The audit `filters` of a member change of a space.
pub fn member_change(transition: &str, member: &str) -> Value {
    json!({"transition": transition, "member": member})
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
                "inbox_event",
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
                "inbox_event",
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
                "inbox_event",
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
        const BELIEFS: &str = table_of(BELIEF_KIND);
        assert_eq!(BELIEFS, "beliefs");
    }
}
