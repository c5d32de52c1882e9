//! Goals (issue 39): objectives put and revised by version, decomposed once
//! per objective, a role's priorities of a day, and metric reports that
//! move key results exactly, on every backend: idempotent puts, the
//! decomposition's compare-and-set, 8 concurrent reporters with no lost
//! update, the `set` mode, governance (namespaces, owners, tenants) and the
//! audit trail.

use std::future::Future;
use std::sync::Arc;

use chrono::NaiveDate;
use openvibe_protocols::{
    Action, AuditOp, AuditQuery, CallerContext, Clearance, Goal, GoalQuery, Grants, Initiative,
    InitiativeStatus, InitiativeUpdate, KeyResult, MetricReport, Objective, Priorities, Priority,
    Rights, Stores,
};

use crate::support::{agent, is_conflict, is_invalid, is_not_found, is_unauthorized, sys};

fn cro() -> CallerContext {
    agent("cro").with_clearance(Clearance::unrestricted())
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
}

/// The CRO's objective: pipeline $2M (from $500k) and 40 qualified leads.
pub(crate) fn objective(id: &str) -> Objective {
    Objective {
        id: id.into(),
        owner: "cro".into(),
        title: "Pipeline $2M this quarter".into(),
        due: NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
        key_results: vec![
            KeyResult {
                id: "value".into(),
                metric: "pipeline_usd".into(),
                baseline: 500_000.0,
                target: 2_000_000.0,
                unit: "USD".into(),
                due: None,
            },
            KeyResult {
                id: "qualified".into(),
                metric: "qualified_leads".into(),
                baseline: 0.0,
                target: 40.0,
                unit: "leads".into(),
                due: None,
            },
        ],
    }
}

fn initiatives(n: usize) -> Vec<Initiative> {
    (0..n)
        .map(|i| {
            let mut it = Initiative::new(format!("initiative {i}"), &["value"]);
            it.description = "how and why".into();
            it
        })
        .collect()
}

/// A goal is created at version 1, owned by its creator, whatever the
/// store-maintained fields said; the same objective again changes nothing;
/// a changed one is version 2 with the initiatives stale; a bad objective
/// is refused and writes nothing; lists page in id order by role.
pub async fn goals_are_put_and_revised_by_version<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let mut forged = Goal::new(objective("pipeline"));
    forged.version = 7;
    forged.meta.owner = "user:mallory".into();
    forged.initiatives = initiatives(1);
    forged.decomposed = Some("x".into());
    let created = s.goals.put(&cro(), forged).await.unwrap();
    assert_eq!(created.version, 1);
    assert_eq!(created.meta.owner, "agent:cro");
    assert_eq!(created.meta.tenant_id, "t1");
    assert!(created.initiatives.is_empty() && created.decomposed.is_none());
    assert!(!created.fingerprint.is_empty());
    let again = s
        .goals
        .put(&cro(), Goal::new(objective("pipeline")))
        .await
        .unwrap();
    assert_eq!(
        (again.version, &again.fingerprint),
        (1, &created.fingerprint)
    );
    assert_eq!(again.meta.updated_at, created.meta.updated_at);
    let mut changed = objective("pipeline");
    changed.key_results[0].target = 3_000_000.0;
    let revised = s
        .goals
        .put(&cro(), Goal::new(changed.clone()))
        .await
        .unwrap();
    assert_eq!(revised.version, 2);
    assert_ne!(revised.fingerprint, created.fingerprint);
    let got = s.goals.get(&cro(), "pipeline").await.unwrap().unwrap();
    assert_eq!((got.version, got.objective), (2, changed));
    // Another role may not revise it.
    let cmo = agent("cmo").with_clearance(Clearance::unrestricted());
    assert!(is_unauthorized(
        s.goals.put(&cmo, Goal::new(objective("pipeline"))).await
    ));
    // A bad objective: no key result; a target equal to its baseline.
    let mut empty = objective("bad");
    empty.key_results.clear();
    assert!(is_invalid(s.goals.put(&cro(), Goal::new(empty)).await));
    let mut flat = objective("bad");
    flat.key_results[1].target = 0.0;
    assert!(is_invalid(s.goals.put(&cro(), Goal::new(flat)).await));
    assert_eq!(s.goals.get(&cro(), "bad").await.unwrap(), None);
    // Lists: by role, in id order, a page at a time.
    for id in ["a", "b", "c"] {
        s.goals.put(&cro(), Goal::new(objective(id))).await.unwrap();
    }
    let mut other = objective("z-cmo");
    other.owner = "cmo".into();
    s.goals.put(&cmo, Goal::new(other)).await.unwrap();
    let page = s
        .goals
        .list(&sys(), &GoalQuery::new().role("cro").limit(2))
        .await
        .unwrap();
    let ids: Vec<&str> = page.items.iter().map(Goal::id).collect();
    assert_eq!(ids, ["a", "b"]);
    let rest = s
        .goals
        .list(
            &sys(),
            &GoalQuery {
                after: page.next_cursor.clone(),
                ..GoalQuery::new().role("cro").limit(2)
            },
        )
        .await
        .unwrap();
    let ids: Vec<&str> = rest.items.iter().map(Goal::id).collect();
    assert_eq!(ids, ["c", "pipeline"]);
    assert_eq!(rest.next_cursor, None);
    assert!(is_invalid(
        s.goals.list(&sys(), &GoalQuery::new().limit(0)).await
    ));
    // Other tenants see nothing.
    let t2 = CallerContext::agent("cro")
        .with_tenant("t2")
        .with_clearance(Clearance::unrestricted());
    assert_eq!(s.goals.get(&t2, "pipeline").await.unwrap(), None);
    assert_eq!(s.goals.progress(&t2, "pipeline").await.unwrap(), None);
}

