//! Who is calling a store: [`Principal`], [`Clearance`] and [`CallerContext`].
//!
//! A [`CallerContext`] is *trusted identity*: the stores believe it. It is
//! therefore built only by code that knows who the caller is (an in-process
//! role runtime, a service after it checked an API key), never decoded from
//! input: it has no `Deserialize`, its fields are private and read through
//! methods. Types a future wire protocol decodes are separate types that a
//! server turns into a context after authenticating the caller.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::governance::{Grants, NamespaceScope, Placement, Rights};
use super::{Classification, RecordMeta, StoreError};

/// What kind of principal is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PrincipalKind {
    /// An agent (role).
    Agent,
    /// A person.
    User,
    /// A service or the system itself.
    Service,
}

impl PrincipalKind {
    /// The lowercase name (`"agent"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::User => "user",
            Self::Service => "service",
        }
    }
}

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Principal {
    /// The principal's id (e.g. `cro`, `alice`).
    pub id: String,
    /// Its kind.
    pub kind: PrincipalKind,
}

impl Principal {
    /// An agent.
    pub fn agent(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: PrincipalKind::Agent,
        }
    }

    /// A person.
    pub fn user(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: PrincipalKind::User,
        }
    }

    /// A service.
    pub fn service(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: PrincipalKind::Service,
        }
    }

    /// The value stores put in `RecordMeta::owner`: `<kind>:<id>`
    /// (e.g. `agent:cro`), so that an agent and a user of the same name
    /// never own each other's records.
    pub fn owner_key(&self) -> String {
        format!("{}:{}", self.kind.as_str(), self.id)
    }

    /// Whether `owner` (a `RecordMeta::owner` value) is this principal.
    pub fn is_owner(&self, owner: &str) -> bool {
        let kind = self.kind.as_str();
        owner.len() == kind.len() + 1 + self.id.len()
            && owner.starts_with(kind)
            && owner.as_bytes().get(kind.len()) == Some(&b':')
            && owner.ends_with(self.id.as_str())
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

/// The highest classification a principal may read, per domain.
///
/// Public records are readable by everyone. A record of domain `d` and
/// classification `c > Public` is readable when the level for `d`
/// ([`Clearance::level_for`]) is at least `c`. The level for `d` is the
/// higher of the domain's own entry and `everywhere`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Clearance {
    /// A level granted in every domain (`None`: only what `domains` grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub everywhere: Option<Classification>,
    /// Per-domain levels.
    #[serde(default)]
    pub domains: BTreeMap<String, Classification>,
}

impl Clearance {
    /// Public records only (the default).
    pub fn public_only() -> Self {
        Self::default()
    }

    /// Everything, in every domain.
    pub fn unrestricted() -> Self {
        Self {
            everywhere: Some(Classification::Restricted),
            domains: BTreeMap::new(),
        }
    }

    /// Grant `level` in `domain` (replacing an earlier grant for it).
    #[must_use]
    pub fn with_domain(mut self, domain: impl Into<String>, level: Classification) -> Self {
        self.domains.insert(domain.into(), level);
        self
    }

    /// Grant `level` in every domain.
    #[must_use]
    pub fn with_everywhere(mut self, level: Classification) -> Self {
        self.everywhere = Some(level);
        self
    }

