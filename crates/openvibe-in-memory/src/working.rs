//! In-memory working memory ([`WorkingStore`](openvibe_protocols::WorkingStore)) and, over the same state,
//! semantic memory (see `semantic.rs`): one table set per tenant behind one
//! lock, so that every read-check-modify (atomic append and increment,
//! compare-and-set, cascades) happens under the write lock and no update is
//! ever lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::audit::InMemoryAuditLog;
use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, ContextStore, Embedder, Expect, Knowledge, NewPlan,
    NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanStateStore, PlanStore,
    PlanUpdate, RecordMeta, Session, SessionDeleted, SessionQuery, SessionStore, StateEntry,
    StoreError, TaskContext, page_cursor, parse_cursor, store_time, validate_record_id,
};
use openvibe_protocols::{
    check_json, check_label, check_opt_label, check_state_key, json_object, normalize_ids,
};
use openvibe_retrieval::VectorSearch;
use serde_json::Value;

/// The default embedding model of a store without an embedder: what
/// `all-MiniLM-L6-v2` produces (callers pass vectors of that size).
pub const DEFAULT_EMBEDDING_MODEL: (&str, usize) = ("all-MiniLM-L6-v2", 384);

/// The working and semantic records of one tenant.
#[derive(Default)]
pub(crate) struct Tenant {
    pub sessions: HashMap<String, Session>,
    pub plans: HashMap<String, Plan>,
    pub tasks: HashMap<String, TaskContext>,
    /// Sub-task id → task id.
    pub subtasks: HashMap<String, String>,
    pub plan_contexts: HashMap<String, PlanContext>,
    /// Correlation id → plan id.
    pub correlations: HashMap<String, String>,
    /// Plan id → key → entry.
    pub state: HashMap<String, BTreeMap<String, StateEntry>>,
    /// By id and by row: the indexes file rows, so a search checks each
    /// candidate at its row.
    pub knowledge: crate::rows::Rows<Knowledge>,
    /// Full-text index of the knowledge's content.
    pub knowledge_text: crate::ranked::TextIndex,
    /// The knowledge's embeddings, one contiguous row each, filed by
    /// reader as the postings are.
    pub knowledge_vectors: crate::ranked::ReaderVectors,
    /// (owner, external id) → knowledge id.
    pub by_external: HashMap<(String, String), String>,
    /// (owner, content hash) → knowledge id, for knowledge without an external id.
    pub by_hash: HashMap<(String, String), String>,
}

/// In-memory [`WorkingStore`](openvibe_protocols::WorkingStore) and
/// [`KnowledgeStore`](openvibe_protocols::KnowledgeStore) (BM25 over
/// postings per reader, HNSW or exact cosine search), the embedded default.
pub struct InMemoryWorkingStore {
    tenants: RwLock<HashMap<String, Tenant>>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) model: String,
    pub(crate) dimensions: usize,
    /// Where changes and knowledge searches are audited.
    pub(crate) audit: Arc<InMemoryAuditLog>,
    /// How knowledge's vectors are searched.
    pub(crate) vector_search: VectorSearch,
}

impl Default for InMemoryWorkingStore {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for InMemoryWorkingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryWorkingStore")
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("embedder", &self.embedder.is_some())
            .finish_non_exhaustive()
    }
}

