//! The audit trail: who did what to which record, and what they searched
//! for, written by the stores themselves and read through [`AuditLog`].
//!
//! Every backend appends an [`AuditEntry`] for each record written
//! (insert, update), deleted or promoted, for each search (with its
//! filters and top k), and for each refused change. Entries are append
//! only. Record changes are audited atomically with the change (in
//! PostgreSQL by triggers in the same transaction); searches and refusals,
//! which change nothing, are appended in batches so that a read never waits
//! on a write ([`AuditLog::flush`] makes them visible at once).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallerContext, NamespaceScope, RecordMeta, StoreError};

/// What an audited operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum AuditOp {
    /// A record was created.
    Insert,
    /// A record was changed.
    Update,
    /// A record was deleted.
    Delete,
    /// Records were searched or listed.
    Search,
    /// A record was promoted (copied or moved) to another namespace.
    Promote,
}

impl AuditOp {
    /// All operations.
    pub const ALL: [Self; 5] = [
        Self::Insert,
        Self::Update,
        Self::Delete,
        Self::Search,
        Self::Promote,
    ];

    /// The lowercase name (`insert`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Insert => "insert",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Search => "search",
            Self::Promote => "promote",
        }
    }

    /// The operation named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == s)
    }
}

/// Whether an audited operation happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum AuditStatus {
    /// It happened.
    Ok,
    /// It was refused; nothing changed.
    Refused,
}

impl AuditStatus {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Refused => "refused",
        }
    }
}

/// One line of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AuditEntry {
    /// Position in the tenant's trail (increasing; assigned by the backend).
    pub seq: u64,
    /// When.
    pub at: DateTime<Utc>,
    /// The tenant.
    pub tenant_id: String,
    /// Who (`Principal::owner_key`, e.g. `agent:cro`).
    pub principal: String,
    /// What.
    pub operation: AuditOp,
    /// The record kind (`fact`, `episode`, `insight`, `session`, `plan`,
    /// `task_context`, `knowledge`).
    pub kind: String,
    /// The record's namespace (`None` for a search: see `filters`).
    pub namespace: Option<String>,
    /// The record's project.
    pub project_id: Option<String>,
    /// The record (`None` for a search).
    pub record_id: Option<String>,
    /// A search's filters (and the namespaces it covered); a promotion's
    /// lineage; a refusal's operation.
    pub filters: Option<Value>,
    /// A search's limit.
    pub top_k: Option<u64>,
    /// Whether it happened.
    pub status: AuditStatus,
    /// Why it was refused.
    pub reason: Option<String>,
    /// Where the written record came from (its `source`; seed 003's audit
    /// detail), for a record change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The tool or route the call came through (`mcp:saveMemory`,
    /// `http:storeFact`; [`CallerContext::tool`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl AuditEntry {
    /// The cursor of a page that ends with this entry
    /// ([`AuditQuery::cursor`]).
    pub fn cursor(&self) -> String {
        super::page_cursor(self.at, &self.seq.to_string())
    }

    /// An entry of `ctx` for `operation` on `kind`, now, status ok, nothing
    /// else set (the backend assigns `seq`).
    pub fn new(ctx: &CallerContext, operation: AuditOp, kind: &str) -> Self {
        Self {
            seq: 0,
            at: Utc::now(),
            tenant_id: ctx.tenant_id().to_owned(),
            principal: ctx.owner_key(),
            operation,
            kind: kind.to_owned(),
            namespace: None,
            project_id: None,
            record_id: None,
            filters: None,
            top_k: None,
            status: AuditStatus::Ok,
            reason: None,
            source: None,
            tool: ctx.tool().map(str::to_owned),
        }
    }

    /// The entry of a search by `ctx` of `kind` with `query` (serialised,
    /// plus the namespaces the search covered as `"scope"`: `"*"` or a
    /// list) and `top_k`.
    pub fn search(
        ctx: &CallerContext,
        kind: &str,
        query: &impl Serialize,
        namespaces: &[String],
        top_k: usize,
    ) -> Self {
        let mut filters = serde_json::to_value(query).unwrap_or(Value::Null);
        let scope = match ctx.search_scope(namespaces) {
            NamespaceScope::All => Value::from("*"),
            NamespaceScope::Only(list) => Value::from(list),
        };
        if let Value::Object(map) = &mut filters {
            map.insert("scope".to_owned(), scope);
        }
        Self {
            filters: Some(filters),
            top_k: Some(top_k as u64),
            ..Self::new(ctx, AuditOp::Search, kind)
        }
    }

    /// The entry of a change (`operation`) by `ctx` to record `id` of
    /// `kind` placed as `meta` says.
    pub fn change(
        ctx: &CallerContext,
        operation: AuditOp,
        kind: &str,
        id: &str,
        meta: &RecordMeta,
    ) -> Self {
        Self {
            namespace: Some(meta.namespace.clone()),
            project_id: meta.project_id.clone(),
            record_id: Some(id.to_owned()),
            source: Some(meta.source.clone()).filter(|s| !s.is_empty()),
            ..Self::new(ctx, operation, kind)
        }
    }

    /// The entry of a refused `operation` by `ctx` on record `id` of `kind`.
    pub fn refused(
        ctx: &CallerContext,
        operation: AuditOp,
        kind: &str,
        id: &str,
        error: &StoreError,
    ) -> Self {
        let reason = match error {
            StoreError::Unauthorized { reason, .. } => reason.clone(),
            other => other.to_string(),
        };
        Self {
            record_id: Some(id.to_owned()),
            status: AuditStatus::Refused,
            reason: Some(reason),
            ..Self::new(ctx, operation, kind)
        }
    }
}

