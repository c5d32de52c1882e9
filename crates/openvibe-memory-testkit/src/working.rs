//! Working memory: sessions, plans, task and plan contexts, plan state,
//! atomic updates and optimistic locking; the source design's tests and its
//! worker and planner usage examples.

use std::future::Future;

use openvibe_protocols::{
    CallerContext, Classification, Expect, NewPlan, NewSession, PlanContext, PlanQuery, PlanStatus,
    PlanUpdate, SessionQuery, StoreError, Stores, TaskContext,
};
use serde_json::json;

use crate::support::{futures_join_all, is_invalid, is_not_found, is_unauthorized};

fn alice() -> CallerContext {
    CallerContext::user("alice").with_tenant("t1")
}

fn bob() -> CallerContext {
    CallerContext::user("bob").with_tenant("t1")
}

fn goal(event: &str) -> NewPlan {
    NewPlan {
        goal_event: event.into(),
        goal_data: json!({"topic": event}),
        response_event: format!("{event}.done"),
        ..NewPlan::default()
    }
}

fn is_conflict<T: std::fmt::Debug>(result: &Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Conflict { .. }))
}

/// Sessions: create, get, list newest first with paging, plan count and
/// last activity; deleting one keeps its plans, detached.
pub async fn working_sessions<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let a = w
        .create_session(
            &alice(),
            NewSession {
                name: Some("AI research".into()),
                metadata: json!({"channel": "chat"}),
                ..NewSession::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(a.meta.owner, "user:alice");
    assert_eq!(a.meta.tenant_id, "t1");
    assert_eq!(a.plan_count, 0);
    assert_eq!(a.last_activity, a.meta.created_at);
    assert_eq!(
        w.get_session(&alice(), &a.id).await.unwrap(),
        Some(a.clone())
    );
    assert_eq!(w.get_session(&bob(), &a.id).await.unwrap(), None, "private");
    let mut ids = vec![a.id.clone()];
    for i in 0..4 {
        let b = w
            .create_session(
                &alice(),
                NewSession {
                    id: Some(format!("s{i}")),
                    ..NewSession::default()
                },
            )
            .await
            .unwrap();
        ids.push(b.id);
    }
    let plan = w
        .create_plan(
            &alice(),
            NewPlan {
                session_id: Some(a.id.clone()),
                ..goal("find.papers")
            },
        )
        .await
        .unwrap();
    let with_plan = w.get_session(&alice(), &a.id).await.unwrap().unwrap();
    assert_eq!(with_plan.plan_count, 1);
    assert!(with_plan.last_activity >= plan.meta.created_at);
    // Pages of 2 cover every session once, newest first.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = w
            .list_sessions(
                &alice(),
                &SessionQuery {
                    limit: 2,
                    cursor: cursor.clone(),
                    ..SessionQuery::default()
                },
            )
            .await
            .unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|s| s.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut expected = ids.clone();
    expected.sort();
    let mut got = seen.clone();
    got.sort();
    assert_eq!(got, expected, "every session exactly once");
    assert!(
        w.list_sessions(&bob(), &SessionQuery::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let future = chrono::Utc::now() + chrono::Duration::days(1);
    let old = w
        .list_sessions(
            &alice(),
            &SessionQuery {
                older_than: Some(future),
                limit: 100,
                ..SessionQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(old.items.len(), 5);
    assert!(is_invalid(
        w.list_sessions(
            &alice(),
            &SessionQuery {
                cursor: Some("garbage".into()),
                ..SessionQuery::default()
            }
        )
        .await
    ));
    // Deleting: only the owner; the plans stay, detached.
    assert!(is_not_found(w.delete_session(&bob(), &a.id).await));
    let deleted = w.delete_session(&alice(), &a.id).await.unwrap();
    assert_eq!(deleted.plans_detached, 1);
    assert_eq!(w.get_session(&alice(), &a.id).await.unwrap(), None);
    let kept = w.get_plan(&alice(), &plan.id).await.unwrap().unwrap();
    assert_eq!(kept.session_id, None);
}

/// Plans: create, get, update, list by status and session, page, `older_than`.
pub async fn working_plans<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let session = w
        .create_session(&alice(), NewSession::default())
        .await
        .unwrap();
    let p1 = w
        .create_plan(&alice(), goal("research.goal"))
        .await
        .unwrap();
    assert_eq!(p1.status, PlanStatus::Active);
    assert_eq!(p1.goal_data, json!({"topic": "research.goal"}));
    assert_eq!(p1.meta.owner, "user:alice");
    let p2 = w
        .create_plan(
            &alice(),
            NewPlan {
                session_id: Some(session.id.clone()),
                ..goal("summarize")
            },
        )
        .await
        .unwrap();
    let sub = w
        .create_plan(
            &alice(),
            NewPlan {
                session_id: Some(session.id.clone()),
                parent_plan_id: Some(p2.id.clone()),
                ..goal("summarize.part")
            },
        )
        .await
        .unwrap();
    assert_eq!(sub.parent_plan_id.as_deref(), Some(p2.id.as_str()));
    let done = w
        .update_plan(
            &alice(),
            &p1.id,
            PlanUpdate {
                status: Some(PlanStatus::Completed),
                ..PlanUpdate::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(done.status, PlanStatus::Completed);
    assert!(done.meta.updated_at >= p1.meta.updated_at);
    assert_eq!(done.goal_event, p1.goal_event);
    let ids = |page: openvibe_protocols::Page<openvibe_protocols::Plan>| {
        page.items.into_iter().map(|p| p.id).collect::<Vec<_>>()
    };
    let active = w
        .list_plans(
            &alice(),
            &PlanQuery {
                status: Some(PlanStatus::Active),
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    let mut active = ids(active);
    active.sort();
    let mut expected = vec![p2.id.clone(), sub.id.clone()];
    expected.sort();
    assert_eq!(active, expected);
    let in_session = w
        .list_plans(
            &alice(),
            &PlanQuery {
                session_id: Some(session.id.clone()),
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(in_session.items.len(), 2);
    let completed = w
        .list_plans(
            &alice(),
            &PlanQuery {
                status: Some(PlanStatus::Completed),
                older_than: Some(chrono::Utc::now() + chrono::Duration::days(7)),
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(ids(completed), vec![p1.id.clone()]);
    let none_old = w
        .list_plans(
            &alice(),
            &PlanQuery {
                older_than: Some(chrono::Utc::now() - chrono::Duration::days(7)),
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    assert!(none_old.items.is_empty());
    // Paging: one at a time, newest first, nothing twice.
    let first = w
        .list_plans(
            &alice(),
            &PlanQuery {
                limit: 1,
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(first.items.len(), 1);
    let mut all = ids(first.clone());
    let mut cursor = first.next_cursor;
    while let Some(c) = cursor {
        let page = w
            .list_plans(
                &alice(),
                &PlanQuery {
                    limit: 1,
                    cursor: Some(c),
                    ..PlanQuery::default()
                },
            )
            .await
            .unwrap();
        cursor = page.next_cursor.clone();
        all.extend(ids(page));
    }
    assert_eq!(all.len(), 3);
    assert!(all.contains(&p1.id) && all.contains(&p2.id) && all.contains(&sub.id));
    // Others neither see nor change them.
    assert_eq!(w.get_plan(&bob(), &p1.id).await.unwrap(), None);
    assert!(
        w.list_plans(&bob(), &PlanQuery::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(is_not_found(
        w.update_plan(&bob(), &p1.id, PlanUpdate::default()).await
    ));
    let reader = bob().with_domain_clearance("", Classification::Internal);
    assert!(w.get_plan(&reader, &p1.id).await.unwrap().is_some());
    assert!(is_unauthorized(
        w.update_plan(&reader, &p1.id, PlanUpdate::default()).await
    ));
    // Deleting a plan takes its context and state; sub-plans stay, detached.
    w.set_state(&alice(), &p2.id, "k", json!(1), Expect::Any)
        .await
        .unwrap();
    w.store_plan_context(
        &alice(),
        PlanContext::new(p2.id.clone(), json!({"step": 1})),
    )
    .await
    .unwrap();
    let deleted = w.delete_plan(&alice(), &p2.id).await.unwrap();
    assert_eq!(deleted.state_keys, 1);
    assert!(deleted.context);
    assert_eq!(deleted.subplans_detached, 1);
    assert_eq!(w.get_plan(&alice(), &p2.id).await.unwrap(), None);
    let orphan = w.get_plan(&alice(), &sub.id).await.unwrap().unwrap();
    assert_eq!(orphan.parent_plan_id, None);
    let session = w.get_session(&alice(), &session.id).await.unwrap().unwrap();
    assert_eq!(session.plan_count, 1);
}

/// Bad input and unknown plans or sessions: a typed error, nothing written.
pub async fn working_bad_input_writes_nothing<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    assert!(is_not_found(
        w.create_plan(
            &alice(),
            NewPlan {
                session_id: Some("nope".into()),
                ..goal("g")
            }
        )
        .await
    ));
    assert!(is_not_found(
        w.create_plan(
            &alice(),
            NewPlan {
                parent_plan_id: Some("nope".into()),
                ..goal("g")
            }
        )
        .await
    ));
    assert!(is_invalid(w.create_plan(&alice(), goal("")).await));
    assert!(is_invalid(
        w.create_plan(
            &alice(),
            NewPlan {
                goal_data: json!([1, 2]),
                ..goal("g")
            }
        )
        .await
    ));
    assert!(is_invalid(
        w.create_plan(
            &alice(),
            NewPlan {
                goal_data: json!({"k": "nul \u{0} byte"}),
                ..goal("g")
            }
        )
        .await
    ));
    assert!(is_invalid(w.create_plan(&alice(), goal("a\u{0}b")).await));
    assert!(is_invalid(
        w.create_session(
            &alice(),
            NewSession {
                id: Some("a/b".into()),
                ..NewSession::default()
            }
        )
        .await
    ));
    assert!(
        w.list_plans(&alice(), &PlanQuery::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        w.list_sessions(&alice(), &SessionQuery::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(is_not_found(
        w.set_state(&alice(), "nope", "k", json!(1), Expect::Any)
            .await
    ));
    assert!(is_not_found(
        w.append_state(&alice(), "nope", "k", json!(1)).await
    ));
    assert!(is_not_found(w.get_state(&alice(), "nope", "k").await));
    let task = TaskContext {
        plan_id: Some("nope".into()),
        ..TaskContext::new("t1", json!({}))
    };
    assert!(is_not_found(w.store_task_context(&alice(), task).await));
    assert_eq!(w.get_task_context(&alice(), "t1").await.unwrap(), None);
    assert!(is_not_found(
        w.store_plan_context(&alice(), PlanContext::new("nope", json!({})))
            .await
    ));
    let plan = w.create_plan(&alice(), goal("g")).await.unwrap();
    assert!(is_invalid(
        w.set_state(&alice(), &plan.id, "", json!(1), Expect::Any)
            .await
    ));
    assert!(is_invalid(
        w.set_state(&alice(), &plan.id, "k", json!("a\u{0}"), Expect::Any)
            .await
    ));
    assert!(w.list_state(&alice(), &plan.id).await.unwrap().is_empty());
}

/// Task context: store, get, find the parent by a sub-task id, delete; a
/// sub-task id belongs to one task.
pub async fn working_task_context<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let plan = w.create_plan(&alice(), goal("research")).await.unwrap();
    let task = TaskContext {
        plan_id: Some(plan.id.clone()),
        sub_task_ids: vec!["sub-2".into(), "sub-1".into()],
        ..TaskContext::new("task-1", json!({"topic": "memory"}))
    };
    let stored = w.store_task_context(&alice(), task).await.unwrap();
    assert_eq!(stored.meta.owner, "user:alice");
    assert_eq!(stored.sub_task_ids, vec!["sub-1", "sub-2"]);
    let got = w.get_task_context(&alice(), "task-1").await.unwrap();
    assert_eq!(got.as_ref(), Some(&stored));
    let parent = w.get_task_by_subtask(&alice(), "sub-2").await.unwrap();
    assert_eq!(parent.map(|t| t.task_id).as_deref(), Some("task-1"));
    assert_eq!(
        w.get_task_by_subtask(&alice(), "sub-9").await.unwrap(),
        None
    );
    assert_eq!(w.get_task_by_subtask(&bob(), "sub-1").await.unwrap(), None);
    // A sub-task id of another task is a conflict; nothing changes.
    let other = TaskContext {
        sub_task_ids: vec!["sub-1".into()],
        ..TaskContext::new("task-2", json!({}))
    };
    assert!(is_conflict(&w.store_task_context(&alice(), other).await));
    assert_eq!(w.get_task_context(&alice(), "task-2").await.unwrap(), None);
    // Replacing re-indexes the sub-tasks.
    let replaced = TaskContext {
        sub_task_ids: vec!["sub-3".into()],
        ..stored.clone()
    };
    w.store_task_context(&alice(), replaced).await.unwrap();
    assert_eq!(
        w.get_task_by_subtask(&alice(), "sub-1").await.unwrap(),
        None
    );
    assert!(
        w.get_task_by_subtask(&alice(), "sub-3")
            .await
            .unwrap()
            .is_some()
    );
    // Someone else cannot overwrite it.
    assert!(is_unauthorized(
        w.store_task_context(&bob(), TaskContext::new("task-1", json!({})))
            .await
    ));
    assert!(!w.delete_task_context(&bob(), "task-1").await.unwrap());
    assert!(w.delete_task_context(&alice(), "task-1").await.unwrap());
    assert!(!w.delete_task_context(&alice(), "task-1").await.unwrap());
    assert_eq!(
        w.get_task_by_subtask(&alice(), "sub-3").await.unwrap(),
        None
    );
}

/// Plan context: store, get, find by a correlation id; a correlation id
/// belongs to one plan.
pub async fn working_plan_context<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let session = w
        .create_session(&alice(), NewSession::default())
        .await
        .unwrap();
    let p1 = w.create_plan(&alice(), goal("a")).await.unwrap();
    let p2 = w.create_plan(&alice(), goal("b")).await.unwrap();
    let context = PlanContext {
        session_id: Some(session.id.clone()),
        correlation_ids: vec!["c-1".into(), "c-2".into()],
        ..PlanContext::new(p1.id.clone(), json!({"state": "searching"}))
    };
    let stored = w.store_plan_context(&alice(), context).await.unwrap();
    assert_eq!(
        w.get_plan_context(&alice(), &p1.id).await.unwrap(),
        Some(stored.clone())
    );
    let found = w.get_plan_by_correlation(&alice(), "c-2").await.unwrap();
    assert_eq!(found.map(|c| c.plan_id), Some(p1.id.clone()));
    assert_eq!(
        w.get_plan_by_correlation(&bob(), "c-2").await.unwrap(),
        None
    );
    assert_eq!(w.get_plan_context(&bob(), &p1.id).await.unwrap(), None);
    let taken = PlanContext {
        correlation_ids: vec!["c-1".into()],
        ..PlanContext::new(p2.id.clone(), json!({}))
    };
    assert!(is_conflict(&w.store_plan_context(&alice(), taken).await));
    assert_eq!(w.get_plan_context(&alice(), &p2.id).await.unwrap(), None);
    assert!(is_not_found(
        w.store_plan_context(&bob(), PlanContext::new(p1.id.clone(), json!({})))
            .await
    ));
    let moved = PlanContext {
        correlation_ids: vec!["c-3".into()],
        ..stored
    };
    w.store_plan_context(&alice(), moved).await.unwrap();
    assert_eq!(
        w.get_plan_by_correlation(&alice(), "c-1").await.unwrap(),
        None
    );
    assert!(
        w.get_plan_by_correlation(&alice(), "c-3")
            .await
            .unwrap()
            .is_some()
    );
}

/// Plan state: set, get, list, delete one key, delete all (the source
/// design's `test_delete_plan_state` and `test_delete_plan`).
pub async fn working_state_keys<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let plan = w.create_plan(&alice(), goal("g")).await.unwrap();
    let p = plan.id.as_str();
    let e = w
        .set_state(&alice(), p, "data", json!({"test": "value"}), Expect::Any)
        .await
        .unwrap();
    assert_eq!(e.version, 1);
    assert_eq!(e.value, json!({"test": "value"}));
    assert!(w.delete_state(&alice(), p, "data").await.unwrap());
    assert_eq!(w.get_state(&alice(), p, "data").await.unwrap(), None);
    assert!(!w.delete_state(&alice(), p, "data").await.unwrap());
    for (k, v) in [
        ("key1", json!({"a": 1})),
        ("key2", json!({"b": 2})),
        ("key3", json!({"c": 3})),
    ] {
        w.set_state(&alice(), p, k, v, Expect::Any).await.unwrap();
    }
    let keys: Vec<String> = w
        .list_state(&alice(), p)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, vec!["key1", "key2", "key3"]);
    assert!(is_not_found(w.get_state(&bob(), p, "key1").await));
    assert!(is_not_found(w.clear_state(&bob(), p).await));
    assert_eq!(w.clear_state(&alice(), p).await.unwrap(), 3);
    assert_eq!(w.clear_state(&alice(), p).await.unwrap(), 0);
}

/// Optimistic locking: a stale version or a create over an existing key is
/// a conflict and changes nothing; atomic append and increment.
pub async fn working_state_versions_and_atomic_updates<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let plan = w.create_plan(&alice(), goal("g")).await.unwrap();
    let p = plan.id.as_str();
    let v1 = w
        .set_state(&alice(), p, "k", json!("one"), Expect::Absent)
        .await
        .unwrap();
    assert!(is_conflict(
        &w.set_state(&alice(), p, "k", json!("again"), Expect::Absent)
            .await
    ));
    let v2 = w
        .set_state(&alice(), p, "k", json!("two"), Expect::Version(v1.version))
        .await
        .unwrap();
    assert_eq!(v2.version, 2);
    let stale = w
        .set_state(&alice(), p, "k", json!("lost"), Expect::Version(v1.version))
        .await;
    assert_eq!(v1.version, 1);
    assert!(is_conflict(&stale), "{stale:?}");
    let now = w.get_state(&alice(), p, "k").await.unwrap().unwrap();
    assert_eq!((now.value, now.version), (json!("two"), 2));
    assert!(is_conflict(
        &w.set_state(&alice(), p, "new", json!(1), Expect::Version(1))
            .await
    ));
    assert_eq!(w.get_state(&alice(), p, "new").await.unwrap(), None);
    // Append and increment.
    w.append_state(&alice(), p, "history", json!("a"))
        .await
        .unwrap();
    w.append_state(&alice(), p, "history", json!({"b": 1}))
        .await
        .unwrap();
    let h = w.get_state(&alice(), p, "history").await.unwrap().unwrap();
    assert_eq!(h.value, json!(["a", {"b": 1}]));
    assert_eq!(h.version, 2);
    // A set after appends replaces the list; appends go on from there.
    let replaced = w
        .set_state(&alice(), p, "history", json!(["x"]), Expect::Version(2))
        .await
        .unwrap();
    assert_eq!(replaced.version, 3);
    w.append_state(&alice(), p, "history", json!("y"))
        .await
        .unwrap();
    let h = w.get_state(&alice(), p, "history").await.unwrap().unwrap();
    assert_eq!((h.value, h.version), (json!(["x", "y"]), 4));
    assert!(is_conflict(
        &w.set_state(&alice(), p, "history", json!([]), Expect::Version(3))
            .await
    ));
    assert!(is_conflict(
        &w.increment_state(&alice(), p, "history", 1).await
    ));
    let keys: Vec<String> = w
        .list_state(&alice(), p)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, vec!["history", "k"]);
    assert!(w.delete_state(&alice(), p, "history").await.unwrap());
    assert_eq!(w.get_state(&alice(), p, "history").await.unwrap(), None);
    // What a key holds refuses these: conflicts with its state.
    assert!(is_conflict(
        &w.append_state(&alice(), p, "k", json!(1)).await
    ));
    let c = w.increment_state(&alice(), p, "count", 5).await.unwrap();
    assert_eq!(c.value, json!(5));
    let c = w.increment_state(&alice(), p, "count", -2).await.unwrap();
    assert_eq!((c.value, c.version), (json!(3), 2));
    assert!(is_conflict(&w.increment_state(&alice(), p, "k", 1).await));
    w.set_state(&alice(), p, "big", json!(i64::MAX), Expect::Any)
        .await
        .unwrap();
    assert!(is_conflict(&w.increment_state(&alice(), p, "big", 1).await));
    assert_eq!(
        w.get_state(&alice(), p, "big")
            .await
            .unwrap()
            .unwrap()
            .value,
        json!(i64::MAX)
    );
    // Keys and items arrive intact whatever characters they hold (quotes,
    // backslashes, SQL, escapes, control characters, emoji).
    let odd_key = "it's \\ \"odd\" $1; --";
    let odd_items = [
        json!("it's a \\ backslash, \"quoted\", E'x', $1; DROP TABLE plans; -- \u{1F600} \\u0041"),
        json!({"a'b": ["\\", "'", "{\"x\"}", "\n\t"]}),
    ];
    for item in &odd_items {
        w.append_state(&alice(), p, odd_key, item.clone())
            .await
            .unwrap();
    }
    let h = w.get_state(&alice(), p, odd_key).await.unwrap().unwrap();
    assert_eq!(h.value, json!(odd_items));
    let c = w
        .increment_state(&alice(), p, "o'count\\", 7)
        .await
        .unwrap();
    assert_eq!((c.key.as_str(), c.value), ("o'count\\", json!(7)));
}

/// No lost update: 8 concurrent workers × 200 appends to one plan's action
/// history leave exactly 1,600 actions.
pub async fn working_concurrent_appends_lose_nothing<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let plan = s.working.create_plan(&alice(), goal("g")).await.unwrap();
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let w = s.working.clone();
            let plan = plan.id.clone();
            async move {
                for i in 0..200 {
                    w.append_state(
                        &alice(),
                        &plan,
                        "action_history",
                        json!(format!("w{worker}-{i}")),
                    )
                    .await
                    .unwrap();
                }
            }
        })
        .collect();
    futures_join_all(workers).await;
    let history = s
        .working
        .get_state(&alice(), &plan.id, "action_history")
        .await
        .unwrap()
        .unwrap();
    let items = history.value.as_array().unwrap();
    assert_eq!(items.len(), 1600);
    assert_eq!(history.version, 1600);
    let mut distinct: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 1600);
}

/// The source design's worker example: save the task context when
/// delegating, restore it from the sub-task's result, complete it.
pub async fn working_worker_delegates_and_resumes<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let worker = CallerContext::user("alice").with_tenant("t1");
    // handle_research: save, then delegate web.search.requested as sub-task.
    let plan = w
        .create_plan(&worker, goal("research.requested"))
        .await
        .unwrap();
    let sub_task = "search-7f3a";
    w.store_task_context(
        &worker,
        TaskContext {
            plan_id: Some(plan.id.clone()),
            sub_task_ids: vec![sub_task.into()],
            ..TaskContext::new("task-42", json!({"topic": "agent memory"}))
        },
    )
    .await
    .unwrap();
    // handle_result (maybe another process): find the task by the sub-task.
    let restored = w
        .get_task_by_subtask(&worker, sub_task)
        .await
        .unwrap()
        .expect("the parent task");
    assert_eq!(restored.task_id, "task-42");
    assert_eq!(restored.context["topic"], "agent memory");
    // task.complete(): the context goes.
    assert!(
        w.delete_task_context(&worker, &restored.task_id)
            .await
            .unwrap()
    );
    assert_eq!(
        w.get_task_by_subtask(&worker, sub_task).await.unwrap(),
        None
    );
}

/// The source design's planner example: a session per conversation, a plan
/// per goal, a plan context found again by a step's correlation id; listing
/// active plans and the plans of a session.
pub async fn working_planner_sessions_and_plans<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let w = &s.working;
    let planner = alice();
    let session = w
        .create_session(
            &planner,
            NewSession {
                name: Some("Research: agent memory".into()),
                ..NewSession::default()
            },
        )
        .await
        .unwrap();
    let plan = w
        .create_plan(
            &planner,
            NewPlan {
                session_id: Some(session.id.clone()),
                ..goal("research.goal")
            },
        )
        .await
        .unwrap();
    w.store_plan_context(
        &planner,
        PlanContext {
            session_id: Some(session.id.clone()),
            correlation_ids: vec!["step-1".into()],
            ..PlanContext::new(plan.id.clone(), json!({"state": "searching"}))
        },
    )
    .await
    .unwrap();
    // A transition event arrives with correlation id step-1.
    let context = w
        .get_plan_by_correlation(&planner, "step-1")
        .await
        .unwrap()
        .expect("the owning plan");
    assert_eq!(context.plan_id, plan.id);
    let active = w
        .list_plans(
            &planner,
            &PlanQuery {
                status: Some(PlanStatus::Active),
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(active.items.len(), 1);
    let in_session = w
        .list_plans(
            &planner,
            &PlanQuery {
                session_id: Some(session.id.clone()),
                ..PlanQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(in_session.items[0].id, plan.id);
    let sessions = w
        .list_sessions(&planner, &SessionQuery::default())
        .await
        .unwrap();
    assert_eq!(sessions.items.len(), 1);
    assert_eq!(sessions.items[0].plan_count, 1);
}

/// JSON fields (session metadata here) hold at most `MAX_JSON_BYTES`
/// serialised and `MAX_JSON_DEPTH` levels: at the limit stored, one over
/// refused with `InvalidInput` and nothing written, on every backend.
pub async fn working_json_limits_hold_at_the_boundary<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{MAX_JSON_BYTES, MAX_JSON_DEPTH};
    let s = factory().await;
    let ann = alice();
    // `{"k":"…"}` is 8 bytes around the string.
    let sized = |n: usize| json!({ "k": "x".repeat(n - 8) });
    let nested = |levels: usize| {
        let mut v = json!(1);
        for _ in 0..levels {
            v = json!([v]);
        }
        json!({ "k": v })
    };
    for (metadata, ok) in [
        (sized(MAX_JSON_BYTES - 1), true),
        (sized(MAX_JSON_BYTES), true),
        (sized(MAX_JSON_BYTES + 1), false),
        // The object is level 0, each array one more, the number the last.
        (nested(MAX_JSON_DEPTH - 1), true),
        (nested(MAX_JSON_DEPTH), false),
    ] {
        let result = s
            .working
            .create_session(
                &ann,
                NewSession {
                    metadata,
                    ..NewSession::default()
                },
            )
            .await;
        if ok {
            result.unwrap();
        } else {
            assert!(is_invalid(result));
        }
    }
    let listed = s
        .working
        .list_sessions(&ann, &SessionQuery::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 3, "the refused ones wrote nothing");
}