impl InMemoryWorkingStore {
    /// Audit into `audit` (shared with other stores) instead of a trail of its own.
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.audit = audit;
        self
    }

    /// Append the audit entry of `operation` on record `id` of `kind`.
    pub(crate) fn audit_change(
        &self,
        ctx: &CallerContext,
        operation: AuditOp,
        kind: &str,
        id: &str,
        meta: &RecordMeta,
    ) {
        self.audit
            .record(AuditEntry::change(ctx, operation, kind, id, meta));
    }

    /// An empty store without an embedder: knowledge must come with
    /// embeddings of [`DEFAULT_EMBEDDING_MODEL`]'s size.
    pub fn new() -> Self {
        Self {
            tenants: RwLock::new(HashMap::new()),
            embedder: None,
            model: DEFAULT_EMBEDDING_MODEL.0.to_owned(),
            dimensions: DEFAULT_EMBEDDING_MODEL.1,
            audit: Arc::default(),
            vector_search: VectorSearch::default(),
        }
    }

    /// Search knowledge's vectors per `search`: the default
    /// ([`VectorSearch::APPROXIMATE`]) walks an HNSW graph once a tenant
    /// holds 4,096 vectors, with the access rule inside the walk;
    /// [`VectorSearch::EXACT`] always scans every vector. Set it before the
    /// first write: a tenant's index keeps the search it was made with.
    #[must_use]
    pub fn with_vector_search(mut self, search: VectorSearch) -> Self {
        self.vector_search = search;
        self
    }

    /// Embed knowledge (and text queries) with `embedder`; its model and
    /// dimension become the store's.
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.model = embedder.model_id().to_owned();
        self.dimensions = embedder.dimensions();
        self.embedder = Some(embedder);
        self
    }

    /// How much knowledge `tenant` holds.
    pub(crate) fn knowledge_count(&self, tenant: &str) -> Result<u64, StoreError> {
        Ok(self
            .read()?
            .get(tenant)
            .map_or(0, |t| t.knowledge.len() as u64))
    }

    pub(crate) fn read(&self) -> Result<RwLockReadGuard<'_, HashMap<String, Tenant>>, StoreError> {
        self.tenants.read().map_err(|_| poisoned())
    }

    pub(crate) fn write(
        &self,
    ) -> Result<RwLockWriteGuard<'_, HashMap<String, Tenant>>, StoreError> {
        self.tenants.write().map_err(|_| poisoned())
    }

    /// A `tracing` span for one store operation.
    pub(crate) fn span(op: &'static str, ctx: &CallerContext) -> tracing::span::EnteredSpan {
        crate::span::store_span("working", op, ctx)
    }
}

fn poisoned() -> StoreError {
    StoreError::backend(
        "the in-memory working store's lock is poisoned (a writer panicked); recreate the store",
    )
}

pub(crate) fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}

/// Governance metadata of a new record written by `ctx`.
/// (placed by [`CallerContext::placement`] in its default namespace;
/// `operation` names the write in a refusal).
pub(crate) fn new_meta(ctx: &CallerContext, operation: &str) -> Result<RecordMeta, StoreError> {
    let placement = ctx.placement("", operation)?;
    let now = store_time();
    Ok(RecordMeta {
        tenant_id: ctx.tenant_id().to_owned(),
        namespace: placement.namespace,
        project_id: placement.project_id,
        owner: ctx.owner_key(),
        created_at: now,
        updated_at: now,
        ..RecordMeta::default()
    })
}

fn new_id(given: Option<String>) -> Result<String, StoreError> {
    let id = given.unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    validate_record_id(&id)?;
    Ok(id)
}

impl Tenant {
    /// A plan `ctx` can read, else `NotFound`.
    pub(crate) fn readable_plan(&self, ctx: &CallerContext, id: &str) -> Result<&Plan, StoreError> {
        self.plans
            .get(id)
            .filter(|p| ctx.can_read(&p.meta, ""))
            .ok_or_else(|| not_found("plan", id))
    }

    /// A plan `ctx` can change: `NotFound` when unreadable, `Unauthorized`
    /// when readable but not changeable.
    fn changeable_plan(&self, ctx: &CallerContext, id: &str) -> Result<&Plan, StoreError> {
        self.plan_for(ctx, id, Change::Write)
    }

