//! The durable event inbox (issue 59) on every backend: events pushed once
//! by their role's and event's id, leased oldest first to one holder at a
//! time (racing processes each get their own), renewed and finished by
//! their holder only, taken over once a lease lapses, governed like every
//! kept kind, each transition audited by name, the loop's trace kept
//! under the lease.

use std::future::Future;
use std::sync::Arc;

use openvibe_protocols::{
    CallerContext, Classification, Clearance, DecisionEvent, EventSource, Grants, InboxEvent,
    InboxOutcome, InboxQuery, InboxStatus, LeaseRequest, LoopTrace, Renewal, Rights, Stage, Stores,
    inbox_event_id,
};

use crate::support::{agent, history, is_conflict, is_invalid, is_not_found, is_unauthorized};

fn cro() -> CallerContext {
    agent("cro").with_clearance(Clearance::unrestricted())
}

fn event(role: &str, id: &str) -> InboxEvent {
    InboxEvent::new(
        role,
        DecisionEvent::new(id, "lead.arrived", "revenue").summary(format!("lead {id}")),
        EventSource::Http,
    )
}

fn lease(roles: &[&str], holder: &str, lease_ms: u64, limit: usize) -> LeaseRequest {
    LeaseRequest::new(roles.iter().copied(), holder, lease_ms, limit)
}

/// Once a 300 ms lease of `p1` lapsed, what `p2` leases of `cro`'s events.
async fn taken_over_by_p2(s: &Stores) -> Vec<InboxEvent> {
    tokio::time::sleep(std::time::Duration::from_millis(450)).await;
    s.inbox
        .lease(&cro(), &lease(&["cro"], "p2", 60_000, 1))
        .await
        .unwrap()
}

/// An event is held once: its id is its role's and event's, whatever the
/// store-maintained fields said; pushing it again returns it; another
/// event under its id is a conflict; a malformed one is refused and
/// writes nothing.
pub async fn inbox_events_are_pushed_once<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let mut forged = event("cro", "e1");
    forged.status = InboxStatus::Done;
    forged.holder = Some("p9".into());
    forged.attempts = 7;
    forged.meta.owner = "user:mallory".into();
    let pushed = s.inbox.push(&cro(), forged).await.unwrap();
    assert_eq!(pushed.id, inbox_event_id("cro", "e1"));
    assert_eq!(
        (pushed.status, pushed.holder.as_deref(), pushed.attempts),
        (InboxStatus::Pending, None, 0)
    );
    assert_eq!(
        (pushed.meta.owner.as_str(), pushed.domain.as_str()),
        ("agent:cro", "revenue")
    );
    assert_eq!(pushed.origin, EventSource::Http);
    let again = s.inbox.push(&cro(), event("cro", "e1")).await.unwrap();
    assert_eq!(again.meta.created_at, pushed.meta.created_at);
    let mut other = event("cro", "e1");
    other.event.summary = "something else".into();
    assert!(is_conflict(s.inbox.push(&cro(), other).await));
    // The same event for another role is another event.
    let cmo = s.inbox.push(&cro(), event("cmo", "e1")).await.unwrap();
    assert_ne!(cmo.id, pushed.id);
    let mut bad = event("cro", "e2");
    bad.event.kind = " ".into();
    assert!(is_invalid(s.inbox.push(&cro(), bad).await));
    let mut bad = event("cro", "e3");
    bad.event.data = serde_json::json!("not an object");
    assert!(is_invalid(s.inbox.push(&cro(), bad).await));
    assert_eq!(
        s.inbox
            .get(&cro(), &inbox_event_id("cro", "e2"))
            .await
            .unwrap(),
        None
    );
    let got = s.inbox.get(&cro(), &pushed.id).await.unwrap().unwrap();
    assert_eq!(got.event, pushed.event);
    let page = s
        .inbox
        .list(&cro(), &InboxQuery::new().role("cro"))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(history(&s, "inbox_event", &pushed.id).await, ["insert"]);
}

