//! Request and response bodies that are not protocol types themselves.

use openvibe_protocols::promotion::PromoteMode;
use openvibe_protocols::{
    ErasureSubject, Expect, Insight, RawCall, RawRetention, StoreError, Verdict,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Ids to mark as accessed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// The record ids.
    pub ids: Vec<String>,
}

/// How many records a touch counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Touched {
    /// How many of the ids were readable and counted.
    pub touched: usize,
}

/// Find the insight most similar to `content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarInsight {
    /// Whose insights.
    pub agent_id: String,
    /// The text to compare with.
    pub content: String,
}

/// An insight, or none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MaybeInsight {
    /// The insight (`null`: none similar enough).
    pub insight: Option<Insight>,
}

/// Observe an insight again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Strengthen {
    /// Episodes to add to its sources.
    #[serde(default)]
    pub episode_ids: Vec<String>,
}

/// Set one key of a plan's working memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetState {
    /// The value.
    pub value: Value,
    /// What the write expects to find: `"Any"` (default, last write wins),
    /// `"Absent"` (create only) or `{"Version": n}` (compare-and-set).
    #[serde(default)]
    pub expect: Expect,
}

/// Append to a list in a plan's working memory, atomically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AtomicAppend {
    /// The plan.
    pub plan_id: String,
    /// The key (the seed calls it `path`).
    #[serde(alias = "path")]
    pub key: String,
    /// The item to append.
    pub value: Value,
}

/// Add to a counter in a plan's working memory, atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AtomicIncrement {
    /// The plan.
    pub plan_id: String,
    /// The key (the seed calls it `path`).
    #[serde(alias = "path")]
    pub key: String,
    /// How much to add (1 by default; may be negative).
    #[serde(default = "one")]
    pub by: i64,
}

fn one() -> i64 {
    1
}

/// Whether a delete found something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Deleted {
    /// `false`: there was nothing to delete.
    pub deleted: bool,
}

/// How many entries a delete removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeletedCount {
    /// The number of entries removed.
    pub deleted_count: u64,
}

/// The embedding model of the semantic store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EmbeddingModel {
    /// Its name.
    pub model: String,
    /// Its vectors' length.
    pub dimensions: usize,
}

/// Move one kind's records between namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveNamespace {
    /// The record kind (`fact`, `episode`, …).
    pub kind: String,
    /// From this namespace (`""`: records without one).
    pub from: String,
    /// To this one.
    pub to: String,
    /// Records per statement.
    #[serde(default = "batch")]
    pub batch: usize,
}

fn batch() -> usize {
    500
}

/// Delete one batch of expired records (see
/// `NamespaceAdmin::delete_expired`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteExpired {
    /// At most this many records (500 by default).
    #[serde(default = "batch")]
    pub batch: usize,
}

/// Delete one batch of the records about a subject (see
/// `NamespaceAdmin::erase`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Erase {
    /// Whom or what.
    pub subject: ErasureSubject,
    /// At most this many records (500 by default).
    #[serde(default = "batch")]
    pub batch: usize,
}

/// Redact the audit entries quoting a subject (see `AuditLog::redact`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactAudit {
    /// Whom or what.
    pub subject: ErasureSubject,
    /// Only count the entries.
    #[serde(default)]
    pub dry_run: bool,
}

/// How many audit entries were (or would be) redacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Redacted {
    /// The number of entries.
    pub redacted: u64,
}

/// Which records' vectors to read (see `RecordVectors::vectors`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VectorLookup {
    /// Vectors of this model (none when it is not the store's).
    pub model: String,
    /// The record kind (`fact`, `insight`, `episode`, `knowledge`).
    pub kind: String,
    /// The records (at most 1,000).
    pub ids: Vec<String>,
}

/// Embed one batch of records waiting for a vector (see
/// `RecordVectors::embed_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedPending {
    /// At most this many records (64 by default).
    #[serde(default = "embed_batch")]
    pub batch: usize,
}

fn embed_batch() -> usize {
    64
}

/// How many records were embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Embedded {
    /// The number embedded (0: none waits).
    pub embedded: u64,
}

/// How many records moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Moved {
    /// The number moved.
    pub moved: u64,
}

/// Promote a fact or insight into another namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Promote {
    /// `fact` or `insight`.
    pub kind: String,
    /// The record.
    pub id: String,
    /// The namespace it goes to.
    pub to: String,
    /// Copy (default) or move.
    #[serde(default)]
    pub mode: PromoteMode,
    /// Why (kept in the audit entry).
    #[serde(default)]
    pub note: String,
}

