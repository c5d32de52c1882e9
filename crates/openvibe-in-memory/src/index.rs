//! The indexed table behind every in-memory store.
//!
//! One [`Table`] per tenant holds records in a slab and keeps secondary
//! indexes: by agent, entity, domain and tag (hash maps of slot sets), by
//! search term (an ordered map, so prefixes are range scans), and one ordered
//! index in result order. A query either
//!
//! - takes the smallest candidate set among its equality filters and checks
//!   every filter (and the caller's read rule) on each candidate, then sorts
//!   the matches and keeps `limit`; or
//! - walks the ordered index and stops after `limit` matches (used when no
//!   filter is selective, i.e. when `candidates² > limit × records`).
//!
//! Either way the caller's clearance is checked *during* the scan, so `limit`
//! readable records are found whenever that many exist.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Classification, InsightStatus, NamespaceScope, RecordFilter as Filter,
    RecordMeta, StoreError, Sweep, read_allowed, record_terms, text_terms,
};

use crate::rows::Interner;

/// Where a record stands against a query's keyset position
/// ([`RecordFilter::after`](openvibe_protocols::RecordFilter::after)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyset {
    /// At or before it in the result order: not on this page.
    Before,
    /// As far as confidence and time go, at it: its id decides.
    Tie,
    /// After it (or no position was given).
    After,
}

/// Where `hot` stands against `f`'s position: results are ordered by
/// confidence (when the position has one) descending, then time
/// descending, then id ascending.
fn keyset(hot: &Hot, f: &Filter) -> Keyset {
    let Some((time, _)) = &f.after else {
        return Keyset::After;
    };
    let by_confidence = f
        .after_confidence
        .map_or(Ordering::Equal, |c| Score(c).cmp(&Score(hot.confidence)));
    match by_confidence.then_with(|| time.cmp(&hot.time)) {
        Ordering::Less => Keyset::Before,
        Ordering::Equal => Keyset::Tie,
        Ordering::Greater => Keyset::After,
    }
}

/// Position of a record in a table's slab.
pub(crate) type Slot = u32;

/// An `f64` with a total order, for sort keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(pub f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Sort key of facts and insights: confidence desc, created desc, id asc.
pub type ConfidenceOrder = (Reverse<Score>, Reverse<DateTime<Utc>>, String);

/// What the table needs to know about a record type.
pub trait Indexed: Clone + serde::Serialize + Send + Sync + 'static {
    /// Record kind for errors (`fact`, `episode`, `insight`).
    const KIND: &'static str;
    /// The result order (ascending = first returned), ending with the id.
    type Order: Ord + Clone + Send + Sync;

    fn id(&self) -> &str;
    fn set_id(&mut self, id: String);
    fn meta(&self) -> &RecordMeta;
    fn meta_mut(&mut self) -> &mut RecordMeta;
    fn entity(&self) -> &str;
    fn domain(&self) -> &str;
    fn tags(&self) -> &[String];
    fn agent_id(&self) -> Option<&str>;
    fn search_text(&self) -> Cow<'_, str>;
    /// The record's place in the table's order. It must order as
    /// (confidence descending, [`time`](Indexed::time) descending) first:
    /// candidates are ranked on those columns and only ties read the key.
    fn order_key(&self) -> Self::Order;
    fn confidence(&self) -> f64;
    /// The time `since` filters on.
    fn time(&self) -> DateTime<Utc>;
    /// What the walk order is sorted by first (lets a walk of the ordered
    /// index stop early on `min_confidence` or `since`).
    const WALK: WalkBy;
    /// Reject malformed input.
    fn validate(&self) -> Result<(), StoreError>;
    /// Recompute derived fields (content hash) and reset store-maintained
    /// statistics (a new record has never been accessed).
    fn prepare_new(&mut self);
    /// Keep store-maintained statistics of the record being replaced.
    fn keep_from(&mut self, old: &Self);
    /// Count one access.
    fn record_access(&mut self, now: DateTime<Utc>);
    /// The insight status, for records that have one.
    fn status(&self) -> Option<InsightStatus> {
        None
    }
    /// The episode a raw call was made for, for records that have one.
    fn episode_id(&self) -> Option<&str> {
        None
    }
    /// Visit the low-cardinality string fields (tenant, namespace, owner,
    /// source, entity, domain, agent, ...), always in the same order. The
    /// table keeps them once, interned, and restores them on the way out, so
    /// reading a result touches few scattered heap strings.
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String));
    /// The record's own larger heap fields (not the shared ones), which a
    /// copy of it reads (see [`Table::materialize_all`]).
    fn heap_fields(&self, visit: &mut dyn FnMut(&[u8])) {
        visit(self.id().as_bytes());
        for tag in self.tags() {
            visit(tag.as_bytes());
        }
    }
}

