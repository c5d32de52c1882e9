//! Erasure by subject: everything about an entity goes, from every kind
//! and every read path, with its derived data; the report proves it; the
//! audit trail keeps that it happened, redacts what quoted the subject and
//! still verifies.

use std::future::Future;

use openvibe_memory::{ForgetOptions, forget};
use openvibe_protocols::{
    AuditQuery, Belief, CallerContext, ERASURE_AUDIT_KIND, ErasureSubject, Fact, FactQuery, Goal,
    Insight, KnowledgeQuery, NewPlan, Proposal, REDACTION_AUDIT_KIND, RawCallQuery, Space,
    SpaceMessage, Stores, VerifyChain, mentions,
};
use serde_json::json;

use crate::support::{agent, episode, is_invalid, is_unauthorized, sys};

const WHO: &str = "acme_corp";

/// Something about `WHO` in every kind (and something else beside it),
/// written by `cro` in tenant t1. Returns the ids of the unrelated records.
async fn seed(s: &Stores, cro: &CallerContext) {
    s.facts
        .store(cro, Fact::new("f1", "Renewal due in March").entity(WHO))
        .await
        .unwrap();
    s.facts
        .store(cro, Fact::new("f2", "ACME_CORP asked for a discount"))
        .await
        .unwrap();
    s.facts
        .store(cro, Fact::new("keep-f", "Globex renewed").entity("globex"))
        .await
        .unwrap();
    let mut e = episode("e1", "cro", 1);
    e.entity = WHO.into();
    s.episodes.store(cro, e).await.unwrap();
    s.episodes
        .store(cro, episode("keep-e", "cro", 2))
        .await
        .unwrap();
    // A raw call behind the episode: it names no entity itself.
    let mut call = crate::raw::raw("r1", "cro", 1, Some("e1"));
    call.entity = String::new();
    if let Some(origin) = call.request.origin.as_mut() {
        origin.entity = String::new();
    }
    s.raw.append(cro, vec![call]).await.unwrap();
    s.insights
        .store(cro, Insight::new("i1", "cro", "acme_corp buys in Q4", 0.8))
        .await
        .unwrap();
    s.knowledge
        .store_knowledge(
            cro,
            crate::semantic::knowledge("Contract notes for Acme_Corp: net 60"),
        )
        .await
        .unwrap();
    s.knowledge
        .store_knowledge(cro, crate::semantic::knowledge("Globex pays net 30"))
        .await
        .unwrap();
    s.working
        .create_plan(
            cro,
            NewPlan {
                goal_event: "renewal".into(),
                goal_data: json!({"account": WHO}),
                response_event: "renewal.done".into(),
                ..NewPlan::default()
            },
        )
        .await
        .unwrap();
    s.proposals
        .create(
            cro,
            Proposal::new(
                "cro",
                "Give acme_corp 10% off",
                openvibe_protocols::Action::tool(
                    "give_discount",
                    "apply_discount",
                    json!({"pct": 10}),
                ),
            )
            .id("p1"),
        )
        .await
        .unwrap();
    s.beliefs
        .propose(
            cro,
            Belief::new("cro", "acme_corp renews late", 0.6).id("b1"),
        )
        .await
        .unwrap();
    let mut goal = Goal::new(crate::goals::objective("g1"));
    goal.objective.title = "Win acme_corp back".into();
    s.goals.put(cro, goal).await.unwrap();
    s.spaces
        .create(cro, Space::new("acme_corp deal room").id("s1"))
        .await
        .unwrap();
    s.spaces
        .create(cro, Space::new("side").id("s2"))
        .await
        .unwrap();
    s.spaces
        .post(
            cro,
            "s2",
            SpaceMessage::text("call acme_corp tomorrow").id("m1"),
        )
        .await
        .unwrap();
    s.spaces
        .post(cro, "s2", SpaceMessage::text("call globex").id("keep-m"))
        .await
        .unwrap();
    s.inbox
        .push(
            cro,
            openvibe_protocols::InboxEvent::new(
                "cro",
                openvibe_protocols::DecisionEvent::new("ev1", "renewal.due", "revenue")
                    .summary("acme_corp renews in March"),
                openvibe_protocols::EventSource::Code,
            ),
        )
        .await
        .unwrap();
    s.inbox
        .push(
            cro,
            openvibe_protocols::InboxEvent::new(
                "cro",
                openvibe_protocols::DecisionEvent::new("keep-ev", "renewal.due", "revenue")
                    .summary("globex renews in May"),
                openvibe_protocols::EventSource::Code,
            ),
        )
        .await
        .unwrap();
    // Searches that quote the subject: the audit trail records them.
    s.facts
        .query(cro, &FactQuery::new().entity(WHO))
        .await
        .unwrap();
    s.audit.flush().await.unwrap();
}

