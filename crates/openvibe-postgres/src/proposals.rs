//! [`PgProposalStore`]: proposals in PostgreSQL (table `proposals`, migration
//! 0020). Each transition locks the row (`SELECT … FOR UPDATE` within the
//! caller's read rule), checks it with the contract's status machine and
//! writes it back in the same transaction, so of callers racing on one
//! proposal one wins and the others see the new status (a conflict). The
//! table's trigger audits every transition with its name.

use async_trait::async_trait;
use openvibe_protocols::{
    Action, AuditEntry, AuditOp, CallerContext, Change, Decision, PROPOSAL_KIND, Page, PageQuery,
    Proposal, ProposalQuery, ProposalStatus, ProposalStore, StoreError, Verdict, check_caller,
    store_time, table_of, validate_proposal,
};
use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::{push_changeable, push_readable_in};
use crate::audit::AuditWriter;
use crate::kept::{self, KeptRow};
use crate::records::{GOVERNED_FIXED, Record, fetch_page, governed_cols};
use crate::rows::{col, columns, decode_meta};
use crate::span::span;
use crate::sql::Sql;

/// Proposals in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgProposalStore {
    pool: PgPool,
    audit: AuditWriter,
}

crate::audit::audited_store!(PgProposalStore);

const COLS: &[&str] = governed_cols![
    "role_id",
    "domain",
    "summary",
    "outcome",
    "decision",
    "action",
    "assignee",
    "deadline",
    "status",
    "decided_by",
    "decided_at",
    "reason",
    "claimed_by",
    "claimed_at",
    "finished_at",
    "result",
    "error",
];

fn corrupt(id: &str, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("proposal `{id}` has a malformed {what}: {e}"))
}

fn json_col<T: serde::de::DeserializeOwned>(
    row: &PgRow,
    id: &str,
    name: &str,
) -> Result<Option<T>, StoreError> {
    col::<Option<Value>>(row, name)?
        .map(|v| serde_json::from_value(v).map_err(|e| corrupt(id, name, e)))
        .transpose()
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, StoreError> {
    serde_json::to_value(value)
        .map_err(|e| StoreError::backend(format!("a proposal does not serialise: {e}")))
}

impl Record for Proposal {
    const KIND: &'static str = PROPOSAL_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "status, decided_by, decided_at, reason, action, claimed_by, \
         claimed_at, finished_at, result, error, updated_at";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let outcome: String = col(row, "outcome")?;
        let status: String = col(row, "status")?;
        Ok(Proposal {
            meta: decode_meta(PROPOSAL_KIND, &id, row)?,
            role_id: col(row, "role_id")?,
            domain: col(row, "domain")?,
            summary: col(row, "summary")?,
            outcome: outcome
                .parse()
                .map_err(|e: String| corrupt(&id, "outcome", e))?,
            decision: json_col::<Decision>(row, &id, "decision")?,
            action: json_col::<Action>(row, &id, "action")?,
            assignee: col(row, "assignee")?,
            deadline: col(row, "deadline")?,
            status: ProposalStatus::parse(&status)
                .ok_or_else(|| corrupt(&id, "status", &status))?,
            decided_by: col(row, "decided_by")?,
            decided_at: col(row, "decided_at")?,
            reason: col(row, "reason")?,
            claimed_by: col(row, "claimed_by")?,
            claimed_at: col(row, "claimed_at")?,
            finished_at: col(row, "finished_at")?,
            result: col(row, "result")?,
            error: col(row, "error")?,
            id,
        })
    }
}

impl KeptRow for Proposal {
    const INSERTED: &'static str =
        "role_id, domain, summary, outcome, decision, action, assignee, deadline";

    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError> {
        let decision = self.decision.as_ref().map(to_json).transpose()?;
        let action = self.action.as_ref().map(to_json).transpose()?;
        sql.push(", ")
            .bind(self.role_id.clone())
            .push(", ")
            .bind(self.domain.clone())
            .push(", ")
            .bind(self.summary.clone())
            .push(", ")
            .bind(self.outcome.as_str())
            .push(", ")
            .bind(decision)
            .push(", ")
            .bind(action)
            .push(", ")
            .bind(self.assignee.clone())
            .push(", ")
            .bind(self.deadline);
        Ok(())
    }

    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError> {
        let action = self.action.as_ref().map(to_json).transpose()?;
        sql.bind(self.status.as_str())
            .push(", ")
            .bind(self.decided_by.clone())
            .push(", ")
            .bind(self.decided_at)
            .push(", ")
            .bind(self.reason.clone())
            .push(", ")
            .bind(action)
            .push(", ")
            .bind(self.claimed_by.clone())
            .push(", ")
            .bind(self.claimed_at)
            .push(", ")
            .bind(self.finished_at)
            .push(", ")
            .bind(self.result.clone())
            .push(", ")
            .bind(self.error.clone())
            .push(", ")
            .bind(self.meta.updated_at);
        Ok(())
    }
}

