//! Working memory for asynchronous workflows: sessions, plans, task and plan
//! contexts, and plan-scoped key/value state with atomic updates.
//!
//! A *session* groups related plans (a conversation); a *plan* is one goal
//! being executed, optionally in a session and optionally a sub-plan of
//! another; a *task context* is what a worker saves when it delegates, found
//! again by any of its sub-task ids; a *plan context* is a planner's state
//! machine, found again by any of its correlation ids; *plan state* is
//! key/value working memory scoped to one plan.
//!
//! Access follows the one rule of the contract (see [`read_allowed`](super::read_allowed)):
//! sessions, plans and task contexts carry [`RecordMeta`] set by the store
//! from the caller (tenant, project, owner); a plan's context and its state
//! are governed by the plan (read: the plan is readable; write: the plan is
//! changeable). Agents that work for one person share that person's plans by
//! acting as that principal.
//!
//! No lost update: [`PlanStateStore::append_state`] and
//! [`PlanStateStore::increment_state`] are atomic in the store, and every
//! entry has a version that [`Expect::Version`] checks (a stale write is a
//! [`StoreError::Conflict`] and changes nothing).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallerContext, RecordMeta, StoreError, check_label, check_tags};

crate::vocabulary! {
    /// Lifecycle of a [`Plan`].
    #[derive(Default)]
    pub enum PlanStatus {
        /// Being worked on (the default).
        #[default]
        Active = "active",
        /// Finished successfully.
        Completed = "completed",
        /// Finished unsuccessfully.
        Failed = "failed",
        /// Waiting; may be resumed.
        Paused = "paused",
    }
}

impl std::str::FromStr for PlanStatus {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                StoreError::invalid(
                    "status",
                    format!("`{s}` is not a plan status (active, completed, failed, paused)"),
                )
            })
    }
}

/// A conversation: a group of related plans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Session {
    /// Unique id within the tenant (generated).
    pub id: String,
    /// Governance metadata (tenant, project and owner from the caller).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// A name for people.
    pub name: Option<String>,
    /// Free metadata (a JSON object).
    pub metadata: Value,
    /// How many plans belong to it (computed by the store).
    pub plan_count: u64,
    /// The latest of its creation and any change to one of its plans.
    pub last_activity: DateTime<Utc>,
}

/// What [`WorkingStore::create_session`](SessionStore::create_session) needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct NewSession {
    /// An id to use (generated when `None`).
    pub id: Option<String>,
    /// A name for people.
    pub name: Option<String>,
    /// Free metadata; `null` means an empty object.
    pub metadata: Value,
}

/// One goal being executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Plan {
    /// Unique id within the tenant.
    pub id: String,
    /// Governance metadata (tenant, project and owner from the caller).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The event that set the goal.
    pub goal_event: String,
    /// The goal's data.
    pub goal_data: Value,
    /// The event to answer with when done.
    pub response_event: String,
    /// Lifecycle status.
    pub status: PlanStatus,
    /// The session it belongs to.
    pub session_id: Option<String>,
    /// The plan it is a sub-plan of.
    pub parent_plan_id: Option<String>,
}

/// What [`WorkingStore::create_plan`](PlanStore::create_plan) needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct NewPlan {
    /// An id to use (generated when `None`).
    pub id: Option<String>,
    /// The event that set the goal (required).
    pub goal_event: String,
    /// The goal's data; `null` means an empty object.
    pub goal_data: Value,
    /// The event to answer with when done.
    pub response_event: String,
    /// An existing session of the caller's.
    pub session_id: Option<String>,
    /// An existing plan this one is a sub-plan of.
    pub parent_plan_id: Option<String>,
}

/// A change to a plan: the fields given are replaced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct PlanUpdate {
    /// New status.
    pub status: Option<PlanStatus>,
    /// New goal data.
    pub goal_data: Option<Value>,
    /// New response event.
    pub response_event: Option<String>,
}

/// Filters of [`WorkingStore::list_plans`](PlanStore::list_plans). Results are newest first
/// (creation time, then id), a page at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct PlanQuery {
    /// Only plans in this status.
    pub status: Option<PlanStatus>,
    /// Only plans of this session.
    pub session_id: Option<String>,
    /// Only plans last changed before this time (for cleanup).
    pub older_than: Option<DateTime<Utc>>,
    /// At most this many (default 20).
    pub limit: usize,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
}

