//! Spaces: shared environments where roles and people talk
//! ([`SpaceStore`], whose documentation states the rules).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallerContext, Change, Page, RecordMeta, StoreError};

/// The kind name of spaces (audit entries, errors, retention).
pub const SPACE_KIND: &str = "space";

/// The kind name of space messages (audit entries, errors, retention).
pub const MESSAGE_KIND: &str = "message";

/// The most members a space has.
pub const MAX_SPACE_MEMBERS: usize = 256;

/// The most spaces one list returns.
pub const MAX_SPACE_PAGE: usize = 1000;

/// The most messages one read returns.
pub const MAX_MESSAGE_PAGE: usize = 1000;

/// The longest a read waits for a new message, in milliseconds.
pub const MAX_WAIT_MS: u64 = 30_000;

/// A member of a space: an agent or a person, by owner key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Member {
    /// Owner key: `agent:cro`, `user:ann`, `service:x`.
    pub principal: String,
    /// May add and remove members.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub admin: bool,
    /// The domains it owns here: a message naming one is routed to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<String>,
}

impl Member {
    /// A member that owns no domain.
    pub fn new(principal: impl Into<String>) -> Self {
        Self {
            principal: principal.into(),
            admin: false,
            domains: Vec::new(),
        }
    }

    /// Make it an admin.
    #[must_use]
    pub fn admin(mut self) -> Self {
        self.admin = true;
        self
    }

    /// It owns `domains` (a role's identity's domains).
    #[must_use]
    pub fn owning<I, S>(mut self, domains: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Whether it is a person (`user:…`): escalations go to people.
    pub fn is_person(&self) -> bool {
        self.principal.starts_with("user:")
    }

    fn validate(&self, field: &str) -> Result<(), StoreError> {
        check_principal(&format!("{field}.principal"), &self.principal)?;
        for d in &self.domains {
            if d.trim().is_empty() {
                return Err(StoreError::invalid(
                    format!("{field}.domains"),
                    "must not contain an empty domain",
                ));
            }
            super::check_label(&format!("{field}.domains"), d)?;
        }
        Ok(())
    }
}

/// `Ok` when `value` is an owner key `kind:id` of an agent, user or service.
fn check_principal(field: &str, value: &str) -> Result<(), StoreError> {
    super::check_label(field, value)?;
    let ok = value.split_once(':').is_some_and(|(kind, id)| {
        matches!(kind, "agent" | "user" | "service") && !id.trim().is_empty()
    });
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid(
            field,
            format!("`{value}` is not an owner key (`agent:<id>`, `user:<id>` or `service:<id>`)"),
        ))
    }
}

/// A shared environment: its members and, in the store, its message log.
/// Fields marked *store* are set by the store; values given are ignored on
/// create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Space {
    /// Unique id within the tenant (the store generates one when empty).
    #[serde(default)]
    pub id: String,
    /// Governance metadata: the owner is its creator.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// What it is for.
    pub title: String,
    /// The domain it belongs to (clearance applies to it and its messages).
    #[serde(default)]
    pub domain: String,
    /// Its members (the creator is added as an admin).
    #[serde(default)]
    pub members: Vec<Member>,
    /// The `seq` of its last message, 0 when none (*store*).
    #[serde(default)]
    pub head: u64,
}

