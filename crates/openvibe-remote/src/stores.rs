//! The store traits over the service's endpoints ([`openvibe_api::endpoints`]):
//! each method is one row of the table, called with its path parameters
//! and its body or query; the record stores once for every kind.

use async_trait::async_trait;
use chrono::NaiveDate;
use openvibe_api::dto::{
    Ack, AppendRaw, AtomicAppend, AtomicIncrement, Decompose, DeleteExpired, EmbedPending, Erase,
    ExpireProposals, FinishProposal, MoveNamespace, PostMessages, PrioritiesOf, PruneRaw,
    RedactAudit, RetireBelief, SetState, SimilarInsight, Strengthen, Touch, VectorLookup,
};
use openvibe_api::endpoints::{self as e, Endpoint, RecordEndpoints, RevisableEndpoints};
use openvibe_protocols::{
    AuditEntry, AuditLog, AuditQuery, Belief, BeliefQuery, BeliefStore, CallerContext, ChainHead,
    ChainReport, ContextStore, ErasureCount, ErasureSubject, Expect, Goal, GoalProgress, GoalQuery,
    GoalStore, Initiative, Insight, InsightStore, Knowledge, KnowledgeHit, KnowledgeQuery,
    KnowledgeStore, MetricReport, NamespaceAdmin, NamespaceCount, NewKnowledge, NewPlan,
    NewSession, Observed, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanStateStore,
    PlanStore, PlanUpdate, Priorities, Proposal, ProposalQuery, ProposalStore, RawCall,
    RawCallQuery, RawLogStore, RawRetention, RecordStore, RecordVector, RecordVectors, ReportQuery,
    RevisableStore, Session, SessionDeleted, SessionQuery, SessionStore, Space, SpaceMessage,
    SpaceQuery, SpaceStore, StateEntry, StoreError, TaskContext, VectorStatus, Verdict,
    VerifyChain,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::RemoteMemory;

impl RemoteMemory {
    /// `endpoint` as `ctx`, with `params` in its path and `input` as its
    /// body or query string.
    async fn call<I: Serialize, O: DeserializeOwned>(
        &self,
        ctx: &CallerContext,
        endpoint: &Endpoint<I, O>,
        params: &[&str],
        input: &I,
    ) -> Result<O, StoreError> {
        self.inner
            .call(Some(ctx), endpoint, params, input, endpoint.idempotent)
            .await
    }

    /// A lookup: the endpoint's `404` naming the kind it looks up is `None`
    /// (the server found no such record); one naming another kind is the
    /// store's error (e.g. the plan of a plan-state key).
    async fn find<O: DeserializeOwned>(
        &self,
        ctx: &CallerContext,
        endpoint: &Endpoint<(), O>,
        params: &[&str],
    ) -> Result<Option<O>, StoreError> {
        self.find_with(ctx, endpoint, params, &()).await
    }

    /// [`find`](Self::find) with an input.
    async fn find_with<I: Serialize, O: DeserializeOwned>(
        &self,
        ctx: &CallerContext,
        endpoint: &Endpoint<I, O>,
        params: &[&str],
        input: &I,
    ) -> Result<Option<O>, StoreError> {
        match self.call(ctx, endpoint, params, input).await {
            Ok(v) => Ok(Some(v)),
            Err(StoreError::NotFound { kind, .. }) if endpoint.missing == Some(kind) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl<R: RecordEndpoints + Serialize + DeserializeOwned> RecordStore<R> for RemoteMemory {
    async fn store(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError> {
        self.call(ctx, &R::STORE, &[], &record).await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<R>, StoreError> {
        self.find(ctx, &R::GET, &[id]).await
    }

    async fn query(&self, ctx: &CallerContext, query: &R::Query) -> Result<Vec<R>, StoreError> {
        self.call(ctx, &R::QUERY, &[], query).await
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.call(ctx, &R::DELETE, &[id], &()).await.map(drop)
    }
}

#[async_trait]
impl<R: RevisableEndpoints + Serialize + DeserializeOwned> RevisableStore<R> for RemoteMemory {
    async fn update(&self, ctx: &CallerContext, record: R) -> Result<R, StoreError> {
        let id = record.record_id().to_owned();
        self.call(ctx, &R::UPDATE, &[&id], &record).await
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        let body = Touch { ids: ids.to_vec() };
        Ok(self.call(ctx, &R::TOUCH, &[], &body).await?.touched)
    }
}

#[async_trait]
impl openvibe_protocols::EventInbox for RemoteMemory {
    async fn push(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        event: openvibe_protocols::DecisionEvent,
        _source: openvibe_protocols::EventSource,
    ) -> Result<openvibe_protocols::Accepted, StoreError> {
        // The server records it as coming over HTTP: the edge says, not the body.
        self.call(ctx, &e::PUSH_EVENT, &[role_id], &event).await
    }

    async fn trace(
        &self,
        ctx: &CallerContext,
        role_id: &str,
        event_id: &str,
    ) -> Result<Option<openvibe_protocols::LoopTrace>, StoreError> {
        self.find(ctx, &e::EVENT_TRACE, &[role_id, event_id]).await
    }
}

#[async_trait]
impl InsightStore for RemoteMemory {
    async fn find_similar(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        content: &str,
    ) -> Result<Option<Insight>, StoreError> {
        let body = SimilarInsight {
            agent_id: agent_id.to_owned(),
            content: content.to_owned(),
        };
        Ok(self
            .call(ctx, &e::SIMILAR_INSIGHT, &[], &body)
            .await?
            .insight)
    }

    async fn strengthen(
        &self,
        ctx: &CallerContext,
        id: &str,
        episode_ids: &[String],
    ) -> Result<Insight, StoreError> {
        let body = Strengthen {
            episode_ids: episode_ids.to_vec(),
        };
        self.call(ctx, &e::STRENGTHEN_INSIGHT, &[id], &body).await
    }

    async fn observe(&self, ctx: &CallerContext, insight: Insight) -> Result<Observed, StoreError> {
        self.call(ctx, &e::OBSERVE_INSIGHT, &[], &insight).await
    }
}

#[async_trait]
impl RawLogStore for RemoteMemory {
    async fn append(
        &self,
        ctx: &CallerContext,
        calls: Vec<RawCall>,
    ) -> Result<Vec<RawCall>, StoreError> {
        self.call(ctx, &e::APPEND_RAW_CALLS, &[], &AppendRaw { calls })
            .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<RawCall>, StoreError> {
        self.find(ctx, &e::GET_RAW_CALL, &[id]).await
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        query: &RawCallQuery,
    ) -> Result<Page<RawCall>, StoreError> {
        self.call(ctx, &e::QUERY_RAW_CALLS, &[], query).await
    }

    async fn prune(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        retention: &RawRetention,
    ) -> Result<u64, StoreError> {
        let body = PruneRaw {
            agent_id: agent_id.to_owned(),
            retention: *retention,
        };
        Ok(self
            .call(ctx, &e::PRUNE_RAW_CALLS, &[], &body)
            .await?
            .deleted_count)
    }
}

/// A store trait's impl, expanded from its wire (`openvibe_api::store_wire!`):
/// each method calls its row with its path arguments and what the
/// declaration's `client` sends; an `or_none` row's 404 naming its kind
/// is `None`.
macro_rules! remote_store {
    ($trait:ident $ops:ident; $(
        fn $name:ident ($($arg:ident: $argty:ty),*) -> $ret:ty = $row:ident {
            $m:ident $path:literal [$($p:ident),*] $input:tt -> $out:ty;
            $op:literal, $summary:literal [$($flag:ident),*];
            $(or_none $kind:literal $(($id:expr))?;)?
            server $server:tt;
            client ($($sent:expr)? $(=> |$c:ident| $unwrap:expr)?);
        }
    )*) => {
        #[async_trait]
        impl $trait for RemoteMemory {
            $(
                async fn $name(
                    &self,
                    ctx: &CallerContext,
                    $($arg: $argty),*
                ) -> Result<$ret, StoreError> {
                    let sent = remote_store!(@sent $($sent)?);
                    let out = remote_store!(@call self, ctx, e::$row, [$($p),*], sent $(, $kind)?);
                    $(let out = { let $c = out; $unwrap };)?
                    Ok(out)
                }
            )*
        }
    };
    (@sent) => { &() };
    (@sent $sent:expr) => { $sent };
    (@call $self:ident, $ctx:ident, $row:path, [$($p:ident),*], $sent:ident) => {
        $self.call($ctx, &$row, &[$($p),*], $sent).await?
    };
    (@call $self:ident, $ctx:ident, $row:path, [$($p:ident),*], $sent:ident, $kind:literal) => {
        $self.find_with($ctx, &$row, &[$($p),*], $sent).await?
    };
}

/// `messages`, each with an id (chosen here when it has none, so a retried
/// post is the same post).
fn with_ids(mut messages: Vec<SpaceMessage>) -> Vec<SpaceMessage> {
    for m in &mut messages {
        if m.id.is_empty() {
            m.id = uuid::Uuid::new_v4().simple().to_string();
        }
    }
    messages
}

/// `report` with an id (chosen here when it has none, so a retry of a
/// report that may have arrived counts once).
fn with_id(mut report: MetricReport) -> MetricReport {
    if report.id.is_empty() {
        report.id = uuid::Uuid::new_v4().simple().to_string();
    }
    report
}

openvibe_api::store_wire!(ProposalStore => remote_store);
openvibe_api::store_wire!(SpaceStore => remote_store);
openvibe_api::store_wire!(GoalStore => remote_store);
openvibe_api::store_wire!(BeliefStore => remote_store);

#[async_trait]
impl SessionStore for RemoteMemory {
    async fn create_session(
        &self,
        ctx: &CallerContext,
        session: NewSession,
    ) -> Result<Session, StoreError> {
        self.call(ctx, &e::CREATE_SESSION, &[], &session).await
    }

    async fn get_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Session>, StoreError> {
        self.find(ctx, &e::GET_SESSION, &[id]).await
    }

    async fn list_sessions(
        &self,
        ctx: &CallerContext,
        query: &SessionQuery,
    ) -> Result<Page<Session>, StoreError> {
        self.call(ctx, &e::LIST_SESSIONS, &[], query).await
    }

    async fn delete_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<SessionDeleted, StoreError> {
        self.call(ctx, &e::DELETE_SESSION, &[id], &()).await
    }
}

#[async_trait]
impl PlanStore for RemoteMemory {
    async fn create_plan(&self, ctx: &CallerContext, plan: NewPlan) -> Result<Plan, StoreError> {
        self.call(ctx, &e::CREATE_PLAN, &[], &plan).await
    }

    async fn get_plan(&self, ctx: &CallerContext, id: &str) -> Result<Option<Plan>, StoreError> {
        self.find(ctx, &e::GET_PLAN, &[id]).await
    }

    async fn list_plans(
        &self,
        ctx: &CallerContext,
        query: &PlanQuery,
    ) -> Result<Page<Plan>, StoreError> {
        self.call(ctx, &e::LIST_PLANS, &[], query).await
    }

    async fn update_plan(
        &self,
        ctx: &CallerContext,
        id: &str,
        update: PlanUpdate,
    ) -> Result<Plan, StoreError> {
        self.call(ctx, &e::UPDATE_PLAN, &[id], &update).await
    }

    async fn delete_plan(&self, ctx: &CallerContext, id: &str) -> Result<PlanDeleted, StoreError> {
        self.call(ctx, &e::DELETE_PLAN, &[id], &()).await
    }
}

#[async_trait]
impl ContextStore for RemoteMemory {
    async fn store_task_context(
        &self,
        ctx: &CallerContext,
        task: TaskContext,
    ) -> Result<TaskContext, StoreError> {
        self.call(ctx, &e::STORE_TASK_CONTEXT, &[], &task).await
    }

    async fn get_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        self.find(ctx, &e::GET_TASK_CONTEXT, &[task_id]).await
    }

    async fn get_task_by_subtask(
        &self,
        ctx: &CallerContext,
        sub_task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        self.find(ctx, &e::GET_TASK_BY_SUBTASK, &[sub_task_id])
            .await
    }

    async fn delete_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .call(ctx, &e::DELETE_TASK_CONTEXT, &[task_id], &())
            .await?
            .deleted)
    }

    async fn store_plan_context(
        &self,
        ctx: &CallerContext,
        context: PlanContext,
    ) -> Result<PlanContext, StoreError> {
        // A replace, unless it expects a version (then a second send after
        // the first was received would conflict).
        let idempotent = context.expected_version.is_none();
        self.inner
            .call(Some(ctx), &e::STORE_PLAN_CONTEXT, &[], &context, idempotent)
            .await
    }

    async fn get_plan_context(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        self.find(ctx, &e::GET_PLAN_CONTEXT, &[plan_id]).await
    }

    async fn get_plan_by_correlation(
        &self,
        ctx: &CallerContext,
        correlation_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        self.find(ctx, &e::GET_PLAN_BY_CORRELATION, &[correlation_id])
            .await
    }
}

#[async_trait]
impl PlanStateStore for RemoteMemory {
    async fn set_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        value: Value,
        expect: Expect,
    ) -> Result<StateEntry, StoreError> {
        let body = SetState { value, expect };
        // Idempotent only when it is a plain overwrite.
        let idempotent = expect == Expect::Any;
        self.inner
            .call(
                Some(ctx),
                &e::SET_PLAN_STATE,
                &[plan_id, key],
                &body,
                idempotent,
            )
            .await
    }

    async fn get_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<Option<StateEntry>, StoreError> {
        self.find(ctx, &e::GET_PLAN_STATE, &[plan_id, key]).await
    }

    async fn list_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Vec<StateEntry>, StoreError> {
        self.call(ctx, &e::LIST_PLAN_STATE, &[plan_id], &()).await
    }

    async fn append_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        item: Value,
    ) -> Result<(), StoreError> {
        let body = AtomicAppend {
            plan_id: plan_id.to_owned(),
            key: key.to_owned(),
            value: item,
        };
        self.call(ctx, &e::ATOMIC_APPEND, &[], &body)
            .await
            .map(drop)
    }

    async fn increment_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
        by: i64,
    ) -> Result<StateEntry, StoreError> {
        let body = AtomicIncrement {
            plan_id: plan_id.to_owned(),
            key: key.to_owned(),
            by,
        };
        self.call(ctx, &e::ATOMIC_INCREMENT, &[], &body).await
    }

    async fn delete_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .call(ctx, &e::DELETE_PLAN_STATE_KEY, &[plan_id, key], &())
            .await?
            .deleted)
    }

    async fn clear_state(&self, ctx: &CallerContext, plan_id: &str) -> Result<u64, StoreError> {
        Ok(self
            .call(ctx, &e::DELETE_PLAN_STATE, &[plan_id], &())
            .await?
            .deleted_count)
    }
}