/// An erasure of an entity that appears in every kind leaves nothing
/// about it on any read path, keeps everything else, reports per kind
/// what it matched, deleted and found after (0), redacts the audit
/// entries that quoted it (the chain still verifies, and shows where),
/// and records itself.
pub async fn erasure_forgets_an_entity_everywhere<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    seed(&s, &cro).await;
    let subject = ErasureSubject::Entity(WHO.into());

    // A dry run counts and changes nothing.
    let dry = forget(
        s.admin.as_ref(),
        s.audit.as_ref(),
        &sys(),
        &subject,
        ForgetOptions {
            batch: 3,
            dry_run: true,
        },
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(dry.dry_run && dry.deleted() == 0);
    assert!(s.facts.get(&cro, "f1").await.unwrap().is_some());
    let matched = |kind: &str| {
        dry.kinds
            .iter()
            .find(|k| k.kind == kind)
            .map(|k| k.matched)
            .unwrap()
    };
    for (kind, n) in [
        ("fact", 2),
        ("episode", 1),
        ("raw_call", 1),
        ("insight", 1),
        ("knowledge", 1),
        ("plan", 1),
        ("proposal", 1),
        ("belief", 1),
        ("goal", 1),
        ("space", 1),
        ("message", 1),
        ("inbox_event", 1),
    ] {
        assert_eq!(matched(kind), n, "{kind} matched");
    }
    assert!(dry.audit_redacted >= 1);

    let mut seen = Vec::new();
    let report = forget(
        s.admin.as_ref(),
        s.audit.as_ref(),
        &sys(),
        &subject,
        ForgetOptions {
            batch: 3,
            dry_run: false,
        },
        &mut |done, total| seen.push((done, total)),
    )
    .await
    .unwrap();
    assert!(report.complete(), "{report:?}");
    assert_eq!(report.deleted(), report.matched());
    assert_eq!(report.matched(), 13);
    assert!(seen.len() > 2, "progress in batches: {seen:?}");
    for k in &report.kinds {
        assert_eq!(k.after, 0, "{} left", k.kind);
    }

    // Nothing about the subject on any read path ...
    assert!(s.facts.get(&cro, "f1").await.unwrap().is_none());
    assert!(s.facts.get(&cro, "f2").await.unwrap().is_none());
    assert!(
        s.facts
            .query(&cro, &FactQuery::new().text("acme_corp"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.episodes.get(&cro, "e1").await.unwrap().is_none());
    assert!(s.raw.get(&cro, "r1").await.unwrap().is_none());
    assert!(
        s.raw
            .query(&cro, &RawCallQuery::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|r| r.episode_id.as_deref() != Some("e1"))
    );
    assert!(s.insights.get(&cro, "i1").await.unwrap().is_none());
    let hits = s
        .knowledge
        .query_knowledge(
            &cro,
            &KnowledgeQuery {
                text: Some("acme_corp contract".into()),
                top_k: 10,
                ..KnowledgeQuery::default()
            },
        )
        .await
        .unwrap();
    assert!(
        hits.iter().all(|h| !mentions(&h.knowledge.content, WHO)),
        "{hits:?}"
    );
    assert!(s.proposals.get(&cro, "p1").await.unwrap().is_none());
    assert!(s.beliefs.get(&cro, "b1").await.unwrap().is_none());
    assert!(s.goals.get(&cro, "g1").await.unwrap().is_none());
    assert!(s.spaces.get(&cro, "s1").await.unwrap().is_none());
    let inbox_id = |event: &str| openvibe_protocols::inbox_event_id("cro", event);
    assert!(s.inbox.get(&cro, &inbox_id("ev1")).await.unwrap().is_none());
    assert!(
        s.inbox
            .get(&cro, &inbox_id("keep-ev"))
            .await
            .unwrap()
            .is_some()
    );
    // ... and everything else stays.
    assert!(s.facts.get(&cro, "keep-f").await.unwrap().is_some());
    assert!(s.episodes.get(&cro, "keep-e").await.unwrap().is_some());
    assert!(s.spaces.get(&cro, "s2").await.unwrap().is_some());
    let counts = s.admin.erasure_counts(&sys(), &subject).await.unwrap();
    assert!(counts.iter().all(|c| c.records == 0), "{counts:?}");

    // The trail: redacted where it quoted the subject, still verifying,
    // and the erasure recorded with its counts.
    let verified = s
        .audit
        .verify(&sys(), &VerifyChain::default())
        .await
        .unwrap();
    assert!(verified.ok(), "{verified:?}");
    assert!(!verified.redacted.is_empty());
    let trail = s
        .audit
        .query(
            &sys(),
            &AuditQuery {
                limit: 10_000,
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    let erasure = trail
        .iter()
        .find(|e| e.kind == ERASURE_AUDIT_KIND)
        .expect("the erasure is audited");
    // (The searches above, after the erasure, quote the subject anew.)
    // Before the erasure's own entry, none names it: not the redacted
    // entries, not the redaction entries (which say only what kind of
    // subject it was).
    let redactions = trail
        .iter()
        .filter(|e| e.kind == REDACTION_AUDIT_KIND && e.chain_seq < erasure.chain_seq)
        .count();
    assert!(redactions > 0, "the redaction is recorded");
    for entry in trail.iter().filter(|e| e.chain_seq < erasure.chain_seq) {
        let quoted = entry
            .filters
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
            + entry.reason.as_deref().unwrap_or_default();
        assert!(!mentions(&quoted, WHO), "still quoted: {entry:?}");
    }
    assert_eq!(erasure.principal, sys().owner_key());
    let filters = erasure.filters.clone().unwrap();
    assert_eq!(filters["subject"]["entity"], WHO);
    assert_eq!(filters["kinds"]["fact"]["deleted"], 2);
    assert_eq!(filters["kinds"]["vector"]["after"], 0);

    // Running it again finds nothing and changes nothing.
    let again = forget(
        s.admin.as_ref(),
        s.audit.as_ref(),
        &sys(),
        &subject,
        ForgetOptions::default(),
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert_eq!((again.matched(), again.deleted()), (0, 0));
    assert!(
        s.audit
            .verify(&sys(), &VerifyChain::default())
            .await
            .unwrap()
            .ok()
    );
}

/// Only a privileged caller erases; a blank subject, a batch of 0 are
/// refused and change nothing; an owner's or a namespace's erasure takes
/// what it owns or holds and nothing else; another tenant is untouched.
pub async fn erasure_is_privileged_and_scoped<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let cro = agent("cro");
    let cmo = agent("cmo");
    s.facts
        .store(&cro, Fact::new("c1", "of the cro"))
        .await
        .unwrap();
    s.facts
        .store(&cmo, Fact::new("m1", "of the cmo"))
        .await
        .unwrap();
    let other = CallerContext::agent("cro").with_tenant("t2");
    s.facts
        .store(&other, Fact::new("t2-c1", "elsewhere"))
        .await
        .unwrap();
    let owner = ErasureSubject::Owner("agent:cro".into());
    assert!(is_unauthorized(s.admin.erase(&cro, &owner, 10).await));
    assert!(is_unauthorized(s.admin.erasure_counts(&cro, &owner).await));
    assert!(is_unauthorized(s.audit.redact(&cro, &owner, false).await));
    assert!(is_invalid(
        s.admin
            .erase(&sys(), &ErasureSubject::Entity(" ".into()), 10)
            .await
    ));
    assert!(is_invalid(s.admin.erase(&sys(), &owner, 0).await));
    assert!(s.facts.get(&cro, "c1").await.unwrap().is_some());

    let report = forget(
        s.admin.as_ref(),
        s.audit.as_ref(),
        &sys(),
        &owner,
        ForgetOptions {
            batch: 1,
            dry_run: false,
        },
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert_eq!((report.matched(), report.deleted()), (1, 1));
    assert!(report.complete());
    assert!(s.facts.get(&cro, "c1").await.unwrap().is_none());
    assert!(s.facts.get(&cmo, "m1").await.unwrap().is_some());
    assert!(s.facts.get(&other, "t2-c1").await.unwrap().is_some());

    let home = s
        .facts
        .get(&cmo, "m1")
        .await
        .unwrap()
        .unwrap()
        .meta
        .namespace;
    let ns = ErasureSubject::Namespace(home);
    let counted = s.admin.erasure_counts(&sys(), &ns).await.unwrap();
    let facts = counted.iter().find(|c| c.kind == "fact").unwrap();
    assert_eq!(facts.records, 1);
    let gone = s.admin.erase(&sys(), &ns, 10).await.unwrap();
    assert_eq!(gone.iter().map(|c| c.records).sum::<u64>(), 1);
    assert!(s.admin.erase(&sys(), &ns, 10).await.unwrap().is_empty());
    assert!(s.facts.get(&cmo, "m1").await.unwrap().is_none());
}

/// A metric's running total goes with the last of its reports: a goal's
/// progress no longer counts an erased report.
pub async fn erasure_takes_a_metrics_total_with_its_reports<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::MetricReport;
    let s = factory().await;
    let cro = agent("cro");
    s.goals
        .put(&cro, Goal::new(crate::goals::objective("g2")))
        .await
        .unwrap();
    let mut closed = MetricReport::add("cro", "pipeline_usd", 40_000.0);
    closed.note = "closed acme_corp".into();
    s.goals.report(&cro, closed).await.unwrap();
    let reports = |p: &openvibe_protocols::GoalProgress| {
        p.key_results
            .iter()
            .find(|k| k.key_result.metric == "pipeline_usd")
            .map(|k| k.reports)
            .unwrap()
    };
    let before = s.goals.progress(&cro, "g2").await.unwrap().unwrap();
    assert_eq!(reports(&before), 1);
    let report = forget(
        s.admin.as_ref(),
        s.audit.as_ref(),
        &sys(),
        &ErasureSubject::Entity(WHO.into()),
        ForgetOptions::default(),
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(report.complete() && report.deleted() == 1, "{report:?}");
    let after = s.goals.progress(&cro, "g2").await.unwrap().unwrap();
    assert_eq!(reports(&after), 0, "{after:?}");
}

/// What an erasure needs is decided once, before anything is deleted
/// (docs/governance.md, "Erasure that proves itself"): a privileged caller,
/// and no right beyond it. It takes every record about the subject in the
/// namespaces the caller may read, whoever owns them, though its grants
/// there give it no `delete` right; a caller that is not privileged is
/// refused before anything goes, and the records stay.
pub async fn erasure_needs_privilege_and_nothing_else<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{Clearance, Grants, Rights, TaskContext};
    let s = factory().await;
    let in_ops = |id: &str, rights: Rights| {
        CallerContext::user(id)
            .with_tenant("t1")
            .with_clearance(Clearance::unrestricted())
            .with_grants(
                Grants::new("ops")
                    .grant("ops", rights, false)
                    .recall(["ops"]),
            )
    };
    let ann = in_ops("ann", Rights::OWN);
    s.facts
        .store(&ann, Fact::new("f1", "Renewal due in March").entity(WHO))
        .await
        .unwrap();
    let mut task = TaskContext::new("t-acme", json!({ "account": WHO }));
    task.meta.namespace = "ops".into();
    s.working.store_task_context(&ann, task).await.unwrap();
    let about = ErasureSubject::Entity(WHO.into());
    let counts = |ctx: CallerContext| {
        let s = &s;
        let about = &about;
        async move {
            let mut counts: Vec<(String, u64)> = s
                .admin
                .erasure_counts(&ctx, about)
                .await
                .unwrap()
                .into_iter()
                .filter(|c| c.records > 0)
                .map(|c| (c.kind, c.records))
                .collect();
            counts.sort();
            counts
        }
    };
    let before = counts(sys()).await;
    assert_eq!(
        before,
        [("fact".to_owned(), 1), ("task_context".to_owned(), 1)],
        "the subject's records"
    );
    // Refused before anything goes: ann may delete her own, but is not
    // privileged.
    assert!(is_unauthorized(s.admin.erase(&ann, &about, 500).await));
    assert_eq!(
        counts(sys()).await,
        before,
        "a refused erasure changed something"
    );
    // A privileged key with read and write, and no delete right, in `ops`.
    let boss = in_ops(
        "boss",
        Rights {
            delete: false,
            ..Rights::OWN
        },
    )
    .with_privileged(true);
    let gone = s.admin.erase(&boss, &about, 500).await.unwrap();
    let mut gone: Vec<(String, u64)> = gone.into_iter().map(|c| (c.kind, c.records)).collect();
    gone.sort();
    assert_eq!(gone, before, "one batch takes all of it");
    assert_eq!(counts(boss.clone()).await, [], "nothing is left");
    assert!(s.facts.get(&ann, "f1").await.unwrap().is_none());
    assert!(
        s.working
            .get_task_context(&ann, "t-acme")
            .await
            .unwrap()
            .is_none()
    );
}
