//! [`Caller`]: the caller a trusted runtime states with each request.

use std::collections::BTreeMap;

use openvibe_protocols::{CallerContext, Clearance, Grants, Principal, Retention, Rights};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The request header carrying a [`Caller`] as JSON (non-ASCII characters
/// escaped as `\uXXXX`, so the value is plain ASCII). Only keys marked
/// `trusted` in the governance file may send it; the server refuses it
/// from any other key.
pub const CALLER_HEADER: &str = "x-openvibe-caller";

/// A [`CallerContext`] on the wire: what a trusted runtime (a
/// `RoleRuntime` host, the remote memory client) states about the caller it
/// acts for. The server turns it back into a context only for a trusted
/// key; everyone else's context comes from its API key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Caller {
    /// The tenant.
    pub tenant_id: String,
    /// Who.
    pub principal: Principal,
    /// What it may read.
    #[serde(default)]
    pub clearance: Clearance,
    /// Its project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Whether it may change others' records.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub privileged: bool,
    /// Its namespace grants (absent: ungoverned, unless the server's
    /// governance configuration fills them in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<WireGrants>,
    /// The source stamped on its writes ([`CallerContext::with_source`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The tool or route the call came through ([`CallerContext::with_tool`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// [`Grants`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireGrants {
    /// Where records go when the caller names no namespace.
    pub home: String,
    /// The rights per namespace.
    #[serde(default)]
    pub namespaces: BTreeMap<String, WireGrant>,
    /// The namespaces searches cover when the caller names none.
    #[serde(default)]
    pub recall: Vec<String>,
    /// How long records are kept (see `Retention`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retention: Vec<Retention>,
}

/// One namespace's grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireGrant {
    /// What the caller may do there.
    pub rights: Rights,
    /// Whether records there belong to a project.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub project_scoped: bool,
}

impl From<&CallerContext> for Caller {
    fn from(ctx: &CallerContext) -> Self {
        Self {
            tenant_id: ctx.tenant_id().to_owned(),
            principal: ctx.principal().clone(),
            clearance: ctx.clearance().clone(),
            project_id: ctx.project_id().map(str::to_owned),
            privileged: ctx.is_privileged(),
            grants: ctx.grants().map(WireGrants::from),
            source: ctx.source().map(str::to_owned),
            tool: ctx.tool().map(str::to_owned),
        }
    }
}

impl From<&Grants> for WireGrants {
    fn from(grants: &Grants) -> Self {
        Self {
            home: grants.home().to_owned(),
            namespaces: grants
                .namespaces()
                .map(|(ns, g)| {
                    (
                        ns.to_owned(),
                        WireGrant {
                            rights: g.rights,
                            project_scoped: g.project_scoped,
                        },
                    )
                })
                .collect(),
            recall: grants
                .recall_namespaces()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            retention: grants.retention_rules().to_vec(),
        }
    }
}

impl WireGrants {
    /// Back to [`Grants`].
    pub fn into_grants(self) -> Grants {
        let mut grants = Grants::new(self.home);
        for (ns, g) in self.namespaces {
            grants = grants.grant(ns, g.rights, g.project_scoped);
        }
        self.retention
            .into_iter()
            .fold(grants.recall(self.recall), Grants::retain)
    }
}

impl Caller {
    /// Back to a [`CallerContext`]: for code that authenticated the sender
    /// as trusted to state it.
    pub fn into_context(self) -> CallerContext {
        let mut ctx = CallerContext::new(self.tenant_id, self.principal)
            .with_clearance(self.clearance)
            .with_project_id(self.project_id)
            .with_privileged(self.privileged);
        if let Some(source) = self.source {
            ctx = ctx.with_source(source);
        }
        if let Some(tool) = self.tool {
            ctx = ctx.with_tool(tool);
        }
        match self.grants {
            Some(g) => ctx.with_grants(g.into_grants()),
            None => ctx,
        }
    }

    /// The header value: JSON with every non-ASCII character escaped.
    pub fn to_header(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        let mut out = String::with_capacity(json.len());
        for c in json.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
        out
    }

    /// Parse a header value.
    pub fn from_header(value: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(value)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use openvibe_protocols::{Classification, NamespaceScope};

    use super::*;

    #[test]
    fn a_context_round_trips_through_the_header() {
        let grants = Grants::new("dev")
            .grant("dev", Rights::OWN, false)
            .grant("proj", Rights::READ, true)
            .recall(["dev", "proj", "nope"])
            .retain(Retention {
                namespace: Some("dev".into()),
                kind: Some("fact".into()),
                keep_secs: 60,
            });
        let ctx = CallerContext::agent("ünïcode-agent")
            .with_tenant("acme")
            .with_domain_clearance("hr", Classification::Confidential)
            .with_project("p1")
            .with_grants(grants);
        let header = Caller::from(&ctx).to_header();
        assert!(header.is_ascii(), "{header}");
        let back = Caller::from_header(&header).unwrap().into_context();
        assert_eq!(back.tenant_id(), "acme");
        assert_eq!(back.principal(), ctx.principal());
        assert_eq!(back.clearance(), ctx.clearance());
        assert_eq!(back.project_id(), Some("p1"));
        assert_eq!(back.read_scope(), ctx.read_scope());
        assert_eq!(back.search_scope(&[]), ctx.search_scope(&[]));
        assert_eq!(
            back.search_scope(&[]),
            NamespaceScope::only(["dev".to_owned(), "proj".to_owned()])
        );
        assert_eq!(back.rights("proj"), ctx.rights("proj"));
        assert_eq!(
            back.grants().map(Grants::retention_rules),
            ctx.grants().map(Grants::retention_rules)
        );
        let system = CallerContext::system();
        let back = Caller::from_header(&Caller::from(&system).to_header())
            .unwrap()
            .into_context();
        assert_eq!(back, system);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = Caller::from_header(
            r#"{"tenant_id":"t","principal":{"kind":"agent","id":"a"},"root":true}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("root"), "{err}");
    }
}
