//! The stores' input rules, stated in the OpenAPI document's schemas: the
//! limits and shapes every backend checks before it writes
//! (`openvibe_protocols::validate_record_id`, `check_label`,
//! `check_content`, the query cursors, ...), written once here as schema
//! keywords from the same constants, so that a request the document
//! allows is one the stores take (and, since the server validates every
//! body against the document, one they refuse is refused before it
//! reaches them).
//!
//! Lengths: the stores count bytes of UTF-8, a schema counts characters;
//! `maxLength` is the byte limit, which text of multi-byte characters
//! reaches sooner (a 400 the document cannot state).

use openvibe_protocols::{
    BeliefQuery, GoalQuery, InboxQuery, MAX_BELIEF_INSIGHTS, MAX_CONTENT_LEN, MAX_ERROR_CHARS,
    MAX_INITIATIVES, MAX_LABEL_LEN, MAX_LEASE_BATCH, MAX_LEASE_MS, MAX_LEASE_ROLES, MAX_PRIORITIES,
    MAX_RAW_PAGE, MAX_REASON_CHARS, MAX_RECORD_ID_LEN, MAX_SPACE_MEMBERS, MAX_TITLE_CHARS,
    MAX_VECTOR_IDS, MAX_WAIT_MS, MIN_LEASE_MS, MessageQuery, PageQuery, ProposalQuery,
    RECORD_KINDS, ReportQuery, SpaceQuery,
};
use serde_json::{Map, Value, json};

/// A rule: the keywords a property's schema gains.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// A short, indexed text field (`check_label`): at most
    /// `MAX_LABEL_LEN`, no NUL.
    Label,
    /// A label that must not be blank (`trim().is_empty()` refused).
    Name,
    /// A label that must not be empty (blank is fine).
    NonEmptyLabel,
    /// An owner key: `agent:`, `user:` or `service:`, then an id that is
    /// not blank.
    OwnerKey,
    /// Text of at most this many characters, no NUL.
    Chars(usize),
    /// Between these many items.
    Items(usize, usize),
    /// A record id (`validate_record_id`), or empty where the store
    /// generates one.
    IdOrEmpty,
    /// A record id that must be given.
    Id,
    /// Text that is not blank (`check_content`): a character other than
    /// white space, no NUL, at most `MAX_CONTENT_LEN`.
    Content,
    /// Text that is not blank, at most `MAX_TITLE_CHARS` characters.
    Title,
    /// `0.0..=1.0`.
    Unit,
    /// `>= 0`.
    NonNegative,
    /// An integer within a range.
    Range(u64, u64),
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// At most this many items.
    MaxItems(usize),
    /// At least this many items.
    MinItems(usize),
    /// A list page's cursor (`page_cursor`).
    PageCursor,
    /// A fact's or insight's cursor (confidence bits, then a page cursor).
    ConfidenceCursor,
    /// An audit page's cursor (`(at, seq)`).
    AuditCursor,
    /// A goal's label: letters, digits, `-`, `_`, `.`, 1 to 64.
    GoalLabel,
    /// Any JSON without a NUL in a string or key (`check_json`).
    Json,
    /// A JSON object of that kind, or `null` for `{}` (`json_object`).
    JsonObject,
    /// An object whose keys and values hold no NUL (`check_metadata`).
    JsonMap,
    /// One of these words, within what the type allows.
    Only(&'static [&'static str]),
    /// One of these words, or `null` (an optional argument left out).
    Word(&'static [&'static str]),
    /// A role id that makes a record id of its priorities (`<role>:<day>`):
    /// not blank, no `/` or control character, short enough.
    PrioritiesRole,
}

/// A list's `limit`: 1 to the most one page of `Q` holds (the contract's
/// [`PageQuery::MAX_PAGE`]).
const fn page<Q: PageQuery>() -> Rule {
    Rule::Range(1, Q::MAX_PAGE as u64)
}

/// No NUL character (PostgreSQL text cannot hold one).
pub(crate) const NO_NUL: &str = "^[^\\u0000]*$";

/// Not blank: a character that is not white space in Rust's sense
/// (`char::is_whitespace`, Unicode's White_Space), and no NUL.
const NOT_BLANK: &str = "^[^\\u0000]*[^\\u0000\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000]*$";

/// A record id: no `/`, no control character (Unicode's Cc).
const RECORD_ID: &str = "^[^/\\u0000-\\u001F\\u007F-\\u009F]*$";