/// A merged recall: text search over the facts the caller may read, one
/// per lineage (a fact and its promoted copies are one result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemory {
    /// Words that must all appear.
    pub query: String,
    /// The namespaces to search (the caller's recall namespaces when empty),
    /// never widened beyond what it may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// How many results at most (10 when absent, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
}

/// How a claimed proposal's action went: its result, or its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishProposal {
    /// What the action returned (when it succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// Why it failed (when it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FinishProposal {
    /// The outcome it describes: exactly one of `result` and `error`.
    pub fn outcome(
        self,
    ) -> Result<Result<serde_json::Value, String>, openvibe_protocols::StoreError> {
        match (self.result, self.error) {
            (Some(result), None) => Ok(Ok(result)),
            (None, Some(error)) => Ok(Err(error)),
            _ => Err(openvibe_protocols::StoreError::invalid(
                "result",
                "give exactly one of `result` and `error`",
            )),
        }
    }

    /// The body of `outcome`.
    pub fn of(outcome: Result<serde_json::Value, String>) -> Self {
        match outcome {
            Ok(result) => Self {
                result: Some(result),
                error: None,
            },
            Err(error) => Self {
                result: None,
                error: Some(error),
            },
        }
    }
}

/// Expire pending proposals past their deadline, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpireProposals {
    /// At most this many (default 500).
    #[serde(default = "default_expire_limit")]
    pub limit: usize,
}

fn default_expire_limit() -> usize {
    500
}

/// How many proposals expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExpiredCount {
    /// The count.
    pub expired: u64,
}

/// The decomposition of a goal as it was at `fingerprint` (its
/// [`Goal::fingerprint`](openvibe_protocols::Goal::fingerprint)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decompose {
    /// The fingerprint of the objective decomposed.
    pub fingerprint: String,
    /// Its initiatives.
    pub initiatives: Vec<openvibe_protocols::Initiative>,
}

/// Which priorities: a role's latest on or before a day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrioritiesOf {
    /// The role.
    pub role_id: String,
    /// The day (`YYYY-MM-DD`).
    pub day: chrono::NaiveDate,
}

/// A person's answer to a proposed belief: approve or reject it, with a
/// reason (required to reject). Unlike a proposal's verdict it takes no
/// action: a belief is adopted, not run (a body with one is refused, 400).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BeliefVerdict {
    /// Approve (`true`) or reject (`false`).
    pub approve: bool,
    /// Why (required to reject).
    #[serde(default)]
    pub reason: String,
    /// Approving a belief that refines an active one: retire that one too
    /// (the approved belief supersedes it). Refused on a rejection, or on
    /// a belief that refines none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub supersede: bool,
    /// Approving it as a constraint: an action the belief bears on is then
    /// proposed to a person, never taken alone. Refused on a rejection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constraint: bool,
}

impl BeliefVerdict {
    /// The belief's part of `verdict`: refused, naming the rule, when it
    /// carries an action.
    pub fn of(verdict: &Verdict) -> Result<Self, StoreError> {
        openvibe_protocols::check_belief_verdict(verdict)?;
        Ok(Self {
            approve: verdict.approve,
            reason: verdict.reason.clone(),
            supersede: verdict.supersede,
            constraint: verdict.constraint,
        })
    }
}

impl From<BeliefVerdict> for Verdict {
    fn from(v: BeliefVerdict) -> Self {
        Self {
            approve: v.approve,
            reason: v.reason,
            action: None,
            supersede: v.supersede,
            constraint: v.constraint,
        }
    }
}

/// Why an active belief is retired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetireBelief {
    /// Why (required; kept in the belief and the audit trail).
    pub reason: String,
}

/// Liveness or readiness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// `ok`, or what is not.
    pub status: String,
}

/// Raw calls to append, all or none (see `RawLogStore::append`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendRaw {
    /// The calls.
    pub calls: Vec<RawCall>,
}

/// Prune an agent's raw log (see `RawLogStore::prune`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneRaw {
    /// The agent whose calls are pruned.
    pub agent_id: String,
    /// What stays.
    pub retention: RawRetention,
}

/// Messages to append to a space, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessages {
    /// The messages (each id unique in the tenant: the same id again
    /// returns the stored message).
    pub messages: Vec<openvibe_protocols::SpaceMessage>,
}

/// Move the caller's cursor in a space forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ack {
    /// The last `seq` the caller handled.
    pub seq: u64,
}

/// A member's cursor in a space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cursor {
    /// The last `seq` it acknowledged (0: none).
    pub cursor: u64,
}
