//! The goal store's kinds in the leak check: goals (with metric reports
//! and progress), a role's priorities by day, and metric reports by page.

use std::collections::HashMap;

use chrono::{Days, NaiveDate};
use openvibe_protocols::{
    CallerContext, Classification, GOAL_KIND, Goal, GoalQuery, KeyResult, METRIC_KIND,
    MetricReport, Objective, PRIORITIES_KIND, Priorities, Priority, ReportQuery, StoreError,
};

use super::{Kept, Leak, LeakKind};
use crate::governance::draw::{NAMESPACES, Rng, random_namespaces};

/// The metric of the goals' key result, which the goals' changes report.
const GOAL_METRIC: &str = "m";

/// The metric [`MetricLeak`] reports (not [`GOAL_METRIC`]: the goals'
/// progress stays the sum of their own reports).
const LEAK_METRIC: &str = "leak";

/// A metric report's random value: 1 to 9.
fn random_value(rng: &mut Rng) -> f64 {
    f64::from(u32::try_from(1 + rng.below(9)).unwrap_or(1))
}

/// Goals: put by random callers; random reports of their metric into
/// random namespaces (allowed where the reporter may write); read by id
/// (never revised: version 1), by page (id order, one page holds all),
/// and by progress, which is the sum of the reports the model accepted in
/// the goal's namespace for its role.
pub(super) struct GoalLeak;

/// The model's sum of the [`GOAL_METRIC`] reports, per (tenant,
/// namespace, role).
#[derive(Default)]
pub(super) struct Sums(HashMap<(String, String, String), f64>);

impl LeakKind for GoalLeak {
    const KIND: &'static str = GOAL_KIND;
    const WRITES: usize = 40;
    const CHANGES: usize = 120;
    const READS: usize = 300;
    const MIX: [usize; 3] = [1, 1, 1];

    type Record = Goal;
    type Query = GoalQuery;
    type State = Sums;

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> Goal {
        let objective = Objective {
            id: format!("g{i}"),
            owner: format!("role{}", rng.below(2)),
            title: format!("goal {i}"),
            due: NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
            key_results: vec![KeyResult {
                id: "kr".into(),
                metric: GOAL_METRIC.into(),
                baseline: 0.0,
                target: 1_000.0,
                unit: String::new(),
                due: None,
            }],
        };
        let mut goal = Goal::new(objective).namespace(ns);
        goal.meta.classification = *rng.pick(&Classification::ALL);
        goal
    }

    async fn write(cx: &Leak<'_>, writer: &CallerContext, goal: Goal) -> Result<Goal, StoreError> {
        cx.s.goals.put(writer, goal).await
    }

    /// A goal is put once: it reads as version 1.
    async fn get(
        cx: &Leak<'_>,
        reader: &CallerContext,
        id: &str,
    ) -> Result<Option<Goal>, StoreError> {
        let got = cx.s.goals.get(reader, id).await?;
        if let Some(goal) = &got {
            assert_eq!(goal.version, 1, "seed {}: goal {id} as {reader:?}", cx.seed);
        }
        Ok(got)
    }

