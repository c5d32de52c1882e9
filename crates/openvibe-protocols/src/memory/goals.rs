//! Goals as records of the memory contract ([`GoalStore`]): the objectives
//! people set for roles ([`Goal`], from `goals.yaml`), their decomposition
//! into initiatives, each role's priorities of the day ([`Priorities`]),
//! and the metric reports that move key results ([`MetricReport`]), so that
//! several processes, the service and the console see the same goals.
//!
//! **Progress is deterministic.** A metric is a stream per tenant,
//! namespace, role and metric name. Each report is numbered in its stream
//! (`seq`, 1, 2, …) and carries the metric's value after it (`total`): an
//! `add` report adds to the value, a `set` report replaces it. The store
//! applies a report and numbers it atomically (a row lock on PostgreSQL,
//! the store's lock in memory), so concurrent reports never lose an update,
//! and replaying the reports in `seq` order gives the same value
//! ([`MetricValue::apply`]). Before any `set`, a key result's current value
//! is its baseline plus the sum of the `add`s; after one, the value set
//! plus the later `add`s ([`MetricValue::current`]).
//!
//! **Governance.** Goals, priorities and reports are governed like every
//! record (tenant, namespace, project, owner, clearance, audit, expiry for
//! goals and priorities). A goal's progress reads the streams of its own
//! namespace: whoever may read the goal reads its progress
//! ([`GoalStore::progress`]), and moving it takes the `write` right in that
//! namespace (a report goes where its caller places it, and moves only the
//! goals there). A report is never changed afterwards; moving a namespace
//! moves its streams with it.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{CallerContext, Page, RecordMeta, StoreError};
use crate::{KeyResult, Objective};

/// The kind name of goals (audit entries, errors, retention).
pub const GOAL_KIND: &str = "goal";
/// The kind name of a role's priorities of one day.
pub const PRIORITIES_KIND: &str = "priorities";
/// The kind name of metric reports.
pub const METRIC_KIND: &str = "metric";

/// The most goals one list returns.
pub const MAX_GOAL_PAGE: usize = 1000;
/// The most metric reports one list returns.
pub const MAX_REPORT_PAGE: usize = 1000;
/// The most initiatives one objective decomposes into.
pub const MAX_INITIATIVES: usize = 20;
/// The most priorities a role holds for one day (the source design asks
/// for the top 3).
pub const MAX_PRIORITIES: usize = 10;
/// The longest title of an initiative or a priority, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// The longest description or reason, in characters.
pub const MAX_REASON_CHARS: usize = 4_000;

/// An objective kept in the memory: the [`Objective`] people set, its
/// version, and the initiatives it was decomposed into. Fields marked
/// *store* are set by the store; values given are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Goal {
    /// Governance metadata: the owner is whoever put it (the runtime that
    /// loads `goals.yaml` puts it as the owning role).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The objective; its id is the goal's id (unique in the tenant).
    pub objective: Objective,
    /// 1 when created, one more each time the objective changes (*store*).
    #[serde(default)]
    pub version: u32,
    /// The objective's fingerprint ([`objective_fingerprint`]) (*store*).
    #[serde(default)]
    pub fingerprint: String,
    /// The initiatives of its decomposition (*store*, through
    /// [`GoalStore::decompose`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initiatives: Vec<Initiative>,
    /// The fingerprint of the objective the initiatives decompose (*store*):
    /// when it differs from [`fingerprint`](Self::fingerprint) the
    /// objective changed since and the initiatives are stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decomposed: Option<String>,
}

impl Goal {
    /// The goal of `objective`, in the caller's namespace.
    pub fn new(objective: Objective) -> Self {
        Self {
            meta: RecordMeta::default(),
            objective,
            version: 0,
            fingerprint: String::new(),
            initiatives: Vec::new(),
            decomposed: None,
        }
    }

    /// Put it in `namespace`.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// Its id: the objective's.
    pub fn id(&self) -> &str {
        &self.objective.id
    }

    /// The role that owns the objective.
    pub fn role_id(&self) -> &str {
        &self.objective.owner
    }

    /// Whether its initiatives decompose the objective as it is now.
    pub fn is_decomposed(&self) -> bool {
        self.decomposed.as_deref() == Some(self.fingerprint.as_str())
    }

    /// Reset the store-maintained fields of a goal about to be written the
    /// first time (version 1, its fingerprint, no initiatives).
    pub fn prepare_new(&mut self) {
        self.version = 1;
        self.fingerprint = objective_fingerprint(&self.objective);
        self.initiatives.clear();
        self.decomposed = None;
    }

    /// This goal with `objective` as its new version at `now`, or `None`
    /// when the objective is unchanged (putting the same objective twice
    /// changes nothing). The initiatives stay, stale until decomposed again.
    pub fn revised(&self, objective: &Objective, now: DateTime<Utc>) -> Option<Self> {
        let fingerprint = objective_fingerprint(objective);
        if fingerprint == self.fingerprint {
            return None;
        }
        let mut next = self.clone();
        next.objective = objective.clone();
        next.fingerprint = fingerprint;
        next.version = self.version.saturating_add(1);
        next.meta.updated_at = now;
        Some(next)
    }