/// The refusal entry of `operation` on record `id` of `kind` when
/// `result` is an authorization error (what both backends audit of a
/// refused change).
pub fn refusal_entry<T>(
    ctx: &CallerContext,
    operation: AuditOp,
    kind: &str,
    id: &str,
    result: &Result<T, StoreError>,
) -> Option<AuditEntry> {
    match result {
        Err(e @ StoreError::Unauthorized { .. }) => {
            Some(AuditEntry::refused(ctx, operation, kind, id, e))
        }
        _ => None,
    }
}

impl AuditEntry {
    /// This entry in `ctx`'s name (tenant and principal).
    #[must_use]
    pub fn stamped(mut self, ctx: &CallerContext) -> Self {
        self.tenant_id = ctx.tenant_id().to_owned();
        self.principal = ctx.owner_key();
        self
    }
}

/// Which audit entries to read. Empty fields: no filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct AuditQuery {
    /// Only this principal's (`agent:cro`).
    pub principal: Option<String>,
    /// Only entries about records of this namespace.
    pub namespace: Option<String>,
    /// Only this operation.
    pub operation: Option<AuditOp>,
    /// Only entries at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only entries before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only entries about this record kind (`fact`, `proposal`).
    pub kind: Option<String>,
    /// Only entries about this record.
    pub record_id: Option<String>,
    /// Only entries with this status (`refused`: the refusals).
    pub status: Option<AuditStatus>,
    /// Continue after the page that ended with this cursor
    /// ([`AuditEntry::cursor`]): keyset paging in the trail's order.
    pub cursor: Option<String>,
    /// At most this many, newest first (by `at`, then `seq`; default 100).
    pub limit: usize,
}

impl Default for AuditQuery {
    fn default() -> Self {
        Self {
            principal: None,
            namespace: None,
            operation: None,
            since: None,
            until: None,
            kind: None,
            record_id: None,
            status: None,
            cursor: None,
            limit: 100,
        }
    }
}

impl AuditQuery {
    /// No filters, the 100 newest.
    pub fn new() -> Self {
        Self::default()
    }

    /// The position the cursor names: `(at, seq)` of the last entry of the
    /// previous page; entries after it in the trail's order are older, or
    /// as old with a smaller `seq`.
    pub fn after(&self) -> Result<Option<(DateTime<Utc>, u64)>, StoreError> {
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        let bad = || StoreError::invalid("cursor", "not a cursor of an audit page");
        let (micros, seq) = super::parse_cursor(cursor)?;
        let at = DateTime::from_timestamp_micros(micros).ok_or_else(bad)?;
        let seq = seq.parse::<u64>().map_err(|_| bad())?;
        Ok(Some((at, seq)))
    }

    /// Whether `entry` passes the filters (the tenant and the caller's
    /// right to read the trail are the store's business; the cursor is
    /// checked by [`AuditQuery::after`]).
    pub fn matches(&self, entry: &AuditEntry) -> bool {
        self.kind.as_deref().is_none_or(|k| entry.kind == k)
            && self
                .record_id
                .as_deref()
                .is_none_or(|r| entry.record_id.as_deref() == Some(r))
            && self.status.is_none_or(|st| entry.status == st)
            && self.matches_fields(entry)
    }

    fn matches_fields(&self, entry: &AuditEntry) -> bool {
        self.principal
            .as_deref()
            .is_none_or(|p| entry.principal == p)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| entry.namespace.as_deref() == Some(n))
            && self.operation.is_none_or(|op| entry.operation == op)
            && self.since.is_none_or(|s| entry.at >= s)
            && self.until.is_none_or(|u| entry.at < u)
    }

    /// This query as `ctx` may run it: a privileged caller reads its
    /// tenant's whole trail, anyone else only its own entries.
    pub fn for_caller(&self, ctx: &CallerContext) -> Self {
        let mut q = self.clone();
        if !ctx.is_privileged() {
            q.principal = Some(ctx.owner_key());
        }
        q
    }
}

/// Reads the audit trail the stores write.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// The entries of the caller's tenant matching `query`, newest first
    /// (by time, then position):
    /// a privileged caller reads everyone's, anyone else only its own
    /// ([`AuditQuery::for_caller`]).
    async fn query(
        &self,
        ctx: &CallerContext,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEntry>, StoreError>;

    /// Write the batched entries (searches, refusals) now.
    async fn flush(&self) -> Result<(), StoreError>;

    /// Append `entry` for an operation composed above the stores (a
    /// promotion), durably before returning. Its tenant and principal are
    /// the caller's, whatever `entry` says: nobody appends in another's name.
    async fn append(&self, ctx: &CallerContext, entry: AuditEntry) -> Result<(), StoreError>;
}
