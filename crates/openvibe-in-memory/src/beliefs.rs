//! [`InMemoryBeliefStore`]: beliefs in process, each transition a
//! compare-and-set under the store's lock (a superseding approval retires
//! the old belief in the same critical section), audited with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditOp, BELIEF_KIND, Belief, BeliefQuery, BeliefStore, CallerContext, Page,
    PageQuery, StoreError, Verdict, check_caller, parse_cursor, store_time, validate_belief,
};

use crate::audit::InMemoryAuditLog;
use crate::span::store_span;

/// [`BeliefStore`] in memory: per tenant, by id.
#[derive(Debug, Default)]
pub struct InMemoryBeliefStore {
    tenants: RwLock<HashMap<String, BTreeMap<String, Belief>>>,
    audit: Arc<InMemoryAuditLog>,
}

fn poisoned() -> StoreError {
    StoreError::backend(
        "the in-memory belief store's lock is poisoned (a writer panicked); recreate the store",
    )
}

fn not_found(id: &str) -> StoreError {
    StoreError::NotFound {
        kind: BELIEF_KIND,
        id: id.to_owned(),
    }
}

impl InMemoryBeliefStore {
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

    fn record_transition(&self, ctx: &CallerContext, before: &Belief, after: &Belief) {
        let mut entry =
            AuditEntry::change(ctx, AuditOp::Update, BELIEF_KIND, &after.id, &after.meta);
        entry.filters = Some(after.transition_detail(before));
        self.audit.record(entry);
    }

    fn propose_belief(&self, ctx: &CallerContext, mut b: Belief) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        if b.id.is_empty() {
            b.id = uuid::Uuid::new_v4().simple().to_string();
        }
        ctx.stamp(&mut b.meta);
        validate_belief(&b)?;
        let now = store_time();
        let operation = format!("propose belief {}", b.id);
        crate::governed::place_new(ctx, &operation, BELIEF_KIND, &mut b.meta, now, true)?;
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let table = tenants.entry(ctx.tenant_id().to_owned()).or_default();
        let superseded = match &b.supersedes {
            Some(old) => Some(
                table
                    .get(old)
                    .filter(|o| ctx.can_read(&o.meta, &o.domain))
                    .ok_or_else(|| not_found(old))?
                    .clone(),
            ),
            None => None,
        };
        if let Some(existing) = table.get(&b.id)
            && !existing.meta.is_expired(now)
        {
            return if ctx.can_read(&existing.meta, &existing.domain) && existing.same_request(&b) {
                Ok(existing.clone())
            } else {
                Err(StoreError::conflict(format!(
                    "belief `{}` exists and holds something else",
                    b.id
                )))
            };
        }
        b.prepare_new(superseded.as_ref());
        self.audit.record(AuditEntry::change(
            ctx,
            AuditOp::Insert,
            BELIEF_KIND,
            &b.id,
            &b.meta,
        ));
        table.insert(b.id.clone(), b.clone());
        Ok(b)
    }

    fn decide_belief(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let table = tenants
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found(id))?;
        let current = table
            .get(id)
            .filter(|b| ctx.can_read(&b.meta, &b.domain))
            .ok_or_else(|| not_found(id))?
            .clone();
        let next = current.decide_as(ctx, verdict, now)?;
        // A superseding approval retires the old belief with it, or
        // nothing changes.
        let retired = match (&next.status, &next.supersedes) {
            (openvibe_protocols::BeliefStatus::Active, Some(old_id)) => {
                let old = table
                    .get(old_id)
                    .filter(|o| ctx.can_read(&o.meta, &o.domain))
                    .ok_or_else(|| not_found(old_id))?;
                let reason = format!("superseded by belief `{id}`");
                Some((
                    old.clone(),
                    old.retired(&ctx.owner_key(), &reason, Some(id), now)?,
                ))
            }
            _ => None,
        };
        if let Some((before, after)) = retired {
            self.record_transition(ctx, &before, &after);
            table.insert(after.id.clone(), after);
        }
        self.record_transition(ctx, &current, &next);
        table.insert(next.id.clone(), next.clone());
        Ok(next)
    }

    fn retire_belief(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        let now = store_time();
        let mut tenants = self.tenants.write().map_err(|_| poisoned())?;
        let current = tenants
            .get_mut(ctx.tenant_id())
            .and_then(|t| t.get_mut(id))
            .filter(|b| ctx.can_read(&b.meta, &b.domain))
            .ok_or_else(|| not_found(id))?;
        let next = current.retire_as(ctx, reason, now)?;
        self.record_transition(ctx, current, &next);
        *current = next.clone();
        Ok(next)
    }
}

/// Namespace maintenance of beliefs (see
/// [`NamespaceAdmin`](openvibe_protocols::NamespaceAdmin)).
impl InMemoryBeliefStore {
    /// Beliefs per namespace in `ctx`'s tenant (expired left out).
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
            |b| &b.meta,
        ))
    }

    /// Move at most `batch` beliefs from namespace `from` to `to` (audited).
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
            BELIEF_KIND,
            table.values_mut().map(|b| (b.id.as_str(), &mut b.meta)),
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
            BELIEF_KIND,
            table,
            |b| &b.meta,
            sweep,
            pass,
        ))
    }
}

#[async_trait]
impl BeliefStore for InMemoryBeliefStore {
    async fn propose(&self, ctx: &CallerContext, belief: Belief) -> Result<Belief, StoreError> {
        let _span = store_span(BELIEF_KIND, "propose", ctx);
        let id = belief.id.clone();
        let result = self.propose_belief(ctx, belief);
        self.audit
            .refusal(ctx, AuditOp::Insert, BELIEF_KIND, &id, result)
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Belief>, StoreError> {
        let _span = store_span(BELIEF_KIND, "get", ctx);
        let tenants = self.tenants.read().map_err(|_| poisoned())?;
        Ok(tenants
            .get(ctx.tenant_id())
            .and_then(|t| t.get(id))
            .filter(|b| ctx.can_read(&b.meta, &b.domain))
            .cloned())
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &BeliefQuery,
    ) -> Result<Page<Belief>, StoreError> {
        let _span = store_span(BELIEF_KIND, "list", ctx);
        let limit = query.checked_limit()?;
        let after = query.cursor.as_deref().map(parse_cursor).transpose()?;
        let scope = ctx.list_scope(&query.namespaces);
        let mut found: Vec<Belief> = {
            let tenants = self.tenants.read().map_err(|_| poisoned())?;
            tenants
                .get(ctx.tenant_id())
                .map(|t| {
                    t.values()
                        .filter(|b| {
                            scope.contains(&b.meta.namespace)
                                && ctx.can_read(&b.meta, &b.domain)
                                && query.matches(b)
                                && after.as_ref().is_none_or(|(micros, id)| {
                                    (b.meta.created_at.timestamp_micros(), b.id.as_str())
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
            BELIEF_KIND,
            query,
            &query.namespaces,
            limit,
        ));
        Ok(Page::of(found, limit))
    }

    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        let _span = store_span(BELIEF_KIND, "decide", ctx);
        let result = self.decide_belief(ctx, id, verdict);
        self.audit
            .refusal(ctx, AuditOp::Update, BELIEF_KIND, id, result)
    }

    async fn retire(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError> {
        let _span = store_span(BELIEF_KIND, "retire", ctx);
        let result = self.retire_belief(ctx, id, reason);
        self.audit
            .refusal(ctx, AuditOp::Update, BELIEF_KIND, id, result)
    }
}