    /// `ctx` decomposes this goal, as it was at `fingerprint`, into
    /// `initiatives` at `now`: `ctx` must be allowed to change the goal;
    /// when the objective changed since `fingerprint`,
    /// [`StoreError::Conflict`]; when it is decomposed at that fingerprint
    /// already, `None` (the first decomposition stays: re-running one on an
    /// unchanged objective adds nothing). What every backend runs under its
    /// lock.
    pub fn decompose_as(
        &self,
        ctx: &CallerContext,
        fingerprint: &str,
        initiatives: &[Initiative],
        now: DateTime<Utc>,
    ) -> Result<Option<Self>, StoreError> {
        ctx.require_change(
            &self.meta,
            super::Change::Write,
            format!("decompose goal {}", self.id()),
        )?;
        validate_initiatives(&self.objective, initiatives)?;
        if fingerprint != self.fingerprint {
            return Err(StoreError::conflict(format!(
                "goal `{}` changed since (version {}): decompose the objective as it is now",
                self.id(),
                self.version
            )));
        }
        if self.is_decomposed() {
            return Ok(None);
        }
        let mut next = self.clone();
        next.initiatives = numbered(initiatives);
        next.decomposed = Some(fingerprint.to_owned());
        next.meta.updated_at = now;
        Ok(Some(next))
    }

    /// `ctx` revises this goal to `objective` at `now`: `ctx` must be
    /// allowed to change it; `None` when the objective is unchanged.
    pub fn revise_as(
        &self,
        ctx: &CallerContext,
        objective: &Objective,
        now: DateTime<Utc>,
    ) -> Result<Option<Self>, StoreError> {
        ctx.require_change(
            &self.meta,
            super::Change::Write,
            format!("revise goal {}", self.id()),
        )?;
        Ok(self.revised(objective, now))
    }

    /// `ctx` moves initiative `initiative` of this goal as `update` says,
    /// at `now`: `ctx` must be allowed to change the goal; an unknown
    /// initiative is [`StoreError::NotFound`]; a done or dropped one
    /// changes only back to `open` (a person reopening it), else
    /// [`StoreError::Conflict`]; `None` when it already stands so (the
    /// same update again changes nothing).
    pub fn update_initiative_as(
        &self,
        ctx: &CallerContext,
        initiative: &str,
        update: &InitiativeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Option<Self>, StoreError> {
        ctx.require_change(
            &self.meta,
            super::Change::Write,
            format!("update initiative {initiative} of goal {}", self.id()),
        )?;
        if let Some(note) = &update.note {
            check_reason("note", note)?;
        }
        let Some(index) = self.initiatives.iter().position(|i| i.id == initiative) else {
            return Err(StoreError::NotFound {
                kind: INITIATIVE_KIND,
                id: format!("{}/{initiative}", self.id()),
            });
        };
        let current = &self.initiatives[index];
        let note = update.note.clone().or_else(|| current.note.clone());
        if current.status == update.status && current.note == note {
            return Ok(None);
        }
        if current.status.is_final() && update.status != InitiativeStatus::Open {
            return Err(StoreError::conflict(format!(
                "initiative `{initiative}` of goal `{}` is {}: reopen it (status `open`) to change it",
                self.id(),
                current.status.as_str()
            )));
        }
        let mut next = self.clone();
        next.initiatives[index].status = update.status;
        next.initiatives[index].note = note;
        next.meta.updated_at = now;
        Ok(Some(next))
    }

    /// The `filters` of the audit entry of the change from `before`:
    /// `revise` (with the versions), `decompose` (with the initiatives'
    /// count) or `initiative` (with its id and new status).
    pub fn transition_detail(&self, before: &Self) -> serde_json::Value {
        if self.version != before.version {
            return serde_json::json!({
                "transition": "revise",
                "from": before.version,
                "to": self.version,
            });
        }
        if self.decomposed == before.decomposed
            && let Some(changed) = self
                .initiatives
                .iter()
                .zip(&before.initiatives)
                .find(|(now, then)| now != then)
                .map(|(now, _)| now)
        {
            return serde_json::json!({
                "transition": "initiative",
                "initiative": changed.id,
                "status": changed.status.as_str(),
            });
        }
        serde_json::json!({
            "transition": "decompose",
            "initiatives": self.initiatives.len(),
        })
    }
}

/// The refusal of a namespace migration that would merge two streams of
/// one metric (`to` has its own stream of `role`'s `metric`).
pub fn stream_conflict(to: &str, role: &str, metric: &str) -> StoreError {
    StoreError::conflict(format!(
        "namespace `{to}` has its own stream of metric `{metric}` of role `{role}`: two streams of reports cannot be merged (report the difference there instead)"
    ))
}

/// `initiatives` with their ids: each one without an id gets `i<n>`, `n`
/// its place (1-based), or the next free number when another has that id.
fn numbered(initiatives: &[Initiative]) -> Vec<Initiative> {
    let mut out = initiatives.to_vec();
    let mut n = 0;
    for i in 0..out.len() {
        if out[i].id.is_empty() {
            n = n.max(i);
            let id = loop {
                n += 1;
                let id = format!("i{n}");
                if !out.iter().any(|o| o.id == id) {
                    break id;
                }
            };
            out[i].id = id;
        }
    }
    out
}

/// The fingerprint of an objective: the SHA-256 of its JSON, in hex (the
/// first 16 bytes). Two objectives with the same fields have the same one.
pub fn objective_fingerprint(objective: &Objective) -> String {
    let json = serde_json::to_vec(objective).unwrap_or_default();
    let digest = Sha256::digest(&json);
    hex::encode(&digest[..16])
}

/// One way to pursue an objective: what a decomposition produces, and
/// where its work stands. A role works the initiatives it owns and
/// delegates one whose domain another role owns; the store keeps where
/// each one stands ([`GoalStore::update_initiative`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Initiative {
    /// Its id in the goal (`i1`, `i2`, … in order when not given; unique
    /// in the goal).
    #[serde(default)]
    pub id: String,
    /// What to do, in a few words.
    pub title: String,
    /// How, and why it moves the key results.
    #[serde(default)]
    pub description: String,
    /// The key results it moves (their ids in the objective).
    #[serde(default)]
    pub key_results: Vec<String>,
    /// Who works it: a role id, or a person (none: the goal's role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The domain it belongs to: when the goal's role does not own it, the
    /// role delegates the initiative to the role that does, through its
    /// space (none: the goal's role's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// When it is due (on or before the objective's due date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<NaiveDate>,
    /// The action that works on it (for a delegated initiative, its name
    /// is the task asked of the owner of the domain); none: a person
    /// chooses one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::Action>,
    /// Where it stands.
    #[serde(default)]
    pub status: InitiativeStatus,
    /// The latest word on it: who it was delegated to, the answer, the
    /// error that blocked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Initiative {
    /// An open initiative titled `title`, moving `key_results`.
    pub fn new(title: impl Into<String>, key_results: &[&str]) -> Self {
        Self {
            id: String::new(),
            title: title.into(),
            description: String::new(),
            key_results: key_results.iter().map(|k| (*k).to_owned()).collect(),
            owner: None,
            domain: None,
            due: None,
            action: None,
            status: InitiativeStatus::Open,
            note: None,
        }
    }