/// Decomposing an objective stores its initiatives once: re-running it on
/// the unchanged objective (even racing) keeps the first; a decomposition
/// of an older version is a conflict; initiatives naming no key result of
/// the objective are refused.
pub async fn goals_decompose_once_per_objective<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = Arc::new(factory().await);
    let goal = s
        .goals
        .put(&cro(), Goal::new(objective("pipeline")))
        .await
        .unwrap();
    let fp = goal.fingerprint.clone();
    let raced = futures::future::join_all((1..=8).map(|n| {
        let s = s.clone();
        let fp = fp.clone();
        async move {
            s.goals
                .decompose(&cro(), "pipeline", &fp, initiatives(n))
                .await
        }
    }))
    .await;
    let kept: Vec<usize> = raced
        .iter()
        .map(|r| r.as_ref().unwrap().initiatives.len())
        .collect();
    assert!(
        kept.windows(2).all(|w| w[0] == w[1]),
        "one decomposition: {kept:?}"
    );
    let stored = s.goals.get(&cro(), "pipeline").await.unwrap().unwrap();
    assert!(stored.is_decomposed());
    assert_eq!(stored.initiatives.len(), kept[0]);
    let again = s
        .goals
        .decompose(&cro(), "pipeline", &fp, initiatives(3))
        .await
        .unwrap();
    assert_eq!(
        again.initiatives, stored.initiatives,
        "unchanged: not again"
    );
    let bad = vec![Initiative::new("x", &["nope"])];
    assert!(is_invalid(
        s.goals.decompose(&cro(), "pipeline", &fp, bad).await
    ));
    assert!(is_invalid(
        s.goals.decompose(&cro(), "pipeline", &fp, Vec::new()).await
    ));
    // The objective changes: the old fingerprint is stale, the new one
    // decomposes again.
    let mut changed = objective("pipeline");
    changed.title = "Pipeline $2.5M this quarter".into();
    let revised = s.goals.put(&cro(), Goal::new(changed)).await.unwrap();
    assert!(!revised.is_decomposed());
    assert!(is_conflict(
        s.goals
            .decompose(&cro(), "pipeline", &fp, initiatives(2))
            .await
    ));
    let redone = s
        .goals
        .decompose(&cro(), "pipeline", &revised.fingerprint, initiatives(2))
        .await
        .unwrap();
    assert!(redone.is_decomposed());
    assert_eq!(redone.initiatives.len(), 2);
    assert!(is_not_found(
        s.goals.decompose(&cro(), "nope", &fp, initiatives(1)).await
    ));
}