/// Microseconds that `chrono` holds, then `|` and an id (no NUL).
const PAGE_CURSOR: &str = "^-?[0-9]{1,18}\\|[^\\u0000]*$";

/// The bits of a finite `f64` in hex (16 digits whose exponent is all ones
/// are infinities and NaNs), `|`, then a page cursor.
const CONFIDENCE_CURSOR: &str = "^(?:[0-9a-fA-F]{1,15}|[0-689a-eA-E][0-9a-fA-F]{15}|[7Ff](?:[0-9a-eA-E][0-9a-fA-F]{14}|[Ff][0-9a-eA-E][0-9a-fA-F]{13}))\\|-?[0-9]{1,18}\\|[^\\u0000]*$";

const AUDIT_CURSOR: &str = "^-?[0-9]{1,18}\\|[0-9]{1,19}$";

/// `agent:`, `user:` or `service:`, then an id that is not blank.
const OWNER_KEY: &str = "^(?:agent|user|service):[^\\u0000]*[^\\u0000\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000]*$";

/// Not blank, no `/`, no control character (white space other than the
/// control characters is blank only when alone).
const PRIORITIES_ROLE: &str = "^[^/\\u0000-\\u001F\\u007F-\\u009F]*[^/\\u0000-\\u001F\\u007F-\\u009F \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^/\\u0000-\\u001F\\u007F-\\u009F]*$";

const GOAL_LABEL: &str = "^[A-Za-z0-9._-]{1,64}$";

impl Rule {
    fn keywords(self) -> Value {
        match self {
            Self::Label => json!({"maxLength": MAX_LABEL_LEN, "pattern": NO_NUL}),
            Self::Name => json!({"maxLength": MAX_LABEL_LEN, "pattern": NOT_BLANK}),
            Self::NonEmptyLabel => {
                json!({"minLength": 1, "maxLength": MAX_LABEL_LEN, "pattern": NO_NUL})
            }
            Self::OwnerKey => json!({"maxLength": MAX_LABEL_LEN, "pattern": OWNER_KEY}),
            Self::Chars(n) => json!({"maxLength": n, "pattern": NO_NUL}),
            Self::Items(min, max) => json!({"minItems": min, "maxItems": max}),
            Self::IdOrEmpty => json!({"maxLength": MAX_RECORD_ID_LEN, "pattern": RECORD_ID}),
            Self::Id => {
                json!({"minLength": 1, "maxLength": MAX_RECORD_ID_LEN, "pattern": RECORD_ID})
            }
            Self::Content => json!({"maxLength": MAX_CONTENT_LEN, "pattern": NOT_BLANK}),
            Self::Title => json!({"maxLength": MAX_TITLE_CHARS, "pattern": NOT_BLANK}),
            Self::Unit => json!({"minimum": 0.0, "maximum": 1.0}),
            Self::NonNegative => json!({"minimum": 0.0}),
            Self::Range(min, max) => json!({"minimum": min, "maximum": max}),
            Self::OneOf(words) => json!({"enum": words}),
            Self::MaxItems(n) => json!({"maxItems": n}),
            Self::MinItems(n) => json!({"minItems": n}),
            Self::PageCursor => json!({"pattern": PAGE_CURSOR}),
            Self::ConfidenceCursor => json!({"pattern": CONFIDENCE_CURSOR}),
            Self::AuditCursor => json!({"pattern": AUDIT_CURSOR}),
            Self::GoalLabel => json!({"pattern": GOAL_LABEL}),
            Self::Json => json!({"$ref": "#/components/schemas/Json"}),
            Self::JsonObject => json!({"$ref": "#/components/schemas/JsonObject"}),
            Self::JsonMap => json!({
                "type": "object",
                "propertyNames": {"pattern": NO_NUL},
                "additionalProperties": {"$ref": "#/components/schemas/Json"},
            }),
            Self::Only(words) => json!({"enum": words}),
            Self::Word(words) => {
                let mut words: Vec<Value> = words.iter().map(|w| Value::from(*w)).collect();
                words.push(Value::Null);
                json!({ "enum": words })
            }
            Self::PrioritiesRole => {
                json!({"maxLength": PRIORITIES_ROLE_CHARS, "pattern": PRIORITIES_ROLE})
            }
        }
    }
}