    /// Give it an id.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Place it in `domain`.
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Due on `due`.
    #[must_use]
    pub fn due(mut self, due: NaiveDate) -> Self {
        self.due = Some(due);
        self
    }

    /// Worked by `action`.
    #[must_use]
    pub fn action(mut self, action: crate::Action) -> Self {
        self.action = Some(action);
        self
    }

    /// Owned by `owner` (a role or a person).
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }
}

/// Where an initiative stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InitiativeStatus {
    /// Not worked yet.
    #[default]
    Open,
    /// Decided on: running, or waiting for a person's approval.
    Working,
    /// Asked of the role that owns its domain; waiting for the answer.
    Delegated,
    /// Worked to its end (final).
    Done,
    /// A run failed or stalled, or the owner refused: a person looks.
    Blocked,
    /// A person dropped it (final).
    Dropped,
}

impl InitiativeStatus {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Working => "working",
            Self::Delegated => "delegated",
            Self::Done => "done",
            Self::Blocked => "blocked",
            Self::Dropped => "dropped",
        }
    }

    /// Done or dropped: only a person's reopening (`open`) changes it.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Dropped)
    }
}

/// A change of an initiative's status ([`GoalStore::update_initiative`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InitiativeUpdate {
    /// Its new status.
    pub status: InitiativeStatus,
    /// The word on it (kept when none is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl InitiativeUpdate {
    /// To `status`, with `note`.
    pub fn new(status: InitiativeStatus, note: impl Into<String>) -> Self {
        Self {
            status,
            note: Some(note.into()),
        }
    }
}

/// The kind name of an initiative (in errors).
pub const INITIATIVE_KIND: &str = "initiative";

/// The checks of a decomposition of `objective`: 1 to [`MAX_INITIATIVES`]
/// initiatives, each with a title of at most [`MAX_TITLE_CHARS`]
/// characters, a bounded description, and key results of the objective.
pub fn validate_initiatives(
    objective: &Objective,
    initiatives: &[Initiative],
) -> Result<(), StoreError> {
    if initiatives.is_empty() || initiatives.len() > MAX_INITIATIVES {
        return Err(StoreError::invalid(
            "initiatives",
            format!("a decomposition has 1 to {MAX_INITIATIVES} initiatives"),
        ));
    }
    for (i, initiative) in initiatives.iter().enumerate() {
        let at = |field: &str| format!("initiatives[{i}].{field}");
        check_title(&at("title"), &initiative.title)?;
        check_reason(&at("description"), &initiative.description)?;
        if !initiative.id.is_empty() {
            super::check_label(&at("id"), &initiative.id)?;
            if initiatives[..i].iter().any(|o| o.id == initiative.id) {
                return Err(StoreError::inconsistent(
                    at("id"),
                    format!("two initiatives have the id `{}`", initiative.id),
                ));
            }
        }
        super::check_opt_label(&at("owner"), initiative.owner.as_deref())?;
        super::check_opt_label(&at("domain"), initiative.domain.as_deref())?;
        if let Some(note) = &initiative.note {
            check_reason(&at("note"), note)?;
        }
        if let Some(action) = &initiative.action {
            super::proposals::check_action(&at("action"), action)?;
        }
        if let Some(due) = initiative.due
            && due > objective.due
        {
            return Err(StoreError::inconsistent(
                at("due"),
                format!(
                    "due {due}, after objective `{}` (due {})",
                    objective.id, objective.due
                ),
            ));
        }
        for kr in &initiative.key_results {
            if !objective.key_results.iter().any(|k| &k.id == kr) {
                return Err(StoreError::inconsistent(
                    at("key_results"),
                    format!("`{kr}` is not a key result of objective `{}`", objective.id),
                ));
            }
        }
    }
    Ok(())
}

fn check_title(field: &str, title: &str) -> Result<(), StoreError> {
    if title.trim().is_empty() {
        return Err(StoreError::invalid(field, "must not be empty"));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(StoreError::invalid(
            field,
            format!("longer than {MAX_TITLE_CHARS} characters"),
        ));
    }
    super::check_text(field, title)
}

fn check_reason(field: &str, text: &str) -> Result<(), StoreError> {
    if text.chars().count() > MAX_REASON_CHARS {
        return Err(StoreError::invalid(
            field,
            format!("longer than {MAX_REASON_CHARS} characters"),
        ));
    }
    super::check_text(field, text)
}

/// The checks of a goal about to be put: its objective has no problem
/// ([`Objective::problems`], the first reported as `objective.<field>`);
/// labels are bounded.
pub fn validate_goal(goal: &Goal) -> Result<(), StoreError> {
    if let Some((field, message)) = goal.objective.problems().into_iter().next() {
        let field = format!("objective.{field}");
        // Rules between key results, or between a key result and the
        // objective: inconsistent, not malformed.
        return Err(if crate::goal::is_cross_field(&message) {
            StoreError::inconsistent(field, message)
        } else {
            StoreError::invalid(field, message)
        });
    }
    super::validate_record_id(goal.id())?;
    super::check_label("objective.owner", &goal.objective.owner)?;
    check_title("objective.title", &goal.objective.title)?;
    for (i, kr) in goal.objective.key_results.iter().enumerate() {
        super::check_label(&format!("objective.key_results[{i}].unit"), &kr.unit)?;
    }
    super::check_meta(&goal.meta, "", "", &[])
}