/// The leading key of a record type's walk order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkBy {
    /// Confidence, highest first.
    Confidence,
    /// Time, newest first.
    Time,
}

/// What queries check on every candidate, kept dense and apart from the
/// record so that checking a candidate costs one cache line, not a walk
/// over its heap strings.
#[derive(Debug, Clone, Copy)]
struct Hot {
    live: bool,
    classification: Classification,
    agent: u32,
    entity: u32,
    domain: u32,
    owner: u32,
    project: u32,
    namespace: u32,
    confidence: f64,
    time: DateTime<Utc>,
    expires_at: Option<DateTime<Utc>>,
}

/// The leading keys of every record kind's order, from its hot columns
/// (see [`Indexed::order_key`]).
type Lead = (Reverse<Score>, Reverse<DateTime<Utc>>);

fn lead(hot: &Hot) -> Lead {
    (Reverse(Score(hot.confidence)), Reverse(hot.time))
}

/// A caller and a filter resolved against one table's interned strings.
struct Reader<'c> {
    ctx: &'c CallerContext,
    owner: Option<u32>,
    /// The caller's project id (0: none; `u32::MAX`: a project no record has).
    project: u32,
    /// The namespaces in the read's scope (`None`: all), as interned ids
    /// (names no record has are left out).
    namespaces: Option<Vec<u32>>,
    agent: Option<u32>,
    entity: Option<u32>,
    domain: Option<u32>,
    /// Clearance level per domain id, computed once per domain per query.
    levels: Vec<(u32, Option<Classification>)>,
    /// The read's instant: records expired by then are invisible.
    now: DateTime<Utc>,
}

impl Reader<'_> {
    /// `CallerContext::can_read` on the hot column (the tenant is the table's).
    ///
    /// The rule is the contract's [`read_allowed`]; only its inputs are
    /// computed here, on interned ids. The clearance level of a domain is
    /// looked up only when ownership and public visibility did not decide.
    fn can_read(&mut self, hot: &Hot, domains: &HashMap<u32, String>) -> bool {
        if hot.expires_at.is_some_and(|at| at <= self.now) {
            return false;
        }
        let namespace_readable = self
            .namespaces
            .as_ref()
            .is_none_or(|ids| ids.contains(&hot.namespace));
        let project_visible = hot.project == 0 || hot.project == self.project;
        let owned = self.owner == Some(hot.owner);
        if !namespace_readable
            || !project_visible
            || owned
            || hot.classification == Classification::Public
        {
            return read_allowed(
                namespace_readable,
                project_visible,
                owned,
                hot.classification,
                None,
            );
        }
        let level = match self.levels.iter().find(|(d, _)| *d == hot.domain) {
            Some((_, level)) => *level,
            None => {
                let name = domains.get(&hot.domain).map_or("", String::as_str);
                let level = self.ctx.clearance().level_for(name);
                if self.levels.len() < 32 {
                    self.levels.push((hot.domain, level));
                }
                level
            }
        };
        read_allowed(true, true, owned, hot.classification, level)
    }
}

struct Row<R: Indexed> {
    /// The record with its shared fields taken out (see `Indexed::shared_fields`).
    rec: R,
    /// Interned ids of the shared fields, in visiting order.
    shared: Vec<u32>,
    /// Sorted, deduplicated search terms of the record.
    terms: Vec<String>,
    order: R::Order,
}

/// How well `terms` (sorted) match the query term `term`:
/// 2 = a whole word, 1 = a word prefix, 0 = no match.
fn term_match(terms: &[String], term: &str) -> u32 {
    let i = terms.partition_point(|t| t.as_str() < term);
    match terms.get(i) {
        Some(t) if t == term => 2,
        Some(t) if t.starts_with(term) => 1,
        _ => 0,
    }
}

type Postings = HashMap<String, BTreeSet<Slot>>;

/// Key of the compound (entity, domain) index; `None` unless both are set.
fn pair_key(entity: &str, domain: &str) -> Option<String> {
    if entity.is_empty() || domain.is_empty() {
        return None;
    }
    let mut key = String::with_capacity(entity.len() + domain.len() + 1);
    key.push_str(entity);
    key.push('\u{1f}');
    key.push_str(domain);
    Some(key)
}

/// Empty keys are posted too: an exact filter on "no entity" (general
/// knowledge) needs its own postings.
fn post(index: &mut Postings, key: &str, slot: Slot) {
    match index.get_mut(key) {
        Some(set) => {
            set.insert(slot);
        }
        None => {
            index.insert(key.to_owned(), BTreeSet::from([slot]));
        }
    }
}

