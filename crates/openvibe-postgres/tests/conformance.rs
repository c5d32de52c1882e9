//! The backend-agnostic store conformance suite of `openvibe-memory`, run
//! unchanged against PostgreSQL: every case gets a fresh, migrated schema.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

openvibe_memory::conformance_tests!(|| async {
    match common::fresh_stores().await {
        Some(pg) => pg.stores(),
        None => {
            eprintln!("SKIPPED against Postgres: this case ran on the in-memory stores");
            openvibe_memory::Stores::in_memory()
        }
    }
});

#[test]
fn every_case_is_listed() {
    assert!(openvibe_memory::conformance::CASES.len() >= 40);
}