/// The record kinds with the shared record metadata.
const RECORDS: &[&str] = &[
    "Fact",
    "Insight",
    "Episode",
    "RawCall",
    "Knowledge",
    "Belief",
    "Proposal",
    "Goal",
    "Space",
    "SpaceMessage",
    "Plan",
    "Session",
    "TaskContext",
    "MetricReport",
    "Priorities",
    "InboxEvent",
];

/// `(schemas, property path, rule)`: the property path is a property's name,
/// or `name/items` for the items of an array, or `a.b` through a
/// property's own object schema.
const RULES: &[(&[&str], &str, Rule)] = &[
    (RECORDS, "namespace", Rule::Label),
    (RECORDS, "owner", Rule::Label),
    (RECORDS, "source", Rule::Label),
    (RECORDS, "project_id", Rule::Label),
    (
        &["Fact", "Insight", "Episode", "RawCall"],
        "entity",
        Rule::Label,
    ),
    (
        &[
            "Fact", "Insight", "Episode", "RawCall", "Proposal", "Belief", "Space",
        ],
        "domain",
        Rule::Label,
    ),
    (
        &["Fact", "Insight", "Episode", "Knowledge"],
        "tags/items",
        Rule::Label,
    ),
    (
        &["Fact", "Insight", "Episode", "RawCall", "Knowledge"],
        "id",
        Rule::IdOrEmpty,
    ),
    (
        &["Fact", "Insight", "NewKnowledge"],
        "content",
        Rule::Content,
    ),
    (&["Fact", "Insight", "Belief"], "confidence", Rule::Unit),
    (
        &["Fact", "Insight", "Episode"],
        "importance",
        Rule::NonNegative,
    ),
    (&["NewKnowledge"], "tags/items", Rule::Label),
    (&["NewKnowledge"], "source", Rule::Label),
    (&["NewKnowledge"], "external_id", Rule::Label),
    (&["NewKnowledge", "KnowledgeQuery"], "plan_id", Rule::Label),
    (
        &["NewKnowledge", "KnowledgeQuery"],
        "session_id",
        Rule::Label,
    ),
    (&["KnowledgeQuery"], "top_k", Rule::Range(1, 1000)),
    (&["SearchMemory"], "top_k", Rule::Range(1, 1000)),
    (&["NewPlan"], "goal_event", Rule::Name),
    (&["NewPlan"], "response_event", Rule::Label),
    (&["NewPlan", "NewSession"], "id", Rule::Id),
    (
        &["AtomicAppend", "AtomicIncrement", "StateEntry"],
        "key",
        Rule::NonEmptyLabel,
    ),
    (&["AtomicAppend", "AtomicIncrement"], "plan_id", Rule::Id),
    (&["TaskContext"], "task_id", Rule::Id),
    (&["TaskContext"], "sub_task_ids/items", Rule::NonEmptyLabel),
    (
        &["PlanContext"],
        "correlation_ids/items",
        Rule::NonEmptyLabel,
    ),
    (&["PlanContext"], "plan_id", Rule::Id),
    (&["Space"], "title", Rule::Title),
    (&["Space"], "members", Rule::MaxItems(MAX_SPACE_MEMBERS)),
    (&["Member"], "principal", Rule::OwnerKey),
    (&["Member"], "domains/items", Rule::Name),
    (&["SpaceMessage"], "to/items", Rule::OwnerKey),
    (&["SpaceMessage"], "domain", Rule::Name),
    (&["SpaceMessage"], "thread", Rule::Label),
    (
        &[
            "Belief",
            "Proposal",
            "MetricReport",
            "Priorities",
            "PrioritiesOf",
            "ReportQuery",
        ],
        "role_id",
        Rule::Name,
    ),
    (
        &["Belief", "Proposal", "MetricReport", "Priorities"],
        "id",
        Rule::IdOrEmpty,
    ),
    (&["Belief"], "insight_ids/items", Rule::Id),
    (&["Belief"], "supersedes", Rule::Id),
    (&["Belief"], "refines", Rule::Id),
    (&["Proposal"], "assignee", Rule::Label),
    (&["MetricReport"], "metric", Rule::Name),
    (&["MetricReport"], "episode_id", Rule::Label),
    (&["MetricReport"], "note", Rule::Chars(MAX_REASON_CHARS)),
    (&["Priorities"], "items", Rule::Items(1, MAX_PRIORITIES)),
    (&["Priority", "Initiative"], "title", Rule::Title),
    (&["Priority"], "reason", Rule::Chars(MAX_REASON_CHARS)),
    (
        &["Initiative"],
        "description",
        Rule::Chars(MAX_REASON_CHARS),
    ),
    (&["Initiative"], "owner", Rule::Label),
    (&["Initiative"], "domain", Rule::Label),
    (
        &["Initiative", "InitiativeUpdate"],
        "note",
        Rule::Chars(MAX_REASON_CHARS),
    ),
    (&["Priority"], "goal_id", Rule::Label),
    (
        &["Decompose"],
        "initiatives",
        Rule::Items(1, MAX_INITIATIVES),
    ),
    (&["Objective"], "owner", Rule::Name),
    (&["Objective"], "key_results", Rule::MinItems(1)),
    (&["KeyResult"], "metric", Rule::GoalLabel),
    (&["FinishProposal"], "error", Rule::Chars(MAX_ERROR_CHARS)),
    (
        &["Verdict", "BeliefVerdict"],
        "reason",
        Rule::Chars(MAX_REASON_CHARS),
    ),
    (&["RetireBelief"], "reason", Rule::Name),
    (&["MoveNamespace"], "kind", Rule::OneOf(&RECORD_KINDS)),
    (&["MoveNamespace"], "from", Rule::Label),
    (&["MoveNamespace"], "to", Rule::Label),
    (
        &["MoveNamespace", "DeleteExpired", "EmbedPending", "Erase"],
        "batch",
        Rule::Range(1, u64::MAX),
    ),
    (&["BeliefQuery"], "limit", page::<BeliefQuery>()),
    (&["ProposalQuery"], "limit", page::<ProposalQuery>()),
    (&["SpaceQuery"], "limit", page::<SpaceQuery>()),
    (&["MessageQuery"], "limit", page::<MessageQuery>()),
    (&["MessageQuery"], "wait_ms", Rule::Range(0, MAX_WAIT_MS)),
    (&["MessageQuery"], "after", Rule::Range(0, i64::MAX as u64)),
    (&["GoalQuery"], "limit", page::<GoalQuery>()),
    (&["ReportQuery"], "limit", page::<ReportQuery>()),
    (
        &["RawCallQuery"],
        "limit",
        Rule::Range(0, MAX_RAW_PAGE as u64),
    ),
    (&["Belief"], "statement", Rule::Content),
    (
        &["Belief"],
        "insight_ids",
        Rule::MaxItems(MAX_BELIEF_INSIGHTS),
    ),
    (&["Proposal"], "summary", Rule::Content),
    (&["Objective"], "id", Rule::GoalLabel),
    (&["Objective"], "title", Rule::Title),
    (&["KeyResult"], "id", Rule::GoalLabel),
    (
        &["VectorLookup"],
        "kind",
        Rule::OneOf(&["fact", "insight", "episode", "knowledge"]),
    ),
    (
        &["VectorLookup", "Touch"],
        "ids",
        Rule::MaxItems(MAX_VECTOR_IDS),
    ),
    (&["Promote"], "kind", Rule::OneOf(&["fact", "insight"])),
    (
        &["FactQuery", "InsightQuery"],
        "cursor",
        Rule::ConfidenceCursor,
    ),
    (
        &[
            "EpisodeQuery",
            "RawCallQuery",
            "PlanQuery",
            "SessionQuery",
            "BeliefQuery",
            "ProposalQuery",
            "SpaceQuery",
            "ReportQuery",
        ],
        "cursor",
        Rule::PageCursor,
    ),
    (&["AuditQuery"], "cursor", Rule::AuditCursor),
    (&["Caller"], "tenant_id", Rule::Name),
    (&["Principal"], "id", Rule::Name),
    (
        &["NewSession", "NewKnowledge"],
        "metadata",
        Rule::JsonObject,
    ),
    (&["NewPlan", "PlanUpdate"], "goal_data", Rule::JsonObject),
    (&["TaskContext", "PlanContext"], "context", Rule::JsonObject),
    (&["DelegationRequest"], "input", Rule::JsonMap),
    (&["SetState", "AtomicAppend"], "value", Rule::Json),
    (&["Fact"], "metadata", Rule::JsonMap),
    (&["DelegationRequest"], "task", Rule::Name),
    (&["DelegationAnswer"], "request", Rule::Name),
    (&["DelegationAnswer"], "output", Rule::Json),
    (&["Action"], "action", Rule::Name),
    (&["Action"], "input", Rule::JsonMap),
    (
        &["Proposal"],
        "outcome",
        Rule::Only(&["propose", "escalate"]),
    ),
    (
        &["Priorities", "PrioritiesOf"],
        "role_id",
        Rule::PrioritiesRole,
    ),
    (
        &["Space", "Session", "Plan", "SpaceMessage"],
        "id",
        Rule::IdOrEmpty,
    ),
    (&["ToolDefinition"], "input_schema", Rule::Json),
    (&["ToolCall"], "input", Rule::Json),
    (&["Episode", "Insight", "RawCall"], "agent_id", Rule::Label),
    (&["Episode", "RawCall"], "operator_id", Rule::Label),
    (&["Episode", "RawCall"], "node_name", Rule::Label),
    (&["Episode"], "outcome", Rule::Json),
    (
        &["Fact", "Insight", "Episode", "Knowledge", "NewKnowledge"],
        "external_id",
        Rule::Label,
    ),
    (&["Fact", "Insight"], "supersedes", Rule::Label),
    (&["Insight"], "source_episode_ids/items", Rule::Label),
    (&["RawCall"], "episode_id", Rule::Label),
    (&["RawCall"], "model", Rule::Label),
    // An event (`validate_inbox_event`, the loop's `check_event`).
    (&["DecisionEvent"], "id", Rule::Name),
    (&["DecisionEvent"], "kind", Rule::Name),
    (&["DecisionEvent"], "domain", Rule::Name),
    (&["DecisionEvent"], "entity", Rule::Label),
    (&["DecisionEvent"], "summary", Rule::Chars(MAX_CONTENT_LEN)),
    (&["DecisionEvent"], "data", Rule::JsonMap),
    (&["InboxEvent"], "id", Rule::IdOrEmpty),
    (&["InboxEvent"], "role_id", Rule::Name),
    (&["InboxEvent"], "domain", Rule::Label),
    (&["LeaseRequest"], "roles", Rule::Items(1, MAX_LEASE_ROLES)),
    (&["LeaseRequest"], "roles/items", Rule::Name),
    (
        &["LeaseRequest", "Renewal", "InboxOutcome"],
        "holder",
        Rule::Name,
    ),
    (
        &["LeaseRequest", "Renewal"],
        "lease_ms",
        Rule::Range(MIN_LEASE_MS, MAX_LEASE_MS),
    ),
    (
        &["LeaseRequest"],
        "limit",
        Rule::Range(1, MAX_LEASE_BATCH as u64),
    ),
    (&["InboxOutcome"], "note", Rule::Chars(MAX_CONTENT_LEN)),
    (&["InboxQuery"], "limit", page::<InboxQuery>()),
    (&["InboxQuery"], "cursor", Rule::PageCursor),
    (&["InboxQuery"], "role_id", Rule::Label),
];