    /// A plan `ctx` may make `change` to (see [`Tenant::changeable_plan`]).
    fn plan_for(&self, ctx: &CallerContext, id: &str, change: Change) -> Result<&Plan, StoreError> {
        let plan = self.readable_plan(ctx, id)?;
        let verb = match change {
            Change::Write => "change",
            Change::Delete => "delete",
        };
        ctx.require_change(&plan.meta, change, format!("{verb} plan {id}"))?;
        Ok(plan)
    }

    /// Remove session `id` (whoever may): its plans, plan contexts and
    /// knowledge are detached from it. Its meta and how many plans were
    /// detached, or `None` when there is no such session.
    fn remove_session(&mut self, id: &str) -> Option<(RecordMeta, u64)> {
        let session = self.sessions.remove(id)?;
        let mut detached = 0;
        for plan in self.plans.values_mut() {
            if plan.session_id.as_deref() == Some(id) {
                plan.session_id = None;
                detached += 1;
            }
        }
        for context in self.plan_contexts.values_mut() {
            if context.session_id.as_deref() == Some(id) {
                context.session_id = None;
            }
        }
        self.knowledge.with_each_mut(|all| {
            for (_, k) in all {
                if k.session_id.as_deref() == Some(id) {
                    k.session_id = None;
                }
            }
        });
        Some((session.meta, detached))
    }

    /// Remove plan `id` (whoever may) with its state and context; its
    /// session, subplans, tasks and knowledge let go of it. Its meta and
    /// what went, or `None` when there is no such plan.
    fn remove_plan(&mut self, id: &str) -> Option<(RecordMeta, PlanDeleted)> {
        let plan = self.plans.remove(id)?;
        if let Some(s) = plan
            .session_id
            .as_deref()
            .and_then(|s| self.sessions.get_mut(s))
        {
            s.plan_count = s.plan_count.saturating_sub(1);
        }
        self.touch_session(plan.session_id.as_deref(), store_time());
        let state_keys = self.state.remove(id).map_or(0, |m| m.len() as u64);
        let context = self.plan_contexts.remove(id).is_some();
        self.correlations.retain(|_, p| p != id);
        let mut subplans_detached = 0;
        for sub in self.plans.values_mut() {
            if sub.parent_plan_id.as_deref() == Some(id) {
                sub.parent_plan_id = None;
                subplans_detached += 1;
            }
        }
        for task in self.tasks.values_mut() {
            if task.plan_id.as_deref() == Some(id) {
                task.plan_id = None;
            }
        }
        self.knowledge.with_each_mut(|all| {
            for (_, k) in all {
                if k.plan_id.as_deref() == Some(id) {
                    k.plan_id = None;
                }
            }
        });
        Some((
            plan.meta,
            PlanDeleted {
                state_keys,
                context,
                subplans_detached,
            },
        ))
    }

    /// Remove task context `id` (whoever may) and its subtasks' links; its
    /// meta, or `None` when there is no such task.
    fn remove_task(&mut self, id: &str) -> Option<RecordMeta> {
        let task = self.tasks.remove(id)?;
        self.subtasks.retain(|_, t| t != id);
        Some(task.meta)
    }

    /// Remove the `kind` records `ids` (`session`, `plan`, `task_context`)
    /// whoever may: what a sweep does once it has chosen them (an erasure
    /// or a cleanup, checked before). The metas of those that went.
    pub(crate) fn remove_swept(&mut self, kind: &str, ids: &[String]) -> Vec<(String, RecordMeta)> {
        ids.iter()
            .filter_map(|id| {
                let meta = match kind {
                    "session" => self.remove_session(id)?.0,
                    "plan" => self.remove_plan(id)?.0,
                    _ => self.remove_task(id)?,
                };
                Some((id.clone(), meta))
            })
            .collect()
    }

    /// A session `ctx` can read, else `NotFound`.
    pub(crate) fn readable_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<&Session, StoreError> {
        self.sessions
            .get(id)
            .filter(|s| ctx.can_read(&s.meta, ""))
            .ok_or_else(|| not_found("session", id))
    }

