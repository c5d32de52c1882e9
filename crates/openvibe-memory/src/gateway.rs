//! [`MemoryGateway`]: the one entry point from an identity to memory.
//!
//! Every caller context the memory core makes for a principal is made here
//! ([`caller_context`](crate::access::caller_context)), once, from the principal, the tenant, the project
//! and the clearance. The memory types ([`WorkspaceMemory`], [`AgentMemory`])
//! then carry that context into every store call; the assembler and the
//! memory filesystem reach records only through them. With a
//! [`Governance`] policy ([`MemoryGateway::with_governance`]) every context
//! carries its principal's namespace grants.

use std::sync::Arc;

use openvibe_governance::{Governance, Resolved};
use openvibe_protocols::{CallerContext, Clearance, Principal, RecordMeta, Stores};

use crate::access::{ClearanceProfile, caller_context};
use crate::agent::AgentMemory;
use crate::raw_writer::RawLogConfig;
use crate::workspace::WorkspaceMemory;

/// Memory for the principals of one tenant (and optionally one project)
/// over one set of stores.
///
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// use openvibe_memory::{ClearanceProfile, MemoryGateway, in_memory_stores};
/// use openvibe_protocols::{Classification, Fact, FactQuery};
///
/// let gateway = MemoryGateway::new().with_stores(in_memory_stores()).with_tenant("acme");
/// let workspace = gateway.workspace().unwrap();
/// workspace.store_fact(Fact::new("f1", "Acme renews in May").domain("revenue")).await?;
/// let cro = gateway.agent_memory(
///     "cro",
///     &ClearanceProfile::new("cro").with_domain("revenue", Classification::Internal),
/// );
/// assert_eq!(cro.context().tenant_id(), "acme");
/// let facts = cro.workspace_facts(&FactQuery::new().domain("revenue")).await?;
/// assert_eq!(facts.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Default)]
pub struct MemoryGateway {
    tenant_id: Option<String>,
    project_id: Option<String>,
    stores: Option<Stores>,
    workspace: Option<WorkspaceMemory>,
    governance: Option<Arc<Governance>>,
    raw_config: Option<RawLogConfig>,
}

impl std::fmt::Debug for MemoryGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryGateway")
            .field("tenant_id", &self.tenant_id())
            .field("project_id", &self.project_id)
            .field("stores", &self.stores.is_some())
            .field("workspace", &self.workspace.is_some())
            .field("governed", &self.governance.is_some())
            .finish()
    }
}

impl MemoryGateway {
    /// A gateway for the default tenant, with no stores (each agent memory
    /// gets fresh in-memory stores) and no workspace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keep memory in `stores`: agent memories record episodes and insights
    /// there, and unless a workspace is given, the workspace keeps its facts
    /// there (acting as the tenant's system).
    #[must_use]
    pub fn with_stores(mut self, stores: Stores) -> Self {
        self.stores = Some(stores);
        self
    }

    /// Use `workspace` as the shared workspace (instead of one over the stores).
    #[must_use]
    pub fn with_workspace(mut self, workspace: WorkspaceMemory) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// Act in `tenant_id` (default `default`).
    #[must_use]
    pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> Self {
        self.tenant_id = Some(tenant_id.into());
        self
    }

    /// Act in `project_id`: records of other projects are invisible and
    /// new records belong to it.
    #[must_use]
    pub fn with_project(mut self, project_id: impl Into<String>) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    /// Govern every context this gateway makes by `governance`: each
    /// principal gets the grants its policy gives it (home namespace: its
    /// id), and agent memories promote automatically when the policy's
    /// `auto_promote` is on. Without governance, contexts are ungoverned.
    #[must_use]
    pub fn with_governance(mut self, governance: Arc<Governance>) -> Self {
        self.governance = Some(governance);
        self
    }

    /// How agent memories batch, retain and redact their raw logs (L1).
    #[must_use]
    pub fn with_raw_log_config(mut self, config: RawLogConfig) -> Self {
        self.raw_config = Some(config);
        self
    }

    /// The governance policy, when one was given.
    pub fn governance(&self) -> Option<&Governance> {
        self.governance.as_deref()
    }

