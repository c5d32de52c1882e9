//! The store traits over the service's routes.

use async_trait::async_trait;
use openvibe_api::dto::{
    AppendRaw, AtomicAppend, AtomicIncrement, DeleteExpired, Deleted, DeletedCount, EmbedPending,
    Embedded, MaybeInsight, MoveNamespace, Moved, PruneRaw, SetState, SimilarInsight, Strengthen,
    Touch, Touched, VectorLookup,
};
use openvibe_api::paths;
use openvibe_protocols::{
    AuditEntry, AuditLog, AuditQuery, CallerContext, Episode, EpisodeQuery, EpisodicStore, Expect,
    Fact, FactQuery, FactStore, Insight, InsightQuery, InsightStore, Knowledge, KnowledgeHit,
    KnowledgeQuery, KnowledgeStore, NamespaceAdmin, NamespaceCount, NewKnowledge, NewPlan,
    NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanUpdate, RawCall, RawCallQuery,
    RawLogStore, RawRetention, RecordVector, RecordVectors, Session, SessionDeleted, SessionQuery,
    StateEntry, StoreError, TaskContext, VectorStatus, WorkingStore,
};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Idempotent, RemoteMemory};

const NO_BODY: Option<&()> = None;

impl RemoteMemory {
    async fn req<T: DeserializeOwned>(
        &self,
        ctx: &CallerContext,
        method: Method,
        segments: &[&str],
        body: Option<&impl Serialize>,
        idempotent: Idempotent,
    ) -> Result<T, StoreError> {
        self.inner
            .call(Some(ctx), method, segments, body, &[], idempotent)
            .await
    }

    /// A `GET` of one record of `kind`: a `not_found` answer naming that
    /// kind is `None` (the server found no such record); one naming another
    /// kind is the store's error (e.g. the plan of a plan-state key).
    async fn opt<T: DeserializeOwned>(
        &self,
        ctx: &CallerContext,
        kind: &str,
        segments: &[&str],
    ) -> Result<Option<T>, StoreError> {
        match self
            .req(ctx, Method::GET, segments, NO_BODY, Idempotent::Yes)
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(StoreError::NotFound { kind: k, .. }) if k == kind => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A request answered with no content.
    async fn done(
        &self,
        ctx: &CallerContext,
        method: Method,
        segments: &[&str],
        body: Option<&impl Serialize>,
        idempotent: Idempotent,
    ) -> Result<(), StoreError> {
        self.req::<Value>(ctx, method, segments, body, idempotent)
            .await
            .map(|_| ())
    }

    /// A list with query-string parameters.
    async fn list<T: DeserializeOwned>(
        &self,
        ctx: &CallerContext,
        path: &str,
        query: &impl Serialize,
    ) -> Result<T, StoreError> {
        let pairs = query_pairs(query)?;
        self.inner
            .call(
                Some(ctx),
                Method::GET,
                &[path],
                NO_BODY,
                &pairs,
                Idempotent::Yes,
            )
            .await
    }
}

/// A flat struct as query-string pairs (`None` fields left out).
fn query_pairs(query: &impl Serialize) -> Result<Vec<(String, String)>, StoreError> {
    let value =
        serde_json::to_value(query).map_err(|e| StoreError::invalid("query", e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(StoreError::invalid("query", "not a set of fields"));
    };
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| match v {
            Value::Null => None,
            Value::String(s) => Some((k, s)),
            other => Some((k, other.to_string())),
        })
        .collect())
}

#[async_trait]
impl FactStore for RemoteMemory {
    async fn store(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::FACTS],
            Some(&fact),
            Idempotent::No,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Fact>, StoreError> {
        self.opt(ctx, "fact", &[paths::FACTS, id]).await
    }

