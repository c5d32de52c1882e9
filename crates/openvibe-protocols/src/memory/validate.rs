//! Input validation every backend applies before it writes, so that the
//! same input is refused the same way everywhere.

use super::{CallerContext, Episode, Fact, Insight, RawCall, RecordMeta, StoreError, text_terms};

/// Longest record id a store accepts, in bytes.
pub const MAX_RECORD_ID_LEN: usize = 256;

/// The id rule every store enforces on writes: not empty, at most
/// [`MAX_RECORD_ID_LEN`] bytes, no control characters and no `/` (ids appear
/// as path segments of the memory filesystem). An empty id given to `store`
/// is replaced by a generated one before this check.
///
/// ```
/// use openvibe_protocols::validate_record_id;
/// assert!(validate_record_id("ins_1").is_ok());
/// assert!(validate_record_id("a/b").is_err());
/// assert!(validate_record_id("").is_err());
/// ```
pub fn validate_record_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::invalid("id", "must not be empty"));
    }
    if id.len() > MAX_RECORD_ID_LEN {
        return Err(StoreError::invalid(
            "id",
            format!("longer than {MAX_RECORD_ID_LEN} bytes"),
        ));
    }
    if id.chars().any(|c| c.is_control() || c == '/') {
        return Err(StoreError::invalid(
            "id",
            "must not contain `/` or control characters",
        ));
    }
    Ok(())
}

/// Longest value of a short, indexed text field (tenant, namespace, entity,
/// domain, tag, agent, owner, project, source, plan, session, key, ...), in
/// bytes. Longer values would not fit a database index entry; every backend
/// refuses them with `InvalidInput`.
pub const MAX_LABEL_LEN: usize = 1024;

/// Longest knowledge content, in bytes.
pub const MAX_CONTENT_LEN: usize = 1_000_000;

/// Longest word a record is found by, in bytes (PostgreSQL's tsvector
/// lexeme limit is 2,047): a longer word is stored with the record but not
/// indexed ([`record_terms`]).
pub const MAX_WORD_LEN: usize = 2046;

/// The largest JSON value a record field holds (metadata, goal data,
/// contexts, plan state, outcomes), serialised: 1,000,000 bytes.
pub const MAX_JSON_BYTES: usize = 1_000_000;

/// The deepest nesting of such a JSON value: 64 levels (PostgreSQL's `jsonb`
/// and `serde_json` accept more; a deeper value from a model is an error).
pub const MAX_JSON_DEPTH: usize = 64;

/// The most records one batch call writes (`store_batch`): 10,000. A
/// larger batch is `InvalidInput` and writes nothing; split it.
pub const MAX_BATCH_LEN: usize = 10_000;

/// `Ok` when a batch of `len` records is within [`MAX_BATCH_LEN`].
pub fn check_batch(len: usize) -> Result<(), StoreError> {
    if len > MAX_BATCH_LEN {
        Err(StoreError::invalid(
            "batch",
            format!("{len} records exceed the limit of {MAX_BATCH_LEN} per call"),
        ))
    } else {
        Ok(())
    }
}

/// Most bytes of distinct words one record is found by (a tsvector holds
/// at most 1 MiB of lexemes): words past it are not indexed
/// ([`record_terms`]).
pub const MAX_SEARCH_BYTES: usize = 1_000_000;

/// A short, indexed text field: at most [`MAX_LABEL_LEN`] bytes, no NUL.
pub fn check_label(field: &str, value: &str) -> Result<(), StoreError> {
    if value.len() > MAX_LABEL_LEN {
        return Err(StoreError::invalid(
            field,
            format!("longer than {MAX_LABEL_LEN} bytes"),
        ));
    }
    check_text(field, value)
}

/// Any text field: PostgreSQL text cannot hold NUL.
pub fn check_text(field: &str, value: &str) -> Result<(), StoreError> {
    if value.contains('\0') {
        return Err(StoreError::invalid(field, "contains a NUL character"));
    }
    Ok(())
}

/// Optional label.
pub fn check_opt_label(field: &str, value: Option<&str>) -> Result<(), StoreError> {
    value.map_or(Ok(()), |v| check_label(field, v))
}

/// Tags: labels.
pub fn check_tags(field: &str, tags: &[String]) -> Result<(), StoreError> {
    tags.iter().try_for_each(|t| check_label(field, t))
}

/// The most bytes of a fact's metadata, serialised (64 KiB): it travels
/// with the fact in every result.
pub const MAX_METADATA_BYTES: usize = 65_536;

