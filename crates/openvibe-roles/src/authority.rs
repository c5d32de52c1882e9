//! Authority: what a role may do on its own, with approval, or never —
//! enforced on tool calls, not only reported.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_primitives::{ToolDecision, ToolGate};
pub use openvibe_protocols::Authority;
use openvibe_protocols::{Action, CallerContext, Proposal, ProposalStore};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which actions a role may take, and how.
///
/// ```
/// use openvibe_roles::{Authority, AuthorityConfig};
/// let auth = AuthorityConfig::new()
///     .autonomous(["qualify_lead", "trigger_nurture"])
///     .needs_approval(["change_pricing"])
///     .forbidden(["sign_contracts"]);
/// assert_eq!(auth.can_act("qualify_lead"), Authority::Autonomous);
/// assert_eq!(auth.can_act("change_pricing"), Authority::NeedsApproval);
/// assert_eq!(auth.can_act("sign_contracts"), Authority::Forbidden);
/// assert_eq!(auth.can_act("unknown_action"), Authority::NeedsApproval);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorityConfig {
    /// Actions taken on the role's own authority.
    #[serde(default)]
    pub autonomous: Vec<String>,
    /// Actions that need an approver.
    #[serde(default)]
    pub needs_approval: Vec<String>,
    /// Actions never taken.
    #[serde(default)]
    pub forbidden: Vec<String>,
}

impl AuthorityConfig {
    /// Nothing allowed autonomously: every action needs approval.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add autonomous actions.
    #[must_use]
    pub fn autonomous<I: IntoIterator<Item = S>, S: Into<String>>(mut self, actions: I) -> Self {
        self.autonomous.extend(actions.into_iter().map(Into::into));
        self
    }

    /// Add actions that need approval.
    #[must_use]
    pub fn needs_approval<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        actions: I,
    ) -> Self {
        self.needs_approval
            .extend(actions.into_iter().map(Into::into));
        self
    }

    /// Add forbidden actions.
    #[must_use]
    pub fn forbidden<I: IntoIterator<Item = S>, S: Into<String>>(mut self, actions: I) -> Self {
        self.forbidden.extend(actions.into_iter().map(Into::into));
        self
    }

    /// How `action` may be taken: forbidden > needs approval > autonomous;
    /// an action not listed needs approval.
    pub fn can_act(&self, action: &str) -> Authority {
        let listed = |list: &[String]| list.iter().any(|a| a == action);
        if listed(&self.forbidden) {
            Authority::Forbidden
        } else if listed(&self.needs_approval) {
            Authority::NeedsApproval
        } else if listed(&self.autonomous) {
            Authority::Autonomous
        } else {
            Authority::NeedsApproval
        }
    }
}

/// One tool call waiting for approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The role asking.
    pub role_id: String,
    /// The tool to run.
    pub tool: String,
    /// The action it performs.
    pub action: String,
    /// Its arguments.
    pub input: Value,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Go ahead.
    Approved,
    /// Do not; the reason reaches the model.
    Denied(String),
}

/// Decides on `needs_approval` actions (a person in a UI, a policy engine...).
#[async_trait]
pub trait ApprovalHook: Send + Sync {
    /// Approve or deny one call.
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// The default approver: denies everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

#[async_trait]
impl ApprovalHook for DenyAll {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Denied("no approver is configured".into())
    }
}

/// An approver that approves everything (for tests and trusted setups).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait]
impl ApprovalHook for ApproveAll {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Approved
    }
}

/// The [`ToolGate`] a role puts in front of its tools.
#[derive(Clone)]
pub(crate) struct AuthorityGate {
    pub(crate) role_id: String,
    pub(crate) authority: Option<AuthorityConfig>,
    pub(crate) approver: Arc<dyn ApprovalHook>,
    /// Where a call that needs approval files a proposal (and as whom),
    /// instead of asking the approver.
    pub(crate) proposals: Option<(Arc<dyn ProposalStore>, CallerContext)>,
    /// Where a tool result's metrics are reported (and as whom).
    pub(crate) metrics: Option<crate::goal_hooks::MetricReporter>,
}

impl AuthorityGate {
    /// File a proposal to run `tool` for `action` with `input`: the call is
    /// denied now, and runs once a person approves it
    /// ([`Role::run_approved`](crate::Role::run_approved)).
    async fn propose(
        &self,
        store: &dyn ProposalStore,
        ctx: &CallerContext,
        tool: &str,
        action: &str,
        input: &Value,
    ) -> ToolDecision {
        let summary = format!(
            "role `{}` asks to call tool `{tool}` for action `{action}` with {}",
            self.role_id,
            openvibe_protocols::truncate_chars(&input.to_string(), 500)
        );
        let proposal = Proposal::new(
            self.role_id.clone(),
            summary,
            Action::tool(action, tool, input.clone()),
        );
        match store.create(ctx, proposal).await {
            Ok(p) => {
                tracing::info!(role = %self.role_id, tool, action, proposal = %p.id, "proposal filed");
                ToolDecision::Deny(format!(
                    "action `{action}` needs approval for role `{}`: proposal `{}` waits for a person \
                     and the call runs once it is approved; do not retry it",
                    self.role_id, p.id
                ))
            }
            Err(e) => {
                tracing::warn!(role = %self.role_id, tool, action, error = %e, "filing a proposal failed");
                ToolDecision::Deny(format!(
                    "action `{action}` needs approval for role `{}` and no proposal could be filed: {e}",
                    self.role_id
                ))
            }
        }
    }
}

