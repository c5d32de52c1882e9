//! The memory conformance suite over the wire: the remote client against a
//! live service backed by the in-memory stores.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use openvibe_protocols::testing::HashEmbedder;

openvibe_memory_testkit::conformance_tests!(|| async {
    support::remote_over(openvibe_memory::in_memory_stores_with_embedder(Arc::new(
        HashEmbedder::new(openvibe_memory_testkit::semantic::DIMENSIONS),
    )))
    .await
});