/// A record's metadata: a JSON object within [`MAX_METADATA_BYTES`] and
/// [`MAX_JSON_DEPTH`], no NUL in any string or key.
pub fn check_metadata(
    field: &str,
    metadata: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), StoreError> {
    metadata
        .iter()
        .try_for_each(|(k, v)| check_text(field, k).and_then(|()| check_json_at(field, v, 1)))?;
    let size = serde_json::to_vec(metadata).map_or(usize::MAX, |v| v.len());
    if size > MAX_METADATA_BYTES {
        return Err(StoreError::invalid(
            field,
            format!("{size} bytes of metadata exceed the limit of {MAX_METADATA_BYTES}"),
        ));
    }
    Ok(())
}

/// JSON stored as jsonb: no NUL in any string or key.
pub fn check_json(field: &str, value: &serde_json::Value) -> Result<(), StoreError> {
    check_json_at(field, value, 0)?;
    let size = serde_json::to_vec(value).map_or(usize::MAX, |v| v.len());
    if size > MAX_JSON_BYTES {
        return Err(StoreError::invalid(
            field,
            format!("{size} bytes of JSON exceed the limit of {MAX_JSON_BYTES}"),
        ));
    }
    Ok(())
}

fn check_json_at(field: &str, value: &serde_json::Value, depth: usize) -> Result<(), StoreError> {
    if depth > MAX_JSON_DEPTH {
        return Err(StoreError::invalid(
            field,
            format!("JSON nested deeper than {MAX_JSON_DEPTH} levels"),
        ));
    }
    match value {
        serde_json::Value::String(s) => check_text(field, s),
        serde_json::Value::Array(items) => items
            .iter()
            .try_for_each(|v| check_json_at(field, v, depth + 1)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            check_text(field, k).and_then(|()| check_json_at(field, v, depth + 1))
        }),
        _ => Ok(()),
    }
}

/// A JSON object (checked by [`check_json`]), or `{}` for `null`; any
/// other JSON value is `InvalidInput`.
pub fn json_object(field: &str, value: serde_json::Value) -> Result<serde_json::Value, StoreError> {
    match value {
        serde_json::Value::Null => Ok(serde_json::Value::Object(serde_json::Map::new())),
        serde_json::Value::Object(_) => {
            check_json(field, &value)?;
            Ok(value)
        }
        _ => Err(StoreError::invalid(field, "must be a JSON object")),
    }
}

/// A value within `0.0..=1.0` (confidence).
pub fn check_unit(field: &str, value: f64) -> Result<(), StoreError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(StoreError::invalid(
            field,
            format!("{value} is not within 0.0..=1.0"),
        ))
    }
}

/// A finite importance `>= 0`.
pub fn check_importance(value: f64) -> Result<(), StoreError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(StoreError::invalid(
            "importance",
            format!("{value} is not a finite number >= 0"),
        ))
    }
}

/// Content that is not blank.
pub fn check_content(content: &str) -> Result<(), StoreError> {
    if content.trim().is_empty() {
        Err(StoreError::invalid("content", "must not be empty"))
    } else {
        Ok(())
    }
}

/// The words a record with searchable text `text` is found by: its
/// [`text_terms`], but a word longer than [`MAX_WORD_LEN`] bytes (which no
/// one searches for, and PostgreSQL's `tsvector` cannot hold) is not
/// indexed, and words past [`MAX_SEARCH_BYTES`] of distinct words are not
/// either. The record is stored all the same; every backend indexes these
/// words and only these.
pub fn record_terms(text: &str) -> Vec<String> {
    let mut bytes = 0usize;
    text_terms(text)
        .into_iter()
        .filter(|term| term.len() <= MAX_WORD_LEN)
        .take_while(|term| {
            bytes += term.len();
            bytes <= MAX_SEARCH_BYTES
        })
        .collect()
}

/// The governance fields every record carries, and its addressing.
pub fn check_meta(
    meta: &RecordMeta,
    entity: &str,
    domain: &str,
    tags: &[String],
) -> Result<(), StoreError> {
    check_label("namespace", &meta.namespace)?;
    check_label("source", &meta.source)?;
    check_label("entity", entity)?;
    check_label("domain", domain)?;
    check_tags("tags", tags)
}

/// The caller's identity fields, as a store writes them into a record.
pub fn check_caller(ctx: &CallerContext) -> Result<(), StoreError> {
    check_label("tenant_id", ctx.tenant_id())?;
    check_label("owner", &ctx.owner_key())?;
    check_opt_label("project_id", ctx.project_id())
}

