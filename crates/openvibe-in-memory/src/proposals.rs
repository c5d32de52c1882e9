//! [`InMemoryProposalStore`]: proposals in process, each transition a
//! compare-and-set under the store's lock, audited with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use chrono::Utc;
use openvibe_protocols::{
    AuditEntry, AuditOp, CallerContext, Change, PROPOSAL_KIND, Page, PageQuery, Proposal,
    ProposalQuery, ProposalStatus, ProposalStore, StoreError, Verdict, check_caller, parse_cursor,
    validate_proposal,
};
use serde_json::Value;

use crate::audit::InMemoryAuditLog;
use crate::span::store_span;

/// [`ProposalStore`] in memory: per tenant, by id.
#[derive(Debug, Default)]
pub struct InMemoryProposalStore {
    tenants: RwLock<HashMap<String, BTreeMap<String, Proposal>>>,
    audit: Arc<InMemoryAuditLog>,
}

fn poisoned() -> StoreError {
    StoreError::backend(
        "the in-memory proposal store's lock is poisoned (a writer panicked); recreate the store",
    )
}

fn not_found(id: &str) -> StoreError {
    StoreError::NotFound {
        kind: PROPOSAL_KIND,
        id: id.to_owned(),
    }
}

impl InMemoryProposalStore {
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

    /// Apply `change` to the readable proposal `id` under the write lock,
    /// store the result and audit the transition. `operation` names it in
    /// refusals.
    fn transition(
        &self,
        ctx: &CallerContext,
        id: &str,
        change: impl FnOnce(&Proposal, chrono::DateTime<Utc>) -> Result<Proposal, StoreError>,
    ) -> Result<Proposal, StoreError> {
        check_caller(ctx)?;
        let now = Utc::now();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let current = tenants
            .get_mut(ctx.tenant_id())
            .and_then(|t| t.get_mut(id))
            .filter(|p| ctx.can_read(&p.meta, &p.domain))
            .ok_or_else(|| not_found(id))?;
        let next = change(current, now)?;
        let mut entry = AuditEntry::change(ctx, AuditOp::Update, PROPOSAL_KIND, id, &next.meta);
        entry.filters = Some(next.transition_detail(current));
        self.audit.record(entry);
        *current = next.clone();
        Ok(next.as_of(now))
    }
}

/// Namespace maintenance of proposals (see
/// [`NamespaceAdmin`](openvibe_protocols::NamespaceAdmin)).
impl InMemoryProposalStore {
    /// Proposals per namespace in `ctx`'s tenant (expired records left out).
    pub(crate) fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<BTreeMap<String, u64>, StoreError> {
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        Ok(crate::governed::counts(
            tenants
                .get(ctx.tenant_id())
                .into_iter()
                .flat_map(|t| t.values()),
            |p| &p.meta,
        ))
    }

    /// Move at most `batch` proposals from namespace `from` to `to` (audited).
    pub(crate) fn move_namespace(
        &self,
        ctx: &CallerContext,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(table) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        Ok(crate::governed::move_namespace(
            &self.audit,
            ctx,
            PROPOSAL_KIND,
            table.values_mut().map(|p| (p.id.as_str(), &mut p.meta)),
            from,
            to,
            batch,
        ))
    }

    /// The records `sweep` takes: counted, or at most a batch deleted
    /// (audited as deletes).
    pub(crate) fn sweep(
        &self,
        ctx: &CallerContext,
        sweep: &openvibe_protocols::Sweep,
        pass: crate::governed::Pass,
    ) -> Result<u64, StoreError> {
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(table) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        Ok(crate::governed::sweep(
            &self.audit,
            ctx,
            PROPOSAL_KIND,
            table,
            |p| &p.meta,
            sweep,
            pass,
        ))
    }
}