impl Default for PlanQuery {
    fn default() -> Self {
        Self {
            status: None,
            session_id: None,
            older_than: None,
            limit: 20,
            cursor: None,
        }
    }
}

/// Filters of [`WorkingStore::list_sessions`](SessionStore::list_sessions): newest first, a page at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct SessionQuery {
    /// Only sessions whose last activity is before this time (for cleanup).
    pub older_than: Option<DateTime<Utc>>,
    /// At most this many (default 20).
    pub limit: usize,
    /// Continue after the page that returned this cursor.
    pub cursor: Option<String>,
}

impl Default for SessionQuery {
    fn default() -> Self {
        Self {
            older_than: None,
            limit: 20,
            cursor: None,
        }
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Page<T> {
    /// The items, in order.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl<T: super::Listed> Page<T> {
    /// The page of `fetched`, in list order, of which a store fetched one
    /// more than `limit` to know whether another page follows.
    pub fn of(mut fetched: Vec<T>, limit: usize) -> Self {
        let next_cursor = if fetched.len() > limit {
            fetched.truncate(limit);
            fetched.last().map(super::Listed::cursor)
        } else {
            None
        };
        Page {
            items: fetched,
            next_cursor,
        }
    }
}

impl<T> Page<T> {
    /// Every item of every page, in order: `fetch` is asked for the first
    /// page (cursor `None`), then for the page after each `next_cursor`,
    /// until a page has none.
    pub async fn all<E, F, Fut>(mut fetch: F) -> Result<Vec<T>, E>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<Page<T>, E>>,
    {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = fetch(cursor).await?;
            out.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}

/// The check of a plan-state key: not empty, a short label.
pub fn check_state_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::invalid("key", "must not be empty"));
    }
    check_label("key", key)
}

/// Check sub-task or correlation ids (short labels, none empty) and put
/// them in order without duplicates, as every backend stores them.
pub fn normalize_ids(field: &str, ids: &mut Vec<String>) -> Result<(), StoreError> {
    check_tags(field, ids)?;
    if ids.iter().any(String::is_empty) {
        return Err(StoreError::invalid(field, "an id is empty"));
    }
    ids.sort();
    ids.dedup();
    Ok(())
}

/// The time a store stamps a write with: now, to the microsecond (what
/// PostgreSQL keeps), so records compare equal on every backend.
pub fn store_time() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

/// What deleting a session did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionDeleted {
    /// Plans of the session, kept but detached (their `session_id` cleared).
    pub plans_detached: u64,
}

/// What deleting a plan did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PlanDeleted {
    /// Plan-state keys deleted with it.
    pub state_keys: u64,
    /// Whether its plan context was deleted with it.
    pub context: bool,
    /// Sub-plans kept but detached (their `parent_plan_id` cleared).
    pub subplans_detached: u64,
}

/// What a worker saved when it delegated: found again by its own id or by
/// any of its sub-task ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskContext {
    /// The task's id (unique within the tenant).
    pub task_id: String,
    /// Governance metadata (tenant, project and owner from the caller).
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The plan it works for, when any (must exist).
    pub plan_id: Option<String>,
    /// The saved context.
    pub context: Value,
    /// Ids of the sub-tasks it delegated (each belongs to one task).
    pub sub_task_ids: Vec<String>,
}

impl TaskContext {
    /// A task context with governance defaults.
    pub fn new(task_id: impl Into<String>, context: Value) -> Self {
        Self {
            task_id: task_id.into(),
            meta: RecordMeta::default(),
            plan_id: None,
            context,
            sub_task_ids: Vec::new(),
        }
    }
}

/// A planner's state machine for one plan: found again by the plan id or
/// by any of its correlation ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PlanContext {
    /// The plan (must exist; the context is governed by it).
    pub plan_id: String,
    /// The plan's session, when any.
    pub session_id: Option<String>,
    /// The saved context.
    pub context: Value,
    /// Correlation ids (each belongs to one plan).
    pub correlation_ids: Vec<String>,
    /// When it was last saved (set by the store).
    pub updated_at: DateTime<Utc>,
    /// Its version: 1 when first saved, one more at every save (set by the
    /// store).
    #[serde(default)]
    pub version: u64,
    /// Save only if the stored context is at this version (`0`: only if
    /// there is none); otherwise a [`StoreError::Conflict`] and nothing is
    /// written (optimistic locking). Absent: the save replaces whatever is
    /// there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<u64>,
}

