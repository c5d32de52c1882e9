//! The durable event inbox ([`InboxStore`]): events for the roles'
//! cognitive loops, kept until a loop process has worked them, so that
//! any service instance accepts an event and a loop anywhere receives it.
//!
//! An event is **pushed** for a role (once: its id in the role's inbox is
//! [`inbox_event_id`], and the same event pushed again is the one held).
//! A loop process **leases** the oldest events of its roles for a while;
//! it **renews** the lease while it works one and **finishes** it when its
//! stages are done. A process that dies stops renewing: once its lease
//! lapses, another process leases the event and resumes it where the
//! loop's journal says. The status moves
//!
//! ```text
//! pending ──lease──▶ leased ──finish──▶ done | failed
//!                     │  ▲
//!                     └──┘ renew (its holder), take over (another, once lapsed)
//! ```
//!
//! Every transition is audited with its name (`lease`, `renew`,
//! `take_over`, `done`, `failed`). An event is governed like every record:
//! namespace, owner, clearance on its event's domain, expiry.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::{CallerContext, Change, Page, RecordMeta, StoreError};
use crate::{Accepted, DecisionEvent, EventSource, LoopTrace};

/// The kind name of inbox events (audit entries, errors, retention).
pub const INBOX_KIND: &str = "inbox_event";

/// The most inbox events one list returns.
pub const MAX_INBOX_PAGE: usize = 1000;

/// The most events one lease takes.
pub const MAX_LEASE_BATCH: usize = 100;

/// The most roles one lease names.
pub const MAX_LEASE_ROLES: usize = 100;

/// The shortest lease, in milliseconds.
pub const MIN_LEASE_MS: u64 = 100;

/// The longest lease, in milliseconds (an hour: a longer piece of work
/// renews its lease).
pub const MAX_LEASE_MS: u64 = 3_600_000;

crate::vocabulary! {
    /// Where an inbox event stands.
    #[derive(Default)]
    pub enum InboxStatus {
        /// Waiting for a loop process.
        #[default]
        Pending = "pending",
        /// A loop process works it until its lease lapses.
        Leased = "leased",
        /// Its stages ran.
        Done = "done",
        /// Its loop gave up on it (the note says why).
        Failed = "failed",
    }
}

/// The id of `role_id`'s event `event_id` in the inbox: the same in every
/// process, so pushing the event twice holds it once.
pub fn inbox_event_id(role_id: &str, event_id: &str) -> String {
    let hash = super::content_hash(&format!("{role_id}\n{event_id}"));
    let hash = hash.trim_start_matches("fnv1a64:");
    format!("evt_{hash}")
}

/// An event waiting for (or worked by) a role's cognitive loop. Fields
/// marked *store* are set by the store; values given are ignored on push.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InboxEvent {
    /// [`inbox_event_id`] of its role and event (*store*).
    #[serde(default)]
    pub id: String,
    /// Governance metadata: the owner is whoever pushed it.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The role whose loop works it.
    pub role_id: String,
    /// Its event's domain (*store*): clearance applies to it.
    #[serde(default)]
    pub domain: String,
    /// The event.
    pub event: DecisionEvent,
    /// Where it came from: the edge that accepted it says, never its body.
    #[serde(default)]
    pub origin: EventSource,
    /// Where it stands (*store*).
    #[serde(default)]
    pub status: InboxStatus,
    /// The loop process that holds (or last held) it (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Until when its holder holds it (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<DateTime<Utc>>,
    /// How many times it was leased (*store*): more than one means a
    /// process resumed it.
    #[serde(default)]
    pub attempts: u32,
    /// When it was finished (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// What its loop said when it finished: what came of it, or why it
    /// failed (*store*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its path through the loop so far, as its holder last saved it (with
    /// a renewal or the finish; *store*): the loop's journal, so a process
    /// that takes the event over resumes it at its first unfinished stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<LoopTrace>,
}

