//! The memory conformance suite over the wire against PostgreSQL: the
//! remote client against a live service backed by a fresh, migrated schema
//! per case.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "../../openvibe-postgres/tests/common/mod.rs"]
mod common;

openvibe_memory_testkit::conformance_tests!(
    guard = |_test: &str| openvibe_memory_testkit::skip::database_url().is_some(),
    factory = || async {
        let stores = common::fresh_stores()
            .await
            .with_embedder(std::sync::Arc::new(
                openvibe_protocols::testing::HashEmbedder::new(
                    openvibe_memory_testkit::semantic::DIMENSIONS,
                ),
            ))
            .await
            .unwrap()
            .stores();
        support::remote_over(stores).await
    }
);