/// Initiatives are numbered `i1`, `i2`, … where they have no id, keep their
/// owner, domain, due date and action, and move status by status: the same
/// update again changes nothing, an unknown initiative is not found, a done
/// or dropped one changes only when reopened, a reader cannot move one,
/// bad input (an id twice, a due date after the objective's, an overlong
/// note) changes nothing; each move is audited as an `initiative`
/// transition.
pub async fn goals_initiatives_move_by_status<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let goal = s
        .goals
        .put(&cro(), Goal::new(objective("pipeline")))
        .await
        .unwrap();
    let fp = goal.fingerprint.clone();
    let late =
        Initiative::new("too late", &["value"]).due(NaiveDate::from_ymd_opt(2027, 1, 5).unwrap());
    assert!(is_invalid(
        s.goals.decompose(&cro(), "pipeline", &fp, vec![late]).await
    ));
    let twice = vec![
        Initiative::new("a", &["value"]).id("x"),
        Initiative::new("b", &["value"]).id("x"),
    ];
    assert!(is_invalid(
        s.goals.decompose(&cro(), "pipeline", &fp, twice).await
    ));
    let case_study = Action::delegate(
        "write_case_study",
        "marketing",
        serde_json::json!({"account": "acme"}),
    );
    let planned = vec![
        Initiative::new("Re-engage stalled deals", &["value"]).owner("cro"),
        Initiative::new("Case studies for the pipeline", &["value", "qualified"])
            .id("i1")
            .domain("marketing")
            .owner("cmo")
            .due(day(30))
            .action(case_study.clone()),
        Initiative::new("Partner referrals", &["qualified"]),
    ];
    let goal = s
        .goals
        .decompose(&cro(), "pipeline", &fp, planned)
        .await
        .unwrap();
    let ids: Vec<&str> = goal.initiatives.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["i2", "i1", "i3"], "numbered around the given id");
    let delegated = &goal.initiatives[1];
    assert_eq!(delegated.domain.as_deref(), Some("marketing"));
    assert_eq!(delegated.owner.as_deref(), Some("cmo"));
    assert_eq!(delegated.due, Some(day(30)));
    assert_eq!(delegated.action.as_ref(), Some(&case_study));
    assert!(
        goal.initiatives
            .iter()
            .all(|i| i.status == InitiativeStatus::Open)
    );

    let moved = s
        .goals
        .update_initiative(
            &cro(),
            "pipeline",
            "i1",
            InitiativeUpdate::new(InitiativeStatus::Delegated, "asked the CMO"),
        )
        .await
        .unwrap();
    assert_eq!(moved.initiatives[1].status, InitiativeStatus::Delegated);
    assert_eq!(moved.initiatives[1].note.as_deref(), Some("asked the CMO"));
    assert_eq!(
        moved.initiatives[0].status,
        InitiativeStatus::Open,
        "only it moves"
    );
    let again = s
        .goals
        .update_initiative(
            &cro(),
            "pipeline",
            "i1",
            InitiativeUpdate::new(InitiativeStatus::Delegated, "asked the CMO"),
        )
        .await
        .unwrap();
    assert_eq!(again, moved, "the same update changes nothing");
    // No note: the last one stays.
    let done = s
        .goals
        .update_initiative(
            &cro(),
            "pipeline",
            "i1",
            InitiativeUpdate {
                status: InitiativeStatus::Done,
                note: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(done.initiatives[1].status, InitiativeStatus::Done);
    assert_eq!(done.initiatives[1].note.as_deref(), Some("asked the CMO"));
    assert!(is_conflict(
        s.goals
            .update_initiative(
                &cro(),
                "pipeline",
                "i1",
                InitiativeUpdate::new(InitiativeStatus::Blocked, "late answer")
            )
            .await
    ));
    let reopened = s
        .goals
        .update_initiative(
            &cro(),
            "pipeline",
            "i1",
            InitiativeUpdate::new(InitiativeStatus::Open, "do it again"),
        )
        .await
        .unwrap();
    assert_eq!(reopened.initiatives[1].status, InitiativeStatus::Open);
    assert!(is_not_found(
        s.goals
            .update_initiative(
                &cro(),
                "pipeline",
                "i9",
                InitiativeUpdate::new(InitiativeStatus::Done, "")
            )
            .await
    ));
    assert!(is_not_found(
        s.goals
            .update_initiative(
                &cro(),
                "nope",
                "i1",
                InitiativeUpdate::new(InitiativeStatus::Done, "")
            )
            .await
    ));
    assert!(is_invalid(
        s.goals
            .update_initiative(
                &cro(),
                "pipeline",
                "i2",
                InitiativeUpdate::new(InitiativeStatus::Done, "x".repeat(4_001))
            )
            .await
    ));
    let reader = CallerContext::user("ann")
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted())
        .with_grants(
            Grants::new("ann")
                .grant("cro", Rights::READ, false)
                .recall(["cro"]),
        );
    let cro_ns = agent("cro")
        .with_clearance(Clearance::unrestricted())
        .with_grants(
            Grants::new("cro")
                .grant("cro", Rights::OWN, false)
                .recall(["cro"]),
        );
    s.goals
        .put(&cro_ns, Goal::new(objective("governed")))
        .await
        .unwrap();
    let g = s.goals.get(&cro_ns, "governed").await.unwrap().unwrap();
    s.goals
        .decompose(&cro_ns, "governed", &g.fingerprint, initiatives(1))
        .await
        .unwrap();
    assert!(is_unauthorized(
        s.goals
            .update_initiative(
                &reader,
                "governed",
                "i1",
                InitiativeUpdate::new(InitiativeStatus::Dropped, "mine now")
            )
            .await
    ));
    let kept = s.goals.get(&cro(), "pipeline").await.unwrap().unwrap();
    assert_eq!(kept, reopened, "refusals change nothing");
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    let mut moves: Vec<(&str, &str)> = trail
        .iter()
        .filter(|e| e.kind == "goal" && e.record_id.as_deref() == Some("pipeline"))
        .filter_map(|e| {
            let f = e.filters.as_ref()?;
            (f["transition"] == "initiative")
                .then(|| Some((f["initiative"].as_str()?, f["status"].as_str()?)))?
        })
        .collect();
    moves.sort_unstable();
    assert_eq!(
        moves,
        [("i1", "delegated"), ("i1", "done"), ("i1", "open")],
        "each move once"
    );
}