impl InboxEvent {
    /// `event` for `role_id`'s loop, from `origin`.
    pub fn new(role_id: impl Into<String>, event: DecisionEvent, origin: EventSource) -> Self {
        let role_id = role_id.into();
        Self {
            id: inbox_event_id(&role_id, &event.id),
            meta: RecordMeta::default(),
            domain: event.domain.clone(),
            role_id,
            event,
            origin,
            status: InboxStatus::Pending,
            holder: None,
            lease_until: None,
            attempts: 0,
            finished_at: None,
            note: None,
            trace: None,
        }
    }

    /// Set the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// Check a pushed event ([`validate_inbox_event`]) and give it its id,
    /// [`inbox_event_id`] of its role and event, whatever it was given:
    /// what every backend runs before placing it.
    pub fn check_new(&mut self) -> Result<(), StoreError> {
        validate_inbox_event(self)?;
        self.id = inbox_event_id(&self.role_id, &self.event.id);
        Ok(())
    }

    /// Reset the store-maintained fields of a new inbox event.
    pub fn prepare_new(&mut self) {
        self.domain.clone_from(&self.event.domain);
        self.status = InboxStatus::Pending;
        self.holder = None;
        self.lease_until = None;
        self.attempts = 0;
        self.finished_at = None;
        self.note = None;
        self.trace = None;
    }

    /// Whether `other`, pushed with this one's id, is the same event (a
    /// push repeated, from any instance, holds the first).
    pub fn same_request(&self, other: &Self) -> bool {
        self.role_id == other.role_id && self.event == other.event
    }

    /// Whether `holder` may lease it at `now`: it is pending, or leased
    /// and its lease lapsed (its holder died or gave up).
    pub fn leasable_at(&self, now: DateTime<Utc>) -> bool {
        match self.status {
            InboxStatus::Pending => true,
            InboxStatus::Leased => self.lease_until.is_none_or(|until| until <= now),
            InboxStatus::Done | InboxStatus::Failed => false,
        }
    }

    /// This event leased by `holder` at `now` for `lease_ms`: it must be
    /// [leasable](Self::leasable_at), else [`StoreError::Conflict`].
    pub fn leased(
        &self,
        holder: &str,
        lease_ms: u64,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        if !self.leasable_at(now) {
            return Err(StoreError::conflict(format!(
                "inbox event `{}` is {}{}: it is not free to lease",
                self.id,
                self.status,
                self.holder_phrase()
            )));
        }
        let mut next = self.clone();
        next.status = InboxStatus::Leased;
        next.holder = Some(holder.to_owned());
        next.lease_until = Some(lease_end(now, lease_ms));
        next.attempts = next.attempts.saturating_add(1);
        next.meta.updated_at = now;
        Ok(next)
    }

    /// Its lease renewed by `holder` at `now` for `lease_ms`: `holder` must
    /// hold it (a lapsed lease nobody took over is renewed), else
    /// [`StoreError::Conflict`]: another process took it over, or it is
    /// finished.
    pub fn renewed(
        &self,
        holder: &str,
        lease_ms: u64,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        self.held_by(holder, "renew")?;
        let mut next = self.clone();
        next.lease_until = Some(lease_end(now, lease_ms));
        next.meta.updated_at = now;
        Ok(next)
    }

    /// `trace` kept as this event's path: it must be this event's (its role
    /// and event id), else [`StoreError::Conflict`] (what is stored refuses
    /// it).
    fn with_trace(mut self, trace: Option<&LoopTrace>) -> Result<Self, StoreError> {
        if let Some(trace) = trace {
            if trace.role_id != self.role_id || trace.event.id != self.event.id {
                return Err(StoreError::conflict(format!(
                    "trace: the trace of event `{}` of role `{}` is not that of inbox event `{}`",
                    trace.event.id, trace.role_id, self.id
                )));
            }
            self.trace = Some(trace.clone());
        }
        Ok(self)
    }