#[async_trait]
impl KnowledgeStore for RemoteMemory {
    fn embedding_model(&self) -> (&str, usize) {
        (&self.inner.model.0, self.inner.model.1)
    }

    async fn store_knowledge(
        &self,
        ctx: &CallerContext,
        knowledge: NewKnowledge,
    ) -> Result<Knowledge, StoreError> {
        // An upsert: the same body twice leaves one record.
        self.call(ctx, &e::STORE_KNOWLEDGE, &[], &knowledge).await
    }

    async fn query_knowledge(
        &self,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        self.call(ctx, &e::QUERY_KNOWLEDGE, &[], query).await
    }

    async fn get_knowledge(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Knowledge>, StoreError> {
        self.find(ctx, &e::GET_KNOWLEDGE, &[id]).await
    }

    async fn delete_knowledge(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.call(ctx, &e::DELETE_KNOWLEDGE, &[id], &())
            .await
            .map(drop)
    }
}

#[async_trait]
impl AuditLog for RemoteMemory {
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        self.call(ctx, &e::QUERY_AUDIT, &[], query).await
    }

    async fn flush(&self) -> Result<(), StoreError> {
        // Any key may ask for a flush; it reveals nothing.
        self.inner
            .call(None, &e::FLUSH_AUDIT, &[], &(), e::FLUSH_AUDIT.idempotent)
            .await
            .map(drop)
    }

