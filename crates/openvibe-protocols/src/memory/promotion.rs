//! Promotion: copy or move a memory into another namespace (`shared` by
//! default) with lineage and a note, through the store traits, so every
//! backend enforces it the same way: the caller must read the source (a
//! `get`) and write the target (the store's placement check); a move also
//! needs the delete right on the source, checked before anything is written.
//!
//! Idempotent by lineage and content hash: the copy of record `k:id` in
//! namespace `t` has a fixed id ([`promoted_id`]) and `external_id = "k:id"`,
//! so promoting twice leaves one record, and promoting an unchanged record
//! again writes nothing. Every promotion appends a `promote` audit entry
//! with the lineage (source kind, id and namespace, mode, note).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    AuditEntry, AuditLog, AuditOp, CallerContext, Change, Fact, FactStore, InsightStore,
    MAX_RECORD_ID_LEN, StoreError, content_hash,
};

/// Copy the record, or move it (the source is deleted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PromoteMode {
    /// Keep the source.
    #[default]
    Copy,
    /// Delete the source once the copy is written.
    Move,
}

/// Where and how to promote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Promotion {
    /// The target namespace.
    pub to: String,
    /// Copy or move.
    pub mode: PromoteMode,
    /// Why (kept in the audit entry).
    pub note: String,
    /// An automatic promotion (seed 004): the copy is tagged
    /// [`AUTO_PROMOTED_TAGS`] and its source is [`AUTO_PROMOTE_SOURCE`].
    /// Set in code ([`Promotion::automatic`]), never by a request.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub automatic: bool,
}

/// The tags an automatically promoted copy carries, beside its own.
pub const AUTO_PROMOTED_TAGS: [&str; 2] = ["shared", "promoted:auto"];

/// The source of an automatically promoted copy.
pub const AUTO_PROMOTE_SOURCE: &str = "auto-promote";

impl Promotion {
    /// The shared namespace's default name.
    pub const SHARED: &'static str = "shared";

    /// Copy to `shared`, no note.
    pub fn to_shared() -> Self {
        Self::to(Self::SHARED)
    }

    /// Copy to `namespace`, no note.
    pub fn to(namespace: impl Into<String>) -> Self {
        Self {
            to: namespace.into(),
            mode: PromoteMode::Copy,
            note: String::new(),
            automatic: false,
        }
    }

    /// The automatic promotion of [`AutoPromote`] to `namespace`: tagged
    /// and sourced as such (seed 004: `shared`, `promoted:auto`,
    /// `source: auto-promote`).
    pub fn automatic(namespace: impl Into<String>) -> Self {
        Self {
            automatic: true,
            ..Self::to(namespace).note("automatic promotion")
        }
    }

    /// Move instead of copy.
    #[must_use]
    pub fn moving(mut self) -> Self {
        self.mode = PromoteMode::Move;
        self
    }

    /// With a note.
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }
}

/// The id of the copy of record `id` of `kind` in `namespace`, the same
/// for every promotion of that record there: `<id>@<namespace>`, or
/// `promoted-<hash>` when that would exceed [`MAX_RECORD_ID_LEN`].
///
/// ```
/// use openvibe_protocols::promotion::promoted_id;
/// assert_eq!(promoted_id("fact", "f1", "shared"), "f1@shared");
/// assert_ne!(promoted_id("fact", "f1", "shared"), promoted_id("fact", "f1", "team"));
/// assert!(promoted_id("fact", &"x".repeat(300), "shared").starts_with("promoted-"));
/// ```
pub fn promoted_id(kind: &str, id: &str, namespace: &str) -> String {
    let readable = format!("{id}@{namespace}");
    if readable.len() <= MAX_RECORD_ID_LEN {
        return readable;
    }
    let hash = content_hash(&format!("{kind}\u{0}{id}\u{0}{namespace}"));
    let hex = hash.rsplit(':').next().unwrap_or(&hash);
    format!("promoted-{hex}")
}

/// Categories automatic promotion may consider, by default.
pub const AUTO_PROMOTE_CATEGORIES: [&str; 3] = ["correction", "decision", "preference"];

/// Tags that are never promoted automatically (transcripts, raw messages).
pub const NEVER_AUTO_PROMOTED: [&str; 4] = ["transcript", "raw", "message", "moment"];

/// Automatic promotion of new facts (off by default): a fact tagged with an
/// allow-listed category (`decision` or `category:decision`) at or above
/// `min_confidence`, and with none of [`NEVER_AUTO_PROMOTED`], is copied to
/// `to` when it is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct AutoPromote {
    /// On or off (off).
    pub enabled: bool,
    /// The categories ([`AUTO_PROMOTE_CATEGORIES`]).
    pub categories: Vec<String>,
    /// The lowest confidence promoted (0.9: explicit statements).
    pub min_confidence: f64,
    /// The target namespace (`shared`).
    pub to: String,
}