    /// This event finished by `holder` at `now`: `done` with what came of
    /// it, or `failed` with why. `holder` must hold it, else
    /// [`StoreError::Conflict`].
    pub fn finished(
        &self,
        holder: &str,
        outcome: &InboxOutcome,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        self.held_by(holder, "finish")?;
        let mut next = self.clone();
        next.status = if outcome.failed {
            InboxStatus::Failed
        } else {
            InboxStatus::Done
        };
        next.lease_until = None;
        next.finished_at = Some(now);
        next.note = Some(crate::truncate_chars(&outcome.note, MAX_NOTE_CHARS).to_owned())
            .filter(|n| !n.is_empty());
        next.meta.updated_at = now;
        Ok(next)
    }

    fn held_by(&self, holder: &str, what: &str) -> Result<(), StoreError> {
        if self.status == InboxStatus::Leased && self.holder.as_deref() == Some(holder) {
            return Ok(());
        }
        Err(StoreError::conflict(format!(
            "{what}: inbox event `{}` is {}{}, not leased by `{holder}`",
            self.id,
            self.status,
            self.holder_phrase()
        )))
    }

    fn holder_phrase(&self) -> String {
        self.holder
            .as_deref()
            .map(|h| format!(" (held by `{h}`)"))
            .unwrap_or_default()
    }

    /// `ctx` leases it as `holder` at `now`: `ctx` must be allowed to
    /// change it (the role, whoever pushed it, or a manager). What every
    /// backend runs on each event it leases.
    pub fn lease_as(
        &self,
        ctx: &CallerContext,
        holder: &str,
        lease_ms: u64,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.require_change(
            &self.meta,
            Change::Write,
            format!("lease inbox event {}", self.id),
        )?;
        self.leased(holder, lease_ms, now)
    }

    /// `ctx` renews `holder`'s lease at `now` (see [`InboxEvent::renewed`]).
    pub fn renew_as(
        &self,
        ctx: &CallerContext,
        renewal: &Renewal,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.require_change(
            &self.meta,
            Change::Write,
            format!("renew inbox event {}", self.id),
        )?;
        renewal.validate()?;
        self.renewed(&renewal.holder, renewal.lease_ms, now)?
            .with_trace(renewal.trace.as_ref())
    }

    /// `ctx` finishes it at `now` (see [`InboxEvent::finished`]).
    pub fn finish_as(
        &self,
        ctx: &CallerContext,
        outcome: &InboxOutcome,
        now: DateTime<Utc>,
    ) -> Result<Self, StoreError> {
        ctx.require_change(
            &self.meta,
            Change::Write,
            format!("finish inbox event {}", self.id),
        )?;
        outcome.validate()?;
        self.finished(&outcome.holder, outcome, now)?
            .with_trace(outcome.trace.as_ref())
    }

    /// The transition from `before` to this event, as its audit entry
    /// names it: `lease`, `renew`, `take_over`, `done`, `failed` (or
    /// `update`).
    pub fn transition_from(&self, before: &Self) -> &'static str {
        match (before.status, self.status) {
            (InboxStatus::Pending, InboxStatus::Leased) => "lease",
            (InboxStatus::Leased, InboxStatus::Leased) if before.holder == self.holder => {
                if self.attempts > before.attempts {
                    "lease"
                } else {
                    "renew"
                }
            }
            (InboxStatus::Leased, InboxStatus::Leased) => "take_over",
            (InboxStatus::Leased, InboxStatus::Done) => "done",
            (InboxStatus::Leased, InboxStatus::Failed) => "failed",
            _ => "update",
        }
    }

    /// The `filters` of the audit entry of the transition from `before`.
    pub fn transition_detail(&self, before: &Self) -> serde_json::Value {
        serde_json::json!({
            "transition": self.transition_from(before),
            "from": before.status,
            "to": self.status,
            "holder": self.holder,
            "attempts": self.attempts,
        })
    }
}

/// The most characters of a finished event's note.
pub const MAX_NOTE_CHARS: usize = 4_000;

/// When a lease of `lease_ms` (at most [`MAX_LEASE_MS`]) taken at `now`
/// lapses: what every backend stores.
pub fn lease_end(now: DateTime<Utc>, lease_ms: u64) -> DateTime<Utc> {
    now + Duration::milliseconds(i64::try_from(lease_ms.min(MAX_LEASE_MS)).unwrap_or(i64::MAX))
}

