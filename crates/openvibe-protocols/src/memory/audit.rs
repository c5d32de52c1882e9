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

use super::{CallerContext, ErasureSubject, NamespaceScope, RecordMeta, StoreError};

crate::vocabulary! {
    /// What an audited operation did.
    pub enum AuditOp {
        /// A record was created.
        Insert = "insert",
        /// A record was changed.
        Update = "update",
        /// A record was deleted.
        Delete = "delete",
        /// Records were searched or listed.
        Search = "search",
        /// A record was promoted (copied or moved) to another namespace.
        Promote = "promote",
    }
}

crate::vocabulary! {
    /// Whether an audited operation happened.
    pub enum AuditStatus {
        /// It happened.
        Ok = "ok",
        /// It was refused; nothing changed.
        Refused = "refused",
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
    /// Its place in its tenant's chain, from 1, without gaps (assigned by
    /// the backend when the entry is written; 0 before).
    #[serde(default)]
    pub chain_seq: u64,
    /// The hash of the entry before it in the chain, hex ([`CHAIN_GENESIS`]
    /// for the first; assigned by the backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    /// Its own hash, hex: SHA-256 of the previous hash and the entry's
    /// canonical encoding ([`audit_chain_hash`]; assigned by the backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

impl AuditEntry {
    /// The cursor of a page that ends with this entry
    /// ([`AuditQuery::cursor`]): its place in the chain.
    pub fn cursor(&self) -> String {
        super::page_cursor(self.at, &self.chain_seq.to_string())
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
            chain_seq: 0,
            prev_hash: None,
            hash: None,
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
    /// At most this many, newest first in the order the trail was written
    /// (its chain, `chain_seq`: the order the store applied the changes,
    /// whatever the clocks of racing writers said; default 100).
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

    /// The position the cursor names: the `chain_seq` of the last entry
    /// of the previous page; the entries after it in the trail's order are
    /// those with a smaller one.
    pub fn after(&self) -> Result<Option<u64>, StoreError> {
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        let bad = || StoreError::invalid("cursor", "not a cursor of an audit page");
        let (micros, seq) = super::parse_cursor(cursor)?;
        DateTime::from_timestamp_micros(micros).ok_or_else(bad)?;
        let seq = seq.parse::<u64>().map_err(|_| bad())?;
        Ok(Some(seq))
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

    /// Walk the caller's tenant's chain (batched entries flushed first) and
    /// report the first entry that does not hold ([`ChainWalk`]). Only a
    /// privileged caller (it reads the whole trail).
    async fn verify(
        &self,
        ctx: &CallerContext,
        request: &VerifyChain,
    ) -> Result<ChainReport, StoreError>;

    /// The head of the caller's tenant's chain (batched entries flushed
    /// first): keep it elsewhere, and [`AuditLog::verify`] later checks the
    /// trail still leads to it. Only a privileged caller.
    async fn anchor(&self, ctx: &CallerContext) -> Result<ChainHead, StoreError>;

    /// Redact the caller's tenant's entries that quote `subject`
    /// ([`quotes_subject`](crate::quotes_subject)): their filters and
    /// reason replaced ([`redact_entry`](crate::redact_entry)), and, in the
    /// same transaction, a redaction entry appended to the chain naming
    /// each redacted entry with its original hash and the hash of its
    /// redacted form, so that [`AuditLog::verify`] still passes and shows
    /// where redaction happened. Returns how many entries were (with
    /// `dry_run`: would be) redacted. Privileged callers only.
    async fn redact(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        dry_run: bool,
    ) -> Result<u64, StoreError>;
}

/// Refuse a chain operation to a caller that may not read the whole trail.
pub fn check_chain_reader(ctx: &CallerContext, operation: &str) -> Result<(), StoreError> {
    if ctx.is_privileged() {
        Ok(())
    } else {
        Err(StoreError::Unauthorized {
            principal: ctx.owner_key(),
            operation: operation.to_owned(),
            reason: "only a privileged key reads the whole audit chain".into(),
        })
    }
}
/// The hash before the first entry of a chain: 32 zero bytes, hex.
pub const CHAIN_GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The head of a tenant's audit chain: what `openvibe audit anchor` prints
/// for a user to keep elsewhere, and `verify --anchor` checks against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ChainHead {
    /// The tenant.
    pub tenant_id: String,
    /// The number of the last entry (0: the chain is empty).
    pub chain_seq: u64,
    /// Its hash, hex ([`CHAIN_GENESIS`] when empty).
    pub hash: String,
}

impl ChainHead {
    /// `<chain_seq>:<hash>`, the form the CLI prints and reads back.
    pub fn token(&self) -> String {
        format!("{}:{}", self.chain_seq, self.hash)
    }

    /// The head a [`ChainHead::token`] names, for `tenant_id`.
    pub fn parse_token(tenant_id: &str, token: &str) -> Result<Self, StoreError> {
        let bad = || StoreError::invalid("anchor", "not `<chain_seq>:<64 hex digits>`");
        let (seq, hash) = token.trim().split_once(':').ok_or_else(bad)?;
        let chain_seq = seq.parse::<u64>().map_err(|_| bad())?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        Ok(Self {
            tenant_id: tenant_id.to_owned(),
            chain_seq,
            hash: hash.to_ascii_lowercase(),
        })
    }
}

/// What [`AuditLog::verify`] checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct VerifyChain {
    /// Start at the first entry at or after this time (trusting the hash it
    /// names as its predecessor); `None`: from the chain's first entry.
    pub since: Option<DateTime<Utc>>,
    /// A head kept earlier: the entry it names must still carry its hash.
    pub anchor: Option<ChainHead>,
}

/// Where a chain stopped holding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChainBreak {
    /// The entry's place in the chain.
    pub chain_seq: u64,
    /// The entry's position in the trail (`AuditEntry::seq`).
    pub seq: u64,
    /// What does not hold: `hash` (the entry was changed), `redacted` (a
    /// redacted entry is not what its redaction recorded), `prev_hash`
    /// (an entry before it was changed, removed or inserted), `gap` (a
    /// number is missing), `anchor` (the anchored entry carries another
    /// hash, or is gone), `unchained` (an entry has no place in the chain).
    pub what: String,
    /// The value it should have, hex (or the number expected).
    pub expected: String,
    /// The value it has.
    pub found: String,
}

/// What [`AuditLog::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChainReport {
    /// The tenant.
    pub tenant_id: String,
    /// The first entry checked (0: none).
    pub from: u64,
    /// How many entries were checked.
    pub checked: u64,
    /// The chain's head as read.
    pub head: ChainHead,
    /// The first break, when there is one.
    pub broken: Option<ChainBreak>,
    /// The entries (`chain_seq`) found redacted by an erasure, each as a
    /// later redaction entry of the chain recorded it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<u64>,
}

