//! Erasure by subject: everything about an entity, everything a principal
//! owns, or one namespace, deleted across every kind with its derived data
//! (vectors, postings, the raw calls behind an erased episode), in
//! resumable batches, with a report that proves it: per kind, the records
//! matched before, deleted, and found after (which must be 0).
//!
//! The backends implement the two steps
//! ([`NamespaceAdmin::erasure_counts`](crate::NamespaceAdmin::erasure_counts),
//! [`NamespaceAdmin::erase`](crate::NamespaceAdmin::erase)) over one
//! [`Sweep`], the same path their cleanup of expired records takes;
//! [`forget`](crate::forget) runs a whole erasure and records it in the
//! audit trail.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::kinds::{Select, count, names};
use super::{CallerContext, NamespaceScope, RecordMeta, StoreError, check_label};

/// Whom or what an erasure is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ErasureSubject {
    /// Every record about an entity: its `entity` field is the entity, or
    /// one of its texts names it (as a whole word, letters compared
    /// without case).
    Entity(String),
    /// Every record a principal owns (its owner key, `agent:cro`).
    Owner(String),
    /// Every record of one namespace (`""`: those written before namespaces).
    Namespace(String),
}

impl ErasureSubject {
    /// `Ok` when the subject names something: a label, not blank (a
    /// namespace may be `""`: the records written before namespaces).
    pub fn check(&self) -> Result<(), StoreError> {
        let (field, value) = self.parts();
        check_label(field, value)?;
        if value.trim().is_empty() && !matches!(self, Self::Namespace(_)) {
            return Err(StoreError::invalid(field, "must not be blank"));
        }
        Ok(())
    }

    /// (`entity` | `owner` | `namespace`, the value).
    pub fn parts(&self) -> (&'static str, &str) {
        match self {
            Self::Entity(e) => ("entity", e),
            Self::Owner(o) => ("owner", o),
            Self::Namespace(n) => ("namespace", n),
        }
    }

    /// `entity acme_corp`.
    pub fn describe(&self) -> String {
        let (field, value) = self.parts();
        format!("{field} {value}")
    }

    /// Whether `record` (any stored record serialised, its [`RecordMeta`]
    /// flattened in) is about this subject.
    pub fn takes(&self, meta: &RecordMeta, record: &Value) -> bool {
        match self {
            Self::Owner(o) => meta.owner == *o,
            Self::Namespace(n) => meta.namespace == *n,
            Self::Entity(e) => mentions_json(record, e),
        }
    }
}

/// The kinds an erasure deletes, in the order it deletes them: what hangs
/// on a record before the record (the raw calls behind an episode, a
/// space's messages), so that a run stopped between batches resumes with
/// nothing orphaned.
pub const ERASURE_KINDS: [&str; N_ERASURE] = names(Select::Erasure);
const N_ERASURE: usize = count(Select::Erasure);

/// The derived data an erasure's report counts after the run: `vector`
/// (an embedding whose record is gone) and `posting` (a full-text posting
/// whose record is gone). Both must be 0.
pub const DERIVED_KINDS: [&str; 2] = ["vector", "posting"];

/// The top-level fields of a serialised record that are its governance
/// (flattened [`RecordMeta`]) and id, not its content: an entity named
/// only there is not what the record is about.
const NOT_CONTENT: [&str; 10] = [
    "id",
    "tenant_id",
    "namespace",
    "project_id",
    "owner",
    "classification",
    "source",
    "created_at",
    "updated_at",
    "expires_at",
];

/// Whether `text` names `entity` as a whole word: letters compared
/// without case (Unicode lowercase), and the characters either side (if
/// any) neither alphanumeric nor `_`.
pub fn mentions(text: &str, entity: &str) -> bool {
    let entity: Vec<char> = entity.chars().flat_map(char::to_lowercase).collect();
    if entity.is_empty() {
        return false;
    }
    let text: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.windows(entity.len()).enumerate().any(|(i, w)| {
        w == entity.as_slice()
            && (i == 0 || !word(text[i - 1]))
            && text.get(i + entity.len()).is_none_or(|c| !word(*c))
    })
}