/// Filters of [`GoalStore::list`]; results are in id order, a page at a
/// time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct GoalQuery {
    /// Only the goals of this role.
    pub role_id: Option<String>,
    /// Only goals of these namespaces (empty: every namespace the caller
    /// may read).
    pub namespaces: Vec<String>,
    /// Continue after the goal with this id (the last of a page).
    pub after: Option<String>,
    /// At most this many (default 100, at most [`MAX_GOAL_PAGE`]).
    pub limit: usize,
}

impl Default for GoalQuery {
    fn default() -> Self {
        Self {
            role_id: None,
            namespaces: Vec::new(),
            after: None,
            limit: 100,
        }
    }
}

impl GoalQuery {
    /// Every goal, 100 a page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only those of `role_id`.
    #[must_use]
    pub fn role(mut self, role_id: impl Into<String>) -> Self {
        self.role_id = Some(role_id.into());
        self
    }

    /// Whether `goal` (readable) matches the role filter and comes after
    /// the cursor.
    pub fn matches(&self, goal: &Goal) -> bool {
        self.role_id.as_deref().is_none_or(|r| goal.role_id() == r)
            && self.after.as_deref().is_none_or(|a| goal.id() > a)
    }
}

/// Goals list in id order: a page continues after its last id.
impl super::Listed for Goal {
    fn cursor(&self) -> String {
        self.id().to_owned()
    }
}
super::page_query!(GoalQuery => MAX_GOAL_PAGE; ReportQuery => MAX_REPORT_PAGE);

/// One thing a role should do first today.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Priority {
    /// What, in a few words.
    pub title: String,
    /// Why now (the goals, episodes and insights behind it).
    #[serde(default)]
    pub reason: String,
    /// The goal it serves, when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_id: Option<String>,
    /// The action that works on it, when the prioritization named one: in
    /// the role's loop the priority is an event the decision engine
    /// decides (act within authority, propose, or escalate); without an
    /// action a person chooses one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::Action>,
}

/// A role's priorities of one day, most important first: what the daily
/// prioritization stores and the role's prompts show (`## Priorities`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Priorities {
    /// `<role>:<day>` (*store*).
    #[serde(default)]
    pub id: String,
    /// Governance metadata.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The role.
    pub role_id: String,
    /// The day they are for.
    pub day: NaiveDate,
    /// Most important first (1 to [`MAX_PRIORITIES`]).
    pub items: Vec<Priority>,
}

impl Priorities {
    /// The priorities of `role_id` on `day`.
    pub fn new(role_id: impl Into<String>, day: NaiveDate, items: Vec<Priority>) -> Self {
        let role_id = role_id.into();
        Self {
            id: Self::id_of(&role_id, day),
            meta: RecordMeta::default(),
            role_id,
            day,
            items,
        }
    }

    /// The id of `role_id`'s priorities of `day`: one record per role and day.
    pub fn id_of(role_id: &str, day: NaiveDate) -> String {
        format!("{role_id}:{day}")
    }

    /// Put them in `namespace`.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }
}

/// The checks of priorities about to be put (their id is set from the role
/// and the day).
pub fn validate_priorities(p: &Priorities) -> Result<(), StoreError> {
    if p.role_id.trim().is_empty() {
        return Err(StoreError::invalid("role_id", "must not be empty"));
    }
    super::check_label("role_id", &p.role_id)?;
    super::validate_record_id(&p.id)?;
    if p.items.is_empty() || p.items.len() > MAX_PRIORITIES {
        return Err(StoreError::invalid(
            "items",
            format!("a day has 1 to {MAX_PRIORITIES} priorities"),
        ));
    }
    for (i, item) in p.items.iter().enumerate() {
        check_title(&format!("items[{i}].title"), &item.title)?;
        check_reason(&format!("items[{i}].reason"), &item.reason)?;
        super::check_opt_label(&format!("items[{i}].goal_id"), item.goal_id.as_deref())?;
        if let Some(action) = &item.action {
            super::proposals::check_action(&format!("items[{i}].action"), action)?;
        }
    }
    super::check_meta(&p.meta, "", "", &[])
}

/// A position in a list ordered by creation time, then id: what a page
/// cursor names.
pub type Position = (DateTime<Utc>, String);

/// Filters of [`GoalStore::reports`]: a role's metric reports, oldest
/// first (creation time, then id), a page at a time: the history a chart
/// of a key result draws (each report carries its stream's `total`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ReportQuery {
    /// The role whose reports (required).
    pub role_id: String,
    /// Only reports of this metric.
    pub metric: Option<String>,
    /// Only reports of these namespaces (empty: every namespace the caller
    /// may read).
    pub namespaces: Vec<String>,
    /// Only reports created at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
    /// At most this many (default 100, at most [`MAX_REPORT_PAGE`]).
    pub limit: usize,
}

impl Default for ReportQuery {
    fn default() -> Self {
        Self {
            role_id: String::new(),
            metric: None,
            namespaces: Vec::new(),
            since: None,
            cursor: None,
            limit: 100,
        }
    }
}

impl ReportQuery {
    /// The reports of `role_id`, 100 a page.
    pub fn new(role_id: impl Into<String>) -> Self {
        Self {
            role_id: role_id.into(),
            ..Self::default()
        }
    }