impl ChainReport {
    /// Whether the chain holds.
    pub fn ok(&self) -> bool {
        self.broken.is_none()
    }
}

/// A text field of the canonical encoding: length-prefixed (`~` for none),
/// so that no two entries encode alike.
fn canonical_field(out: &mut String, value: Option<&str>) {
    use std::fmt::Write as _;
    match value {
        Some(v) => {
            let _ = write!(out, "\u{1f}{}:{v}", v.chars().count());
        }
        None => out.push_str("\u{1f}~"),
    }
}

/// The canonical encoding of `entry` in its chain (every field but the
/// hashes; `filters` as compact JSON). PostgreSQL encodes the same fields
/// the same way in SQL (`openvibe_audit_canonical`), with the jsonb's own
/// text for `filters`.
pub fn audit_canonical(entry: &AuditEntry) -> Vec<u8> {
    use std::fmt::Write as _;
    let filters = entry.filters.as_ref().map(ToString::to_string);
    let mut out = String::with_capacity(256 + filters.as_ref().map_or(0, String::len));
    out.push_str("openvibe-audit-v1");
    canonical_field(&mut out, Some(&entry.tenant_id));
    let _ = write!(
        out,
        "\u{1f}{}\u{1f}{}\u{1f}{}",
        entry.chain_seq,
        entry.seq,
        entry.at.timestamp_micros()
    );
    canonical_field(&mut out, Some(&entry.principal));
    canonical_field(&mut out, Some(entry.operation.as_str()));
    canonical_field(&mut out, Some(&entry.kind));
    canonical_field(&mut out, entry.namespace.as_deref());
    canonical_field(&mut out, entry.project_id.as_deref());
    canonical_field(&mut out, entry.record_id.as_deref());
    canonical_field(&mut out, filters.as_deref());
    let top_k = entry.top_k.map(|k| k.to_string());
    canonical_field(&mut out, top_k.as_deref());
    canonical_field(&mut out, Some(entry.status.as_str()));
    canonical_field(&mut out, entry.reason.as_deref());
    canonical_field(&mut out, entry.source.as_deref());
    canonical_field(&mut out, entry.tool.as_deref());
    out.into_bytes()
}

