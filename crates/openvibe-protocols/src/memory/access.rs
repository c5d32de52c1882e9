//! The access decision: who may read and who may change a record.
//!
//! This is the only place the rule is written. The in-memory backend
//! evaluates [`read_allowed`] on its indexed columns inside the index walk;
//! the Postgres backend translates the same rule into its SQL predicate
//! (with [`Classification::readable_at`] deciding which classifications a
//! clearance level reaches); the assembler, the memory filesystem and the
//! clearance profiles call [`CallerContext::can_read`] or
//! [`Clearance::allows`](super::Clearance::allows). The conformance suite
//! checks every backend against it.

use super::governance::Change;
use super::{
    CallerContext, Classification, Episode, Fact, Insight, RecordMeta, RetrievalTrace, StoreError,
};

/// A record that carries governance metadata and a domain: what the access
/// rule looks at.
pub trait Governed {
    /// The record's governance metadata.
    fn meta(&self) -> &RecordMeta;
    /// The record's domain (empty when none).
    fn domain(&self) -> &str;
}

macro_rules! governed {
    ($($t:ty),*) => {$(
        impl Governed for $t {
            fn meta(&self) -> &RecordMeta {
                &self.meta
            }
            fn domain(&self) -> &str {
                &self.domain
            }
        }
    )*};
}
governed!(Fact, Insight, Episode, RetrievalTrace);

/// The read rule, given its inputs for a record of the caller's tenant:
/// the record's namespace is readable by the caller
/// ([`CallerContext::rights`]), its project is visible to the caller
/// ([`CallerContext::sees_project`]), and the caller owns it or its
/// clearance `level` in the record's domain reaches its `classification`.
///
/// ```
/// use openvibe_protocols::{Classification::*, read_allowed};
/// assert!(read_allowed(true, true, true, Restricted, None), "owners read their own records");
/// assert!(read_allowed(true, true, false, Internal, Some(Confidential)));
/// assert!(!read_allowed(true, false, true, Public, None), "another project is invisible");
/// assert!(!read_allowed(false, true, true, Public, None), "so is an unreadable namespace");
/// ```
pub fn read_allowed(
    namespace_readable: bool,
    project_visible: bool,
    owned: bool,
    classification: Classification,
    level: Option<Classification>,
) -> bool {
    namespace_readable && project_visible && (owned || classification.readable_at(level))
}

/// The change rule (update, replace, delete), given its inputs for a record
/// of the caller's tenant that the caller can read: the caller has the
/// right the change needs in the record's namespace (`right_granted`), and
/// owns the record or may manage others' records there (`manage`: the
/// namespace's manage right, or a privileged caller).
pub fn modify_allowed(
    right_granted: bool,
    project_visible: bool,
    owned: bool,
    manage: bool,
) -> bool {
    right_granted && project_visible && (owned || manage)
}

impl CallerContext {
    /// Whether a record with `meta` and `domain` is visible to this caller:
    /// same tenant, not expired ([`RecordMeta::is_expired`]), and
    /// [`read_allowed`]. The one read rule of every store.
    pub fn can_read(&self, meta: &RecordMeta, domain: &str) -> bool {
        meta.tenant_id == self.tenant_id()
            && !meta.is_expired(chrono::Utc::now())
            && read_allowed(
                self.rights(&meta.namespace).read,
                self.sees_project(meta.project_id.as_deref()),
                self.is_owner(&meta.owner),
                meta.classification,
                self.clearance().level_for(domain),
            )
    }

    /// [`CallerContext::can_read`] for a [`Governed`] record.
    pub fn can_read_record(&self, record: &impl Governed) -> bool {
        self.can_read(record.meta(), record.domain())
    }

    /// Whether this caller may make `change` to a record with `meta`:
    /// same tenant, and [`modify_allowed`].
    pub fn can_change(&self, meta: &RecordMeta, change: Change) -> bool {
        let rights = self.rights(&meta.namespace);
        meta.tenant_id == self.tenant_id()
            && modify_allowed(
                rights.allows(change),
                self.sees_project(meta.project_id.as_deref()),
                self.is_owner(&meta.owner),
                rights.manage,
            )
    }

    /// Whether this caller may update a record with `meta`
    /// ([`CallerContext::can_change`] with [`Change::Write`]).
    pub fn can_modify(&self, meta: &RecordMeta) -> bool {
        self.can_change(meta, Change::Write)
    }