    async fn query(&self, ctx: &CallerContext, query: &FactQuery) -> Result<Vec<Fact>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::FACTS, "query"],
            Some(query),
            Idempotent::Yes,
        )
        .await
    }

    async fn update(&self, ctx: &CallerContext, fact: Fact) -> Result<Fact, StoreError> {
        let id = fact.id.clone();
        self.req(
            ctx,
            Method::PUT,
            &[paths::FACTS, &id],
            Some(&fact),
            Idempotent::Yes,
        )
        .await
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.done(
            ctx,
            Method::DELETE,
            &[paths::FACTS, id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        let body = Touch { ids: ids.to_vec() };
        let t: Touched = self
            .req(
                ctx,
                Method::POST,
                &[paths::FACTS, "touch"],
                Some(&body),
                Idempotent::No,
            )
            .await?;
        Ok(t.touched)
    }
}

#[async_trait]
impl RawLogStore for RemoteMemory {
    async fn append(
        &self,
        ctx: &CallerContext,
        calls: Vec<RawCall>,
    ) -> Result<Vec<RawCall>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::RAW],
            Some(&AppendRaw { calls }),
            Idempotent::No,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<RawCall>, StoreError> {
        self.opt(ctx, "raw_call", &[paths::RAW, id]).await
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        query: &RawCallQuery,
    ) -> Result<Page<RawCall>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::RAW, "query"],
            Some(query),
            Idempotent::Yes,
        )
        .await
    }

    async fn prune(
        &self,
        ctx: &CallerContext,
        agent_id: &str,
        retention: &RawRetention,
    ) -> Result<u64, StoreError> {
        let done: DeletedCount = self
            .req(
                ctx,
                Method::POST,
                &[paths::RAW, "prune"],
                Some(&PruneRaw {
                    agent_id: agent_id.to_owned(),
                    retention: *retention,
                }),
                Idempotent::Yes,
            )
            .await?;
        Ok(done.deleted_count)
    }
}

#[async_trait]
impl EpisodicStore for RemoteMemory {
    async fn store(&self, ctx: &CallerContext, episode: Episode) -> Result<Episode, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::EPISODES],
            Some(&episode),
            Idempotent::No,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Episode>, StoreError> {
        self.opt(ctx, "episode", &[paths::EPISODES, id]).await
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        query: &EpisodeQuery,
    ) -> Result<Vec<Episode>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::EPISODES, "query"],
            Some(query),
            Idempotent::Yes,
        )
        .await
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.done(
            ctx,
            Method::DELETE,
            &[paths::EPISODES, id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }
}

#[async_trait]
impl InsightStore for RemoteMemory {
    async fn store(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::INSIGHTS],
            Some(&insight),
            Idempotent::No,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Insight>, StoreError> {
        self.opt(ctx, "insight", &[paths::INSIGHTS, id]).await
    }

    async fn query(
        &self,
        ctx: &CallerContext,
        query: &InsightQuery,
    ) -> Result<Vec<Insight>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::INSIGHTS, "query"],
            Some(query),
            Idempotent::Yes,
        )
        .await
    }

    async fn update(&self, ctx: &CallerContext, insight: Insight) -> Result<Insight, StoreError> {
        let id = insight.id.clone();
        self.req(
            ctx,
            Method::PUT,
            &[paths::INSIGHTS, &id],
            Some(&insight),
            Idempotent::Yes,
        )
        .await
    }

    async fn delete(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.done(
            ctx,
            Method::DELETE,
            &[paths::INSIGHTS, id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }

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
        let found: MaybeInsight = self
            .req(
                ctx,
                Method::POST,
                &[paths::INSIGHTS, "similar"],
                Some(&body),
                Idempotent::Yes,
            )
            .await?;
        Ok(found.insight)
    }

    async fn touch(&self, ctx: &CallerContext, ids: &[String]) -> Result<usize, StoreError> {
        let body = Touch { ids: ids.to_vec() };
        let t: Touched = self
            .req(
                ctx,
                Method::POST,
                &[paths::INSIGHTS, "touch"],
                Some(&body),
                Idempotent::No,
            )
            .await?;
        Ok(t.touched)
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
        self.req(
            ctx,
            Method::POST,
            &[paths::INSIGHTS, id, "strengthen"],
            Some(&body),
            Idempotent::No,
        )
        .await
    }
}

