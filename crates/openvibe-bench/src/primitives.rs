//! Layer-1 benchmarks.

/// Run the group.
pub async fn run() {}
