//! Query statements: every filter, the read rule, the order and the limit
//! in one SQL statement; with access tracking, one `UPDATE … RETURNING`.

use openvibe_protocols::{CallerContext, RecordFilter};

use crate::access::push_readable_in;
use crate::records::Record;
use crate::rows::columns;
use crate::sql::Sql;
use crate::text::{TextFilter, terms_filter};

/// How a record type is ordered and filtered by time.
pub struct Ordering {
    /// Result order after relevance, on alias `{a}`, e.g.
    /// `{a}confidence DESC, {a}created_at DESC, {a}id`.
    pub order: &'static str,
    /// The column `since` compares with.
    pub time: &'static str,
    /// Whether the record has a confidence column.
    pub confidence: bool,
}

pub(crate) const BY_CONFIDENCE: Ordering = Ordering {
    order: "{a}confidence DESC, {a}created_at DESC, {a}id",
    time: "created_at",
    confidence: true,
};

pub(crate) const BY_TIME: Ordering = Ordering {
    order: "{a}\"timestamp\" DESC, {a}id",
    time: "\"timestamp\"",
    confidence: false,
};

fn order_on(ordering: &Ordering, a: &str) -> String {
    ordering.order.replace("{a}", a)
}

/// `WHERE …` of a query on alias `f.`.
fn push_where(
    sql: &mut Sql,
    ctx: &CallerContext,
    f: &RecordFilter,
    text: &TextFilter,
    ordering: &Ordering,
) {
    sql.push(" WHERE f.tenant_id = ")
        .bind(ctx.tenant_id().to_owned());
    if let Some(agent) = &f.agent_id {
        sql.push(" AND f.agent_id = ").bind(agent.clone());
    }
    if let Some(entity) = &f.entity {
        sql.push(" AND f.entity = ").bind(entity.clone());
    }
    if let Some(domain) = &f.domain {
        sql.push(" AND f.domain = ").bind(domain.clone());
    }
    if !f.tags.is_empty() {
        sql.push(" AND f.tags && ")
            .bind(f.tags.to_vec())
            .push("::text[]");
    }
    if let TextFilter::Terms { all, .. } = text {
        sql.push(" AND f.search @@ ")
            .bind(all.clone())
            .push("::tsquery");
    }
    if ordering.confidence && f.min_confidence > 0.0 {
        sql.push(" AND f.confidence >= ").bind(f.min_confidence);
    }
    if let Some(since) = f.since {
        sql.push(&format!(" AND f.{} >= ", ordering.time))
            .bind(since);
    }
    if let Some(status) = f.status {
        sql.push(" AND f.status = ").bind(status.as_str());
    }
    if !f.episode_ids.is_empty() {
        sql.push(" AND f.episode_id = ANY(")
            .bind(f.episode_ids.clone())
            .push("::text[])");
    }
    if let Some((time, id)) = &f.after {
        // Keyset paging in ([confidence DESC,] time DESC, id) order.
        let t = ordering.time;
        let confidence = f.after_confidence.filter(|_| ordering.confidence);
        if let Some(c) = confidence {
            sql.push(" AND (f.confidence < ")
                .bind(c)
                .push(" OR (f.confidence = ")
                .bind(c);
        }
        sql.push(&format!(" AND (f.{t} < "))
            .bind(*time)
            .push(&format!(" OR (f.{t} = "))
            .bind(*time)
            .push(" AND f.id > ")
            .bind(id.clone())
            .push("))");
        if confidence.is_some() {
            sql.push("))");
        }
    }
    sql.push(" AND ");
    push_readable_in(
        sql,
        ctx,
        "f.",
        f.domain.as_deref(),
        &ctx.search_scope(&f.namespaces),
    );
}

/// The statement of a query, or `None` when it cannot return anything
/// (limit 0, a term no record can contain). Counts access when the filter
/// asks for it and the record type tracks access.
pub(crate) fn select<R: Record>(
    ctx: &CallerContext,
    f: &RecordFilter,
    ordering: &Ordering,
) -> Option<Sql> {
    let text = terms_filter(&f.terms);
    if f.limit == 0 || matches!(text, TextFilter::Impossible) {
        return None;
    }
    let track_access = f.track_access;
    let limit = i64::try_from(f.limit).unwrap_or(i64::MAX);
    let relevance = match (&text, f.relevance) {
        (TextFilter::Terms { exact, .. }, true) => Some(exact.clone()),
        _ => None,
    };
    let mut sql = if track_access && R::TRACKED {
        Sql::new("WITH picked AS (SELECT f.id")
    } else {
        Sql::new(&format!("SELECT {}", columns(R::COLS, "f.")))
    };
    // Relevance: how many terms match a whole word (every term matches at
    // least a word prefix, so this orders exactly like 2 per whole word and
    // 1 per prefix).
    if let Some(exact) = &relevance {
        sql.push(", (SELECT count(*) FROM unnest(")
            .bind(exact.clone())
            .push("::text[]) AS q(x) WHERE f.search @@ q.x::tsquery) AS relevance");
    }
    sql.push(&format!(" FROM {} f", R::TABLE));
    push_where(&mut sql, ctx, f, &text, ordering);
    let order = order_on(ordering, "f.");
    if relevance.is_some() {
        sql.push(&format!(" ORDER BY relevance DESC, {order}"));
    } else {
        sql.push(&format!(" ORDER BY {order}"));
    }
    sql.push(" LIMIT ").bind(limit);
    if track_access && R::TRACKED {
        // One statement: pick the ids in order, count the access, return
        // the updated rows in the same order.
        let rel = if relevance.is_some() {
            ", p.relevance"
        } else {
            ""
        };
        sql.push(&format!(
            "), upd AS (UPDATE {} u SET access_count = u.access_count + 1, last_accessed = now() \
             FROM picked p WHERE u.tenant_id = ",
            R::TABLE
        ))
        .bind(ctx.tenant_id().to_owned())
        .push(&format!(
            " AND u.id = p.id RETURNING {}{rel}) SELECT {} FROM upd ORDER BY {}{}",
            columns(R::COLS, "u."),
            columns(R::COLS, ""),
            if relevance.is_some() {
                "relevance DESC, "
            } else {
                ""
            },
            order_on(ordering, "")
        ));
    }
    Some(sql)
}
