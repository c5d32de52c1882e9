//! Namespace governance as the stores see it: a caller's [`Grants`] (what
//! it may do in which namespace, resolved from a policy by whoever built
//! its context) and the scopes and placements derived from them.
//!
//! A record lives in one namespace (`RecordMeta::namespace`). A context
//! without grants is *ungoverned*: every namespace is readable and
//! writable, and only ownership, clearance and project decide (the
//! embedded default, and what existing code gets). A context with grants is
//! *governed*:
//!
//! - it reads only namespaces its grants let it read; searches and lists
//!   default to its recall namespaces (`self + shared`), and an explicit
//!   namespace list is intersected with what it may read, never widened;
//! - it writes to its home namespace by default, elsewhere only with the
//!   `write` right; in a project-scoped namespace a record belongs to the
//!   caller's project, in any other to no project (it spans projects);
//! - it updates records with `write`, deletes with `delete`, and changes
//!   records owned by others only with `manage` (or when privileged);
//! - records of no namespace (`""`, written before governance) are visible
//!   to governed callers only once migrated into a namespace.
//!
//! The rule is applied by [`CallerContext::can_read`](crate::CallerContext::can_read),
//! [`CallerContext::require_change`](crate::CallerContext::require_change) and
//! [`CallerContext::placement`](crate::CallerContext::placement), in every backend.

use std::collections::BTreeMap;

use chrono::TimeDelta;
use serde::{Deserialize, Serialize};

/// What a principal may do in one namespace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rights {
    /// Read its records.
    #[serde(default)]
    pub read: bool,
    /// Create records and update its own (only with `read`).
    #[serde(default)]
    pub write: bool,
    /// Delete its own records (only with `read`).
    #[serde(default)]
    pub delete: bool,
    /// Update and delete records owned by others (with `write` / `delete`).
    #[serde(default)]
    pub manage: bool,
    /// Approve or reject proposals waiting there (only with `read`; see
    /// [`CallerContext::may_approve`](crate::CallerContext::may_approve)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approve: bool,
}

impl Rights {
    /// No right at all.
    pub const NONE: Self = Self {
        read: false,
        write: false,
        delete: false,
        manage: false,
        approve: false,
    };
    /// Read only.
    pub const READ: Self = Self {
        read: true,
        ..Self::NONE
    };
    /// Read, write and delete one's own records.
    pub const OWN: Self = Self {
        read: true,
        write: true,
        delete: true,
        manage: false,
        approve: false,
    };
    /// Everything.
    pub const ALL: Self = Self {
        read: true,
        write: true,
        delete: true,
        manage: true,
        approve: true,
    };

    /// The rights of both.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self {
            read: self.read || other.read,
            write: self.write || other.write,
            delete: self.delete || other.delete,
            manage: self.manage || other.manage,
            approve: self.approve || other.approve,
        }
    }

    /// These rights as they apply: none at all without `read`.
    #[must_use]
    pub fn effective(self) -> Self {
        if self.read { self } else { Self::NONE }
    }

    /// Whether the right `change` needs is granted.
    pub fn allows(self, change: Change) -> bool {
        match change {
            Change::Write => self.write,
            Change::Delete => self.delete,
        }
    }
}

/// A change to an existing record, and the right it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Change {
    /// Update, replace, upsert over an existing record: needs `write`.
    Write,
    /// Delete: needs `delete`.
    Delete,
}

impl Change {
    /// The right's name (`write`, `delete`).
    pub fn right(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Delete => "delete",
        }
    }
}

/// A caller's rights in one namespace and how that namespace places records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NamespaceGrant {
    /// What the caller may do there.
    pub rights: Rights,
    /// Whether records there belong to a project (and are invisible from
    /// other projects); otherwise they span projects.
    pub project_scoped: bool,
}

/// What a governed caller may do in which namespace: resolved from a
/// governance policy by the code that authenticated the caller, carried by
/// its [`CallerContext`](crate::CallerContext), trusted by the stores.
///
/// ```
/// use openvibe_protocols::{Grants, Rights};
/// let grants = Grants::new("cursor")
///     .grant("cursor", Rights::OWN, false)
///     .grant("developer", Rights::OWN, true)
///     .grant("global", Rights::OWN, false)
///     .recall(["cursor", "developer", "global", "l-private"]);
/// assert!(grants.rights("developer").write);
/// assert!(!grants.rights("l-private").read);
/// // Recall never widens what the caller may read.
/// assert_eq!(grants.recall_namespaces(), vec!["cursor", "developer", "global"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    home: String,
    namespaces: BTreeMap<String, NamespaceGrant>,
    recall: Vec<String>,
    retention: Vec<Retention>,
}

