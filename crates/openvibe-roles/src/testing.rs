//! Fixtures for tests, examples and benchmarks (feature `testing`): the
//! discount CRO that the proposal, loop, console and CLI tests share, and
//! the discount request it handles.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openvibe_governance::Governance;
use openvibe_memory::{ClearanceProfile, MemoryGateway};
use openvibe_primitives::FnTool;
use openvibe_protocols::{
    Action, Classification, DecisionEvent, Impact, Insight, StoreError, Stores,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::{AuthorityConfig, ImpactRules, Role};

/// The CRO of the tests: owns `revenue`, may give discounts on its own
/// (`give_discount` through the tool `apply_discount`), is confident
/// about them (one strong insight, `i-discount`), rates amounts above
/// 10,000 high impact (so a large discount is proposed to a person) and
/// files its proposals in the stores it is built over.
#[derive(Clone)]
pub struct DiscountCro {
    stores: Stores,
    runs: Arc<AtomicUsize>,
    governance: Option<Arc<Governance>>,
    gate: Option<Arc<Notify>>,
}

impl DiscountCro {
    /// The CRO over `stores`.
    pub fn new(stores: &Stores) -> Self {
        Self {
            stores: stores.clone(),
            runs: Arc::default(),
            governance: None,
            gate: None,
        }
    }

    /// Count every discount applied in `runs`.
    #[must_use]
    pub fn counting(mut self, runs: Arc<AtomicUsize>) -> Self {
        self.runs = runs;
        self
    }

    /// Its memory governed by `governance` (namespaces from its grants).
    #[must_use]
    pub fn governed(mut self, governance: Arc<Governance>) -> Self {
        self.governance = Some(governance);
        self
    }

    /// Hold every discount until `gate` is notified (a long action).
    #[must_use]
    pub fn gated(mut self, gate: Arc<Notify>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// The role, its insight stored.
    pub async fn role(self) -> Result<Role, StoreError> {
        let clearance =
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted);
        let mut gateway = MemoryGateway::new().with_stores(self.stores.clone());
        if let Some(governance) = self.governance {
            gateway = gateway.with_governance(governance);
        }
        let memory = gateway.agent_memory("cro", &clearance);
        memory
            .store_insight(discount_insight())
            .await
            .map_err(|e| StoreError::backend(format!("the CRO's insight: {e}")))?;
        let (runs, gate) = (self.runs, self.gate);
        let tool = FnTool::new("apply_discount", "Apply a discount.", move |d: Value| {
            let (runs, gate) = (runs.clone(), gate.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if let Some(gate) = gate {
                    gate.notified().await;
                }
                Ok::<_, String>(format!("{}% applied", d["pct"]))
            }
        });
        let rules = ImpactRules::new()
            .rule("amount > 10000", Impact::High)
            .map_err(|e| StoreError::backend(format!("the CRO's impact rule: {e}")))?;
        Ok(Role::new("cro")
            .domains(["revenue"])
            .authority(AuthorityConfig::new().autonomous(["give_discount"]))
            .impact_rules(rules)
            .clearance(clearance)
            .with_agent_memory(memory)
            .action_tool(tool)
            .with_proposals(self.stores.proposals.clone()))
    }
}

/// The CRO's strong insight about discounts (`i-discount`, 0.9, in
/// `revenue`): what makes it confident enough to act on one.
pub fn discount_insight() -> Insight {
    Insight::new(
        "i-discount",
        "cro",
        "annual plan discounts close deals",
        0.9,
    )
    .domain("revenue")
}

/// Acme's request for a 10% discount on `amount` (event `id`): acted on
/// at 10,000 and below, proposed to a person above.
pub fn discount(id: &str, amount: u64) -> DecisionEvent {
    DecisionEvent::new(id, "discount.requested", "revenue")
        .summary(format!("Acme asks a discount on {amount}"))
        .data(json!({"amount": amount}))
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10}),
        ))
}
