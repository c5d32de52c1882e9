//! Who may call, and as whom: [`Access`] (API keys through the governance
//! file, or development mode), the one authentication path of every edge.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use openvibe_api::{CALLER_HEADER, Caller, ErrorBody, ErrorCode, PROJECT_HEADER};
use openvibe_governance::{Governance, Projects, Resolved};
use openvibe_protocols::{CallerContext, Principal};

use crate::error::Failure;

/// How the service learns who is calling.
#[derive(Clone)]
pub enum Access {
    /// Every request carries `Authorization: Bearer <key>`, a key the
    /// governance configuration lists (compared by its SHA-256 digest; keys
    /// are never logged). No key or an unknown one is a 401. The key's
    /// principal, tenant, clearance and grants make the caller's context;
    /// a key marked `trusted` may instead state, in the caller header, the
    /// caller it acts for (whose grants, when it states none, come from the
    /// same configuration).
    Governed(Arc<Governance>),
    /// Development only, never exposed beyond loopback: no key needed; the
    /// caller header is honoured as stated, and a request without one acts
    /// as `user:anonymous` in `tenant`, ungoverned.
    Open {
        /// The tenant of requests that state no caller.
        tenant: String,
    },
}

impl Access {
    /// [`Access::Open`] in `tenant`.
    pub fn open(tenant: impl Into<String>) -> Self {
        Self::Open {
            tenant: tenant.into(),
        }
    }

    /// Development mode: no API key is asked for.
    pub fn is_open(&self) -> bool {
        matches!(self, Self::Open { .. })
    }

    /// The caller context of a request with these headers (the caller's
    /// stated project kept only where its key's projects allow it).
    pub fn authenticate(
        &self,
        authorization: Option<&str>,
        caller: Option<&str>,
    ) -> Result<CallerContext, Failure> {
        self.identify(authorization, caller).map(|(ctx, _)| ctx)
    }

    /// The caller of a request, and the projects it may name: the key's
    /// (`projects` in the governance file); any for a trusted key and in
    /// development mode. A project a stated caller names is checked here.
    pub fn identify(
        &self,
        authorization: Option<&str>,
        caller: Option<&str>,
    ) -> Result<(CallerContext, Projects), Failure> {
        let stated = caller.map(stated_caller).transpose()?;
        match self {
            Self::Open { tenant } => Ok((
                match stated {
                    Some(caller) => caller.into_context(),
                    None => CallerContext::new(tenant.clone(), Principal::user("anonymous")),
                },
                Projects::All,
            )),
            Self::Governed(governance) => {
                let key = bearer(authorization).ok_or_else(|| {
                    Failure::new(
                        ErrorCode::Unauthenticated,
                        "this service needs an API key: Authorization: Bearer <key>",
                    )
                })?;
                let api_key = governance
                    .api_key(key)
                    .ok_or_else(|| Failure::new(ErrorCode::Unauthenticated, "unknown API key"))?;
                match stated {
                    None => Ok((governance.key_context(api_key), api_key.projects.clone())),
                    Some(caller) if api_key.trusted => {
                        let fill = caller.grants.is_none();
                        let ctx = caller.into_context();
                        Ok((
                            if fill {
                                let who = Resolved::new(ctx.principal().clone());
                                let grants = governance.grants_for(&who);
                                ctx.with_grants(grants)
                            } else {
                                ctx
                            },
                            Projects::All,
                        ))
                    }
                    Some(caller) => {
                        let own = governance.key_context(api_key);
                        if caller.principal == *own.principal()
                            && caller.tenant_id == own.tenant_id()
                        {
                            // Its own identity; the project it names must
                            // be one its key may name.
                            let ctx = api_key
                                .projects
                                .apply(own, caller.project_id.as_deref())
                                .map_err(Failure::from)?;
                            Ok((ctx, api_key.projects.clone()))
                        } else {
                            let mut body = ErrorBody::new(
                                ErrorCode::Forbidden,
                                format!(
                                    "the key of {} may not act for {} in tenant `{}` (only keys marked `trusted` may)",
                                    own.principal(),
                                    caller.principal,
                                    caller.tenant_id
                                ),
                            );
                            body.error.principal = Some(own.principal().to_string());
                            body.error.operation = Some("act for another caller".into());
                            body.error.reason = Some("the key is not trusted".into());
                            Err(Failure::body(body))
                        }
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Governed(_) => f.write_str("Access::Governed"),
            Self::Open { tenant } => write!(f, "Access::Open({tenant})"),
        }
    }
}

/// The key of `Bearer <key>`.
fn bearer(authorization: Option<&str>) -> Option<&str> {
    let value = authorization?.trim();
    let (scheme, key) = value.split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}

/// The caller of a request with `headers`; a header that is not ASCII is a
/// 400.
impl Access {
    /// The caller of a request with `headers` (the API key, the caller
    /// header, the project header), and the projects it may name: the one
    /// authentication path of every edge (HTTP routes and MCP tools).
    pub(crate) fn caller_of(
        &self,
        headers: &HeaderMap,
    ) -> Result<(CallerContext, Projects), Failure> {
        let header = |name: &str| {
            headers
                .get(name)
                .map(|v| {
                    v.to_str().map_err(|_| {
                        Failure::body(ErrorBody::malformed(
                            format!("header:{name}"),
                            format!("the {name} header is not ASCII"),
                        ))
                    })
                })
                .transpose()
        };
        let (ctx, projects) =
            self.identify(header(AUTHORIZATION.as_str())?, header(CALLER_HEADER)?)?;
        let ctx = projects
            .apply(ctx, header(PROJECT_HEADER)?)
            .map_err(Failure::from)?;
        Ok((ctx, projects))
    }
}

/// The caller a header states: JSON checked against the document's
/// `Caller` schema ([`crate::contract`]), then read. The header is a
/// credential (the document's `caller` security scheme): one that does not
/// read as a caller is 401, like an unknown key.
fn stated_caller(value: &str) -> Result<Caller, Failure> {
    let unreadable = |e: &dyn std::fmt::Display| {
        Failure::new(
            ErrorCode::Unauthenticated,
            format!("the {CALLER_HEADER} header is not a caller: {e}"),
        )
    };
    let mut json: serde_json::Value = serde_json::from_str(value).map_err(|e| unreadable(&e))?;
    crate::contract::integral(&mut json);
    crate::contract::check(crate::contract::Part::Caller, "", "", &json)
        .map_err(|f| unreadable(&f.error_body().error.message))?;
    serde_json::from_value(json).map_err(|e| unreadable(&e))
}