    async fn append(&self, ctx: &CallerContext, entry: AuditEntry) -> Result<(), StoreError> {
        self.call(ctx, &e::APPEND_AUDIT, &[], &entry)
            .await
            .map(drop)
    }

    async fn verify(
        &self,
        ctx: &CallerContext,
        request: &VerifyChain,
    ) -> Result<ChainReport, StoreError> {
        self.call(ctx, &e::VERIFY_AUDIT, &[], request).await
    }

    async fn anchor(&self, ctx: &CallerContext) -> Result<ChainHead, StoreError> {
        self.call(ctx, &e::AUDIT_ANCHOR, &[], &()).await
    }

    async fn redact(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        dry_run: bool,
    ) -> Result<u64, StoreError> {
        let body = RedactAudit {
            subject: subject.clone(),
            dry_run,
        };
        Ok(self.call(ctx, &e::REDACT_AUDIT, &[], &body).await?.redacted)
    }
}

#[async_trait]
impl NamespaceAdmin for RemoteMemory {
    async fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError> {
        self.call(ctx, &e::NAMESPACE_COUNTS, &[], &()).await
    }

    async fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let body = MoveNamespace {
            kind: kind.to_owned(),
            from: from.to_owned(),
            to: to.to_owned(),
            batch,
        };
        Ok(self.call(ctx, &e::MOVE_NAMESPACE, &[], &body).await?.moved)
    }

    async fn delete_expired(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        let body = DeleteExpired { batch };
        Ok(self
            .call(ctx, &e::DELETE_EXPIRED, &[], &body)
            .await?
            .deleted_count)
    }

    async fn erasure_counts(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        self.call(ctx, &e::ERASURE_COUNTS, &[], subject).await
    }

    async fn erase(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        batch: usize,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        let body = Erase {
            subject: subject.clone(),
            batch,
        };
        self.call(ctx, &e::ERASE, &[], &body).await
    }
}

#[async_trait]
impl RecordVectors for RemoteMemory {
    async fn vectors(
        &self,
        ctx: &CallerContext,
        model: &str,
        kind: &str,
        ids: &[String],
    ) -> Result<Vec<RecordVector>, StoreError> {
        let body = VectorLookup {
            model: model.to_owned(),
            kind: kind.to_owned(),
            ids: ids.to_vec(),
        };
        self.call(ctx, &e::RECORD_VECTORS, &[], &body).await
    }

    async fn vector_status(&self, ctx: &CallerContext) -> Result<VectorStatus, StoreError> {
        self.call(ctx, &e::VECTOR_STATUS, &[], &()).await
    }

    async fn embed_pending(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        let body = EmbedPending { batch };
        Ok(self
            .call(ctx, &e::EMBED_PENDING, &[], &body)
            .await?
            .embedded)
    }
}
