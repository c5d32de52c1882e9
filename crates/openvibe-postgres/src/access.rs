//! The read and modify rules as SQL predicates: records
//! ([`push_readable`], [`push_changeable`]) and knowledge
//! ([`push_knowledge_readable`], [`push_knowledge_filters`]), written once
//! from the contract's rule (`openvibe_protocols::read_allowed`,
//! `modify_allowed`, `knowledge_read_allowed`). The most security-critical
//! SQL of the crate: every read and change of every store goes through it.

use openvibe_protocols::{CallerContext, Change, Classification, KnowledgeFilter, NamespaceScope};

use crate::sql::Sql;

/// Classifications readable with `level` ([`Classification::readable_at`]).
fn readable_classes(level: Option<Classification>) -> Vec<&'static str> {
    Classification::ALL
        .into_iter()
        .filter(|c| c.readable_at(level))
        .map(Classification::as_str)
        .collect()
}

/// `CallerContext::sees_project` on `{a}project_id`.
pub(crate) fn push_project(sql: &mut Sql, ctx: &CallerContext, a: &str) {
    match ctx.project_id() {
        None => {
            sql.push(&format!("{a}project_id IS NULL"));
        }
        Some(p) => {
            sql.push(&format!("({a}project_id IS NULL OR {a}project_id = "))
                .bind(p.to_owned())
                .push(")");
        }
    }
}

/// `{a}namespace` within `scope` (nothing for [`NamespaceScope::All`]),
/// preceded by `" AND "`. One namespace is compared with `=`: the planner
/// then reads a namespace-leading index in result order
/// (`facts_namespace_order`), which it does not for `= ANY(…)`.
pub(crate) fn push_namespace_scope(sql: &mut Sql, scope: &NamespaceScope, a: &str) {
    if let NamespaceScope::Only(namespaces) = scope {
        match namespaces.as_slice() {
            [one] => {
                sql.push(&format!(" AND {a}namespace = ")).bind(one.clone());
            }
            _ => {
                sql.push(&format!(" AND {a}namespace = ANY("))
                    .bind(namespaces.clone())
                    .push("::text[])");
            }
        }
    }
}

/// The contract's read rule (`openvibe_protocols::read_allowed`: namespace
/// readable, project visible, and owned or cleared; the tenant is pinned by
/// the caller's statement) as a predicate on the row aliased `a` (`"f."`),
/// for a read by id (the caller's [`CallerContext::read_scope`]).
/// `domain`: the query's domain filter, when it has one (the clearance
/// then reduces to one list of classifications).
pub(crate) fn push_readable(sql: &mut Sql, ctx: &CallerContext, a: &str, domain: Option<&str>) {
    push_readable_in(sql, ctx, a, domain, &ctx.read_scope());
}

/// [`push_readable`] within `scope` (a search's
/// [`CallerContext::search_scope`], which lies within the read scope).
pub(crate) fn push_readable_in(
    sql: &mut Sql,
    ctx: &CallerContext,
    a: &str,
    domain: Option<&str>,
    scope: &NamespaceScope,
) {
    sql.push("(");
    push_project(sql, ctx, a);
    push_namespace_scope(sql, scope, a);
    sql.push(&format!(" AND ({a}owner = "))
        .bind(ctx.owner_key())
        .push(&format!(" OR {a}classification = ANY("));
    match domain {
        Some(d) => {
            sql.bind(readable_classes(ctx.clearance().level_for(d)))
                .push(")");
        }
        None => {
            let everywhere = ctx.clearance().everywhere;
            sql.bind(readable_classes(everywhere)).push(")");
            // Per-domain grants above the everywhere level: (domain, class) pairs.
            let mut domains = Vec::new();
            let mut classes = Vec::new();
            for (d, level) in &ctx.clearance().domains {
                for c in Classification::ALL {
                    if c.readable_at(Some(*level)) && !c.readable_at(everywhere) {
                        domains.push(d.clone());
                        classes.push(c.as_str());
                    }
                }
            }
            if !domains.is_empty() {
                sql.push(" OR EXISTS (SELECT 1 FROM unnest(")
                    .bind(domains)
                    .push("::text[], ")
                    .bind(classes)
                    .push(&format!(
                        "::text[]) AS g(d, c) WHERE g.d = {a}domain AND g.c = {a}classification)"
                    ));
            }
        }
    }
    sql.push("))");
}