/// How long records are kept: records of `kind` (any when `None`) in
/// `namespace` (any when `None`) expire `keep` after they were created.
/// Where several rules match a record, the shortest wins.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Retention {
    /// The namespace it applies to (`None`: every namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The record kind it applies to (`None`: every kind that expires).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// How long after creation, in whole seconds.
    pub keep_secs: u64,
}

impl Retention {
    /// The rule's duration (saturating at the largest `TimeDelta`).
    pub fn keep(&self) -> TimeDelta {
        i64::try_from(self.keep_secs)
            .ok()
            .and_then(TimeDelta::try_seconds)
            .unwrap_or(TimeDelta::MAX)
    }

    /// Whether the rule applies to a `kind` record in `namespace`.
    pub fn applies(&self, namespace: &str, kind: &str) -> bool {
        self.namespace.as_deref().is_none_or(|n| n == namespace)
            && self.kind.as_deref().is_none_or(|k| k == kind)
    }
}

impl Grants {
    /// Grants with `home` as the default write namespace and nothing granted yet.
    pub fn new(home: impl Into<String>) -> Self {
        Self {
            home: home.into(),
            namespaces: BTreeMap::new(),
            recall: Vec::new(),
            retention: Vec::new(),
        }
    }

    /// Add a retention rule (see [`Retention`]).
    #[must_use]
    pub fn retain(mut self, rule: Retention) -> Self {
        self.retention.push(rule);
        self
    }

    /// The retention rules, in the order they were added.
    pub fn retention_rules(&self) -> &[Retention] {
        &self.retention
    }

    /// How long a `kind` record in `namespace` is kept: the shortest
    /// matching rule (`None`: no rule, kept until deleted).
    pub fn retention(&self, namespace: &str, kind: &str) -> Option<TimeDelta> {
        self.retention
            .iter()
            .filter(|r| r.applies(namespace, kind))
            .map(Retention::keep)
            .min()
    }

    /// Grant `rights` in `namespace` (added to what was granted there).
    #[must_use]
    pub fn grant(
        mut self,
        namespace: impl Into<String>,
        rights: Rights,
        project_scoped: bool,
    ) -> Self {
        let entry = self.namespaces.entry(namespace.into()).or_default();
        entry.rights = entry.rights.union(rights);
        entry.project_scoped |= project_scoped;
        self
    }