    /// Only those of `metric`.
    #[must_use]
    pub fn metric(mut self, metric: impl Into<String>) -> Self {
        self.metric = Some(metric.into());
        self
    }

    /// Continue after a page's `next_cursor`.
    #[must_use]
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// The query checked: the limit (1 to [`MAX_REPORT_PAGE`]) and the
    /// position its cursor names (creation time, id).
    pub fn checked(&self) -> Result<(usize, Option<Position>), StoreError> {
        if self.role_id.trim().is_empty() {
            return Err(StoreError::invalid("role_id", "must not be empty"));
        }
        super::check_label("role_id", &self.role_id)?;
        super::check_limit(self.limit, MAX_REPORT_PAGE)?;
        let after = match &self.cursor {
            None => None,
            Some(cursor) => {
                let (micros, id) = super::parse_cursor(cursor)?;
                let at = DateTime::from_timestamp_micros(micros).ok_or_else(|| {
                    StoreError::invalid("cursor", "not a cursor returned by a list call")
                })?;
                Some((at, id))
            }
        };
        Ok((self.limit, after))
    }

    /// Whether `report` (readable) matches the filters and comes after the
    /// position `after` (from [`ReportQuery::checked`]).
    pub fn matches(&self, report: &MetricReport, after: Option<&Position>) -> bool {
        report.role_id == self.role_id
            && self.metric.as_deref().is_none_or(|m| report.metric == m)
            && self.since.is_none_or(|s| report.meta.created_at >= s)
            && after.is_none_or(|(at, id)| {
                (report.meta.created_at, report.id.as_str()) > (*at, id.as_str())
            })
    }
}

super::listed_by_creation!(MetricReport);

crate::vocabulary! {
    /// How a report moves its metric.
    #[derive(Default)]
    pub enum MetricMode {
        /// Add the value (a deal closed: `+40000`).
        #[default]
        Add = "add",
        /// The metric is now the value (a count taken from elsewhere).
        Set = "set",
    }
}

/// A report that moves a role's metric: from an episode whose node output
/// named a metric, from a tool result, or from outside (a CRM webhook
/// posting "closed $40k"). Fields marked *store* are set by the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MetricReport {
    /// Unique within the tenant: reporting twice with one id counts once
    /// (the store generates one when empty; an episode's report uses the
    /// episode's id and the metric).
    #[serde(default)]
    pub id: String,
    /// Governance metadata: the owner is the reporter.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The role whose metric it is.
    pub role_id: String,
    /// The metric (a key result's `metric`).
    pub metric: String,
    /// The amount (added, or the new value).
    pub value: f64,
    /// `add` (default) or `set`.
    #[serde(default)]
    pub mode: MetricMode,
    /// The episode that reported it, when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    /// What happened, for people (`closed Acme, $40k`).
    #[serde(default)]
    pub note: String,
    /// Its number in the metric's stream, from 1 (*store*).
    #[serde(default)]
    pub seq: u64,
    /// The metric's value after it (*store*): see [`MetricValue`].
    #[serde(default)]
    pub total: f64,
}

impl MetricReport {
    /// A report adding `value` to `role_id`'s `metric`.
    pub fn add(role_id: impl Into<String>, metric: impl Into<String>, value: f64) -> Self {
        Self {
            id: String::new(),
            meta: RecordMeta::default(),
            role_id: role_id.into(),
            metric: metric.into(),
            value,
            mode: MetricMode::Add,
            episode_id: None,
            note: String::new(),
            seq: 0,
            total: 0.0,
        }
    }

    /// A report setting `role_id`'s `metric` to `value`.
    pub fn set(role_id: impl Into<String>, metric: impl Into<String>, value: f64) -> Self {
        Self {
            mode: MetricMode::Set,
            ..Self::add(role_id, metric, value)
        }
    }

    /// Set the id (reporting twice with one id counts once).
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Say what happened.
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// Name the episode that reported it.
    #[must_use]
    pub fn episode(mut self, episode_id: impl Into<String>) -> Self {
        self.episode_id = Some(episode_id.into());
        self
    }

    /// Put it in `namespace`.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// Whether this report moves `key_result`'s metric away from its
    /// target: an `add` of the opposite sign to the way from its baseline
    /// to its target (a `set` names no direction of its own).
    pub fn moves_against(&self, key_result: &crate::KeyResult) -> bool {
        self.metric == key_result.metric
            && self.mode == MetricMode::Add
            && (key_result.target - key_result.baseline) * self.value < 0.0
    }

    /// Whether `other` reports the same thing (reporting twice with one id
    /// returns the first when they do).
    pub fn same_request(&self, other: &Self) -> bool {
        self.role_id == other.role_id
            && self.metric == other.metric
            && self.value.to_bits() == other.value.to_bits()
            && self.mode == other.mode
            && self.episode_id == other.episode_id
    }
}

/// A metric a node's output reports: its `metric` field (one object, or a
/// list of them), e.g. `{"qualified": true, "metric": {"name":
/// "pipeline_usd", "value": 40000}}`. The role records it as a
/// [`MetricReport`] of its own metric, linked to the node's episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MetricOutput {
    /// The metric (a key result's `metric`).
    pub name: String,
    /// The amount.
    pub value: f64,
    /// `add` (default) or `set`.
    #[serde(default)]
    pub mode: MetricMode,
    /// What happened.
    #[serde(default)]
    pub note: String,
}

impl MetricOutput {
    /// The metrics `output` reports in its `metric` field (none when it has
    /// no such field or is not an object); a `metric` field that is neither
    /// a metric nor a list of them is [`StoreError::InvalidInput`].
    pub fn all_in(output: &serde_json::Value) -> Result<Vec<Self>, StoreError> {
        let Some(field) = output.get("metric") else {
            return Ok(Vec::new());
        };
        let parsed = match field {
            serde_json::Value::Array(_) => serde_json::from_value::<Vec<Self>>(field.clone()),
            _ => serde_json::from_value::<Self>(field.clone()).map(|m| vec![m]),
        };
        parsed.map_err(|e| {
            StoreError::invalid(
                "metric",
                format!("a node's `metric` is {{\"name\", \"value\", \"mode\"?, \"note\"?}} or a list of them: {e}"),
            )
        })
    }

