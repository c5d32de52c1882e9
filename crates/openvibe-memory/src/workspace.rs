//! Workspace memory: the shared, classified fact store of an organisation.

use std::sync::Arc;

use openvibe_protocols::{CallerContext, Fact, FactQuery, FactStore};

use crate::access::ClearanceProfile;
use crate::error::MemoryError;
use openvibe_in_memory::InMemoryFactStore;

/// Shared org-level facts with access control, over any [`FactStore`].
///
/// Cheap to clone (the store is shared). Methods without a caller context
/// act as the workspace's own context (by default [`CallerContext::system`]);
/// the `*_as` variants act as the given caller. Queries apply clearance
/// inside the store, so `limit` readable facts come back whenever that many
/// exist, and they count the returned facts as accessed (persisted).
#[derive(Clone)]
pub struct WorkspaceMemory {
    store: Arc<dyn FactStore>,
    ctx: CallerContext,
}

impl Default for WorkspaceMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WorkspaceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceMemory")
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

impl WorkspaceMemory {
    /// Namespace given to facts stored without one.
    pub const NAMESPACE: &'static str = "shared";

    /// A workspace over a fresh in-memory store, acting as the system.
    pub fn new() -> Self {
        Self::with_store(Arc::new(InMemoryFactStore::new()))
    }

    /// A workspace over `store`, acting as the system.
    pub fn with_store(store: Arc<dyn FactStore>) -> Self {
        Self {
            store,
            ctx: CallerContext::system(),
        }
    }

    /// Act as `ctx` when no caller is given (its tenant and project also
    /// apply to [`WorkspaceMemory::query`]).
    #[must_use]
    pub fn with_context(mut self, ctx: CallerContext) -> Self {
        self.ctx = ctx;
        self
    }

    /// The underlying store.
    pub fn store(&self) -> &Arc<dyn FactStore> {
        &self.store
    }

    /// The workspace's own caller context.
    pub fn context(&self) -> &CallerContext {
        &self.ctx
    }

    /// Store (insert or replace) a fact as the workspace's context.
    pub async fn store_fact(&self, fact: Fact) -> Result<Fact, MemoryError> {
        self.store_fact_as(&self.ctx, fact).await
    }

    /// Store (insert or replace) a fact as `ctx` (which becomes its owner).
    pub async fn store_fact_as(
        &self,
        ctx: &CallerContext,
        mut fact: Fact,
    ) -> Result<Fact, MemoryError> {
        if fact.meta.namespace.is_empty() {
            fact.meta.namespace = Self::NAMESPACE.to_owned();
        }
        Ok(self.store.store(ctx, fact).await?)
    }

    /// Facts readable with `clearance` (as its agent, in the workspace's
    /// tenant and project), matching `query`; counted as accessed.
    pub async fn query(
        &self,
        clearance: &ClearanceProfile,
        query: FactQuery,
    ) -> Result<Vec<Fact>, MemoryError> {
        let ctx = clearance.context_in(self.ctx.tenant_id(), self.ctx.project_id());
        self.query_as(&ctx, query).await
    }

    /// Facts readable by `ctx` matching `query`; counted as accessed.
    pub async fn query_as(
        &self,
        ctx: &CallerContext,
        query: FactQuery,
    ) -> Result<Vec<Fact>, MemoryError> {
        Ok(self.store.query(ctx, &query.track_access(true)).await?)
    }

    /// Facts readable by `ctx` matching `query`, as the query says (access
    /// is counted only when it asks for it).
    pub async fn search_as(
        &self,
        ctx: &CallerContext,
        query: &FactQuery,
    ) -> Result<Vec<Fact>, MemoryError> {
        Ok(self.store.query(ctx, query).await?)
    }

    /// Count the facts among `ids` that `ctx` can read as accessed; returns
    /// how many were.
    pub async fn touch_as(
        &self,
        ctx: &CallerContext,
        ids: &[String],
    ) -> Result<usize, MemoryError> {
        Ok(self.store.touch(ctx, ids).await?)
    }

    /// One fact, if readable by `ctx`.
    pub async fn get_as(&self, ctx: &CallerContext, id: &str) -> Result<Option<Fact>, MemoryError> {
        Ok(self.store.get(ctx, id).await?)
    }

    /// Replace an existing fact as the workspace's context.
    pub async fn update_fact(&self, fact: Fact) -> Result<Fact, MemoryError> {
        self.update_fact_as(&self.ctx, fact).await
    }

    /// Replace an existing fact as `ctx`.
    pub async fn update_fact_as(
        &self,
        ctx: &CallerContext,
        fact: Fact,
    ) -> Result<Fact, MemoryError> {
        Ok(self.store.update(ctx, fact).await?)
    }

    /// Delete a fact as the workspace's context.
    pub async fn delete_fact(&self, id: &str) -> Result<(), MemoryError> {
        Ok(self.store.delete(&self.ctx, id).await?)
    }
}

#[cfg(test)]
mod tests {
    //! Ported from the seed's tests/test_workspace_memory.py, plus the
    //! clearance-inside-the-query and persisted-access cases.
    use super::*;
    use openvibe_protocols::Classification;