impl PlanContext {
    /// A plan context for `plan_id`.
    pub fn new(plan_id: impl Into<String>, context: Value) -> Self {
        Self {
            plan_id: plan_id.into(),
            session_id: None,
            context,
            correlation_ids: Vec::new(),
            updated_at: Utc::now(),
            version: 0,
            expected_version: None,
        }
    }

    /// Save only if the stored context is at `version` (`0`: only if there
    /// is none).
    #[must_use]
    pub fn expecting(mut self, version: u64) -> Self {
        self.expected_version = Some(version);
        self
    }

    /// `Ok` when the stored context, at version `current` (`None`: there is
    /// none), meets this save's expectation; otherwise the
    /// [`StoreError::Conflict`] every backend reports.
    pub fn check_version(&self, current: Option<u64>) -> Result<(), StoreError> {
        match (self.expected_version, current) {
            (None, _) | (Some(0), None) => Ok(()),
            (Some(v), Some(c)) if v == c => Ok(()),
            (Some(v), current) => Err(StoreError::conflict(format!(
                "the context of plan `{}`: expected {}, found {}",
                self.plan_id,
                if v == 0 {
                    "none".to_owned()
                } else {
                    format!("version {v}")
                },
                current.map_or("none".to_owned(), |c| format!("version {c}"))
            ))),
        }
    }
}

/// One key of a plan's working memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StateEntry {
    /// The plan.
    pub plan_id: String,
    /// The key.
    pub key: String,
    /// The value.
    pub value: Value,
    /// 1 when created, +1 on every change (optimistic locking).
    pub version: u64,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// What a write of plan state expects to find.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Expect {
    /// Anything (last write wins).
    #[default]
    Any,
    /// No entry yet (create only).
    Absent,
    /// The entry at exactly this version (compare-and-set).
    Version(u64),
}

impl Expect {
    /// `Ok` when the entry of `key` in plan `plan_id`, at version `current`
    /// (`None`: no entry), meets this expectation; otherwise the
    /// [`StoreError::Conflict`] every backend reports.
    pub fn check(self, plan_id: &str, key: &str, current: Option<u64>) -> Result<(), StoreError> {
        match (self, current) {
            (Self::Any, _) | (Self::Absent, None) => Ok(()),
            (Self::Version(v), Some(c)) if v == c => Ok(()),
            (expect, current) => Err(StoreError::conflict(format!(
                "plan `{plan_id}` key `{key}`: expected {expect:?}, found {}",
                current.map_or("no entry".to_owned(), |v| format!("version {v}"))
            ))),
        }
    }
}

/// Working memory: sessions, plans, task and plan contexts, plan state,
/// each a capability of its own ([`SessionStore`], [`PlanStore`],
/// [`ContextStore`], [`PlanStateStore`]); a type with all four is a
/// `WorkingStore`.
///
/// Every call takes the caller's [`CallerContext`]; see the module
/// documentation for the access rule. Unknown plans and sessions named in
/// an input are [`StoreError::NotFound`] and nothing is written.
pub trait WorkingStore: SessionStore + PlanStore + ContextStore + PlanStateStore {}
impl<T: SessionStore + PlanStore + ContextStore + PlanStateStore + ?Sized> WorkingStore for T {}

/// Sessions: a conversation or run that plans belong to.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Create a session owned by the caller.
    async fn create_session(
        &self,
        ctx: &CallerContext,
        session: NewSession,
    ) -> Result<Session, StoreError>;

    /// A readable session.
    async fn get_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Session>, StoreError>;

    /// The readable sessions, newest first.
    async fn list_sessions(
        &self,
        ctx: &CallerContext,
        query: &SessionQuery,
    ) -> Result<Page<Session>, StoreError>;

    /// Delete a session the caller may change; its plans are kept, detached.
    async fn delete_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<SessionDeleted, StoreError>;
}

/// Plans: goals with a status, in a tree of sub-plans.
#[async_trait]
pub trait PlanStore: Send + Sync {
    /// Create a plan owned by the caller (status `active`).
    async fn create_plan(&self, ctx: &CallerContext, plan: NewPlan) -> Result<Plan, StoreError>;

    /// A readable plan.
    async fn get_plan(&self, ctx: &CallerContext, id: &str) -> Result<Option<Plan>, StoreError>;

    /// The readable plans matching `query`, newest first.
    async fn list_plans(
        &self,
        ctx: &CallerContext,
        query: &PlanQuery,
    ) -> Result<Page<Plan>, StoreError>;