/// Rules inside an enum's variants: `(schema, JSON pointer, rule)`.
const VARIANT_RULES: &[(&str, &str, Rule)] = &[
    // A text message's text is content (not blank).
    ("MessageBody", "/oneOf/0/properties/text", Rule::Content),
    // A tool call's input, as a model wrote it.
    ("ContentBlock", "/oneOf/1/properties/input", Rule::Json),
    // An erasure's subject names something.
    ("ErasureSubject", "/oneOf/0/properties/entity", Rule::Name),
    ("ErasureSubject", "/oneOf/1/properties/owner", Rule::Name),
    (
        "ErasureSubject",
        "/oneOf/2/properties/namespace",
        Rule::Label,
    ),
];

/// The longest role id whose priorities' id (`<role>:<day>`) is a record
/// id: 256 bytes less the day and colon, in characters of up to 4 bytes.
const PRIORITIES_ROLE_CHARS: usize = (MAX_RECORD_ID_LEN - 11) / 4;

/// The MCP tools' arguments (`openvibe_service::mcp`): `(tools, argument
/// path, rule)`, as [`RULES`] for the document: what the stores
/// check that the tools pass on, so that arguments a tool's schema allows
/// are arguments it takes.
const TOOL_RULES: &[(&[&str], &str, Rule)] = &[
    (
        &[
            "saveMemory",
            "deleteExpiredMemories",
            "searchMemory",
            "promoteMemory",
            "getMemoryStats",
            "listProposals",
            "listGoals",
            "goalProgress",
            "reportMetric",
            "updateInitiative",
            "listBeliefs",
            "decideProposal",
            "decideBelief",
            "pushEvent",
            "eventTrace",
            "listSpaces",
            "postMessage",
            "readMessages",
        ],
        "project",
        Rule::Label,
    ),
    (&["saveMemory"], "content", Rule::Content),
    (&["saveMemory", "reportMetric"], "scope", Rule::Label),
    (&["saveMemory"], "entity", Rule::Label),
    (
        &["saveMemory", "listProposals", "listBeliefs"],
        "domain",
        Rule::Label,
    ),
    (&["saveMemory"], "tags/items", Rule::Label),
    (&["saveMemory"], "ttl_seconds", Rule::Range(1, u64::MAX)),
    (&["saveMemory"], "metadata", Rule::JsonMap),
    (
        &["deleteExpiredMemories"],
        "batch",
        Rule::Range(1, u64::MAX),
    ),
    (&["searchMemory"], "scopes/items", Rule::Label),
    (&["searchMemory"], "top_k", Rule::Range(1, 1000)),
    (&["promoteMemory"], "id", Rule::Id),
    (&["promoteMemory"], "kind", Rule::Word(&["fact", "insight"])),
    (&["promoteMemory"], "to", Rule::Label),
    (&["promoteMemory"], "note", Rule::Chars(MAX_REASON_CHARS)),
    (
        &["setPlanState", "getPlanState", "appendPlanState"],
        "plan_id",
        Rule::Id,
    ),
    (
        &["setPlanState", "getPlanState", "appendPlanState"],
        "key",
        Rule::NonEmptyLabel,
    ),
    (&["setPlanState", "appendPlanState"], "value", Rule::Json),
    (
        &["setPlanState"],
        "expect_version",
        Rule::Range(0, i64::MAX as u64),
    ),
    (
        &["listProposals", "listGoals", "listBeliefs"],
        "role",
        Rule::Label,
    ),
    (&["listProposals"], "limit", page::<ProposalQuery>()),
    (&["listGoals"], "limit", page::<GoalQuery>()),
    (&["listBeliefs"], "limit", page::<BeliefQuery>()),
    (&["listSpaces"], "limit", page::<SpaceQuery>()),
    (
        &["listProposals", "listGoals", "listBeliefs", "listSpaces"],
        "cursor",
        Rule::PageCursor,
    ),
    (
        &[
            "goalProgress",
            "decideProposal",
            "decideBelief",
            "eventTrace",
        ],
        "id",
        Rule::Id,
    ),
    (&["reportMetric"], "role", Rule::Name),
    (&["reportMetric"], "metric", Rule::Name),
    (&["reportMetric"], "note", Rule::Chars(MAX_REASON_CHARS)),
    (&["reportMetric"], "id", Rule::Id),
    (&["updateInitiative"], "goal", Rule::Id),
    (&["updateInitiative"], "initiative", Rule::NonEmptyLabel),
    (&["updateInitiative"], "note", Rule::Chars(MAX_REASON_CHARS)),
    (
        &["decideProposal", "decideBelief"],
        "reason",
        Rule::Chars(MAX_REASON_CHARS),
    ),
    (&["pushEvent", "eventTrace"], "role", Rule::Name),
    (&["postMessage", "readMessages"], "space", Rule::Id),
    (&["postMessage"], "id", Rule::Id),
    (&["postMessage", "readMessages"], "thread", Rule::Label),
    (&["postMessage"], "domain", Rule::Name),
    (&["postMessage"], "to/items", Rule::OwnerKey),
    (&["readMessages"], "limit", page::<MessageQuery>()),
    (&["readMessages"], "wait_ms", Rule::Range(0, MAX_WAIT_MS)),
    (&["readMessages"], "after", Rule::Range(0, i64::MAX as u64)),
];

