//! Clearance profiles and filtering records already in hand by clearance.
//!
//! The access rule itself is the contract's
//! ([`openvibe_protocols::read_allowed`], [`Classification::readable_at`]);
//! stores apply it inside their queries. [`AccessFilter`] is for records
//! already in hand, e.g. from an outside source.

use std::collections::BTreeMap;
use std::ops::Index;

pub use openvibe_protocols::Governed;
use openvibe_protocols::{CallerContext, Classification, Clearance, Principal};

/// The caller context of `principal` in `tenant_id` and `project_id` with
/// `clearance`: how the memory core turns an identity into a context.
pub(crate) fn caller_context(
    tenant_id: &str,
    project_id: Option<&str>,
    principal: Principal,
    clearance: Clearance,
) -> CallerContext {
    CallerContext::new(tenant_id, principal)
        .with_clearance(clearance)
        .with_project_id(project_id.map(str::to_owned))
}

/// Classification ranks: public 0, internal 1, confidential 2, restricted 3.
/// Index it with a [`Classification`] (`CLASSIFICATION_RANK[Classification::Internal] == 1`).
pub const CLASSIFICATION_RANK: ClassificationRanks = ClassificationRanks;

/// The type of [`CLASSIFICATION_RANK`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassificationRanks;

/// [`Classification::rank`] of each classification, in rank order.
const RANKS: [u8; 4] = [
    Classification::Public.rank(),
    Classification::Internal.rank(),
    Classification::Confidential.rank(),
    Classification::Restricted.rank(),
];

impl Index<Classification> for ClassificationRanks {
    type Output = u8;
    fn index(&self, c: Classification) -> &u8 {
        &RANKS[usize::from(c.rank())]
    }
}

/// Per-agent (or per-person) read permissions: the highest classification
/// readable in each domain. Public records are readable by everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClearanceProfile {
    /// Whose profile it is.
    pub agent_id: String,
    /// Highest readable classification per domain.
    pub domain_clearance: BTreeMap<String, Classification>,
}

impl ClearanceProfile {
    /// A profile with no clearance beyond public records.
    pub fn new(agent_id: impl Into<String>) -> Self {
        Self {
            agent_id: agent_id.into(),
            domain_clearance: BTreeMap::new(),
        }
    }

    /// Grant `level` in `domain`.
    #[must_use]
    pub fn with_domain(mut self, domain: impl Into<String>, level: Classification) -> Self {
        self.domain_clearance.insert(domain.into(), level);
        self
    }

    /// Whether this profile's clearance reaches `record`
    /// ([`Classification::readable_at`] its level in the record's domain).
    pub fn can_access(&self, record: &impl Governed) -> bool {
        let level = self.domain_clearance.get(record.domain()).copied();
        record.meta().classification.readable_at(level)
    }

    /// The profile as a protocol [`Clearance`].
    pub fn clearance(&self) -> Clearance {
        Clearance::from(self.domain_clearance.clone())
    }

    /// A caller context for this profile's agent in `tenant_id` (no project).
    pub fn context(&self, tenant_id: &str) -> CallerContext {
        self.context_in(tenant_id, None)
    }

    /// A caller context for this profile's agent in `tenant_id` and `project_id`.
    pub fn context_in(&self, tenant_id: &str, project_id: Option<&str>) -> CallerContext {
        caller_context(
            tenant_id,
            project_id,
            Principal::agent(self.agent_id.clone()),
            self.clearance(),
        )
    }
}

/// Filters records already in hand by a [`ClearanceProfile`].
#[derive(Debug, Clone)]
pub struct AccessFilter {
    clearance: ClearanceProfile,
}

impl AccessFilter {
    /// A filter for `clearance`.
    pub fn new(clearance: ClearanceProfile) -> Self {
        Self { clearance }
    }

    /// The readable records, in their order.
    pub fn filter<R: Governed>(&self, records: Vec<R>) -> Vec<R> {
        records
            .into_iter()
            .filter(|r| self.clearance.can_access(r))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    //! Ported from the seed's tests/test_access_control.py.
    use super::*;
    use openvibe_protocols::Fact;
    use std::collections::BTreeSet;

    #[test]
    fn test_classification_rank_order() {
        assert_eq!(CLASSIFICATION_RANK[Classification::Public], 0);
        assert_eq!(CLASSIFICATION_RANK[Classification::Internal], 1);
        assert_eq!(CLASSIFICATION_RANK[Classification::Confidential], 2);
        assert_eq!(CLASSIFICATION_RANK[Classification::Restricted], 3);
    }

    #[test]
    fn test_clearance_public_always_accessible() {
        let profile = ClearanceProfile::new("cro");
        let fact = Fact::new("f1", "public info").classification(Classification::Public);
        assert!(profile.can_access(&fact));
    }

    #[test]
    fn test_clearance_internal_with_domain() {
        let profile = ClearanceProfile::new("cro").with_domain("revenue", Classification::Internal);
        let fact = Fact::new("f1", "internal")
            .domain("revenue")
            .classification(Classification::Internal);
        assert!(profile.can_access(&fact));
    }

    #[test]
    fn test_clearance_denied_insufficient() {
        let profile =
            ClearanceProfile::new("cmo").with_domain("marketing", Classification::Internal);
        let fact = Fact::new("f1", "secret")
            .domain("revenue")
            .classification(Classification::Confidential);
        assert!(!profile.can_access(&fact));
    }

    #[test]
    fn test_clearance_denied_no_domain() {
        let profile =
            ClearanceProfile::new("cmo").with_domain("marketing", Classification::Confidential);
        let fact = Fact::new("f1", "revenue data")
            .domain("revenue")
            .classification(Classification::Internal);
        assert!(!profile.can_access(&fact));
    }

    #[test]
    fn test_clearance_confidential_can_access_internal() {
        let profile =
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential);
        let fact = Fact::new("f1", "internal data")
            .domain("revenue")
            .classification(Classification::Internal);
        assert!(profile.can_access(&fact));
    }

    #[test]
    fn test_access_filter() {
        let profile =
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential);
        let facts = vec![
            Fact::new("f1", "public").classification(Classification::Public),
            Fact::new("f2", "revenue internal")
                .domain("revenue")
                .classification(Classification::Internal),
            Fact::new("f3", "marketing secret")
                .domain("marketing")
                .classification(Classification::Confidential),
        ];
        let af = AccessFilter::new(profile);
        let filtered = af.filter(facts);
        assert_eq!(filtered.len(), 2);
        let ids: BTreeSet<&str> = filtered.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, BTreeSet::from(["f1", "f2"]));
    }

    #[test]
    fn profile_matches_the_store_rule() {
        let profile =
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential);
        let ctx = profile.context("t1");
        assert_eq!(ctx.tenant_id(), "t1");
        assert_eq!(ctx.owner_key(), "agent:cro");
        for domain in ["revenue", "marketing", ""] {
            for c in Classification::ALL {
                let fact = Fact::new("f", "x").domain(domain).classification(c);
                assert_eq!(
                    profile.can_access(&fact),
                    ctx.clearance().allows(domain, c),
                    "{domain} {c}"
                );
            }
        }
    }
}
