//! A bounded load test on loopback: 64 concurrent remote clients, mixed
//! writes and searches, against a service on PostgreSQL. No request may
//! fail and every acknowledged write must be in the database afterwards.
//! (The throughput and latency figures: `cargo xtask bench svc`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "../../openvibe-postgres/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use openvibe_remote::RemoteMemory;
use openvibe_remote::load::{LoadPlan, run};
use openvibe_service::{Access, Service};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_lose_nothing() {
    let Some(_) = common::database_url() else {
        return;
    };
    let pg = common::fresh_stores().await;
    let url = support::spawn(Service::new(pg.stores(), Access::open("default"))).await;
    let remote = RemoteMemory::connect(&url, None).await.unwrap().stores();
    let mut plan = LoadPlan::mixed(64, 3_000);
    plan.max_duration = Duration::from_secs(60);
    let report = run(&remote, &plan).await;
    eprintln!(
        "LOAD {} writes, {} searches in {:?}: {:.0} ops/s, search p50 {:.0} µs p99 {:.0} µs, \
         write p50 {:.0} µs p99 {:.0} µs, {} errors",
        report.written.len(),
        report.searches,
        report.elapsed,
        report.ops_per_s(),
        report.search_us(0.5),
        report.search_us(0.99),
        report.write_us(0.5),
        report.write_us(0.99),
        report.errors
    );
    assert_eq!(report.errors, 0, "{:?}", report.first_errors);
    assert_eq!(
        report.written.len() + report.searches,
        3_000,
        "the run was bounded by time"
    );
    // Every acknowledged write is in the database (read directly, not
    // through the service).
    let reader = plan.caller.clone();
    let mut lost = 0;
    for id in &report.written {
        lost += usize::from(pg.stores().facts.get(&reader, id).await.unwrap().is_none());
    }
    assert_eq!(lost, 0, "acknowledged writes missing from the database");
}