/// The tools [`TOOL_RULES`] names.
#[cfg(test)]
pub(crate) fn tool_rule_types() -> Vec<&'static str> {
    let mut names: Vec<&str> = TOOL_RULES
        .iter()
        .flat_map(|(n, _, _)| n.iter().copied())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Where a tool's arguments type sits among its schemas while the rules
/// are applied (no document type has this name).
pub(crate) const ARGUMENTS: &str = "(arguments)";

/// Apply the rows of [`TOOL_RULES`] for `tool` to its arguments' schema
/// (`schemas[ARGUMENTS]`); returns the rows that found no property.
pub(crate) fn constrain_tool(tool: &str, schemas: &mut Map<String, Value>) -> Vec<String> {
    let mut missed = Vec::new();
    for (names, path, rule) in TOOL_RULES {
        if !names.contains(&tool) {
            continue;
        }
        let target = schemas
            .get_mut(ARGUMENTS)
            .and_then(|schema| property(schema, path));
        // An argument of any JSON (`true`) becomes an object to extend.
        if let Some(target) = target {
            if target == &Value::Bool(true) {
                *target = Value::Object(Map::new());
            }
            if let (Value::Object(target), Value::Object(keywords)) = (target, rule.keywords()) {
                target.extend(keywords);
                continue;
            }
        }
        missed.push(format!("{tool}.{path}"));
    }
    missed
}

