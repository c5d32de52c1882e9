//! [`InMemorySpaceStore`]: spaces in process. Each space keeps its log in
//! `seq` order and a `watch` channel of its head: a post appends under the
//! store's lock and publishes the new head, so every reader waiting in
//! [`SpaceStore::messages`] wakes (the in-process fan-out).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use chrono::Utc;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, MESSAGE_KIND, Member, MessageQuery, Page, PageQuery,
    SPACE_KIND, Space, SpaceMessage, SpaceQuery, SpaceStore, StoreError, Sweep, check_caller,
    merge_posted, parse_cursor, space_not_found, split_reposts, store_time,
};
use serde_json::json;
use tokio::sync::watch;
use tracing::Instrument;

use crate::audit::InMemoryAuditLog;
use crate::governed::Pass;
use crate::span::store_span;

#[derive(Debug)]
struct Entry {
    space: Space,
    log: BTreeMap<u64, SpaceMessage>,
    ids: HashMap<String, u64>,
    cursors: HashMap<String, u64>,
    head: watch::Sender<u64>,
}

impl Entry {
    fn new(space: Space) -> Self {
        Self {
            head: watch::Sender::new(space.head),
            space,
            log: BTreeMap::new(),
            ids: HashMap::new(),
            cursors: HashMap::new(),
        }
    }

    fn visible(&self, ctx: &CallerContext, now: chrono::DateTime<Utc>) -> bool {
        !self.space.meta.is_expired(now) && self.space.readable_by(ctx)
    }
}

/// [`SpaceStore`] in memory: per tenant, by id.
#[derive(Debug, Default)]
pub struct InMemorySpaceStore {
    tenants: RwLock<HashMap<String, BTreeMap<String, Entry>>>,
    audit: Arc<InMemoryAuditLog>,
}

fn poisoned() -> StoreError {
    StoreError::backend(
        "the in-memory space store's lock is poisoned (a writer panicked); recreate the store",
    )
}

impl InMemorySpaceStore {
    /// An empty store with a trail of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// Audit into `audit` (shared with other stores).
    #[must_use]
    pub fn with_audit(mut self, audit: Arc<InMemoryAuditLog>) -> Self {
        self.audit = audit;
        self
    }

    /// Apply `change` to the readable space `id` under the write lock and
    /// audit it as an update naming `transition` and `member`.
    fn change_members(
        &self,
        ctx: &CallerContext,
        id: &str,
        transition: &str,
        member: &str,
        change: impl FnOnce(&Space) -> Result<Space, StoreError>,
    ) -> Result<Space, StoreError> {
        check_caller(ctx)?;
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let entry = tenants
            .get_mut(ctx.tenant_id())
            .and_then(|t| t.get_mut(id))
            .filter(|e| e.visible(ctx, now))
            .ok_or_else(|| space_not_found(id))?;
        entry.space.require_manage(ctx)?;
        let mut next = change(&entry.space)?;
        next.meta.updated_at = now;
        let mut audit = AuditEntry::change(ctx, AuditOp::Update, SPACE_KIND, id, &next.meta);
        audit.filters = Some(json!({"transition": transition, "member": member}));
        self.audit.record(audit);
        entry.space = next.clone();
        Ok(next)
    }

    fn read_messages(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        query: &MessageQuery,
        limit: usize,
    ) -> Result<(Vec<SpaceMessage>, watch::Receiver<u64>), StoreError> {
        let now = Utc::now();
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let entry = tenants
            .get(ctx.tenant_id())
            .and_then(|t| t.get(space_id))
            .filter(|e| e.visible(ctx, now))
            .ok_or_else(|| space_not_found(space_id))?;
        let reader = ctx.owner_key();
        let found = entry
            .log
            .range(query.after.saturating_add(1)..)
            .map(|(_, m)| m)
            // A message is governed by its space (read above).
            .filter(|m| query.matches(m, &reader, now))
            .take(limit)
            .cloned()
            .collect();
        Ok((found, entry.head.subscribe()))
    }
}

/// Namespace maintenance of spaces and messages (see
/// [`NamespaceAdmin`](openvibe_protocols::NamespaceAdmin)).
impl InMemorySpaceStore {
    /// Spaces (`kind` [`SPACE_KIND`]) or messages per namespace in `ctx`'s
    /// tenant (expired records left out).
    pub(crate) fn namespace_counts(
        &self,
        ctx: &CallerContext,
        kind: &str,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let entries = tenants
            .get(ctx.tenant_id())
            .into_iter()
            .flat_map(|t| t.values());
        Ok(if kind == SPACE_KIND {
            crate::governed::counts(entries, |e| &e.space.meta)
        } else {
            crate::governed::counts(entries.flat_map(|e| e.log.values()), |m| &m.meta)
        })
    }

