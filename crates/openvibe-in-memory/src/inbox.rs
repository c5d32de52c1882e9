//! [`InMemoryInboxStore`]: the durable event inbox in process, on the
//! governed-table kernel ([`Kept`]): a lease takes the oldest free events
//! under the store's lock, each transition audited with it.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, CallerContext, Change, INBOX_KIND, InboxEvent, InboxOutcome, InboxQuery, InboxStore,
    KeptRecord, LeaseRequest, Page, Renewal, StoreError, check_caller, store_time,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::{Kept, Table};
use crate::span::store_span;

/// [`InboxStore`] in memory: per tenant, by id; each push counted for
/// the loops waiting on it ([`InboxStore::pushes`]).
#[derive(Debug)]
pub struct InMemoryInboxStore(
    pub(crate) Kept<Table<InboxEvent>>,
    tokio::sync::watch::Sender<u64>,
);

crate::governed::kept_store!(
    InMemoryInboxStore,
    INBOX_KIND,
    maintained,
    tokio::sync::watch::Sender::new(0)
);

#[async_trait]
impl InboxStore for InMemoryInboxStore {
    async fn push(&self, ctx: &CallerContext, event: InboxEvent) -> Result<InboxEvent, StoreError> {
        let id = openvibe_protocols::inbox_event_id(&event.role_id, &event.event.id);
        let pushed = self
            .0
            .audited(ctx, INBOX_KIND, AuditOp::Insert, "push", &id, || {
                self.0.create(
                    ctx,
                    "push",
                    event,
                    InboxEvent::check_new,
                    InboxEvent::prepare_new,
                )
            })?;
        self.1.send_modify(|n| *n = n.wrapping_add(1));
        Ok(pushed)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<InboxEvent>, StoreError> {
        self.0.get(ctx, id)
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &InboxQuery,
    ) -> Result<Page<InboxEvent>, StoreError> {
        self.0.list(
            ctx,
            query,
            &query.namespaces,
            query.cursor.as_deref(),
            |e, _| query.matches(e),
        )
    }

    async fn lease(
        &self,
        ctx: &CallerContext,
        request: &LeaseRequest,
    ) -> Result<Vec<InboxEvent>, StoreError> {
        let _span = store_span(INBOX_KIND, "lease", ctx);
        check_caller(ctx)?;
        request.validate()?;
        let now = store_time();
        let leased = self.0.tenants.changing_existing(ctx, |table| {
            let mut free: Vec<_> = table
                .entries()
                .filter(|e| {
                    request.roles.contains(&e.role_id)
                        && !e.meta.is_expired(now)
                        && e.leasable_at(now)
                        && KeptRecord::readable_by(*e, ctx)
                        && ctx
                            .require_change(&e.meta, Change::Write, String::new())
                            .is_ok()
                })
                .map(|e| (e.meta.created_at, e.id.clone()))
                .collect();
            free.sort();
            free.truncate(request.limit);
            free.into_iter()
                .map(|(_, id)| {
                    table.transition(&self.0.audit, ctx, &id, |e| {
                        e.lease_as(ctx, &request.holder, request.lease_ms, now)
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(leased.unwrap_or_default())
    }

    async fn renew(
        &self,
        ctx: &CallerContext,
        id: &str,
        renewal: &Renewal,
    ) -> Result<InboxEvent, StoreError> {
        self.0
            .audited(ctx, INBOX_KIND, AuditOp::Update, "renew", id, || {
                self.0
                    .transition(ctx, id, |e, now| e.renew_as(ctx, renewal, now))
            })
    }

    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: &InboxOutcome,
    ) -> Result<InboxEvent, StoreError> {
        self.0
            .audited(ctx, INBOX_KIND, AuditOp::Update, "finish", id, || {
                self.0
                    .transition(ctx, id, |e, now| e.finish_as(ctx, outcome, now))
            })
    }

    fn pushes(&self) -> Option<u64> {
        Some(*self.1.borrow())
    }

    async fn wait_for_push(&self, seen: u64, timeout: std::time::Duration) {
        let mut pushes = self.1.subscribe();
        let _ = tokio::time::timeout(timeout, pushes.wait_for(|n| *n != seen)).await;
    }
}