impl Space {
    /// A space titled `title`, its creator its only member.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            id: String::new(),
            meta: RecordMeta::default(),
            title: title.into(),
            domain: String::new(),
            members: Vec::new(),
            head: 0,
        }
    }

    /// Set the id.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Set the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.meta.namespace = namespace.into();
        self
    }

    /// Set the domain.
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = domain.into();
        self
    }

    /// Add a member.
    #[must_use]
    pub fn member(mut self, member: Member) -> Self {
        self.members.push(member);
        self
    }

    /// The member with owner key `principal`.
    pub fn find_member(&self, principal: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.principal == principal)
    }

    /// Whether `ctx` may read the space and its messages: it can read a
    /// record with its metadata and domain, and it is a member (or
    /// privileged).
    pub fn readable_by(&self, ctx: &CallerContext) -> bool {
        ctx.can_read(&self.meta, &self.domain)
            && (ctx.is_privileged() || self.find_member(&ctx.owner_key()).is_some())
    }

    /// `Ok` when `ctx` (which can read the space) may post to it: a
    /// member with the `write` right in its namespace.
    pub fn require_post(&self, ctx: &CallerContext) -> Result<(), StoreError> {
        let operation = format!("post to space {}", self.id);
        if self.find_member(&ctx.owner_key()).is_none() {
            return Err(ctx.unauthorized(operation, "only members post to a space"));
        }
        self.require_write(ctx, operation)
    }

    /// `Ok` when `ctx` (which can read the space) may change its members:
    /// an admin member with the `write` right, or the `manage` right in its
    /// namespace.
    pub fn require_manage(&self, ctx: &CallerContext) -> Result<(), StoreError> {
        let operation = format!("change the members of space {}", self.id);
        let rights = ctx.rights(&self.meta.namespace);
        if rights.manage && rights.write {
            return Ok(());
        }
        if !self.find_member(&ctx.owner_key()).is_some_and(|m| m.admin) {
            return Err(ctx.unauthorized(
                operation,
                "only a space admin or a manager of its namespace changes its members",
            ));
        }
        self.require_write(ctx, operation)
    }

    fn require_write(&self, ctx: &CallerContext, operation: String) -> Result<(), StoreError> {
        if ctx.rights(&self.meta.namespace).allows(Change::Write) {
            return Ok(());
        }
        Err(ctx.unauthorized(
            operation,
            format!(
                "the policy of namespace `{}` grants {} no write right",
                self.meta.namespace,
                ctx.principal()
            ),
        ))
    }

    /// Get a new space ready to store, created by `ctx`: its members
    /// checked and merged by principal (the creator is an admin), its head
    /// 0. Placement and expiry are the store's.
    pub fn prepare_new(&mut self, ctx: &CallerContext) -> Result<(), StoreError> {
        if !self.id.is_empty() {
            super::validate_record_id(&self.id)?;
        }
        if self.title.trim().is_empty() {
            return Err(StoreError::invalid("title", "must not be empty"));
        }
        super::check_label("title", &self.title)?;
        super::check_label("domain", &self.domain)?;
        let mut members = vec![Member::new(ctx.owner_key()).admin()];
        for (i, m) in self.members.iter().enumerate() {
            m.validate(&format!("members[{i}]"))?;
            merge_member(&mut members, m.clone());
        }
        if members.len() > MAX_SPACE_MEMBERS {
            return Err(StoreError::invalid(
                "members",
                format!("more than {MAX_SPACE_MEMBERS} members"),
            ));
        }
        self.members = members;
        self.head = 0;
        Ok(())
    }

    /// This space with `member` added (or its admin flag and domains
    /// replaced, when it is one already).
    pub fn with_member(&self, member: Member) -> Result<Self, StoreError> {
        member.validate("member")?;
        let mut next = self.clone();
        if let Some(m) = next
            .members
            .iter_mut()
            .find(|m| m.principal == member.principal)
        {
            *m = member;
        } else {
            next.members.push(member);
        }
        if next.members.len() > MAX_SPACE_MEMBERS {
            return Err(StoreError::invalid(
                "member",
                format!("space {} has {MAX_SPACE_MEMBERS} members already", self.id),
            ));
        }
        next.keep_an_admin()?;
        Ok(next)
    }

    /// This space without the member `principal`.
    pub fn without_member(&self, principal: &str) -> Result<Self, StoreError> {
        let mut next = self.clone();
        next.members.retain(|m| m.principal != principal);
        if next.members.len() == self.members.len() {
            return Err(StoreError::NotFound {
                kind: "member",
                id: format!("{}/{principal}", self.id),
            });
        }
        next.keep_an_admin()?;
        Ok(next)
    }

    fn keep_an_admin(&self) -> Result<(), StoreError> {
        if self.members.iter().any(|m| m.admin) {
            Ok(())
        } else {
            Err(StoreError::conflict(format!(
                "space {} would have no admin left",
                self.id
            )))
        }
    }

    /// Who a message from `from` naming `domain` (and the explicit
    /// recipients `to`) is for, and whether it was escalated: `to` (each a
    /// member) when given; else the owners of `domain` (other than the
    /// author); else, when nobody owns it, the space's people, escalated;
    /// else everyone (an empty list).
    pub fn route(
        &self,
        from: &str,
        domain: Option<&str>,
        to: &[String],
    ) -> Result<(Vec<String>, bool), StoreError> {
        if !to.is_empty() {
            let mut out: Vec<String> = Vec::with_capacity(to.len());
            for p in to {
                if self.find_member(p).is_none() {
                    // The space's members refuse it: a conflict with its state.
                    return Err(StoreError::conflict(format!(
                        "to: `{p}` is not a member of space {}",
                        self.id
                    )));
                }
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
            return Ok((out, false));
        }
        let Some(domain) = domain else {
            return Ok((Vec::new(), false));
        };
        let owners: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.principal != from && m.domains.iter().any(|d| d == domain))
            .map(|m| m.principal.clone())
            .collect();
        if !owners.is_empty() {
            return Ok((owners, false));
        }
        let people: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.is_person())
            .map(|m| m.principal.clone())
            .collect();
        if people.is_empty() {
            return Err(StoreError::conflict(format!(
                "domain: no member of space {} owns `{domain}` and it has no people to escalate to",
                self.id
            )));
        }
        Ok((people, true))
    }

    /// Get `messages` posted by `ctx` ready to append after the head:
    /// each checked, given an id (when empty), the space's namespace,
    /// project, classification and `expires_at`, its author, its recipients
    /// and its `seq`. The caller checked [`Space::require_post`] and
    /// removed the ones already stored (see [`SpaceMessage::same_post`]).
    pub fn prepare_post(
        &self,
        ctx: &CallerContext,
        messages: &mut [SpaceMessage],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        super::check_batch(messages.len())?;
        let owner = ctx.owner_key();
        let mut seq = self.head;
        for (i, m) in messages.iter_mut().enumerate() {
            validate_message(m).map_err(|e| super::at_index(i, e))?;
            if m.id.is_empty() {
                m.id = uuid::Uuid::new_v4().simple().to_string();
            }
            let (to, escalated) = self
                .route(&owner, m.domain.as_deref(), &m.to)
                .map_err(|e| super::at_index(i, e))?;
            seq += 1;
            m.space_id.clone_from(&self.id);
            m.seq = seq;
            m.to = to;
            m.escalated = escalated;
            m.meta = RecordMeta {
                tenant_id: self.meta.tenant_id.clone(),
                namespace: self.meta.namespace.clone(),
                project_id: self.meta.project_id.clone(),
                owner: owner.clone(),
                classification: self.meta.classification,
                source: ctx.source().unwrap_or(&owner).to_owned(),
                created_at: now,
                updated_at: now,
                expires_at: self.meta.expires_at,
            };
        }
        Ok(())
    }
}

