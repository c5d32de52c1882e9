//! [`InMemoryBeliefStore`]: beliefs in process on the governed-table
//! kernel ([`Kept`]): each transition a compare-and-set under the store's
//! lock (a superseding approval retires the old belief in the same
//! critical section), audited with it.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, BELIEF_KIND, Belief, BeliefQuery, BeliefStatus, BeliefStore, CallerContext, Page,
    StoreError, Verdict, check_caller, store_time, validate_belief,
};

use crate::audit::InMemoryAuditLog;
use crate::governed::{Kept, Table, audit_update, not_found, place_new, ready_new};

/// [`BeliefStore`] in memory: per tenant, by id.
#[derive(Debug)]
pub struct InMemoryBeliefStore(pub(crate) Kept<Table<Belief>>);

crate::governed::kept_store!(InMemoryBeliefStore, BELIEF_KIND, maintained);

impl InMemoryBeliefStore {
    fn propose_belief(&self, ctx: &CallerContext, mut b: Belief) -> Result<Belief, StoreError> {
        ready_new(ctx, &mut b, |b| validate_belief(b))?;
        let now = store_time();
        place_new(ctx, "propose", &mut b, now)?;
        self.0.tenants.changing(ctx, |table| {
            let superseded = match b.predecessor() {
                Some(old) => Some(
                    table
                        .readable(ctx, old)
                        .ok_or_else(|| not_found::<Belief>(old))?
                        .clone(),
                ),
                None => None,
            };
            if let Some(answer) = table.existing_answer(ctx, &b, now) {
                return answer;
            }
            b.prepare_new(superseded.as_ref());
            table.insert_new(&self.0.audit, ctx, b.clone());
            Ok(b)
        })
    }

    fn decide_belief(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        let now = store_time();
        self.0.tenants.changing(ctx, |table| {
            let current = table
                .readable(ctx, id)
                .ok_or_else(|| not_found::<Belief>(id))?
                .clone();
            let next = current.decide_as(ctx, verdict, now)?;
            // A superseding approval retires the old belief with it, or
            // nothing changes.
            if let (BeliefStatus::Active, Some(old_id)) = (&next.status, &next.supersedes) {
                let reason = format!("superseded by belief `{id}`");
                table.transition(&self.0.audit, ctx, old_id, |old| {
                    old.retired(&ctx.owner_key(), &reason, Some(id), now)
                })?;
            }
            let entry = table
                .readable_mut(ctx, id)
                .ok_or_else(|| not_found::<Belief>(id))?;
            audit_update(&self.0.audit, ctx, &current, &next);
            *entry = next.clone();
            Ok(next)
        })
    }
}

#[async_trait]
impl BeliefStore for InMemoryBeliefStore {
    async fn propose(&self, ctx: &CallerContext, belief: Belief) -> Result<Belief, StoreError> {
        let id = belief.id.clone();
        self.0
            .audited(ctx, BELIEF_KIND, AuditOp::Insert, "propose", &id, || {
                self.propose_belief(ctx, belief)
            })
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Belief>, StoreError> {
        self.0.get(ctx, id)
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &BeliefQuery,
    ) -> Result<Page<Belief>, StoreError> {
        self.0.list(
            ctx,
            query,
            &query.namespaces,
            query.cursor.as_deref(),
            |b, _| query.matches(b),
        )
    }

    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        self.0
            .audited(ctx, BELIEF_KIND, AuditOp::Update, "decide", id, || {
                self.decide_belief(ctx, id, verdict)
            })
    }

    async fn retire(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError> {
        self.0
            .audited(ctx, BELIEF_KIND, AuditOp::Update, "retire", id, || {
                self.0
                    .transition(ctx, id, |b, now| b.retire_as(ctx, reason, now))
            })
    }
}
