//! Principals from session keys: sanitising and the ordered rules.

use openvibe_protocols::{Principal, PrincipalKind};
use regex::Regex;

use crate::config::SessionRule;

/// The longest principal or namespace token [`sanitize`] returns.
pub const MAX_TOKEN_LEN: usize = 64;

/// A principal and its home namespace (where its writes go by default).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resolved {
    /// Who.
    pub principal: Principal,
    /// Its home namespace.
    pub home: String,
}

impl Resolved {
    /// A principal given in code, at home in the namespace named after its id.
    pub fn new(principal: Principal) -> Self {
        let home = principal.id.clone();
        Self { principal, home }
    }

    /// A principal with an explicit home namespace.
    pub fn with_home(principal: Principal, home: impl Into<String>) -> Self {
        Self {
            principal,
            home: home.into(),
        }
    }
}

/// `raw` as a safe token: lowercase ASCII letters, digits, `-`, `_` and `.`;
/// any other run of characters becomes one `-`; leading and trailing `-`
/// and `.` are dropped; at most [`MAX_TOKEN_LEN`] bytes. `None` when
/// nothing is left.
///
/// ```
/// use openvibe_governance::sanitize;
/// assert_eq!(sanitize("Cursor IDE").as_deref(), Some("cursor-ide"));
/// assert_eq!(sanitize("../../etc/passwd").as_deref(), Some("etc-passwd"));
/// assert_eq!(sanitize("  ").as_deref(), None);
/// ```
pub fn sanitize(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len().min(MAX_TOKEN_LEN));
    for c in raw.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.') {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches(|c| c == '-' || c == '.');
    let mut end = trimmed.len().min(MAX_TOKEN_LEN);
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    let token = trimmed[..end].trim_end_matches(['-', '.']);
    (!token.is_empty()).then(|| token.to_owned())
}

/// A session rule, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) spec: SessionRule,
    pub(crate) regex: Option<Regex>,
}

impl Rule {
    /// The principal this rule maps `key` to, if it matches and the result
    /// sanitises to a token.
    pub(crate) fn apply(&self, key: &str) -> Option<Resolved> {
        let raw = if let Some(map) = &self.spec.map {
            map.get(key)?.clone()
        } else if let Some(prefix) = &self.spec.prefix {
            let rest = key.strip_prefix(prefix.as_str())?;
            match &self.spec.principal {
                Some(p) => p.clone(),
                None => rest.split(':').next().unwrap_or_default().to_owned(),
            }
        } else {
            let re = self.regex.as_ref()?;
            let caps = re.captures(key)?;
            match &self.spec.principal {
                Some(template) => {
                    let mut out = String::new();
                    caps.expand(template, &mut out);
                    out
                }
                None => caps
                    .name("principal")
                    .or_else(|| caps.get(1))
                    .or_else(|| caps.get(0))
                    .map(|m| m.as_str().to_owned())
                    .unwrap_or_default(),
            }
        };
        let id = sanitize(&raw)?;
        let principal = Principal {
            id,
            kind: self.spec.kind.unwrap_or(PrincipalKind::Agent),
        };
        Some(match &self.spec.namespace {
            Some(ns) => Resolved::with_home(principal, ns.clone()),
            None => Resolved::new(principal),
        })
    }
}