/// The hash `entry` must carry after the entry whose hash is `prev` (hex):
/// SHA-256 of the previous hash's bytes and the canonical encoding, hex.
pub fn audit_chain_hash(prev: &str, entry: &AuditEntry) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut digest = [0u8; 32];
    match hex::decode_to_slice(prev, &mut digest) {
        Ok(()) => hasher.update(digest),
        Err(_) => hasher.update(hex_bytes(prev)),
    }
    hasher.update(audit_canonical(entry));
    hex::encode(hasher.finalize())
}

/// The bytes of hex `text` (pairs that are not hex count as zero: a
/// malformed stored hash then fails its check rather than panicking).
fn hex_bytes(text: &str) -> Vec<u8> {
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .unwrap_or(0)
        })
        .collect()
}

/// A walk of one tenant's chain, entry by entry in chain order, as
/// [`AuditLog::verify`] does: each entry must follow the one before
/// without a gap, name its hash as its predecessor and carry its own hash
/// (as the backend's canonical encoding recomputes it). The first entry's
/// predecessor is trusted when the walk starts mid-chain. An anchor must
/// name an entry walked (or the empty chain) carrying its hash.
#[derive(Debug)]
pub struct ChainWalk {
    report: ChainReport,
    anchor: Option<ChainHead>,
    anchored: bool,
    /// `chain_seq` → (original hash, hash of the redacted form), from the
    /// chain's redaction entries.
    redactions: std::collections::HashMap<u64, (String, String)>,
}

/// One entry a redaction entry names: its place, its hash as written, and
/// the hash its redacted form has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    /// The redacted entry's place in the chain.
    pub chain_seq: u64,
    /// Its hash as written (what it still carries).
    pub hash: String,
    /// The hash its redacted form computes to.
    pub redacted_hash: String,
}

impl Redaction {
    /// The redaction of `entry` (as written, hashes assigned) into `redacted`.
    pub fn of(entry: &AuditEntry, redacted: &AuditEntry) -> Self {
        Self {
            chain_seq: entry.chain_seq,
            hash: entry.hash.clone().unwrap_or_default(),
            redacted_hash: audit_chain_hash(
                redacted.prev_hash.as_deref().unwrap_or_default(),
                redacted,
            ),
        }
    }

    /// The entry recording `redactions` for an erasure of `subject`, by
    /// `ctx`: what kind of subject (`entity`, `owner`, `namespace`), never
    /// which. The `erasure` entry is the one entry that names an erased
    /// subject (docs/governance.md, "Erasure that proves itself").
    pub fn entry(
        ctx: &CallerContext,
        subject: &ErasureSubject,
        redactions: &[Redaction],
    ) -> AuditEntry {
        let (field, _) = subject.parts();
        let mut entry = AuditEntry::new(ctx, AuditOp::Update, crate::REDACTION_AUDIT_KIND);
        entry.filters = Some(serde_json::json!({
            "subject_kind": field,
            "entries": redactions,
        }));
        entry
    }