    #[tokio::test]
    async fn test_store_and_query() {
        let ws = WorkspaceMemory::new();
        let profile =
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential);
        ws.store_fact(
            Fact::new("f1", "Acme data")
                .domain("revenue")
                .classification(Classification::Internal),
        )
        .await
        .unwrap();
        let results = ws
            .query(&profile, FactQuery::new().domain("revenue"))
            .await
            .unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].content, "Acme data");
    }

    #[tokio::test]
    async fn test_query_filters_by_clearance() {
        let ws = WorkspaceMemory::new();
        ws.store_fact(Fact::new("f1", "Public info").classification(Classification::Public))
            .await
            .unwrap();
        ws.store_fact(
            Fact::new("f2", "Revenue secret")
                .domain("revenue")
                .classification(Classification::Confidential),
        )
        .await
        .unwrap();
        // CMO has no revenue clearance
        let cmo_profile =
            ClearanceProfile::new("cmo").with_domain("marketing", Classification::Internal);
        let results = ws.query(&cmo_profile, FactQuery::new()).await.unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].id, "f1"); // only public
    }

    #[tokio::test]
    async fn test_query_by_entity() {
        let ws = WorkspaceMemory::new();
        let profile = ClearanceProfile::new("cro");
        ws.store_fact(
            Fact::new("f1", "Acme info")
                .entity("acme")
                .classification(Classification::Public),
        )
        .await
        .unwrap();
        ws.store_fact(
            Fact::new("f2", "Beta info")
                .entity("beta")
                .classification(Classification::Public),
        )
        .await
        .unwrap();
        let results = ws
            .query(&profile, FactQuery::new().entity("acme"))
            .await
            .unwrap();
        assert_eq!(results.len(), 1);
    }

    #[tokio::test]
    async fn test_query_tracks_access() {
        let ws = WorkspaceMemory::new();
        let profile = ClearanceProfile::new("cro");
        ws.store_fact(Fact::new("f1", "tracked").classification(Classification::Public))
            .await
            .unwrap();
        let results = ws.query(&profile, FactQuery::new()).await.unwrap();
        assert_eq!(results[0].access_count, 1);
        assert!(results[0].last_accessed.is_some());
    }

    #[tokio::test]
    async fn test_update_fact() {
        let ws = WorkspaceMemory::new();
        let mut f = Fact::new("f1", "Original");
        ws.store_fact(f.clone()).await.unwrap();
        f.content = "Updated".into();
        ws.update_fact(f).await.unwrap();
        // Internal facts need clearance (the seed's profile was empty but
        // its store ignored clearance on this path); grant it explicitly.
        let profile = ClearanceProfile::new("cro").with_domain("", Classification::Internal);
        let results = ws
            .query(&profile, FactQuery::new().text("Updated"))
            .await
            .unwrap();
        assert_eq!(results.len(), 1);
    }

    #[tokio::test]
    async fn test_query_respects_limit() {
        let ws = WorkspaceMemory::new();
        let profile = ClearanceProfile::new("cro");
        for i in 0..20 {
            ws.store_fact(
                Fact::new(format!("f{i}"), format!("fact {i}"))
                    .classification(Classification::Public),
            )
            .await
            .unwrap();
        }
        let results = ws.query(&profile, FactQuery::new().limit(5)).await.unwrap();
        assert_eq!(results.len(), 5);
    }

    /// The seed fetched `limit * 3` candidates and filtered afterwards: with
    /// 50 unreadable facts ranked first it returned nothing.
    #[tokio::test]
    async fn clearance_is_applied_inside_the_query() {
        let ws = WorkspaceMemory::new();
        for i in 0..50 {
            ws.store_fact(
                Fact::new(format!("secret{i:02}"), format!("revenue secret {i}"))
                    .domain("revenue")
                    .classification(Classification::Confidential)
                    .confidence(0.99),
            )
            .await
            .unwrap();
        }
        for i in 0..5 {
            ws.store_fact(
                Fact::new(format!("open{i}"), format!("public note {i}"))
                    .domain("revenue")
                    .classification(Classification::Public)
                    .confidence(0.1),
            )
            .await
            .unwrap();
        }
        let cmo = ClearanceProfile::new("cmo");
        let results = ws.query(&cmo, FactQuery::new().limit(5)).await.unwrap();
        assert_eq!(results.len(), 5);
        assert!(results.iter().all(|f| f.id.starts_with("open")));
        // The same holds with an indexed filter.
        let results = ws
            .query(&cmo, FactQuery::new().domain("revenue").limit(5))
            .await
            .unwrap();
        assert_eq!(results.len(), 5);
    }

    #[tokio::test]
    async fn access_tracking_is_persisted() {
        let ws = WorkspaceMemory::new();
        let profile = ClearanceProfile::new("cro");
        ws.store_fact(Fact::new("f1", "tracked").classification(Classification::Public))
            .await
            .unwrap();
        ws.query(&profile, FactQuery::new()).await.unwrap();
        let second = ws.query(&profile, FactQuery::new()).await.unwrap();
        assert_eq!(second[0].access_count, 2);
        let stored = ws
            .get_as(&CallerContext::system(), "f1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.access_count, 2);
        assert_eq!(stored.meta.namespace, WorkspaceMemory::NAMESPACE);
        assert_eq!(stored.meta.owner, "service:system");
    }
}