#[async_trait]
impl ToolGate for AuthorityGate {
    /// A tool result that is a JSON object with a `metric` field (see
    /// [`MetricOutput`](openvibe_protocols::MetricOutput)) moves the role's
    /// key results, once per call: the report's id is the call's, so a
    /// replayed call counts once. A malformed metric or a failed report is
    /// logged; the call's result stands.
    async fn ran(&self, tool: &str, call_id: &str, content: &str) {
        let Some(reporter) = &self.metrics else {
            return;
        };
        let Ok(value) = serde_json::from_str::<Value>(content) else {
            return;
        };
        let metrics = match openvibe_protocols::MetricOutput::all_in(&value) {
            Ok(metrics) => metrics,
            Err(e) => {
                tracing::warn!(role = %self.role_id, tool, error = %e, "a tool result's metric is malformed");
                return;
            }
        };
        let by = format!(
            "call-{}",
            openvibe_protocols::content_hash(&format!("{tool}\n{call_id}"))
                .trim_start_matches("fnv1a64:")
        );
        for metric in metrics {
            if let Err(e) = reporter.report(&metric, &by).await {
                tracing::warn!(role = %self.role_id, tool, metric = %metric.name, error = %e, "reporting a tool result's metric failed");
            }
        }
    }

    async fn check(&self, tool: &str, action: &str, input: &Value) -> ToolDecision {
        let authority = self
            .authority
            .as_ref()
            .map_or(Authority::Autonomous, |a| a.can_act(action));
        match authority {
            Authority::Autonomous => ToolDecision::Allow,
            Authority::Forbidden => ToolDecision::Deny(format!(
                "action `{action}` is forbidden for role `{}`",
                self.role_id
            )),
            Authority::NeedsApproval => {
                if let Some((store, ctx)) = &self.proposals {
                    return self.propose(store.as_ref(), ctx, tool, action, input).await;
                }
                let request = ApprovalRequest {
                    role_id: self.role_id.clone(),
                    tool: tool.to_owned(),
                    action: action.to_owned(),
                    input: input.clone(),
                };
                match self.approver.decide(&request).await {
                    ApprovalDecision::Approved => {
                        tracing::info!(role = %self.role_id, tool, action, "action approved");
                        ToolDecision::Allow
                    }
                    ApprovalDecision::Denied(reason) => ToolDecision::Deny(format!(
                        "action `{action}` needs approval for role `{}` and was not approved: {reason}",
                        self.role_id
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The seed's test_authority.py.
    #[test]
    fn autonomous_action() {
        let auth = AuthorityConfig::new()
            .autonomous(["qualify_lead", "trigger_nurture"])
            .needs_approval(["change_pricing"])
            .forbidden(["sign_contracts"]);
        assert_eq!(auth.can_act("qualify_lead"), Authority::Autonomous);
    }

    #[test]
    fn needs_approval_action() {
        let auth = AuthorityConfig::new()
            .autonomous(["qualify_lead"])
            .needs_approval(["change_pricing"]);
        assert_eq!(auth.can_act("change_pricing"), Authority::NeedsApproval);
    }

    #[test]
    fn forbidden_action() {
        let auth = AuthorityConfig::new().forbidden(["sign_contracts"]);
        assert_eq!(auth.can_act("sign_contracts"), Authority::Forbidden);
    }

    #[test]
    fn unknown_defaults_to_needs_approval() {
        let auth = AuthorityConfig::new().autonomous(["qualify_lead"]);
        assert_eq!(auth.can_act("unknown_action"), Authority::NeedsApproval);
    }

    #[test]
    fn forbidden_takes_priority() {
        let auth = AuthorityConfig::new()
            .autonomous(["do_thing"])
            .needs_approval(["do_thing"])
            .forbidden(["do_thing"]);
        assert_eq!(auth.can_act("do_thing"), Authority::Forbidden);
        let auth = AuthorityConfig::new()
            .autonomous(["do_thing"])
            .needs_approval(["do_thing"]);
        assert_eq!(auth.can_act("do_thing"), Authority::NeedsApproval);
    }

    #[test]
    fn authority_parses_from_yaml() {
        let auth: AuthorityConfig =
            yaml_serde::from_str("autonomous: [a]\nforbidden: [b]\n").unwrap();
        assert_eq!(auth.can_act("a"), Authority::Autonomous);
        assert_eq!(auth.can_act("b"), Authority::Forbidden);
        assert!(yaml_serde::from_str::<AuthorityConfig>("autonomus: [a]\n").is_err());
    }
}