    /// The tenant.
    pub fn tenant_id(&self) -> &str {
        self.tenant_id
            .as_deref()
            .unwrap_or(RecordMeta::DEFAULT_TENANT)
    }

    /// The stores, when some were given.
    pub fn stores(&self) -> Option<&Stores> {
        self.stores.as_ref()
    }

    /// The caller context of `principal` with `clearance`, in this
    /// gateway's tenant and project. The one place a context is built from
    /// an identity.
    pub fn context(&self, principal: Principal, clearance: Clearance) -> CallerContext {
        let grants = self
            .governance
            .as_deref()
            .map(|g| g.grants_for(&Resolved::new(principal.clone())));
        let ctx = caller_context(
            self.tenant_id(),
            self.project_id.as_deref(),
            principal,
            clearance,
        );
        match grants {
            Some(grants) => ctx.with_grants(grants),
            None => ctx,
        }
    }

    /// The system of this tenant and project (unrestricted, privileged).
    pub fn system_context(&self) -> CallerContext {
        CallerContext::system()
            .with_tenant(self.tenant_id())
            .with_project_id(self.project_id.clone())
    }

    /// The shared workspace: the one given, else one over the stores'
    /// facts acting as [`MemoryGateway::system_context`]; `None` with neither.
    pub fn workspace(&self) -> Option<WorkspaceMemory> {
        match (&self.workspace, &self.stores) {
            (Some(ws), _) => Some(ws.clone()),
            (None, Some(stores)) => Some(
                WorkspaceMemory::with_store(stores.facts.clone())
                    .with_context(self.system_context()),
            ),
            (None, None) => None,
        }
    }

    /// The memory of agent `agent_id`, acting as that agent with
    /// `clearance`, over the gateway's stores (fresh in-memory ones when it
    /// has none) and connected to its workspace.
    pub fn agent_memory(&self, agent_id: &str, clearance: &ClearanceProfile) -> AgentMemory {
        let ctx = self.context(Principal::agent(agent_id), clearance.clearance());
        let mut memory = AgentMemory::new(agent_id).with_context(ctx);
        if let Some(stores) = &self.stores {
            memory = memory
                .with_stores(stores.episodes.clone(), stores.insights.clone())
                .with_raw_log(stores.raw.clone())
                .with_audit(stores.audit.clone())
                .with_vectors(stores.vectors.clone())
                .with_beliefs(stores.beliefs.clone());
        }
        if let Some(config) = &self.raw_config {
            memory = memory.with_raw_log_config(config.clone());
        }
        if let Some(governance) = &self.governance {
            memory = memory.with_auto_promote(governance.file().auto_promote.clone());
        }
        if let Some(workspace) = self.workspace() {
            memory = memory.with_workspace(workspace);
        }
        memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::Classification;

    #[test]
    fn contexts_carry_the_gateways_tenant_and_project() {
        let gateway = MemoryGateway::new()
            .with_stores(crate::in_memory_stores())
            .with_tenant("t1")
            .with_project("p1");
        let ctx = gateway.context(
            Principal::user("ann"),
            Clearance::public_only().with_domain("hr", Classification::Internal),
        );
        assert_eq!(ctx.tenant_id(), "t1");
        assert_eq!(ctx.project_id(), Some("p1"));
        assert_eq!(ctx.owner_key(), "user:ann");
        assert!(!ctx.is_privileged());
        assert!(ctx.clearance().allows("hr", Classification::Internal));
        let ws = gateway.workspace().unwrap();
        assert_eq!(ws.context(), &gateway.system_context());
        assert_eq!(
            ws.context().tenant_id(),
            "t1",
            "set after the stores, still applies"
        );
        let memory = gateway.agent_memory("cro", &ClearanceProfile::new("cro"));
        assert_eq!(memory.context().owner_key(), "agent:cro");
        assert_eq!(memory.context().project_id(), Some("p1"));
        assert!(memory.workspace().is_some());
        assert!(MemoryGateway::new().workspace().is_none());
        assert_eq!(MemoryGateway::new().tenant_id(), "default");
    }
}