    /// The namespaces searches and lists cover when the caller names none
    /// (those it may not read are ignored).
    #[must_use]
    pub fn recall<I, S>(mut self, namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.recall = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// Where records go when the caller names no namespace.
    pub fn home(&self) -> &str {
        &self.home
    }

    /// The caller's rights in `namespace` (none when not granted). Write,
    /// delete and manage count only with read: a store returns what it
    /// wrote, and row-level security admits rows by the readable set.
    pub fn rights(&self, namespace: &str) -> Rights {
        self.namespaces
            .get(namespace)
            .map_or(Rights::NONE, |g| g.rights)
            .effective()
    }

    /// Whether `namespace` is project-scoped.
    pub fn project_scoped(&self, namespace: &str) -> bool {
        self.namespaces
            .get(namespace)
            .is_some_and(|g| g.project_scoped)
    }

    /// Every namespace with a grant, and the grant.
    pub fn namespaces(&self) -> impl Iterator<Item = (&str, &NamespaceGrant)> {
        self.namespaces.iter().map(|(n, g)| (n.as_str(), g))
    }

    /// The namespaces the caller may read, sorted.
    pub fn readable(&self) -> Vec<&str> {
        self.namespaces
            .iter()
            .filter(|(_, g)| g.rights.read)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The namespaces the caller may change others' records in with `change`, sorted.
    pub fn managed(&self, change: Change) -> Vec<&str> {
        self.namespaces
            .iter()
            .filter(|(_, g)| g.rights.read && g.rights.manage && g.rights.allows(change))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The namespaces the caller may make `change` in (its own records), sorted.
    pub fn changeable(&self, change: Change) -> Vec<&str> {
        self.namespaces
            .iter()
            .filter(|(_, g)| g.rights.read && g.rights.allows(change))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The recall namespaces the caller may read, sorted and without repeats.
    pub fn recall_namespaces(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .recall
            .iter()
            .map(String::as_str)
            .filter(|n| self.rights(n).read)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Which namespaces a read covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceScope {
    /// Every namespace (an ungoverned caller that named none).
    All,
    /// Only these, sorted, without repeats (possibly none).
    Only(Vec<String>),
}

impl NamespaceScope {
    /// A scope of exactly `namespaces`.
    pub fn only<I, S>(namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut v: Vec<String> = namespaces.into_iter().map(Into::into).collect();
        v.sort_unstable();
        v.dedup();
        Self::Only(v)
    }

    /// Whether `namespace` is in the scope.
    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(v) => v.binary_search_by(|n| n.as_str().cmp(namespace)).is_ok(),
        }
    }

    /// Whether the scope covers no namespace at all.
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Only(v) if v.is_empty())
    }
}

/// Where a new record goes: its namespace and project, decided by
/// [`CallerContext::placement`](crate::CallerContext::placement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The namespace.
    pub namespace: String,
    /// The project (`None`: spans projects).
    pub project_id: Option<String>,
}

/// `Ok` when a write that asked for namespace `requested` may replace the
/// record `kind` `id` living in `current`: a record's namespace is fixed
/// when it is created, so `requested` must be empty (keep it) or equal.
/// Moving a record between namespaces is promotion.
pub fn check_fixed_namespace(
    current: &str,
    requested: &str,
    kind: &str,
    id: &str,
) -> Result<(), crate::StoreError> {
    if requested.is_empty() || requested == current {
        Ok(())
    } else {
        // The stored record's state refuses it, not the input's shape.
        Err(crate::StoreError::conflict(format!(
            "namespace: {kind} {id} lives in namespace `{current}`, not `{requested}`: a \
             record's namespace is fixed when it is created (promote it to move it)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_accumulate_and_scopes_intersect() {
        let g = Grants::new("a")
            .grant("a", Rights::READ, false)
            .grant(
                "a",
                Rights {
                    write: true,
                    ..Rights::NONE
                },
                true,
            )
            .grant("b", Rights::ALL, false)
            .grant(
                "c",
                Rights {
                    write: true,
                    ..Rights::NONE
                },
                false,
            )
            .recall(["b", "a", "c", "a"]);
        assert_eq!(
            g.rights("a"),
            Rights {
                read: true,
                write: true,
                ..Rights::NONE
            }
        );
        assert!(g.project_scoped("a"));
        assert!(!g.project_scoped("b"));
        assert_eq!(g.readable(), vec!["a", "b"]);
        assert_eq!(g.recall_namespaces(), vec!["a", "b"]);
        assert_eq!(g.managed(Change::Delete), vec!["b"]);
        assert_eq!(
            g.changeable(Change::Write),
            vec!["a", "b"],
            "write-only c is unreadable"
        );
        assert_eq!(g.changeable(Change::Delete), vec!["b"]);
        let scope = NamespaceScope::only(["z", "a", "z"]);
        assert_eq!(scope, NamespaceScope::Only(vec!["a".into(), "z".into()]));
        assert!(scope.contains("z") && !scope.contains("b"));
        assert!(NamespaceScope::All.contains("anything"));
        assert!(NamespaceScope::only(Vec::<String>::new()).is_empty());
    }

    #[test]
    fn the_shortest_matching_retention_wins() {
        let rule = |namespace: Option<&str>, kind: Option<&str>, keep_secs| Retention {
            namespace: namespace.map(str::to_owned),
            kind: kind.map(str::to_owned),
            keep_secs,
        };
        let g = Grants::new("a")
            .retain(rule(Some("scratch"), None, 60))
            .retain(rule(None, Some("episode"), 30))
            .retain(rule(Some("a"), Some("fact"), 600));
        assert_eq!(g.retention("scratch", "fact"), Some(TimeDelta::seconds(60)));
        assert_eq!(
            g.retention("scratch", "episode"),
            Some(TimeDelta::seconds(30))
        );
        assert_eq!(g.retention("a", "fact"), Some(TimeDelta::seconds(600)));
        assert_eq!(g.retention("a", "insight"), None);
        assert_eq!(rule(None, None, u64::MAX).keep(), TimeDelta::MAX);
    }
}