    /// The redactions a chain entry records (none unless it is a
    /// redaction entry).
    pub fn recorded_in(entry: &AuditEntry) -> Vec<Self> {
        if entry.kind != crate::REDACTION_AUDIT_KIND {
            return Vec::new();
        }
        entry
            .filters
            .as_ref()
            .and_then(|f| f.get("entries"))
            .and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default()
    }
}

impl ChainWalk {
    /// A walk of `tenant_id`'s chain, checked against `anchor`.
    pub fn new(tenant_id: &str, anchor: Option<ChainHead>) -> Self {
        let anchored = anchor
            .as_ref()
            .is_none_or(|a| a.chain_seq == 0 && a.hash == CHAIN_GENESIS);
        Self {
            report: ChainReport {
                tenant_id: tenant_id.to_owned(),
                from: 0,
                checked: 0,
                head: ChainHead {
                    tenant_id: tenant_id.to_owned(),
                    chain_seq: 0,
                    hash: CHAIN_GENESIS.to_owned(),
                },
                broken: None,
                redacted: Vec::new(),
            },
            anchor,
            anchored,
            redactions: std::collections::HashMap::new(),
        }
    }

    /// Accept the redactions the chain's redaction entries record (read
    /// before the walk: they come after the entries they name). A
    /// redacted entry holds when it still carries its original hash and
    /// its redacted form computes to the recorded one; anything else
    /// about it is a break.
    pub fn with_redactions(mut self, redactions: impl IntoIterator<Item = Redaction>) -> Self {
        for r in redactions {
            self.redactions
                .insert(r.chain_seq, (r.hash, r.redacted_hash));
        }
        self
    }

    /// Check the next entry, whose recomputed hash is `expected`; `false`
    /// once the chain is broken (the walk stops at the first break).
    pub fn step(&mut self, entry: &AuditEntry, expected: &str) -> bool {
        if self.report.broken.is_some() {
            return false;
        }
        let prev = entry.prev_hash.clone().unwrap_or_default();
        let found = entry.hash.clone().unwrap_or_default();
        let brk = |what: &str, expected: String, found: String| ChainBreak {
            chain_seq: entry.chain_seq,
            seq: entry.seq,
            what: what.to_owned(),
            expected,
            found,
        };
        let head = &self.report.head;
        let broken = if self.report.checked == 0 {
            self.report.from = entry.chain_seq;
            (entry.chain_seq == 1 && prev != CHAIN_GENESIS)
                .then(|| brk("prev_hash", CHAIN_GENESIS.to_owned(), prev.clone()))
        } else if entry.chain_seq != head.chain_seq + 1 {
            Some(brk(
                "gap",
                (head.chain_seq + 1).to_string(),
                entry.chain_seq.to_string(),
            ))
        } else if prev != head.hash {
            Some(brk("prev_hash", head.hash.clone(), prev.clone()))
        } else {
            None
        };
        let broken = broken.or_else(|| match self.redactions.get(&entry.chain_seq) {
            Some((original, redacted)) => {
                if *original != found {
                    Some(brk("hash", original.clone(), found.clone()))
                } else if redacted != expected {
                    Some(brk("redacted", redacted.clone(), expected.to_owned()))
                } else {
                    self.report.redacted.push(entry.chain_seq);
                    None
                }
            }
            None => (expected != found).then(|| brk("hash", expected.to_owned(), found.clone())),
        });
        let broken = broken.or_else(|| match &self.anchor {
            Some(a) if a.chain_seq == entry.chain_seq => {
                if a.hash == found {
                    self.anchored = true;
                    None
                } else {
                    Some(brk("anchor", a.hash.clone(), found.clone()))
                }
            }
            _ => None,
        });
        self.report.checked += 1;
        self.report.head.chain_seq = entry.chain_seq;
        self.report.head.hash = found;
        self.report.broken = broken;
        self.report.broken.is_none()
    }