/// The checks every backend makes on a fact before writing it (its id is
/// already generated when it was empty): id, content (not blank, no NUL,
/// within the search limits), confidence, importance, labels. Returns the
/// content's search terms ([`record_terms`]), computed once for the check.
pub fn validate_fact(fact: &Fact) -> Result<Vec<String>, StoreError> {
    validate_record_id(&fact.id)?;
    check_content(&fact.content)?;
    check_text("content", &fact.content)?;
    check_unit("confidence", fact.confidence)?;
    check_importance(fact.importance)?;
    check_meta(&fact.meta, &fact.entity, &fact.domain, &fact.tags)?;
    check_opt_label("supersedes", fact.supersedes.as_deref())?;
    check_opt_label("external_id", fact.external_id.as_deref())?;
    check_metadata("metadata", &fact.metadata)?;
    Ok(record_terms(&fact.content))
}

/// The checks every backend makes on an insight before writing it; returns
/// the content's search terms.
pub fn validate_insight(insight: &Insight) -> Result<Vec<String>, StoreError> {
    let i = insight;
    validate_record_id(&i.id)?;
    check_content(&i.content)?;
    check_text("content", &i.content)?;
    check_unit("confidence", i.confidence)?;
    check_importance(i.importance)?;
    check_meta(&i.meta, &i.entity, &i.domain, &i.tags)?;
    check_label("agent_id", &i.agent_id)?;
    check_tags("source_episode_ids", &i.source_episode_ids)?;
    check_opt_label("supersedes", i.supersedes.as_deref())?;
    check_opt_label("external_id", i.external_id.as_deref())?;
    Ok(record_terms(&i.content))
}

/// The checks every backend makes on an episode before writing it; returns
/// the search terms of its [`Episode::searchable_text`].
pub fn validate_episode(episode: &Episode) -> Result<Vec<String>, StoreError> {
    let e = episode;
    validate_record_id(&e.id)?;
    check_importance(e.importance)?;
    check_meta(&e.meta, &e.entity, &e.domain, &e.tags)?;
    check_label("agent_id", &e.agent_id)?;
    check_label("operator_id", &e.operator_id)?;
    check_label("node_name", &e.node_name)?;
    check_text("action", &e.action)?;
    check_text("input_summary", &e.input_summary)?;
    check_text("output_summary", &e.output_summary)?;
    check_json("outcome", &e.outcome)?;
    check_opt_label("external_id", e.external_id.as_deref())?;
    Ok(record_terms(&e.searchable_text()))
}

/// Name the batch item an error is about (`[3].content`).
pub fn at_index(i: usize, e: StoreError) -> StoreError {
    match e {
        StoreError::InvalidInput { field, reason } => StoreError::InvalidInput {
            field: format!("[{i}].{field}"),
            reason,
        },
        other => other,
    }
}

/// The checks every backend makes on a raw call before appending it;
/// returns the search terms of its [`RawCall::searchable_text`].
/// Request and response must serialise as JSON within [`MAX_JSON_BYTES`]
/// each, without NUL characters.
pub fn validate_raw_call(call: &RawCall) -> Result<Vec<String>, StoreError> {
    validate_record_id(&call.id)?;
    check_meta(&call.meta, &call.entity, &call.domain, &[])?;
    check_label("agent_id", &call.agent_id)?;
    check_label("operator_id", &call.operator_id)?;
    check_label("node_name", &call.node_name)?;
    check_opt_label("episode_id", call.episode_id.as_deref())?;
    check_label("model", &call.model)?;
    let request = serde_json::to_value(&call.request)
        .map_err(|e| StoreError::invalid("request", e.to_string()))?;
    check_json("request", &request)?;
    if let Some(response) = &call.response {
        let response = serde_json::to_value(response)
            .map_err(|e| StoreError::invalid("response", e.to_string()))?;
        check_json("response", &response)?;
    }
    if let Some(error) = &call.error {
        check_text("error", error)?;
    }
    Ok(record_terms(&call.searchable_text()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_checked_alike() {
        assert!(validate_fact(&Fact::new("f", "x")).is_ok());
        assert!(validate_fact(&Fact::new("f", "  ")).is_err());
        assert!(validate_fact(&Fact::new("f", "x").confidence(1.5)).is_err());
        assert!(validate_fact(&Fact::new("f", "x").confidence(f64::NAN)).is_err());
        assert!(validate_fact(&Fact::new("f", "x").importance(-1.0)).is_err());
        assert!(validate_fact(&Fact::new("a/b", "x")).is_err());
        assert!(validate_insight(&Insight::new("i", "cro", "x", -0.1)).is_err());
        assert!(validate_insight(&Insight::new("i", "cro", "x", 0.1)).is_ok());
        let episode = Episode {
            id: "e".into(),
            importance: f64::INFINITY,
            ..Episode::default()
        };
        assert!(validate_episode(&episode).is_err());
        let err = check_unit("confidence", 2.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid confidence: 2 is not within 0.0..=1.0"
        );
    }
}