    /// Every goal fits one page: the page holds all the readable ones.
    fn random_query(rng: &mut Rng) -> GoalQuery {
        let mut query = GoalQuery::new().limit(Self::WRITES);
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &GoalQuery,
    ) -> Result<Vec<Goal>, StoreError> {
        Ok(cx.s.goals.list(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &GoalQuery, goal: &Goal) -> bool {
        reader
            .list_scope(&query.namespaces)
            .contains(&goal.meta.namespace)
    }

    fn limit(query: &GoalQuery) -> usize {
        query.limit
    }

    /// Goals list in id order.
    fn order(goals: &mut [&Goal]) {
        goals.sort_by(|a, b| a.key().cmp(b.key()));
    }

    /// Its progress: the model's sum for its tenant, namespace and role
    /// (0 without reports) when readable, none otherwise.
    async fn special(
        cx: &Leak<'_>,
        _: &mut Rng,
        reader: &CallerContext,
        goal: &Goal,
        _: &[Goal],
        sums: &Sums,
    ) {
        let got =
            cx.s.goals
                .progress(reader, goal.id())
                .await
                .unwrap()
                .map(|p| p.key_results[0].current);
        let stream = (
            goal.meta.tenant_id.clone(),
            goal.meta.namespace.clone(),
            goal.role_id().to_owned(),
        );
        let want = goal
            .readable(reader)
            .then(|| sums.0.get(&stream).copied().unwrap_or(0.0));
        assert_eq!(
            got,
            want,
            "seed {}: progress of {} as {reader:?}",
            cx.seed,
            goal.id()
        );
    }

    /// A report of the goals' metric, by a random role into a random
    /// namespace, placed as a new record is.
    async fn change(
        cx: &Leak<'_>,
        rng: &mut Rng,
        caller: &CallerContext,
        step: usize,
        _: &mut [Goal],
        sums: &mut Sums,
    ) {
        let seed = cx.seed;
        let ns = *rng.pick(NAMESPACES);
        let role = format!("role{}", rng.below(2));
        let value = random_value(rng);
        let report = MetricReport::add(role.clone(), GOAL_METRIC, value)
            .id(format!("mr{step}"))
            .namespace(ns);
        match (
            cx.s.goals.report(caller, report).await,
            caller.placement(ns, "report"),
        ) {
            (Ok(r), Ok(place)) => {
                assert_eq!(r.meta.namespace, place.namespace, "seed {seed}: mr{step}");
                *sums
                    .0
                    .entry((caller.tenant_id().to_owned(), place.namespace, role))
                    .or_default() += value;
            }
            (Err(StoreError::Unauthorized { .. }), Err(_)) => {}
            (got, want) => panic!("seed {seed}: report mr{step}: got {got:?}, want {want:?}"),
        }
    }
}

/// Priorities: record `i` is role `role{i % 2}`'s of day `i` (no role and
/// day twice, so nothing is replaced); read as a role's latest readable
/// priorities on or before a day.
pub(super) struct PrioritiesLeak;

impl LeakKind for PrioritiesLeak {
    const KIND: &'static str = PRIORITIES_KIND;
    const WRITES: usize = 40;
    const READS: usize = 200;
    const MIX: [usize; 3] = [0, 0, 1];

    type Record = Priorities;
    type Query = ();
    type State = ();

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> Priorities {
        let first = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
        let item = Priority {
            title: format!("priority {i}"),
            reason: String::new(),
            goal_id: None,
            action: None,
        };
        let day = first + Days::new(u64::try_from(i).unwrap());
        let mut p = Priorities::new(format!("role{}", i % 2), day, vec![item]).namespace(ns);
        p.meta.classification = *rng.pick(&Classification::ALL);
        p
    }

    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        p: Priorities,
    ) -> Result<Priorities, StoreError> {
        cx.s.goals.put_priorities(writer, p).await
    }

    /// Its role's priorities on its day or up to two days later: the
    /// latest readable ones on or before that day.
    async fn special(
        cx: &Leak<'_>,
        rng: &mut Rng,
        reader: &CallerContext,
        p: &Priorities,
        stored: &[Priorities],
        _: &(),
    ) {
        let day = p.day + Days::new(u64::try_from(rng.below(3)).unwrap());
        let got =
            cx.s.goals
                .priorities(reader, &p.role_id, day)
                .await
                .unwrap();
        let want = stored
            .iter()
            .filter(|q| q.role_id == p.role_id && q.day <= day && q.readable(reader))
            .max_by_key(|q| q.day);
        assert_eq!(
            got.as_ref().map(Kept::key),
            want.map(Kept::key),
            "seed {}: priorities of {} on {day} as {reader:?}",
            cx.seed,
            p.role_id
        );
    }
}

/// Metric reports of their own metric ([`LEAK_METRIC`]), read by page: a
/// role's reports, oldest first.
pub(super) struct MetricLeak;

impl LeakKind for MetricLeak {
    const KIND: &'static str = METRIC_KIND;
    const WRITES: usize = 60;
    const READS: usize = 200;
    const MIX: [usize; 3] = [0, 1, 0];

    type Record = MetricReport;
    type Query = ReportQuery;
    type State = ();

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> MetricReport {
        let role = format!("role{}", rng.below(2));
        let mut r = MetricReport::add(role, LEAK_METRIC, random_value(rng))
            .id(format!("lm{i}"))
            .namespace(ns);
        r.meta.classification = *rng.pick(&Classification::ALL);
        r
    }

    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        r: MetricReport,
    ) -> Result<MetricReport, StoreError> {
        cx.s.goals.report(writer, r).await
    }

    fn random_query(rng: &mut Rng) -> ReportQuery {
        let mut query = ReportQuery::new(format!("role{}", rng.below(2)))
            .metric(LEAK_METRIC)
            .limit(1 + rng.below(30));
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &ReportQuery,
    ) -> Result<Vec<MetricReport>, StoreError> {
        Ok(cx.s.goals.reports(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &ReportQuery, r: &MetricReport) -> bool {
        reader
            .list_scope(&query.namespaces)
            .contains(&r.meta.namespace)
            && query.matches(r, None)
    }

    fn limit(query: &ReportQuery) -> usize {
        query.limit
    }

    /// Oldest first, ids ascending among equals.
    fn order(reports: &mut [&MetricReport]) {
        reports.sort_by(|a, b| (a.meta.created_at, &a.id).cmp(&(b.meta.created_at, &b.id)));
    }
}