fn merge_member(members: &mut Vec<Member>, m: Member) {
    match members.iter_mut().find(|x| x.principal == m.principal) {
        Some(x) => {
            x.admin |= m.admin;
            for d in m.domains {
                if !x.domains.contains(&d) {
                    x.domains.push(d);
                }
            }
        }
        None => members.push(m),
    }
}

/// A request one role delegates to the owner of a domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DelegationRequest {
    /// What is asked (the owning role decides on it like on any event).
    pub task: String,
    /// Its input (a JSON object).
    #[serde(default = "empty_object")]
    pub input: Value,
    /// After this instant the asker no longer waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

crate::vocabulary! {
    /// How a delegated request went.
    pub enum AnswerStatus {
        /// Done: `output` is the result.
        Done = "done",
        /// The owner refused (outside its authority, or it decided not to):
        /// `reason` says why.
        Refused = "refused",
        /// The owner proposed it to a person: a final answer follows once
        /// decided (`proposal` names the proposal).
        Proposed = "proposed",
        /// The owner escalated it to a person: a final answer follows.
        Escalated = "escalated",
        /// It was tried and failed: `reason` says how.
        Failed = "failed",
    }
}

impl AnswerStatus {
    /// Whether no further answer follows.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Proposed | Self::Escalated)
    }
}