#[async_trait]
impl WorkingStore for RemoteMemory {
    async fn create_session(
        &self,
        ctx: &CallerContext,
        session: NewSession,
    ) -> Result<Session, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::SESSIONS],
            Some(&session),
            Idempotent::No,
        )
        .await
    }

    async fn get_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Session>, StoreError> {
        self.opt(ctx, "session", &[paths::SESSIONS, id]).await
    }

    async fn list_sessions(
        &self,
        ctx: &CallerContext,
        query: &SessionQuery,
    ) -> Result<Page<Session>, StoreError> {
        self.list(ctx, paths::SESSIONS, query).await
    }

    async fn delete_session(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<SessionDeleted, StoreError> {
        self.req(
            ctx,
            Method::DELETE,
            &[paths::SESSIONS, id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }

    async fn create_plan(&self, ctx: &CallerContext, plan: NewPlan) -> Result<Plan, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::PLANS],
            Some(&plan),
            Idempotent::No,
        )
        .await
    }

    async fn get_plan(&self, ctx: &CallerContext, id: &str) -> Result<Option<Plan>, StoreError> {
        self.opt(ctx, "plan", &[paths::PLANS, id]).await
    }

    async fn list_plans(
        &self,
        ctx: &CallerContext,
        query: &PlanQuery,
    ) -> Result<Page<Plan>, StoreError> {
        self.list(ctx, paths::PLANS, query).await
    }

    async fn update_plan(
        &self,
        ctx: &CallerContext,
        id: &str,
        update: PlanUpdate,
    ) -> Result<Plan, StoreError> {
        self.req(
            ctx,
            Method::PUT,
            &[paths::PLANS, id],
            Some(&update),
            Idempotent::Yes,
        )
        .await
    }

    async fn delete_plan(&self, ctx: &CallerContext, id: &str) -> Result<PlanDeleted, StoreError> {
        self.req(
            ctx,
            Method::DELETE,
            &[paths::PLANS, id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }

    async fn store_task_context(
        &self,
        ctx: &CallerContext,
        task: TaskContext,
    ) -> Result<TaskContext, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::TASK_CONTEXT],
            Some(&task),
            Idempotent::Yes,
        )
        .await
    }

    async fn get_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        self.opt(ctx, "task_context", &[paths::TASK_CONTEXT, task_id])
            .await
    }

    async fn get_task_by_subtask(
        &self,
        ctx: &CallerContext,
        sub_task_id: &str,
    ) -> Result<Option<TaskContext>, StoreError> {
        self.opt(
            ctx,
            "task_context",
            &[paths::TASK_CONTEXT, "by-subtask", sub_task_id],
        )
        .await
    }

    async fn delete_task_context(
        &self,
        ctx: &CallerContext,
        task_id: &str,
    ) -> Result<bool, StoreError> {
        let d: Deleted = self
            .req(
                ctx,
                Method::DELETE,
                &[paths::TASK_CONTEXT, task_id],
                NO_BODY,
                Idempotent::Yes,
            )
            .await?;
        Ok(d.deleted)
    }

    async fn store_plan_context(
        &self,
        ctx: &CallerContext,
        context: PlanContext,
    ) -> Result<PlanContext, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::PLAN_CONTEXT],
            Some(&context),
            Idempotent::Yes,
        )
        .await
    }

    async fn get_plan_context(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        self.opt(ctx, "plan_context", &[paths::PLAN_CONTEXT, plan_id])
            .await
    }

    async fn get_plan_by_correlation(
        &self,
        ctx: &CallerContext,
        correlation_id: &str,
    ) -> Result<Option<PlanContext>, StoreError> {
        self.opt(
            ctx,
            "plan_context",
            &[paths::PLAN_CONTEXT, "by-correlation", correlation_id],
        )
        .await
    }

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
        let idempotent = if expect == Expect::Any {
            Idempotent::Yes
        } else {
            Idempotent::No
        };
        self.req(
            ctx,
            Method::PUT,
            &[paths::WORKING, plan_id, key],
            Some(&body),
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
        self.opt(ctx, "state", &[paths::WORKING, plan_id, key])
            .await
    }

    async fn list_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
    ) -> Result<Vec<StateEntry>, StoreError> {
        self.req(
            ctx,
            Method::GET,
            &[paths::WORKING, plan_id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
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
        self.done(
            ctx,
            Method::POST,
            &[paths::ATOMIC_APPEND],
            Some(&body),
            Idempotent::No,
        )
        .await
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
        self.req(
            ctx,
            Method::POST,
            &[paths::ATOMIC_INCREMENT],
            Some(&body),
            Idempotent::No,
        )
        .await
    }

    async fn delete_state(
        &self,
        ctx: &CallerContext,
        plan_id: &str,
        key: &str,
    ) -> Result<bool, StoreError> {
        let d: Deleted = self
            .req(
                ctx,
                Method::DELETE,
                &[paths::WORKING, plan_id, key],
                NO_BODY,
                Idempotent::Yes,
            )
            .await?;
        Ok(d.deleted)
    }

    async fn clear_state(&self, ctx: &CallerContext, plan_id: &str) -> Result<u64, StoreError> {
        let d: DeletedCount = self
            .req(
                ctx,
                Method::DELETE,
                &[paths::WORKING, plan_id],
                NO_BODY,
                Idempotent::Yes,
            )
            .await?;
        Ok(d.deleted_count)
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
        self.req(
            ctx,
            Method::POST,
            &[paths::SEMANTIC],
            Some(&knowledge),
            Idempotent::Yes,
        )
        .await
    }

    async fn query_knowledge(
        &self,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::SEMANTIC_QUERY],
            Some(query),
            Idempotent::Yes,
        )
        .await
    }

    async fn get_knowledge(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Knowledge>, StoreError> {
        self.opt(ctx, "knowledge", &[paths::SEMANTIC, id]).await
    }

    async fn delete_knowledge(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        self.done(
            ctx,
            Method::DELETE,
            &[paths::SEMANTIC, id],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }
}

#[async_trait]
impl AuditLog for RemoteMemory {
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        self.req(
            ctx,
            Method::POST,
            &[paths::AUDIT_QUERY],
            Some(query),
            Idempotent::Yes,
        )
        .await
    }

    async fn flush(&self) -> Result<(), StoreError> {
        // Any key may ask for a flush; it reveals nothing.
        self.inner
            .call::<Value>(
                None,
                Method::POST,
                &[paths::AUDIT_FLUSH],
                NO_BODY,
                &[],
                Idempotent::Yes,
            )
            .await
            .map(|_| ())
    }

    async fn append(&self, ctx: &CallerContext, entry: AuditEntry) -> Result<(), StoreError> {
        self.done(
            ctx,
            Method::POST,
            &[paths::AUDIT],
            Some(&entry),
            Idempotent::No,
        )
        .await
    }
}

