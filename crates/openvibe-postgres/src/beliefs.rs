//! [`PgBeliefStore`]: beliefs in PostgreSQL (table `beliefs`, migration
//! 0022). Each transition locks the row (`SELECT … FOR UPDATE` within the
//! caller's read rule), checks it with the contract's rules
//! ([`Belief::decide_as`], [`Belief::retire_as`]) and writes it back in the
//! same transaction; a superseding approval locks and retires the old
//! belief in that transaction too. The table's trigger audits every
//! transition with its name.

use async_trait::async_trait;
use openvibe_protocols::{
    AuditEntry, AuditOp, BELIEF_KIND, Belief, BeliefQuery, BeliefStatus, BeliefStore,
    CallerContext, Page, PageQuery, StoreError, Verdict, check_caller, store_time, table_of,
    validate_belief,
};
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::push_readable_in;
use crate::audit::AuditWriter;
use crate::error::{corrupt, store_error};
use crate::kept::{self, KeptRow};
use crate::records::{
    GOVERNED_FIXED, Record, fetch_optional, fetch_page, governed_cols, not_found, select_readable,
};
use crate::rows::{col, columns, decode_meta};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::begin;

/// Beliefs in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgBeliefStore {
    pool: PgPool,
    audit: AuditWriter,
}

crate::audit::audited_store!(PgBeliefStore);

const COLS: &[&str] = governed_cols![
    "role_id",
    "statement",
    "domain",
    "confidence",
    "is_constraint",
    "insight_ids",
    "evidence",
    "supersedes",
    "refines",
    "version",
    "status",
    "superseded_by",
    "decided_by",
    "decided_at",
    "reason",
];

impl Record for Belief {
    const KIND: &'static str = BELIEF_KIND;
    const TABLE: &'static str = table_of(<Self as Record>::KIND);
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str = "status, supersedes, refines, superseded_by, decided_by, decided_at, reason, updated_at, is_constraint";

    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: String = col(row, "id")?;
        let status: String = col(row, "status")?;
        let evidence: i32 = col(row, "evidence")?;
        let version: i32 = col(row, "version")?;
        Ok(Belief {
            meta: decode_meta(BELIEF_KIND, &id, row)?,
            role_id: col(row, "role_id")?,
            statement: col(row, "statement")?,
            domain: col(row, "domain")?,
            confidence: col(row, "confidence")?,
            constraint: col(row, "is_constraint")?,
            insight_ids: col(row, "insight_ids")?,
            evidence: u32::try_from(evidence).map_err(|e| corrupt(BELIEF_KIND, &id, e))?,
            supersedes: col(row, "supersedes")?,
            refines: col(row, "refines")?,
            version: u32::try_from(version).map_err(|e| corrupt(BELIEF_KIND, &id, e))?,
            status: BeliefStatus::parse(&status)
                .ok_or_else(|| corrupt(BELIEF_KIND, &id, &status))?,
            superseded_by: col(row, "superseded_by")?,
            decided_by: col(row, "decided_by")?,
            decided_at: col(row, "decided_at")?,
            reason: col(row, "reason")?,
            id,
        })
    }
}

impl KeptRow for Belief {
    const INSERTED: &'static str = "role_id, statement, domain, confidence, is_constraint, \
         insight_ids, evidence, supersedes, refines, version";

    fn push_inserted(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.push(", ")
            .bind(self.role_id.clone())
            .push(", ")
            .bind(self.statement.clone())
            .push(", ")
            .bind(self.domain.clone())
            .push(", ")
            .bind(self.confidence)
            .push(", ")
            .bind(self.constraint)
            .push(", ")
            .bind(self.insight_ids.clone())
            .push("::text[], ")
            .bind(i32::try_from(self.evidence).unwrap_or(i32::MAX))
            .push(", ")
            .bind(self.supersedes.clone())
            .push(", ")
            .bind(self.refines.clone())
            .push(", ")
            .bind(i32::try_from(self.version).unwrap_or(i32::MAX));
        Ok(())
    }

    fn push_mutable(&self, sql: &mut Sql) -> Result<(), StoreError> {
        sql.bind(self.status.as_str())
            .push(", ")
            .bind(self.supersedes.clone())
            .push(", ")
            .bind(self.refines.clone())
            .push(", ")
            .bind(self.superseded_by.clone())
            .push(", ")
            .bind(self.decided_by.clone())
            .push(", ")
            .bind(self.decided_at)
            .push(", ")
            .bind(self.reason.clone())
            .push(", ")
            .bind(self.meta.updated_at)
            .push(", ")
            .bind(self.constraint);
        Ok(())
    }
}