/// The answer to a [`DelegationRequest`], posted in its thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DelegationAnswer {
    /// The id of the request message it answers.
    pub request: String,
    /// How it went.
    pub status: AnswerStatus,
    /// The result (when done).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub output: Value,
    /// Why (refused, failed), or the owner's note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The proposal waiting for a person (proposed, escalated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<String>,
}

/// What a message says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageBody {
    /// Free text.
    Text {
        /// The text.
        text: String,
    },
    /// A delegated request.
    Request(DelegationRequest),
    /// An answer to a delegated request.
    Answer(DelegationAnswer),
}

/// One message of a space's log. Fields marked *store* are set by the
/// store; values given are ignored on post.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpaceMessage {
    /// Unique within its tenant; posting the same id to the same space
    /// again returns the stored message (the store generates one when
    /// empty).
    #[serde(default)]
    pub id: String,
    /// Its space (*store*).
    #[serde(default)]
    pub space_id: String,
    /// Its place in the space's log, from 1 (*store*).
    #[serde(default)]
    pub seq: u64,
    /// Governance metadata, the space's (*store*); the owner is its author.
    #[serde(flatten)]
    pub meta: RecordMeta,
    /// The id of the message whose thread it continues (`None`: it starts
    /// one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Route it to the member owning this domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Who it is for (members' owner keys; empty: everyone). Given, or
    /// set by routing (*store*).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// Nobody owned its domain: it went to the space's people (*store*).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escalated: bool,
    /// What it says.
    pub body: MessageBody,
}

impl SpaceMessage {
    fn with_body(body: MessageBody) -> Self {
        Self {
            id: String::new(),
            space_id: String::new(),
            seq: 0,
            meta: RecordMeta::default(),
            thread: None,
            domain: None,
            to: Vec::new(),
            escalated: false,
            body,
        }
    }

    /// A text message.
    pub fn text(text: impl Into<String>) -> Self {
        Self::with_body(MessageBody::Text { text: text.into() })
    }

    /// A delegated request for the owner of `domain`.
    pub fn request(domain: impl Into<String>, task: impl Into<String>, input: Value) -> Self {
        let mut m = Self::with_body(MessageBody::Request(DelegationRequest {
            task: task.into(),
            input,
            deadline: None,
        }));
        m.domain = Some(domain.into());
        m
    }

    /// The answer to the request `request` (posted in its thread, to its
    /// author).
    pub fn answer(request: &SpaceMessage, answer: DelegationAnswer) -> Self {
        let mut m = Self::with_body(MessageBody::Answer(answer));
        m.thread = Some(request.thread_id().to_owned());
        m.to = vec![request.meta.owner.clone()];
        m
    }

    /// Set the id.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Continue the thread of `message_id`.
    #[must_use]
    pub fn in_thread(mut self, message_id: impl Into<String>) -> Self {
        self.thread = Some(message_id.into());
        self
    }

    /// Address it to `principal` (an owner key).
    #[must_use]
    pub fn to(mut self, principal: impl Into<String>) -> Self {
        self.to.push(principal.into());
        self
    }

    /// The id of its thread: the thread it continues, or its own.
    pub fn thread_id(&self) -> &str {
        self.thread.as_deref().unwrap_or(&self.id)
    }

    /// Whether it is for `principal` (an owner key): addressed to it, or to
    /// everyone.
    pub fn is_for(&self, principal: &str) -> bool {
        self.to.is_empty() || self.to.iter().any(|p| p == principal)
    }

    /// Whether `self` (stored) is what posting `given` again means: the
    /// same author, body and thread (a retried post).
    pub fn same_post(&self, given: &SpaceMessage, author: &str) -> bool {
        self.meta.owner == author && self.body == given.body && self.thread == given.thread
    }
}

