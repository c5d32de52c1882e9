//! `RoleRuntime::serve` with the in-process scheduler on tokio's paused
//! clock: hours of schedules run in no time, at exact due times.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_memory::{ClearanceProfile, WorkspaceMemory};
use openvibe_operators::Operator;
use openvibe_primitives::LlmNode;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    Classification, FactQuery, LlmError, LlmProvider, LlmRequest, LlmResponse, ScheduleError,
    ScheduleInfo, ScheduleProvider, State, TriggerConfig, TriggerKind,
};
use openvibe_roles::{Error, Fired, Outcome, Reflection, Role, RoleRuntime};
use openvibe_schedule::{InProcessScheduler, TokioClock};
use serde_json::json;

const START: &str = "2026-11-25T00:00:00Z";

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn hours(h: f64) -> Duration {
    Duration::from_secs_f64(h * 3600.0)
}

fn trigger(id: &str, kind: TriggerKind, schedule: &str, input: serde_json::Value) -> TriggerConfig {
    TriggerConfig {
        id: id.into(),
        kind,
        schedule: Some(schedule.into()),
        workflow: "qualify".into(),
        operator_id: None,
        input,
    }
}

fn operator(triggers: Vec<TriggerConfig>) -> Operator {
    let mut op = Operator::new("revenue_ops")
        .node(
            LlmNode::new("qualify", "You are a lead qualifier.", |s: &State| {
                Ok(format!("Score: {}", s.require_str("lead")?))
            })
            .output_key("score"),
        )
        .sequence("qualify", ["qualify"])
        .unwrap();
    for t in triggers {
        op = op.trigger(t);
    }
    op
}

fn role(triggers: Vec<TriggerConfig>) -> Role {
    Role::new("cro")
        .soul("You are the CRO.")
        .operator(operator(triggers))
        .clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        )
}

fn scheduler() -> Arc<InProcessScheduler> {
    Arc::new(InProcessScheduler::with_clock(Arc::new(
        TokioClock::starting_at(at(START)),
    )))
}

async fn serve_for(
    runtime: &RoleRuntime,
    time: Duration,
) -> (openvibe_roles::ServeReport, Vec<(DateTime<Utc>, String)>) {
    let mut seen = Vec::new();
    let report = runtime
        .serve(tokio::time::sleep(time), |fired: &Fired| {
            let what = match &fired.outcome {
                Outcome::Completed(state) => format!("completed {}", state.get("score").unwrap()),
                Outcome::Reflected {
                    created, published, ..
                } => {
                    format!("reflected {created} {published}")
                }
                Outcome::Skipped => "skipped".into(),
                Outcome::Failed(e) => format!("failed {e}"),
                _ => "other".into(),
            };
            seen.push((fired.firing.scheduled_at, what));
        })
        .await
        .unwrap();
    (report, seen)
}

#[tokio::test(start_paused = true)]
async fn each_firing_runs_its_workflow_and_stopping_cancels_the_schedules() {
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(r#"{"score": 70}"#)));
    let scheduler = scheduler();
    let runtime = RoleRuntime::new(llm.clone())
        .with_scheduler(scheduler.clone())
        .role(role(vec![
            trigger(
                "hourly",
                TriggerKind::Interval,
                "1h",
                json!({"lead": "Acme"}),
            ),
            // Started by whoever receives it, not by the clock: not registered.
            TriggerConfig {
                kind: TriggerKind::OnDemand,
                schedule: None,
                ..trigger("by_hand", TriggerKind::OnDemand, "", json!(null))
            },
        ]))
        .unwrap();
    let (report, seen) = serve_for(&runtime, hours(3.5)).await;
    assert_eq!(
        seen,
        [
            (
                at("2026-11-25T01:00:00Z"),
                "completed {\"score\":70}".to_owned()
            ),
            (
                at("2026-11-25T02:00:00Z"),
                "completed {\"score\":70}".to_owned()
            ),
            (
                at("2026-11-25T03:00:00Z"),
                "completed {\"score\":70}".to_owned()
            ),
        ]
    );
    assert_eq!(
        (
            report.schedules,
            report.fired,
            report.completed,
            report.failed
        ),
        (1, 3, 3, 0)
    );
    assert!(scheduler.is_empty(), "serve cancels what it registered");
    assert_eq!(llm.requests().len(), 3);
    assert!(llm.requests()[0].messages[0].text().contains("Score: Acme"));
    // Each run was remembered as an episode of the role.
    let memory = runtime.get_role("cro").unwrap().agent_memory().unwrap();
    assert_eq!(
        memory
            .recall_episodes(Default::default())
            .await
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_activation_is_reported_and_the_schedule_goes_on() {
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text("{}")));
    let runtime = RoleRuntime::new(llm)
        .with_scheduler(scheduler())
        .role(role(vec![trigger(
            "no_lead",
            TriggerKind::Interval,
            "30m",
            json!({}),
        )]))
        .unwrap();
    let (report, seen) = serve_for(&runtime, hours(1.1)).await;
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|(_, what)| what.starts_with("failed") && what.contains("lead")),
        "{seen:?}"
    );
    assert_eq!((report.fired, report.completed, report.failed), (2, 0, 2));
}

/// Answers after `delay` (of tokio's clock).
struct Slow {
    delay: Duration,
    inner: ScriptedLlm,
}