/// The serialised record `record` without its governance fields and id
/// (what [`mentions_json`] reads).
pub fn record_content(record: Value) -> Value {
    match record {
        Value::Object(mut map) => {
            for key in NOT_CONTENT {
                map.remove(key);
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// Whether a text of the serialised record `record` (any string value at
/// any depth, but not its governance fields or id) [`mentions`] `entity`.
pub fn mentions_json(record: &Value, entity: &str) -> bool {
    fn walk(value: &Value, entity: &str) -> bool {
        match value {
            Value::String(s) => mentions(s, entity),
            Value::Array(items) => items.iter().any(|v| walk(v, entity)),
            Value::Object(map) => map.values().any(|v| walk(v, entity)),
            _ => false,
        }
    }
    match record {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| !NOT_CONTENT.contains(&k.as_str()) && walk(v, entity)),
        other => walk(other, entity),
    }
}

/// The POSIX regular expression (PostgreSQL's) that finds what
/// [`mentions`] finds: the entity with every character that is not a
/// letter or digit escaped, between non-word characters or the ends.
/// Matched without case.
pub fn mentions_regex(entity: &str) -> String {
    let mut escaped = String::new();
    for c in entity.chars() {
        if !c.is_alphanumeric() {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    format!("(^|[^[:alnum:]_]){escaped}([^[:alnum:]_]|$)")
}

/// Which records one pass of a backend deletes (or counts): those that
/// have expired in a scope (the cleanup), or those about a subject (an
/// erasure, expired or not).
#[derive(Debug, Clone, PartialEq)]
pub enum Sweep {
    /// Expired at `now`, in namespaces of the scope and projects the caller sees.
    Expired {
        /// Where the caller may clean up ([`cleanup_scope`](super::cleanup_scope)).
        scope: NamespaceScope,
        /// The time expiry is judged at.
        now: DateTime<Utc>,
    },
    /// About the subject.
    Subject(ErasureSubject),
}

impl Sweep {
    /// The records of `scope` expired now.
    pub fn expired(scope: NamespaceScope) -> Self {
        Self::Expired {
            scope,
            now: Utc::now(),
        }
    }

    /// Whether the record of `meta` (serialised as `record`, computed only
    /// when needed) goes, for `ctx`.
    pub fn takes(
        &self,
        ctx: &CallerContext,
        meta: &RecordMeta,
        record: impl FnOnce() -> Value,
    ) -> bool {
        match self {
            Self::Expired { scope, now } => {
                meta.is_expired(*now)
                    && scope.contains(&meta.namespace)
                    && ctx.sees_project(meta.project_id.as_deref())
            }
            Self::Subject(s @ ErasureSubject::Entity(_)) => s.takes(meta, &record()),
            Self::Subject(s) => s.takes(meta, &Value::Null),
        }
    }

    /// [`Sweep::takes`] of a serialisable record.
    pub fn takes_record<T: Serialize>(
        &self,
        ctx: &CallerContext,
        meta: &RecordMeta,
        record: &T,
    ) -> bool {
        self.takes(ctx, meta, || {
            serde_json::to_value(record).unwrap_or(Value::Null)
        })
    }
}

/// How many records of one kind: a count of `NamespaceAdmin::erasure_counts`
/// or `NamespaceAdmin::erase`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ErasureCount {
    /// One of [`ERASURE_KINDS`] or [`DERIVED_KINDS`].
    pub kind: String,
    /// How many.
    pub records: u64,
}

/// One kind's line of an [`ErasureReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KindErasure {
    /// The kind.
    pub kind: String,
    /// Records about the subject before the run (derived kinds: rows
    /// without their record).
    pub matched: u64,
    /// Deleted by the run.
    pub deleted: u64,
    /// Found after the run: 0 unless the run was a dry run or failed.
    pub after: u64,
}

/// What an erasure did, and what remains (nothing, unless a dry run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErasureReport {
    /// The tenant.
    pub tenant_id: String,
    /// The subject.
    pub subject: ErasureSubject,
    /// Whether nothing was deleted (only counted).
    pub dry_run: bool,
    /// One line per kind ([`ERASURE_KINDS`], then [`DERIVED_KINDS`]).
    pub kinds: Vec<KindErasure>,
    /// Audit entries that quoted the subject, redacted (or, in a dry run,
    /// that would be).
    pub audit_redacted: u64,
}

impl ErasureReport {
    /// Whether nothing about the subject is left (every `after` is 0).
    pub fn complete(&self) -> bool {
        self.kinds.iter().all(|k| k.after == 0)
    }

    /// Records deleted, all kinds.
    pub fn deleted(&self) -> u64 {
        self.kinds.iter().map(|k| k.deleted).sum()
    }

    /// Records matched before, all kinds (derived rows excluded).
    pub fn matched(&self) -> u64 {
        self.kinds
            .iter()
            .filter(|k| !DERIVED_KINDS.contains(&k.kind.as_str()))
            .map(|k| k.matched)
            .sum()
    }
}

/// The kind of the audit entry that records an erasure.
pub const ERASURE_AUDIT_KIND: &str = "erasure";
/// The kind of the audit entry that records redactions of the trail.
pub const REDACTION_AUDIT_KIND: &str = "audit_redaction";

/// How many redacted entries one redaction entry names at most (a larger
/// redaction writes several).
pub const REDACTIONS_PER_ENTRY: usize = 500;

/// The `filters` a redacted entry carries instead of what it quoted.
pub fn redacted_filters() -> Value {
    json!({ "redacted": true })
}

/// The `reason` a redacted entry carries instead of what it said.
pub const REDACTED_REASON: &str = "redacted";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_whole_words_without_case() {
        assert!(mentions("Renewal with ACME_corp due", "acme_corp"));
        assert!(mentions("acme_corp", "acme_corp"));
        assert!(mentions("(acme_corp)", "acme_corp"));
        assert!(!mentions("acme_corporate", "acme_corp"));
        assert!(!mentions("my_acme_corp", "acme_corp"));
        assert!(mentions("Émile's deal", "émile"));
        assert!(!mentions("anything", ""));
    }

    #[test]
    fn mentions_json_skips_governance_fields() {
        let v = json!({"id": "acme", "owner": "acme", "content": "nothing", "tags": ["x"]});
        assert!(!mentions_json(&v, "acme"));
        let v = json!({"id": "a", "outcome": {"who": ["Acme"]}});
        assert!(mentions_json(&v, "acme"));
    }

    #[test]
    fn the_regex_escapes_what_is_not_a_letter() {
        assert_eq!(
            mentions_regex("a.b_c"),
            "(^|[^[:alnum:]_])a\\.b\\_c([^[:alnum:]_]|$)"
        );
    }
}
