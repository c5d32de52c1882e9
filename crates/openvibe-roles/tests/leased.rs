//! The cognitive loop on a durable inbox (issue 59): loop processes that
//! share one inbox each lease their share of the events and run each one's
//! stages once; an edge pushes into the inbox without running a loop; a
//! process killed mid-action is taken over once its lease lapses, and the
//! action it began is recorded interrupted, never run twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use openvibe_memory::in_memory_stores;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    ACT_INTERRUPTED, CallerContext, Clearance, EventInbox, InboxQuery, InboxStatus, LlmResponse,
    Principal, Stage, StoreInbox, Stores, inbox_event_id,
};
use openvibe_roles::testing::{DiscountCro, discount};
use openvibe_roles::{ActOutcome, CognitiveLoop, Error, EventSource, Leasing, RoleRuntime};

async fn runtime(
    stores: &Stores,
    runs: Arc<AtomicUsize>,
    gate: Option<Arc<tokio::sync::Notify>>,
) -> Arc<RoleRuntime> {
    let mut cro = DiscountCro::new(stores).counting(runs);
    if let Some(gate) = gate {
        cro = cro.gated(gate);
    }
    let role = cro.role().await.unwrap();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text("[]")));
    Arc::new(
        RoleRuntime::new(llm)
            .with_stores(stores.clone())
            .role(role)
            .unwrap(),
    )
}

fn leasing(holder: &str, lease_ms: u64) -> Leasing {
    Leasing::new(holder)
        .lease_ms(lease_ms)
        .batch(4)
        .poll(Duration::from_millis(20))
}

