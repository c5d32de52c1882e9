//! A plain reference model of the store contract: what a query must return,
//! computed by filtering every record and sorting, with the contract's own
//! rules ([`CallerContext::can_read`], [`text_terms`], [`RecordFilter`](openvibe_protocols::RecordFilter)).
//! Backends are compared with it, not with each other.

use std::cmp::Reverse;

use openvibe_protocols::{CallerContext, Fact, FactQuery, Governed, text_terms};

/// How well `words` (a record's terms) match the query term `term`:
/// 2 = a whole word, 1 = the start of a word, 0 = no match.
fn term_quality(words: &[String], term: &str) -> u32 {
    if words.iter().any(|w| w == term) {
        2
    } else if words.iter().any(|w| w.starts_with(term)) {
        1
    } else {
        0
    }
}

/// The ids `FactStore::query(ctx, query)` must return over `facts` (as
/// stored: owner, tenant and project set by the store), in order.
pub fn fact_query(facts: &[Fact], ctx: &CallerContext, query: &FactQuery) -> Vec<String> {
    let f = query.filter();
    let scope = ctx.search_scope(&f.namespaces);
    let mut hits: Vec<(u32, &Fact)> = facts
        .iter()
        .filter(|fact| ctx.can_read_record(*fact))
        .filter(|fact| scope.contains(&fact.meta.namespace))
        .filter(|fact| f.entity.as_deref().is_none_or(|e| fact.entity == e))
        .filter(|fact| f.domain.as_deref().is_none_or(|d| fact.domain() == d))
        .filter(|fact| f.tags.is_empty() || fact.tags.iter().any(|t| f.tags.contains(t)))
        .filter(|fact| fact.confidence >= f.min_confidence)
        .filter(|fact| f.since.is_none_or(|s| fact.meta.created_at >= s))
        .filter_map(|fact| {
            let words = text_terms(&fact.content);
            let mut relevance = 0;
            for term in &f.terms {
                match term_quality(&words, term) {
                    0 => return None,
                    q => relevance += q,
                }
            }
            Some((if f.relevance { relevance } else { 0 }, fact))
        })
        .collect();
    hits.sort_by(|(ra, a), (rb, b)| {
        (
            Reverse(*ra),
            Reverse(a.confidence.to_bits()),
            Reverse(a.meta.created_at),
            &a.id,
        )
            .cmp(&(
                Reverse(*rb),
                Reverse(b.confidence.to_bits()),
                Reverse(b.meta.created_at),
                &b.id,
            ))
    });
    hits.into_iter()
        .take(f.limit)
        .map(|(_, fact)| fact.id.clone())
        .collect()
}

/// The id `FactStore::get(ctx, id)` must return over `facts`: the fact
/// when the caller may read it ([`CallerContext::can_read`]), else nothing.
pub fn fact_get(facts: &[Fact], ctx: &CallerContext, id: &str) -> Option<String> {
    facts
        .iter()
        .find(|f| f.id == id && f.meta.tenant_id == ctx.tenant_id())
        .filter(|f| ctx.can_read_record(*f))
        .map(|f| f.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_match_whole_words_before_prefixes() {
        let words = text_terms("Sponsorship of the VP");
        assert_eq!(term_quality(&words, "vp"), 2);
        assert_eq!(term_quality(&words, "sponsor"), 1);
        assert_eq!(term_quality(&words, "ponsor"), 0);
    }
}