    /// Move at most `batch` spaces or messages from namespace `from` to
    /// `to` (audited).
    pub(crate) fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(table) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        Ok(if kind == SPACE_KIND {
            crate::governed::move_namespace(
                &self.audit,
                ctx,
                SPACE_KIND,
                table
                    .values_mut()
                    .map(|e| (e.space.id.as_str(), &mut e.space.meta)),
                from,
                to,
                batch,
            )
        } else {
            crate::governed::move_namespace(
                &self.audit,
                ctx,
                MESSAGE_KIND,
                table
                    .values_mut()
                    .flat_map(|e| e.log.values_mut())
                    .map(|m| (m.id.as_str(), &mut m.meta)),
                from,
                to,
                batch,
            )
        })
    }

    /// The spaces (with their messages) or messages (`kind`) `sweep`
    /// takes: counted, or at most a batch deleted (audited as deletes).
    pub(crate) fn sweep(
        &self,
        ctx: &CallerContext,
        kind: &str,
        sweep: &Sweep,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(table) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let limit = pass.limit();
        let delete = matches!(pass, Pass::Delete(_));
        let mut taken = 0u64;
        if kind == SPACE_KIND {
            let gone: Vec<String> = table
                .values()
                .filter(|e| sweep.takes_record(ctx, &e.space.meta, &e.space))
                .map(|e| e.space.id.clone())
                .take(limit)
                .collect();
            taken = gone.len() as u64;
            if !delete {
                return Ok(taken);
            }
            for id in gone {
                if let Some(e) = table.remove(&id) {
                    for m in e.log.values() {
                        self.audit.record(AuditEntry::change(
                            ctx,
                            AuditOp::Delete,
                            MESSAGE_KIND,
                            &m.id,
                            &m.meta,
                        ));
                    }
                    self.audit.record(AuditEntry::change(
                        ctx,
                        AuditOp::Delete,
                        SPACE_KIND,
                        &id,
                        &e.space.meta,
                    ));
                }
            }
            return Ok(taken);
        }
        for e in table.values_mut() {
            let left = limit - usize::try_from(taken).unwrap_or(limit);
            let gone: Vec<u64> = e
                .log
                .values()
                .filter(|m| sweep.takes_record(ctx, &m.meta, *m))
                .map(|m| m.seq)
                .take(left)
                .collect();
            taken += gone.len() as u64;
            if delete {
                for seq in gone {
                    if let Some(m) = e.log.remove(&seq) {
                        e.ids.remove(&m.id);
                        self.audit.record(AuditEntry::change(
                            ctx,
                            AuditOp::Delete,
                            MESSAGE_KIND,
                            &m.id,
                            &m.meta,
                        ));
                    }
                }
            }
            if usize::try_from(taken).unwrap_or(usize::MAX) >= limit {
                break;
            }
        }
        Ok(taken)
    }
}