/// `CallerContext::can_read && can_change(change)` on the row aliased `a`:
/// what an update, upsert or delete requires. Ungoverned: owned unless
/// privileged. Governed: a namespace with the right, and owned unless the
/// namespace grants manage (or the caller is privileged).
pub(crate) fn push_changeable(sql: &mut Sql, ctx: &CallerContext, a: &str, change: Change) {
    push_readable(sql, ctx, a, None);
    match ctx.grants() {
        None => {
            if !ctx.is_privileged() {
                sql.push(&format!(" AND {a}owner = ")).bind(ctx.owner_key());
            }
        }
        Some(g) => {
            let changeable: Vec<String> = g
                .changeable(change)
                .into_iter()
                .map(str::to_owned)
                .collect();
            sql.push(&format!(" AND {a}namespace = ANY("))
                .bind(changeable)
                .push("::text[])");
            if !ctx.is_privileged() {
                let managed: Vec<String> =
                    g.managed(change).into_iter().map(str::to_owned).collect();
                sql.push(&format!(" AND ({a}owner = "))
                    .bind(ctx.owner_key())
                    .push(&format!(" OR {a}namespace = ANY("))
                    .bind(managed)
                    .push("::text[]))");
            }
        }
    }
}

/// The knowledge read rule (`knowledge_read_allowed`) on alias `f.`: the
/// caller's project, and owned or (when `public`) public.
pub(crate) fn push_knowledge_readable(sql: &mut Sql, ctx: &CallerContext, public: bool) {
    sql.push("(");
    push_project(sql, ctx, "f.");
    push_namespace_scope(sql, &ctx.read_scope(), "f.");
    sql.push(" AND (f.owner = ").bind(ctx.owner_key());
    if public {
        sql.push(" OR f.is_public");
    }
    sql.push("))");
}

/// A knowledge search's filters besides ownership (tags, source, plan,
/// session: [`KnowledgeFilter`]) on alias `f.`, as
/// [`KnowledgeFilter::keeps`] decides them in memory.
pub(crate) fn push_knowledge_filters(sql: &mut Sql, filter: &KnowledgeFilter) {
    if !filter.tags.is_empty() {
        sql.push(" AND f.tags && ")
            .bind(filter.tags.clone())
            .push("::text[]");
    }
    if let Some(source) = &filter.source {
        sql.push(" AND f.source = ").bind(source.clone());
    }
    if let Some(plan) = &filter.plan_id {
        sql.push(" AND f.plan_id = ").bind(plan.clone());
    }
    if let Some(session) = &filter.session_id {
        sql.push(" AND f.session_id = ").bind(session.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_up_to_a_level() {
        assert_eq!(readable_classes(None), vec!["public"]);
        assert_eq!(
            readable_classes(Some(Classification::Confidential)),
            vec!["public", "internal", "confidential"]
        );
    }

    #[test]
    fn one_namespace_is_compared_with_equals_for_the_ordered_index() {
        let text = |scope: NamespaceScope| {
            let mut sql = Sql::new("");
            push_namespace_scope(&mut sql, &scope, "f.");
            sql.text().to_owned()
        };
        assert_eq!(
            text(NamespaceScope::Only(vec!["developer".into()])),
            " AND f.namespace = $1"
        );
        assert_eq!(
            text(NamespaceScope::Only(vec!["a".into(), "b".into()])),
            " AND f.namespace = ANY($1::text[])"
        );
        assert_eq!(text(NamespaceScope::All), "");
    }
}