    /// Record activity on `session` (a plan of it changed).
    fn touch_session(&mut self, session: Option<&str>, now: chrono::DateTime<chrono::Utc>) {
        if let Some(s) = session.and_then(|id| self.sessions.get_mut(id)) {
            s.last_activity = s.last_activity.max(now);
        }
    }

    fn entry(&mut self, plan_id: &str, key: &str) -> Option<&mut StateEntry> {
        self.state.get_mut(plan_id).and_then(|m| m.get_mut(key))
    }
}

/// Newest first (creation time, then id, descending), after `cursor`, at
/// most `limit`, with the cursor of the next page.
fn page<T: Clone>(
    mut items: Vec<&T>,
    key: impl Fn(&T) -> (i64, &str),
    limit: usize,
    cursor: Option<&str>,
) -> Result<Page<T>, StoreError> {
    let after = cursor.map(parse_cursor).transpose()?;
    items.retain(|item| {
        after
            .as_ref()
            .is_none_or(|(micros, id)| key(item) < (*micros, id.as_str()))
    });
    items.sort_by(|a, b| key(b).cmp(&key(a)));
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = match items.last() {
        Some(last) if more => {
            let (micros, id) = key(last);
            chrono::DateTime::from_timestamp_micros(micros).map(|t| page_cursor(t, id))
        }
        _ => None,
    };
    Ok(Page {
        items: items.into_iter().cloned().collect(),
        next_cursor,
    })
}

fn session_key(s: &Session) -> (i64, &str) {
    (s.meta.created_at.timestamp_micros(), s.id.as_str())
}

fn plan_key(p: &Plan) -> (i64, &str) {
    (p.meta.created_at.timestamp_micros(), p.id.as_str())
}

#[async_trait]
impl SessionStore for InMemoryWorkingStore {
    async fn create_session(
        &self,
        ctx: &CallerContext,
        session: NewSession,
    ) -> Result<Session, StoreError> {
        let _span = Self::span("create_session", ctx);
        let id = new_id(session.id)?;
        check_opt_label("name", session.name.as_deref())?;
        let metadata = json_object("metadata", session.metadata)?;
        let meta = new_meta(ctx, &format!("create session {id}"))?;
        let mut guard = self.write()?;
        let tenant = guard.entry(ctx.tenant_id().to_owned()).or_default();
        if tenant.sessions.contains_key(&id) {
            return Err(StoreError::conflict(format!("session `{id}` exists")));
        }
        let created = Session {
            id: id.clone(),
            last_activity: meta.created_at,
            meta,
            name: session.name,
            metadata,
            plan_count: 0,
        };
        self.audit_change(ctx, AuditOp::Insert, "session", &id, &created.meta);
        tenant.sessions.insert(id, created.clone());
        Ok(created)
    }

    async fn get_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Session>, StoreError> {
        let _span = Self::span("get_session", ctx);
        let guard = self.read()?;
        Ok(guard
            .get(ctx.tenant_id())
            .and_then(|t| t.readable_session(ctx, id).ok())
            .cloned())
    }

    async fn list_sessions(
        &self,
        ctx: &CallerContext,
        query: &SessionQuery,
    ) -> Result<Page<Session>, StoreError> {
        let _span = Self::span("list_sessions", ctx);
        let guard = self.read()?;
        let items: Vec<&Session> = guard
            .get(ctx.tenant_id())
            .map(|t| {
                t.sessions
                    .values()
                    .filter(|s| ctx.can_read(&s.meta, ""))
                    .filter(|s| query.older_than.is_none_or(|t| s.last_activity < t))
                    .collect()
            })
            .unwrap_or_default();
        page(items, session_key, query.limit, query.cursor.as_deref())
    }