    /// The report of this metric of `role_id`, recorded by episode
    /// `episode_id` (its id `<episode>:<metric>`: recording the episode's
    /// metrics again counts them once).
    pub fn report(&self, role_id: &str, episode_id: &str) -> MetricReport {
        let mut report = MetricReport::add(role_id, self.name.clone(), self.value)
            .id(format!("{episode_id}:{}", self.name))
            .episode(episode_id)
            .note(self.note.clone());
        report.mode = self.mode;
        report
    }
}

/// The checks of a report about to be written: bounded labels, a finite
/// value, a bounded note.
pub fn validate_metric_report(r: &MetricReport) -> Result<(), StoreError> {
    if !r.id.is_empty() {
        super::validate_record_id(&r.id)?;
    }
    for (field, value) in [("role_id", &r.role_id), ("metric", &r.metric)] {
        if value.trim().is_empty() {
            return Err(StoreError::invalid(field, "must not be empty"));
        }
        super::check_label(field, value)?;
    }
    if !r.value.is_finite() {
        return Err(StoreError::invalid("value", "must be a finite number"));
    }
    super::check_opt_label("episode_id", r.episode_id.as_deref())?;
    check_reason("note", &r.note)?;
    super::check_meta(&r.meta, "", "", &[])
}

/// A metric's value as its reports left it: the stream's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MetricValue {
    /// The sum of the `add`s since the last `set`, plus that `set`'s value.
    pub value: f64,
    /// Whether a `set` report was made (then `value` is absolute; before,
    /// it is relative to each key result's baseline).
    pub set: bool,
    /// How many reports (the last one's `seq`).
    pub reports: u64,
    /// When the last one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
}

/// The refusal of a report whose running total would leave the range of a
/// 64-bit float: the stream's state refuses it (a conflict), not the value.
pub fn total_out_of_range() -> StoreError {
    StoreError::conflict("value: the metric's total would leave the range of a number")
}

impl MetricValue {
    /// The state after `report` (made at `at`): what the store writes as
    /// the report's `seq`, `total` and creation time (`updated_at`: `at`,
    /// or a microsecond after the previous report when the clock says
    /// otherwise, so that a stream's reports are in time order as they are
    /// in `seq` order, however they raced to the stream's lock).
    #[must_use]
    pub fn apply(self, mode: MetricMode, value: f64, at: DateTime<Utc>) -> Self {
        let (value, set) = match mode {
            MetricMode::Add => (self.value + value, self.set),
            MetricMode::Set => (value, true),
        };
        let at = match self.updated_at {
            Some(last) if last >= at => last + chrono::TimeDelta::microseconds(1),
            _ => at,
        };
        Self {
            value,
            set,
            reports: self.reports + 1,
            updated_at: Some(at),
        }
    }

    /// The current value of a key result measured by this metric: its
    /// baseline plus the `add`s until a `set`, then absolute.
    pub fn current(&self, key_result: &KeyResult) -> f64 {
        if self.set {
            self.value
        } else {
            key_result.baseline + self.value
        }
    }
}

/// Where one key result stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KeyResultProgress {
    /// The key result.
    pub key_result: KeyResult,
    /// Its metric's current value ([`MetricValue::current`]).
    pub current: f64,
    /// How far towards the target, `0..=1` ([`KeyResult::progress`]).
    pub progress: f64,
    /// How many reports moved it.
    pub reports: u64,
    /// When the last one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Where a goal stands: each key result, and the mean of their progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GoalProgress {
    /// The goal.
    pub goal: Goal,
    /// Its key results, in the objective's order.
    pub key_results: Vec<KeyResultProgress>,
    /// The mean of their progress, `0..=1`.
    pub progress: f64,
}

impl GoalProgress {
    /// The progress of `goal` given its metrics' values (`value_of` answers
    /// for a metric name; a metric never reported is at its baseline).
    pub fn of(goal: Goal, value_of: impl Fn(&str) -> Option<MetricValue>) -> Self {
        let key_results: Vec<KeyResultProgress> = goal
            .objective
            .key_results
            .iter()
            .map(|kr| {
                let value = value_of(&kr.metric).unwrap_or_default();
                let current = value.current(kr);
                KeyResultProgress {
                    key_result: kr.clone(),
                    current,
                    progress: kr.progress(current),
                    reports: value.reports,
                    updated_at: value.updated_at,
                }
            })
            .collect();
        let progress = if key_results.is_empty() {
            0.0
        } else {
            key_results.iter().map(|k| k.progress).sum::<f64>() / key_results.len() as f64
        };
        Self {
            goal,
            key_results,
            progress,
        }
    }
}

/// Goals, their decomposition, daily priorities and metric reports. Every
/// backend enforces the caller-context rules of the module documentation
/// of [`RecordStore`](crate::RecordStore) (tenant, namespace, project,
/// owner) and audits every write.
#[async_trait]
pub trait GoalStore: Send + Sync {
    /// Put an objective: create its goal in `ctx`'s namespace (or the one
    /// it names, with the write right), or, when a goal with its id exists
    /// and `ctx` may change it, revise it (a new version when the objective
    /// changed; the same objective again changes nothing). A goal with the
    /// id that `ctx` may not read is [`StoreError::Conflict`].
    async fn put(&self, ctx: &CallerContext, goal: Goal) -> Result<Goal, StoreError>;

    /// The goal `id`, when `ctx` may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Goal>, StoreError>;

