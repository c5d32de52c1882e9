//! The in-memory backend runs the whole store conformance suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use openvibe_protocols::testing::HashEmbedder;

openvibe_memory_testkit::conformance_tests!(|| async {
    openvibe_in_memory::in_memory_stores_with_embedder(Arc::new(HashEmbedder::new(
        openvibe_memory_testkit::semantic::DIMENSIONS,
    )))
});

#[tokio::test]
async fn vectors_wait_for_a_failed_embedder() {
    openvibe_memory_testkit::vectors::vectors_wait_for_a_failed_embedder(|embedder| async move {
        openvibe_in_memory::in_memory_stores_with_embedder(embedder)
    })
    .await;
}