impl PgProposalStore {
    async fn list_unaudited(
        &self,
        ctx: &CallerContext,
        query: &ProposalQuery,
        limit: usize,
    ) -> Result<Page<Proposal>, StoreError> {
        check_caller(ctx)?;
        let scope = ctx.list_scope(&query.namespaces);
        let now = store_time();
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM proposals f WHERE f.tenant_id = ",
            columns(COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
        push_readable_in(&mut sql, ctx, "f.", None, &scope);
        match query.status {
            None => {}
            Some(ProposalStatus::Pending) => {
                sql.push(" AND f.status = 'pending' AND (f.deadline IS NULL OR f.deadline > ")
                    .bind(now)
                    .push(")");
            }
            Some(ProposalStatus::Expired) => {
                sql.push(" AND (f.status = 'expired' OR (f.status = 'pending' AND f.deadline <= ")
                    .bind(now)
                    .push("))");
            }
            Some(status) => {
                sql.push(" AND f.status = ").bind(status.as_str());
            }
        }
        for (column, value) in [
            ("role_id", &query.role_id),
            ("domain", &query.domain),
            ("assignee", &query.assignee),
        ] {
            if let Some(value) = value {
                sql.push(&format!(" AND f.{column} = ")).bind(value.clone());
            }
        }
        let page =
            fetch_page::<Proposal>(&self.pool, ctx, sql, limit, query.cursor.as_deref(), |p| {
                (p.meta.created_at, p.id.as_str())
            })
            .await?;
        Ok(Page {
            items: page.items.into_iter().map(|p| p.as_of(now)).collect(),
            next_cursor: page.next_cursor,
        })
    }

    async fn expire_unaudited(&self, ctx: &CallerContext, limit: usize) -> Result<u64, StoreError> {
        check_caller(ctx)?;
        if limit == 0 {
            return Ok(0);
        }
        let now = store_time();
        // Picked once (a materialized CTE): a subquery in `WHERE id IN (…)`
        // may run again per row updated, past its LIMIT.
        let mut sql = Sql::new(
            "WITH picked AS MATERIALIZED (SELECT f.id FROM proposals f WHERE f.tenant_id = ",
        );
        sql.bind(ctx.tenant_id().to_owned())
            .push(" AND f.status = 'pending' AND f.deadline <= ")
            .bind(now)
            .push(" AND ");
        push_changeable(&mut sql, ctx, "f.", Change::Write);
        sql.push(" ORDER BY f.deadline LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .push(
                " FOR UPDATE SKIP LOCKED) UPDATE proposals p SET status = 'expired', updated_at = ",
            )
            .bind(now)
            .push(" FROM picked WHERE p.tenant_id = ")
            .bind(ctx.tenant_id().to_owned())
            .push(" AND p.id = picked.id");
        crate::tx::execute_confined(&self.pool, ctx, sql).await
    }
}

#[async_trait]
impl ProposalStore for PgProposalStore {
    async fn create(
        &self,
        ctx: &CallerContext,
        proposal: Proposal,
    ) -> Result<Proposal, StoreError> {
        let id = proposal.id.clone();
        let create = kept::create(
            &self.pool,
            ctx,
            "create",
            proposal,
            |p| validate_proposal(p),
            Proposal::prepare_new,
        );
        kept::audited(
            &self.audit,
            ctx,
            PROPOSAL_KIND,
            AuditOp::Insert,
            "create",
            &id,
            create,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Proposal>, StoreError> {
        let found = crate::records::get::<Proposal>(&self.pool, ctx, id).await?;
        Ok(found.map(|p| p.as_of(store_time())))
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &ProposalQuery,
    ) -> Result<Page<Proposal>, StoreError> {
        let limit = query.checked_limit()?;
        self.audit.record_with(|| {
            AuditEntry::search(ctx, PROPOSAL_KIND, query, &query.namespaces, limit)
        });
        self.list_unaudited(ctx, query, limit)
            .instrument(span(PROPOSAL_KIND, "list", ctx))
            .await
    }

    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Proposal, StoreError> {
        let decide = kept::transition(&self.pool, ctx, id, |p: &Proposal, now| {
            p.decide_as(ctx, verdict, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            PROPOSAL_KIND,
            AuditOp::Update,
            "decide",
            id,
            decide,
        )
        .await
    }

    async fn claim(&self, ctx: &CallerContext, id: &str) -> Result<Proposal, StoreError> {
        let claim = kept::transition(&self.pool, ctx, id, |p: &Proposal, now| {
            p.claim_as(ctx, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            PROPOSAL_KIND,
            AuditOp::Update,
            "claim",
            id,
            claim,
        )
        .await
    }

    async fn finish(
        &self,
        ctx: &CallerContext,
        id: &str,
        outcome: Result<Value, String>,
    ) -> Result<Proposal, StoreError> {
        let finish = kept::transition(&self.pool, ctx, id, |p: &Proposal, now| {
            p.finish_as(ctx, &outcome, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            PROPOSAL_KIND,
            AuditOp::Update,
            "finish",
            id,
            finish,
        )
        .await
    }

    async fn expire_due(&self, ctx: &CallerContext, limit: usize) -> Result<u64, StoreError> {
        self.expire_unaudited(ctx, limit)
            .instrument(span(PROPOSAL_KIND, "expire_due", ctx))
            .await
    }
}
