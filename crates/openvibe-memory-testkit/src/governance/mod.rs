//! Governance: namespace policies, project isolation and ownership enforced
//! by the store, on every record kind; the access matrix of the source
//! design (seed 003) as written; and randomized leak checks against the
//! reference model and the contract's rules.
//!
//! One file per concern: `seed_003` (the source design's matrix),
//! `namespaces` (a namespace's rules on every record kind), `draw` (the
//! random callers the leak checks share), `leak` (facts, then every kind
//! of the registry kept by id, through `kept`), `hybrid` (knowledge
//! search), `audit`, `promotion` and `migration`.

use openvibe_protocols::{Fact, Grants, Rights};

use crate::support::fact_ids;

mod audit;
mod draw;
mod hybrid;
mod kept;
mod leak;
mod migration;
mod namespaces;
mod promotion;
mod seed_003;

pub use audit::{
    governance_audit_chain_holds, governance_audit_filters_and_pages, governance_audit_trail,
};
pub use hybrid::governance_hybrid_search_leak_check;
pub use leak::{LEAK_CHECKS, governance_randomized_leak_check};
pub use migration::governance_namespace_migration;
pub use namespaces::{governance_changes_need_the_right, governance_working_and_semantic_records};
pub use promotion::governance_promotion;
pub use seed_003::governance_seed_003_access_matrix;

/// The ids of `facts`, sorted.
fn ids_of(facts: &[Fact]) -> Vec<String> {
    let mut ids: Vec<String> = fact_ids(facts).into_iter().map(str::to_owned).collect();
    ids.sort();
    ids
}

/// Fact `id` in namespace `ns` (its content names both).
fn fact(id: &str, ns: &str) -> Fact {
    Fact::new(id, format!("{id} lives in {ns}")).namespace(ns)
}

/// Grants in one namespace: `rights`, not project-scoped, recall = it.
fn only(ns: &str, rights: Rights) -> Grants {
    Grants::new(ns).grant(ns, rights, false).recall([ns])
}