/// Eight reporters, 25 reports each, at once: the metric is the exact sum
/// and the reports are numbered 1 to 200 with no gap or repeat; a report
/// sent again with its id counts once; `set` replaces the value and later
/// `add`s add to it; progress follows, clamped.
pub async fn goals_metric_reports_roll_up_exactly<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = Arc::new(factory().await);
    s.goals
        .put(&cro(), Goal::new(objective("pipeline")))
        .await
        .unwrap();
    let untouched = s.goals.progress(&cro(), "pipeline").await.unwrap().unwrap();
    assert_eq!(untouched.key_results[0].current, 500_000.0, "the baseline");
    assert_eq!(untouched.progress, 0.0);
    let reports = futures::future::join_all((0..8).map(|w| {
        let s = s.clone();
        async move {
            let reporter = agent(&format!("crm{w}"));
            let mut seqs = Vec::new();
            for i in 0..25 {
                let r = MetricReport::add("cro", "pipeline_usd", 1_000.0)
                    .id(format!("r{w}-{i}"))
                    .note(format!("deal {w}-{i}"));
                seqs.push(s.goals.report(&reporter, r).await.unwrap().seq);
            }
            seqs
        }
    }))
    .await;
    let first_of_r0 = reports[0][0];
    let mut seqs: Vec<u64> = reports.into_iter().flatten().collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=200).collect::<Vec<u64>>(), "numbered once each");
    let progress = s.goals.progress(&cro(), "pipeline").await.unwrap().unwrap();
    let value = &progress.key_results[0];
    assert_eq!(value.current, 700_000.0, "no lost update");
    assert_eq!(value.reports, 200);
    assert!((value.progress - 200_000.0 / 1_500_000.0).abs() < 1e-12);
    // The same report again counts once; another report under its id is
    // a conflict.
    let again = s
        .goals
        .report(
            &agent("crm0"),
            MetricReport::add("cro", "pipeline_usd", 1_000.0)
                .id("r0-0")
                .note("deal 0-0"),
        )
        .await
        .unwrap();
    assert_eq!((again.seq, again.id.as_str()), (first_of_r0, "r0-0"));
    assert!(is_conflict(
        s.goals
            .report(
                &agent("crm0"),
                MetricReport::add("cro", "pipeline_usd", 5.0).id("r0-0")
            )
            .await
    ));
    let set = s
        .goals
        .report(
            &cro(),
            MetricReport::set("cro", "pipeline_usd", 1_900_000.0).id("recount"),
        )
        .await
        .unwrap();
    assert_eq!((set.seq, set.total), (201, 1_900_000.0));
    let after = s
        .goals
        .report(&cro(), MetricReport::add("cro", "pipeline_usd", 200_000.0))
        .await
        .unwrap();
    assert_eq!((after.seq, after.total), (202, 2_100_000.0));
    s.goals
        .report(&cro(), MetricReport::add("cro", "qualified_leads", 10.0))
        .await
        .unwrap();
    let progress = s.goals.progress(&cro(), "pipeline").await.unwrap().unwrap();
    assert_eq!(progress.key_results[0].current, 2_100_000.0);
    assert_eq!(
        progress.key_results[0].progress, 1.0,
        "overshooting is done"
    );
    assert_eq!(progress.key_results[1].current, 10.0);
    assert!((progress.progress - (1.0 + 0.25) / 2.0).abs() < 1e-12);
    // Another role's metric of the same name is another stream.
    let other = s
        .goals
        .report(&cro(), MetricReport::add("cmo", "pipeline_usd", 1.0))
        .await
        .unwrap();
    assert_eq!((other.seq, other.total), (1, 1.0));
    // Bad reports write nothing.
    assert!(is_invalid(
        s.goals
            .report(
                &cro(),
                MetricReport::add("cro", "pipeline_usd", f64::INFINITY)
            )
            .await
    ));
    assert!(is_invalid(
        s.goals
            .report(&cro(), MetricReport::add("cro", " ", 1.0))
            .await
    ));
    let unchanged = s.goals.progress(&cro(), "pipeline").await.unwrap().unwrap();
    assert_eq!(unchanged.key_results[0].reports, 202);
    assert_eq!(s.goals.progress(&cro(), "nope").await.unwrap(), None);
}