/// Every `$ref` under `schemas` that starts with `from` starts with `to`.
pub(crate) fn retarget(schemas: &mut Map<String, Value>, from: &str, to: &str) {
    fn walk(value: &mut Value, from: &str, to: &str) {
        match value {
            Value::Object(o) => {
                if let Some(Value::String(r)) = o.get_mut("$ref")
                    && let Some(rest) = r.strip_prefix(from)
                {
                    *r = format!("{to}{rest}");
                }
                o.values_mut().for_each(|v| walk(v, from, to));
            }
            Value::Array(a) => a.iter_mut().for_each(|v| walk(v, from, to)),
            _ => {}
        }
    }
    schemas.values_mut().for_each(|v| walk(v, from, to));
}

/// The components for JSON values the stores keep: no NUL in any string or
/// key (`check_json`), and objects of them.
pub(crate) fn add_json_schemas(schemas: &mut Map<String, Value>) {
    schemas.insert(
        "Json".into(),
        json!({
            "description": "Any JSON value without a NUL character in a string or key.",
            "anyOf": [
                {"type": ["null", "boolean", "number"]},
                {"type": "string", "pattern": NO_NUL},
                {"type": "array", "items": {"$ref": "#/components/schemas/Json"}},
                {
                    "type": "object",
                    "propertyNames": {"pattern": NO_NUL},
                    "additionalProperties": {"$ref": "#/components/schemas/Json"},
                },
            ],
        }),
    );
    schemas.insert(
        "JsonObject".into(),
        json!({
            "description": "A JSON object without a NUL character in a string or key; `null` is `{}`.",
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "propertyNames": {"pattern": NO_NUL},
                    "additionalProperties": {"$ref": "#/components/schemas/Json"},
                },
            ],
        }),
    );
}