/// The checks of a message to post: id, thread, domain and recipients are
/// bounded labels; a text is not empty; a request has a task and an
/// object input; an answer names its request.
pub fn validate_message(m: &SpaceMessage) -> Result<(), StoreError> {
    if !m.id.is_empty() {
        super::validate_record_id(&m.id)?;
    }
    super::check_opt_label("thread", m.thread.as_deref())?;
    if let Some(d) = &m.domain {
        if d.trim().is_empty() {
            return Err(StoreError::invalid("domain", "must not be empty"));
        }
        super::check_label("domain", d)?;
    }
    for p in &m.to {
        check_principal("to", p)?;
    }
    match &m.body {
        MessageBody::Text { text } => {
            if text.trim().is_empty() {
                return Err(StoreError::invalid("body.text", "must not be empty"));
            }
            super::check_content(text).map_err(|_| {
                StoreError::invalid("body.text", "too long or contains a NUL character")
            })?;
        }
        MessageBody::Request(r) => {
            if r.task.trim().is_empty() {
                return Err(StoreError::invalid("body.task", "must not be empty"));
            }
            super::check_text("body.task", &r.task)?;
            if !r.input.is_object() {
                return Err(StoreError::invalid("body.input", "must be a JSON object"));
            }
            super::check_json("body.input", &r.input)?;
        }
        MessageBody::Answer(a) => {
            if a.request.trim().is_empty() {
                return Err(StoreError::invalid("body.request", "must not be empty"));
            }
            super::check_label("body.request", &a.request)?;
            super::check_json("body.output", &a.output)?;
            if let Some(r) = &a.reason {
                super::check_text("body.reason", r)?;
            }
            super::check_opt_label("body.proposal", a.proposal.as_deref())?;
        }
    }
    Ok(())
}

/// Which spaces a list returns: those the caller is a member of, newest
/// first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpaceQuery {
    /// Only these namespaces (empty: every namespace the caller may read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// At most this many (1 to [`MAX_SPACE_PAGE`]).
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// Continue after the page that returned this cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

fn default_limit() -> usize {
    100
}

impl Default for SpaceQuery {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            limit: default_limit(),
            cursor: None,
        }
    }
}

impl SpaceQuery {
    /// Every space the caller is a member of, 100 a page.
    pub fn new() -> Self {
        Self::default()
    }
}

super::listed_by_creation!(Space);
super::page_query!(SpaceQuery => MAX_SPACE_PAGE, cursor; MessageQuery => MAX_MESSAGE_PAGE);

/// Which messages of a space a read returns: those after `after`, in
/// order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MessageQuery {
    /// Only messages with a greater `seq` (0: from the start).
    #[serde(default)]
    pub after: u64,
    /// At most this many (1 to [`MAX_MESSAGE_PAGE`]).
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// When none follows `after`, wait up to this many milliseconds for
    /// one (0 to [`MAX_WAIT_MS`]).
    #[serde(default)]
    pub wait_ms: u64,
    /// Only this thread (the id of its first message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Only messages for the caller (addressed to it or to everyone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub for_me: bool,
}

impl Default for MessageQuery {
    fn default() -> Self {
        Self {
            after: 0,
            limit: default_limit(),
            wait_ms: 0,
            thread: None,
            for_me: false,
        }
    }
}

impl MessageQuery {
    /// Messages after `seq`.
    pub fn after(seq: u64) -> Self {
        Self {
            after: seq,
            ..Self::default()
        }
    }

    /// Wait up to `ms` milliseconds when none follows.
    #[must_use]
    pub fn wait_ms(mut self, ms: u64) -> Self {
        self.wait_ms = ms;
        self
    }

    /// Only the thread `id`.
    #[must_use]
    pub fn thread(mut self, id: impl Into<String>) -> Self {
        self.thread = Some(id.into());
        self
    }

    /// Only messages for the caller.
    #[must_use]
    pub fn for_me(mut self) -> Self {
        self.for_me = true;
        self
    }

    /// The limit and the wait, checked.
    pub fn checked(&self) -> Result<(usize, std::time::Duration), StoreError> {
        let limit = super::check_limit(self.limit, MAX_MESSAGE_PAGE)?;
        if self.wait_ms > MAX_WAIT_MS {
            return Err(StoreError::invalid(
                "wait_ms",
                format!("must be at most {MAX_WAIT_MS}"),
            ));
        }
        super::check_opt_label("thread", self.thread.as_deref())?;
        if i64::try_from(self.after).is_err() {
            return Err(StoreError::invalid("after", "out of range"));
        }
        Ok((limit, std::time::Duration::from_millis(self.wait_ms)))
    }