/// A role's priorities of a day: put, replaced the same day, the latest on
/// or before a day; bounded; only the owner (or a manager) replaces them.
pub async fn goals_priorities_by_day<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let item = |title: &str| Priority {
        title: title.into(),
        reason: "the largest open deal".into(),
        goal_id: Some("pipeline".into()),
        action: None,
    };
    let first = s
        .goals
        .put_priorities(
            &cro(),
            Priorities::new(
                "cro",
                day(25),
                vec![item("Call Acme"), item("Qualify Globex")],
            ),
        )
        .await
        .unwrap();
    assert_eq!(first.id, "cro:2026-11-25");
    assert_eq!(first.meta.owner, "agent:cro");
    let replaced = s
        .goals
        .put_priorities(
            &cro(),
            Priorities::new("cro", day(25), vec![item("Close Acme")]),
        )
        .await
        .unwrap();
    assert_eq!(replaced.items.len(), 1);
    assert_eq!(replaced.meta.created_at, first.meta.created_at);
    s.goals
        .put_priorities(
            &cro(),
            Priorities::new("cro", day(26), vec![item("Follow up")]),
        )
        .await
        .unwrap();
    let ctx = cro();
    let on = |d| s.goals.priorities(&ctx, "cro", day(d));
    assert_eq!(on(25).await.unwrap().unwrap().items[0].title, "Close Acme");
    assert_eq!(on(26).await.unwrap().unwrap().items[0].title, "Follow up");
    assert_eq!(on(30).await.unwrap().unwrap().day, day(26), "the latest");
    assert_eq!(on(24).await.unwrap(), None);
    assert_eq!(
        s.goals.priorities(&cro(), "cmo", day(26)).await.unwrap(),
        None
    );
    let cmo = agent("cmo").with_clearance(Clearance::unrestricted());
    assert!(is_unauthorized(
        s.goals
            .put_priorities(&cmo, Priorities::new("cro", day(26), vec![item("Mine")]))
            .await
    ));
    assert!(is_invalid(
        s.goals
            .put_priorities(&cro(), Priorities::new("cro", day(27), Vec::new()))
            .await
    ));
    assert!(is_invalid(
        s.goals
            .put_priorities(&cro(), Priorities::new("cro", day(27), vec![item(" ")]))
            .await
    ));
    assert_eq!(on(27).await.unwrap().unwrap().day, day(26));
}

