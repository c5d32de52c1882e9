//! [`InMemorySpaceStore`]: spaces in process. Each space keeps its log in
//! `seq` order and a `watch` channel of its head: a post appends under the
//! store's lock and publishes the new head, so every reader waiting in
//! [`SpaceStore::messages`] wakes (the in-process fan-out).

use std::collections::{BTreeMap, HashMap};

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, MESSAGE_KIND, Member, MessageQuery, Page, SPACE_KIND,
    Space, SpaceMessage, SpaceQuery, SpaceStore, StoreError, check_caller, member_change,
    merge_posted, space_not_found, split_reposts, store_time,
};
use tokio::sync::watch;
use tracing::Instrument;

use crate::audit::InMemoryAuditLog;
use crate::governed::{
    Holds, Kept, KindTable, Maintained, Pass, Swept, Table, counts, move_namespace, place_new,
    ready_new,
};
use crate::span::store_span;

/// A space with its log, the ids posted, its members' cursors and the
/// channel its head is published on.
#[derive(Debug)]
pub(crate) struct Entry {
    space: Space,
    log: BTreeMap<u64, SpaceMessage>,
    ids: HashMap<String, u64>,
    cursors: HashMap<String, u64>,
    head: watch::Sender<u64>,
}

impl Holds for Entry {
    type Record = Space;
    fn record(&self) -> &Space {
        &self.space
    }
    fn record_mut(&mut self) -> &mut Space {
        &mut self.space
    }
    fn hold(space: Space) -> Self {
        Self {
            head: watch::Sender::new(space.head),
            space,
            log: BTreeMap::new(),
            ids: HashMap::new(),
            cursors: HashMap::new(),
        }
    }
}

/// [`SpaceStore`] in memory: per tenant, by id.
#[derive(Debug)]
pub struct InMemorySpaceStore(pub(crate) Kept<Table<Entry>>);

crate::governed::kept_store!(InMemorySpaceStore, SPACE_KIND);

impl InMemorySpaceStore {
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
        self.0.tenants.changing(ctx, |table| {
            let entry = table
                .readable_mut(ctx, id)
                .ok_or_else(|| space_not_found(id))?;
            entry.space.require_manage(ctx)?;
            let mut next = change(&entry.space)?;
            next.meta.updated_at = now;
            let mut audit = AuditEntry::change(ctx, AuditOp::Update, SPACE_KIND, id, &next.meta);
            audit.filters = Some(member_change(transition, member));
            self.0.audit.record(audit);
            entry.space = next.clone();
            Ok(next)
        })
    }

    fn read_messages(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        query: &MessageQuery,
        limit: usize,
    ) -> Result<(Vec<SpaceMessage>, watch::Receiver<u64>), StoreError> {
        let now = Utc::now();
        self.0.tenants.reading(ctx, |table| {
            let entry = table
                .and_then(|t| t.readable(ctx, space_id))
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
        })?
    }
}

/// Namespace maintenance of spaces and their messages: a space's table,
/// and the messages in the spaces' logs.
#[async_trait]
impl Maintained for InMemorySpaceStore {
    fn keeps(&self, kind: &str) -> bool {
        [SPACE_KIND, MESSAGE_KIND].contains(&kind)
    }

    fn counts(&self, ctx: &CallerContext, kind: &str) -> Result<BTreeMap<String, u64>, StoreError> {
        self.0.tenants.reading(ctx, |table| {
            let Some(table) = table else {
                return BTreeMap::new();
            };
            if kind == SPACE_KIND {
                table.counts()
            } else {
                counts(
                    table
                        .entries()
                        .flat_map(|e| e.log.values().map(|m| &m.meta)),
                )
            }
        })
    }

    fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let audit = &self.0.audit;
        let moved = self.0.tenants.changing_existing(ctx, |table| {
            Ok(if kind == SPACE_KIND {
                table.move_namespace(audit, ctx, from, to, batch)
            } else {
                move_namespace(
                    audit,
                    ctx,
                    MESSAGE_KIND,
                    table
                        .entries_mut()
                        .flat_map(|e| e.log.values_mut())
                        .map(|m| (m.id.as_str(), &mut m.meta)),
                    from,
                    to,
                    batch,
                )
            })
        })?;
        Ok(moved.unwrap_or(0))
    }

    /// A space goes with its messages (audited before it); a message alone
    /// leaves its space's log.
    async fn sweep(
        &self,
        ctx: &CallerContext,
        kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        let audit = &self.0.audit;
        let sweep = swept.sweep;
        let taken = self.0.tenants.changing_existing(ctx, |table| {
            if kind == SPACE_KIND {
                let deleted = |e: &Entry| {
                    for m in e.log.values() {
                        audit.record(AuditEntry::change(
                            ctx,
                            AuditOp::Delete,
                            MESSAGE_KIND,
                            &m.id,
                            &m.meta,
                        ));
                    }
                };
                return Ok(table.sweep_with(audit, ctx, sweep, pass, deleted).0);
            }
            let limit = pass.limit();
            let mut taken = 0usize;
            for e in table.entries_mut() {
                let gone: Vec<u64> = e
                    .log
                    .values()
                    .filter(|m| sweep.takes_record(ctx, &m.meta, *m))
                    .map(|m| m.seq)
                    .take(limit - taken)
                    .collect();
                taken += gone.len();
                if pass != Pass::Count {
                    for seq in gone {
                        if let Some(m) = e.log.remove(&seq) {
                            e.ids.remove(&m.id);
                            audit.record(AuditEntry::change(
                                ctx,
                                AuditOp::Delete,
                                MESSAGE_KIND,
                                &m.id,
                                &m.meta,
                            ));
                        }
                    }
                }
                if taken >= limit {
                    break;
                }
            }
            Ok(taken as u64)
        })?;
        Ok(taken.unwrap_or(0))
    }
}