/// Rules between properties: `(schema, keywords)`.
fn whole_rules() -> Vec<(&'static str, Value)> {
    vec![
        (
            // `resolve_embedding`: a vector, or a text to embed.
            "KnowledgeQuery",
            json!({"anyOf": [
                {"required": ["embedding"], "properties": {"embedding": {"type": "array"}}},
                {"required": ["text"], "properties": {"text": {"type": "string", "pattern": NOT_BLANK}}},
            ]}),
        ),
        // A text query is ordered by relevance, in one page: no cursor.
        ("FactQuery", no_cursor_with_text()),
        ("InsightQuery", no_cursor_with_text()),
        ("EpisodeQuery", no_cursor_with_text()),
        // Full text needs a text.
        (
            "KnowledgeQuery",
            json!({"allOf": [{"anyOf": [
                {"properties": {"mode": {"not": {"const": "full_text"}}}},
                {"required": ["text"], "properties": {"text": {"type": "string", "pattern": NOT_BLANK}}},
            ]}]}),
        ),
        ("ReportQuery", json!({"required": ["role_id"]})),
        ("PrioritiesOf", json!({"required": ["role_id"]})),
        // Its content is refused when empty: it must be given.
        ("NewKnowledge", json!({"required": ["content"]})),
        ("NewPlan", json!({"required": ["goal_event"]})),
        // `FinishProposal::outcome`: exactly one of the two.
        (
            "FinishProposal",
            json!({"oneOf": [
                {"required": ["result"], "properties": {"result": {"not": {"type": "null"}}, "error": {"type": "null"}}},
                {"required": ["error"], "properties": {"error": {"type": "string"}, "result": {"type": "null"}}},
            ]}),
        ),
        // `Verdict::validate`: a rejection needs a reason.
        // … and only an approval supersedes.
        ("Verdict", verdict_rules()),
        ("BeliefVerdict", verdict_rules()),
        // `Proposal::validate`: a proposal to act carries its action.
        (
            "Proposal",
            json!({
                "if": {"required": ["outcome"], "properties": {"outcome": {"const": "propose"}}},
                "then": {"required": ["action"], "properties": {"action": {"type": "object"}}},
            }),
        ),
    ]
}