    /// Readable goals matching `query`, in id order, a page at a time.
    async fn list(&self, ctx: &CallerContext, query: &GoalQuery) -> Result<Page<Goal>, StoreError>;

    /// Store the decomposition of goal `id` as it was at `fingerprint`
    /// (atomically, see [`Goal::decompose_as`]): the first decomposition
    /// of an objective stays, so re-running one on an unchanged objective
    /// returns the goal with its first initiatives.
    async fn decompose(
        &self,
        ctx: &CallerContext,
        id: &str,
        fingerprint: &str,
        initiatives: Vec<Initiative>,
    ) -> Result<Goal, StoreError>;

    /// Move initiative `initiative` of goal `id` (see
    /// [`Goal::update_initiative_as`]): what a role does as it works or
    /// delegates one, and what a person does to drop or reopen one.
    /// Returns the goal.
    async fn update_initiative(
        &self,
        ctx: &CallerContext,
        id: &str,
        initiative: &str,
        update: InitiativeUpdate,
    ) -> Result<Goal, StoreError>;

    /// Put a role's priorities of a day (replacing that day's, when `ctx`
    /// may change them).
    async fn put_priorities(
        &self,
        ctx: &CallerContext,
        priorities: Priorities,
    ) -> Result<Priorities, StoreError>;

    /// `role_id`'s latest readable priorities on or before `day`.
    async fn priorities(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        day: NaiveDate,
    ) -> Result<Option<Priorities>, StoreError>;

    /// Report a metric (placed like a new record: the write right in its
    /// namespace); returns the report with its `seq` and `total`. Atomic:
    /// concurrent reports each count once. Reporting again with the id of
    /// an existing report returns it when it reports the same thing, else
    /// [`StoreError::Conflict`].
    async fn report(
        &self,
        ctx: &CallerContext,
        report: MetricReport,
    ) -> Result<MetricReport, StoreError>;

    /// Where the goal `id` stands, when `ctx` may read it: computed from
    /// its metrics' values, no model involved.
    async fn progress(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<GoalProgress>, StoreError>;

    /// A role's readable metric reports matching `query`, oldest first, a
    /// page at a time (audited as a search).
    async fn reports(
        &self,
        ctx: &CallerContext,
        query: &ReportQuery,
    ) -> Result<Page<MetricReport>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use proptest::prelude::*;

    /// A report's time follows the one before it in the stream, whatever
    /// time it was stamped with before the stream's lock.
    #[test]
    fn a_streams_times_follow_its_order() {
        let t0 = DateTime::from_timestamp_micros(1_790_000_000_000_000).unwrap();
        let first = MetricValue::default().apply(MetricMode::Add, 1.0, t0);
        assert_eq!(first.updated_at, Some(t0));
        let late = first.apply(MetricMode::Add, 1.0, t0 - Duration::seconds(1));
        assert_eq!(late.updated_at, Some(t0 + Duration::microseconds(1)));
        let same = late.apply(MetricMode::Add, 1.0, t0 + Duration::microseconds(1));
        assert_eq!(same.updated_at, Some(t0 + Duration::microseconds(2)));
        let later = same.apply(MetricMode::Set, 5.0, t0 + Duration::seconds(1));
        assert_eq!(later.updated_at, Some(t0 + Duration::seconds(1)));
        assert_eq!((later.reports, later.value), (4, 5.0));
    }

    fn objective() -> Objective {
        Objective {
            id: "pipeline-q4".into(),
            owner: "cro".into(),
            title: "Pipeline $2M this quarter".into(),
            due: NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
            key_results: vec![KeyResult {
                id: "value".into(),
                metric: "pipeline_usd".into(),
                baseline: 0.0,
                target: 2_000_000.0,
                unit: "USD".into(),
                due: None,
            }],
        }
    }

    #[test]
    fn a_goal_is_revised_only_when_its_objective_changes() {
        let mut goal = Goal::new(objective());
        goal.prepare_new();
        let now = Utc::now();
        assert_eq!(goal.version, 1);
        assert!(goal.revised(&objective(), now).is_none());
        let mut changed = objective();
        changed.key_results[0].target = 3_000_000.0;
        let next = goal.revised(&changed, now).unwrap();
        assert_eq!(next.version, 2);
        assert_ne!(next.fingerprint, goal.fingerprint);
        assert_eq!(next.transition_detail(&goal)["transition"], "revise");
    }

    #[test]
    fn a_decomposition_is_kept_once_per_objective() {
        let ctx = CallerContext::agent("cro");
        let mut goal = Goal::new(objective());
        goal.prepare_new();
        goal.meta.owner = ctx.owner_key();
        let now = Utc::now();
        let initiatives = vec![Initiative::new(
            "Qualify inbound leads within a day",
            &["value"],
        )];
        let fp = goal.fingerprint.clone();
        let done = goal
            .decompose_as(&ctx, &fp, &initiatives, now)
            .unwrap()
            .unwrap();
        assert!(done.is_decomposed());
        assert_eq!(done.transition_detail(&goal)["transition"], "decompose");
        assert!(
            done.decompose_as(&ctx, &fp, &initiatives, now)
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            done.decompose_as(&ctx, "stale", &initiatives, now),
            Err(StoreError::Conflict { .. })
        ));
        let bad = vec![Initiative {
            key_results: vec!["nope".into()],
            ..initiatives[0].clone()
        }];
        assert!(matches!(
            goal.decompose_as(&ctx, &fp, &bad, now),
            Err(StoreError::Inconsistent { .. })
        ));
        let other = CallerContext::agent("cmo");
        assert!(goal.decompose_as(&other, &fp, &initiatives, now).is_err());
        // An initiative moves: audited as its own transition.
        assert_eq!(done.initiatives[0].id, "i1");
        let update = InitiativeUpdate::new(InitiativeStatus::Working, "on it");
        let moved = done
            .update_initiative_as(&ctx, "i1", &update, now)
            .unwrap()
            .unwrap();
        let detail = moved.transition_detail(&done);
        assert_eq!(
            (
                &detail["transition"],
                &detail["initiative"],
                &detail["status"]
            ),
            (&"initiative".into(), &"i1".into(), &"working".into())
        );
        assert!(
            moved
                .update_initiative_as(&ctx, "i1", &update, now)
                .unwrap()
                .is_none()
        );
        assert!(
            done.update_initiative_as(&other, "i1", &update, now)
                .is_err()
        );
    }

