//! The memory filesystem: a virtual tree over an agent's memory that an
//! LLM (or a person) can browse, read, search and write.
//!
//! ```text
//! /identity/soul.md                      the role's soul (read-only)
//! /beliefs/<domain>/<id>                 the role's active beliefs, approved by a person (read-only)
//! /knowledge/<domain>/[<tag>/...]<id>    the agent's insights ("_" = no domain)
//! /experience/[<folder>/...]<id>         the agent's episodes (folders are labels)
//! /references/<domain>/<id>              workspace facts the role's clearance can read (read-only)
//! /raw/<id>                              the role's raw LLM calls, newest first (read-only);
//! /raw/after/<cursor>/                   the next page, listed last when there is one
//! ```
//!
//! Paths are validated before anything is read or written: a leading `/` is
//! optional and a trailing `/` marks a directory, but `.`/`..` segments,
//! empty segments (`a//b`), control characters, segments longer than
//! [`MAX_RECORD_ID_LEN`] bytes and paths longer than [`MAX_PATH_LEN`] bytes
//! are rejected with [`MemoryError::InvalidPath`]. A rejected or failed
//! operation records no trace and writes nothing.

use std::sync::Mutex;
use std::time::Instant;

use chrono::Utc;
use openvibe_protocols::{
    Belief, BeliefStatus, Episode, EpisodeQuery, FactQuery, Insight, InsightQuery,
    MAX_RECORD_ID_LEN, RawCall, RawCallQuery, RetrievalTrace, TraceAction, truncate_chars,
};
use serde_json::json;

use crate::access::ClearanceProfile;
use crate::agent::AgentMemory;
use crate::assembler::approx_tokens;
use crate::error::MemoryError;

/// Longest path accepted, in bytes.
pub const MAX_PATH_LEN: usize = 1024;

/// How many entries a directory listing returns at most.
pub const BROWSE_LIMIT: usize = 1000;

/// How many hits each kind of record contributes to a search at most.
pub const SEARCH_LIMIT: usize = 10;

/// Path segment standing for "no domain".
const NO_DOMAIN: &str = "_";

const ROOT_DIRS: [&str; 6] = [
    "identity",
    "beliefs",
    "knowledge",
    "experience",
    "references",
    "raw",
];

/// How many raw calls one page of `/raw/` lists.
pub const RAW_PAGE: usize = 50;

/// One search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// Where it lives (readable with `read`).
    pub path: String,
    /// Its text.
    pub content: String,
    /// Its confidence, for insights and facts.
    pub confidence: Option<f64>,
}

/// Extra fields for [`MemoryFilesystem::write_with`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteOptions {
    /// Confidence of a knowledge write (default 0.5).
    pub confidence: Option<f64>,
    /// Operator of an experience write.
    pub operator_id: String,
    /// Node of an experience write.
    pub node_name: String,
    /// Domain of an experience write.
    pub domain: String,
    /// Entity of either.
    pub entity: String,
}

/// A validated path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemPath {
    segments: Vec<String>,
    dir: bool,
}

impl MemPath {
    fn parse(raw: &str) -> Result<Self, MemoryError> {
        let invalid = |reason: String| MemoryError::InvalidPath {
            path: truncate_chars(raw, 80).to_owned(),
            reason,
        };
        if raw.len() > MAX_PATH_LEN {
            return Err(invalid(format!("longer than {MAX_PATH_LEN} bytes")));
        }
        if raw.chars().any(char::is_control) {
            return Err(invalid("contains control characters".to_owned()));
        }
        let rest = raw.strip_prefix('/').unwrap_or(raw);
        if rest.is_empty() {
            return Ok(Self {
                segments: Vec::new(),
                dir: true,
            });
        }
        let dir = rest.ends_with('/');
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let mut segments = Vec::new();
        for segment in rest.split('/') {
            match segment {
                "" => return Err(invalid("contains an empty segment (`//`)".to_owned())),
                "." | ".." => return Err(invalid(format!("contains a `{segment}` segment"))),
                s if s.len() > MAX_RECORD_ID_LEN => {
                    return Err(invalid(format!(
                        "has a segment longer than {MAX_RECORD_ID_LEN} bytes"
                    )));
                }
                s => segments.push(s.to_owned()),
            }
        }
        Ok(Self { segments, dir })
    }

    fn segs(&self) -> Vec<&str> {
        self.segments.iter().map(String::as_str).collect()
    }

    /// `/a/b` (with a trailing `/` when `dir`).
    fn display(&self, dir: bool) -> String {
        let mut out = String::from("/");
        out.push_str(&self.segments.join("/"));
        if dir && !self.segments.is_empty() {
            out.push('/');
        }
        out
    }
}