/// A lease takes the oldest free events of the roles named, each to one
/// holder: two leases never share an event, and processes racing for
/// events each get their own.
pub async fn inbox_leases_each_event_to_one_holder<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    for i in 0..5 {
        s.inbox
            .push(&cro(), event("cro", &format!("c{i}")))
            .await
            .unwrap();
        s.inbox
            .push(&cro(), event("cmo", &format!("m{i}")))
            .await
            .unwrap();
    }
    let first = s
        .inbox
        .lease(&cro(), &lease(&["cro"], "p1", 60_000, 3))
        .await
        .unwrap();
    let ids = |events: &[InboxEvent]| -> Vec<String> {
        events.iter().map(|e| e.event.id.clone()).collect()
    };
    assert_eq!(ids(&first), ["c0", "c1", "c2"], "oldest first");
    assert!(first.iter().all(|e| e.status == InboxStatus::Leased
        && e.holder.as_deref() == Some("p1")
        && e.attempts == 1
        && e.lease_until.is_some()));
    let second = s
        .inbox
        .lease(&cro(), &lease(&["cro"], "p2", 60_000, 10))
        .await
        .unwrap();
    assert_eq!(ids(&second), ["c3", "c4"]);
    assert!(
        s.inbox
            .lease(&cro(), &lease(&["cro"], "p3", 60_000, 10))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(is_invalid(
        s.inbox.lease(&cro(), &lease(&[], "p3", 60_000, 10)).await
    ));
    assert!(is_invalid(
        s.inbox.lease(&cro(), &lease(&["cmo"], "p3", 1, 10)).await
    ));
    // Eight processes race for the five `cmo` events, one at a time.
    let stores = Arc::new(s);
    let mut racers = Vec::new();
    for p in 0..8 {
        let stores = stores.clone();
        racers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = stores
                    .inbox
                    .lease(&cro(), &lease(&["cmo"], &format!("r{p}"), 60_000, 1))
                    .await
                    .unwrap();
                if got.is_empty() {
                    break mine;
                }
                mine.extend(got.into_iter().map(|e| e.event.id));
            }
        }));
    }
    let mut all = Vec::new();
    for racer in racers {
        all.extend(racer.await.unwrap());
    }
    all.sort();
    assert_eq!(
        all,
        ["m0", "m1", "m2", "m3", "m4"],
        "each event leased once"
    );
}

/// A holder renews and finishes its own lease only; once a lease lapses,
/// another holder takes the event over (a process that died), and the
/// first can neither renew nor finish it. Finishing is once. Every
/// transition is audited by name.
pub async fn inbox_leases_lapse_and_are_taken_over<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let id = s.inbox.push(&cro(), event("cro", "e1")).await.unwrap().id;
    let leased = s
        .inbox
        .lease(&cro(), &lease(&["cro"], "p1", 300, 1))
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    assert!(is_conflict(
        s.inbox.renew(&cro(), &id, &Renewal::new("p2", 300)).await
    ));
    let renewed = s
        .inbox
        .renew(&cro(), &id, &Renewal::new("p1", 300))
        .await
        .unwrap();
    assert!(renewed.lease_until >= leased[0].lease_until);
    assert!(is_invalid(
        s.inbox.renew(&cro(), &id, &Renewal::new("p1", 0)).await
    ));
    // Held: nobody else leases it.
    assert!(
        s.inbox
            .lease(&cro(), &lease(&["cro"], "p2", 300, 1))
            .await
            .unwrap()
            .is_empty()
    );
    // p1 dies; its lease lapses; p2 takes the event over.
    let taken = taken_over_by_p2(&s).await;
    assert_eq!(taken.len(), 1);
    assert_eq!(
        (taken[0].holder.as_deref(), taken[0].attempts),
        (Some("p2"), 2)
    );
    assert!(is_conflict(
        s.inbox.renew(&cro(), &id, &Renewal::new("p1", 300)).await
    ));
    assert!(is_conflict(
        s.inbox
            .finish(&cro(), &id, &InboxOutcome::done("p1", "late"))
            .await
    ));
    let done = s
        .inbox
        .finish(&cro(), &id, &InboxOutcome::done("p2", "acted"))
        .await
        .unwrap();
    assert_eq!(
        (done.status, done.note.as_deref(), done.lease_until),
        (InboxStatus::Done, Some("acted"), None)
    );
    assert!(done.finished_at.is_some());
    assert!(is_conflict(
        s.inbox
            .finish(&cro(), &id, &InboxOutcome::failed("p2", "again"))
            .await
    ));
    assert!(
        s.inbox
            .lease(&cro(), &lease(&["cro"], "p3", 60_000, 1))
            .await
            .unwrap()
            .is_empty(),
        "a finished event is never leased"
    );
    assert!(is_not_found(
        s.inbox
            .finish(&cro(), "evt_none", &InboxOutcome::done("p2", ""))
            .await
    ));
    assert_eq!(
        history(&s, "inbox_event", &id).await,
        ["insert", "lease", "renew", "take_over", "done"]
    );
    let failed_id = s.inbox.push(&cro(), event("cro", "e2")).await.unwrap().id;
    s.inbox
        .lease(&cro(), &lease(&["cro"], "p3", 60_000, 1))
        .await
        .unwrap();
    let failed = s
        .inbox
        .finish(
            &cro(),
            &failed_id,
            &InboxOutcome::failed("p3", "the model is down"),
        )
        .await
        .unwrap();
    assert_eq!(failed.status, InboxStatus::Failed);
    let page = s
        .inbox
        .list(&cro(), &InboxQuery::new().status(InboxStatus::Failed))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
}