impl PgBeliefStore {
    async fn propose_unaudited(
        &self,
        ctx: &CallerContext,
        mut b: Belief,
    ) -> Result<Belief, StoreError> {
        let placed = kept::ready_new(ctx, &mut b, "propose", |b| validate_belief(b))?;
        let mut tx = kept::begin_new(&self.pool, ctx, &b).await?;
        let superseded = match b.predecessor() {
            Some(old) => Some(
                fetch_optional::<Belief>(&mut tx, select_readable::<Belief>(ctx, old, false))
                    .await?
                    .ok_or_else(|| not_found(BELIEF_KIND, old))?,
            ),
            None => None,
        };
        b.prepare_new(superseded.as_ref());
        let insert = kept::insert_sql(ctx, &placed, &b)?;
        kept::insert_or_existing(tx, ctx, insert, &b).await
    }

    /// A superseding approval locks the old belief and retires it in the
    /// same transaction, or nothing changes.
    async fn decide_unaudited(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        let mut tx = begin(&self.pool, ctx).await?;
        let current = kept::lock::<Belief>(&mut tx, ctx, id).await?;
        let now = store_time();
        let next = current.decide_as(ctx, verdict, now)?;
        if let (BeliefStatus::Active, Some(old_id)) = (next.status, &next.supersedes) {
            let old = kept::lock::<Belief>(&mut tx, ctx, old_id).await?;
            let reason = format!("superseded by belief `{id}`");
            let retired = old.retired(&ctx.owner_key(), &reason, Some(id), now)?;
            kept::write_back(&mut tx, ctx, &retired).await?;
        }
        kept::write_back(&mut tx, ctx, &next).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(next)
    }

    async fn list_unaudited(
        &self,
        ctx: &CallerContext,
        query: &BeliefQuery,
        limit: usize,
    ) -> Result<Page<Belief>, StoreError> {
        check_caller(ctx)?;
        let scope = ctx.list_scope(&query.namespaces);
        let mut sql = Sql::new(&format!(
            "SELECT {} FROM beliefs f WHERE f.tenant_id = ",
            columns(COLS, "f.")
        ));
        sql.bind(ctx.tenant_id().to_owned()).push(" AND ");
        push_readable_in(&mut sql, ctx, "f.", None, &scope);
        if let Some(status) = query.status {
            sql.push(" AND f.status = ").bind(status.as_str());
        }
        for (column, value) in [("role_id", &query.role_id), ("domain", &query.domain)] {
            if let Some(value) = value {
                sql.push(&format!(" AND f.{column} = ")).bind(value.clone());
            }
        }
        let page =
            fetch_page::<Belief>(&self.pool, ctx, sql, limit, query.cursor.as_deref(), |p| {
                (p.meta.created_at, p.id.as_str())
            })
            .await?;
        Ok(page)
    }
}

#[async_trait]
impl BeliefStore for PgBeliefStore {
    async fn propose(&self, ctx: &CallerContext, belief: Belief) -> Result<Belief, StoreError> {
        let id = belief.id.clone();
        let propose = self.propose_unaudited(ctx, belief);
        kept::audited(
            &self.audit,
            ctx,
            BELIEF_KIND,
            AuditOp::Insert,
            "propose",
            &id,
            propose,
        )
        .await
    }

    async fn get(&self, ctx: &CallerContext, id: &str) -> Result<Option<Belief>, StoreError> {
        crate::records::get::<Belief>(&self.pool, ctx, id).await
    }

    async fn list(
        &self,
        ctx: &CallerContext,
        query: &BeliefQuery,
    ) -> Result<Page<Belief>, StoreError> {
        let limit = query.checked_limit()?;
        self.audit
            .record_with(|| AuditEntry::search(ctx, BELIEF_KIND, query, &query.namespaces, limit));
        self.list_unaudited(ctx, query, limit)
            .instrument(span(BELIEF_KIND, "list", ctx))
            .await
    }

    async fn decide(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        let decide = self.decide_unaudited(ctx, id, verdict);
        kept::audited(
            &self.audit,
            ctx,
            BELIEF_KIND,
            AuditOp::Update,
            "decide",
            id,
            decide,
        )
        .await
    }

    async fn retire(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError> {
        let retire = kept::transition(&self.pool, ctx, id, |b: &Belief, now| {
            b.retire_as(ctx, reason, now)
        });
        kept::audited(
            &self.audit,
            ctx,
            BELIEF_KIND,
            AuditOp::Update,
            "retire",
            id,
            retire,
        )
        .await
    }
}