fn domain_from_segment(segment: &str) -> &str {
    if segment == NO_DOMAIN { "" } else { segment }
}

fn domain_segment(domain: &str) -> &str {
    if domain.is_empty() { NO_DOMAIN } else { domain }
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A virtual filesystem over one role's memory; every successful access is
/// recorded as a [`RetrievalTrace`].
#[derive(Debug)]
pub struct MemoryFilesystem {
    role_id: String,
    memory: AgentMemory,
    /// The same memory reading with the clearance for `/references/`.
    references: AgentMemory,
    soul: String,
    traces: Mutex<Vec<RetrievalTrace>>,
}

impl MemoryFilesystem {
    /// A filesystem over `memory` for `role_id`, with no soul and public-only
    /// clearance for references.
    pub fn new(role_id: impl Into<String>, memory: AgentMemory) -> Self {
        let role_id = role_id.into();
        Self {
            references: memory
                .clone()
                .with_clearance(&ClearanceProfile::new(role_id.clone())),
            role_id,
            memory,
            soul: String::new(),
            traces: Mutex::new(Vec::new()),
        }
    }

    /// Set the soul shown at `/identity/soul.md`.
    #[must_use]
    pub fn with_soul(mut self, soul: impl Into<String>) -> Self {
        self.soul = soul.into();
        self
    }

    /// Set the clearance `/references/` is read with.
    #[must_use]
    pub fn with_clearance(mut self, clearance: ClearanceProfile) -> Self {
        self.references = self.memory.clone().with_clearance(&clearance);
        self
    }

    /// The recorded traces, oldest first.
    pub fn traces(&self) -> Vec<RetrievalTrace> {
        self.traces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Forget the recorded traces.
    pub fn clear_traces(&self) {
        self.traces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    fn trace(&self, mut trace: RetrievalTrace, start: Instant) {
        let ctx = self.memory.context();
        trace.id = format!("tr_{}", uuid::Uuid::new_v4().simple());
        trace.meta.tenant_id = ctx.tenant_id().to_owned();
        trace.meta.project_id = ctx.project_id().map(str::to_owned);
        trace.meta.owner = ctx.owner_key();
        trace.meta.namespace.clone_from(&self.role_id);
        trace.meta.source = "memory_filesystem".to_owned();
        trace.duration_ms = elapsed_ms(start);
        self.traces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(trace);
    }

    /// List the entries under `path`. Unknown directories list nothing.
    pub async fn browse(&self, path: &str) -> Result<Vec<String>, MemoryError> {
        let start = Instant::now();
        let parsed = MemPath::parse(path)?;
        let entries = match parsed.segs().as_slice() {
            [] => ROOT_DIRS.iter().map(|d| (*d).to_owned()).collect(),
            ["identity"] => {
                if self.soul.is_empty() {
                    Vec::new()
                } else {
                    vec!["soul.md".to_owned()]
                }
            }
            ["beliefs"] => {
                let beliefs = self.memory.active_beliefs(None).await?;
                sorted_domains(beliefs.iter().map(|b| b.domain.as_str()))
            }
            ["beliefs", domain, ..] => self
                .memory
                .active_beliefs(Some(domain_from_segment(domain)))
                .await?
                .into_iter()
                .map(|b| b.id)
                .collect(),
            ["knowledge"] => {
                let insights = self
                    .memory
                    .recall_insights(InsightQuery::new().limit(BROWSE_LIMIT))
                    .await?;
                sorted_domains(insights.iter().map(|i| i.domain.as_str()))
            }
            ["knowledge", domain, ..] => self
                .insights_in(domain, BROWSE_LIMIT, None)
                .await?
                .into_iter()
                .map(|i| i.id)
                .collect(),
            ["experience", ..] => self
                .memory
                .recall_episodes(EpisodeQuery::new().limit(BROWSE_LIMIT))
                .await?
                .into_iter()
                .map(|e| e.id)
                .collect(),
            ["references"] => {
                let facts = self
                    .references
                    .workspace_facts(&FactQuery::new().limit(BROWSE_LIMIT))
                    .await?;
                sorted_domains(facts.iter().map(|f| f.domain.as_str()))
            }
            ["references", domain, ..] => {
                let wanted = domain_from_segment(domain);
                let facts = self
                    .references
                    .workspace_facts(&FactQuery::new().domain(wanted).limit(BROWSE_LIMIT))
                    .await?;
                facts
                    .into_iter()
                    .filter(|f| f.domain == wanted)
                    .map(|f| f.id)
                    .collect()
            }
            ["raw"] => self.raw_page(None).await?,
            ["raw", "after", cursor] => self.raw_page(Some(cursor)).await?,
            _ => Vec::new(),
        };
        let trace = RetrievalTrace {
            results_count: count(entries.len()),
            ..RetrievalTrace::new(TraceAction::Browse, parsed.display(true))
        };
        self.trace(trace, start);
        Ok(entries)
    }

    /// One page of raw call ids, newest first, and `after/<cursor>/` when
    /// another page follows.
    async fn raw_page(&self, cursor: Option<&str>) -> Result<Vec<String>, MemoryError> {
        let mut query = RawCallQuery::new().limit(RAW_PAGE);
        if let Some(cursor) = cursor {
            query = query.cursor(cursor);
        }
        let page = self.memory.recall_raw(query).await?;
        let mut entries: Vec<String> = page.items.into_iter().map(|c| c.id).collect();
        if let Some(next) = page.next_cursor {
            entries.push(format!("after/{next}/"));
        }
        Ok(entries)
    }

    /// The agent's insights in the domain named by `segment`, most confident first.
    async fn insights_in(
        &self,
        segment: &str,
        limit: usize,
        text: Option<&str>,
    ) -> Result<Vec<Insight>, MemoryError> {
        let domain = domain_from_segment(segment);
        let mut query = InsightQuery::new().domain(domain).limit(limit);
        if let Some(text) = text {
            query = query.text(text);
        }
        let found = self.memory.recall_insights(query).await?;
        Ok(found.into_iter().filter(|i| i.domain == domain).collect())
    }

    /// The text at `path`; `""` when nothing is there.
    pub async fn read(&self, path: &str) -> Result<String, MemoryError> {
        let start = Instant::now();
        let parsed = MemPath::parse(path)?;
        let segs = parsed.segs();
        let content = match segs.as_slice() {
            ["identity", "soul.md"] => self.soul.clone(),
            ["beliefs", domain, id] => match self
                .memory
                .belief_store()
                .get(self.memory.context(), id)
                .await?
            {
                Some(b)
                    if b.status == BeliefStatus::Active
                        && b.role_id == self.memory.agent_id()
                        && b.domain == domain_from_segment(domain) =>
                {
                    belief_text(&b)
                }
                _ => String::new(),
            },
            ["knowledge", domain, .., id] => match self.memory.get_insight(id).await? {
                Some(i) if i.domain == domain_from_segment(domain) => format!(
                    "{}\n\nConfidence: {}\nEvidence: {}",
                    i.content, i.confidence, i.evidence_count
                ),
                _ => String::new(),
            },
            ["experience", .., id] => match self.memory.get_episode(id).await? {
                Some(e) => format!(
                    "Action: {}\nInput: {}\nOutput: {}\nDuration: {}ms",
                    e.action, e.input_summary, e.output_summary, e.duration_ms
                ),
                None => String::new(),
            },
            ["raw", id] => match self
                .memory
                .raw_store()
                .get(self.memory.context(), id)
                .await?
            {
                Some(call) if call.agent_id == self.memory.agent_id() => raw_text(&call),
                _ => String::new(),
            },
            ["references", domain, .., id] => match self.references.workspace() {
                Some(_) => match self.references.workspace_fact(id).await? {
                    Some(f) if f.domain == domain_from_segment(domain) => {
                        self.references
                            .touch_workspace_facts(std::slice::from_ref(&f.id))
                            .await?;
                        format!(
                            "{}\n\nConfidence: {}\nSource: {}\nClassification: {}",
                            f.content, f.confidence, f.meta.source, f.meta.classification
                        )
                    }
                    _ => String::new(),
                },
                None => String::new(),
            },
            _ => String::new(),
        };
        let trace = RetrievalTrace {
            tokens_loaded: count(approx_tokens(&content)),
            ..RetrievalTrace::new(TraceAction::Read, parsed.display(parsed.dir))
        };
        self.trace(trace, start);
        Ok(content)
    }

    /// Records under `scope` (`/` for everything) whose text contains every
    /// term of `query`: insights, then references, then episodes.
    pub async fn search(&self, query: &str, scope: &str) -> Result<Vec<SearchHit>, MemoryError> {
        let start = Instant::now();
        let parsed = MemPath::parse(scope)?;
        let segs = parsed.segs();
        let root = segs.first().copied();
        let mut hits = Vec::new();
        if matches!(root, None | Some("beliefs")) {
            let domain = segs.get(1).map(|d| domain_from_segment(d));
            let terms: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
            let beliefs = self.memory.active_beliefs(domain).await?;
            hits.extend(
                beliefs
                    .into_iter()
                    .filter(|b| {
                        let text = b.statement.to_lowercase();
                        terms.iter().all(|t| text.contains(t.as_str()))
                    })
                    .take(SEARCH_LIMIT)
                    .map(|b| SearchHit {
                        path: format!("/beliefs/{}/{}", domain_segment(&b.domain), b.id),
                        content: b.statement,
                        confidence: Some(b.confidence),
                    }),
            );
        }
        if matches!(root, None | Some("knowledge")) {
            let insights = match segs.get(1) {
                Some(domain) => self.insights_in(domain, SEARCH_LIMIT, Some(query)).await?,
                None => {
                    self.memory
                        .recall_insights(InsightQuery::new().text(query).limit(SEARCH_LIMIT))
                        .await?
                }
            };
            hits.extend(insights.into_iter().map(|i| SearchHit {
                path: format!("/knowledge/{}/{}", domain_segment(&i.domain), i.id),
                content: i.content,
                confidence: Some(i.confidence),
            }));
        }
        if matches!(root, None | Some("references")) && self.references.workspace().is_some() {
            let wanted = segs.get(1).map(|d| domain_from_segment(d));
            let mut q = FactQuery::new().text(query).limit(SEARCH_LIMIT);
            if let Some(domain) = wanted {
                q = q.domain(domain);
            }
            let facts = self.references.workspace_facts(&q).await?;
            hits.extend(
                facts
                    .into_iter()
                    .filter(|f| wanted.is_none_or(|d| f.domain == d))
                    .map(|f| SearchHit {
                        path: format!("/references/{}/{}", domain_segment(&f.domain), f.id),
                        content: f.content,
                        confidence: Some(f.confidence),
                    }),
            );
        }
        if matches!(root, None | Some("experience")) {
            let episodes = self
                .memory
                .recall_episodes(EpisodeQuery::new().text(query).limit(SEARCH_LIMIT))
                .await?;
            hits.extend(episodes.into_iter().map(|e| SearchHit {
                path: format!("/experience/{}", e.id),
                content: e.output_summary,
                confidence: None,
            }));
        }
        let trace = RetrievalTrace {
            query: query.to_owned(),
            results_count: count(hits.len()),
            tokens_loaded: count(hits.iter().map(|h| approx_tokens(&h.content)).sum()),
            ..RetrievalTrace::new(TraceAction::Search, parsed.display(true))
        };
        self.trace(trace, start);
        Ok(hits)
    }

    /// [`MemoryFilesystem::write_with`] with default options.
    pub async fn write(&self, path: &str, content: &str) -> Result<(), MemoryError> {
        self.write_with(path, content, &WriteOptions::default())
            .await
    }

    /// Write `content` at `path`:
    ///
    /// - `/knowledge/<domain>/[<tag>/...]<id>` stores an insight (`_` = no
    ///   domain; `/knowledge/<domain>` alone gets a generated id);
    /// - `/experience/[<folder>/...]<id>` records an episode whose action is `<id>`.
    ///
    /// Other paths are read-only ([`MemoryError::ReadOnlyPath`]).
    pub async fn write_with(
        &self,
        path: &str,
        content: &str,
        options: &WriteOptions,
    ) -> Result<(), MemoryError> {
        let start = Instant::now();
        let parsed = MemPath::parse(path)?;
        let shown = parsed.display(false);
        if parsed.dir {
            return Err(MemoryError::InvalidPath {
                path: shown,
                reason: "names a directory; write to an entry".to_owned(),
            });
        }
        let segs = parsed.segs();
        match segs.as_slice() {
            ["knowledge", domain, rest @ ..] => {
                let (id, tags) = match rest {
                    [] => (format!("ins_{}", uuid::Uuid::new_v4().simple()), Vec::new()),
                    [tags @ .., id] => (
                        (*id).to_owned(),
                        tags.iter().map(|t| (*t).to_owned()).collect(),
                    ),
                };
                let insight = Insight {
                    id,
                    agent_id: self.role_id.clone(),
                    content: content.to_owned(),
                    confidence: options.confidence.unwrap_or(0.5),
                    evidence_count: 1,
                    domain: domain_from_segment(domain).to_owned(),
                    entity: options.entity.clone(),
                    tags,
                    ..Insight::default()
                };
                self.memory.store_insight(insight).await?;
            }
            ["experience", .., id] => {
                let episode = Episode {
                    id: (*id).to_owned(),
                    agent_id: self.role_id.clone(),
                    operator_id: options.operator_id.clone(),
                    node_name: options.node_name.clone(),
                    timestamp: Utc::now(),
                    action: (*id).to_owned(),
                    output_summary: truncate_chars(content, 200).to_owned(),
                    outcome: json!({ "content": content }),
                    domain: options.domain.clone(),
                    entity: options.entity.clone(),
                    ..Episode::default()
                };
                self.memory.record_episode(episode).await?;
            }
            ["knowledge"] | ["experience"] => {
                return Err(MemoryError::InvalidPath {
                    path: shown,
                    reason: "needs a name below the directory".to_owned(),
                });
            }
            _ => {
                return Err(MemoryError::ReadOnlyPath {
                    path: shown,
                    reason: "only /knowledge/ and /experience/ can be written (/raw/ is append-only, by the role's LLM; /beliefs/ are proposed by the learn step and approved by a person)".to_owned(),
                });
            }
        }
        self.trace(RetrievalTrace::new(TraceAction::Write, shown), start);
        Ok(())
    }
}

/// How `/beliefs/<domain>/<id>` reads: the statement, then who approved it
/// and what it rests on.
fn belief_text(b: &Belief) -> String {
    let mut out = format!(
        "{}\n\nConfidence: {}\nVersion: {}\nApproved by: {}",
        b.statement,
        b.confidence,
        b.version,
        b.decided_by.as_deref().unwrap_or("-"),
    );
    if b.constraint {
        out.push_str("\nConstraint: actions it bears on are proposed to a person");
    }
    if let Some(old) = &b.supersedes {
        out.push_str(&format!("\nSupersedes: {old}"));
    }
    if !b.insight_ids.is_empty() {
        let insights: Vec<String> = b
            .insight_ids
            .iter()
            .map(|i| format!("/knowledge/{}/{i}", domain_segment(&b.domain)))
            .collect();
        out.push_str(&format!("\nFrom insights: {}", insights.join(", ")));
    }
    out
}

/// How `/raw/<id>` reads: the call's facts, then the request and the answer.
fn raw_text(call: &RawCall) -> String {
    let who = if call.node_name.is_empty() {
        "a call outside a node".to_owned()
    } else {
        format!("{}/{}", call.operator_id, call.node_name)
    };
    let mut out = format!(
        "{who} via {}: {} tokens in, {} out\nTime: {}\nEpisode: {}\nLatency: {} ms\n",
        call.model,
        call.tokens_in,
        call.tokens_out,
        call.timestamp.to_rfc3339(),
        call.episode_id.as_deref().unwrap_or("-"),
        call.latency_us / 1000,
    );
    if !call.request.system.is_empty() {
        out.push_str("\n## System\n");
        out.push_str(&call.request.system);
        out.push('\n');
    }
    for message in &call.request.messages {
        out.push_str(&format!("\n## {:?}\n", message.role));
        out.push_str(&message.text());
        out.push('\n');
    }
    match (&call.response, &call.error) {
        (Some(response), _) => {
            out.push_str("\n## Response\n");
            out.push_str(&response.content);
            for tool in &response.tool_calls {
                out.push_str(&format!("\n[tool call {}: {}]", tool.name, tool.input));
            }
            out.push('\n');
        }
        (None, Some(error)) => {
            out.push_str("\n## Error\n");
            out.push_str(error);
            out.push('\n');
        }
        (None, None) => {}
    }
    out
}

fn sorted_domains<'a>(domains: impl Iterator<Item = &'a str>) -> Vec<String> {
    let set: std::collections::BTreeSet<&str> = domains.map(domain_segment).collect();
    set.into_iter().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_and_validated() {
        let p = MemPath::parse("/knowledge/revenue/").unwrap();
        assert_eq!(p.segments, vec!["knowledge", "revenue"]);
        assert!(p.dir);
        assert_eq!(p.display(true), "/knowledge/revenue/");
        assert_eq!(
            MemPath::parse("identity/soul.md").unwrap().display(false),
            "/identity/soul.md"
        );
        assert!(MemPath::parse("/").unwrap().segments.is_empty());
        assert!(MemPath::parse("").unwrap().segments.is_empty());
        for bad in [
            "/knowledge/../identity",
            "/knowledge/./x",
            "/knowledge//x",
            "//",
            "/a\u{0}b",
            "/a\nb",
        ] {
            assert!(
                matches!(MemPath::parse(bad), Err(MemoryError::InvalidPath { .. })),
                "{bad:?}"
            );
        }
        let long = format!("/knowledge/{}", "x".repeat(MAX_PATH_LEN));
        assert!(MemPath::parse(&long).is_err());
        let long_segment = format!("/knowledge/d/{}", "x".repeat(MAX_RECORD_ID_LEN + 1));
        assert!(MemPath::parse(&long_segment).is_err());
    }
}