    /// Whether the stored message `m` (after `after`) matches, for `reader`.
    pub fn matches(&self, m: &SpaceMessage, reader: &str, now: DateTime<Utc>) -> bool {
        m.seq > self.after
            && !m.meta.is_expired(now)
            && self
                .thread
                .as_deref()
                .is_none_or(|t| m.id == t || m.thread.as_deref() == Some(t))
            && (!self.for_me || m.is_for(reader))
    }
}

/// Spaces and their message logs. Every backend enforces these rules and
/// audits every change.
///
/// A space has **members** (agents and people, by owner key: `agent:cro`,
/// `user:ann`) and an append-only, ordered **message log**: each message
/// gets the next sequence number of its space (`seq`, from 1), and every
/// member keeps a **cursor** (the last `seq` it handled). Delivery is
/// at-least-once: a member reads what follows its cursor
/// ([`SpaceStore::messages`], which can wait for the next message), handles
/// it, then acknowledges ([`SpaceStore::ack`]); a member that was down
/// catches up from its cursor, and one that crashed between handling and
/// acknowledging sees the message again — handlers are idempotent by
/// message id (the cognitive loop runs an event id once).
///
/// **Routing by domain**: a message that names a `domain` (and no explicit
/// recipients) is addressed to the members that own the domain
/// ([`Member::domains`], a role's identity's domains). When no member owns
/// it, it is addressed to the space's people instead, marked `escalated`.
/// A message naming neither is for every member.
///
/// **Governance**, on every backend and over the wire: a space lives in a
/// namespace (placed like every record: the `write` right, the caller's
/// project, retention) with a classification and a domain (clearance);
/// only members read it and its messages (and privileged callers, for
/// maintenance); posting needs membership and the `write` right in its
/// namespace; adding or removing members needs a space admin with that
/// right, or the `manage` right. The author of a message is the caller,
/// never a field of the request. Creating spaces, changing members and
/// posting are audited; refusals too.
#[async_trait]
pub trait SpaceStore: Send + Sync {
    /// Create a space in `ctx`'s namespace (or the one it names, with the
    /// write right), `ctx` its owner and an admin member. Creating one with
    /// the id of an existing space returns that one when `ctx` is a member
    /// of it with the same title, else [`StoreError::Conflict`].
    async fn create(&self, ctx: &CallerContext, space: Space) -> Result<Space, StoreError>;

    /// The space `id`, when `ctx` may read it.
    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Space>, StoreError>;

    /// The spaces `ctx` may read (is a member of), newest first.
    async fn list(
        &self,
        ctx: &CallerContext,
        query: &SpaceQuery,
    ) -> Result<Page<Space>, StoreError>;

    /// Add `member` to the space (or replace its admin flag and domains).
    /// `ctx` must be allowed to change the members
    /// ([`Space::require_manage`]).
    async fn add_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        member: Member,
    ) -> Result<Space, StoreError>;

    /// Remove the member `principal` (the last admin stays).
    async fn remove_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        principal: &str,
    ) -> Result<Space, StoreError>;

    /// Append `messages`, in order, as `ctx` (a member with the write
    /// right): each gets the next `seq`. A message whose id is already in
    /// the space is not appended again: the stored one is returned when it
    /// is the same post by the same author, else [`StoreError::Conflict`]
    /// (and nothing of the batch is appended). Atomic: all or none.
    async fn post_all(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        messages: Vec<SpaceMessage>,
    ) -> Result<Vec<SpaceMessage>, StoreError>;

    /// Append one message ([`SpaceStore::post_all`]).
    async fn post(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        message: SpaceMessage,
    ) -> Result<SpaceMessage, StoreError> {
        self.post_all(ctx, space_id, vec![message])
            .await?
            .pop()
            .ok_or_else(|| StoreError::backend("a post returned no message"))
    }

    /// The messages of the space matching `query`, in `seq` order; when
    /// none follows `query.after` yet, waits up to `query.wait_ms` for one
    /// (then returns what there is, maybe nothing).
    async fn messages(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        query: &MessageQuery,
    ) -> Result<Vec<SpaceMessage>, StoreError>;

    /// Move `ctx`'s cursor in the space forward to `seq` (never back, never
    /// past the head); returns the cursor.
    async fn ack(&self, ctx: &CallerContext, space_id: &str, seq: u64) -> Result<u64, StoreError>;

    /// `ctx`'s cursor in the space: the last `seq` it acknowledged (0:
    /// none).
    async fn cursor(&self, ctx: &CallerContext, space_id: &str) -> Result<u64, StoreError>;
}