/// A verdict approves, or gives its reason; and only an approval
/// supersedes or makes a constraint.
fn verdict_rules() -> Value {
    let approves = json!({"required": ["approve"], "properties": {"approve": {"const": true}}});
    json!({"allOf": [
        {"anyOf": [
            approves,
            {"required": ["reason"], "properties": {"reason": {"type": "string", "pattern": NOT_BLANK}}},
        ]},
        {"anyOf": [
            approves,
            {"properties": {"supersede": {"const": false}}},
        ]},
        {"anyOf": [
            approves,
            {"properties": {"constraint": {"const": false}}},
        ]},
    ]})
}

/// A cursor and a text that is not empty never together.
fn no_cursor_with_text() -> Value {
    json!({"not": {
        "required": ["cursor", "text"],
        "properties": {"cursor": {"type": "string"}, "text": {"type": "string", "minLength": 1}},
    }})
}

/// Add every rule's keywords to the components' schemas; the rules that
/// found no property (a renamed field) are returned, for the test that
/// keeps this table true.
pub(crate) fn constrain(schemas: &mut Map<String, Value>) -> Vec<String> {
    let mut missed = Vec::new();
    for (name, pointer, rule) in VARIANT_RULES {
        match schemas.get_mut(*name).and_then(|s| s.pointer_mut(pointer)) {
            Some(Value::Object(target)) => {
                if let Value::Object(keywords) = rule.keywords() {
                    target.extend(keywords);
                }
            }
            _ => missed.push(format!("{name}{pointer}")),
        }
    }
    for (names, path, rule) in RULES {
        for name in *names {
            let target = schemas
                .get_mut(*name)
                .and_then(|schema| property(schema, path));
            match target {
                Some(Value::Object(target)) => {
                    if let Value::Object(keywords) = rule.keywords() {
                        target.extend(keywords);
                    }
                }
                _ => missed.push(format!("{name}.{path}")),
            }
        }
    }
    missed
}

/// Add the rules between properties (after the objects are closed: their
/// `anyOf` and `not` arms name some properties, not all); the schemas that
/// were not found are returned.
pub(crate) fn relate(schemas: &mut Map<String, Value>) -> Vec<String> {
    let mut missed = Vec::new();
    for (name, keywords) in whole_rules() {
        match (schemas.get_mut(name), keywords) {
            (Some(Value::Object(schema)), Value::Object(keywords)) => {
                for (key, value) in keywords {
                    // `required` adds to the type's own list.
                    match (schema.get_mut(&key), value) {
                        (Some(Value::Array(have)), Value::Array(more)) if key == "required" => {
                            for m in more {
                                if !have.contains(&m) {
                                    have.push(m);
                                }
                            }
                        }
                        (_, value) => {
                            schema.insert(key, value);
                        }
                    }
                }
            }
            _ => missed.push(name.to_owned()),
        }
    }
    missed
}

/// The schema of `path` in `schema` (see [`RULES`]).
fn property<'a>(schema: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut at = schema;
    for (i, step) in path.split('.').enumerate() {
        let (name, items) = match step.strip_suffix("/items") {
            Some(name) => (name, true),
            None => (step, false),
        };
        if i > 0 {
            // A nested object: its inline schema or the first `anyOf` arm
            // that has properties.
            at = inline_object(at)?;
        }
        at = at.get_mut("properties")?.get_mut(name)?;
        if items {
            at = at.get_mut("items")?;
        }
    }
    Some(at)
}

fn inline_object(schema: &mut Value) -> Option<&mut Value> {
    if schema.get("properties").is_some() {
        return Some(schema);
    }
    schema
        .get_mut("anyOf")?
        .as_array_mut()?
        .iter_mut()
        .find(|arm| arm.get("properties").is_some())
}