/// The inbox is governed: pushing needs the write right in the namespace;
/// a caller without clearance for the event's domain does not see it; one
/// that may not change an event neither leases, renews nor finishes it.
pub async fn inbox_is_governed<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let role = agent("cro")
        .with_clearance(Clearance::unrestricted())
        .with_grants(
            Grants::new("cro")
                .grant("cro", Rights::OWN, false)
                .recall(["cro"]),
        );
    let mut secret = event("cro", "e1");
    secret.meta.classification = Classification::Confidential;
    let id = s.inbox.push(&role, secret).await.unwrap().id;
    let reader = |rights: Rights, clearance: Clearance| {
        CallerContext::user("bob")
            .with_tenant("t1")
            .with_clearance(clearance)
            .with_grants(
                Grants::new("bob")
                    .grant("cro", rights, false)
                    .recall(["cro"]),
            )
    };
    // No write right: no push.
    assert!(is_unauthorized(
        s.inbox
            .push(
                &reader(Rights::READ, Clearance::unrestricted()),
                event("cro", "e2")
            )
            .await
    ));
    // No clearance for the domain: nothing to see, lease or finish.
    let public = reader(Rights::OWN, Clearance::default());
    assert_eq!(s.inbox.get(&public, &id).await.unwrap(), None);
    assert!(
        s.inbox
            .list(&public, &InboxQuery::new())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        s.inbox
            .lease(&public, &lease(&["cro"], "p1", 60_000, 10))
            .await
            .unwrap()
            .is_empty()
    );
    // Read but not write: seen, not leased.
    let read_only = reader(Rights::READ, Clearance::unrestricted());
    assert!(s.inbox.get(&read_only, &id).await.unwrap().is_some());
    assert!(
        s.inbox
            .lease(&read_only, &lease(&["cro"], "p1", 60_000, 10))
            .await
            .unwrap()
            .is_empty()
    );
    let leased = s
        .inbox
        .lease(&role, &lease(&["cro"], "p1", 60_000, 10))
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    assert!(is_unauthorized(
        s.inbox
            .finish(&read_only, &id, &InboxOutcome::done("p1", "x"))
            .await
    ));
    assert!(is_not_found(
        s.inbox
            .renew(&public, &id, &Renewal::new("p1", 1_000))
            .await
    ));
    let still = s.inbox.get(&role, &id).await.unwrap().unwrap();
    assert_eq!(still.status, InboxStatus::Leased);
}

/// The inbox keeps its loop's journal: the holder saves the event's trace
/// with a renewal (after each stage) and with the finish; a process that
/// takes the event over gets the trace with its lease and resumes from it;
/// a trace of another event is a conflict and changes nothing.
pub async fn inbox_keeps_the_loop_trace_under_the_lease<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let pushed = s.inbox.push(&cro(), event("cro", "e1")).await.unwrap();
    assert_eq!(pushed.trace, None);
    s.inbox
        .lease(&cro(), &lease(&["cro"], "p1", 300, 1))
        .await
        .unwrap();
    let mut trace = LoopTrace::perceived("cro", pushed.event.clone(), EventSource::Http);
    trace.next = Some(Stage::Decide);
    let saved = s
        .inbox
        .renew(
            &cro(),
            &pushed.id,
            &Renewal::new("p1", 300).trace(trace.clone()),
        )
        .await
        .unwrap();
    assert_eq!(saved.trace.as_ref(), Some(&trace));
    let other = LoopTrace::perceived("cro", event("cro", "e2").event, EventSource::Http);
    assert!(is_conflict(
        s.inbox
            .renew(&cro(), &pushed.id, &Renewal::new("p1", 300).trace(other))
            .await
    ));
    // p1 dies; p2 takes the event over with its trace, and goes on from it.
    let taken = taken_over_by_p2(&s).await;
    assert_eq!(taken[0].trace.as_ref(), Some(&trace));
    assert_eq!(
        taken[0].trace.as_ref().and_then(|t| t.next),
        Some(Stage::Decide)
    );
    // The first holder's late save is refused: the lease fences it.
    assert!(is_conflict(
        s.inbox
            .renew(
                &cro(),
                &pushed.id,
                &Renewal::new("p1", 300).trace(trace.clone())
            )
            .await
    ));
    let mut done_trace = trace;
    done_trace.next = None;
    let done = s
        .inbox
        .finish(
            &cro(),
            &pushed.id,
            &InboxOutcome::done("p2", "acted").trace(done_trace.clone()),
        )
        .await
        .unwrap();
    assert_eq!(done.trace.as_ref(), Some(&done_trace));
    let read = s.inbox.get(&cro(), &pushed.id).await.unwrap().unwrap();
    assert_eq!(read.trace, Some(done_trace));
}
