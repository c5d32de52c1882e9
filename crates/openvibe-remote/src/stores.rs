//! The store traits over the service's endpoints ([`openvibe_api::endpoints`]):
//! each method is one row of the table, called with its path parameters
//! and its body or query; the record stores once for every kind.

use async_trait::async_trait;
use chrono::NaiveDate;
use openvibe_api::dto::{
    Ack, AppendRaw, AtomicAppend, AtomicIncrement, BeliefVerdict, Decompose, DeleteExpired,
    EmbedPending, Erase, ExpireProposals, FinishProposal, MoveNamespace, PostMessages,
    PrioritiesOf, PruneRaw, RedactAudit, RetireBelief, SetState, SimilarInsight, Strengthen, Touch,
    VectorLookup,
};
use openvibe_api::endpoints::{self as e, Endpoint, RecordEndpoints, RevisableEndpoints};
use openvibe_protocols::{
    Accepted, AuditEntry, AuditLog, AuditQuery, Belief, BeliefQuery, BeliefStore, CallerContext,
    ChainHead, ChainReport, ContextStore, DecisionEvent, ErasureCount, ErasureSubject, EventInbox,
    EventSource, Expect, Goal, GoalProgress, GoalQuery, GoalStore, InboxEvent, InboxOutcome,
    InboxQuery, InboxStore, Initiative, InitiativeUpdate, Insight, InsightStore, Knowledge,
    KnowledgeHit, KnowledgeQuery, KnowledgeStore, LeaseRequest, LoopTrace, MetricReport,
    NamespaceAdmin, NamespaceCount, NewKnowledge, NewPlan, NewSession, Observed, Page, Plan,
    PlanContext, PlanDeleted, PlanQuery, PlanStateStore, PlanStore, PlanUpdate, Priorities,
    Proposal, ProposalQuery, ProposalStore, RawCall, RawCallQuery, RawLogStore, RawRetention,
    RecordStore, RecordVector, RecordVectors, Renewal, ReportQuery, RevisableStore, Session,
    SessionDeleted, SessionQuery, SessionStore, Space, SpaceMessage, SpaceQuery, SpaceStore,
    StateEntry, StoreError, TaskContext, VectorStatus, Verdict, VerifyChain,
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

/// A store trait's impl, expanded from its wire (`openvibe_api::store_wire!`):
/// each method calls its row with its path arguments and what the
/// declaration's `client` sends; an `or_none` row's 404 naming its kind
/// is `None`.
macro_rules! remote_store {
    ($trait:ident $ops:ident; { $($extra:tt)* } [ $(
        fn $name:ident ($($arg:ident: $argty:ty),*) -> $ret:ty = $row:ident {
            $m:ident $path:literal [$($p:ident),*] $input:tt -> $out:ty;
            $op:literal, $summary:literal [$($flag:ident),*];
            $(or_none $kind:literal $(($id:expr))?;)?
            server $server:tt;
            client $client:tt;
        }
    )* ] [ $($only:tt)* ]) => {
        #[async_trait]
        impl $trait for RemoteMemory {
            $($extra)*

            $(
                async fn $name(
                    &self,
                    ctx: &CallerContext,
                    $($arg: $argty),*
                ) -> Result<$ret, StoreError> {
                    remote_store!(@client self, ctx, e::$row, [$($p),*], ($($arg),*), $client $(, $kind)?)
                }
            )*
        }
    };
    (@client $self:ident, $ctx:ident, $row:path, $ps:tt, ($($a:ident),*), (via $helper:ident) $(, $kind:literal)?) => {
        $helper($self, $ctx, $($a),*).await
    };
    (@client $self:ident, $ctx:ident, $row:path, [$($p:ident),*], $args:tt, ($($sent:expr)? $(=> |$c:ident| $unwrap:expr)?)) => {{
        let out = $self.call($ctx, &$row, &[$($p),*], remote_store!(@sent $($sent)?)).await?;
        $(let out = { let $c = out; $unwrap };)?
        Ok(out)
    }};
    (@client $self:ident, $ctx:ident, $row:path, [$($p:ident),*], $args:tt, ($($sent:expr)? $(=> |$c:ident| $unwrap:expr)?), $kind:literal) => {{
        let out = $self.find_with($ctx, &$row, &[$($p),*], remote_store!(@sent $($sent)?)).await?;
        $(let out = { let $c = out; $unwrap };)?
        Ok(out)
    }};
    (@sent) => { &() };
    (@sent $sent:expr) => { $sent };
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
openvibe_api::store_wire!(InboxStore => remote_store);
openvibe_api::store_wire!(GoalStore => remote_store);
openvibe_api::store_wire!(BeliefStore => remote_store);
openvibe_api::store_wire!(AuditLog => remote_store {
    async fn flush(&self) -> Result<(), StoreError> {
        // Any key may ask for a flush; it reveals nothing.
        self.inner
            .call(None, &e::FLUSH_AUDIT, &[], &(), e::FLUSH_AUDIT.idempotent)
            .await
            .map(drop)
    }
});
openvibe_api::store_wire!(NamespaceAdmin => remote_store);
openvibe_api::store_wire!(RecordVectors => remote_store);
openvibe_api::store_wire!(RawLogStore => remote_store);
openvibe_api::store_wire!(InsightStore => remote_store);
openvibe_api::store_wire!(EventInbox => remote_store);
openvibe_api::store_wire!(KnowledgeStore => remote_store {
    fn embedding_model(&self) -> (&str, usize) {
        (&self.inner.model.0, self.inner.model.1)
    }
});
openvibe_api::store_wire!(SessionStore => remote_store);
openvibe_api::store_wire!(PlanStore => remote_store);
openvibe_api::store_wire!(ContextStore => remote_store);
openvibe_api::store_wire!(PlanStateStore => remote_store);

/// A plan's context, sent as a replace: retried when it may have arrived
/// only when it expects no version (a second send after the first was
/// received would conflict).
async fn store_plan_context(
    remote: &RemoteMemory,
    ctx: &CallerContext,
    context: PlanContext,
) -> Result<PlanContext, StoreError> {
    let idempotent = context.expected_version.is_none();
    remote
        .inner
        .call(Some(ctx), &e::STORE_PLAN_CONTEXT, &[], &context, idempotent)
        .await
}

/// A key of a plan's state, set: retried when it may have arrived only
/// when it is a plain overwrite.
async fn set_state(
    remote: &RemoteMemory,
    ctx: &CallerContext,
    plan_id: &str,
    key: &str,
    value: Value,
    expect: Expect,
) -> Result<StateEntry, StoreError> {
    let body = SetState { value, expect };
    let idempotent = expect == Expect::Any;
    remote
        .inner
        .call(
            Some(ctx),
            &e::SET_PLAN_STATE,
            &[plan_id, key],
            &body,
            idempotent,
        )
        .await
}
