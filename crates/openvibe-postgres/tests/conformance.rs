//! The memory conformance suite (`openvibe-memory-testkit`), run unchanged
//! against PostgreSQL: every case gets a fresh, migrated schema. Without a
//! database the cases fail, or with `OPENVIBE_SKIP_PG=1` are reported as
//! skipped by name (never run against another backend).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

openvibe_memory_testkit::conformance_tests!(
    guard = |_test: &str| openvibe_memory_testkit::skip::database_url().is_some(),
    factory = || async {
        common::fresh_stores()
            .await
            .with_embedder(std::sync::Arc::new(
                openvibe_protocols::testing::HashEmbedder::new(
                    openvibe_memory_testkit::semantic::DIMENSIONS,
                ),
            ))
            .await
            .unwrap()
            .stores()
    }
);

#[tokio::test]
async fn vectors_wait_for_a_failed_embedder() {
    if openvibe_memory_testkit::skip::database_url().is_none() {
        return;
    }
    openvibe_memory_testkit::vectors::vectors_wait_for_a_failed_embedder(|embedder| async move {
        common::fresh_stores()
            .await
            .with_embedder(embedder)
            .await
            .unwrap()
            .stores()
    })
    .await;
}
