//! Property tests of the contract's validators and small formats: for any
//! input they return a value or a typed error, never panic; formats with a
//! round trip keep it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{TimeZone, Utc};
use openvibe_protocols::{
    AuditOp, Classification, Episode, Fact, Insight, StoreError, content_hash, page_cursor,
    parse_cursor, text_terms, validate_episode, validate_fact, validate_insight,
    validate_record_id,
};
use openvibe_protocols::{MAX_WORD_LEN, check_label, check_tags};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Any text, with the characters validators care about over-represented:
/// NUL, separators, whitespace, non-ASCII, long words.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z \\t\\n\u{0}|:/@.-]{0,40}",
        "\\PC{0,200}",
        (1usize..3 * MAX_WORD_LEN).prop_map(|n| "w".repeat(n)),
    ]
}

fn only_invalid_input<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Ok(_) | Err(StoreError::InvalidInput { .. }))
}

proptest! {
    // Minimised failures are kept beside this file (`properties.regressions`)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn record_validators_return_a_value_or_invalid_input(
        id in text(), content in text(), entity in text(), domain in text(),
        tags in proptest::collection::vec(text(), 0..4), source in text(),
        confidence in any::<f64>(), importance in any::<f64>(), class in 0usize..4,
    ) {
        let fact = Fact::new(id.clone(), content.clone())
            .entity(entity.clone())
            .domain(domain.clone())
            .tags(tags.clone())
            .source(source)
            .classification(Classification::ALL[class])
            .confidence(confidence)
            .importance(importance);
        prop_assert!(only_invalid_input(validate_fact(&fact)));
        let insight = Insight::new(id.clone(), entity.clone(), content.clone(), confidence)
            .domain(domain.clone())
            .tags(tags.clone());
        prop_assert!(only_invalid_input(validate_insight(&insight)));
        let episode = Episode {
            id,
            agent_id: entity,
            action: content.clone(),
            input_summary: domain,
            output_summary: content,
            ..Episode::default()
        };
        prop_assert!(only_invalid_input(validate_episode(&episode)));
        prop_assert!(only_invalid_input(check_tags("tags", &tags)));
    }

    #[test]
    fn a_label_with_nul_or_over_the_limit_is_refused(label in text()) {
        let result = check_label("entity", &label);
        if label.contains('\u{0}') || label.len() > openvibe_protocols::MAX_LABEL_LEN {
            let refused = matches!(result, Err(StoreError::InvalidInput { .. }));
            prop_assert!(refused);
        } else {
            prop_assert!(result.is_ok());
        }
        prop_assert!(only_invalid_input(validate_record_id(&label)));
    }

    #[test]
    fn classifications_parse_exactly_their_names(s in text(), class in 0usize..4) {
        let c = Classification::ALL[class];
        prop_assert_eq!(c.as_str().parse::<Classification>().unwrap(), c);
        prop_assert_eq!(c.as_str().to_uppercase().parse::<Classification>().unwrap(), c);
        let parsed = s.parse::<Classification>();
        let known = Classification::ALL
            .iter()
            .any(|c| c.as_str().eq_ignore_ascii_case(s.trim()));
        prop_assert_eq!(parsed.is_ok(), known);
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_invalid_input(
        micros in -8_000_000_000_000_000i64..8_000_000_000_000_000i64, id in text(), junk in text(),
    ) {
        let at = Utc.timestamp_micros(micros).single().unwrap();
        let cursor = page_cursor(at, &id);
        prop_assert_eq!(parse_cursor(&cursor).unwrap(), (micros, id));
        prop_assert!(only_invalid_input(parse_cursor(&junk)));
    }

    #[test]
    fn search_terms_are_lowercase_words_without_repeats(s in text()) {
        let terms = text_terms(&s);
        for t in &terms {
            prop_assert!(!t.is_empty());
            prop_assert_eq!(t, &t.to_lowercase());
        }
        let mut unique = terms.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), terms.len());
    }

    #[test]
    fn content_hashes_are_stable_and_tagged(s in text()) {
        prop_assert_eq!(content_hash(&s), content_hash(&s));
        prop_assert!(content_hash(&s).starts_with("fnv1a64:"));
        prop_assert_eq!(content_hash(&s).len(), "fnv1a64:".len() + 16);
    }

    #[test]
    fn audit_operations_round_trip(s in text()) {
        for op in AuditOp::ALL {
            prop_assert_eq!(AuditOp::parse(op.as_str()), Some(op));
        }
        if let Some(op) = AuditOp::parse(&s) {
            prop_assert_eq!(op.as_str(), s);
        }
    }
}
