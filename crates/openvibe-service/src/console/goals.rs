//! Goals: each key result's value over time as a server-rendered SVG chart
//! (from the metric reports' history), the initiatives and where each
//! stands, and today's priorities of each role.

use std::collections::BTreeSet;

use axum::extract::State;
use axum::response::Response;
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use openvibe_protocols::{
    GoalQuery, KeyResult, KeyResultProgress, MetricMode, MetricReport, MetricValue, ReportQuery,
    StoreError,
};

use super::page::{Nav, failed, page, respond, time};
use super::session::SignedIn;
use crate::state::AppState;

/// The most reports one chart draws (the newest are kept).
const CHART_REPORTS: usize = 1000;

/// `GET /console/goals`
pub(crate) async fn goals(State(s): State<AppState>, who: SignedIn) -> Response {
    match render(&s, &who).await {
        Ok(body) => respond(page("Goals", Nav::Goals, Some(&who), body)),
        Err(err) => failed(&who, err),
    }
}

async fn render(s: &AppState, who: &SignedIn) -> Result<Markup, StoreError> {
    let ctx = who.ctx();
    let goals = s.stores.goals.list(ctx, &GoalQuery::new()).await?;
    let mut sections = Vec::new();
    let mut roles = BTreeSet::new();
    for goal in &goals.items {
        roles.insert(goal.role_id().to_owned());
        let Some(progress) = s.stores.goals.progress(ctx, goal.id()).await? else {
            continue;
        };
        let mut charts = Vec::new();
        for kr in &progress.key_results {
            let history = history(s, who, goal.role_id(), &goal.meta.namespace, kr).await?;
            charts.push(key_result(kr, &history, goal.meta.created_at));
        }
        sections.push(html! {
            article.card {
                header {
                    h2 { (goal.objective.title) }
                    span.meta { "Role " strong { (goal.role_id()) } " · due " (goal.objective.due.to_string())
                        " · " (format!("{:.0}%", progress.progress * 100.0)) " done" }
                }
                @for chart in charts { (chart) }
                @if !goal.initiatives.is_empty() {
                    h3 { "Initiatives" @if !goal.is_decomposed() { " (of an earlier version)" } }
                    table.initiatives {
                        thead { tr { th { "Id" } th { "Initiative" } th { "Owner" } th { "Due" } th { "Status" } th { "Latest" } } }
                        tbody {
                            @for i in &goal.initiatives {
                                tr data-initiative=(i.id) {
                                    td { code { (i.id) } }
                                    td { (i.title) @if let Some(d) = &i.domain { " " span.meta { "(" (d) ")" } } }
                                    td { (i.owner.as_deref().unwrap_or(goal.role_id())) }
                                    td { (i.due.map(|d| d.to_string()).unwrap_or_default()) }
                                    td { span class=(format!("status {}", i.status.as_str())) { (i.status.as_str()) } }
                                    td { (i.note.as_deref().unwrap_or("")) }
                                }
                            }
                        }
                    }
                }
            }
        });
    }
    let today = Utc::now().date_naive();
    let mut priorities = Vec::new();
    for role in &roles {
        if let Some(p) = s.stores.goals.priorities(ctx, role, today).await? {
            priorities.push(p);
        }
    }
    Ok(html! {
        @if sections.is_empty() { p { "No goals you may read." } }
        @for section in sections { (section) }
        h2 { "Today's priorities" }
        @if priorities.is_empty() { p { "No priorities for today yet." } }
        @for p in &priorities {
            article.card {
                header { h3 { (p.role_id) } span.meta { (p.day.to_string()) } }
                ol {
                    @for item in &p.items {
                        li { strong { (item.title) } @if !item.reason.is_empty() { " — " (item.reason) } }
                    }
                }
            }
        }
    })
}

/// The key result's value after each report, oldest first.
async fn history(
    s: &AppState,
    who: &SignedIn,
    role: &str,
    namespace: &str,
    kr: &KeyResultProgress,
) -> Result<Vec<(DateTime<Utc>, f64)>, StoreError> {
    let mut reports: Vec<MetricReport> = Vec::new();
    let mut query = ReportQuery {
        namespaces: vec![namespace.to_owned()],
        ..ReportQuery::new(role)
            .metric(kr.key_result.metric.clone())
            .limit(1000)
    };
    loop {
        let page = s.stores.goals.reports(who.ctx(), &query).await?;
        reports.extend(page.items);
        match page.next_cursor {
            Some(next) if reports.len() < 50 * CHART_REPORTS => query.cursor = Some(next),
            _ => break,
        }
    }
    let mut set = false;
    let points: Vec<(DateTime<Utc>, f64)> = reports
        .iter()
        .map(|r| {
            set |= r.mode == MetricMode::Set;
            let value = MetricValue {
                value: r.total,
                set,
                reports: r.seq,
                updated_at: Some(r.meta.created_at),
            };
            (r.meta.created_at, value.current(&kr.key_result))
        })
        .collect();
    let skip = points.len().saturating_sub(CHART_REPORTS);
    Ok(points.into_iter().skip(skip).collect())
}

fn key_result(
    kr: &KeyResultProgress,
    history: &[(DateTime<Utc>, f64)],
    since: DateTime<Utc>,
) -> Markup {
    let k = &kr.key_result;
    html! {
        section {
            h3 { (k.id) ": " (k.metric) }
            p.meta {
                (format_value(kr.current, &k.unit)) " of " (format_value(k.target, &k.unit))
                " (from " (format_value(k.baseline, &k.unit)) ") · "
                (format!("{:.0}%", kr.progress * 100.0)) " · " (kr.reports) " reports"
                @if let Some(at) = kr.updated_at { " · last " (time(at)) }
            }
            (chart(k, history, since))
        }
    }
}