    async fn delete_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<SessionDeleted, StoreError> {
        let _span = Self::span("delete_session", ctx);
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("session", id))?;
        let session = tenant.readable_session(ctx, id)?;
        ctx.require_change(
            &session.meta,
            Change::Delete,
            format!("delete session {id}"),
        )?;
        let Some((meta, detached)) = tenant.remove_session(id) else {
            return Err(not_found("session", id));
        };
        self.audit_change(ctx, AuditOp::Delete, "session", id, &meta);
        Ok(SessionDeleted {
            plans_detached: detached,
        })
    }
}

#[async_trait]
impl PlanStore for InMemoryWorkingStore {
    async fn create_plan(&self, ctx: &CallerContext, plan: NewPlan) -> Result<Plan, StoreError> {
        let _span = Self::span("create_plan", ctx);
        let id = new_id(plan.id)?;
        if plan.goal_event.trim().is_empty() {
            return Err(StoreError::invalid("goal_event", "must not be empty"));
        }
        check_label("goal_event", &plan.goal_event)?;
        check_label("response_event", &plan.response_event)?;
        let goal_data = json_object("goal_data", plan.goal_data)?;
        let meta = new_meta(ctx, &format!("create plan {id}"))?;
        let now = meta.created_at;
        let mut guard = self.write()?;
        let tenant = guard.entry(ctx.tenant_id().to_owned()).or_default();
        if let Some(session) = &plan.session_id {
            tenant.readable_session(ctx, session)?;
        }
        if let Some(parent) = &plan.parent_plan_id {
            tenant.readable_plan(ctx, parent)?;
        }
        if tenant.plans.contains_key(&id) {
            return Err(StoreError::conflict(format!("plan `{id}` exists")));
        }
        let created = Plan {
            id: id.clone(),
            meta,
            goal_event: plan.goal_event,
            goal_data,
            response_event: plan.response_event,
            status: openvibe_protocols::PlanStatus::Active,
            session_id: plan.session_id,
            parent_plan_id: plan.parent_plan_id,
        };
        if let Some(s) = created
            .session_id
            .as_deref()
            .and_then(|s| tenant.sessions.get_mut(s))
        {
            s.plan_count += 1;
        }
        tenant.touch_session(created.session_id.as_deref(), now);
        self.audit_change(ctx, AuditOp::Insert, "plan", &id, &created.meta);
        tenant.plans.insert(id, created.clone());
        Ok(created)
    }

    async fn get_plan(&self, ctx: &CallerContext, id: &str) -> Result<Option<Plan>, StoreError> {
        let _span = Self::span("get_plan", ctx);
        let guard = self.read()?;
        Ok(guard
            .get(ctx.tenant_id())
            .and_then(|t| t.readable_plan(ctx, id).ok())
            .cloned())
    }

    async fn list_plans(
        &self,
        ctx: &CallerContext,
        query: &PlanQuery,
    ) -> Result<Page<Plan>, StoreError> {
        let _span = Self::span("list_plans", ctx);
        let guard = self.read()?;
        let items: Vec<&Plan> = guard
            .get(ctx.tenant_id())
            .map(|t| {
                t.plans
                    .values()
                    .filter(|p| ctx.can_read(&p.meta, ""))
                    .filter(|p| query.status.is_none_or(|s| p.status == s))
                    .filter(|p| {
                        query
                            .session_id
                            .as_deref()
                            .is_none_or(|s| p.session_id.as_deref() == Some(s))
                    })
                    .filter(|p| query.older_than.is_none_or(|t| p.meta.updated_at < t))
                    .collect()
            })
            .unwrap_or_default();
        page(items, plan_key, query.limit, query.cursor.as_deref())
    }

