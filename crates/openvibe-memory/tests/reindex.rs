//! A background reindex embeds, batch by batch, what waits for a vector.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

#[tokio::test]
async fn a_background_reindex_embeds_what_waits_and_reports_progress() {
    use openvibe_memory_testkit::vectors::FlakyEmbedder;
    use openvibe_protocols::{CallerContext, Fact};
    let flaky = FlakyEmbedder::new();
    let stores = openvibe_memory::in_memory_stores_with_embedder(Arc::new(flaky.clone()));
    let agent = CallerContext::agent("a").with_tenant("t1");
    let sys = CallerContext::system().with_tenant("t1");
    flaky.fail(true);
    for i in 0..5 {
        stores
            .facts
            .store(&agent, Fact::new(format!("f{i}"), format!("fact {i}")))
            .await
            .unwrap();
    }
    assert!(
        openvibe_memory::Reindex::spawn(stores.vectors.clone(), agent.clone(), 2)
            .await
            .is_err(),
        "an agent may not reindex: refused before it starts"
    );
    flaky.fail(false);
    let mut reindex = openvibe_memory::Reindex::spawn(stores.vectors.clone(), sys.clone(), 2)
        .await
        .unwrap();
    assert_eq!(reindex.progress().pending_at_start, 5);
    let mut seen = Vec::new();
    while reindex.changed().await {
        seen.push(reindex.progress().embedded);
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(reindex.progress().embedded, 5);
    assert_eq!(reindex.finish().await.unwrap(), 5);
    assert_eq!(
        stores.vectors.vector_status(&sys).await.unwrap().pending(),
        0
    );
}
