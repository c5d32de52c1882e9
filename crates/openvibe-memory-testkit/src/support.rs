//! Helpers the cases share: fixed times, callers of tenant `t1`, id lists,
//! error predicates.

use std::future::Future;

use chrono::{DateTime, Duration, TimeZone, Utc};
use openvibe_protocols::{CallerContext, Episode, Fact, Insight, StoreError};

pub(crate) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

pub(crate) fn at(minutes: i64) -> DateTime<Utc> {
    t0() + Duration::minutes(minutes)
}

/// The system of tenant `t1`.
pub(crate) fn sys() -> CallerContext {
    CallerContext::system().with_tenant("t1")
}

pub(crate) fn agent(id: &str) -> CallerContext {
    CallerContext::agent(id).with_tenant("t1")
}

pub(crate) fn fact_ids(facts: &[Fact]) -> Vec<&str> {
    facts.iter().map(|f| f.id.as_str()).collect()
}

pub(crate) fn insight_ids(insights: &[Insight]) -> Vec<&str> {
    insights.iter().map(|i| i.id.as_str()).collect()
}

pub(crate) fn episode_ids(episodes: &[Episode]) -> Vec<&str> {
    episodes.iter().map(|e| e.id.as_str()).collect()
}

pub(crate) fn episode(id: &str, agent_id: &str, minute: i64) -> Episode {
    Episode {
        id: id.into(),
        agent_id: agent_id.into(),
        operator_id: "op".into(),
        node_name: "node".into(),
        timestamp: at(minute),
        action: "act".into(),
        input_summary: "input".into(),
        output_summary: "output".into(),
        ..Episode::default()
    }
}

pub(crate) fn is_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::NotFound { .. }))
}

pub(crate) fn is_unauthorized<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Unauthorized { .. }))
}

pub(crate) fn is_conflict<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Conflict { .. }))
}

pub(crate) fn is_invalid<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(e) if e.is_invalid_input())
}

/// Run futures concurrently (interleaved on the test's runtime).
pub(crate) async fn futures_join_all<F: Future<Output = ()>>(futures: Vec<F>) {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(move |cx| {
        pinned.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if pinned.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}
