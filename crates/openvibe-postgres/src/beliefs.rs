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
    CallerContext, Page, PageQuery, StoreError, Verdict, check_caller, store_time, validate_belief,
};
use sqlx::PgPool;
use sqlx::postgres::PgRow;
use tracing::Instrument;

use crate::access::push_readable_in;
use crate::audit::AuditWriter;
use crate::error::{corrupt, store_error};
use crate::identity::{check_given_expiry, new_id, push_new_identity};
use crate::records::{
    GOVERNED_FIXED, Record, end_read, fetch_optional, fetch_page, governed_cols, not_found,
    select_readable,
};
use crate::rows::{col, columns, decode_meta};
use crate::span::span;
use crate::sql::Sql;
use crate::tx::{begin, begin_replacing_expired};

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
    "version",
    "status",
    "superseded_by",
    "decided_by",
    "decided_at",
    "reason",
];

impl Record for Belief {
    const KIND: &'static str = BELIEF_KIND;
    const TABLE: &'static str = "beliefs";
    const COLS: &'static [&'static str] = COLS;
    const TRACKED: bool = false;
    const FIXED: &'static str = GOVERNED_FIXED;
    const MUTABLE: &'static str =
        "status, superseded_by, decided_by, decided_at, reason, updated_at";

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

/// `UPDATE` of `b`'s transition columns ([`Belief::MUTABLE`]).
fn update_of(ctx: &CallerContext, b: &Belief) -> Sql {
    let mut sql = Sql::new(&format!("UPDATE beliefs SET ({}) = (", Belief::MUTABLE));
    sql.bind(b.status.as_str())
        .push(", ")
        .bind(b.superseded_by.clone())
        .push(", ")
        .bind(b.decided_by.clone())
        .push(", ")
        .bind(b.decided_at)
        .push(", ")
        .bind(b.reason.clone())
        .push(", ")
        .bind(b.meta.updated_at)
        .push(") WHERE tenant_id = ")
        .bind(ctx.tenant_id().to_owned())
        .push(" AND id = ")
        .bind(b.id.clone());
    sql
}

impl PgBeliefStore {
    async fn propose_unaudited(
        &self,
        ctx: &CallerContext,
        mut b: Belief,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        if b.id.is_empty() {
            b.id = new_id();
        }
        ctx.stamp(&mut b.meta);
        validate_belief(&b)?;
        check_given_expiry(b.meta.expires_at)?;
        let now = store_time();
        let placement = ctx.placement(&b.meta.namespace, &format!("propose belief {}", b.id))?;
        let expires_at = ctx.expiry(BELIEF_KIND, &placement.namespace, now, b.meta.expires_at)?;
        let mut tx =
            begin_replacing_expired(&self.pool, ctx, "beliefs", std::slice::from_ref(&b.id))
                .await?;
        let superseded = match &b.supersedes {
            Some(old) => Some(
                fetch_optional::<Belief>(&mut tx, select_readable::<Belief>(ctx, old, false))
                    .await?
                    .ok_or_else(|| not_found(BELIEF_KIND, old))?,
            ),
            None => None,
        };
        b.prepare_new(superseded.as_ref());
        let mut sql = Sql::new(
            "INSERT INTO beliefs (tenant_id, id, namespace, project_id, owner, created_at, \
             updated_at, classification, source, expires_at, role_id, statement, domain, \
             confidence, is_constraint, insight_ids, evidence, supersedes, version) VALUES (",
        );
        push_new_identity(&mut sql, ctx, &placement, b.id.clone(), now);
        sql.bind(b.meta.classification.as_str())
            .push(", ")
            .bind(b.meta.source.clone())
            .push(", ")
            .bind(expires_at)
            .push(", ")
            .bind(b.role_id.clone())
            .push(", ")
            .bind(b.statement.clone())
            .push(", ")
            .bind(b.domain.clone())
            .push(", ")
            .bind(b.confidence)
            .push(", ")
            .bind(b.constraint)
            .push(", ")
            .bind(b.insight_ids.clone())
            .push("::text[], ")
            .bind(i32::try_from(b.evidence).unwrap_or(i32::MAX))
            .push(", ")
            .bind(b.supersedes.clone())
            .push(", ")
            .bind(i32::try_from(b.version).unwrap_or(i32::MAX))
            .push(&format!(
                ") ON CONFLICT (tenant_id, id) DO NOTHING RETURNING {}",
                columns(COLS, "")
            ));
        if let Some(created) = fetch_optional::<Belief>(&mut tx, sql).await? {
            tx.commit().await.map_err(store_error)?;
            return Ok(created);
        }
        let existing =
            fetch_optional::<Belief>(&mut tx, select_readable::<Belief>(ctx, &b.id, false)).await?;
        end_read(tx);
        match existing {
            Some(e) if e.same_request(&b) => Ok(e),
            _ => Err(StoreError::conflict(format!(
                "belief `{}` exists and holds something else",
                b.id
            ))),
        }
    }

    async fn decide_unaudited(
        &self,
        ctx: &CallerContext,
        id: &str,
        verdict: &Verdict,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        let mut tx = begin(&self.pool, ctx).await?;
        let current = fetch_optional::<Belief>(&mut tx, select_readable::<Belief>(ctx, id, true))
            .await?
            .ok_or_else(|| not_found(BELIEF_KIND, id))?;
        let now = store_time();
        let next = current.decide_as(ctx, verdict, now)?;
        if let (BeliefStatus::Active, Some(old_id)) = (next.status, &next.supersedes) {
            let old =
                fetch_optional::<Belief>(&mut tx, select_readable::<Belief>(ctx, old_id, true))
                    .await?
                    .ok_or_else(|| not_found(BELIEF_KIND, old_id))?;
            let reason = format!("superseded by belief `{id}`");
            let retired = old.retired(&ctx.owner_key(), &reason, Some(id), now)?;
            update_of(ctx, &retired)
                .build()?
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        update_of(ctx, &next)
            .build()?
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(next)
    }

    async fn retire_unaudited(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError> {
        check_caller(ctx)?;
        let mut tx = begin(&self.pool, ctx).await?;
        let current = fetch_optional::<Belief>(&mut tx, select_readable::<Belief>(ctx, id, true))
            .await?
            .ok_or_else(|| not_found(BELIEF_KIND, id))?;
        let next = current.retire_as(ctx, reason, store_time())?;
        update_of(ctx, &next)
            .build()?
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
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
        let result = self
            .propose_unaudited(ctx, belief)
            .instrument(span(BELIEF_KIND, "propose", ctx))
            .await;
        self.audit
            .refusal(ctx, AuditOp::Insert, BELIEF_KIND, &id, result)
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
        let result = self
            .decide_unaudited(ctx, id, verdict)
            .instrument(span(BELIEF_KIND, "decide", ctx))
            .await;
        self.audit
            .refusal(ctx, AuditOp::Update, BELIEF_KIND, id, result)
    }

    async fn retire(
        &self,
        ctx: &CallerContext,
        id: &str,
        reason: &str,
    ) -> Result<Belief, StoreError> {
        let result = self
            .retire_unaudited(ctx, id, reason)
            .instrument(span(BELIEF_KIND, "retire", ctx))
            .await;
        self.audit
            .refusal(ctx, AuditOp::Update, BELIEF_KIND, id, result)
    }
}