#[async_trait]
impl SpaceStore for InMemorySpaceStore {
    async fn create(&self, ctx: &CallerContext, mut space: Space) -> Result<Space, StoreError> {
        let _span = store_span(SPACE_KIND, "create", ctx);
        let id = space.id.clone();
        let result = (|| {
            check_caller(ctx)?;
            if space.id.is_empty() {
                space.id = uuid::Uuid::new_v4().simple().to_string();
            }
            ctx.stamp(&mut space.meta);
            space.prepare_new(ctx)?;
            let now = store_time();
            let operation = format!("create space {}", space.id);
            crate::governed::place_new(ctx, &operation, SPACE_KIND, &mut space.meta, now, true)?;
            let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
            let table = tenants.entry(ctx.tenant_id().to_owned()).or_default();
            if let Some(existing) = table.get(&space.id)
                && !existing.space.meta.is_expired(now)
            {
                return if existing.visible(ctx, now) && existing.space.title == space.title {
                    Ok(existing.space.clone())
                } else {
                    Err(StoreError::conflict(format!("space `{}` exists", space.id)))
                };
            }
            self.audit.record(AuditEntry::change(
                ctx,
                AuditOp::Insert,
                SPACE_KIND,
                &space.id,
                &space.meta,
            ));
            table.insert(space.id.clone(), Entry::new(space.clone()));
            Ok(space)
        })();
        self.audit
            .refusal(ctx, AuditOp::Insert, SPACE_KIND, &id, result)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Space>, StoreError> {
        let _span = store_span(SPACE_KIND, "get", ctx);
        check_caller(ctx)?;
        let now = Utc::now();
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        Ok(tenants
            .get(ctx.tenant_id())
            .and_then(|t| t.get(id))
            .filter(|e| e.visible(ctx, now))
            .map(|e| e.space.clone()))
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &SpaceQuery,
    ) -> Result<Page<Space>, StoreError> {
        let _span = store_span(SPACE_KIND, "list", ctx);
        check_caller(ctx)?;
        let limit = query.checked_limit()?;
        let after = query.cursor.as_deref().map(parse_cursor).transpose()?;
        let scope = ctx.list_scope(&query.namespaces);
        self.audit.record(AuditEntry::search(
            ctx,
            SPACE_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        let now = Utc::now();
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let mut found: Vec<Space> = tenants
            .get(ctx.tenant_id())
            .into_iter()
            .flat_map(|t| t.values())
            .filter(|e| e.visible(ctx, now) && scope.contains(&e.space.meta.namespace))
            .map(|e| e.space.clone())
            .filter(|s| {
                after.as_ref().is_none_or(|(micros, id)| {
                    (s.meta.created_at.timestamp_micros(), &s.id) < (*micros, id)
                })
            })
            .collect();
        found.sort_by(|a, b| (b.meta.created_at, &b.id).cmp(&(a.meta.created_at, &a.id)));
        found.truncate(limit + 1);
        Ok(Page::of(found, limit))
    }

    async fn add_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        member: Member,
    ) -> Result<Space, StoreError> {
        let _span = store_span(SPACE_KIND, "add_member", ctx);
        let who = member.principal.clone();
        let result =
            self.change_members(ctx, space_id, "add_member", &who, |s| s.with_member(member));
        self.audit
            .refusal(ctx, AuditOp::Update, SPACE_KIND, space_id, result)
    }

    async fn remove_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        principal: &str,
    ) -> Result<Space, StoreError> {
        let _span = store_span(SPACE_KIND, "remove_member", ctx);
        let result = self.change_members(ctx, space_id, "remove_member", principal, |s| {
            s.without_member(principal)
        });
        self.audit
            .refusal(ctx, AuditOp::Update, SPACE_KIND, space_id, result)
    }

    async fn post_all(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        messages: Vec<SpaceMessage>,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        let _span = store_span(MESSAGE_KIND, "post", ctx);
        let result = (|| {
            check_caller(ctx)?;
            let now = store_time();
            let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
            let table = tenants
                .get_mut(ctx.tenant_id())
                .ok_or_else(|| space_not_found(space_id))?;
            table
                .get(space_id)
                .filter(|e| e.visible(ctx, now))
                .ok_or_else(|| space_not_found(space_id))?
                .space
                .require_post(ctx)?;
            // Message ids are unique in the tenant.
            let (known, mut fresh) = split_reposts(ctx, space_id, messages, |id| {
                table
                    .values()
                    .find_map(|e| e.ids.get(id).and_then(|seq| e.log.get(seq)))
                    .cloned()
            })?;
            let entry = table
                .get_mut(space_id)
                .ok_or_else(|| space_not_found(space_id))?;
            entry.space.prepare_post(ctx, &mut fresh, now)?;
            for m in &fresh {
                self.audit.record(AuditEntry::change(
                    ctx,
                    AuditOp::Insert,
                    MESSAGE_KIND,
                    &m.id,
                    &m.meta,
                ));
                entry.ids.insert(m.id.clone(), m.seq);
                entry.log.insert(m.seq, m.clone());
            }
            if let Some(last) = fresh.last() {
                entry.space.head = last.seq;
                entry.head.send_replace(last.seq);
            }
            Ok(merge_posted(known, fresh))
        })();
        self.audit
            .refusal(ctx, AuditOp::Insert, MESSAGE_KIND, space_id, result)
    }

    async fn messages(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        query: &MessageQuery,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        let span = crate::span::store_span_of(MESSAGE_KIND, "messages", ctx);
        async {
            check_caller(ctx)?;
            let (limit, wait) = query.checked()?;
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                let (found, mut head) = self.read_messages(ctx, space_id, query, limit)?;
                if !found.is_empty() || wait.is_zero() {
                    return Ok(found);
                }
                let seen = *head.borrow_and_update();
                let waiting = head.wait_for(|h| *h > seen.max(query.after));
                let woke = matches!(tokio::time::timeout_at(deadline, waiting).await, Ok(Ok(_)));
                if !woke {
                    // Timed out, or the space's channel closed (it was
                    // deleted): one last look.
                    return Ok(self.read_messages(ctx, space_id, query, limit)?.0);
                }
            }
        }
        .instrument(span)
        .await
    }

    async fn ack(&self, ctx: &CallerContext, space_id: &str, seq: u64) -> Result<u64, StoreError> {
        let _span = store_span(SPACE_KIND, "ack", ctx);
        check_caller(ctx)?;
        let now = Utc::now();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let entry = tenants
            .get_mut(ctx.tenant_id())
            .and_then(|t| t.get_mut(space_id))
            .filter(|e| e.visible(ctx, now))
            .ok_or_else(|| space_not_found(space_id))?;
        let head = entry.space.head;
        let cursor = entry.cursors.entry(ctx.owner_key()).or_insert(0);
        *cursor = (*cursor).max(seq.min(head));
        Ok(*cursor)
    }

    async fn cursor(&self, ctx: &CallerContext, space_id: &str) -> Result<u64, StoreError> {
        let _span = store_span(SPACE_KIND, "cursor", ctx);
        check_caller(ctx)?;
        let now = Utc::now();
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        let entry = tenants
            .get(ctx.tenant_id())
            .and_then(|t| t.get(space_id))
            .filter(|e| e.visible(ctx, now))
            .ok_or_else(|| space_not_found(space_id))?;
        Ok(entry.cursors.get(&ctx.owner_key()).copied().unwrap_or(0))
    }
}
