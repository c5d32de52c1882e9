//! Helpers the cases share: fixed times, callers of tenant `t1`, id lists,
//! error predicates.

use std::future::Future;

use chrono::{DateTime, Duration, TimeZone, Utc};
use openvibe_protocols::{
    AuditQuery, AuditStatus, CallerContext, Episode, Fact, Insight, StoreError, Stores,
};

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

/// The history of record `id` of `kind`: the trail's entries about it
/// (refusals aside), oldest first, each named by its transition (or its
/// operation: `insert`).
pub(crate) async fn history(s: &Stores, kind: &str, id: &str) -> Vec<String> {
    s.audit.flush().await.unwrap();
    let trail = s
        .audit
        .query(
            &sys(),
            &AuditQuery {
                kind: Some(kind.into()),
                record_id: Some(id.into()),
                status: Some(AuditStatus::Ok),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    trail
        .iter()
        .rev()
        .map(
            |e| match e.filters.as_ref().and_then(|f| f["transition"].as_str()) {
                Some(t) => t.to_owned(),
                None => e.operation.as_str().to_owned(),
            },
        )
        .collect()
}