    async fn update_plan(
        &self,
        ctx: &CallerContext,
        id: &str,
        update: PlanUpdate,
    ) -> Result<Plan, StoreError> {
        let _span = Self::span("update_plan", ctx);
        if let Some(event) = &update.response_event {
            check_label("response_event", event)?;
        }
        let goal_data = update
            .goal_data
            .map(|g| json_object("goal_data", g))
            .transpose()?;
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", id))?;
        tenant.changeable_plan(ctx, id)?;
        let now = store_time();
        let Some(plan) = tenant.plans.get_mut(id) else {
            return Err(not_found("plan", id));
        };
        if let Some(status) = update.status {
            plan.status = status;
        }
        if let Some(goal_data) = goal_data {
            plan.goal_data = goal_data;
        }
        if let Some(event) = update.response_event {
            plan.response_event = event;
        }
        plan.meta.updated_at = now;
        let updated = plan.clone();
        self.audit_change(ctx, AuditOp::Update, "plan", id, &updated.meta);
        tenant.touch_session(updated.session_id.as_deref(), now);
        Ok(updated)
    }

    async fn delete_plan(&self, ctx: &CallerContext, id: &str) -> Result<PlanDeleted, StoreError> {
        let _span = Self::span("delete_plan", ctx);
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", id))?;
        tenant.plan_for(ctx, id, Change::Delete)?;
        let Some((meta, deleted)) = tenant.remove_plan(id) else {
            return Err(not_found("plan", id));
        };
        self.audit_change(ctx, AuditOp::Delete, "plan", id, &meta);
        Ok(deleted)
    }
}

#[async_trait]
impl ContextStore for InMemoryWorkingStore {
    async fn store_task_context(
        &self,
        ctx: &CallerContext,
        mut task: TaskContext,
    ) -> Result<TaskContext, StoreError> {
        let _span = Self::span("store_task_context", ctx);
        validate_record_id(&task.task_id)?;
        normalize_ids("sub_task_ids", &mut task.sub_task_ids)?;
        check_json("context", &task.context)?;
        let mut guard = self.write()?;
        let tenant = guard.entry(ctx.tenant_id().to_owned()).or_default();
        if let Some(plan) = &task.plan_id {
            tenant.readable_plan(ctx, plan)?;
        }
        let now = store_time();
        match tenant.tasks.get(&task.task_id) {
            Some(old) => {
                if !ctx.can_read(&old.meta, "") {
                    return Err(ctx.unauthorized(
                        format!("store task context {}", task.task_id),
                        "a task with this id exists and belongs to someone else",
                    ));
                }
                ctx.require_modify(&old.meta, format!("change task context {}", task.task_id))?;
                task.meta = RecordMeta {
                    updated_at: now,
                    ..old.meta.clone()
                };
            }
            None => task.meta = new_meta(ctx, &format!("store task context {}", task.task_id))?,
        }
        if let Some(taken) = task.sub_task_ids.iter().find(|sub| {
            tenant
                .subtasks
                .get(*sub)
                .is_some_and(|owner| *owner != task.task_id)
        }) {
            return Err(StoreError::conflict(format!(
                "sub-task `{taken}` belongs to another task"
            )));
        }
        let id = task.task_id.clone();
        tenant.subtasks.retain(|_, t| *t != id);
        for sub in &task.sub_task_ids {
            tenant.subtasks.insert(sub.clone(), id.clone());
        }
        let op = if tenant.tasks.contains_key(&id) {
            AuditOp::Update
        } else {
            AuditOp::Insert
        };
        self.audit_change(ctx, op, "task_context", &id, &task.meta);
        tenant.tasks.insert(id, task.clone());
        Ok(task)
    }