fn check_holder(holder: &str) -> Result<(), StoreError> {
    if holder.trim().is_empty() {
        return Err(StoreError::invalid("holder", "must not be empty"));
    }
    super::check_label("holder", holder)
}

fn check_lease_ms(lease_ms: u64) -> Result<(), StoreError> {
    if !(MIN_LEASE_MS..=MAX_LEASE_MS).contains(&lease_ms) {
        return Err(StoreError::invalid(
            "lease_ms",
            format!("must be between {MIN_LEASE_MS} and {MAX_LEASE_MS}"),
        ));
    }
    Ok(())
}

/// Check an event before it is pushed: a role, and an event with an id, a
/// kind and a domain whose data and action input are JSON objects.
pub fn validate_inbox_event(e: &InboxEvent) -> Result<(), StoreError> {
    if e.role_id.trim().is_empty() {
        return Err(StoreError::invalid("role_id", "must not be empty"));
    }
    super::check_label("role_id", &e.role_id)?;
    let event = &e.event;
    for (field, value) in [
        ("event.id", &event.id),
        ("event.kind", &event.kind),
        ("event.domain", &event.domain),
    ] {
        if value.trim().is_empty() {
            return Err(StoreError::invalid(field, "must not be empty"));
        }
        super::check_label(field, value)?;
    }
    super::check_text("event.summary", &event.summary)?;
    super::check_label("event.entity", &event.entity)?;
    if !event.data.is_object() {
        return Err(StoreError::invalid("event.data", "must be a JSON object"));
    }
    super::check_json("event.data", &event.data)?;
    if let Some(action) = &event.action {
        super::proposals::check_action("event.action", action)?;
    }
    Ok(())
}

/// What [`InboxStore::lease`] asks for: the oldest free events of `roles`
/// for `holder` (a loop process: its host and process id, say), each for
/// `lease_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LeaseRequest {
    /// The roles whose events to lease (1 to [`MAX_LEASE_ROLES`]).
    pub roles: Vec<String>,
    /// Who leases them.
    pub holder: String,
    /// For how long, in milliseconds ([`MIN_LEASE_MS`] to [`MAX_LEASE_MS`]).
    pub lease_ms: u64,
    /// At most this many (1 to [`MAX_LEASE_BATCH`]).
    pub limit: usize,
}

impl LeaseRequest {
    /// Up to `limit` events of `roles` for `holder`, each for `lease_ms`.
    pub fn new<I, S>(roles: I, holder: impl Into<String>, lease_ms: u64, limit: usize) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            roles: roles.into_iter().map(Into::into).collect(),
            holder: holder.into(),
            lease_ms,
            limit,
        }
    }

    /// Refused, naming the field, when a bound is broken.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.roles.is_empty() || self.roles.len() > MAX_LEASE_ROLES {
            return Err(StoreError::invalid(
                "roles",
                format!("must name 1 to {MAX_LEASE_ROLES} roles"),
            ));
        }
        for role in &self.roles {
            if role.trim().is_empty() {
                return Err(StoreError::invalid("roles", "a role must not be empty"));
            }
            super::check_label("roles", role)?;
        }
        check_holder(&self.holder)?;
        check_lease_ms(self.lease_ms)?;
        if self.limit == 0 || self.limit > MAX_LEASE_BATCH {
            return Err(StoreError::invalid(
                "limit",
                format!("must be between 1 and {MAX_LEASE_BATCH}"),
            ));
        }
        Ok(())
    }
}

/// A lease renewed ([`InboxStore::renew`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Renewal {
    /// Who holds it.
    pub holder: String,
    /// For how long from now, in milliseconds.
    pub lease_ms: u64,
    /// The event's path so far, to keep with the lease (the loop's journal
    /// after a stage), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<LoopTrace>,
}

impl Renewal {
    /// `holder`'s lease for another `lease_ms`.
    pub fn new(holder: impl Into<String>, lease_ms: u64) -> Self {
        Self {
            holder: holder.into(),
            lease_ms,
            trace: None,
        }
    }