/// Governed: a goal lives in its namespace (written with the write right
/// there); a caller without read there sees neither it nor its progress
/// and cannot decompose it; reporting needs the write right where the
/// report goes; every change is audited, revisions and decompositions
/// with their names.
pub async fn goals_are_governed_and_audited<F, Fut>(factory: F)
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
    let goal = s
        .goals
        .put(&role, Goal::new(objective("pipeline")))
        .await
        .unwrap();
    assert_eq!(goal.meta.namespace, "cro");
    let outsider = agent("cmo")
        .with_clearance(Clearance::unrestricted())
        .with_grants(
            Grants::new("cmo")
                .grant("cmo", Rights::OWN, false)
                .recall(["cmo"]),
        );
    assert_eq!(s.goals.get(&outsider, "pipeline").await.unwrap(), None);
    assert_eq!(s.goals.progress(&outsider, "pipeline").await.unwrap(), None);
    assert!(
        s.goals
            .list(&outsider, &GoalQuery::new())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(is_not_found(
        s.goals
            .decompose(&outsider, "pipeline", &goal.fingerprint, initiatives(1))
            .await
    ));
    assert!(is_conflict(
        s.goals
            .put(&outsider, Goal::new(objective("pipeline")))
            .await
    ));
    // Into a namespace it may not write: refused, nothing counted.
    assert!(is_unauthorized(
        s.goals
            .report(
                &outsider,
                MetricReport::add("cro", "pipeline_usd", 1.0).namespace("cro")
            )
            .await
    ));
    // A webhook key that may write in `cro` reports; a reader sees it move.
    let webhook = CallerContext::service("crm").with_tenant("t1").with_grants(
        Grants::new("cro")
            .grant("cro", Rights::OWN, false)
            .recall(["cro"]),
    );
    let r = s
        .goals
        .report(
            &webhook,
            MetricReport::add("cro", "pipeline_usd", 40_000.0).note("closed Acme, $40k"),
        )
        .await
        .unwrap();
    assert_eq!((r.seq, r.meta.namespace.as_str()), (1, "cro"));
    assert_eq!(r.meta.owner, "service:crm");
    let reader = CallerContext::user("ann")
        .with_tenant("t1")
        .with_clearance(Clearance::unrestricted())
        .with_grants(
            Grants::new("ann")
                .grant("cro", Rights::READ, false)
                .recall(["cro"]),
        );
    let progress = s
        .goals
        .progress(&reader, "pipeline")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(progress.key_results[0].current, 540_000.0);
    assert!(is_unauthorized(
        s.goals
            .decompose(&reader, "pipeline", &goal.fingerprint, initiatives(1))
            .await
    ));
    s.goals
        .decompose(&role, "pipeline", &goal.fingerprint, initiatives(2))
        .await
        .unwrap();
    let mut changed = objective("pipeline");
    changed.title = "Pipeline $3M".into();
    s.goals.put(&role, Goal::new(changed)).await.unwrap();
    s.audit.flush().await.unwrap();
    let trail = s.audit.query(&sys(), &AuditQuery::new()).await.unwrap();
    let of_goal: Vec<_> = trail
        .iter()
        .filter(|e| e.kind == "goal" && e.record_id.as_deref() == Some("pipeline"))
        .collect();
    assert!(of_goal.iter().any(|e| e.operation == AuditOp::Insert));
    let transitions: Vec<&str> = of_goal
        .iter()
        .filter(|e| e.operation == AuditOp::Update && e.reason.is_none())
        .filter_map(|e| e.filters.as_ref()?["transition"].as_str())
        .collect();
    for expected in ["decompose", "revise"] {
        assert!(transitions.contains(&expected), "{transitions:?}");
    }
    assert!(
        of_goal.iter().any(|e| e.reason.is_some()),
        "refusals are audited: {of_goal:#?}"
    );
    assert!(trail.iter().any(|e| e.kind == "metric"
        && e.operation == AuditOp::Insert
        && e.principal == "service:crm"));
}