#[async_trait]
impl NamespaceAdmin for RemoteMemory {
    async fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError> {
        self.req(
            ctx,
            Method::GET,
            &[paths::NAMESPACES],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
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
        let m: Moved = self
            .req(
                ctx,
                Method::POST,
                &[paths::NAMESPACES_MOVE],
                Some(&body),
                Idempotent::Yes,
            )
            .await?;
        Ok(m.moved)
    }

    async fn delete_expired(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        let d: DeletedCount = self
            .req(
                ctx,
                Method::POST,
                &[paths::EXPIRED_DELETE],
                Some(&DeleteExpired { batch }),
                Idempotent::Yes,
            )
            .await?;
        Ok(d.deleted_count)
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
        self.req(
            ctx,
            Method::POST,
            &[paths::VECTORS],
            Some(&body),
            Idempotent::Yes,
        )
        .await
    }

    async fn vector_status(&self, ctx: &CallerContext) -> Result<VectorStatus, StoreError> {
        self.req(
            ctx,
            Method::GET,
            &[paths::VECTORS_STATUS],
            NO_BODY,
            Idempotent::Yes,
        )
        .await
    }

    async fn embed_pending(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        let e: Embedded = self
            .req(
                ctx,
                Method::POST,
                &[paths::VECTORS_EMBED],
                Some(&EmbedPending { batch }),
                Idempotent::Yes,
            )
            .await?;
        Ok(e.embedded)
    }
}