/// `v` rounded, with thousands separators, and its unit.
fn format_value(v: f64, unit: &str) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < -0.5 { "-" } else { "" };
    if unit.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped} {unit}")
    }
}

/// The chart's size in SVG units.
const W: f64 = 640.0;
const H: f64 = 220.0;
const PAD_L: f64 = 70.0;
const PAD_R: f64 = 12.0;
const PAD_T: f64 = 12.0;
const PAD_B: f64 = 30.0;

/// A line chart of `history` from the baseline (at `since`) to now, with
/// the target as a dashed line. Server-rendered SVG: no script, no style
/// attribute (the stylesheet colours it).
pub(crate) fn chart(
    k: &KeyResult,
    history: &[(DateTime<Utc>, f64)],
    since: DateTime<Utc>,
) -> Markup {
    let start = history.first().map_or(since, |(t, _)| (*t).min(since));
    let last = history.last().map_or(start, |(t, _)| *t);
    let end = Utc::now()
        .max(last)
        .max(start + chrono::Duration::seconds(1));
    let mut points = vec![(start, k.baseline)];
    points.extend_from_slice(history);
    let lo = points
        .iter()
        .map(|p| p.1)
        .fold(k.baseline.min(k.target), f64::min);
    let hi = points
        .iter()
        .map(|p| p.1)
        .fold(k.baseline.max(k.target), f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let span_t = (end - start).num_milliseconds().max(1) as f64;
    let x = |t: DateTime<Utc>| {
        PAD_L + (W - PAD_L - PAD_R) * ((t - start).num_milliseconds() as f64 / span_t)
    };
    let y = |v: f64| PAD_T + (H - PAD_T - PAD_B) * (1.0 - (v - lo) / span);
    // A step line: the value holds until the next report.
    let mut path = String::new();
    let mut last_y = y(k.baseline);
    for (i, (t, v)) in points.iter().enumerate() {
        let (px, py) = (x(*t), y(*v));
        if i == 0 {
            path.push_str(&format!("M{px:.1},{py:.1}"));
        } else {
            path.push_str(&format!(" L{px:.1},{last_y:.1} L{px:.1},{py:.1}"));
        }
        last_y = py;
    }
    path.push_str(&format!(" L{:.1},{last_y:.1}", W - PAD_R));
    let label = format!(
        "{}: from {} to {} over {} reports; target {}",
        k.metric,
        format_value(k.baseline, &k.unit),
        format_value(points.last().map_or(k.baseline, |p| p.1), &k.unit),
        history.len(),
        format_value(k.target, &k.unit)
    );
    let ty = y(k.target);
    html! {
        svg.chart viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(label) xmlns="http://www.w3.org/2000/svg" {
            title { (label) }
            line.axis x1=(PAD_L) y1=(H - PAD_B) x2=(W - PAD_R) y2=(H - PAD_B) {}
            line.axis x1=(PAD_L) y1=(PAD_T) x2=(PAD_L) y2=(H - PAD_B) {}
            line.target x1=(PAD_L) y1=(format!("{ty:.1}")) x2=(W - PAD_R) y2=(format!("{ty:.1}")) {}
            text x=(W - PAD_R) y=(format!("{:.1}", (ty - 4.0).max(PAD_T + 8.0))) text-anchor="end" { "target " (format_value(k.target, "")) }
            text x=(PAD_L - 4.0) y=(format!("{:.1}", H - PAD_B)) text-anchor="end" { (format_value(lo, "")) }
            @if hi > k.target {
                text x=(PAD_L - 4.0) y=(format!("{:.1}", PAD_T + 8.0)) text-anchor="end" { (format_value(hi, "")) }
            }
            path.line d=(path) {}
            @for (t, v) in history {
                circle.dot cx=(format!("{:.1}", x(*t))) cy=(format!("{:.1}", y(*v))) r="3" {}
            }
            text x=(PAD_L) y=(H - 8.0) { (start.format("%Y-%m-%d %H:%M").to_string()) }
            text x=(W - PAD_R) y=(H - 8.0) text-anchor="end" { (end.format("%Y-%m-%d %H:%M").to_string()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_draws_every_report_and_the_target() {
        let k = KeyResult {
            id: "value".into(),
            metric: "pipeline_usd".into(),
            baseline: 100.0,
            target: 300.0,
            unit: "USD".into(),
            due: None,
        };
        let t0 = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let history: Vec<_> = (1..=4)
            .map(|i| (t0 + chrono::Duration::hours(i), 100.0 + 50.0 * i as f64))
            .collect();
        let svg = chart(&k, &history, t0).into_string();
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("class=\"target\""));
        assert!(svg.contains("from 100 USD to 300 USD over 4 reports"));
        assert_eq!(format_value(2_000_000.0, "USD"), "2,000,000 USD");
        assert_eq!(format_value(-1234.4, ""), "-1,234");
        assert_eq!(format_value(999.0, ""), "999");
        assert!(
            !svg.contains("style="),
            "no style attribute: the CSP forbids inline style"
        );
        // An empty history is a flat line at the baseline, not a panic.
        let flat = chart(&k, &[], t0).into_string();
        assert!(flat.contains("over 0 reports"));
    }
}
