//! The in-memory backend runs the whole store conformance suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

openvibe_memory::conformance_tests!(|| async { openvibe_memory::Stores::in_memory() });

#[test]
fn every_case_is_listed() {
    assert!(openvibe_memory::conformance::CASES.len() >= 40);
}
