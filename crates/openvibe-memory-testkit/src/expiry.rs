//! Expiry: records with `expires_at` vanish from every read at that
//! instant, a store over an expired record's id or key stores it anew, the
//! caller's retention caps the expiry, and the cleanup deletes expired
//! records in batches, audited, for callers allowed to run it.
//!
//! The cases wait for real time to pass (under two seconds each): the
//! backends compare with their own clock (PostgreSQL's `now()`).

use std::future::Future;
use std::time::Duration as StdDuration;

use chrono::{DateTime, TimeDelta, Utc};
use openvibe_protocols::{
    AuditOp, AuditQuery, CallerContext, Classification, Episode, Fact, FactQuery, Grants,
    KnowledgeQuery, NewKnowledge, Retention, Rights, Stores, store_time,
};

use crate::support::{episode, is_conflict, is_invalid, is_not_found, is_unauthorized};

/// Sleep until `at` has passed (plus a little, for clock granularity).
async fn wait_past(at: DateTime<Utc>) {
    let left = (at - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(left + StdDuration::from_millis(50)).await;
}

/// `e` in `namespace`, expiring at `expires_at`.
fn placed(mut e: Episode, namespace: &str, expires_at: Option<DateTime<Utc>>) -> Episode {
    e.meta.namespace = namespace.to_owned();
    e.meta.expires_at = expires_at;
    e
}

/// `ms` milliseconds from now, to the microsecond (what stores keep).
fn soon(ms: i64) -> DateTime<Utc> {
    store_time() + TimeDelta::milliseconds(ms)
}

/// Every kind that expires is visible until `expires_at` and invisible
/// from then on, to every read (get, query, text search, counts); its id
/// or upsert key can be stored again; an `expires_at` in the past is
/// refused (a conflict) and writes nothing.
pub async fn expiry_hides_records_from_that_instant<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let me = CallerContext::agent("a")
        .with_tenant("t1")
        .with_clearance(openvibe_protocols::Clearance::unrestricted());
    let admin = CallerContext::system().with_tenant("t1");
    let until = soon(900);

    // A time not in the future is refused (a conflict with the clock), and
    // nothing is written.
    let past = Utc::now() - TimeDelta::seconds(1);
    assert!(is_conflict(
        s.facts
            .store(&me, Fact::new("stale", "stale words").expires_at(past))
            .await
    ));
    assert!(is_conflict(
        s.knowledge
            .store_knowledge(
                &me,
                NewKnowledge {
                    expires_at: Some(past),
                    ..NewKnowledge::new("stale knowledge")
                }
            )
            .await
    ));
    assert!(s.facts.get(&me, "stale").await.unwrap().is_none());

    let stored = s
        .facts
        .store(
            &me,
            Fact::new("brief", "ephemeral words")
                .classification(Classification::Public)
                .expires_at(until),
        )
        .await
        .unwrap();
    assert_eq!(stored.meta.expires_at, Some(until));
    s.facts
        .store(&me, Fact::new("lasting", "lasting words"))
        .await
        .unwrap();
    s.episodes
        .store(&me, placed(episode("e1", "a", 0), "", Some(until)))
        .await
        .unwrap();
    s.insights
        .store(
            &me,
            openvibe_protocols::Insight::new("i1", "a", "ephemeral insight", 0.9).expires_at(until),
        )
        .await
        .unwrap();
    let knowledge = s
        .knowledge
        .store_knowledge(
            &me,
            NewKnowledge {
                external_id: Some("k1".into()),
                expires_at: Some(until),
                ..NewKnowledge::new("ephemeral knowledge")
            },
        )
        .await
        .unwrap();
    assert_eq!(knowledge.meta.expires_at, Some(until));

    // Visible until then.
    let got = s.facts.get(&me, "brief").await.unwrap().unwrap();
    assert_eq!(got.meta.expires_at, Some(until), "expires_at round-trips");
    assert_eq!(
        s.facts
            .query(&me, &FactQuery::new().text("ephemeral"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(s.episodes.get(&me, "e1").await.unwrap().is_some());
    assert!(s.insights.get(&me, "i1").await.unwrap().is_some());
    assert!(
        s.knowledge
            .get_knowledge(&me, &knowledge.id)
            .await
            .unwrap()
            .is_some()
    );
    let facts_counted = |counts: Vec<openvibe_protocols::NamespaceCount>| {
        counts
            .iter()
            .filter(|c| c.kind == "fact")
            .map(|c| c.records)
            .sum::<u64>()
    };
    assert_eq!(
        facts_counted(s.admin.namespace_counts(&admin).await.unwrap()),
        2
    );

    wait_past(until).await;

    // Gone from every read.
    assert!(s.facts.get(&me, "brief").await.unwrap().is_none());
    let ids: Vec<String> = s
        .facts
        .query(&me, &FactQuery::new())
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(ids, ["lasting"]);
    assert!(
        s.facts
            .query(&me, &FactQuery::new().text("ephemeral"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.episodes.get(&me, "e1").await.unwrap().is_none());
    assert!(
        s.episodes
            .query(&me, &openvibe_protocols::EpisodeQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.insights.get(&me, "i1").await.unwrap().is_none());
    assert!(
        s.knowledge
            .get_knowledge(&me, &knowledge.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.knowledge
            .query_knowledge(&me, &KnowledgeQuery::by_text("ephemeral knowledge"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        facts_counted(s.admin.namespace_counts(&admin).await.unwrap()),
        1
    );
    // Changes find nothing to change.
    assert!(is_not_found(
        s.facts
            .update(&me, Fact::new("brief", "changed words"))
            .await
    ));
    assert!(is_not_found(s.facts.delete(&me, "brief").await));
    assert!(is_not_found(
        s.knowledge.delete_knowledge(&me, &knowledge.id).await
    ));

    // Storing the id (or the upsert key) again stores a new record.
    let again = s
        .facts
        .store(&me, Fact::new("brief", "renewed words"))
        .await
        .unwrap();
    assert_eq!(again.meta.expires_at, None);
    let got = s.facts.get(&me, "brief").await.unwrap().unwrap();
    assert_eq!(got.content, "renewed words");
    assert_eq!(got.access_count, 0, "a new record, not the old one");
    let renewed = s
        .knowledge
        .store_knowledge(
            &me,
            NewKnowledge {
                external_id: Some("k1".into()),
                ..NewKnowledge::new("renewed knowledge")
            },
        )
        .await
        .unwrap();
    assert_eq!(renewed.meta.expires_at, None);
    assert_eq!(
        s.knowledge
            .get_knowledge(&me, &renewed.id)
            .await
            .unwrap()
            .unwrap()
            .content,
        "renewed knowledge"
    );
}

/// A caller's retention caps `expires_at` (on create and on update); the
/// cleanup refuses callers that manage no namespace, deletes expired
/// records of every kind and owner where the caller manages, in batches,
/// each deletion audited, and leaves the rest.
pub async fn expiry_retention_and_cleanup<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let retention = Retention {
        namespace: Some("scratch".into()),
        kind: None,
        keep_secs: 1,
    };
    let grants = |rights: Rights| {
        Grants::new("scratch")
            .grant("scratch", rights, false)
            .grant("keep", rights, false)
            .recall(["scratch", "keep"])
            .retain(retention.clone())
    };
    let writer = CallerContext::agent("w")
        .with_tenant("t1")
        .with_grants(grants(Rights::OWN));
    let manager = CallerContext::agent("m")
        .with_tenant("t1")
        .with_grants(grants(Rights::ALL));
    let admin = CallerContext::system().with_tenant("t1");

    // Capped on create: one second after creation, whatever was asked.
    let created = store_time();
    let capped = s
        .facts
        .store(
            &writer,
            Fact::new("f1", "scratch note")
                .created_at(created)
                .expires_at(created + TimeDelta::days(30)),
        )
        .await
        .unwrap();
    let limit = created + TimeDelta::seconds(1);
    assert_eq!(capped.meta.expires_at, Some(limit));
    let earlier = created + TimeDelta::milliseconds(500);
    let kept = s
        .facts
        .store(
            &writer,
            Fact::new("f2", "scratch note two")
                .created_at(created)
                .expires_at(earlier),
        )
        .await
        .unwrap();
    assert_eq!(kept.meta.expires_at, Some(earlier), "an earlier time stays");
    // ... and on update, counted from the record's creation.
    let updated = s
        .facts
        .update(
            &writer,
            Fact::new("f1", "scratch note, changed").expires_at(created + TimeDelta::days(1)),
        )
        .await
        .unwrap();
    assert_eq!(updated.meta.expires_at, Some(limit));
    // A record whose retention has already run out is refused.
    assert!(is_conflict(
        s.facts
            .store(
                &writer,
                Fact::new("old", "imported").created_at(created - TimeDelta::hours(1))
            )
            .await
    ));
    s.facts
        .store(&writer, Fact::new("f3", "scratch note three"))
        .await
        .unwrap();
    s.episodes
        .store(&writer, placed(episode("e1", "w", 0), "scratch", None))
        .await
        .unwrap();
    let knowledge = s
        .knowledge
        .store_knowledge(&writer, NewKnowledge::new("scratch knowledge"))
        .await
        .unwrap();
    assert!(
        knowledge.meta.expires_at.is_some(),
        "retention covers knowledge"
    );
    // Outside the retention's namespace: kept until deleted.
    let lasting = s
        .facts
        .store(&writer, Fact::new("f4", "kept note").namespace("keep"))
        .await
        .unwrap();
    assert_eq!(lasting.meta.expires_at, None);
    let forever: Episode = s
        .episodes
        .store(&writer, placed(episode("e2", "w", 1), "keep", None))
        .await
        .unwrap();
    assert_eq!(forever.meta.expires_at, None);

    wait_past(Utc::now() + TimeDelta::seconds(1)).await;
    assert!(s.facts.get(&writer, "f1").await.unwrap().is_none());

    // Who may clean up.
    assert!(is_invalid(s.admin.delete_expired(&manager, 0).await));
    assert!(is_unauthorized(s.admin.delete_expired(&writer, 10).await));
    let ungoverned = CallerContext::agent("w").with_tenant("t1");
    assert!(is_unauthorized(
        s.admin.delete_expired(&ungoverned, 10).await
    ));

    // Five expired records (three facts, an episode, knowledge), two per batch.
    let mut batches = Vec::new();
    loop {
        let deleted = s.admin.delete_expired(&manager, 2).await.unwrap();
        batches.push(deleted);
        if deleted == 0 {
            break;
        }
    }
    assert_eq!(batches, [2, 2, 1, 0]);
    assert!(s.facts.get(&writer, "f4").await.unwrap().is_some());
    assert!(s.episodes.get(&writer, "e2").await.unwrap().is_some());
    let deletes = s
        .audit
        .query(
            &admin,
            &AuditQuery {
                operation: Some(AuditOp::Delete),
                namespace: Some("scratch".into()),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert_eq!(deletes.len(), 5, "every deleted record is audited");
    assert!(deletes.iter().all(|e| e.principal == "agent:m"));
    // Nothing is left to clean, even for the system.
    assert_eq!(s.admin.delete_expired(&admin, 100).await.unwrap(), 0);
}