#[async_trait]
impl ProposalStore for InMemoryProposalStore {
    async fn create(
        &self,
        ctx: &CallerContext,
        mut proposal: Proposal,
    ) -> Result<Proposal, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "create", ctx);
        let id = proposal.id.clone();
        let result = (|| {
            check_caller(ctx)?;
            if proposal.id.is_empty() {
                proposal.id = uuid::Uuid::new_v4().simple().to_string();
            }
            ctx.stamp(&mut proposal.meta);
            validate_proposal(&proposal)?;
            let now = openvibe_protocols::store_time();
            let operation = format!("create proposal {}", proposal.id);
            crate::governed::place_new(
                ctx,
                &operation,
                PROPOSAL_KIND,
                &mut proposal.meta,
                now,
                true,
            )?;
            proposal.prepare_new();
            let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
            let table = tenants.entry(ctx.tenant_id().to_owned()).or_default();
            if let Some(existing) = table.get(&proposal.id) {
                let live = !existing.meta.is_expired(now);
                if live {
                    return if ctx.can_read(&existing.meta, &existing.domain)
                        && existing.same_request(&proposal)
                    {
                        Ok(existing.clone().as_of(now))
                    } else {
                        Err(StoreError::conflict(format!(
                            "proposal `{}` exists and proposes something else",
                            proposal.id
                        )))
                    };
                }
            }
            self.audit.record(AuditEntry::change(
                ctx,
                AuditOp::Insert,
                PROPOSAL_KIND,
                &proposal.id,
                &proposal.meta,
            ));
            table.insert(proposal.id.clone(), proposal.clone());
            Ok(proposal)
        })();
        self.audit
            .refusal(ctx, AuditOp::Insert, PROPOSAL_KIND, &id, result)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Proposal>, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "get", ctx);
        let now = Utc::now();
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        Ok(tenants
            .get(ctx.tenant_id())
            .and_then(|t| t.get(id))
            .filter(|p| ctx.can_read(&p.meta, &p.domain))
            .map(|p| p.clone().as_of(now)))
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &ProposalQuery,
    ) -> Result<Page<Proposal>, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "list", ctx);
        let limit = query.checked_limit()?;
        let after = query.cursor.as_deref().map(parse_cursor).transpose()?;
        let scope = ctx.list_scope(&query.namespaces);
        let now = Utc::now();
        let mut found: Vec<Proposal> = {
            let tenants = self.tenants.read().map_err(|_| poisoned())?;
            tenants
                .get(ctx.tenant_id())
                .map(|t| {
                    t.values()
                        .filter(|p| {
                            scope.contains(&p.meta.namespace)
                                && ctx.can_read(&p.meta, &p.domain)
                                && query.matches(p, now)
                        })
                        .filter(|p| {
                            after.as_ref().is_none_or(|(micros, id)| {
                                (p.meta.created_at.timestamp_micros(), p.id.as_str())
                                    < (*micros, id.as_str())
                            })
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        found.sort_by(|a, b| (b.meta.created_at, &b.id).cmp(&(a.meta.created_at, &a.id)));
        found.truncate(limit + 1);
        self.audit.record(AuditEntry::search(
            ctx,
            PROPOSAL_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        Ok(Page::of(
            found.into_iter().map(|p| p.as_of(now)).collect(),
            limit,
        ))
    }

    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Proposal, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "decide", ctx);
        let result = self.transition(ctx, id, |p, now| p.decide_as(ctx, verdict, now));
        self.audit
            .refusal(ctx, AuditOp::Update, PROPOSAL_KIND, id, result)
    }

    async fn claim(&self, ctx: &CallerContext, id: &str) -> Result<Proposal, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "claim", ctx);
        let result = self.transition(ctx, id, |p, now| p.claim_as(ctx, now));
        self.audit
            .refusal(ctx, AuditOp::Update, PROPOSAL_KIND, id, result)
    }

    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: Result<Value, String>,
    ) -> Result<Proposal, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "finish", ctx);
        let result = self.transition(ctx, id, |p, now| p.finish_as(ctx, &outcome, now));
        self.audit
            .refusal(ctx, AuditOp::Update, PROPOSAL_KIND, id, result)
    }

    async fn expire_due(&self, ctx: &CallerContext, limit: usize) -> Result<u64, StoreError> {
        let _span = store_span(PROPOSAL_KIND, "expire_due", ctx);
        check_caller(ctx)?;
        let now = Utc::now();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let Some(table) = tenants.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let mut expired = 0;
        for p in table.values_mut() {
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
            let mut entry =
                AuditEntry::change(ctx, AuditOp::Update, PROPOSAL_KIND, &next.id, &next.meta);
            entry.filters = Some(next.transition_detail(p));
            self.audit.record(entry);
            *p = next;
            expired += 1;
        }
        Ok(expired)
    }
}