#[async_trait]
impl LlmProvider for Slow {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        tokio::time::sleep(self.delay).await;
        self.inner.call(request).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_firing_during_its_previous_run_is_skipped_and_stopping_lets_runs_finish() {
    let llm = Arc::new(Slow {
        delay: hours(1.5),
        inner: ScriptedLlm::always(LlmResponse::text(r#"{"score": 1}"#)),
    });
    let runtime = RoleRuntime::new(llm)
        .with_scheduler(scheduler())
        .role(role(vec![trigger(
            "hourly",
            TriggerKind::Interval,
            "1h",
            json!({"lead": "Acme"}),
        )]))
        .unwrap();
    // Runs start at 1h (ends 2.5h) and 3h (ends 4.5h, after the stop at 3.5h).
    let (report, seen) = serve_for(&runtime, hours(3.5)).await;
    assert_eq!(
        seen,
        [
            (at("2026-11-25T02:00:00Z"), "skipped".to_owned()),
            (
                at("2026-11-25T01:00:00Z"),
                "completed {\"score\":1}".to_owned()
            ),
            (
                at("2026-11-25T03:00:00Z"),
                "completed {\"score\":1}".to_owned()
            ),
        ]
    );
    assert_eq!((report.fired, report.completed, report.skipped), (3, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn reflection_runs_on_its_schedule_and_publishes() {
    let llm = Arc::new(ScriptedLlm::new([
        LlmResponse::text(r#"{"score": 90}"#),
        LlmResponse::text(
            r#"[{"content": "Webinar leads qualify fast", "confidence": 0.9, "domain": "revenue", "tags": []}]"#,
        ),
    ]));
    let workspace = WorkspaceMemory::new();
    let runtime = RoleRuntime::new(llm.clone())
        .with_workspace(workspace.clone())
        .with_scheduler(scheduler())
        .with_reflection(Reflection::cron("0 3 * * *").min_confidence(0.8))
        .role(role(vec![]))
        .unwrap();
    assert_eq!(runtime.scheduled_triggers().len(), 1);
    runtime
        .activate(
            "cro",
            "revenue_ops",
            "qualify",
            [("lead", "Acme")].into_iter().collect(),
        )
        .await
        .unwrap();
    let (report, seen) = serve_for(&runtime, hours(3.5)).await;
    assert_eq!(
        seen,
        [(at("2026-11-25T03:00:00Z"), "reflected 1 1".to_owned())]
    );
    assert_eq!((report.schedules, report.completed), (1, 1));
    assert!(
        llm.requests()[1].system.contains("You are the CRO."),
        "the soul frames the reflection"
    );
    let reader = ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential);
    let published = workspace.query(&reader, FactQuery::new()).await.unwrap();
    assert!(
        published
            .iter()
            .any(|f| f.content == "Webinar leads qualify fast"),
        "{published:?}"
    );
}

#[derive(Default)]
struct Elsewhere;

#[async_trait]
impl ScheduleProvider for Elsewhere {
    async fn schedule(&self, _: &str, t: &TriggerConfig) -> Result<String, ScheduleError> {
        Ok(t.id.clone())
    }
    async fn cancel(&self, _: &str) -> Result<(), ScheduleError> {
        Ok(())
    }
    async fn list_active(&self, _: &str) -> Result<Vec<ScheduleInfo>, ScheduleError> {
        Ok(Vec::new())
    }
}

#[tokio::test(start_paused = true)]
async fn serve_needs_a_scheduler_that_runs_here_and_a_bad_trigger_registers_nothing() {
    let llm = Arc::new(ScriptedLlm::default());
    let hourly = || trigger("hourly", TriggerKind::Interval, "1h", json!(null));
    let stop = || tokio::time::sleep(Duration::from_secs(1));
    let none = RoleRuntime::new(llm.clone())
        .role(role(vec![hourly()]))
        .unwrap();
    assert!(matches!(
        none.serve(stop(), |_| {}).await,
        Err(Error::NoScheduler)
    ));
    let elsewhere = RoleRuntime::new(llm.clone())
        .with_scheduler(Arc::new(Elsewhere))
        .role(role(vec![hourly()]))
        .unwrap();
    assert!(matches!(
        elsewhere.serve(stop(), |_| {}).await,
        Err(Error::NoFirings)
    ));

    let scheduler = scheduler();
    let bad = RoleRuntime::new(llm)
        .with_scheduler(scheduler.clone())
        .role(role(vec![
            hourly(),
            trigger("broken", TriggerKind::Cron, "every monday", json!(null)),
        ]))
        .unwrap();
    let err = bad.serve(stop(), |_| {}).await.unwrap_err();
    assert!(
        matches!(&err, Error::Schedule { role, .. } if role == "cro"),
        "{err}"
    );
    assert!(err.to_string().contains("broken"), "{err}");
    assert!(
        scheduler.is_empty(),
        "what was registered before the bad trigger is cancelled"
    );
    // Nothing was taken: fixed, the same scheduler serves.
    let good = RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text("{}"))))
        .with_scheduler(scheduler.clone())
        .role(role(vec![hourly()]))
        .unwrap();
    let report = good.serve(stop(), |_| {}).await.unwrap();
    assert_eq!(report.schedules, 1);
}