    async fn get_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        let _span = Self::span("get_task_context", ctx);
        let guard = self.read()?;
        Ok(guard
            .get(ctx.tenant_id())
            .and_then(|t| t.tasks.get(task_id))
            .filter(|task| ctx.can_read(&task.meta, ""))
            .cloned())
    }

    async fn get_task_by_subtask(
        &self,
        ctx: &CallerContext,
        sub_task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        let _span = Self::span("get_task_by_subtask", ctx);
        let guard = self.read()?;
        Ok(guard
            .get(ctx.tenant_id())
            .and_then(|t| t.subtasks.get(sub_task_id).and_then(|id| t.tasks.get(id)))
            .filter(|task| ctx.can_read(&task.meta, ""))
            .cloned())
    }

    async fn delete_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<bool, StoreError> {
        let _span = Self::span("delete_task_context", ctx);
        let mut guard = self.write()?;
        let Some(tenant) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(false);
        };
        let Some(task) = tenant
            .tasks
            .get(task_id)
            .filter(|t| ctx.can_read(&t.meta, ""))
        else {
            return Ok(false);
        };
        ctx.require_change(
            &task.meta,
            Change::Delete,
            format!("delete task context {task_id}"),
        )?;
        let Some(meta) = tenant.remove_task(task_id) else {
            return Ok(false);
        };
        self.audit_change(ctx, AuditOp::Delete, "task_context", task_id, &meta);
        Ok(true)
    }

    async fn store_plan_context(
        &self,
        ctx: &CallerContext,
        mut context: PlanContext,
    ) -> Result<PlanContext, StoreError> {
        let _span = Self::span("store_plan_context", ctx);
        check_label("plan_id", &context.plan_id)?;
        check_opt_label("session_id", context.session_id.as_deref())?;
        normalize_ids("correlation_ids", &mut context.correlation_ids)?;
        check_json("context", &context.context)?;
        let mut guard = self.write()?;
        let tenant = guard.entry(ctx.tenant_id().to_owned()).or_default();
        tenant.changeable_plan(ctx, &context.plan_id)?;
        if let Some(session) = &context.session_id {
            tenant.readable_session(ctx, session)?;
        }
        let plan_id = context.plan_id.clone();
        let current = tenant.plan_contexts.get(&plan_id).map(|c| c.version);
        context.check_version(current)?;
        if let Some(taken) = context.correlation_ids.iter().find(|c| {
            tenant
                .correlations
                .get(*c)
                .is_some_and(|owner| *owner != plan_id)
        }) {
            return Err(StoreError::conflict(format!(
                "correlation id `{taken}` belongs to another plan"
            )));
        }
        context.updated_at = store_time();
        context.version = current.unwrap_or(0) + 1;
        context.expected_version = None;
        tenant.correlations.retain(|_, p| *p != plan_id);
        for c in &context.correlation_ids {
            tenant.correlations.insert(c.clone(), plan_id.clone());
        }
        tenant.plan_contexts.insert(plan_id, context.clone());
        Ok(context)
    }

    async fn get_plan_context(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        let _span = Self::span("get_plan_context", ctx);
        let guard = self.read()?;
        Ok(guard.get(ctx.tenant_id()).and_then(|t| {
            t.readable_plan(ctx, plan_id).ok()?;
            t.plan_contexts.get(plan_id).cloned()
        }))
    }

    async fn get_plan_by_correlation(
        &self,
        ctx: &CallerContext,
        correlation_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        let _span = Self::span("get_plan_by_correlation", ctx);
        let guard = self.read()?;
        Ok(guard.get(ctx.tenant_id()).and_then(|t| {
            let plan_id = t.correlations.get(correlation_id)?;
            t.readable_plan(ctx, plan_id).ok()?;
            t.plan_contexts.get(plan_id).cloned()
        }))
    }
}

