//! L1 raw calls: one LLM call, request and response, as it happened.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::RecordMeta;
use crate::{LlmRequest, LlmResponse, StopReason};

/// L1 memory: one LLM call a role's operators made, appended to the raw log
/// by the role-aware LLM wrapper (see `RawLogStore`).
///
/// Append-only: a raw call is never changed after it is stored, only
/// pruned. `owner`, `tenant_id` and `project_id` come from the caller like
/// every record's; the namespace defaults to the agent id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RawCall {
    /// Unique id (`raw_` + a UUID when generated).
    #[serde(default)]
    pub id: String,
    /// Governance metadata.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The agent (role) whose operators made the call.
    pub agent_id: String,
    /// The operator (empty: a call outside an operator, e.g. reflection).
    #[serde(default)]
    pub operator_id: String,
    /// The node (empty: a call outside a node).
    #[serde(default)]
    pub node_name: String,
    /// The episode (L2) the node's run was recorded as: the link L1 → L2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    /// The entity of the node's memory scope (empty: none).
    #[serde(default)]
    pub entity: String,
    /// The domain of the node's memory scope (empty: none); what clearance
    /// is checked against, as for episodes.
    #[serde(default)]
    pub domain: String,
    /// When the call started.
    pub timestamp: DateTime<Utc>,
    /// The model asked for (before alias resolution).
    pub model: String,
    /// The request as the wrapper sent it (soul and memories included).
    pub request: LlmRequest,
    /// The response (`None` when the call failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<LlmResponse>,
    /// The error of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Input tokens billed.
    #[serde(default)]
    pub tokens_in: u64,
    /// Output tokens billed.
    #[serde(default)]
    pub tokens_out: u64,
    /// Wall time of the call, in microseconds.
    #[serde(default)]
    pub latency_us: u64,
    /// Why the model stopped (`None` when the call failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub stop_reason: Option<StopReason>,
}

impl RawCall {
    /// The record of `request`, answered by `outcome`, for `agent_id`: the
    /// operator, node, episode, entity and domain come from the request's
    /// [`origin`](LlmRequest::origin); tokens and stop reason from the
    /// response. The id is left empty (the store generates one).
    pub fn new(
        agent_id: impl Into<String>,
        timestamp: DateTime<Utc>,
        latency_us: u64,
        mut request: LlmRequest,
        outcome: Result<LlmResponse, String>,
    ) -> Self {
        // The origin lives in the record's own fields (it is never serialised).
        let origin = request.origin.take().unwrap_or_default();
        let (response, error) = match outcome {
            Ok(response) => (Some(response), None),
            Err(error) => (None, Some(error)),
        };
        Self {
            id: String::new(),
            // Tenant, owner and placement are the store's to set: no
            // allocation here (this runs on the call path).
            meta: RecordMeta {
                tenant_id: String::new(),
                namespace: String::new(),
                project_id: None,
                owner: String::new(),
                classification: super::Classification::default(),
                source: String::new(),
                created_at: timestamp,
                updated_at: timestamp,
                expires_at: None,
            },
            agent_id: agent_id.into(),
            operator_id: origin.operator_id,
            node_name: origin.node_name,
            episode_id: (!origin.episode_id.is_empty()).then_some(origin.episode_id),
            entity: origin.entity,
            domain: origin.domain,
            timestamp,
            model: request.model.clone(),
            tokens_in: response.as_ref().map_or(0, |r| r.tokens_in),
            tokens_out: response.as_ref().map_or(0, |r| r.tokens_out),
            stop_reason: response.as_ref().map(|r| r.stop_reason.clone()),
            request,
            response,
            error,
            latency_us,
        }
    }

    /// The text a raw call is searched by: the last message of the request
    /// and the answer's text (or the error).
    pub fn searchable_text(&self) -> String {
        let asked = self
            .request
            .messages
            .last()
            .map(crate::Message::text)
            .unwrap_or_default();
        let answered = match (&self.response, &self.error) {
            (Some(response), _) => response.content.as_str(),
            (None, Some(error)) => error.as_str(),
            (None, None) => "",
        };
        format!("{asked}\n{answered}")
    }
}