    /// `Ok` when this caller may make `change` to a record with `meta`
    /// ([`CallerContext::can_change`]); otherwise a
    /// [`StoreError::Unauthorized`] for `operation` whose reason names the
    /// rule that refused it: the namespace right, or the ownership rule.
    pub fn require_change(
        &self,
        meta: &RecordMeta,
        change: Change,
        operation: impl Into<String>,
    ) -> Result<(), StoreError> {
        if self.can_change(meta, change) {
            return Ok(());
        }
        let rights = self.rights(&meta.namespace);
        if !rights.allows(change) {
            return Err(self.unauthorized(
                operation,
                format!(
                    "the policy of namespace `{}` grants {} no {} right",
                    meta.namespace,
                    self.principal(),
                    change.right()
                ),
            ));
        }
        if self.grants().is_some() {
            return Err(self.unauthorized(
                operation,
                format!(
                    "it is owned by {} and the policy of namespace `{}` grants {} no manage right",
                    meta.owner,
                    meta.namespace,
                    self.principal()
                ),
            ));
        }
        Err(self.owned_by_other(operation, &meta.owner))
    }

    /// [`CallerContext::require_change`] with [`Change::Write`].
    pub fn require_modify(
        &self,
        meta: &RecordMeta,
        operation: impl Into<String>,
    ) -> Result<(), StoreError> {
        self.require_change(meta, Change::Write, operation)
    }

    /// The [`StoreError::Unauthorized`] a caller gets for `operation` on a
    /// record it can read but that `owner` owns.
    pub fn owned_by_other(&self, operation: impl Into<String>, owner: &str) -> StoreError {
        self.unauthorized(operation, format!("it is owned by {owner}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_and_modify_rules() {
        let meta = RecordMeta {
            owner: "agent:cro".into(),
            classification: Classification::Confidential,
            ..RecordMeta::default()
        };
        let cro = CallerContext::agent("cro");
        let cmo = CallerContext::agent("cmo");
        assert!(
            cro.can_read(&meta, "revenue"),
            "owners read their own records"
        );
        assert!(!cmo.can_read(&meta, "revenue"));
        let cleared = cmo
            .clone()
            .with_domain_clearance("revenue", Classification::Confidential);
        assert!(cleared.can_read(&meta, "revenue"));
        assert!(!cleared.can_modify(&meta), "clearance is not ownership");
        assert_eq!(
            cleared.require_modify(&meta, "delete fact f"),
            Err(StoreError::Unauthorized {
                principal: "agent:cmo".into(),
                operation: "delete fact f".into(),
                reason: "it is owned by agent:cro".into(),
            })
        );
        assert_eq!(cro.require_modify(&meta, "delete fact f"), Ok(()));
        assert!(cro.can_modify(&meta));
        assert!(CallerContext::system().can_modify(&meta));
        assert!(
            !CallerContext::system()
                .with_tenant("other")
                .can_read(&meta, "revenue")
        );
        let in_project = RecordMeta {
            project_id: Some("p1".into()),
            ..meta.clone()
        };
        assert!(!cro.can_read(&in_project, "revenue"));
        assert!(
            cro.clone()
                .with_project("p1")
                .can_read(&in_project, "revenue")
        );
        assert!(!cro.clone().with_project("p2").can_modify(&in_project));
        let fact = Fact::new("f", "x")
            .domain("revenue")
            .classification(Classification::Internal);
        assert!(cleared.can_read_record(&fact));
        assert!(!cmo.can_read_record(&fact));
    }

    /// The rule, exhaustively, against its definition in words.
    #[test]
    fn read_rule_truth_table() {
        for ns in [false, true] {
            for project_visible in [false, true] {
                for owned in [false, true] {
                    for c in Classification::ALL {
                        for level in std::iter::once(None).chain(Classification::ALL.map(Some)) {
                            let cleared = c == Classification::Public
                                || level.is_some_and(|l| l.rank() >= c.rank());
                            assert_eq!(
                                read_allowed(ns, project_visible, owned, c, level),
                                ns && project_visible && (owned || cleared),
                                "{ns} {project_visible} {owned} {c} {level:?}"
                            );
                        }
                    }
                    for manage in [false, true] {
                        assert_eq!(
                            modify_allowed(ns, project_visible, owned, manage),
                            ns && project_visible && (owned || manage)
                        );
                    }
                }
            }
        }
    }
}