impl Default for AutoPromote {
    fn default() -> Self {
        Self {
            enabled: false,
            categories: AUTO_PROMOTE_CATEGORIES.map(str::to_owned).to_vec(),
            min_confidence: 0.9,
            to: Promotion::SHARED.to_owned(),
        }
    }
}

impl AutoPromote {
    /// Whether `fact` is promoted automatically.
    pub fn eligible(&self, fact: &Fact) -> bool {
        self.eligible_record(&fact.meta.namespace, fact.confidence, &fact.tags)
    }

    /// Whether an insight is promoted automatically.
    pub fn eligible_insight(&self, insight: &super::Insight) -> bool {
        self.eligible_record(&insight.meta.namespace, insight.confidence, &insight.tags)
    }

    /// The rule, on a record's namespace, confidence and tags.
    pub fn eligible_record(&self, namespace: &str, confidence: f64, tags: &[String]) -> bool {
        let name = |tag: &String| tag.strip_prefix("category:").unwrap_or(tag).to_owned();
        self.enabled
            && namespace != self.to
            && confidence >= self.min_confidence
            && tags.iter().any(|t| self.categories.contains(&name(t)))
            && !tags
                .iter()
                .any(|t| NEVER_AUTO_PROMOTED.contains(&name(t).as_str()))
    }
}

/// The lineage of a fact: the record it was promoted from (`("fact",
/// id)` or `("insight", id)`, read from a copy's `external_id`), or the
/// fact itself when it is no promoted copy.
pub fn lineage(fact: &Fact) -> (&str, &str) {
    fact.external_id
        .as_deref()
        .and_then(|e| e.split_once(':'))
        .filter(|(kind, id)| matches!(*kind, "fact" | "insight") && !id.is_empty())
        .unwrap_or(("fact", fact.id.as_str()))
}

/// `records` with one per lineage (a record and its promoted copies, seed
/// 004's "merge + dedupe by canonical id"), as `ctx` recalls them: the one
/// in `ctx`'s home namespace wins, else the original, else the first; each
/// kept where the first of its lineage stood. `fact` finds the fact in a
/// record (a scored hit, say).
///
/// ```
/// use openvibe_protocols::promotion::one_per_lineage;
/// use openvibe_protocols::{CallerContext, Fact};
/// let own = Fact::new("f1", "use tabs").namespace("ann");
/// let copy = Fact::new("f1@shared", "use tabs").namespace("shared").external_id("fact:f1");
/// let other = Fact::new("f2", "use rust").namespace("shared");
/// let ann = CallerContext::user("ann");
/// let kept = one_per_lineage(&ann, vec![copy, other, own], |f| f);
/// let ids: Vec<&str> = kept.iter().map(|f| f.id.as_str()).collect();
/// assert_eq!(ids, ["f1", "f2"]);
/// ```
pub fn one_per_lineage<T>(
    ctx: &CallerContext,
    records: Vec<T>,
    fact: impl Fn(&T) -> &Fact,
) -> Vec<T> {
    let home = ctx
        .grants()
        .map_or(ctx.principal().id.as_str(), |g| g.home());
    // Lower is more specific: the caller's home, then the original.
    let rank = |f: &Fact| {
        let original = lineage(f) == ("fact", f.id.as_str());
        (f.meta.namespace != home, !original)
    };
    let mut best: Vec<(usize, (bool, bool))> = Vec::new();
    let mut slots: std::collections::HashMap<(String, String), usize> =
        std::collections::HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let f = fact(r);
        let (kind, id) = lineage(f);
        let key = (kind.to_owned(), id.to_owned());
        match slots.get(&key) {
            Some(&slot) => {
                if rank(f) < best[slot].1 {
                    best[slot] = (i, rank(f));
                }
            }
            None => {
                slots.insert(key, best.len());
                best.push((i, rank(f)));
            }
        }
    }
    let keep: std::collections::HashMap<usize, usize> = best
        .iter()
        .enumerate()
        .map(|(order, (index, _))| (*index, order))
        .collect();
    let mut kept: Vec<(usize, T)> = records
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| keep.get(&i).map(|&order| (order, r)))
        .collect();
    kept.sort_by_key(|(order, _)| *order);
    kept.into_iter().map(|(_, r)| r).collect()
}

/// The error of a source the caller cannot read.
fn missing(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}

/// Promote fact `id` as `ctx` ([module docs](self)). Returns the copy.
pub async fn promote_fact(
    facts: &dyn FactStore,
    audit: Option<&dyn AuditLog>,
    ctx: &CallerContext,
    id: &str,
    promotion: &Promotion,
) -> Result<Fact, StoreError> {
    let source = facts
        .get(ctx, id)
        .await?
        .ok_or_else(|| missing("fact", id))?;
    let copy = Fact {
        id: String::new(),
        meta: source.meta.clone(),
        content: source.content.clone(),
        entity: source.entity.clone(),
        domain: source.domain.clone(),
        tags: source.tags.clone(),
        confidence: source.confidence,
        importance: source.importance,
        access_count: 0,
        last_accessed: None,
        supersedes: None,
        external_id: None,
        content_hash: None,
        metadata: source.metadata.clone(),
    };
    let promoted = write_copy(facts, audit, ctx, "fact", &source.meta, id, copy, promotion).await?;
    if promotion.mode == PromoteMode::Move {
        facts.delete(ctx, id).await?;
    }
    Ok(promoted)
}