/// The [`StoreError::NotFound`] of a space nobody may see.
pub fn space_not_found(id: &str) -> StoreError {
    StoreError::NotFound {
        kind: SPACE_KIND,
        id: id.to_owned(),
    }
}

/// The messages of `batch` (posted to `space_id`) already stored, by the
/// stored message with that id in the tenant (`stored`), checked to be the
/// same post by `ctx` to the same space; the others, in order, to append.
/// Duplicates within the batch collapse to the first.
pub fn split_reposts(
    ctx: &CallerContext,
    space_id: &str,
    batch: Vec<SpaceMessage>,
    stored: impl Fn(&str) -> Option<SpaceMessage>,
) -> Result<(Vec<Option<SpaceMessage>>, Vec<SpaceMessage>), StoreError> {
    let author = ctx.owner_key();
    let mut known: Vec<Option<SpaceMessage>> = Vec::with_capacity(batch.len());
    let mut fresh: Vec<SpaceMessage> = Vec::new();
    for m in batch {
        if m.id.is_empty() {
            known.push(None);
            fresh.push(m);
            continue;
        }
        if let Some(s) = stored(&m.id) {
            if s.space_id != space_id || !s.same_post(&m, &author) {
                return Err(StoreError::conflict(format!(
                    "message `{}` exists and is another post",
                    m.id
                )));
            }
            known.push(Some(s));
        } else if fresh.iter().any(|f| f.id == m.id) {
            known.push(Some(SpaceMessage::text("").id(m.id.clone())));
        } else {
            known.push(None);
            fresh.push(m);
        }
    }
    Ok((known, fresh))
}