fn unpost(index: &mut Postings, key: &str, slot: Slot) {
    if let Some(set) = index.get_mut(key) {
        set.remove(&slot);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

/// Where a query's candidates come from.
enum Source<'t> {
    One(&'t BTreeSet<Slot>),
    Union(Vec<&'t BTreeSet<Slot>>),
}

/// The records of one tenant, with their indexes.
pub(crate) struct Table<R: Indexed> {
    rows: Vec<Option<Row<R>>>,
    free: Vec<Slot>,
    ids: HashMap<String, Slot>,
    by_agent: Postings,
    by_entity: Postings,
    by_domain: Postings,
    /// Compound (entity, domain) index: the common scope of a prompt.
    by_entity_domain: Postings,
    by_tag: Postings,
    by_term: BTreeMap<String, BTreeSet<Slot>>,
    ordered: BTreeSet<(R::Order, Slot)>,
    strings: Interner,
    /// Domain names by interned id (for clearance checks).
    domain_names: HashMap<u32, String>,
    hot: Vec<Hot>,
}

impl<R: Indexed> Default for Table<R> {
    fn default() -> Self {
        Self {
            rows: Vec::new(),
            free: Vec::new(),
            ids: HashMap::new(),
            by_agent: HashMap::new(),
            by_entity: HashMap::new(),
            by_domain: HashMap::new(),
            by_entity_domain: HashMap::new(),
            by_tag: HashMap::new(),
            by_term: BTreeMap::new(),
            ordered: BTreeSet::new(),
            strings: Interner::default(),
            domain_names: HashMap::new(),
            hot: Vec::new(),
        }
    }
}

impl<R: Indexed> Table<R> {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Every live record.
    pub fn all(&self) -> Vec<R> {
        (0..self.rows.len())
            .filter_map(|i| Slot::try_from(i).ok())
            .filter_map(|slot| self.materialize(slot))
            .collect()
    }

    /// Up to `limit` records for which `pick` holds, judged on the stored
    /// record (its shared fields blank: id and hashes are kept), then
    /// materialized.
    pub fn pick(&self, mut pick: impl FnMut(&R) -> bool, limit: usize) -> Vec<R> {
        let mut out = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            if out.len() >= limit {
                break;
            }
            if let Some(row) = row
                && pick(&row.rec)
                && let Ok(slot) = Slot::try_from(i)
            {
                out.extend(self.materialize(slot));
            }
        }
        out
    }

    /// How many records `pick` holds for (judged as in [`Table::pick`]).
    pub fn count(&self, mut pick: impl FnMut(&R) -> bool) -> u64 {
        self.rows
            .iter()
            .flatten()
            .filter(|row| pick(&row.rec))
            .count() as u64
    }

    /// Live records per namespace (expired ones are not counted).
    pub fn namespace_counts(&self) -> BTreeMap<String, u64> {
        let now = Utc::now();
        let mut counts = BTreeMap::new();
        for hot in self
            .hot
            .iter()
            .filter(|h| h.live && h.expires_at.is_none_or(|at| at > now))
        {
            *counts
                .entry(self.strings.name(hot.namespace).to_owned())
                .or_insert(0) += 1;
        }
        counts
    }

    /// At most `limit` live slots whose record lives in `namespace`.
    pub fn slots_in_namespace(&self, namespace: &str, limit: usize) -> Vec<Slot> {
        let Some(id) = self.strings.get(namespace) else {
            return Vec::new();
        };
        (0..self.hot.len())
            .filter(|&i| self.hot[i].live && self.hot[i].namespace == id)
            .take(limit)
            .filter_map(|i| Slot::try_from(i).ok())
            .collect()
    }

    /// At most `limit` live slots whose record has expired at `now`, lives
    /// in a namespace of `scope` and is in a project `ctx` sees.
    pub fn expired_slots(
        &self,
        ctx: &CallerContext,
        now: DateTime<Utc>,
        scope: &NamespaceScope,
        limit: usize,
    ) -> Vec<Slot> {
        (0..self.hot.len())
            .filter(|&i| {
                let hot = &self.hot[i];
                let project = Some(self.strings.name(hot.project)).filter(|p| !p.is_empty());
                hot.live
                    && hot.expires_at.is_some_and(|at| at <= now)
                    && scope.contains(self.strings.name(hot.namespace))
                    && ctx.sees_project(project)
            })
            .take(limit)
            .filter_map(|i| Slot::try_from(i).ok())
            .collect()
    }

    /// At most `limit` live slots whose record `sweep` takes for `ctx`
    /// (or `also` takes): the expired ones through the hot columns, a
    /// subject's by reading each record.
    pub fn swept_slots(
        &self,
        ctx: &CallerContext,
        sweep: &Sweep,
        also: &dyn Fn(&R) -> bool,
        limit: usize,
    ) -> Vec<Slot> {
        if let Sweep::Expired { scope, now } = sweep {
            return self.expired_slots(ctx, *now, scope, limit);
        }
        (0..self.hot.len())
            .filter(|&i| self.hot[i].live)
            .filter_map(|i| Slot::try_from(i).ok())
            .filter(|&slot| {
                self.materialize(slot)
                    .is_some_and(|rec| sweep.takes_record(ctx, rec.meta(), &rec) || also(&rec))
            })
            .take(limit)
            .collect()
    }

    pub fn slot(&self, id: &str) -> Option<Slot> {
        self.ids.get(id).copied()
    }

    fn row(&self, slot: Slot) -> Option<&Row<R>> {
        self.rows.get(slot as usize).and_then(Option::as_ref)
    }

    /// A copy of the record in `slot`, with its shared fields restored.
    pub fn materialize(&self, slot: Slot) -> Option<R> {
        let row = self.row(slot)?;
        let mut rec = row.rec.clone();
        let mut ids = row.shared.iter();
        rec.shared_fields(&mut |field| {
            if let Some(id) = ids.next() {
                *field = self.strings.name(*id).to_owned();
            }
        });
        Some(rec)
    }

    /// Copies of the records in `slots`, in order. One byte of each
    /// record's own heap fields ([`Indexed::heap_fields`]) is read first,
    /// for all of them, so that their cache misses overlap instead of
    /// following one another as the copies would make them (a quarter of
    /// a ten-fact query over a working set larger than the cache).
    pub fn materialize_all(&self, slots: &[Slot]) -> Vec<R> {
        let mut probe = 0u8;
        for row in slots.iter().filter_map(|s| self.row(*s)) {
            row.rec
                .heap_fields(&mut |bytes| probe ^= bytes.first().copied().unwrap_or(0));
        }
        std::hint::black_box(probe);
        slots.iter().filter_map(|s| self.materialize(*s)).collect()
    }

    /// Whether `ctx` may read the record in `slot`.
    pub fn readable(&self, ctx: &CallerContext, slot: Slot) -> bool {
        self.materialize(slot)
            .is_some_and(|r| ctx.can_read(r.meta(), r.domain()))
    }

    /// The stored record in `slot`, mutably, for access statistics only:
    /// its shared fields are empty and indexed fields must not change.
    pub fn rec_mut(&mut self, slot: Slot) -> Option<&mut R> {
        self.rows
            .get_mut(slot as usize)
            .and_then(Option::as_mut)
            .map(|r| &mut r.rec)
    }

    /// Insert a record whose id is not in the table yet.
    pub fn insert(&mut self, rec: R) -> Result<Slot, StoreError> {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => Slot::try_from(self.rows.len())
                .map_err(|_| StoreError::backend(format!("in-memory {} table is full", R::KIND)))?,
        };
        self.ids.insert(rec.id().to_owned(), slot);
        let row = self.index(slot, rec);
        match self.rows.get_mut(slot as usize) {
            Some(place) => *place = Some(row),
            None => self.rows.push(Some(row)),
        }
        Ok(slot)
    }

    /// Replace the record in `slot` (same id).
    pub fn replace(&mut self, slot: Slot, rec: R) {
        self.unindex(slot);
        let row = self.index(slot, rec);
        if let Some(place) = self.rows.get_mut(slot as usize) {
            *place = Some(row);
        }
    }

    /// Remove the record in `slot`.
    pub fn remove(&mut self, slot: Slot) -> Option<R> {
        let rec = self.materialize(slot)?;
        let row = self.unindex(slot)?;
        self.ids.remove(row.rec.id());
        self.free.push(slot);
        Some(rec)
    }

    fn index(&mut self, slot: Slot, mut rec: R) -> Row<R> {
        if let Some(agent) = rec.agent_id() {
            post(&mut self.by_agent, agent, slot);
        }
        post(&mut self.by_entity, rec.entity(), slot);
        post(&mut self.by_domain, rec.domain(), slot);
        if let Some(key) = pair_key(rec.entity(), rec.domain()) {
            post(&mut self.by_entity_domain, &key, slot);
        }
        for tag in rec.tags() {
            post(&mut self.by_tag, tag, slot);
        }
        let mut terms = record_terms(&rec.search_text());
        terms.sort_unstable();
        for term in &terms {
            match self.by_term.get_mut(term) {
                Some(set) => {
                    set.insert(slot);
                }
                None => {
                    self.by_term.insert(term.clone(), BTreeSet::from([slot]));
                }
            }
        }
        let order = rec.order_key();
        self.ordered.insert((order.clone(), slot));
        let meta = rec.meta();
        let domain = self.strings.intern(rec.domain());
        self.domain_names
            .entry(domain)
            .or_insert_with(|| rec.domain().to_owned());
        let hot = Hot {
            live: true,
            classification: meta.classification,
            agent: self.strings.intern(rec.agent_id().unwrap_or("")),
            entity: self.strings.intern(rec.entity()),
            domain,
            owner: self.strings.intern(&meta.owner),
            project: self
                .strings
                .intern(meta.project_id.as_deref().unwrap_or("")),
            namespace: self.strings.intern(&meta.namespace),
            confidence: rec.confidence(),
            time: rec.time(),
            expires_at: meta.expires_at,
        };
        match self.hot.get_mut(slot as usize) {
            Some(place) => *place = hot,
            None => self.hot.push(hot),
        }
        let mut shared = Vec::with_capacity(8);
        let strings = &mut self.strings;
        rec.shared_fields(&mut |field| {
            let value = std::mem::take(field);
            shared.push(strings.intern(&value));
        });
        Row {
            rec,
            shared,
            terms,
            order,
        }
    }

    fn unindex(&mut self, slot: Slot) -> Option<Row<R>> {
        let row = self.rows.get_mut(slot as usize)?.take()?;
        let hot = self.hot.get_mut(slot as usize)?;
        hot.live = false;
        let hot = *hot;
        // The stored record's shared fields are empty: use the hot column.
        let agent = self.strings.name(hot.agent).to_owned();
        let entity = self.strings.name(hot.entity).to_owned();
        let domain = self.strings.name(hot.domain).to_owned();
        unpost(&mut self.by_agent, &agent, slot);
        unpost(&mut self.by_entity, &entity, slot);
        unpost(&mut self.by_domain, &domain, slot);
        if let Some(key) = pair_key(&entity, &domain) {
            unpost(&mut self.by_entity_domain, &key, slot);
        }
        let rec = &row.rec;
        for tag in rec.tags() {
            unpost(&mut self.by_tag, tag, slot);
        }
        for term in &row.terms {
            if let Some(set) = self.by_term.get_mut(term) {
                set.remove(&slot);
                if set.is_empty() {
                    self.by_term.remove(term);
                }
            }
        }
        self.ordered.remove(&(row.order.clone(), slot));
        Some(row)
    }

    /// Whether the record in `slot` passes every filter and the caller's
    /// read rule; returns its relevance (sum of term match qualities) when it does.
    fn matches(&self, reader: &mut Reader<'_>, f: &Filter, slot: Slot) -> Option<u32> {
        let hot = self.hot.get(slot as usize)?;
        if !hot.live
            || reader.agent.is_some_and(|a| hot.agent != a)
            || reader.entity.is_some_and(|e| hot.entity != e)
            || reader.domain.is_some_and(|d| hot.domain != d)
            || hot.confidence < f.min_confidence
            || f.since.is_some_and(|s| hot.time < s)
            || !reader.can_read(hot, &self.domain_names)
        {
            return None;
        }
        let position = keyset(hot, f);
        if position == Keyset::Before {
            return None;
        }
        if f.tags.is_empty()
            && f.terms.is_empty()
            && f.status.is_none()
            && f.episode_ids.is_empty()
            && position == Keyset::After
        {
            return Some(0);
        }
        let row = self.row(slot)?;
        // Keyset paging: a record tied with the position comes after it
        // when its id is greater.
        if let Some((_, id)) = &f.after
            && position == Keyset::Tie
            && row.rec.id() <= id.as_str()
        {
            return None;
        }
        if !f.episode_ids.is_empty()
            && !row
                .rec
                .episode_id()
                .is_some_and(|e| f.episode_ids.iter().any(|x| x == e))
        {
            return None;
        }
        if !f.tags.is_empty() && !row.rec.tags().iter().any(|t| f.tags.contains(t)) {
            return None;
        }
        let mut relevance = 0;
        for term in &f.terms {
            match term_match(&row.terms, term) {
                0 => return None,
                q => relevance += q,
            }
        }
        if f.status.is_some_and(|s| row.rec.status() != Some(s)) {
            return None;
        }
        Some(relevance)
    }

    /// Whether no record after `hot` in walk order can pass `f`.
    fn ends_walk(hot: &Hot, f: &Filter) -> bool {
        match R::WALK {
            WalkBy::Confidence => hot.confidence < f.min_confidence,
            WalkBy::Time => f.since.is_some_and(|s| hot.time < s),
        }
    }

    /// Resolve the caller and the filter's strings; `None` when a filter
    /// names a value no record has.
    fn reader<'c>(&self, ctx: &'c CallerContext, f: &Filter) -> Option<Reader<'c>> {
        let resolve = |value: Option<&str>| match value {
            None => Some(None),
            Some(v) => self.strings.get(v).map(Some),
        };
        let namespaces = match ctx.search_scope(&f.namespaces) {
            NamespaceScope::All => None,
            NamespaceScope::Only(names) => {
                let ids: Vec<u32> = names.iter().filter_map(|n| self.strings.get(n)).collect();
                if ids.is_empty() {
                    return None; // no record lives in any namespace of the scope
                }
                Some(ids)
            }
        };
        Some(Reader {
            ctx,
            namespaces,
            owner: self.strings.get(&ctx.owner_key()),
            project: match ctx.project_id() {
                None => 0,
                Some(p) => self.strings.get(p).unwrap_or(u32::MAX),
            },
            agent: resolve(f.agent_id.as_deref())?,
            entity: resolve(f.entity.as_deref())?,
            domain: resolve(f.domain.as_deref())?,
            levels: Vec::new(),
            now: Utc::now(),
        })
    }

    /// The slots of the records matching `f`, in result order, at most `f.limit`.
    pub fn query(&self, ctx: &CallerContext, f: &Filter) -> Vec<Slot> {
        self.query_counted(ctx, f).0
    }

    /// [`Table::query`], also returning how many records were examined.
    pub fn query_counted(&self, ctx: &CallerContext, f: &Filter) -> (Vec<Slot>, usize) {
        if f.limit == 0 || self.ids.is_empty() {
            return (Vec::new(), 0);
        }
        let Some(best) = self.smallest_source(f) else {
            return (Vec::new(), 0); // an equality filter has no postings at all
        };
        let Some(mut reader) = self.reader(ctx, f) else {
            return (Vec::new(), 0);
        };
        let reader = &mut reader;
        let walk = match &best {
            None => !f.relevance,
            Some((n, _)) => {
                !f.relevance && (*n as u128).pow(2) > (f.limit as u128) * (self.len() as u128)
            }
        };
        match best {
            Some((_, source)) if !walk => self.scan_candidates(reader, f, source),
            // A walk is a bet that matches are spread over the order; when
            // they cluster at its end, give up after as many steps as the
            // candidate scan would take and scan instead (at most 2n work).
            Some((n, source)) => match self.walk(reader, f, Some(n)) {
                (Some(found), examined) => (found, examined),
                (None, walked) => {
                    let (found, examined) = self.scan_candidates(reader, f, source);
                    (found, walked + examined)
                }
            },
            None => match self.walk(reader, f, None) {
                (Some(found), examined) => (found, examined),
                (None, examined) => (Vec::new(), examined),
            },
        }
    }

    /// The smallest candidate source among the filters: `Some(None)` when
    /// no filter has an index, `None` when some filter matches nothing.
    #[allow(clippy::option_option)]
    fn smallest_source(&self, f: &Filter) -> Option<Option<(usize, Source<'_>)>> {
        fn consider<'t>(best: &mut Option<(usize, Source<'t>)>, n: usize, source: Source<'t>) {
            if best.as_ref().is_none_or(|(m, _)| n < *m) {
                *best = Some((n, source));
            }
        }
        let mut best: Option<(usize, Source<'_>)> = None;
        // The compound index is never larger than either of its parts.
        let pair = match (f.entity.as_deref(), f.domain.as_deref()) {
            (Some(entity), Some(domain)) => pair_key(entity, domain),
            _ => None,
        };
        let singles = if pair.is_some() {
            [
                (f.agent_id.as_deref(), &self.by_agent),
                (None, &self.by_entity),
                (None, &self.by_domain),
            ]
        } else {
            [
                (f.agent_id.as_deref(), &self.by_agent),
                (f.entity.as_deref(), &self.by_entity),
                (f.domain.as_deref(), &self.by_domain),
            ]
        };
        for (key, index) in singles {
            if let Some(key) = key {
                let set = index.get(key)?;
                consider(&mut best, set.len(), Source::One(set));
            }
        }
        if let Some(key) = pair {
            let set = self.by_entity_domain.get(&key)?;
            consider(&mut best, set.len(), Source::One(set));
        }
        if !f.tags.is_empty() {
            let sets: Vec<&BTreeSet<Slot>> =
                f.tags.iter().filter_map(|t| self.by_tag.get(t)).collect();
            if sets.is_empty() {
                return None;
            }
            let n = sets.iter().map(|s| s.len()).sum();
            consider(&mut best, n, Source::Union(sets));
        }
        for term in &f.terms {
            let sets: Vec<&BTreeSet<Slot>> = self
                .by_term
                .range::<str, _>((
                    std::ops::Bound::Included(term.as_str()),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(k, _)| k.starts_with(term.as_str()))
                .map(|(_, s)| s)
                .collect();
            if sets.is_empty() {
                return None;
            }
            let n = sets.iter().map(|s| s.len()).sum();
            if sets.len() == 1 {
                consider(&mut best, n, Source::One(sets[0]));
            } else {
                consider(&mut best, n, Source::Union(sets));
            }
        }
        Some(best)
    }

    /// Walk the ordered index until `f.limit` matches; `None` when `budget`
    /// rows were examined first.
    fn walk(
        &self,
        reader: &mut Reader<'_>,
        f: &Filter,
        budget: Option<usize>,
    ) -> (Option<Vec<Slot>>, usize) {
        let mut out = Vec::with_capacity(f.limit.min(64));
        let mut examined = 0;
        for (_, slot) in &self.ordered {
            if budget.is_some_and(|b| examined >= b) {
                return (None, examined);
            }
            examined += 1;
            let Some(hot) = self.hot.get(*slot as usize) else {
                continue;
            };
            if Self::ends_walk(hot, f) {
                break;
            }
            if self.matches(reader, f, *slot).is_some() {
                out.push(*slot);
                if out.len() >= f.limit {
                    break;
                }
            }
        }
        (Some(out), examined)
    }

    fn scan_candidates(
        &self,
        reader: &mut Reader<'_>,
        f: &Filter,
        source: Source<'_>,
    ) -> (Vec<Slot>, usize) {
        let mut hits: Vec<(Reverse<u32>, Slot)> = Vec::new();
        let mut examined = 0;
        let mut check = |slot: Slot| {
            examined += 1;
            if let Some(relevance) = self.matches(reader, f, slot) {
                let relevance = if f.relevance { relevance } else { 0 };
                hits.push((Reverse(relevance), slot));
            }
        };
        match source {
            Source::One(set) => set.iter().for_each(|s| check(*s)),
            Source::Union(sets) => {
                let mut slots: Vec<Slot> = sets.iter().flat_map(|s| s.iter().copied()).collect();
                slots.sort_unstable();
                slots.dedup();
                slots.into_iter().for_each(check);
            }
        }
        // The matches are ranked on the hot columns (relevance, confidence,
        // time); only ties there read the rows' full order (the id).
        let mut ranked: Vec<(Reverse<u32>, Lead, Slot)> = hits
            .into_iter()
            .filter_map(|(relevance, slot)| {
                let hot = self.hot.get(slot as usize)?;
                Some((relevance, lead(hot), slot))
            })
            .collect();
        let order = |a: &(Reverse<u32>, Lead, Slot), b: &(Reverse<u32>, Lead, Slot)| {
            (a.0, a.1).cmp(&(b.0, b.1)).then_with(|| {
                self.row(a.2)
                    .map(|r| &r.order)
                    .cmp(&self.row(b.2).map(|r| &r.order))
            })
        };
        if ranked.len() > f.limit {
            ranked.select_nth_unstable_by(f.limit - 1, order);
            ranked.truncate(f.limit);
        }
        ranked.sort_unstable_by(order);
        (
            ranked.into_iter().map(|(_, _, slot)| slot).collect(),
            examined,
        )
    }

    /// The record most similar to `content` (see `InsightStore::find_similar`)
    /// among those passing `accept` and readable by the caller.
    pub fn most_similar(
        &self,
        ctx: &CallerContext,
        content: &str,
        accept: impl Fn(&R) -> bool,
    ) -> Option<R> {
        let words = text_terms(content);
        if words.is_empty() {
            return None;
        }
        let threshold = words.len().min(3);
        let mut overlap: HashMap<Slot, usize> = HashMap::new();
        for word in &words {
            if let Some(set) = self.by_term.get(word) {
                for slot in set {
                    *overlap.entry(*slot).or_insert(0) += 1;
                }
            }
        }
        let mut best: Option<(usize, Score, R)> = None;
        for (slot, n) in overlap {
            if n < threshold {
                continue;
            }
            let Some(rec) = self.materialize(slot) else {
                continue;
            };
            if !accept(&rec) || !ctx.can_read(rec.meta(), rec.domain()) {
                continue;
            }
            let score = Score(rec.confidence());
            let better = match &best {
                None => true,
                Some((bn, bc, brec)) => {
                    (n, score)
                        .cmp(&(*bn, *bc))
                        .then_with(|| brec.id().cmp(rec.id()))
                        == Ordering::Greater
                }
            };
            if better {
                best = Some((n, score, rec));
            }
        }
        best.map(|(_, _, rec)| rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::Fact;

    fn text_filter(limit: usize, text: &str) -> Filter {
        Filter {
            terms: text_terms(text),
            ..Filter::new(limit)
        }
    }

    #[test]
    fn term_matching_is_word_or_prefix() {
        let terms: Vec<String> = ["conversion", "sponsorship", "vp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(term_match(&terms, "vp"), 2);
        assert_eq!(term_match(&terms, "sponsor"), 1);
        assert_eq!(term_match(&terms, "ponsor"), 0);
        assert_eq!(term_match(&terms, "zzz"), 0);
        assert_eq!(term_match(&[], "a"), 0);
    }

    fn big_table(n: u32) -> Table<Fact> {
        let mut table = Table::default();
        for i in 0..n {
            let mut fact = Fact::new(
                format!("f{i:06}"),
                format!("note {i} about entity{}", i % 1000),
            )
            .entity(format!("e{}", i % 1000))
            .domain(format!("d{}", i % 20))
            .tags([format!("t{}", i % 50)])
            .confidence(f64::from(i % 100) / 100.0)
            .classification(Classification::ALL[(i % 4) as usize]);
            fact.meta.owner = "service:system".into();
            table.insert(fact).unwrap();
        }
        table
    }

    #[test]
    fn filtered_queries_over_100k_records_do_not_scan_them_all() {
        let n = 100_000;
        let table = big_table(n);
        assert_eq!(table.len(), n as usize);
        let ctx =
            CallerContext::agent("cro").with_domain_clearance("d7", Classification::Confidential);
        let tags = vec!["t3".to_owned(), "t4".to_owned()];
        let cases: Vec<(&str, Filter)> = vec![
            (
                "entity+domain",
                Filter {
                    entity: Some("e8".into()),
                    domain: Some("d8".into()),
                    ..Filter::new(10)
                },
            ),
            (
                "entity",
                Filter {
                    entity: Some("e124".into()),
                    ..Filter::new(10)
                },
            ),
            ("text", text_filter(10, "entity42")),
            (
                "tags",
                Filter {
                    tags: tags.clone(),
                    domain: Some("d4".into()),
                    ..Filter::new(10)
                },
            ),
            ("no filter", Filter::new(10)),
            (
                "min confidence",
                Filter {
                    min_confidence: 0.95,
                    ..Filter::new(10)
                },
            ),
        ];
        for (name, filter) in &cases {
            let (found, examined) = table.query_counted(&ctx, filter);
            assert!(!found.is_empty(), "{name}");
            // At most twice the smallest candidate set (a walk that gave up,
            // then a scan), or a walk of the order past unreadable records.
            assert!(
                examined <= (n as usize) / 10,
                "{name}: examined {examined} of {n}"
            );
            for slot in &found {
                let fact = table.materialize(*slot).unwrap();
                assert!(
                    ctx.can_read(&fact.meta, &fact.domain),
                    "{name}: unreadable result"
                );
            }
        }
        // Results equal a brute-force evaluation, in order.
        let filter = Filter {
            domain: Some("d7".into()),
            ..Filter::new(25)
        };
        let (found, _) = table.query_counted(&ctx, &filter);
        let mut brute: Vec<Fact> = (0..n)
            .filter_map(|s| table.materialize(s))
            .filter(|f| f.domain == "d7" && ctx.can_read(&f.meta, &f.domain))
            .collect();
        brute.sort_by_key(|f| f.order_key());
        let brute: Vec<&str> = brute.iter().take(25).map(|f| f.id.as_str()).collect();
        let got: Vec<String> = found
            .iter()
            .map(|s| table.materialize(*s).unwrap().id)
            .collect();
        assert_eq!(got, brute);
        // A filter matching nothing examines nothing.
        let (none, examined) = table.query_counted(
            &ctx,
            &Filter {
                entity: Some("nobody".into()),
                ..Filter::new(10)
            },
        );
        assert!(none.is_empty());
        assert_eq!(examined, 0);
    }

    #[test]
    fn removal_and_replacement_keep_indexes_consistent() {
        let mut table = big_table(100);
        let ctx = CallerContext::system();
        let slot = table.slot("f000007").unwrap();
        let removed = table.remove(slot).unwrap();
        assert_eq!(removed.id, "f000007");
        assert!(table.slot("f000007").is_none());
        let by_entity = Filter {
            entity: Some("e7".into()),
            ..Filter::new(10)
        };
        assert!(table.query(&ctx, &by_entity).is_empty());
        // The slot is reused.
        let again = table
            .insert(Fact::new("new", "fresh text").entity("e7"))
            .unwrap();
        assert_eq!(again, slot);
        assert_eq!(table.query(&ctx, &by_entity), vec![slot]);
        let s = table.slot("f000008").unwrap();
        table.replace(s, Fact::new("f000008", "replaced words").entity("zz"));
        assert!(
            table
                .query(
                    &ctx,
                    &Filter {
                        entity: Some("e8".into()),
                        ..Filter::new(10)
                    }
                )
                .is_empty()
        );
        assert!(!table.query(&ctx, &text_filter(10, "note 8")).contains(&s));
        assert_eq!(table.query(&ctx, &text_filter(10, "replaced")), vec![s]);
        assert_eq!(table.len(), 100);
    }

    #[test]
    fn scores_order_totally() {
        let mut v = [Score(0.5), Score(1.0), Score(0.1)];
        v.sort();
        assert_eq!(v, [Score(0.1), Score(0.5), Score(1.0)]);
    }
}