/// Every event of the CRO in `stores`' inbox, as `ctx` reads it.
async fn inbox(stores: &Stores, ctx: &CallerContext) -> Vec<openvibe_protocols::InboxEvent> {
    openvibe_protocols::Page::all(|cursor| {
        let mut query = InboxQuery::new().role("cro");
        query.cursor = cursor;
        query.limit = 1000;
        let store = stores.inbox.clone();
        let ctx = ctx.clone();
        async move { store.list(&ctx, &query).await }
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn two_loop_processes_share_one_inbox_and_run_each_event_once() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let a = Arc::new(CognitiveLoop::durable(
        runtime(&stores, runs.clone(), None).await,
        stores.inbox.clone(),
        leasing("a", 30_000),
    ));
    let b = Arc::new(CognitiveLoop::durable(
        runtime(&stores, runs.clone(), None).await,
        stores.inbox.clone(),
        leasing("b", 30_000),
    ));
    assert!(matches!(
        a.run_event("cro", discount("now", 10), EventSource::Code)
            .await,
        Err(Error::NotLocal { .. })
    ));
    // Half pushed through a loop, half through an edge that runs no loop
    // (a service instance), the caller its owner.
    let edge = StoreInbox::new(stores.inbox.clone()).roles(["cro"]);
    let person = CallerContext::new(
        a.runtime()
            .get_role("cro")
            .unwrap()
            .proposal_context()
            .tenant_id(),
        Principal::user("ann"),
    )
    .with_clearance(Clearance::unrestricted());
    let total = 120;
    for i in 0..total {
        let event = discount(&format!("e{i:03}"), 100);
        if i % 2 == 0 {
            assert!(
                !a.push("cro", event, EventSource::Code)
                    .await
                    .unwrap()
                    .duplicate
            );
        } else {
            let accepted = edge
                .push(&person, "cro", event, EventSource::Http)
                .await
                .unwrap();
            assert!(!accepted.duplicate);
        }
    }
    // Pushed again, anywhere: held once.
    assert!(
        edge.push(&person, "cro", discount("e000", 100), EventSource::Http)
            .await
            .unwrap()
            .duplicate
    );
    assert!(matches!(
        edge.push(&person, "cmo", discount("x", 1), EventSource::Http)
            .await,
        Err(openvibe_protocols::StoreError::NotFound { .. })
    ));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let serve = |l: Arc<CognitiveLoop>| {
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            l.run(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await
            .unwrap()
        })
    };
    let (ra, rb) = (serve(a.clone()), serve(b.clone()));
    let ctx = a.runtime().get_role("cro").unwrap().proposal_context();
    for _ in 0..1000 {
        let done = inbox(&stores, &ctx)
            .await
            .iter()
            .filter(|e| e.status == InboxStatus::Done)
            .count();
        if done == total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop_tx.send(true).unwrap();
    let (ra, rb) = (ra.await.unwrap(), rb.await.unwrap());

    assert_eq!(ra.events + rb.events, total as u64, "{ra:?} {rb:?}");
    assert_eq!(runs.load(Ordering::SeqCst), total, "each discount once");
    for e in inbox(&stores, &ctx).await {
        assert_eq!(e.status, InboxStatus::Done, "{e:?}");
        assert_eq!(e.attempts, 1);
        let trace = e.trace.expect("its trace is journaled in the inbox");
        let stages: Vec<Stage> = trace.stages.iter().map(|s| s.stage).collect();
        assert_eq!(stages, Stage::ALL, "each stage once");
        assert!(matches!(trace.act, Some(ActOutcome::Ran { .. })));
        assert_eq!(e.note.as_deref(), Some("ran give_discount"));
    }
    // The edge reads a trace where the loop that ran it journaled it.
    let trace = edge.trace(&person, "cro", "e001").await.unwrap().unwrap();
    assert!(trace.is_done());
    assert_eq!(trace.source, EventSource::Http);
}

#[tokio::test]
async fn a_killed_process_is_taken_over_and_the_action_it_began_never_runs_twice() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    // Process A holds every discount forever (its tool never returns).
    let gate = Arc::new(tokio::sync::Notify::new());
    let a = Arc::new(CognitiveLoop::durable(
        runtime(&stores, runs.clone(), Some(gate)).await,
        stores.inbox.clone(),
        leasing("a", 300),
    ));
    a.push("cro", discount("first", 100), EventSource::Code)
        .await
        .unwrap();
    a.push("cro", discount("second", 100), EventSource::Code)
        .await
        .unwrap();
    let running = {
        let a = a.clone();
        tokio::spawn(async move { a.run(std::future::pending()).await })
    };
    let ctx = a.runtime().get_role("cro").unwrap().proposal_context();
    let first = inbox_event_id("cro", "first");
    // A began the first discount: journaled before the tool ran.
    for _ in 0..500 {
        if runs.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let held = stores.inbox.get(&ctx, &first).await.unwrap().unwrap();
    assert_eq!(held.holder.as_deref(), Some("a"));
    assert!(held.trace.unwrap().act_began.is_some());
    // Killed: nothing of A runs any more, its leases lapse.
    running.abort();
    let _ = running.await;
    let b = Arc::new(CognitiveLoop::durable(
        runtime(&stores, runs.clone(), None).await,
        stores.inbox.clone(),
        leasing("b", 300),
    ));
    let running = {
        let b = b.clone();
        tokio::spawn(async move { b.run(std::future::pending()).await })
    };
    let mut events = Vec::new();
    for _ in 0..500 {
        events = inbox(&stores, &ctx).await;
        if events.iter().all(|e| e.status == InboxStatus::Done) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.abort();
    for e in &events {
        assert_eq!(e.status, InboxStatus::Done, "{e:?}");
        assert_eq!(e.holder.as_deref(), Some("b"));
    }
    let first = events.iter().find(|e| e.id == first).unwrap();
    assert_eq!(first.attempts, 2, "taken over");
    let trace = first.trace.clone().unwrap();
    let stages: Vec<Stage> = trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages.iter().filter(|s| **s == Stage::Act).count(), 1);
    match &trace.act {
        Some(ActOutcome::Failed { error, .. }) => assert_eq!(error, ACT_INTERRUPTED),
        other => panic!("{other:?}"),
    }
    // The second was never begun by A: B ran it. One run each, none twice.
    let second = events
        .iter()
        .find(|e| e.id == inbox_event_id("cro", "second"))
        .unwrap();
    assert!(matches!(
        second.trace.as_ref().unwrap().act,
        Some(ActOutcome::Ran { .. })
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