    /// The highest classification readable in `domain`, if any was granted.
    pub fn level_for(&self, domain: &str) -> Option<Classification> {
        match (self.everywhere, self.domains.get(domain).copied()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a record of `classification` in `domain` is readable
    /// (see [`Classification::readable_at`]).
    pub fn allows(&self, domain: &str, classification: Classification) -> bool {
        classification.readable_at(self.level_for(domain))
    }
}

impl FromIterator<(String, Classification)> for Clearance {
    fn from_iter<I: IntoIterator<Item = (String, Classification)>>(iter: I) -> Self {
        Self {
            everywhere: None,
            domains: iter.into_iter().collect(),
        }
    }
}

impl From<BTreeMap<String, Classification>> for Clearance {
    fn from(domains: BTreeMap<String, Classification>) -> Self {
        Self {
            everywhere: None,
            domains,
        }
    }
}

/// Who is calling a store, on behalf of which tenant and project, and what
/// they may read. Passed first to every store-trait call.
///
/// Trusted identity (see the module documentation): built with a
/// constructor and the `with_*` methods by code that authenticated the
/// caller, read through methods, never deserialized.
///
/// ```
/// use openvibe_protocols::{CallerContext, Classification};
/// let ctx = CallerContext::agent("cro")
///     .with_tenant("acme")
///     .with_domain_clearance("revenue", Classification::Confidential);
/// assert_eq!(ctx.owner_key(), "agent:cro");
/// assert_eq!(ctx.tenant_id(), "acme");
/// assert!(ctx.clearance().allows("revenue", Classification::Internal));
/// assert!(!ctx.clearance().allows("hr", Classification::Internal));
/// assert!(!ctx.is_privileged());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerContext {
    tenant_id: String,
    principal: Principal,
    clearance: Clearance,
    project_id: Option<String>,
    privileged: bool,
    /// Namespace grants (`None`: ungoverned).
    grants: Option<Arc<Grants>>,
    /// The `source` every record this caller writes carries (`None`: the
    /// record's own).
    source: Option<String>,
    /// The tool or route the call came through, for the audit trail.
    tool: Option<String>,
}

impl CallerContext {
    /// A caller in `tenant_id` with public-only clearance, no project, not privileged.
    pub fn new(tenant_id: impl Into<String>, principal: Principal) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            principal,
            clearance: Clearance::public_only(),
            project_id: None,
            privileged: false,
            grants: None,
            source: None,
            tool: None,
        }
    }

    /// An agent in the default tenant, with public-only clearance.
    pub fn agent(id: impl Into<String>) -> Self {
        Self::new(RecordMeta::DEFAULT_TENANT, Principal::agent(id))
    }

    /// A person in the default tenant, with public-only clearance.
    pub fn user(id: impl Into<String>) -> Self {
        Self::new(RecordMeta::DEFAULT_TENANT, Principal::user(id))
    }

    /// A service in the default tenant, with public-only clearance.
    pub fn service(id: impl Into<String>) -> Self {
        Self::new(RecordMeta::DEFAULT_TENANT, Principal::service(id))
    }

    /// The system itself in the default tenant: service `system`,
    /// unrestricted clearance, privileged. What context-free code uses.
    pub fn system() -> Self {
        Self {
            clearance: Clearance::unrestricted(),
            privileged: true,
            ..Self::service("system")
        }
    }

    /// Set the tenant.
    #[must_use]
    pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> Self {
        self.tenant_id = tenant_id.into();
        self
    }

    /// Set the clearance.
    #[must_use]
    pub fn with_clearance(mut self, clearance: Clearance) -> Self {
        self.clearance = clearance;
        self
    }

    /// Grant `level` in `domain`.
    #[must_use]
    pub fn with_domain_clearance(
        mut self,
        domain: impl Into<String>,
        level: Classification,
    ) -> Self {
        self.clearance = self.clearance.with_domain(domain, level);
        self
    }

    /// Set the project (`None`: no project).
    #[must_use]
    pub fn with_project_id(mut self, project_id: Option<String>) -> Self {
        self.project_id = project_id;
        self
    }

    /// Set the project.
    #[must_use]
    pub fn with_project(self, project_id: impl Into<String>) -> Self {
        self.with_project_id(Some(project_id.into()))
    }

    /// Set whether the caller may change records owned by others.
    #[must_use]
    pub fn with_privileged(mut self, privileged: bool) -> Self {
        self.privileged = privileged;
        self
    }

    /// Govern this caller by `grants` (see [`Grants`] and the
    /// [governance module](crate::Grants)).
    #[must_use]
    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = Some(Arc::new(grants));
        self
    }

    /// Stamp `source` on every record this caller writes, whatever the
    /// record says: what a service does for a caller authenticated by an API
    /// key (seed 003: "creator and source are enforced server-side based on
    /// caller identity"). Every backend applies it inside the store
    /// ([`CallerContext::stamp`]).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The source this caller's writes are stamped with, when one is set
    /// ([`CallerContext::with_source`]).
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// Name the tool or route this call came through (`mcp:saveMemory`,
    /// `http:storeFact`): the audit trail records it with each entry.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// The tool or route this call came through, when named.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Put this caller's stamped source (when one is set) on a record about
    /// to be written: every backend calls it on every write, so a caller
    /// with a stamped source cannot write another.
    pub fn stamp(&self, meta: &mut RecordMeta) {
        if let Some(source) = &self.source {
            meta.source.clone_from(source);
        }
    }

    /// Whether this caller may approve or reject the proposal with `meta`
    /// (which it can read): never its own, privileged or not (no one
    /// approves what they proposed or own); governed, with the `approve`
    /// right in the proposal's namespace; ungoverned, when the caller is a
    /// person (a principal of kind `user`). Being privileged grants no
    /// approve right: it is maintenance, not judgement (docs/governance.md,
    /// "What privileged may do"). A refusal names the rule.
    pub fn may_approve(&self, meta: &RecordMeta, operation: &str) -> Result<(), StoreError> {
        if self.is_owner(&meta.owner) {
            return Err(self.unauthorized(
                operation,
                "no one approves a proposal of their own".to_owned(),
            ));
        }
        match &self.grants {
            Some(g) => {
                let rights = g.rights(&meta.namespace);
                if rights.read && rights.approve {
                    Ok(())
                } else {
                    Err(self.unauthorized(
                        operation,
                        format!(
                            "the policy of namespace `{}` grants {} no approve right",
                            meta.namespace, self.principal
                        ),
                    ))
                }
            }
            None if self.principal.kind == PrincipalKind::User => Ok(()),
            None => Err(self.unauthorized(
                operation,
                format!(
                    "only people (principals of kind user) approve proposals unless a governance file grants the approve right; {} is not one",
                    self.principal
                ),
            )),
        }
    }

    /// The caller's namespace grants (`None`: ungoverned, every namespace open).
    pub fn grants(&self) -> Option<&Grants> {
        self.grants.as_deref()
    }

    /// The caller's rights in `namespace`. Ungoverned: read, write and
    /// delete everywhere, manage when privileged. Governed: what the grants
    /// say, plus manage when privileged.
    pub fn rights(&self, namespace: &str) -> Rights {
        let mut rights = match &self.grants {
            None => Rights::OWN,
            Some(g) => g.rights(namespace),
        };
        rights.manage |= self.privileged;
        rights
    }

    /// The namespaces a read by id (get, update, delete) may reach: every
    /// namespace ungoverned, the readable ones governed.
    pub fn read_scope(&self) -> NamespaceScope {
        match &self.grants {
            None => NamespaceScope::All,
            Some(g) => NamespaceScope::only(g.readable()),
        }
    }

    /// The namespaces an inbox-like list (proposals) covers when it asked
    /// for `requested`: those of them the caller may read, or (none named)
    /// every namespace it may read, not only its recall namespaces.
    pub fn list_scope(&self, requested: &[String]) -> NamespaceScope {
        if requested.is_empty() {
            self.read_scope()
        } else {
            self.search_scope(requested)
        }
    }

    /// The namespaces a search or list covers when it asked for
    /// `requested` (empty: none named): ungoverned, `requested` or every
    /// namespace; governed, `requested` or the recall namespaces,
    /// intersected with what the caller may read (never widened).
    pub fn search_scope(&self, requested: &[String]) -> NamespaceScope {
        match (&self.grants, requested.is_empty()) {
            (None, true) => NamespaceScope::All,
            (None, false) => NamespaceScope::only(requested.iter().cloned()),
            (Some(g), true) => NamespaceScope::only(g.recall_namespaces()),
            (Some(g), false) => {
                NamespaceScope::only(requested.iter().filter(|n| g.rights(n).read).cloned())
            }
        }
    }

    /// Where a new record asked for `namespace` (empty: the default) goes,
    /// or why it may not. Ungoverned: the namespace as asked, in the
    /// caller's project. Governed: the home namespace when none is asked;
    /// the `write` right is required; a project-scoped namespace places it
    /// in the caller's project (and refuses a caller without one), any
    /// other in no project. `operation` names the write in a refusal.
    pub fn placement(&self, namespace: &str, operation: &str) -> Result<Placement, StoreError> {
        let Some(g) = &self.grants else {
            return Ok(Placement {
                namespace: namespace.to_owned(),
                project_id: self.project_id.clone(),
            });
        };
        let namespace = if namespace.is_empty() {
            g.home()
        } else {
            namespace
        };
        if !g.rights(namespace).write {
            return Err(self.unauthorized(
                operation,
                format!(
                    "the policy of namespace `{namespace}` grants {} no write right",
                    self.principal
                ),
            ));
        }
        let project_id = if g.project_scoped(namespace) {
            match &self.project_id {
                Some(p) => Some(p.clone()),
                None => {
                    return Err(self.unauthorized(
                        operation,
                        format!(
                            "namespace `{namespace}` is project-scoped and the caller has no project"
                        ),
                    ));
                }
            }
        } else {
            None
        };
        Ok(Placement {
            namespace: namespace.to_owned(),
            project_id,
        })
    }

    /// When a `kind` record created at `created_at` and placed in
    /// `namespace` (as [`CallerContext::placement`] resolved it) expires:
    /// the `given` time, capped by the caller's retention there
    /// ([`Grants::retention`]; ungoverned callers have none), to the
    /// microsecond. `None`: never.
    ///
    /// A time that is not in the future is refused (`InvalidInput` on
    /// `expires_at`): a store never writes a record that nobody could read.
    ///
    /// ```
    /// use chrono::TimeDelta;
    /// use openvibe_protocols::{CallerContext, Grants, Retention, Rights, store_time};
    /// let ctx = CallerContext::agent("a").with_grants(
    ///     Grants::new("scratch").grant("scratch", Rights::OWN, false).retain(Retention {
    ///         namespace: Some("scratch".into()),
    ///         kind: None,
    ///         keep_secs: 3600,
    ///     }),
    /// );
    /// let now = store_time(); // to the microsecond, as stores keep times
    /// let later = now + TimeDelta::days(2);
    /// assert_eq!(ctx.expiry("fact", "scratch", now, Some(later)).unwrap(), Some(now + TimeDelta::hours(1)));
    /// assert_eq!(ctx.expiry("fact", "other", now, None).unwrap(), None);
    /// assert!(ctx.expiry("fact", "other", now, Some(now - TimeDelta::seconds(1))).is_err());
    /// ```
    pub fn expiry(
        &self,
        kind: &str,
        namespace: &str,
        created_at: DateTime<Utc>,
        given: Option<DateTime<Utc>>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        let kept = self
            .grants()
            .and_then(|g| g.retention(namespace, kind))
            .map(|keep| {
                created_at
                    .checked_add_signed(keep)
                    .unwrap_or(DateTime::<Utc>::MAX_UTC)
            });
        // To the microsecond, as PostgreSQL keeps it: equal on every backend.
        let at = match (given, kept) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|at| DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap_or(at));
        if let Some(at) = at
            && at <= Utc::now()
        {
            let why = if given.is_some_and(|g| g.timestamp_micros() == at.timestamp_micros()) {
                format!("{at} is not in the future")
            } else {
                format!(
                    "the retention of namespace `{namespace}` for {kind} records makes it {at}, \
                     which is not in the future (created {created_at})"
                )
            };
            // The clock refuses it, not the input's shape: a conflict.
            return Err(StoreError::conflict(format!("expires_at: {why}")));
        }
        Ok(at)
    }

    /// The tenant every read and write is confined to.
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }

    /// Who is asking.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// What they may read beyond their own records.
    pub fn clearance(&self) -> &Clearance {
        &self.clearance
    }

    /// The project they work in: records of another project are invisible,
    /// and records they write belong to it.
    pub fn project_id(&self) -> Option<&str> {
        self.project_id.as_deref()
    }

    /// Whether they may update and delete records owned by others
    /// (maintenance, admin tools).
    pub fn is_privileged(&self) -> bool {
        self.privileged
    }

    /// The owner value of records this caller creates (see [`Principal::owner_key`]).
    pub fn owner_key(&self) -> String {
        self.principal.owner_key()
    }

    /// Whether `owner` (a `RecordMeta::owner` value) is this caller.
    pub fn is_owner(&self, owner: &str) -> bool {
        self.principal.is_owner(owner)
    }

    /// Whether records of `project` are visible: records of no project are
    /// visible to all; records of a project only to callers in it.
    pub fn sees_project(&self, project: Option<&str>) -> bool {
        match project {
            None => true,
            Some(p) => self.project_id.as_deref() == Some(p),
        }
    }

    /// A [`StoreError::Unauthorized`] for this caller.
    pub fn unauthorized(
        &self,
        operation: impl Into<String>,
        reason: impl Into<String>,
    ) -> StoreError {
        StoreError::Unauthorized {
            principal: self.principal.to_string(),
            operation: operation.into(),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clearance_levels() {
        let c = Clearance::public_only();
        assert!(c.allows("x", Classification::Public));
        assert!(!c.allows("x", Classification::Internal));
        let c = Clearance::public_only().with_domain("revenue", Classification::Confidential);
        assert!(c.allows("revenue", Classification::Internal));
        assert!(c.allows("revenue", Classification::Confidential));
        assert!(!c.allows("revenue", Classification::Restricted));
        assert!(!c.allows("marketing", Classification::Internal));
        let c = c.with_everywhere(Classification::Internal);
        assert!(c.allows("marketing", Classification::Internal));
        assert_eq!(c.level_for("revenue"), Some(Classification::Confidential));
        assert!(Clearance::unrestricted().allows("any", Classification::Restricted));
        let c: Clearance = [("hr".to_owned(), Classification::Restricted)]
            .into_iter()
            .collect();
        assert!(c.allows("hr", Classification::Restricted));
    }

    #[test]
    fn owner_keys_distinguish_kinds() {
        let agent = CallerContext::agent("cro");
        assert_eq!(agent.owner_key(), "agent:cro");
        assert!(agent.is_owner("agent:cro"));
        assert!(!agent.is_owner("user:cro"));
        assert!(!agent.is_owner("agent:cr"));
        assert!(!agent.is_owner("agent:xcro"));
        assert!(!agent.is_owner("agentXcro"));
        assert_eq!(CallerContext::user("cro").owner_key(), "user:cro");
        assert_eq!(Principal::service("api").to_string(), "service:api");
    }

    #[test]
    fn accessors_read_what_the_builders_set() {
        let ctx = CallerContext::user("ann")
            .with_tenant("t9")
            .with_project("p1")
            .with_privileged(true);
        assert_eq!(ctx.tenant_id(), "t9");
        assert_eq!(ctx.principal(), &Principal::user("ann"));
        assert_eq!(ctx.project_id(), Some("p1"));
        assert!(ctx.is_privileged());
        assert_eq!(ctx.with_project_id(None).project_id(), None);
        let system = CallerContext::system();
        assert!(system.is_privileged());
        assert_eq!(system.clearance(), &Clearance::unrestricted());
        assert_eq!(system.owner_key(), "service:system");
    }
}