/// Promote insight `id` as a fact ([module docs](self)); what an agent's
/// published insights go through. A move deletes the insight.
pub async fn promote_insight(
    insights: &dyn InsightStore,
    facts: &dyn FactStore,
    audit: Option<&dyn AuditLog>,
    ctx: &CallerContext,
    id: &str,
    promotion: &Promotion,
) -> Result<Fact, StoreError> {
    let source = insights
        .get(ctx, id)
        .await?
        .ok_or_else(|| missing("insight", id))?;
    let copy = Fact::new("", source.content.clone())
        .source(source.agent_id.clone())
        .confidence(source.confidence)
        .importance(source.importance)
        .entity(source.entity.clone())
        .domain(source.domain.clone())
        .tags(source.tags.clone())
        .classification(source.meta.classification);
    let promoted = write_copy(
        facts,
        audit,
        ctx,
        "insight",
        &source.meta,
        id,
        copy,
        promotion,
    )
    .await?;
    if promotion.mode == PromoteMode::Move {
        insights.delete(ctx, id).await?;
    }
    Ok(promoted)
}

/// Write `copy` of record `kind` `id` (placed as `meta`) into the target,
/// unless an identical copy is there; audit the promotion.
#[allow(clippy::too_many_arguments)] // one private step shared by both record kinds
async fn write_copy(
    facts: &dyn FactStore,
    audit: Option<&dyn AuditLog>,
    ctx: &CallerContext,
    kind: &str,
    meta: &super::RecordMeta,
    id: &str,
    mut copy: Fact,
    promotion: &Promotion,
) -> Result<Fact, StoreError> {
    // An automatic copy's source is the promotion's, even for a caller whose
    // writes are stamped with its own.
    let automatic;
    let ctx = if promotion.automatic {
        automatic = ctx.clone().with_source(AUTO_PROMOTE_SOURCE);
        &automatic
    } else {
        ctx
    };
    if promotion.to.is_empty() {
        return Err(StoreError::invalid("to", "must name a namespace"));
    }
    if promotion.to == meta.namespace {
        return Err(StoreError::conflict(format!(
            "to: {kind} {id} already lives in namespace `{}`",
            meta.namespace
        )));
    }
    if promotion.mode == PromoteMode::Move {
        // A refused move changes nothing: check the delete right first.
        ctx.require_change(meta, Change::Delete, format!("move {kind} {id}"))?;
    }
    copy.id = promoted_id(kind, id, &promotion.to);
    copy.meta.namespace.clone_from(&promotion.to);
    copy.external_id = Some(format!("{kind}:{id}"));
    if promotion.automatic {
        for tag in AUTO_PROMOTED_TAGS {
            if !copy.tags.iter().any(|t| t == tag) {
                copy.tags.push(tag.to_owned());
            }
        }
        AUTO_PROMOTE_SOURCE.clone_into(&mut copy.meta.source);
    }
    let hash = content_hash(&copy.content);
    let existing = facts.get(ctx, &copy.id).await?;
    let promoted = match existing {
        Some(old) if old.content_hash.as_deref() == Some(hash.as_str()) => old,
        _ => facts.store(ctx, copy).await?,
    };
    if let Some(audit) = audit {
        let mut entry =
            AuditEntry::change(ctx, AuditOp::Promote, "fact", &promoted.id, &promoted.meta);
        entry.filters = Some(json!({
            "source_kind": kind,
            "source_id": id,
            "source_namespace": meta.namespace,
            "mode": promotion.mode,
            "note": promotion.note,
        }));
        audit.append(ctx, entry).await?;
    }
    Ok(promoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_promotion_is_off_by_default_and_conservative() {
        let fact = Fact::new("f", "use tabs")
            .tags(["preference"])
            .confidence(0.95)
            .namespace("ann");
        assert!(!AutoPromote::default().eligible(&fact), "off by default");
        let on = AutoPromote {
            enabled: true,
            ..AutoPromote::default()
        };
        assert!(on.eligible(&fact));
        assert!(on.eligible(&fact.clone().tags(["category:decision"])));
        assert!(
            !on.eligible(&fact.clone().confidence(0.5)),
            "below the tier"
        );
        assert!(
            !on.eligible(&fact.clone().tags(["gossip"])),
            "not allow-listed"
        );
        assert!(
            !on.eligible(&fact.clone().tags(["preference", "transcript"])),
            "never transcripts"
        );
        assert!(
            !on.eligible(&fact.clone().namespace("shared")),
            "already there"
        );
    }

    #[test]
    fn promotions_build() {
        let p = Promotion::to_shared().moving().note("n");
        assert_eq!(
            (p.to.as_str(), p.mode, p.note.as_str()),
            ("shared", PromoteMode::Move, "n")
        );
    }
}