    /// Keep `trace` as the event's path with the renewal.
    #[must_use]
    pub fn trace(mut self, trace: LoopTrace) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Refused, naming the field, when a bound is broken.
    pub fn validate(&self) -> Result<(), StoreError> {
        check_holder(&self.holder)?;
        check_lease_ms(self.lease_ms)
    }
}

/// How a loop process finished an event ([`InboxStore::finish`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InboxOutcome {
    /// Who held it.
    pub holder: String,
    /// `true`: its loop gave up on it.
    #[serde(default)]
    pub failed: bool,
    /// What came of it, or why it failed (at most [`MAX_NOTE_CHARS`] kept).
    #[serde(default)]
    pub note: String,
    /// The event's last path through the loop, to keep, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<LoopTrace>,
}

impl InboxOutcome {
    /// `holder` worked it: `note` says what came of it.
    pub fn done(holder: impl Into<String>, note: impl Into<String>) -> Self {
        Self {
            holder: holder.into(),
            failed: false,
            note: note.into(),
            trace: None,
        }
    }

    /// `holder` gave up on it, for `reason`.
    pub fn failed(holder: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            holder: holder.into(),
            failed: true,
            note: reason.into(),
            trace: None,
        }
    }

    /// Keep `trace` as the event's last path.
    #[must_use]
    pub fn trace(mut self, trace: LoopTrace) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Refused, naming the field, when a bound is broken.
    pub fn validate(&self) -> Result<(), StoreError> {
        check_holder(&self.holder)?;
        super::check_text("note", &self.note)
    }
}

/// Filters of [`InboxStore::list`]; results are newest first (creation
/// time, then id), a page at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct InboxQuery {
    /// Only events with this status.
    pub status: Option<InboxStatus>,
    /// Only events of this role.
    pub role_id: Option<String>,
    /// Only events of these namespaces (empty: every namespace the caller
    /// may read).
    pub namespaces: Vec<String>,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
    /// At most this many (default 50, at most [`MAX_INBOX_PAGE`]).
    pub limit: usize,
}

impl Default for InboxQuery {
    fn default() -> Self {
        Self {
            status: None,
            role_id: None,
            namespaces: Vec::new(),
            cursor: None,
            limit: 50,
        }
    }
}

impl InboxQuery {
    /// Every event, 50 a page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only those with `status`.
    #[must_use]
    pub fn status(mut self, status: InboxStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only those of `role_id`.
    #[must_use]
    pub fn role(mut self, role_id: impl Into<String>) -> Self {
        self.role_id = Some(role_id.into());
        self
    }

    /// Whether `e` (readable, of the tenant) matches the filters
    /// (namespaces and the cursor are the store's).
    pub fn matches(&self, e: &InboxEvent) -> bool {
        self.status.is_none_or(|s| e.status == s)
            && self.role_id.as_deref().is_none_or(|r| e.role_id == r)
    }
}

super::listed_by_creation!(InboxEvent);
super::page_query!(InboxQuery => MAX_INBOX_PAGE, cursor);

/// The durable event inbox of the roles' cognitive loops (see the module
/// documentation). Who may push an event for a role is the store rule of
/// writing in its namespace; who may lease, renew and finish it, of
/// changing it.
#[async_trait]
pub trait InboxStore: Send + Sync {
    /// Hold `event` (its id [`inbox_event_id`] of its role and event) in
    /// `ctx`'s namespace (or the one it names, with the write right), owned
    /// by `ctx`. The same event pushed again returns the one held, whatever
    /// became of it; another event under its id is [`StoreError::Conflict`].
    async fn push(&self, ctx: &CallerContext, event: InboxEvent) -> Result<InboxEvent, StoreError>;

    /// The event `id`, when `ctx` may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<InboxEvent>, StoreError>;

    /// Readable events matching `query`, newest first, a page at a time.
    async fn list(
        &self,
        ctx: &CallerContext,
        query: &InboxQuery,
    ) -> Result<Page<InboxEvent>, StoreError>;

