//! The in-memory backend runs the whole store conformance suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

openvibe_memory_testkit::conformance_tests!(|| async { openvibe_memory::in_memory_stores() });
