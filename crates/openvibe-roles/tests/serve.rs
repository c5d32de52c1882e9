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

/// A node that counts its runs; while `hang` is set it never finishes (the
/// process is killed in the middle of it).
struct Step {
    name: &'static str,
    runs: Arc<std::sync::atomic::AtomicUsize>,
    hang: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait]
impl openvibe_primitives::Node for Step {
    fn name(&self) -> &str {
        self.name
    }

    async fn run(
        &self,
        _ctx: &openvibe_primitives::NodeContext,
        mut state: State,
    ) -> Result<State, openvibe_primitives::Error> {
        use std::sync::atomic::Ordering;
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        state.insert(self.name, true);
        Ok(state)
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_cut_off_by_a_crash_resumes_after_a_restart_without_rerunning_finished_nodes() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let dir = std::env::temp_dir().join(format!("openvibe-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = Arc::new(AtomicUsize::new(0));
    let second = Arc::new(AtomicUsize::new(0));
    let hang = Arc::new(AtomicBool::new(true));
    // One "process": a runtime, its scheduler and a checkpointer on disk.
    let process = |start: &str| {
        let op = Operator::new("pipeline")
            .node(Step {
                name: "first",
                runs: first.clone(),
                hang: Arc::new(AtomicBool::new(false)),
            })
            .node(Step {
                name: "second",
                runs: second.clone(),
                hang: hang.clone(),
            })
            .sequence("qualify", ["first", "second"])
            .unwrap()
            .trigger(trigger(
                "hourly",
                TriggerKind::Interval,
                "1h",
                json!({"lead": "Acme"}),
            ));
        let scheduler =
            InProcessScheduler::with_clock(Arc::new(TokioClock::starting_at(at(start))));
        RoleRuntime::new(Arc::new(ScriptedLlm::default()))
            .with_scheduler(Arc::new(scheduler))
            .with_checkpointer(Arc::new(
                openvibe_operators::FileCheckpointer::new(&dir).unwrap(),
            ))
            .role(Role::new("cro").operator(op))
            .unwrap()
    };

    // The first process is killed (its serve dropped) at 01:30, while the
    // 01:00 run is inside `second`.
    let crashed = process(START);
    let killed = tokio::time::timeout(
        hours(1.5),
        crashed.serve(std::future::pending(), |_| {
            panic!("nothing finishes before the crash")
        }),
    )
    .await;
    assert!(killed.is_err());
    drop(crashed);
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 1)
    );

    // The restarted process resumes the run at `second`; `first` never runs again.
    hang.store(false, Ordering::SeqCst);
    let restarted = process("2026-11-25T01:30:00Z");
    let mut seen = Vec::new();
    let report = restarted
        .serve(
            tokio::time::sleep(Duration::from_secs(600)),
            |fired: &Fired| {
                let state = match &fired.outcome {
                    Outcome::Completed(state) => state.clone(),
                    other => panic!("{other:?}"),
                };
                seen.push((fired.resumed, fired.firing.scheduled_at, state));
            },
        )
        .await
        .unwrap();
    assert_eq!(report.resumed, 1);
    assert_eq!(seen.len(), 1);
    let (resumed, due, state) = &seen[0];
    assert!(*resumed);
    assert_eq!(*due, at("2026-11-25T01:00:00Z"));
    assert_eq!(
        (state.get("first"), state.get("second"), state.get("lead")),
        (Some(&json!(true)), Some(&json!(true)), Some(&json!("Acme")))
    );
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 2)
    );

    // Finished: a third process has nothing to resume.
    let report = process("2026-11-25T01:45:00Z")
        .serve(tokio::time::sleep(Duration::from_secs(60)), |_| {})
        .await
        .unwrap();
    assert_eq!(report.resumed, 0);
    assert_eq!(first.load(Ordering::SeqCst), 1);
    let _ = std::fs::remove_dir_all(dir);
}