/// A namespace migration moves goals, priorities and reports, and each
/// metric's stream with its reports (batch after batch): the goal's
/// progress is the same in its new namespace; moving reports into a
/// namespace with its own stream of the metric is a conflict that moves
/// nothing.
pub async fn goals_move_with_their_namespace<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    let s = factory().await;
    let sales = cro();
    s.goals
        .put(&sales, Goal::new(objective("pipeline")).namespace("sales"))
        .await
        .unwrap();
    for i in 0..5 {
        s.goals
            .report(
                &sales,
                MetricReport::add("cro", "pipeline_usd", 100.0)
                    .id(format!("r{i}"))
                    .namespace("sales"),
            )
            .await
            .unwrap();
    }
    s.goals
        .report(
            &sales,
            MetricReport::add("cro", "pipeline_usd", 7.0)
                .id("elsewhere")
                .namespace("revenue"),
        )
        .await
        .unwrap();
    let admin = sys();
    // `revenue` has its own stream of the metric: nothing moves.
    assert!(is_conflict(
        s.admin
            .move_namespace(&admin, "metric", "sales", "revenue", 2)
            .await
    ));
    let before = s.goals.progress(&sales, "pipeline").await.unwrap().unwrap();
    assert_eq!(before.key_results[0].current, 500_500.0);
    let mut moved = 0;
    loop {
        let n = s
            .admin
            .move_namespace(&admin, "metric", "sales", "archive", 2)
            .await
            .unwrap();
        if n == 0 {
            break;
        }
        moved += n;
    }
    assert_eq!(moved, 5);
    assert_eq!(
        s.admin
            .move_namespace(&admin, "goal", "sales", "archive", 10)
            .await
            .unwrap(),
        1
    );
    let after = s.goals.progress(&sales, "pipeline").await.unwrap().unwrap();
    assert_eq!(after.goal.meta.namespace, "archive");
    assert_eq!(after.key_results[0].current, 500_500.0);
    assert_eq!(after.key_results[0].reports, 5);
    // The stream goes on where it moved.
    let next = s
        .goals
        .report(
            &sales,
            MetricReport::add("cro", "pipeline_usd", 1.0).namespace("archive"),
        )
        .await
        .unwrap();
    assert_eq!((next.seq, next.total), (6, 501.0));
    let counts = s.admin.namespace_counts(&admin).await.unwrap();
    let count = |kind: &str, ns: &str| {
        counts
            .iter()
            .find(|c| c.kind == kind && c.namespace == ns)
            .map_or(0, |c| c.records)
    };
    assert_eq!(
        (
            count("metric", "archive"),
            count("goal", "archive"),
            count("metric", "sales")
        ),
        (6, 1, 0)
    );
}

