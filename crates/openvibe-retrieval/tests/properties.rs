//! Property tests of the analyzer: for any text it returns lowercase,
//! non-empty terms and never panics, whatever dates the text names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_retrieval::analyze;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Any text, with the characters the analyzer splits on over-represented.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z \\t\\n\u{0}|:/@.-]{0,40}",
        "\\PC{0,200}",
    ]
}

/// Texts made of the words the analyzer's date recognition reads (days,
/// months, years at the edges of the calendar, relative expressions), in
/// any order.
fn date_words() -> impl Strategy<Value = String> {
    const WORDS: &[&str] = &[
        "last",
        "next",
        "past",
        "week",
        "weekend",
        "weeks",
        "month",
        "months",
        "day",
        "days",
        "of",
        "before",
        "after",
        "the",
        "beginning",
        "start",
        "end",
        "early",
        "mid",
        "late",
        "second",
        "4th",
        "1st",
        "31",
        "29",
        "0",
        "00",
        "february",
        "dec",
        "jan",
        "1000",
        "2999",
        "9999",
        "2024",
        "12",
        "02",
        "ago",
        "couple",
        "a",
        "yesterday",
        "tomorrow",
        "night",
        "friday",
        "sun",
        "-",
        ",",
    ];
    prop::collection::vec(prop::sample::select(WORDS), 0..24).prop_map(|w| w.join(" "))
}

proptest! {
    // Minimised failures are kept beside this file (`properties.regressions`)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn analysis_of_any_dates_gives_lowercase_terms(s in prop_oneof![text(), date_words()]) {
        for t in analyze(&s) {
            prop_assert!(!t.is_empty());
            prop_assert_eq!(&t, &t.to_lowercase());
        }
    }

}
