//! Spaces (issue 41): members, an ordered message log per space, cursors,
//! routing by domain. On every backend: creation (idempotent, the creator
//! an admin, store fields ignored), one total order per space under racing
//! posters, idempotent reposts, waiting reads woken by a post, cursors that
//! only move forward, routing to a domain's owner or (no owner) to the
//! space's people, and the governance rules (members only, the write right
//! to post, admins or managers to change members, tenants apart), each
//! change audited and each refusal too.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openvibe_protocols::{
    AnswerStatus, AuditOp, AuditQuery, AuditStatus, CallerContext, Classification, Clearance,
    DelegationAnswer, Grants, Member, MessageBody, MessageQuery, Rights, Space, SpaceMessage,
    SpaceQuery, Stores,
};
use serde_json::json;

use crate::support::{agent, is_conflict, is_invalid, is_not_found, is_unauthorized, sys};

fn cro() -> CallerContext {
    agent("cro").with_clearance(Clearance::unrestricted())
}

fn cmo() -> CallerContext {
    agent("cmo").with_clearance(Clearance::unrestricted())
}

fn ann() -> CallerContext {
    CallerContext::user("ann")
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted())
}

fn deals(id: &str) -> Space {
    Space::new("deals")
        .id(id)
        .namespace("shared")
        .domain("revenue")
        .member(Member::new("agent:cmo").owning(["marketing"]))
        .member(Member::new("user:ann"))
}

fn seqs(messages: &[SpaceMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.seq).collect()
}

/// A space is created with its creator as an admin member, whatever the
/// store-maintained fields said; creating it again returns it; another
/// title under its id is a conflict; bad input is refused and writes
/// nothing; members see it, others do not.
pub async fn spaces_are_created_with_members_idempotently<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let mut forged = deals("s1");
    forged.head = 99;
    forged.meta.owner = "user:mallory".into();
    forged.meta.tenant_id = "t9".into();
    let created = s.spaces.create(&cro(), forged).await.unwrap();
    assert_eq!(created.head, 0);
    assert_eq!(created.meta.owner, "agent:cro");
    assert_eq!(created.meta.tenant_id, "t1");
    assert_eq!(created.members[0], Member::new("agent:cro").admin());
    assert_eq!(created.members.len(), 3);
    let again = s.spaces.create(&cro(), deals("s1")).await.unwrap();
    assert_eq!(again.meta.created_at, created.meta.created_at);
    assert!(is_conflict(
        s.spaces.create(&cro(), Space::new("other").id("s1")).await
    ));
    assert!(is_invalid(
        s.spaces.create(&cro(), Space::new(" ").id("s2")).await
    ));
    assert!(is_invalid(
        s.spaces
            .create(&cro(), Space::new("x").id("s3").member(Member::new("cmo")))
            .await
    ));
    assert!(is_invalid(
        s.spaces.create(&cro(), Space::new("x").id("a/b")).await
    ));
    assert!(s.spaces.get(&cro(), "s2").await.unwrap().is_none());
    assert!(s.spaces.get(&cro(), "s3").await.unwrap().is_none());
    assert_eq!(
        s.spaces.get(&cmo(), "s1").await.unwrap().map(|s| s.title),
        Some("deals".to_owned())
    );
    assert!(s.spaces.get(&agent("cfo"), "s1").await.unwrap().is_none());
    assert!(
        s.spaces
            .get(&cro().with_tenant("t2"), "s1")
            .await
            .unwrap()
            .is_none()
    );
    // Lists: the spaces the caller is a member of, newest first, by page.
    for i in 0..3 {
        s.spaces
            .create(&cmo(), Space::new(format!("room {i}")).id(format!("r{i}")))
            .await
            .unwrap();
    }
    let first = s
        .spaces
        .list(&cmo(), &SpaceQuery::new().limit(2))
        .await
        .unwrap();
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = s
        .spaces
        .list(&cmo(), &SpaceQuery::new().limit(2).after(cursor))
        .await
        .unwrap();
    let ids: Vec<String> = first
        .items
        .iter()
        .chain(&second.items)
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(ids, ["r2", "r1", "r0", "s1"]);
    assert_eq!(second.next_cursor, None);
    let cro_sees: Vec<String> = s
        .spaces
        .list(&cro(), &SpaceQuery::new())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(cro_sees, ["s1"]);
    assert!(is_invalid(
        s.spaces.list(&cro(), &SpaceQuery::new().limit(0)).await
    ));
}

