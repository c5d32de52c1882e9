//! No lost writes: many tokio tasks writing to one store at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use openvibe_in_memory::{InMemoryFactStore, InMemoryInsightStore};
use openvibe_protocols::{CallerContext, Fact, FactQuery, Insight, RecordStore, RevisableStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_writers_lose_nothing() {
    let store = Arc::new(InMemoryFactStore::new());
    let mut tasks = Vec::new();
    for task in 0..64 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let ctx = CallerContext::agent(format!("agent{task}"));
            for i in 0..50 {
                let fact = Fact::new(format!("t{task}_{i}"), format!("fact {i} of task {task}"))
                    .entity(format!("e{}", i % 7))
                    .domain(format!("d{}", task % 5));
                store.store(&ctx, fact).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(store.len().unwrap(), 64 * 50);
    let all = store
        .query(&CallerContext::system(), &FactQuery::new().limit(10_000))
        .await
        .unwrap();
    assert_eq!(all.len(), 64 * 50);
    let one_entity = store
        .query(
            &CallerContext::system(),
            &FactQuery::new().entity("e3").limit(10_000),
        )
        .await
        .unwrap();
    assert_eq!(one_entity.len(), 64 * 7, "every index saw every write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_access_tracking_loses_no_increment() {
    let store = Arc::new(InMemoryInsightStore::new());
    let ctx = CallerContext::system();
    store
        .store(&ctx, Insight::new("i1", "cro", "hot insight", 0.9))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let ctx = CallerContext::system();
            for _ in 0..25 {
                store.touch(&ctx, &["i1".to_owned()]).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let got = store.get(&ctx, "i1").await.unwrap().unwrap();
    assert_eq!(got.access_count, 32 * 25);
}