#[async_trait]
impl PlanStateStore for InMemoryWorkingStore {
    async fn set_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        value: Value,
        expect: Expect,
    ) -> Result<StateEntry, StoreError> {
        let _span = Self::span("set_state", ctx);
        check_state_key(key)?;
        check_json("value", &value)?;
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", plan_id))?;
        tenant.changeable_plan(ctx, plan_id)?;
        expect.check(plan_id, key, tenant.entry(plan_id, key).map(|e| e.version))?;
        write_entry(tenant, plan_id, key, |_| Ok(Some(value))).cloned()
    }

    async fn get_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<Option<StateEntry>, StoreError> {
        let _span = Self::span("get_state", ctx);
        let guard = self.read()?;
        let Some(tenant) = guard.get(ctx.tenant_id()) else {
            return Err(not_found("plan", plan_id));
        };
        tenant.readable_plan(ctx, plan_id)?;
        Ok(tenant.state.get(plan_id).and_then(|m| m.get(key)).cloned())
    }

    async fn list_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Vec<StateEntry>, StoreError> {
        let _span = Self::span("list_state", ctx);
        let guard = self.read()?;
        let Some(tenant) = guard.get(ctx.tenant_id()) else {
            return Err(not_found("plan", plan_id));
        };
        tenant.readable_plan(ctx, plan_id)?;
        Ok(tenant
            .state
            .get(plan_id)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn append_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        item: Value,
    ) -> Result<(), StoreError> {
        let _span = Self::span("append_state", ctx);
        check_state_key(key)?;
        check_json("item", &item)?;
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", plan_id))?;
        tenant.changeable_plan(ctx, plan_id)?;
        // In place: an append costs the same whatever the length.
        write_entry(tenant, plan_id, key, |old| match old {
            None => Ok(Some(Value::Array(vec![item]))),
            Some(Value::Array(items)) => {
                items.push(item);
                Ok(None)
            }
            Some(_) => Err(StoreError::conflict(format!(
                "key `{key}` does not hold an array"
            ))),
        })?;
        Ok(())
    }

    async fn increment_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        by: i64,
    ) -> Result<StateEntry, StoreError> {
        let _span = Self::span("increment_state", ctx);
        check_state_key(key)?;
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", plan_id))?;
        tenant.changeable_plan(ctx, plan_id)?;
        write_entry(tenant, plan_id, key, |old| {
            let current = match old {
                None => 0,
                Some(v) => v.as_i64().ok_or_else(|| {
                    StoreError::conflict(format!("key `{key}` does not hold an integer"))
                })?,
            };
            current
                .checked_add(by)
                .map(|sum| Some(Value::from(sum)))
                .ok_or_else(|| StoreError::conflict("by: the sum overflows a 64-bit integer"))
        })
        .cloned()
    }

    async fn delete_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<bool, StoreError> {
        let _span = Self::span("delete_state", ctx);
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", plan_id))?;
        tenant.changeable_plan(ctx, plan_id)?;
        Ok(tenant
            .state
            .get_mut(plan_id)
            .is_some_and(|m| m.remove(key).is_some()))
    }

    async fn clear_state(&self, ctx: &CallerContext, plan_id: &str) -> Result<u64, StoreError> {
        let _span = Self::span("clear_state", ctx);
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("plan", plan_id))?;
        tenant.changeable_plan(ctx, plan_id)?;
        Ok(tenant.state.remove(plan_id).map_or(0, |m| m.len() as u64))
    }
}

/// Change `key` of `plan_id` (under the caller's write lock): `change`
/// gets the current value, if any, and either changes it in place
/// (`Ok(None)`) or gives the new value (`Ok(Some(_))`); an error changes
/// nothing. The version goes up by one (1 when new).
fn write_entry<'t>(
    tenant: &'t mut Tenant,
    plan_id: &str,
    key: &str,
    change: impl FnOnce(Option<&mut Value>) -> Result<Option<Value>, StoreError>,
) -> Result<&'t StateEntry, StoreError> {
    let now = store_time();
    let entries = tenant.state.entry(plan_id.to_owned()).or_default();
    let replacement = change(entries.get_mut(key).map(|e| &mut e.value))?;
    let entry = entries.entry(key.to_owned()).or_insert_with(|| StateEntry {
        plan_id: plan_id.to_owned(),
        key: key.to_owned(),
        value: Value::Null,
        version: 0,
        updated_at: now,
    });
    if let Some(value) = replacement {
        entry.value = value;
    }
    entry.version = entry.version.saturating_add(1);
    entry.updated_at = now;
    Ok(entry)
}