/// A role's metric reports list oldest first, a page at a time, each with
/// its stream's total after it (what a chart of a key result draws);
/// filtered by metric; another tenant sees none; a bad limit or cursor is
/// refused; the listing is audited as a search.
pub async fn goals_report_history_pages_oldest_first<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::{METRIC_KIND, ReportQuery};
    let s = factory().await;
    for i in 1..=5 {
        s.goals
            .report(
                &cro(),
                MetricReport::add("cro", "pipeline_usd", 100.0 * f64::from(i)).id(format!("h{i}")),
            )
            .await
            .unwrap();
    }
    s.goals
        .report(&cro(), MetricReport::add("cro", "qualified_leads", 1.0))
        .await
        .unwrap();
    s.goals
        .report(&cro(), MetricReport::add("cmo", "pipeline_usd", 7.0))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut query = ReportQuery::new("cro").metric("pipeline_usd").limit(2);
    let mut pages = 0;
    loop {
        let page = s.goals.reports(&cro(), &query).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        seen.extend(page.items.into_iter().map(|r| (r.id, r.seq, r.total)));
        match page.next_cursor {
            Some(cursor) => query = query.cursor(cursor),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        seen,
        vec![
            ("h1".to_owned(), 1, 100.0),
            ("h2".to_owned(), 2, 300.0),
            ("h3".to_owned(), 3, 600.0),
            ("h4".to_owned(), 4, 1_000.0),
            ("h5".to_owned(), 5, 1_500.0),
        ],
        "oldest first, each with the total after it"
    );
    let all = s
        .goals
        .reports(&cro(), &ReportQuery::new("cro"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 6, "both metrics of the CRO, not the CMO's");
    assert!(all.next_cursor.is_none());
    let elsewhere = cro().with_tenant("t2");
    let none = s
        .goals
        .reports(&elsewhere, &ReportQuery::new("cro"))
        .await
        .unwrap();
    assert!(none.items.is_empty(), "another tenant sees none");
    assert!(is_invalid(
        s.goals
            .reports(&cro(), &ReportQuery::new("cro").limit(0))
            .await
    ));
    assert!(is_invalid(
        s.goals
            .reports(&cro(), &ReportQuery::new("cro").cursor("not a cursor"))
            .await
    ));
    assert!(is_invalid(
        s.goals.reports(&cro(), &ReportQuery::new(" ")).await
    ));
    s.audit.flush().await.unwrap();
    let searches = s
        .audit
        .query(
            &cro(),
            &AuditQuery {
                operation: Some(AuditOp::Search),
                kind: Some(METRIC_KIND.into()),
                ..AuditQuery::new()
            },
        )
        .await
        .unwrap();
    assert!(searches.len() >= 4, "each listing audited: {searches:?}");
}

/// Eight reporters race on one stream (+1 each, 25 each): the history,
/// oldest first and read a page at a time, is in the order the store
/// applied the reports: `seq` 1 to 200 and the total never stepping back
/// (issue 65: it was listed by a time taken before the stream's lock).
pub async fn goals_report_history_is_in_the_order_applied<F, Fut>(factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Stores>,
{
    use openvibe_protocols::ReportQuery;
    let s = std::sync::Arc::new(factory().await);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for j in 0..25 {
                s.goals
                    .report(
                        &cro(),
                        MetricReport::add("cro", "calls", 1.0).id(format!("r{i}-{j}")),
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut seen = Vec::new();
    let mut query = ReportQuery::new("cro").metric("calls").limit(30);
    loop {
        let page = s.goals.reports(&cro(), &query).await.unwrap();
        seen.extend(
            page.items
                .into_iter()
                .map(|r| (r.seq, r.total, r.meta.created_at)),
        );
        match page.next_cursor {
            Some(cursor) => query = query.cursor(cursor),
            None => break,
        }
    }
    let seqs: Vec<u64> = seen.iter().map(|r| r.0).collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<u64>>(), "listed in seq order");
    for (seq, total, _) in &seen {
        assert_eq!(*total, *seq as f64, "the total after report {seq}");
    }
    assert!(
        seen.windows(2).all(|w| w[0].2 < w[1].2),
        "each report's time after the one before it"
    );
}
