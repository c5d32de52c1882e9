//! Against a real Temporal server (`cargo xtask temporal up`; the URL in
//! `OPENVIBE_TEMPORAL_URL`): schedules, activations run by a worker, the
//! reflection schedule, and a run that survives a killed worker.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use openvibe_memory::{ClearanceProfile, WorkspaceMemory};
use openvibe_operators::Operator;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{LlmNode, Node, NodeContext};
use openvibe_protocols::{
    Classification, FactQuery, LlmResponse, ScheduleError, ScheduleProvider, State, TriggerConfig,
    TriggerKind,
};
use openvibe_roles::{Reflection, Role, RoleRuntime};
use openvibe_temporal::{
    ActivationOutcome, NodeRan, TemporalConfig, TemporalScheduler, TemporalWorker,
};
use serde_json::json;
use tokio::sync::mpsc;

/// The server, or a loud failure (or, with `OPENVIBE_SKIP_TEMPORAL=1`, a
/// reported skip).
fn url() -> Option<String> {
    openvibe_memory_testkit::skip::temporal_url()
}

/// A task queue of its own, so tests (and earlier runs) never share work.
fn config(url: &str, test: &str) -> TemporalConfig {
    TemporalConfig::new(url).task_queue(format!(
        "openvibe-test-{test}-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    ))
}

fn trigger(id: &str, kind: TriggerKind, schedule: &str, input: serde_json::Value) -> TriggerConfig {
    TriggerConfig {
        id: id.into(),
        kind,
        schedule: Some(schedule.into()),
        workflow: "qualify".into(),
        operator_id: Some("revenue_ops".into()),
        input,
    }
}

fn qualifying_role(role_id: &str, triggers: Vec<TriggerConfig>) -> Role {
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
    Role::new(role_id)
        .soul("You are the CRO.")
        .operator(op)
        .clearance(
            ClearanceProfile::new(role_id).with_domain("revenue", Classification::Confidential),
        )
}

/// Run `worker` until `done` resolves (the worker's future is not `Send`,
/// so it runs beside the test body rather than on another task).
async fn with_worker<T>(worker: TemporalWorker, done: impl Future<Output = T>) -> T {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = worker.run(async {
        let _ = stop_rx.await;
    });
    let body = async {
        let out = done.await;
        let _ = stop_tx.send(());
        out
    };
    let (ran, out) = tokio::join!(run, body);
    ran.expect("the worker runs and stops cleanly");
    out
}

async fn wait_for<T>(what: &str, rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .unwrap_or_else(|_| panic!("no {what} within 60 s"))
        .expect("the worker is still running")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_become_schedules_that_list_replace_and_cancel() {
    let Some(url) = url() else { return };
    let scheduler = TemporalScheduler::connect(config(&url, "schedules"))
        .await
        .unwrap();
    let role_id = format!("cro{}", std::process::id());
    let hourly = trigger(
        "hourly",
        TriggerKind::Interval,
        "1h",
        json!({"lead": "Acme"}),
    );
    let weekdays = trigger(
        "weekdays",
        TriggerKind::Cron,
        "CRON_TZ=Europe/Berlin 0 9 * * MON-FRI",
        json!(null),
    );
    let a = scheduler.schedule(&role_id, &hourly).await.unwrap();
    let b = scheduler.schedule(&role_id, &weekdays).await.unwrap();
    assert_eq!(a, TemporalScheduler::schedule_id(&role_id, &hourly));
    // Registering again replaces, it does not fail.
    assert_eq!(scheduler.schedule(&role_id, &hourly).await.unwrap(), a);

    // The server's list is eventually consistent.
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = scheduler.list_active(&role_id).await.unwrap();
        if listed.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        listed
            .iter()
            .map(|s| s.schedule_id.as_str())
            .collect::<Vec<_>>(),
        [a.as_str(), b.as_str()]
    );
    assert_eq!(listed[0].trigger, hourly);
    assert_eq!(listed[1].trigger, weekdays);
    let now = chrono::Utc::now();
    let next = listed[0].next_run.expect("Temporal plans the next run");
    assert!(
        next > now && next <= now + chrono::Duration::hours(1),
        "{next}"
    );
    let berlin = listed[1]
        .next_run
        .expect("planned")
        .with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!(berlin.format("%H:%M").to_string(), "09:00");

    // Bad triggers are refused before the server is asked.
    let bad = trigger("bad", TriggerKind::Cron, "every day", json!(null));
    assert!(matches!(
        scheduler.schedule(&role_id, &bad).await,
        Err(ScheduleError::InvalidTrigger { .. })
    ));
    let on_demand = trigger("manual", TriggerKind::OnDemand, "", json!(null));
    assert!(scheduler.schedule(&role_id, &on_demand).await.is_err());

    scheduler.cancel(&a).await.unwrap();
    scheduler.cancel(&b).await.unwrap();
    assert_eq!(
        scheduler.cancel(&a).await,
        Err(ScheduleError::UnknownSchedule(a.clone()))
    );
    for _ in 0..100 {
        if scheduler.list_active(&role_id).await.unwrap().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("cancelled schedules are still listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_trigger_fires_and_a_worker_runs_its_workflow() {
    let Some(url) = url() else { return };
    let config = config(&url, "fire");
    let role_id = format!("cro{}", std::process::id());
    let scheduler = Arc::new(TemporalScheduler::connect(config.clone()).await.unwrap());
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(r#"{"score": 70}"#)));
    let hourly = trigger(
        "hourly",
        TriggerKind::Interval,
        "1h",
        json!({"lead": "Acme"}),
    );
    let runtime = Arc::new(
        RoleRuntime::new(llm.clone())
            .with_scheduler(scheduler.clone())
            .role(qualifying_role(&role_id, vec![hourly.clone()]))
            .unwrap(),
    );
    let ids = runtime.start().await.unwrap();
    assert_eq!(ids, [TemporalScheduler::schedule_id(&role_id, &hourly)]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = TemporalWorker::new(runtime.clone(), config).on_node(move |ran: &NodeRan| {
        let _ = tx.send(ran.clone());
    });
    let ran = with_worker(worker, async {
        // Fire it now rather than wait an hour: Temporal starts the
        // workflow exactly as its timetable would.
        scheduler.trigger_now(&ids[0]).await.unwrap();
        wait_for("node", &mut rx).await
    })
    .await;
    scheduler.cancel(&ids[0]).await.unwrap();
    assert_eq!(
        (
            ran.role_id.as_str(),
            ran.workflow_id.as_str(),
            ran.node.as_str(),
            ran.attempt
        ),
        (role_id.as_str(), "qualify", "qualify", 1)
    );
    assert_eq!(ran.next, openvibe_operators::END);
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].system.contains("You are the CRO."),
        "run as the role"
    );
    assert!(
        format!("{:?}", requests[0].messages).contains("Acme"),
        "with the trigger's input"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reflection_schedule_reflects_and_publishes_on_a_worker() {
    let Some(url) = url() else { return };
    let config = config(&url, "reflect");
    let role_id = format!("cro{}", std::process::id());
    let scheduler = Arc::new(TemporalScheduler::connect(config.clone()).await.unwrap());
    let llm = Arc::new(ScriptedLlm::new([
        LlmResponse::text(r#"{"score": 90}"#),
        LlmResponse::text(
            r#"[{"content": "Webinar leads qualify fast", "confidence": 0.9, "domain": "revenue", "tags": []}]"#,
        ),
    ]));
    let workspace = WorkspaceMemory::new();
    let runtime = Arc::new(
        RoleRuntime::new(llm.clone())
            .with_workspace(workspace.clone())
            .with_scheduler(scheduler.clone())
            .with_reflection(Reflection::daily().min_confidence(0.8))
            .role(qualifying_role(&role_id, vec![]))
            .unwrap(),
    );
    runtime
        .activate(
            &role_id,
            "revenue_ops",
            "qualify",
            [("lead", "Acme")].into_iter().collect(),
        )
        .await
        .unwrap();
    let ids = runtime.start().await.unwrap();
    assert_eq!(ids.len(), 1, "the daily reflection");
    let info = scheduler.list_active(&role_id).await.unwrap();
    assert!(info.len() <= 1);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = TemporalWorker::new(runtime.clone(), config).on_node(move |ran: &NodeRan| {
        let _ = tx.send(ran.clone());
    });
    let ran = with_worker(worker, async {
        scheduler.trigger_now(&ids[0]).await.unwrap();
        wait_for("reflection", &mut rx).await
    })
    .await;
    scheduler.cancel(&ids[0]).await.unwrap();
    assert_eq!(
        (ran.workflow_id.as_str(), ran.node.as_str()),
        ("openvibe.reflect", "reflect")
    );
    let reader =
        ClearanceProfile::new(&role_id).with_domain("revenue", Classification::Confidential);
    let published = workspace.query(&reader, FactQuery::new()).await.unwrap();
    assert!(
        published
            .iter()
            .any(|f| f.content == "Webinar leads qualify fast"),
        "{published:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prioritization_schedule_sets_the_day_on_a_worker() {
    let Some(url) = url() else { return };
    let config = config(&url, "prioritize");
    let role_id = format!("cro{}", std::process::id());
    let scheduler = Arc::new(TemporalScheduler::connect(config.clone()).await.unwrap());
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(
        r#"[{"title": "Call Acme", "reason": "largest deal", "goal_id": "pipeline"}]"#,
    )));
    let stores = openvibe_memory::in_memory_stores();
    let goals = openvibe_roles::goals::parse_goals(
        &format!(
            "objectives:\n  - id: pipeline\n    owner: {role_id}\n    title: Pipeline $2M\n    \
             due: 2026-12-31\n    key_results:\n      - {{ id: value, metric: pipeline_usd, target: 2000000 }}\n"
        ),
        Path::new("goals.yaml"),
        None,
    )
    .unwrap();
    let runtime = Arc::new(
        RoleRuntime::new(llm.clone())
            .with_stores(stores.clone())
            .with_scheduler(scheduler.clone())
            .with_prioritization(openvibe_roles::Prioritization::daily())
            .role(qualifying_role(&role_id, vec![]))
            .unwrap()
            .with_goals(goals),
    );
    let ids = runtime.start().await.unwrap();
    assert_eq!(ids.len(), 1, "the daily prioritization");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = TemporalWorker::new(runtime.clone(), config).on_node(move |ran: &NodeRan| {
        let _ = tx.send(ran.clone());
    });
    let ran = with_worker(worker, async {
        scheduler.trigger_now(&ids[0]).await.unwrap();
        wait_for("prioritization", &mut rx).await
    })
    .await;
    scheduler.cancel(&ids[0]).await.unwrap();
    assert_eq!(
        (ran.workflow_id.as_str(), ran.node.as_str()),
        ("openvibe.prioritize", "prioritize")
    );
    let role = runtime.get_role(&role_id).unwrap();
    let stored = role
        .goals()
        .unwrap()
        .priorities(chrono::Utc::now().date_naive())
        .await
        .unwrap()
        .expect("the worker stored the day's priorities");
    assert_eq!(stored.items[0].title, "Call Acme");
    assert_eq!(stored.items[0].goal_id.as_deref(), Some("pipeline"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_workflow_fails_the_run_at_once_with_the_reason() {
    let Some(url) = url() else { return };
    let config = config(&url, "unknown");
    let role_id = format!("cro{}", std::process::id());
    let scheduler = TemporalScheduler::connect(config.clone()).await.unwrap();
    let runtime = Arc::new(
        RoleRuntime::new(Arc::new(ScriptedLlm::default()))
            .role(qualifying_role(&role_id, vec![]))
            .unwrap(),
    );
    let mut missing = trigger("manual", TriggerKind::OnDemand, "", json!({"lead": "Acme"}));
    missing.workflow = "no_such_workflow".into();
    let run_id = format!("unknown-{}", chrono::Utc::now().timestamp_micros());
    let outcome = with_worker(
        TemporalWorker::new(runtime, config),
        tokio::time::timeout(
            Duration::from_secs(60),
            scheduler.activate(&run_id, &role_id, &missing),
        ),
    )
    .await
    .expect("a permanent error is not retried for ever");
    let message = outcome.unwrap_err().to_string();
    assert!(message.contains("no_such_workflow"), "{message}");
}

// --- A run that survives its worker's death ------------------------------

/// Where the durable test's nodes record each execution, and the env vars
/// that make this test binary a worker process.
const DIR_ENV: &str = "OPENVIBE_TEMPORAL_DURABLE_DIR";
const QUEUE_ENV: &str = "OPENVIBE_TEMPORAL_DURABLE_QUEUE";

/// A node that appends its name to `executions` (fsynced) before it works;
/// `think`, the first time, then hangs until its process is killed.
struct Recorded {
    name: &'static str,
    dir: PathBuf,
}

fn executions(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("executions"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[async_trait]
impl Node for Recorded {
    fn name(&self) -> &str {
        self.name
    }
    async fn run(
        &self,
        _ctx: &NodeContext,
        mut state: State,
    ) -> Result<State, openvibe_primitives::Error> {
        let first_time = !executions(&self.dir).iter().any(|n| n == self.name);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("executions"))
            .expect("the executions file");
        writeln!(file, "{}", self.name).unwrap();
        file.sync_all().unwrap();
        if self.name == "think" && first_time {
            std::future::pending::<()>().await;
        }
        state.insert(self.name, true);
        Ok(state)
    }
}

fn pipeline_runtime(dir: &Path) -> RoleRuntime {
    let node = |name| Recorded {
        name,
        dir: dir.to_owned(),
    };
    let op = Operator::new("pipeline")
        .node(node("fetch"))
        .node(node("think"))
        .node(node("write"))
        .sequence("report", ["fetch", "think", "write"])
        .unwrap();
    RoleRuntime::new(Arc::new(ScriptedLlm::default()))
        .role(Role::new("analyst").operator(op))
        .unwrap()
}

/// Not a test of its own: `a_run_survives_a_killed_worker...` starts this
/// test binary with `--ignored --exact` and the environment below to get a
/// worker process it can kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a worker process for a_run_survives_a_killed_worker_without_rerunning_finished_nodes"]
async fn durable_worker_process() {
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("started by the durable test"));
    let queue = std::env::var(QUEUE_ENV).expect("started by the durable test");
    let url = std::env::var(openvibe_memory_testkit::skip::TEMPORAL_URL_ENV).unwrap();
    let config = TemporalConfig::new(url)
        .task_queue(queue)
        .node_timeout(Duration::from_secs(3));
    TemporalWorker::new(Arc::new(pipeline_runtime(&dir)), config)
        .run(std::future::pending())
        .await
        .unwrap();
}

/// A worker process, killed when the test ends, passed or not.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_worker(dir: &Path, queue: &str, url: &str) -> Reaped {
    Reaped(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "durable_worker_process",
                "--nocapture",
            ])
            .env(DIR_ENV, dir)
            .env(QUEUE_ENV, queue)
            .env(openvibe_memory_testkit::skip::TEMPORAL_URL_ENV, url)
            .spawn()
            .expect("the worker process starts"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_a_killed_worker_without_rerunning_finished_nodes() {
    let Some(url) = url() else { return };
    let dir = std::env::temp_dir().join(format!(
        "openvibe-temporal-durable-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let config = config(&url, "durable").node_timeout(Duration::from_secs(3));
    let queue = config.task_queue.clone();
    let scheduler = TemporalScheduler::connect(config).await.unwrap();
    let report = TriggerConfig {
        id: "manual".into(),
        kind: TriggerKind::OnDemand,
        schedule: None,
        workflow: "report".into(),
        operator_id: Some("pipeline".into()),
        input: json!({"topic": "Q3"}),
    };
    let run_id = format!("durable-{}", chrono::Utc::now().timestamp_micros());
    let run = {
        let scheduler = scheduler.clone();
        let run_id = run_id.clone();
        tokio::spawn(async move { scheduler.activate(&run_id, "analyst", &report).await })
    };

    // The first worker runs `fetch`, then dies inside `think`.
    let first = spawn_worker(&dir, &queue, &url);
    let started = std::time::Instant::now();
    while !executions(&dir).contains(&"think".to_owned()) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the first worker never reached `think`: {:?}",
            executions(&dir)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(first); // SIGKILL: no graceful shutdown, the node is cut off.
    assert_eq!(executions(&dir), ["fetch", "think"]);

    // Another worker finishes the run from Temporal's history.
    let second = spawn_worker(&dir, &queue, &url);
    let outcome = tokio::time::timeout(Duration::from_secs(90), run).await;
    drop(second);
    let outcome = outcome
        .expect("the run finishes on the second worker")
        .unwrap()
        .unwrap();
    let ActivationOutcome::Completed { state, steps } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(steps, 3);
    assert_eq!(state.get("write"), Some(&json!(true)));
    assert_eq!(state.get("topic"), Some(&json!("Q3")));
    // `fetch` ran once: the second worker replayed it from the history;
    // `think` ran again (it was cut off); `write` once.
    assert_eq!(executions(&dir), ["fetch", "think", "think", "write"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CRO that proposes large discounts (and counts the ones it applies),
/// filing proposals in `stores`.
fn discounting_role(
    stores: &openvibe_protocols::Stores,
    runs: Arc<std::sync::atomic::AtomicUsize>,
) -> Role {
    use openvibe_primitives::FnTool;
    let tool = FnTool::new(
        "apply_discount",
        "Apply a discount.",
        move |d: serde_json::Value| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, String>(format!("{}% applied", d["pct"]))
            }
        },
    );
    Role::new("cro")
        .domains(["revenue"])
        .authority(openvibe_roles::AuthorityConfig::new().autonomous(["give_discount"]))
        .impact_rules(
            openvibe_roles::ImpactRules::new()
                .rule("amount > 10000", openvibe_protocols::Impact::High)
                .unwrap(),
        )
        .clearance(ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted))
        .action_tool(tool)
        .with_proposals(stores.proposals.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_proposal_runs_once_as_a_temporal_activity_whatever_the_workers() {
    use openvibe_protocols::{
        Action, CallerContext, Clearance, DecisionEvent, Insight, Outcome, Principal,
        ProposalStatus, Verdict,
    };
    let Some(url) = url() else { return };
    let stores = openvibe_memory::in_memory_stores();
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runtime = Arc::new(
        RoleRuntime::new(Arc::new(ScriptedLlm::new([])))
            .with_stores(stores.clone())
            .with_proposal_poll(Duration::from_millis(100))
            .role(discounting_role(&stores, runs.clone()))
            .unwrap(),
    );
    let role = runtime.get_role("cro").unwrap();
    role.agent_memory()
        .unwrap()
        .store_insight(
            Insight::new("i1", "cro", "annual plan discounts close deals", 0.9).domain("revenue"),
        )
        .await
        .unwrap();
    let event = DecisionEvent::new("evt-temporal", "discount.requested", "revenue")
        .summary("Acme asks 10% off a 48,000 annual plan")
        .data(json!({"amount": 48000}))
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10}),
        ));
    let handled = runtime.handle("cro", &event).await.unwrap();
    assert_eq!(handled.decision.outcome, Outcome::Propose);
    let proposal = handled.proposal.unwrap();
    let ann = CallerContext::new(role.proposal_context().tenant_id(), Principal::user("ann"))
        .with_clearance(Clearance::unrestricted());
    stores
        .proposals
        .decide(&ann, &proposal.id, &Verdict::approve("go"))
        .await
        .unwrap();

    // Two workers on one task queue both see the approval: one workflow
    // (its id is the proposal's), one activity, one run.
    let config = config(&url, "proposals");
    let first = TemporalWorker::new(runtime.clone(), config.clone());
    let second = TemporalWorker::new(runtime.clone(), config);
    let done = with_worker(
        first,
        with_worker(second, async {
            for _ in 0..300 {
                let p = stores
                    .proposals
                    .get(&ann, &proposal.id)
                    .await
                    .unwrap()
                    .unwrap();
                if p.status == ProposalStatus::Executed {
                    // A little longer: a second run would show now.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    return p;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("the approved proposal did not run within 30 s");
        }),
    )
    .await;
    assert_eq!(done.result, Some(json!("10% applied")));
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(
        openvibe_temporal::proposal_workflow_id(&done),
        format!(
            "openvibe.proposal/{}/{}/{}",
            done.meta.tenant_id,
            done.id,
            done.meta.created_at.timestamp_micros()
        )
    );
}

/// An assessor and a tool that append to `executions` (fsynced): `decide`
/// and `act` of the loop, as a process saw them; the tool hangs the first
/// time, until its process is killed.
struct RecordedAssessor(PathBuf);

#[async_trait]
impl openvibe_roles::ConfidenceAssessor for RecordedAssessor {
    fn name(&self) -> &str {
        "recorded"
    }
    async fn assess(
        &self,
        _event: &openvibe_protocols::DecisionEvent,
        _computed: &openvibe_protocols::ConfidenceStep,
    ) -> Result<Option<(f64, String)>, String> {
        record(&self.0, "decide");
        Ok(None)
    }
}

fn record(dir: &Path, what: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("executions"))
        .expect("the executions file");
    writeln!(file, "{what}").unwrap();
    file.sync_all().unwrap();
}

/// The CRO of the loop tests: acts on small discounts (its assessor and
/// tool record themselves in `dir`; the tool hangs the first time when
/// `hang`).
fn looping_runtime(dir: &Path, hang: bool) -> RoleRuntime {
    use openvibe_primitives::FnTool;
    let tool_dir = dir.to_owned();
    let tool = FnTool::new(
        "apply_discount",
        "Apply a discount.",
        move |d: serde_json::Value| {
            let dir = tool_dir.clone();
            async move {
                let first = !executions(&dir).iter().any(|n| n == "act");
                record(&dir, "act");
                if hang && first {
                    std::future::pending::<()>().await;
                }
                Ok::<_, String>(format!("{}% applied", d["pct"]))
            }
        },
    );
    let role = Role::new("cro")
        .domains(["revenue"])
        .authority(openvibe_roles::AuthorityConfig::new().autonomous(["give_discount"]))
        .decision_matrix(
            serde_json::from_value(json!({"outcomes": {"low": {"low": "act"}}})).unwrap(),
        )
        .confidence_assessor(RecordedAssessor(dir.to_owned()))
        .clearance(ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted))
        .action_tool(tool);
    RoleRuntime::new(Arc::new(ScriptedLlm::default()))
        .role(role)
        .unwrap()
}

fn discount_event(id: &str) -> openvibe_protocols::DecisionEvent {
    openvibe_protocols::DecisionEvent::new(id, "discount.requested", "revenue")
        .summary("Acme asks 10% off")
        .data(json!({"amount": 500}))
        .action(openvibe_protocols::Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10}),
        ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_goes_through_the_loop_once_on_a_worker() {
    use openvibe_roles::{ActOutcome, EventSource, Learning, Stage};
    let Some(url) = url() else { return };
    let dir = std::env::temp_dir().join(format!(
        "openvibe-temporal-loop-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let config = config(&url, "loop");
    let scheduler = TemporalScheduler::connect(config.clone()).await.unwrap();
    let event_id = format!("evt-{}", chrono::Utc::now().timestamp_micros());
    let learning = Learning::default();
    let first = scheduler
        .push_event(
            "cro",
            discount_event(&event_id),
            EventSource::Code,
            &learning,
        )
        .await
        .unwrap();
    assert!(!first.duplicate);
    let again = scheduler
        .push_event(
            "cro",
            discount_event(&event_id),
            EventSource::Http,
            &learning,
        )
        .await
        .unwrap();
    assert!(again.duplicate, "one workflow per event id");
    let bad = scheduler
        .push_event(
            "cro",
            openvibe_protocols::DecisionEvent::new("x", "", "revenue"),
            EventSource::Code,
            &learning,
        )
        .await;
    assert!(bad.is_err(), "a malformed event is refused before Temporal");

    let worker = TemporalWorker::new(Arc::new(looping_runtime(&dir, false)), config);
    let trace = with_worker(worker, scheduler.event_trace("cro", &event_id))
        .await
        .unwrap();
    let stages: Vec<Stage> = trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, Stage::ALL.to_vec(), "{}", trace.render());
    assert!(
        matches!(trace.act, Some(ActOutcome::Ran { .. })),
        "{}",
        trace.render()
    );
    // Pushed again after it finished: still a duplicate, nothing runs.
    assert!(
        scheduler
            .push_event(
                "cro",
                discount_event(&event_id),
                EventSource::Code,
                &learning
            )
            .await
            .unwrap()
            .duplicate
    );
    assert_eq!(executions(&dir), ["decide", "act"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a test of its own: the loop's kill test starts this test binary
/// with `--ignored --exact` to get a worker process it can kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a worker process for an_event_survives_a_killed_worker_without_repeating_a_finished_stage"]
async fn loop_worker_process() {
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("started by the loop test"));
    let queue = std::env::var(QUEUE_ENV).expect("started by the loop test");
    let url = std::env::var(openvibe_memory_testkit::skip::TEMPORAL_URL_ENV).unwrap();
    let config = TemporalConfig::new(url)
        .task_queue(queue)
        .node_timeout(Duration::from_secs(3));
    TemporalWorker::new(Arc::new(looping_runtime(&dir, true)), config)
        .run(std::future::pending())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_survives_a_killed_worker_without_repeating_a_finished_stage() {
    use openvibe_roles::{EventSource, Learning, Stage};
    let Some(url) = url() else { return };
    let dir = std::env::temp_dir().join(format!(
        "openvibe-temporal-loop-kill-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let config = config(&url, "loopkill").node_timeout(Duration::from_secs(3));
    let queue = config.task_queue.clone();
    let scheduler = TemporalScheduler::connect(config).await.unwrap();
    let event_id = format!("evt-kill-{}", chrono::Utc::now().timestamp_micros());
    scheduler
        .push_event(
            "cro",
            discount_event(&event_id),
            EventSource::Code,
            &Learning::default(),
        )
        .await
        .unwrap();
    let spawn = |dir: &Path| {
        Reaped(
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--ignored", "--exact", "loop_worker_process", "--nocapture"])
                .env(DIR_ENV, dir)
                .env(QUEUE_ENV, &queue)
                .env(openvibe_memory_testkit::skip::TEMPORAL_URL_ENV, &url)
                .spawn()
                .expect("the worker process starts"),
        )
    };
    // The first worker decides, then dies inside `act`.
    let first = spawn(&dir);
    let started = std::time::Instant::now();
    while !executions(&dir).contains(&"act".to_owned()) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the first worker never reached `act`: {:?}",
            executions(&dir)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(first); // SIGKILL
    assert_eq!(executions(&dir), ["decide", "act"]);
    let second = spawn(&dir);
    let trace = tokio::time::timeout(
        Duration::from_secs(90),
        scheduler.event_trace("cro", &event_id),
    )
    .await
    .expect("the event finishes on the second worker")
    .unwrap();
    drop(second);
    let stages: Vec<Stage> = trace.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, Stage::ALL.to_vec(), "{}", trace.render());
    // `decide` ran once (the second worker took its result from the
    // history); `act` ran again (it was cut off); nothing else repeated.
    assert_eq!(executions(&dir), ["decide", "act", "act"]);
    let _ = std::fs::remove_dir_all(&dir);
}