    /// Lease up to `request.limit` of the oldest events of `request.roles`
    /// that are pending or whose lease lapsed, and that `ctx` may change,
    /// to `request.holder` (each atomically: of processes leasing at once,
    /// each event goes to one; none waits on another's lease). Oldest
    /// first; none is an empty list.
    async fn lease(
        &self,
        ctx: &CallerContext,
        request: &LeaseRequest,
    ) -> Result<Vec<InboxEvent>, StoreError>;

    /// Renew the lease of event `id` (its holder only; a lapsed lease no
    /// one took over is renewed). [`StoreError::Conflict`] when another
    /// process took it over or it is finished: stop working it.
    async fn renew(
        &self,
        ctx: &CallerContext,
        id: &str,
        renewal: &Renewal,
    ) -> Result<InboxEvent, StoreError>;

    /// Finish event `id` (its holder only): `done`, or `failed` with why.
    /// Once: [`StoreError::Conflict`] when it is not leased by the holder.
    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: &InboxOutcome,
    ) -> Result<InboxEvent, StoreError>;

    /// How many pushes this store has heard of, from any process (a
    /// counter to compare with itself; PostgreSQL hears them with
    /// `LISTEN`, the in-process store at each push), or `None` when the
    /// backend hears of none (over the wire): a loop then polls.
    fn pushes(&self) -> Option<u64> {
        None
    }

    /// Wait until [`pushes`](Self::pushes) passes `seen` or `timeout`
    /// passes, whichever comes first; at once when the backend hears of no
    /// pushes. A wake-up says only that an event may be there: lease to
    /// see.
    async fn wait_for_push(&self, seen: u64, timeout: std::time::Duration) {
        let _ = (seen, timeout);
    }
}

/// Push `event` for `role_id`'s loop into `store` as `ctx`, in the role's
/// namespace (its id), from `source`: a [duplicate](Accepted::duplicate)
/// when the same event is held already (pushed before, from any process:
/// the event held was created before this push began, by the store's
/// clock). What every edge that takes events into the durable inbox runs.
pub async fn push_to_inbox(
    store: &dyn InboxStore,
    ctx: &CallerContext,
    role_id: &str,
    event: DecisionEvent,
    source: EventSource,
) -> Result<Accepted, StoreError> {
    let run_id = crate::loop_run_id(role_id, &event.id);
    let new = InboxEvent::new(role_id, event, source).namespace(role_id);
    let began = super::store_time();
    let held = store.push(ctx, new).await?;
    Ok(Accepted::new(run_id, held.meta.created_at < began))
}

/// The trace of `event` as its loop's journal says: the one its holder
/// saved, else its `perceive` stage at its push.
pub fn inbox_trace(event: &InboxEvent) -> LoopTrace {
    event.trace.clone().unwrap_or_else(|| {
        LoopTrace::perceived_at(
            &event.role_id,
            event.event.clone(),
            event.origin,
            event.meta.created_at,
        )
    })
}

/// The durable inbox as an [`EventInbox`](crate::EventInbox): what a service instance pushes
/// events into when the roles' loops run in other processes (any number of
/// them, leasing from the same store). With [`StoreInbox::roles`], an event
/// for another role is refused as an unknown role; without, it is held for
/// whichever loop runs that role (`GET /v1/memory/inbox?status=pending`
/// lists what waits).
pub struct StoreInbox {
    store: std::sync::Arc<dyn InboxStore>,
    roles: Option<std::collections::BTreeSet<String>>,
}

impl StoreInbox {
    /// Events into `store`, for any role.
    pub fn new(store: std::sync::Arc<dyn InboxStore>) -> Self {
        Self { store, roles: None }
    }