    /// Change a plan the caller may change.
    async fn update_plan(
        &self,
        ctx: &CallerContext,
        id: &str,
        update: PlanUpdate,
    ) -> Result<Plan, StoreError>;

    /// Delete a plan with its context and state; sub-plans are kept, detached.
    async fn delete_plan(&self, ctx: &CallerContext, id: &str) -> Result<PlanDeleted, StoreError>;
}

/// Task and plan contexts: what a task delegated (and to which sub-tasks),
/// and a plan's correlated context.
#[async_trait]
pub trait ContextStore: Send + Sync {
    /// Save (insert or replace) a task context. A sub-task id that belongs
    /// to another task is a [`StoreError::Conflict`].
    async fn store_task_context(
        &self,
        ctx: &CallerContext,
        task: TaskContext,
    ) -> Result<TaskContext, StoreError>;

    /// A readable task context.
    async fn get_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError>;

    /// The readable task that delegated `sub_task_id` (an index lookup).
    async fn get_task_by_subtask(
        &self,
        ctx: &CallerContext,
        sub_task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError>;

    /// Delete a task context; `false` when there was none.
    async fn delete_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<bool, StoreError>;

    /// Save (insert or replace) the context of a plan the caller may change.
    /// A correlation id that belongs to another plan is a [`StoreError::Conflict`].
    async fn store_plan_context(
        &self,
        ctx: &CallerContext,
        context: PlanContext,
    ) -> Result<PlanContext, StoreError>;

    /// The context of a readable plan.
    async fn get_plan_context(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Option<PlanContext>, StoreError>;

    /// The context of the readable plan that owns `correlation_id` (an index lookup).
    async fn get_plan_by_correlation(
        &self,
        ctx: &CallerContext,
        correlation_id: &str,
    ) -> Result<Option<PlanContext>, StoreError>;
}

/// Plan state: a plan's keys and values, with versions and atomic appends
/// and increments (the seed's working memory).
#[async_trait]
pub trait PlanStateStore: Send + Sync {
    /// Set `key` of a plan's state to `value` if `expect` holds; a stale
    /// expectation is [`StoreError::Conflict`] and changes nothing.
    async fn set_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        value: Value,
        expect: Expect,
    ) -> Result<StateEntry, StoreError>;

    /// One key of a readable plan's state.
    async fn get_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<Option<StateEntry>, StoreError>;

    /// Every key of a readable plan's state, by key.
    async fn list_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Vec<StateEntry>, StoreError>;

    /// Atomically append `item` to the array at `key` (created as `[item]`
    /// when absent). A value that is not an array is [`StoreError::InvalidInput`].
    /// Appends do not read the value back, so they cost the same whatever
    /// its length, and concurrent appends to one key do not wait for each
    /// other (read the value with [`PlanStateStore::get_state`]).
    async fn append_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        item: Value,
    ) -> Result<(), StoreError>;

    /// Atomically add `by` to the integer at `key` (created as `by` when
    /// absent). A value that is not an integer, or an overflow, is
    /// [`StoreError::InvalidInput`].
    async fn increment_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        by: i64,
    ) -> Result<StateEntry, StoreError>;

    /// Delete one key; `false` when it did not exist.
    async fn delete_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<bool, StoreError>;

    /// Delete every key of a plan's state; returns how many went.
    async fn clear_state(&self, ctx: &CallerContext, plan_id: &str) -> Result<u64, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_parse_and_print() {
        for s in PlanStatus::ALL {
            assert_eq!(s.as_str().parse::<PlanStatus>().unwrap(), s);
        }
        assert!("running".parse::<PlanStatus>().is_err());
        assert_eq!(PlanStatus::default(), PlanStatus::Active);
    }

    #[test]
    fn expectations_are_checked_against_the_current_version() {
        assert!(Expect::Any.check("p", "k", None).is_ok());
        assert!(Expect::Any.check("p", "k", Some(3)).is_ok());
        assert!(Expect::Absent.check("p", "k", None).is_ok());
        assert!(Expect::Version(3).check("p", "k", Some(3)).is_ok());
        let stale = Expect::Version(2).check("p", "k", Some(3)).unwrap_err();
        assert_eq!(
            stale.to_string(),
            "conflict: plan `p` key `k`: expected Version(2), found version 3"
        );
        assert!(matches!(
            Expect::Absent.check("p", "k", Some(1)),
            Err(StoreError::Conflict { .. })
        ));
        assert!(Expect::Version(1).check("p", "k", None).is_err());
    }
}
