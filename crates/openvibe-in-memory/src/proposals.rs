//! [`InMemoryProposalStore`]: proposals in process on the governed-table
//! kernel ([`Kept`]): each transition a compare-and-set under the store's
//! lock, audited with it.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, CallerContext, Change, PROPOSAL_KIND, Page, Proposal, ProposalQuery, ProposalStatus,
    ProposalStore, StoreError, Verdict, check_caller, store_time, validate_proposal,
};
use serde_json::Value;

use crate::audit::InMemoryAuditLog;
use crate::governed::{Kept, Table, audit_update};
use crate::span::store_span;

/// [`ProposalStore`] in memory: per tenant, by id.
#[derive(Debug)]
pub struct InMemoryProposalStore(pub(crate) Kept<Table<Proposal>>);

crate::governed::kept_store!(InMemoryProposalStore, PROPOSAL_KIND, maintained);

#[async_trait]
impl ProposalStore for InMemoryProposalStore {
    async fn create(
        &self,
        ctx: &CallerContext,
        proposal: Proposal,
    ) -> Result<Proposal, StoreError> {
        let id = proposal.id.clone();
        self.0
            .audited(ctx, PROPOSAL_KIND, AuditOp::Insert, "create", &id, || {
                self.0.create(
                    ctx,
                    "create",
                    proposal,
                    |p| validate_proposal(p),
                    Proposal::prepare_new,
                )
            })
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Proposal>, StoreError> {
        self.0.get(ctx, id)
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &ProposalQuery,
    ) -> Result<Page<Proposal>, StoreError> {
        self.0.list(
            ctx,
            query,
            &query.namespaces,
            query.cursor.as_deref(),
            |p, now| query.matches(p, now),
        )
    }

    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Proposal, StoreError> {
        self.0
            .audited(ctx, PROPOSAL_KIND, AuditOp::Update, "decide", id, || {
                self.0
                    .transition(ctx, id, |p, now| p.decide_as(ctx, verdict, now))
            })
    }

    async fn claim(&self, ctx: &CallerContext, id: &str) -> Result<Proposal, StoreError> {
        self.0
            .audited(ctx, PROPOSAL_KIND, AuditOp::Update, "claim", id, || {
                self.0.transition(ctx, id, |p, now| p.claim_as(ctx, now))
            })
    }

    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: Result<Value, String>,
    ) -> Result<Proposal, StoreError> {
        self.0
            .audited(ctx, PROPOSAL_KIND, AuditOp::Update, "finish", id, || {
                self.0
                    .transition(ctx, id, |p, now| p.finish_as(ctx, &outcome, now))
            })
    }

    async fn expire_due(&self, ctx: &CallerContext, limit: usize) -> Result<u64, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "expire_due", ctx);
        check_caller(ctx)?;
        let now = store_time();
        let expired = self.0.tenants.changing_existing(ctx, |table| {
            let mut expired = 0;
            for p in table.entries_mut() {
                if expired >= limit as u64 {
                    break;
                }
                let due = p.status == ProposalStatus::Pending
                    && p.status_at(now) == ProposalStatus::Expired
                    && ctx.can_read(&p.meta, &p.domain)
                    && ctx
                        .require_change(&p.meta, Change::Write, String::new())
                        .is_ok();
                if !due {
                    continue;
                }
                let mut next = p.clone();
                next.status = ProposalStatus::Expired;
                next.meta.updated_at = now;
                audit_update(&self.0.audit, ctx, p, &next);
                *p = next;
                expired += 1;
            }
            Ok(expired)
        })?;
        Ok(expired.unwrap_or(0))
    }
}