#[async_trait]
impl SpaceStore for InMemorySpaceStore {
    async fn create(&self, ctx: &CallerContext, mut space: Space) -> Result<Space, StoreError> {
        let id = space.id.clone();
        self.0
            .audited(ctx, SPACE_KIND, AuditOp::Insert, "create", &id, || {
                ready_new(ctx, &mut space, |s| s.prepare_new(ctx))?;
                let now = store_time();
                place_new(ctx, "create", &mut space, now)?;
                self.0.tenants.changing(ctx, |table| {
                    if let Some(answer) = table.existing_answer(ctx, &space, now) {
                        return answer;
                    }
                    table.insert_new(&self.0.audit, ctx, Entry::hold(space.clone()));
                    Ok(space)
                })
            })
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Space>, StoreError> {
        check_caller(ctx)?;
        self.0.get(ctx, id)
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &SpaceQuery,
    ) -> Result<Page<Space>, StoreError> {
        check_caller(ctx)?;
        self.0.list(
            ctx,
            query,
            &query.namespaces,
            query.cursor.as_deref(),
            |_, _| true,
        )
    }

    async fn add_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        member: Member,
    ) -> Result<Space, StoreError> {
        let who = member.principal.clone();
        self.0.audited(
            ctx,
            SPACE_KIND,
            AuditOp::Update,
            "add_member",
            space_id,
            || self.change_members(ctx, space_id, "add_member", &who, |s| s.with_member(member)),
        )
    }

    async fn remove_member(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        principal: &str,
    ) -> Result<Space, StoreError> {
        self.0.audited(
            ctx,
            SPACE_KIND,
            AuditOp::Update,
            "remove_member",
            space_id,
            || {
                self.change_members(ctx, space_id, "remove_member", principal, |s| {
                    s.without_member(principal)
                })
            },
        )
    }

    async fn post_all(
        &self,
        ctx: &CallerContext,
        space_id: &str,
        messages: Vec<SpaceMessage>,
    ) -> Result<Vec<SpaceMessage>, StoreError> {
        let post = || {
            check_caller(ctx)?;
            let now = store_time();
            let mut tenants = self.0.tenants.write()?;
            let table = tenants
                .get_mut(ctx.tenant_id())
                .ok_or_else(|| space_not_found(space_id))?;
            table
                .readable(ctx, space_id)
                .ok_or_else(|| space_not_found(space_id))?
                .space
                .require_post(ctx)?;
            // Message ids are unique in the tenant.
            let (known, mut fresh) = split_reposts(ctx, space_id, messages, |id| {
                table
                    .entries()
                    .find_map(|e| e.ids.get(id).and_then(|seq| e.log.get(seq)))
                    .cloned()
            })?;
            let entry = table
                .readable_mut(ctx, space_id)
                .ok_or_else(|| space_not_found(space_id))?;
            entry.space.prepare_post(ctx, &mut fresh, now)?;
            for m in &fresh {
                self.0.audit.record(AuditEntry::change(
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
        };
        self.0
            .audited(ctx, MESSAGE_KIND, AuditOp::Insert, "post", space_id, post)
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
        self.0.tenants.changing(ctx, |table| {
            let entry = table
                .readable_mut(ctx, space_id)
                .ok_or_else(|| space_not_found(space_id))?;
            let head = entry.space.head;
            let cursor = entry.cursors.entry(ctx.owner_key()).or_insert(0);
            *cursor = (*cursor).max(seq.min(head));
            Ok(*cursor)
        })
    }

    async fn cursor(&self, ctx: &CallerContext, space_id: &str) -> Result<u64, StoreError> {
        let _span = store_span(SPACE_KIND, "cursor", ctx);
        check_caller(ctx)?;
        self.0.tenants.reading(ctx, |table| {
            let entry = table
                .and_then(|t| t.readable(ctx, space_id))
                .ok_or_else(|| space_not_found(space_id))?;
            Ok(entry.cursors.get(&ctx.owner_key()).copied().unwrap_or(0))
        })?
    }
}