/// Messages are appended in order, each with the next `seq`; a batch is
/// all or nothing; posting an id again returns the stored message and
/// appends nothing; another message under that id is a conflict; reads
/// page by `after`, filter by thread and by recipient; routing sends a
/// domain's message to its owner, or to the people, escalated.
pub async fn spaces_log_messages_in_order_once<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.spaces.create(&cro(), deals("s1")).await.unwrap();
    let request =
        SpaceMessage::request("marketing", "case study", json!({"deal": "acme"})).id("req1");
    let posted = s
        .spaces
        .post_all(
            &cro(),
            "s1",
            vec![request.clone(), SpaceMessage::text("hello all")],
        )
        .await
        .unwrap();
    assert_eq!(seqs(&posted), [1, 2]);
    assert_eq!(posted[0].to, ["agent:cmo"]);
    assert!(!posted[0].escalated);
    assert_eq!(posted[0].meta.owner, "agent:cro");
    assert_eq!(posted[0].space_id, "s1");
    assert!(posted[1].to.is_empty() && !posted[1].id.is_empty());
    // A retried post returns the stored message.
    let again = s.spaces.post(&cro(), "s1", request.clone()).await.unwrap();
    assert_eq!((again.seq, again.id.as_str()), (1, "req1"));
    assert!(is_conflict(
        s.spaces
            .post(&cro(), "s1", SpaceMessage::text("else").id("req1"))
            .await
    ));
    // Ids are unique in the tenant: the same post to another space is
    // another post.
    s.spaces
        .create(&cro(), Space::new("side").id("s2"))
        .await
        .unwrap();
    assert!(is_conflict(
        s.spaces.post(&cro(), "s2", request.clone()).await
    ));
    // A bad message anywhere in a batch appends none of it.
    assert!(is_invalid(
        s.spaces
            .post_all(
                &cro(),
                "s1",
                vec![SpaceMessage::text("fine"), SpaceMessage::text("  ")]
            )
            .await
    ));
    // Not a member: a conflict with the space's members.
    assert!(is_conflict(
        s.spaces
            .post(&cro(), "s1", SpaceMessage::text("x").to("agent:cfo"))
            .await
    ));
    // The owner answers in the request's thread; nobody owns finance, so
    // that one goes to the people.
    let answer = SpaceMessage::answer(
        &posted[0],
        DelegationAnswer {
            request: "req1".into(),
            status: AnswerStatus::Done,
            output: json!({"url": "https://example.com/acme"}),
            reason: None,
            proposal: None,
        },
    );
    let answered = s.spaces.post(&cmo(), "s1", answer).await.unwrap();
    assert_eq!(answered.seq, 3);
    assert_eq!(answered.to, ["agent:cro"]);
    assert_eq!(answered.thread.as_deref(), Some("req1"));
    let escalated = s
        .spaces
        .post(
            &cro(),
            "s1",
            SpaceMessage::request("finance", "budget", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(
        (escalated.to.clone(), escalated.escalated),
        (vec!["user:ann".to_owned()], true)
    );
    let all = s
        .spaces
        .messages(&ann(), "s1", &MessageQuery::after(0))
        .await
        .unwrap();
    assert_eq!(seqs(&all), [1, 2, 3, 4]);
    assert!(matches!(all[2].body, MessageBody::Answer(_)));
    let page = s
        .spaces
        .messages(&ann(), "s1", &MessageQuery::after(1).limit(2))
        .await
        .unwrap();
    assert_eq!(seqs(&page), [2, 3]);
    let thread = s
        .spaces
        .messages(&cro(), "s1", &MessageQuery::after(0).thread("req1"))
        .await
        .unwrap();
    assert_eq!(seqs(&thread), [1, 3]);
    let for_cmo = s
        .spaces
        .messages(&cmo(), "s1", &MessageQuery::after(0).for_me())
        .await
        .unwrap();
    assert_eq!(seqs(&for_cmo), [1, 2]);
    let for_ann = s
        .spaces
        .messages(&ann(), "s1", &MessageQuery::after(0).for_me())
        .await
        .unwrap();
    assert_eq!(seqs(&for_ann), [2, 4]);
    assert_eq!(s.spaces.get(&cro(), "s1").await.unwrap().unwrap().head, 4);
    assert!(is_invalid(
        s.spaces
            .messages(&cro(), "s1", &MessageQuery::after(0).limit(0))
            .await
    ));
    assert!(is_invalid(
        s.spaces
            .messages(&cro(), "s1", &MessageQuery::after(0).wait_ms(3_600_000))
            .await
    ));
}

/// Racing posters get one total order: every `seq` from 1 to the number of
/// messages exactly once, each poster's messages in the order it posted
/// them.
pub async fn spaces_order_racing_posts_totally<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = Arc::new(factory().await);
    let mut space = Space::new("busy").id("busy");
    for i in 0..8 {
        space = space.member(Member::new(format!("agent:w{i}")));
    }
    s.spaces.create(&cro(), space).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let me = agent(&format!("w{i}")).with_clearance(Clearance::unrestricted());
            for j in 0..12 {
                let m = SpaceMessage::text(format!("{i}.{j}")).id(format!("w{i}-{j}"));
                s.spaces.post(&me, "busy", m).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = s
        .spaces
        .messages(&cro(), "busy", &MessageQuery::after(0).limit(1000))
        .await
        .unwrap();
    assert_eq!(seqs(&log), (1..=96).collect::<Vec<u64>>());
    for i in 0..8 {
        let mine: Vec<&str> = log
            .iter()
            .filter(|m| m.meta.owner == format!("agent:w{i}"))
            .map(|m| m.id.as_str())
            .collect();
        let want: Vec<String> = (0..12).map(|j| format!("w{i}-{j}")).collect();
        assert_eq!(mine, want, "poster w{i}'s messages keep its order");
    }
}

/// A read that finds nothing waits for the next post (and wakes for it
/// promptly), or returns nothing when its wait ends; cursors move forward
/// only, never past the head, and are each member's own.
pub async fn spaces_wake_waiting_readers_and_keep_cursors<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = Arc::new(factory().await);
    s.spaces.create(&cro(), deals("s1")).await.unwrap();
    let started = Instant::now();
    let empty = s
        .spaces
        .messages(&cmo(), "s1", &MessageQuery::after(0).wait_ms(150))
        .await
        .unwrap();
    assert!(empty.is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "the read waited"
    );
    let reader = {
        let s = s.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let got = s
                .spaces
                .messages(&cmo(), "s1", &MessageQuery::after(0).wait_ms(20_000))
                .await
                .unwrap();
            (got, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.spaces
        .post(&cro(), "s1", SpaceMessage::text("wake up"))
        .await
        .unwrap();
    let (got, waited) = reader.await.unwrap();
    assert_eq!(seqs(&got), [1]);
    assert!(
        waited < Duration::from_secs(10),
        "the post woke the reader (it waited {waited:?})"
    );
    // A reader waiting for messages for itself is not woken by others'.
    s.spaces
        .post(&cro(), "s1", SpaceMessage::text("to ann").to("user:ann"))
        .await
        .unwrap();
    let mine = s
        .spaces
        .messages(&cmo(), "s1", &MessageQuery::after(1).for_me().wait_ms(100))
        .await
        .unwrap();
    assert!(mine.is_empty(), "{mine:?}");
    // Cursors.
    assert_eq!(s.spaces.cursor(&cmo(), "s1").await.unwrap(), 0);
    assert_eq!(s.spaces.ack(&cmo(), "s1", 1).await.unwrap(), 1);
    assert_eq!(
        s.spaces.ack(&cmo(), "s1", 0).await.unwrap(),
        1,
        "never back"
    );
    assert_eq!(s.spaces.ack(&cmo(), "s1", 50).await.unwrap(), 2, "the head");
    assert_eq!(s.spaces.cursor(&cmo(), "s1").await.unwrap(), 2);
    assert_eq!(s.spaces.cursor(&cro(), "s1").await.unwrap(), 0, "its own");
    assert!(is_not_found(s.spaces.ack(&agent("cfo"), "s1", 1).await));
    assert!(is_not_found(s.spaces.cursor(&agent("cfo"), "s1").await));
}

/// Only members read and post; posting needs the write right in the
/// space's namespace; changing members needs an admin or a manager;
/// clearance and tenants hold; every change is audited, refusals too.
pub async fn spaces_are_governed_and_audited<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    s.spaces.create(&cro(), deals("s1")).await.unwrap();
    s.spaces
        .post(&cro(), "s1", SpaceMessage::text("secret plan").id("m1"))
        .await
        .unwrap();
    // A stranger sees nothing and cannot post or join.
    let cfo = agent("cfo").with_clearance(Clearance::unrestricted());
    assert!(is_not_found(
        s.spaces.messages(&cfo, "s1", &MessageQuery::after(0)).await
    ));
    assert!(is_not_found(
        s.spaces.post(&cfo, "s1", SpaceMessage::text("hi")).await
    ));
    assert!(is_not_found(
        s.spaces
            .add_member(&cfo, "s1", Member::new("agent:cfo"))
            .await
    ));
    // Clearance on the space's domain.
    let low = agent("cmo").with_domain_clearance("revenue", Classification::Public);
    assert!(s.spaces.get(&low, "s1").await.unwrap().is_none());
    // A member that is no admin cannot change members.
    assert!(is_unauthorized(
        s.spaces
            .add_member(&cmo(), "s1", Member::new("agent:cfo"))
            .await
    ));
    // A member without the write right reads but does not post.
    let reader_only = cmo().with_grants(Grants::new("shared").grant("shared", Rights::READ, false));
    // And one without the read right there sees nothing.
    let no_read = cmo().with_grants(Grants::new("cmo").grant("cmo", Rights::OWN, false));
    assert!(s.spaces.get(&no_read, "s1").await.unwrap().is_none());
    assert_eq!(
        s.spaces
            .messages(&reader_only, "s1", &MessageQuery::after(0))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(is_unauthorized(
        s.spaces
            .post(&reader_only, "s1", SpaceMessage::text("hi"))
            .await
    ));
    // The admin adds a member, who then reads the log; removing it ends that.
    let added = s
        .spaces
        .add_member(&cro(), "s1", Member::new("agent:cfo").owning(["finance"]))
        .await
        .unwrap();
    assert!(added.find_member("agent:cfo").is_some());
    assert_eq!(
        s.spaces
            .messages(&cfo, "s1", &MessageQuery::after(0))
            .await
            .unwrap()
            .len(),
        1
    );
    let routed = s
        .spaces
        .post(
            &cro(),
            "s1",
            SpaceMessage::request("finance", "budget", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(routed.to, ["agent:cfo"]);
    s.spaces
        .remove_member(&cro(), "s1", "agent:cfo")
        .await
        .unwrap();
    assert!(s.spaces.get(&cfo, "s1").await.unwrap().is_none());
    assert!(is_conflict(
        s.spaces.remove_member(&cro(), "s1", "agent:cro").await
    ));
    assert!(is_not_found(
        s.spaces.remove_member(&cro(), "s1", "agent:nobody").await
    ));
    // Another tenant's caller with the same name sees nothing.
    let other = cro().with_tenant("t2");
    assert!(is_not_found(
        s.spaces
            .messages(&other, "s1", &MessageQuery::after(0))
            .await
    ));
    // The trail: the space, its members, the messages, and the refusals.
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    let ok = |kind: &str, op: AuditOp, id: &str| {
        trail.iter().any(|e| {
            e.kind == kind
                && e.operation == op
                && e.record_id.as_deref() == Some(id)
                && e.status == AuditStatus::Ok
        })
    };
    assert!(ok("space", AuditOp::Insert, "s1"), "{trail:#?}");
    assert!(ok("message", AuditOp::Insert, "m1"), "{trail:#?}");
    let member_changes: Vec<&str> = trail
        .iter()
        .filter(|e| e.kind == "space" && e.operation == AuditOp::Update)
        .filter(|e| e.status == AuditStatus::Ok)
        .filter_map(|e| e.filters.as_ref()?["transition"].as_str())
        .collect();
    assert!(
        member_changes.contains(&"add_member") && member_changes.contains(&"remove_member"),
        "{member_changes:?}"
    );
    assert!(
        trail.iter().any(|e| e.status == AuditStatus::Refused
            && e.kind == "message"
            && e.principal.contains("cmo")),
        "the refused post is audited: {trail:#?}"
    );
}
