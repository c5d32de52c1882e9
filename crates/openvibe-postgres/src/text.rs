//! Text search in SQL: the query side of the records' `tsvector` of
//! [`text_terms`](openvibe_protocols::text_terms) (prefix and whole-word
//! queries), so matching agrees with every backend.

use openvibe_protocols::{MAX_WORD_LEN, text_terms};

/// A text filter, resolved.
pub(crate) enum TextFilter {
    /// No terms: no filter.
    None,
    /// Every term as a prefix query (`'a':* & 'b':*`) and each term as an
    /// exact (whole-word) query, for relevance.
    Terms { all: String, exact: Vec<String> },
    /// A term longer than any stored word: nothing can match.
    Impossible,
}

fn quoted(term: &str) -> String {
    let mut out = String::with_capacity(term.len() + 2);
    out.push('\'');
    for c in term.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The text filter of a query string (see `text_terms`).
pub(crate) fn text_filter(text: Option<&str>) -> TextFilter {
    terms_filter(&text.map(text_terms).unwrap_or_default())
}

/// The text filter of a query's terms.
pub(crate) fn terms_filter(terms: &[String]) -> TextFilter {
    if terms.is_empty() {
        return TextFilter::None;
    }
    if terms.iter().any(|t| t.len() > MAX_WORD_LEN) {
        return TextFilter::Impossible;
    }
    let exact: Vec<String> = terms.iter().map(|t| quoted(t)).collect();
    let all = exact
        .iter()
        .map(|q| format!("{q}:*"))
        .collect::<Vec<_>>()
        .join(" & ");
    TextFilter::Terms { all, exact }
}

/// Whole-word queries for `content` (for `find_similar`): the quoted
/// words that can match, and how many words `content` has in total.
pub(crate) fn word_queries(content: &str) -> (Vec<String>, usize) {
    let words = text_terms(content);
    let total = words.len();
    let queries = words
        .iter()
        .filter(|w| w.len() <= MAX_WORD_LEN)
        .map(|w| quoted(w))
        .collect();
    (queries, total)
}

/// Space-separated terms (terms never contain spaces), for batch binds.
pub(crate) fn joined_terms(terms: &[String]) -> String {
    terms.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::{MAX_LABEL_LEN, check_label, check_text, record_terms};

    #[test]
    fn text_filters_quote_terms() {
        match text_filter(Some("VP sponsor, vp")) {
            TextFilter::Terms { all, exact } => {
                assert_eq!(all, "'vp':* & 'sponsor':*");
                assert_eq!(exact, vec!["'vp'", "'sponsor'"]);
            }
            _ => panic!("expected terms"),
        }
        assert!(matches!(text_filter(Some("  ")), TextFilter::None));
        assert!(matches!(
            text_filter(Some(&"x".repeat(MAX_WORD_LEN + 1))),
            TextFilter::Impossible
        ));
    }

    #[test]
    fn record_terms_keep_within_tsvector_limits() {
        assert_eq!(record_terms("fine words"), ["fine", "words"]);
        let long = "y".repeat(MAX_WORD_LEN + 1);
        assert_eq!(record_terms(&format!("a {long} b")), ["a", "b"]);
        assert!(check_label("entity", &"e".repeat(MAX_LABEL_LEN + 1)).is_err());
        assert!(check_text("content", "a\0b").is_err());
        assert!(
            openvibe_protocols::check_json("outcome", &serde_json::json!({"k": ["a\u{0}"]}))
                .is_err()
        );
    }
}
