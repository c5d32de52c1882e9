//! Governance policy for openvibe memory: who is calling and what it may
//! do where.
//!
//! A [`Governance`] is loaded from a YAML governance file
//! ([`Governance::from_yaml`]; every problem is an [`Error`] with the
//! file, line, column and key). It resolves **principals**:
//!
//! - from an API key ([`Governance::resolve_api_key`]; keys are kept only
//!   as SHA-256 digests),
//! - from a session key by ordered rules, `map`, `prefix` or `regex`, the
//!   result sanitised to a safe token, a default principal when nothing
//!   matches ([`Governance::resolve_session_key`]),
//! - or directly in code ([`Resolved::new`]).
//!
//! and turns a resolved principal into the [`Grants`] its
//! [`CallerContext`] carries ([`Governance::grants_for`],
//! [`Governance::context`]): per **namespace**, the read, write, delete and
//! manage rights its policy gives the principal, whether the namespace is
//! project-scoped, the principal's home namespace (where its writes go by
//! default) and its recall namespaces (`self + shared` unless configured).
//! The stores enforce the grants; this crate only decides them.
//!
//! ```
//! use openvibe_governance::Governance;
//!
//! let gov = Governance::from_yaml(
//!     r#"
//! namespaces:
//!   developer: { project_scoped: true, read: ["*"], write: ["*"], delete: ["*"], manage: [l-cto] }
//!   l-private: { project_scoped: true, read: [l-cto], write: [l-cto], delete: [l-cto] }
//! session_keys:
//!   - prefix: "agent:"
//! "#,
//!     "governance.yaml",
//! )?;
//! let cursor = gov.resolve_session_key("agent:Cursor IDE:main");
//! assert_eq!(cursor.principal.id, "cursor-ide");
//! let grants = gov.grants_for(&cursor);
//! assert!(grants.rights("developer").write);
//! assert!(!grants.rights("l-private").read);
//! assert_eq!(grants.home(), "cursor-ide");
//! # Ok::<(), openvibe_governance::Error>(())
//! ```

mod config;
mod error;
mod principal;

/// Example governance files, also used as test fixtures.
pub mod examples {
    /// The access matrix of the L9 memory-governance spec: a kernel actor
    /// (`l-cto`) with every right everywhere, an IDE actor (`cursor-ide`)
    /// limited to the project-scoped `developer` and the cross-project
    /// `global` namespaces and its own records; both identified by API keys
    /// read from `MCP_API_KEY_L` / `MCP_API_KEY_C`.
    pub const SEED_003: &str = include_str!("../examples/seed-003.governance.yaml");
}

pub use config::{
    AllProjects, ApiKeyEntry, GovernanceFile, Keep, MAX_RETENTION, NamespacePolicy,
    NamespaceRetention, ProjectsEntry, SessionRule,
};
pub use error::Error;
pub use principal::{MAX_TOKEN_LEN, Resolved, sanitize};

use std::collections::{BTreeMap, HashMap};

use openvibe_protocols::EXPIRING_KINDS;
use openvibe_protocols::{
    CallerContext, Clearance, Grants, Principal, PrincipalKind, RecordMeta, Retention, Rights,
    StoreError,
};
use regex::Regex;
use sha2::{Digest, Sha256};

/// A loaded, validated governance policy. Cheap to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Governance {
    file: GovernanceFile,
    rules: Vec<principal::Rule>,
    api_keys: HashMap<[u8; 32], ApiKey>,
}

/// What an API key stands for: set in the governance file's `api_keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Its principal and home namespace.
    pub who: Resolved,
    /// The tenant its requests act in.
    pub tenant: String,
    /// Its clearance.
    pub clearance: Clearance,
    /// Whether its context is privileged.
    pub privileged: bool,
    /// Whether it may state, per request, the caller it acts for
    /// ([`ApiKeyEntry::trusted`]).
    pub trusted: bool,
    /// The `source` stamped on every record it writes ([`ApiKeyEntry::source`]).
    pub source: String,
    /// The projects its requests may name ([`ApiKeyEntry::projects`]).
    pub projects: Projects,
}

/// The projects a caller's requests may name: the one project rule of every
/// edge (HTTP and MCP), applied by [`Projects::apply`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Projects {
    /// None: its requests act in no project.
    #[default]
    None,
    /// These.
    Listed(std::collections::BTreeSet<String>),
    /// Any (`'*'`; development mode and trusted keys).
    All,
}

impl Projects {
    /// Whether `project` may be named.
    pub fn allows(&self, project: &str) -> bool {
        match self {
            Self::None => false,
            Self::Listed(projects) => projects.contains(project),
            Self::All => true,
        }
    }

