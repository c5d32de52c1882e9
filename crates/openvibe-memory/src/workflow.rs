//! [`WorkflowState`]: a plan's working memory as a small key/value API.

use std::collections::BTreeMap;
use std::sync::Arc;

use openvibe_protocols::{
    CallerContext, Expect, Knowledge, KnowledgeHit, KnowledgeQuery, KnowledgeStore, NewKnowledge,
    WorkingStore,
};
use serde_json::Value;

use crate::error::MemoryError;

/// The key [`WorkflowState::record_action`] appends to.
pub const ACTION_HISTORY: &str = "action_history";

/// One plan's working memory, as the caller.
///
/// Every call reads fresh from the store (no cached snapshot), and the
/// updates that read before they write are atomic in the store:
/// [`record_action`](Self::record_action) is an atomic append, so
/// concurrent workers on one plan lose no action; [`set`](Self::set) is
/// last-write-wins per key, and [`set_if_version`](Self::set_if_version) is
/// compare-and-set for read-modify-write of one key.
///
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// use std::sync::Arc;
/// use openvibe_in_memory::InMemoryWorkingStore;
/// use openvibe_memory::WorkflowState;
/// use openvibe_protocols::{CallerContext, NewPlan, PlanStore};
///
/// let store = Arc::new(InMemoryWorkingStore::new());
/// let ctx = CallerContext::user("alice");
/// let plan = store
///     .create_plan(&ctx, NewPlan { goal_event: "research.goal".into(), ..NewPlan::default() })
///     .await?;
/// let state = WorkflowState::new(store, ctx, plan.id);
/// state.record_action("research.requested").await?;
/// state.set("topic", serde_json::json!("LLM memory")).await?;
/// assert_eq!(state.get_action_history().await?, vec!["research.requested"]);
/// assert_eq!(state.get("topic").await?, Some(serde_json::json!("LLM memory")));
/// assert_eq!(state.cleanup().await?, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct WorkflowState {
    store: Arc<dyn WorkingStore>,
    knowledge: Option<Arc<dyn KnowledgeStore>>,
    ctx: CallerContext,
    plan_id: String,
}

impl std::fmt::Debug for WorkflowState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowState")
            .field("plan_id", &self.plan_id)
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

impl WorkflowState {
    /// The working memory of `plan_id` in `store`, used as `ctx`.
    pub fn new(
        store: Arc<dyn WorkingStore>,
        ctx: CallerContext,
        plan_id: impl Into<String>,
    ) -> Self {
        Self {
            store,
            knowledge: None,
            ctx,
            plan_id: plan_id.into(),
        }
    }

    /// Store and query knowledge for this plan in `knowledge`.
    #[must_use]
    pub fn with_knowledge(mut self, knowledge: Arc<dyn KnowledgeStore>) -> Self {
        self.knowledge = Some(knowledge);
        self
    }

    /// The plan.
    pub fn plan_id(&self) -> &str {
        &self.plan_id
    }

    /// Append `event` to the action history (atomic).
    pub async fn record_action(&self, event: &str) -> Result<(), MemoryError> {
        self.store
            .append_state(&self.ctx, &self.plan_id, ACTION_HISTORY, Value::from(event))
            .await?;
        Ok(())
    }

    /// The action history, oldest first (empty when nothing was recorded).
    pub async fn get_action_history(&self) -> Result<Vec<String>, MemoryError> {
        Ok(match self.get(ACTION_HISTORY).await? {
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect(),
            _ => Vec::new(),
        })
    }

    /// Set `key` (last write wins).
    pub async fn set(&self, key: &str, value: Value) -> Result<(), MemoryError> {
        self.store
            .set_state(&self.ctx, &self.plan_id, key, value, Expect::Any)
            .await?;
        Ok(())
    }

    /// Set `key` only if it is still at `version` (see [`WorkflowState::get_versioned`]);
    /// otherwise a `Conflict` error and nothing changes. Returns the new version.
    pub async fn set_if_version(
        &self,
        key: &str,
        value: Value,
        version: u64,
    ) -> Result<u64, MemoryError> {
        let entry = self
            .store
            .set_state(
                &self.ctx,
                &self.plan_id,
                key,
                value,
                Expect::Version(version),
            )
            .await?;
        Ok(entry.version)
    }

    /// Add `by` to the integer at `key` (atomic); returns the new value.
    pub async fn increment(&self, key: &str, by: i64) -> Result<i64, MemoryError> {
        let entry = self
            .store
            .increment_state(&self.ctx, &self.plan_id, key, by)
            .await?;
        Ok(entry.value.as_i64().unwrap_or_default())
    }

    /// The value at `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Value>, MemoryError> {
        Ok(self.get_versioned(key).await?.map(|(v, _)| v))
    }

    /// The value at `key` with its version.
    pub async fn get_versioned(&self, key: &str) -> Result<Option<(Value, u64)>, MemoryError> {
        Ok(self
            .store
            .get_state(&self.ctx, &self.plan_id, key)
            .await?
            .map(|e| (e.value, e.version)))
    }

    /// Every key and value.
    pub async fn get_all(&self) -> Result<BTreeMap<String, Value>, MemoryError> {
        Ok(self
            .store
            .list_state(&self.ctx, &self.plan_id)
            .await?
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect())
    }

    /// Delete `key`; `false` when it did not exist.
    pub async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        Ok(self
            .store
            .delete_state(&self.ctx, &self.plan_id, key)
            .await?)
    }

    /// Forget everything (the action history too).
    pub async fn clear(&self) -> Result<(), MemoryError> {
        self.cleanup().await.map(|_| ())
    }

    /// Delete every key; returns how many went.
    pub async fn cleanup(&self) -> Result<u64, MemoryError> {
        Ok(self.store.clear_state(&self.ctx, &self.plan_id).await?)
    }

    fn knowledge(&self) -> Result<&Arc<dyn KnowledgeStore>, MemoryError> {
        self.knowledge.as_ref().ok_or_else(|| {
            MemoryError::Store(openvibe_protocols::StoreError::invalid(
                "knowledge",
                "this WorkflowState has no knowledge store (see with_knowledge)",
            ))
        })
    }

    /// Store knowledge learned in this plan (its `plan_id` is set).
    pub async fn store_knowledge(&self, knowledge: NewKnowledge) -> Result<Knowledge, MemoryError> {
        let knowledge = NewKnowledge {
            plan_id: Some(self.plan_id.clone()),
            ..knowledge
        };
        Ok(self
            .knowledge()?
            .store_knowledge(&self.ctx, knowledge)
            .await?)
    }

    /// Query knowledge (the caller's own plus, when asked, public knowledge).
    pub async fn query_knowledge(
        &self,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, MemoryError> {
        Ok(self.knowledge()?.query_knowledge(&self.ctx, query).await?)
    }
}
