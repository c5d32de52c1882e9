//! An erased entity is gone from every read path of the memory layer: the
//! memory filesystem (browse, read, search) and the pyramid (raw log,
//! episodes, insights, lineage, workspace facts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_memory::{AgentMemory, MemoryFilesystem, MemoryPyramid, WorkspaceMemory};
use openvibe_memory::{ForgetOptions, forget};
use openvibe_protocols::{
    CallOrigin, CallerContext, Episode, EpisodeQuery, ErasureSubject, FactQuery, Insight,
    InsightQuery, LlmRequest, LlmResponse, RawCall, RawCallQuery, mentions,
};

#[tokio::test]
async fn an_erased_entity_is_gone_from_the_filesystem_and_the_pyramid() {
    let stores = openvibe_memory::in_memory_stores();
    let memory = AgentMemory::new("cro")
        .with_stores(stores.episodes.clone(), stores.insights.clone())
        .with_raw_log(stores.raw.clone())
        .with_beliefs(stores.beliefs.clone())
        .with_audit(stores.audit.clone())
        .with_workspace(WorkspaceMemory::with_store(stores.facts.clone()));
    let pyramid = MemoryPyramid::new(memory.clone());
    let fs = MemoryFilesystem::new("cro", memory.clone());

    let episode = pyramid
        .record_episode(Episode {
            action: "qualify_lead".into(),
            output_summary: "acme_corp scored 85".into(),
            entity: "acme_corp".into(),
            ..Episode::default()
        })
        .await
        .unwrap();
    let mut request = LlmRequest::new("sonnet", "Score the lead");
    request.origin = Some(CallOrigin {
        episode_id: episode.id.clone(),
        ..CallOrigin::default()
    });
    pyramid
        .log_call(RawCall::new(
            "cro",
            chrono::Utc::now(),
            900,
            request,
            Ok(LlmResponse::text("85")),
        ))
        .await;
    memory.flush_raw_log().await;
    memory
        .store_insight(
            Insight::new("i1", "cro", "acme_corp buys in the fourth quarter", 0.9)
                .evidence(5)
                .domain("revenue"),
        )
        .await
        .unwrap();
    memory
        .store_insight(
            Insight::new("i2", "cro", "Globex buys in spring", 0.9)
                .evidence(5)
                .domain("revenue"),
        )
        .await
        .unwrap();
    pyramid.publish(0.5).await.unwrap();

    // Before: the entity is on every path.
    assert!(!fs.search("acme_corp", "/").await.unwrap().is_empty());
    assert_eq!(
        pyramid.raw(RawCallQuery::new()).await.unwrap().items.len(),
        1
    );
    assert!(
        pyramid
            .workspace_facts(&FactQuery::new().text("acme_corp"))
            .await
            .unwrap()
            .iter()
            .any(|f| mentions(&f.content, "acme_corp"))
    );

    let admin = CallerContext::system().with_tenant(memory.context().tenant_id());
    let report = forget(
        stores.admin.as_ref(),
        stores.audit.as_ref(),
        &admin,
        &ErasureSubject::Entity("acme_corp".into()),
        ForgetOptions::default(),
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(report.complete(), "{report:?}");
    // The episode, its raw call, the insight, the fact published from it.
    assert!(report.deleted() >= 4, "{report:?}");

    // After: nothing about it on any path, the rest kept.
    let hits = fs.search("acme_corp", "/").await.unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    assert!(!fs.search("globex", "/").await.unwrap().is_empty());
    for dir in [
        "/knowledge/",
        "/knowledge/revenue/",
        "/experience/",
        "/references/",
        "/raw/",
    ] {
        for entry in fs.browse(dir).await.unwrap_or_default() {
            let path = format!("{dir}{entry}");
            if let Ok(text) = fs.read(&path).await {
                assert!(!mentions(&text, "acme_corp"), "{path}: {text}");
            }
        }
    }
    assert!(
        pyramid
            .raw(RawCallQuery::new())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        pyramid
            .episodes(EpisodeQuery::new())
            .await
            .unwrap()
            .iter()
            .all(|e| e.id != episode.id)
    );
    assert!(
        pyramid
            .insights(InsightQuery::new())
            .await
            .unwrap()
            .iter()
            .all(|i| i.id != "i1")
    );
    assert!(pyramid.trace("i1").await.is_err());
    assert!(
        pyramid
            .workspace_facts(&FactQuery::new())
            .await
            .unwrap()
            .iter()
            .all(|f| !mentions(&f.content, "acme_corp"))
    );
}