    /// `ctx` working in `project` (`None` or empty: as it is): allowed by
    /// these grants, or [`StoreError::Unauthorized`] naming the rule, and
    /// nothing runs.
    pub fn apply(
        &self,
        ctx: CallerContext,
        project: Option<&str>,
    ) -> Result<CallerContext, StoreError> {
        let Some(project) = project.filter(|p| !p.is_empty()) else {
            return Ok(ctx);
        };
        if self.allows(project) {
            return Ok(ctx.with_project(project));
        }
        let granted = match self {
            Self::None => "the governance file grants its key no project".to_owned(),
            Self::Listed(projects) => format!(
                "the governance file grants its key the projects {}",
                projects
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::All => String::new(),
        };
        Err(ctx.unauthorized(format!("act in project `{project}`"), granted))
    }
}

/// The SHA-256 digest of an API key, as the governance file stores it (hex).
pub fn api_key_digest(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

impl Governance {
    /// Load a governance file's text; `path` names it in errors. API keys
    /// given as `env:` are read from the process environment.
    pub fn from_yaml(text: &str, path: impl Into<String>) -> Result<Self, Error> {
        Self::from_yaml_with_env(text, path, |name| std::env::var(name).ok())
    }

    /// [`Governance::from_yaml`] with `env` looking up environment variables.
    pub fn from_yaml_with_env(
        text: &str,
        path: impl Into<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let path = path.into();
        let file = config::parse(text, &path)?;
        Self::build(file, text, &path, &env)
    }

    /// [`Governance::from_yaml`] with the keys its `env:` entries name
    /// given as `(variable, key)` pairs instead of the environment (a
    /// variable not among them is unset): a policy with its keys in code,
    /// for tests, examples and embedding.
    pub fn from_yaml_with_keys(
        text: &str,
        path: impl Into<String>,
        keys: &[(&str, &str)],
    ) -> Result<Self, Error> {
        Self::from_yaml_with_env(text, path, |name| {
            keys.iter()
                .find(|(variable, _)| *variable == name)
                .map(|(_, key)| (*key).to_owned())
        })
    }

    /// A policy from an already-built [`GovernanceFile`] (checked as a
    /// loaded file is; errors carry no position).
    pub fn from_file(file: GovernanceFile) -> Result<Self, Error> {
        Self::build(file, "", "<in code>", &|name| std::env::var(name).ok())
    }

    fn build(
        file: GovernanceFile,
        text: &str,
        path: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let at = |key: String, needle: &str, message: String| {
            config::positioned(text, path, key, needle, message)
        };
        let known = |ns: &str| {
            ns == file.shared_namespace || file.namespaces.contains_key(ns) || ns == "self"
        };
        for (ns, policy) in &file.namespaces {
            if sanitize(ns).as_deref() != Some(ns.as_str()) {
                return Err(at(
                    format!("namespaces.{ns}"),
                    ns,
                    format!(
                        "namespace `{ns}` is not a safe token (lowercase letters, digits, `-`, `_`, `.`)"
                    ),
                ));
            }
            for (right, list) in policy.lists() {
                for p in list {
                    if p != "*" && p.trim().is_empty() {
                        return Err(at(
                            format!("namespaces.{ns}.{right}"),
                            ns,
                            "an empty principal".into(),
                        ));
                    }
                }
            }
        }
        let check_kind = |key: String, kind: &str| {
            if EXPIRING_KINDS.contains(&kind) {
                Ok(())
            } else {
                Err(at(
                    key,
                    kind,
                    format!(
                        "`{kind}` records do not expire (retention applies to {})",
                        EXPIRING_KINDS.join(", ")
                    ),
                ))
            }
        };
        for kind in file.retention.keys() {
            check_kind(format!("retention.{kind}"), kind)?;
        }
        for (ns, policy) in &file.namespaces {
            if let Some(NamespaceRetention::ByKind(kinds)) = &policy.retention {
                for kind in kinds.keys() {
                    check_kind(format!("namespaces.{ns}.retention.{kind}"), kind)?;
                }
            }
        }
        for (i, ns) in file.recall.iter().enumerate() {
            if !known(ns) {
                return Err(at(
                    format!("recall[{i}]"),
                    ns,
                    format!(
                        "unknown namespace `{ns}` (declare it under `namespaces`, or use `self` or the shared namespace)"
                    ),
                ));
            }
        }
        let mut rules = Vec::with_capacity(file.session_keys.len());
        let mut mapped: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, rule) in file.session_keys.iter().enumerate() {
            if let Some(ns) = &rule.namespace
                && !known(ns)
            {
                return Err(at(
                    format!("session_keys[{i}].namespace"),
                    ns,
                    format!("unknown namespace `{ns}`"),
                ));
            }
            if let Some(map) = &rule.map {
                for key in map.keys() {
                    if let Some(first) = mapped.insert(key, i) {
                        return Err(at(
                            format!("session_keys[{i}].map.{key}"),
                            key,
                            format!(
                                "session key `{key}` is already mapped by session_keys[{first}]"
                            ),
                        ));
                    }
                }
            }
            let compiled = match &rule.regex {
                Some(re) => Some(Regex::new(re).map_err(|e| {
                    at(
                        format!("session_keys[{i}].regex"),
                        re,
                        format!("invalid regex: {e}"),
                    )
                })?),
                None => None,
            };
            let count = usize::from(rule.map.is_some())
                + usize::from(rule.prefix.is_some())
                + usize::from(rule.regex.is_some());
            if count != 1 {
                return Err(at(
                    format!("session_keys[{i}]"),
                    "session_keys",
                    "a rule has exactly one of `map`, `prefix` or `regex`".into(),
                ));
            }
            rules.push(principal::Rule {
                spec: rule.clone(),
                regex: compiled,
            });
        }
        let mut api_keys = HashMap::new();
        for (i, entry) in file.api_keys.iter().enumerate() {
            let key = format!("api_keys[{i}]");
            if let Some(ns) = &entry.namespace
                && !known(ns)
            {
                return Err(at(
                    format!("{key}.namespace"),
                    ns,
                    format!("unknown namespace `{ns}`"),
                ));
            }
            let digest = match (&entry.sha256, &entry.env) {
                (Some(hex), None) => parse_digest(hex).ok_or_else(|| {
                    at(
                        format!("{key}.sha256"),
                        hex,
                        "expected 64 hexadecimal digits (the SHA-256 of the key)".into(),
                    )
                })?,
                (None, Some(var)) => {
                    let value = env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                        at(
                            format!("{key}.env"),
                            var,
                            format!("environment variable `{var}` is not set"),
                        )
                    })?;
                    Sha256::digest(value.as_bytes()).into()
                }
                _ => {
                    return Err(at(
                        key,
                        &entry.principal,
                        "an API key has exactly one of `sha256` or `env`".into(),
                    ));
                }
            };
            let id = sanitize(&entry.principal).ok_or_else(|| {
                at(
                    format!("{key}.principal"),
                    &entry.principal,
                    "the principal is empty once sanitised".into(),
                )
            })?;
            let principal = Principal {
                id,
                kind: entry.kind.unwrap_or(PrincipalKind::Service),
            };
            let home = entry
                .namespace
                .clone()
                .unwrap_or_else(|| principal.id.clone());
            let tenant = entry
                .tenant
                .clone()
                .unwrap_or_else(|| RecordMeta::DEFAULT_TENANT.to_owned());
            if openvibe_protocols::check_label("tenant", &tenant).is_err() || tenant.is_empty() {
                return Err(at(
                    format!("{key}.tenant"),
                    &tenant,
                    "the tenant is not a valid label".into(),
                ));
            }
            let source = match &entry.source {
                Some(source)
                    if source.is_empty()
                        || openvibe_protocols::check_label("source", source).is_err() =>
                {
                    return Err(at(
                        format!("{key}.source"),
                        source,
                        "the source is not a valid label".into(),
                    ));
                }
                Some(source) => source.clone(),
                None => principal.id.clone(),
            };
            let projects = match &entry.projects {
                None => Projects::None,
                Some(ProjectsEntry::All(_)) => Projects::All,
                Some(ProjectsEntry::Listed(projects)) => {
                    if let Some(bad) = projects.iter().find(|p| {
                        p.is_empty()
                            || p.as_str() == "*"
                            || openvibe_protocols::check_label("project", p).is_err()
                    }) {
                        return Err(at(
                            format!("{key}.projects"),
                            bad,
                            "a project is a non-empty label (or the whole list is '*')".into(),
                        ));
                    }
                    Projects::Listed(projects.iter().cloned().collect())
                }
            };
            let api_key = ApiKey {
                who: Resolved::with_home(principal, home),
                tenant,
                clearance: entry
                    .clearance
                    .clone()
                    .unwrap_or_else(Clearance::public_only),
                privileged: entry.privileged,
                trusted: entry.trusted,
                source,
                projects,
            };
            if api_keys.insert(digest, api_key).is_some() {
                return Err(at(
                    key,
                    &entry.principal,
                    "the same API key is listed twice".into(),
                ));
            }
        }
        if file.auto_promote.enabled && !known(&file.auto_promote.to) {
            return Err(at(
                "auto_promote.to".into(),
                &file.auto_promote.to,
                format!("unknown namespace `{}`", file.auto_promote.to),
            ));
        }
        if sanitize(&file.default_principal).as_deref() != Some(file.default_principal.as_str()) {
            return Err(at(
                "default_principal".into(),
                &file.default_principal,
                "the default principal is not a safe token".into(),
            ));
        }
        Ok(Self {
            file,
            rules,
            api_keys,
        })
    }

    /// The policy as loaded.
    pub fn file(&self) -> &GovernanceFile {
        &self.file
    }

    /// The principal an API key belongs to (`None`: unknown key). The key is
    /// compared by its SHA-256 digest; it is never stored or logged.
    pub fn resolve_api_key(&self, key: &str) -> Option<Resolved> {
        self.api_key(key).map(|k| k.who.clone())
    }

    /// What an API key stands for (`None`: unknown key), compared by digest.
    pub fn api_key(&self, key: &str) -> Option<&ApiKey> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        self.api_keys.get(&digest)
    }

    /// The caller context of an API key's own requests: its principal in its
    /// tenant, governed by its grants, with its clearance and privilege.
    pub fn key_context(&self, key: &ApiKey) -> CallerContext {
        self.context(&key.tenant, &key.who)
            .with_clearance(key.clearance.clone())
            .with_privileged(key.privileged)
            .with_source(key.source.clone())
    }

    /// The principal a session key maps to: the first rule that matches, in
    /// order, sanitised; the default principal (an agent) when none does.
    pub fn resolve_session_key(&self, session_key: &str) -> Resolved {
        for rule in &self.rules {
            if let Some(resolved) = rule.apply(session_key) {
                return resolved;
            }
        }
        Resolved::new(Principal::agent(self.file.default_principal.clone()))
    }

    /// The grants of `who`: for each declared namespace, the rights its
    /// policy lists `who` under (by id, by `kind:id`, or `*`); full rights
    /// over its own records in its home namespace and in the shared
    /// namespace unless those are declared; its recall namespaces (`self`
    /// is its home).
    pub fn grants_for(&self, who: &Resolved) -> Grants {
        let home = who.home.as_str();
        let mut grants = Grants::new(home);
        for (ns, policy) in &self.file.namespaces {
            let rights = policy.rights_of(&who.principal);
            if rights != Rights::NONE {
                grants = grants.grant(ns.clone(), rights, policy.project_scoped);
            }
        }
        for implicit in [home, self.file.shared_namespace.as_str()] {
            if !self.file.namespaces.contains_key(implicit) {
                grants = grants.grant(implicit, Rights::OWN, false);
            }
        }
        grants = grants.recall(self.file.recall.iter().map(|ns| {
            if ns == "self" {
                home.to_owned()
            } else {
                ns.clone()
            }
        }));
        self.retention_rules()
            .into_iter()
            .fold(grants, Grants::retain)
    }

    /// The file's retentions as rules: per kind everywhere, then per
    /// namespace (for every kind, or per kind).
    pub fn retention_rules(&self) -> Vec<Retention> {
        let rule = |namespace: Option<&str>, kind: Option<&str>, keep: &Keep| Retention {
            namespace: namespace.map(str::to_owned),
            kind: kind.map(str::to_owned),
            keep_secs: keep.0.as_secs(),
        };
        let mut rules: Vec<Retention> = self
            .file
            .retention
            .iter()
            .map(|(kind, keep)| rule(None, Some(kind), keep))
            .collect();
        for (ns, policy) in &self.file.namespaces {
            match &policy.retention {
                None => {}
                Some(NamespaceRetention::All(keep)) => rules.push(rule(Some(ns), None, keep)),
                Some(NamespaceRetention::ByKind(kinds)) => rules.extend(
                    kinds
                        .iter()
                        .map(|(kind, keep)| rule(Some(ns), Some(kind), keep)),
                ),
            }
        }
        rules
    }

    /// The caller context of `who` in `tenant_id`, governed by its grants
    /// (public-only clearance, no project: add them with the context's
    /// `with_*` methods).
    pub fn context(&self, tenant_id: &str, who: &Resolved) -> CallerContext {
        CallerContext::new(tenant_id, who.principal.clone()).with_grants(self.grants_for(who))
    }

    /// The shared namespace (`shared` unless configured).
    pub fn shared_namespace(&self) -> &str {
        &self.file.shared_namespace
    }
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