    proptest! {
        /// Whatever ids a decomposition gives, the stored ones are unique
        /// and keep every id given.
        #[test]
        fn initiative_ids_are_unique(given in proptest::collection::vec(proptest::option::of(1u8..6), 1..8)) {
            let list: Vec<Initiative> = given
                .iter()
                .map(|g| {
                    let i = Initiative::new("t", &[]);
                    match g { Some(n) => i.id(format!("i{n}")), None => i }
                })
                .collect();
            // Ids given twice are refused before numbering; only distinct ones reach it.
            let mut seen = std::collections::HashSet::new();
            let list: Vec<Initiative> = list.into_iter().filter(|i| i.id.is_empty() || seen.insert(i.id.clone())).collect();
            let out = numbered(&list);
            let ids: std::collections::HashSet<&str> = out.iter().map(|i| i.id.as_str()).collect();
            prop_assert_eq!(ids.len(), out.len());
            for (before, after) in list.iter().zip(&out) {
                prop_assert!(before.id.is_empty() || before.id == after.id);
            }
        }
    }

    #[test]
    fn metric_values_add_until_set() {
        let kr = &objective().key_results[0];
        let t = Utc::now();
        let v = MetricValue::default()
            .apply(MetricMode::Add, 40_000.0, t)
            .apply(MetricMode::Add, 60_000.0, t + Duration::seconds(1));
        assert_eq!((v.current(kr), v.reports), (100_000.0, 2));
        let v = v
            .apply(MetricMode::Set, 500_000.0, t)
            .apply(MetricMode::Add, 1.0, t);
        assert_eq!((v.current(kr), v.reports, v.set), (500_001.0, 4, true));
        let progress = GoalProgress::of(Goal::new(objective()), |_| Some(v));
        assert!((progress.progress - 0.2500005).abs() < 1e-9);
    }

    #[test]
    fn reports_and_priorities_are_checked() {
        assert!(validate_metric_report(&MetricReport::add("cro", "pipeline_usd", 1.0)).is_ok());
        assert!(validate_metric_report(&MetricReport::add("cro", "", 1.0)).is_err());
        assert!(validate_metric_report(&MetricReport::add("cro", "m", f64::NAN)).is_err());
        assert!(validate_metric_report(&MetricReport::add("cro", "m", 1.0).id("a/b")).is_err());
        let day = NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
        let item = Priority {
            title: "Call Acme".into(),
            reason: "largest open deal".into(),
            goal_id: Some("pipeline-q4".into()),
            action: None,
        };
        let p = Priorities::new("cro", day, vec![item.clone()]);
        assert_eq!(p.id, "cro:2026-11-26");
        assert!(validate_priorities(&p).is_ok());
        assert!(validate_priorities(&Priorities::new("cro", day, vec![])).is_err());
        assert!(validate_priorities(&Priorities::new("cro", day, vec![item; 11])).is_err());
    }

    #[test]
    fn node_outputs_report_metrics() {
        let none = MetricOutput::all_in(&serde_json::json!({"qualified": true})).unwrap();
        assert!(none.is_empty());
        let one = MetricOutput::all_in(&serde_json::json!({
            "metric": {"name": "pipeline_usd", "value": 40000}
        }))
        .unwrap();
        let report = one[0].report("cro", "ep_1");
        assert_eq!(
            (report.id.as_str(), report.value, report.mode),
            ("ep_1:pipeline_usd", 40000.0, MetricMode::Add)
        );
        assert_eq!(report.episode_id.as_deref(), Some("ep_1"));
        let two = MetricOutput::all_in(&serde_json::json!({"metric": [
            {"name": "a", "value": 1}, {"name": "b", "value": 2, "mode": "set"}
        ]}))
        .unwrap();
        assert_eq!(two[1].mode, MetricMode::Set);
        for bad in [
            serde_json::json!({"metric": 3}),
            serde_json::json!({"metric": {"name": "a"}}),
            serde_json::json!({"metric": {"name": "a", "value": 1, "extra": 1}}),
        ] {
            assert!(MetricOutput::all_in(&bad).is_err(), "{bad}");
        }
    }

    proptest! {
        /// Replaying reports in order gives the value the store wrote: the
        /// sum of adds since the last set (plus it), whatever the order of
        /// modes.
        #[test]
        fn replaying_reports_is_deterministic(
            reports in proptest::collection::vec((any::<bool>(), -1000i32..1000), 0..50)
        ) {
            let t = Utc::now();
            let mut state = MetricValue::default();
            for (set, v) in &reports {
                let mode = if *set { MetricMode::Set } else { MetricMode::Add };
                state = state.apply(mode, f64::from(*v), t);
            }
            let last_set = reports.iter().rposition(|(set, _)| *set);
            let expected: f64 = match last_set {
                Some(i) => reports[i..].iter().map(|(_, v)| f64::from(*v)).sum(),
                None => reports.iter().map(|(_, v)| f64::from(*v)).sum(),
            };
            prop_assert_eq!(state.value, expected);
            prop_assert_eq!(state.reports, reports.len() as u64);
            prop_assert_eq!(state.set, last_set.is_some());
        }
    }
}