    /// Report the entry at trail position `seq`, which has no place in the
    /// chain (written with the chain's trigger switched off, or inserted
    /// by hand): the chain no longer covers the whole trail.
    pub fn unchained(&mut self, seq: u64) {
        if self.report.broken.is_none() {
            self.report.broken = Some(ChainBreak {
                chain_seq: 0,
                seq,
                what: "unchained".into(),
                expected: "a place in the chain".into(),
                found: "none".into(),
            });
        }
    }

    /// The report: the first break, or an anchor the walk never reached.
    pub fn finish(mut self) -> ChainReport {
        if self.report.broken.is_none()
            && !self.anchored
            && let Some(a) = &self.anchor
        {
            self.report.broken = Some(ChainBreak {
                chain_seq: a.chain_seq,
                seq: 0,
                what: "anchor".into(),
                expected: a.hash.clone(),
                found: if a.chain_seq > self.report.head.chain_seq {
                    format!("the chain ends at {}", self.report.head.chain_seq)
                } else {
                    "the entry was not walked (before --since?)".into()
                },
            });
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` entries of tenant `t1`, chained.
    fn chain(n: u64) -> Vec<AuditEntry> {
        let ctx = CallerContext::agent("cro").with_tenant("t1");
        let mut prev = CHAIN_GENESIS.to_owned();
        (1..=n)
            .map(|i| {
                let mut e = AuditEntry::new(&ctx, AuditOp::Insert, "fact");
                e.seq = i * 10;
                e.chain_seq = i;
                e.record_id = Some(format!("f{i}"));
                e.filters = (i % 2 == 0).then(|| serde_json::json!({"text": "x", "limit": i}));
                let hash = audit_chain_hash(&prev, &e);
                e.prev_hash = Some(std::mem::replace(&mut prev, hash.clone()));
                e.hash = Some(hash);
                e
            })
            .collect()
    }

    fn walk(entries: &[AuditEntry], anchor: Option<ChainHead>) -> ChainReport {
        let mut walk = ChainWalk::new("t1", anchor);
        for e in entries {
            let expected = audit_chain_hash(e.prev_hash.as_deref().unwrap_or_default(), e);
            if !walk.step(e, &expected) {
                break;
            }
        }
        walk.finish()
    }

    #[test]
    fn an_intact_chain_verifies_and_names_its_head() {
        let entries = chain(5);
        let report = walk(&entries, None);
        assert!(report.ok(), "{report:?}");
        assert_eq!((report.from, report.checked), (1, 5));
        assert_eq!(report.head.chain_seq, 5);
        assert_eq!(Some(&report.head.hash), entries[4].hash.as_ref());
        let token = report.head.token();
        assert_eq!(ChainHead::parse_token("t1", &token).unwrap(), report.head);
        assert!(walk(&entries, Some(report.head.clone())).ok());
        // From the middle: the first entry's predecessor is trusted.
        assert!(walk(&entries[2..], None).ok());
        assert!(walk(&[], None).ok());
    }

    #[test]
    fn an_edit_a_removal_an_insertion_and_a_stale_anchor_are_found() {
        let entries = chain(6);
        let mut edited = entries.clone();
        edited[3].principal = "agent:someone-else".into();
        let b = walk(&edited, None).broken.unwrap();
        assert_eq!((b.chain_seq, b.seq, b.what.as_str()), (4, 40, "hash"));
        assert_eq!(Some(&b.found), entries[3].hash.as_ref());

        let mut removed = entries.clone();
        removed.remove(2);
        let b = walk(&removed, None).broken.unwrap();
        assert_eq!((b.chain_seq, b.what.as_str()), (4, "gap"));

        // Rewritten from an edit onwards (hashes recomputed): the chain
        // holds, but not the anchor kept before.
        let head = walk(&entries, None).head;
        let mut rewritten = entries.clone();
        rewritten[1].reason = Some("hidden".into());
        let mut prev = rewritten[0].hash.clone().unwrap();
        for e in &mut rewritten[1..] {
            e.prev_hash = Some(prev.clone());
            let hash = audit_chain_hash(&prev, e);
            e.hash = Some(hash.clone());
            prev = hash;
        }
        assert!(walk(&rewritten, None).ok());
        let b = walk(&rewritten, Some(head.clone())).broken.unwrap();
        assert_eq!((b.chain_seq, b.what.as_str()), (6, "anchor"));
        // An anchor past the end, or one with a forged first link.
        let far = ChainHead {
            chain_seq: 9,
            ..head
        };
        assert_eq!(walk(&entries, Some(far)).broken.unwrap().what, "anchor");
        let mut forged = entries.clone();
        forged[0].prev_hash = Some("ab".repeat(32));
        assert_eq!(walk(&forged, None).broken.unwrap().what, "prev_hash");
    }

    #[test]
    fn the_canonical_encoding_and_the_chain_hash_are_stable() {
        // PostgreSQL computes the same bytes in SQL: any change here breaks
        // every stored chain (values from the encoding as first written).
        let mut e = chain(2).remove(1);
        e.at = chrono::DateTime::from_timestamp_micros(1_790_000_000_123_456).unwrap_or_default();
        e.top_k = Some(10);
        e.namespace = Some("ns·ü".into());
        e.reason = Some("because".into());
        let canonical = String::from_utf8_lossy(&audit_canonical(&e)).replace('\u{1f}', "|");
        assert_eq!(
            canonical,
            r#"openvibe-audit-v1|2:t1|2|20|1790000000123456|9:agent:cro|6:insert|4:fact|4:ns·ü|~|2:f2|22:{"limit":2,"text":"x"}|2:10|2:ok|7:because|~|~"#
        );
        assert_eq!(
            audit_chain_hash(CHAIN_GENESIS, &e),
            "71f2839b26a7ba317fd20f53eff82c79b0415342e89b274ef95b468b645f39f7"
        );
        // A malformed predecessor counts its bad pairs as zero bytes.
        assert_eq!(
            audit_chain_hash("ab1", &e),
            "3874d4b4d17530a4446f9f12a1c9c40e14e209bea8c9de1dd7475c88d3b50697"
        );
        e.top_k = Some(0);
        assert_eq!(
            audit_chain_hash(&"9f".repeat(32), &e),
            "bb66c414508210ae67f47cb62be079ba8ce15fa4c345f01f2a30e89885628c66"
        );
    }

    #[test]
    fn the_canonical_encoding_tells_every_field_apart() {
        let base = chain(1).remove(0);
        let variants: Vec<AuditEntry> = vec![
            AuditEntry {
                namespace: Some(String::new()),
                ..base.clone()
            },
            AuditEntry {
                record_id: None,
                ..base.clone()
            },
            AuditEntry {
                reason: Some("~".into()),
                ..base.clone()
            },
            AuditEntry {
                tool: Some("x".into()),
                ..base.clone()
            },
            AuditEntry {
                top_k: Some(3),
                ..base.clone()
            },
            AuditEntry {
                seq: base.seq + 1,
                ..base.clone()
            },
        ];
        let canonical = audit_canonical(&base);
        for v in &variants {
            assert_ne!(audit_canonical(v), canonical, "{v:?}");
        }
        // Field boundaries cannot be shifted by the values themselves.
        let a = AuditEntry {
            namespace: Some("a\u{1f}1:b".into()),
            project_id: None,
            ..base.clone()
        };
        let b = AuditEntry {
            namespace: Some("a".into()),
            project_id: Some("b".into()),
            ..base
        };
        assert_ne!(audit_canonical(&a), audit_canonical(&b));
    }

    #[test]
    fn anchor_tokens_are_checked() {
        for bad in ["", "12", "x:ab", "3:abc", &format!("3:{}", "g".repeat(64))] {
            assert!(ChainHead::parse_token("t1", bad).is_err(), "{bad}");
        }
        let h = ChainHead::parse_token("t1", &format!(" 7:{} ", "AB".repeat(32))).unwrap();
        assert_eq!((h.chain_seq, h.hash), (7, "ab".repeat(32)));
    }
}