    /// Only for `roles`: an event for another is [`StoreError::NotFound`].
    #[must_use]
    pub fn roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.roles = Some(roles.into_iter().map(Into::into).collect());
        self
    }

    fn check_role(&self, role_id: &str) -> Result<(), StoreError> {
        match &self.roles {
            Some(roles) if !roles.contains(role_id) => Err(StoreError::NotFound {
                kind: "role",
                id: role_id.to_owned(),
            }),
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl crate::EventInbox for StoreInbox {
    async fn push(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
    ) -> Result<Accepted, StoreError> {
        self.check_role(role_id)?;
        check_pushed_kind(&event, source)?;
        push_to_inbox(self.store.as_ref(), ctx, role_id, event, source).await
    }

    async fn trace(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        event_id: &str,
    ) -> Result<Option<LoopTrace>, StoreError> {
        self.check_role(role_id)?;
        Ok(self
            .store
            .get(ctx, &inbox_event_id(role_id, event_id))
            .await?
            .map(|e| inbox_trace(&e)))
    }
}

/// Reflection events come from a role's reflection schedule: one pushed
/// over HTTP or MCP is refused (`kind`).
pub fn check_pushed_kind(event: &DecisionEvent, source: EventSource) -> Result<(), StoreError> {
    if event.kind == crate::REFLECT_EVENT && matches!(source, EventSource::Http | EventSource::Mcp)
    {
        return Err(StoreError::invalid(
            "kind",
            "reflection events come from the role's reflection schedule, not from a caller",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn event() -> InboxEvent {
        InboxEvent::new(
            "cro",
            DecisionEvent::new("e1", "lead.arrived", "revenue"),
            EventSource::Http,
        )
    }

    #[test]
    fn a_lease_moves_pending_to_leased_and_lapses() {
        let now = Utc::now();
        let e = event();
        assert_eq!(e.id, inbox_event_id("cro", "e1"));
        assert_eq!(e.domain, "revenue");
        let leased = e.leased("p1", 1_000, now).unwrap();
        assert_eq!((leased.status, leased.attempts), (InboxStatus::Leased, 1));
        assert_eq!(leased.transition_from(&e), "lease");
        // Held: nobody else takes it, until it lapses.
        assert!(leased.leased("p2", 1_000, now).is_err());
        let later = now + Duration::milliseconds(1_000);
        let taken = leased.leased("p2", 1_000, later).unwrap();
        assert_eq!(taken.attempts, 2);
        assert_eq!(taken.transition_from(&leased), "take_over");
        // The first holder lost it.
        assert!(taken.renewed("p1", 1_000, later).is_err());
        assert!(
            taken
                .finished("p1", &InboxOutcome::done("p1", ""), later)
                .is_err()
        );
        let renewed = taken.renewed("p2", 5_000, later).unwrap();
        assert_eq!(renewed.transition_from(&taken), "renew");
        let done = renewed
            .finished("p2", &InboxOutcome::done("p2", "acted"), later)
            .unwrap();
        assert_eq!(done.transition_from(&renewed), "done");
        assert_eq!(done.note.as_deref(), Some("acted"));
        assert!(!done.leasable_at(later + Duration::days(1)));
        assert!(
            done.finished("p2", &InboxOutcome::done("p2", ""), later)
                .is_err()
        );
    }

    #[test]
    fn bad_requests_name_their_field() {
        let field = |e: StoreError| match e {
            StoreError::InvalidInput { field, .. } => field,
            other => panic!("{other:?}"),
        };
        let ok = LeaseRequest::new(["cro"], "p1", 1_000, 10);
        assert!(ok.validate().is_ok());
        for (bad, name) in [
            (
                LeaseRequest::new(Vec::<String>::new(), "p1", 1_000, 10),
                "roles",
            ),
            (LeaseRequest::new(["cro"], " ", 1_000, 10), "holder"),
            (LeaseRequest::new(["cro"], "p1", 10, 10), "lease_ms"),
            (LeaseRequest::new(["cro"], "p1", 1_000, 0), "limit"),
            (
                LeaseRequest::new(["cro"], "p1", 1_000, MAX_LEASE_BATCH + 1),
                "limit",
            ),
        ] {
            assert_eq!(field(bad.validate().unwrap_err()), name);
        }
        let mut e = event();
        e.event.data = serde_json::json!([1]);
        assert_eq!(field(validate_inbox_event(&e).unwrap_err()), "event.data");
        let mut e = event();
        e.role_id = String::new();
        assert_eq!(field(validate_inbox_event(&e).unwrap_err()), "role_id");
        assert!(validate_inbox_event(&event()).is_ok());
    }
}