/// Put a post's result together: the stored reposts where `known` has one,
/// the appended messages (in order) elsewhere; a duplicate within the
/// batch gets the message appended for its id.
pub fn merge_posted(
    known: Vec<Option<SpaceMessage>>,
    appended: Vec<SpaceMessage>,
) -> Vec<SpaceMessage> {
    let mut fresh = appended.into_iter();
    let mut out: Vec<SpaceMessage> = Vec::with_capacity(known.len());
    for k in known {
        match k {
            Some(m) if m.seq == 0 => {
                if let Some(first) = out.iter().find(|o| o.id == m.id).cloned() {
                    out.push(first);
                }
            }
            Some(m) => out.push(m),
            None => {
                if let Some(m) = fresh.next() {
                    out.push(m);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn space() -> Space {
        let mut s = Space::new("deals")
            .id("s1")
            .member(Member::new("agent:cmo").owning(["marketing"]))
            .member(Member::new("user:ann"));
        s.prepare_new(&CallerContext::agent("cro")).unwrap();
        s
    }

    #[test]
    fn the_creator_is_an_admin_and_members_merge() {
        let s = space();
        assert_eq!(s.members[0], Member::new("agent:cro").admin());
        assert_eq!(s.members.len(), 3);
        let mut dup = Space::new("x").member(Member::new("agent:cro").owning(["revenue"]));
        dup.prepare_new(&CallerContext::agent("cro")).unwrap();
        assert_eq!(
            dup.members,
            vec![Member::new("agent:cro").admin().owning(["revenue"])]
        );
        let mut bad = Space::new("x").member(Member::new("cro"));
        assert!(bad.prepare_new(&CallerContext::agent("cro")).is_err());
        assert!(
            Space::new(" ")
                .prepare_new(&CallerContext::agent("cro"))
                .is_err()
        );
    }

    #[test]
    fn messages_route_by_domain_to_owners_or_people() {
        let s = space();
        assert_eq!(
            s.route("agent:cro", Some("marketing"), &[]).unwrap(),
            (vec!["agent:cmo".to_owned()], false)
        );
        assert_eq!(
            s.route("agent:cro", Some("finance"), &[]).unwrap(),
            (vec!["user:ann".to_owned()], true)
        );
        assert_eq!(s.route("agent:cro", None, &[]).unwrap(), (vec![], false));
        assert!(
            s.route("agent:cro", None, &["agent:cfo".to_owned()])
                .is_err()
        );
        let lonely = s.without_member("user:ann").unwrap();
        assert!(lonely.route("agent:cro", Some("finance"), &[]).is_err());
    }

    #[test]
    fn membership_keeps_an_admin() {
        let s = space();
        assert!(s.without_member("agent:cro").is_err());
        assert!(s.without_member("agent:nobody").is_err());
        let s2 = s.with_member(Member::new("user:ann").admin()).unwrap();
        assert!(s2.without_member("agent:cro").is_ok());
        assert!(s.with_member(Member::new("agent:cro")).is_err());
    }

    #[test]
    fn posts_are_numbered_and_stamped() {
        let s = space();
        let ctx = CallerContext::agent("cro");
        let mut batch = vec![
            SpaceMessage::request("marketing", "case study", json!({"deal": "acme"})).id("r1"),
            SpaceMessage::text("hello"),
        ];
        s.prepare_post(&ctx, &mut batch, Utc::now()).unwrap();
        assert_eq!((batch[0].seq, batch[1].seq), (1, 2));
        assert_eq!(batch[0].to, vec!["agent:cmo".to_owned()]);
        assert_eq!(batch[1].meta.owner, "agent:cro");
        assert!(!batch[1].id.is_empty());
        let answer = SpaceMessage::answer(
            &batch[0],
            DelegationAnswer {
                request: "r1".into(),
                status: AnswerStatus::Done,
                output: json!({"url": "x"}),
                reason: None,
                proposal: None,
            },
        );
        assert_eq!(answer.thread.as_deref(), Some("r1"));
        assert_eq!(answer.to, vec!["agent:cro".to_owned()]);
        let mut bad = vec![SpaceMessage::text("ok"), SpaceMessage::text(" ")];
        let err = s.prepare_post(&ctx, &mut bad, Utc::now()).unwrap_err();
        assert!(err.to_string().contains("[1]"), "{err}");
    }

    #[test]
    fn bodies_round_trip_as_tagged_json() {
        let m = SpaceMessage::request("marketing", "case study", json!({}));
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["body"]["type"], "request");
        assert_eq!(v["body"]["task"], "case study");
        let back: SpaceMessage = serde_json::from_value(v).unwrap();
        assert_eq!(back.body, m.body);
        let mut bad = m.clone();
        bad.body = MessageBody::Request(DelegationRequest {
            task: "x".into(),
            input: json!([1]),
            deadline: None,
        });
        assert!(validate_message(&bad).is_err());
    }

    #[test]
    fn reposts_are_found_and_compared() {
        let ctx = CallerContext::agent("cro");
        let mut stored = SpaceMessage::text("hi").id("a");
        stored.meta.owner = "agent:cro".into();
        stored.seq = 4;
        stored.space_id = "s1".into();
        let batch = vec![
            SpaceMessage::text("hi").id("a"),
            SpaceMessage::text("new").id("b"),
            SpaceMessage::text("new").id("b"),
        ];
        let (known, fresh) =
            split_reposts(&ctx, "s1", batch, |id| (id == "a").then(|| stored.clone())).unwrap();
        assert_eq!(fresh.len(), 1);
        let mut appended = fresh;
        appended[0].seq = 5;
        let out = merge_posted(known, appended);
        assert_eq!(out.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![4, 5, 5]);
        let clash = vec![SpaceMessage::text("other").id("a")];
        assert!(split_reposts(&ctx, "s1", clash, |_| Some(stored.clone())).is_err());
        let elsewhere = vec![SpaceMessage::text("hi").id("a")];
        assert!(split_reposts(&ctx, "s2", elsewhere, |_| Some(stored.clone())).is_err());
    }
}
