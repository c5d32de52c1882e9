//! A role pursuing its goals (issue 39): objectives synced from
//! `goals.yaml`, decomposed once per version by the model, prioritized
//! (the prompt is a snapshot; the priorities reach the role's prompts),
//! progress moved by the metrics its nodes report, and the prioritization
//! run by the in-process scheduler.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use openvibe_memory::{ClearanceProfile, in_memory_stores};
use openvibe_operators::Operator;
use openvibe_primitives::LlmNode;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    Classification, Episode, Insight, LlmResponse, State, Stores, TriggerConfig, TriggerKind,
};
use openvibe_roles::goals::parse_goals;
use openvibe_roles::{Error, Fired, Outcome, Prioritization, Role, RoleRuntime};
use openvibe_schedule::{InProcessScheduler, TokioClock};
use serde_json::json;

const GOALS: &str = "\
objectives:
  - id: pipeline-q4
    owner: cro
    title: Build a $2M pipeline this quarter
    due: 2026-12-31
    key_results:
      - { id: pipeline-value, metric: pipeline_usd, baseline: 500000, target: 2000000, unit: USD }
      - { id: qualified-leads, metric: qualified_leads, target: 40, unit: leads }
";

const INITIATIVES: &str = r#"Here is the plan:
```json
[{"title": "Qualify every inbound lead within a day", "description": "Speed wins deals.", "key_results": ["qualified-leads"], "owner_hint": "ignored"},
 {"title": "Expand Acme to the enterprise plan", "description": "", "key_results": ["pipeline-value"]}]
```"#;

const PRIORITIES: &str = r#"[{"title": "Call Acme about the enterprise plan", "reason": "largest open deal", "goal_id": "pipeline-q4"},
 {"title": "Qualify the 5 leads from the webinar", "reason": "qualified leads lag", "goal_id": "pipeline-q4"},
 {"title": "Review the Q4 forecast", "reason": "", "goal_id": "not-a-goal"},
 {"title": "A fourth thing", "reason": "cut"}]"#;

fn qualify() -> Operator {
    Operator::new("revenue_ops")
        .node(
            LlmNode::new("qualify", "You qualify leads.", |s: &State| {
                Ok(format!("Lead: {}", s.require_str("lead")?))
            })
            .output_key("result"),
        )
        .sequence("qualify", ["qualify"])
        .unwrap()
}

fn cro() -> Role {
    Role::new("cro")
        .soul("You are the CRO.")
        .operator(qualify())
        .clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        )
}

fn runtime(llm: Arc<ScriptedLlm>, stores: &Stores) -> RoleRuntime {
    let goals = parse_goals(GOALS, Path::new("goals.yaml"), Some(&["cro"])).unwrap();
    RoleRuntime::new(llm)
        .with_stores(stores.clone())
        .role(cro())
        .unwrap()
        .with_goals(goals)
}

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 26).unwrap()
}

#[tokio::test]
async fn decomposition_runs_once_per_version_of_an_objective() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(INITIATIVES)));
    let runtime = runtime(llm.clone(), &stores);
    assert_eq!(runtime.sync_goals().await.unwrap(), 1);
    let goals = runtime.get_role("cro").unwrap().goals().unwrap();
    let goal = goals.decompose("pipeline-q4").await.unwrap();
    assert!(goal.is_decomposed());
    assert_eq!(goal.initiatives.len(), 2);
    assert_eq!(goal.initiatives[0].key_results, ["qualified-leads"]);
    assert_eq!(llm.call_count(), 1);
    // Unchanged objective: no model call, the same initiatives.
    let again = goals.decompose("pipeline-q4").await.unwrap();
    assert_eq!(again.initiatives, goal.initiatives);
    assert_eq!(
        llm.call_count(),
        1,
        "an unchanged objective is not decomposed again"
    );
    // Syncing the same file again changes nothing either.
    runtime.sync_goals().await.unwrap();
    assert_eq!(goals.decompose("pipeline-q4").await.unwrap().version, 1);
    assert_eq!(llm.call_count(), 1);
    // The system prompt names the role; the user message the key results.
    let request = &llm.requests()[0];
    assert!(
        request.system.starts_with("You are the CRO."),
        "{}",
        request.system
    );
    assert!(request.messages[0].text().contains("`qualified-leads`"));
}

#[tokio::test]
async fn a_malformed_decomposition_stores_nothing() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::new([
        LlmResponse::text("I would start with the big deals."),
        LlmResponse::text(r#"[{"title": "x", "key_results": ["no-such-kr"]}]"#),
    ]));
    let runtime = runtime(llm, &stores);
    runtime.sync_goals().await.unwrap();
    let goals = runtime.get_role("cro").unwrap().goals().unwrap();
    for _ in 0..2 {
        match goals.decompose("pipeline-q4").await {
            Err(Error::MalformedPlan { what, of, .. }) => {
                assert_eq!((what, of.as_str()), ("decomposition", "pipeline-q4"));
            }
            other => panic!("{other:?}"),
        }
    }
    let goal = goals.list().await.unwrap().remove(0);
    assert!(goal.initiatives.is_empty() && !goal.is_decomposed());
    assert!(matches!(
        goals.decompose("nope").await,
        Err(Error::Goal { .. })
    ));
}

#[tokio::test]
async fn the_prioritization_prompt_is_stable() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(PRIORITIES)));
    let runtime = runtime(llm, &stores);
    runtime.sync_goals().await.unwrap();
    let role = runtime.get_role("cro").unwrap();
    let goals = role.goals().unwrap();
    let progress = goals.progress().await.unwrap();
    let episode = Episode {
        action: "qualify".into(),
        output_summary: "Acme: qualified, $400k".into(),
        ..Episode::default()
    };
    let insight = Insight::new(
        "i1",
        "cro",
        "enterprise leads close faster after a demo",
        0.8,
    );
    let request = goals.prioritization_request(
        &progress,
        &[episode],
        &[insight],
        "Board meeting on Friday.",
        day(),
    );
    insta::assert_snapshot!(
        "prioritization_prompt",
        format!(
            "SYSTEM:\n{}\n\nUSER:\n{}",
            request.system,
            request.messages[0].text()
        )
    );
}

#[tokio::test]
async fn priorities_are_stored_and_reach_the_roles_prompts() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::new([
        LlmResponse::text(PRIORITIES),
        LlmResponse::text(r#"{"qualified": true}"#),
    ]));
    let runtime = runtime(llm.clone(), &stores);
    runtime.sync_goals().await.unwrap();
    let role = runtime.get_role("cro").unwrap();
    let today = Utc::now().date_naive();
    let stored = role.goals().unwrap().prioritize("", today).await.unwrap();
    assert_eq!(stored.items.len(), 3, "the top 3");
    assert_eq!(stored.items[0].title, "Call Acme about the enterprise plan");
    assert_eq!(
        stored.items[2].goal_id, None,
        "an unknown goal is not trusted"
    );
    assert_eq!(stored.meta.owner, "agent:cro");
    runtime
        .activate(
            "cro",
            "revenue_ops",
            "qualify",
            State::from_value(json!({"lead": "Acme"})).unwrap(),
        )
        .await
        .unwrap();
    let system = &llm.requests()[1].system;
    assert!(system.starts_with("You are the CRO."), "{system}");
    assert!(
        system.contains("## Priorities\nSet on")
            && system.contains(
                "1. Call Acme about the enterprise plan: largest open deal (goal `pipeline-q4`)"
            ),
        "{system}"
    );
    // A role without goals store: prioritizing is a typed error.
    let bare = Role::new("bare");
    assert!(matches!(bare.goals(), Err(Error::NoGoals { .. })));
}

#[tokio::test]
async fn node_outputs_with_a_metric_move_the_key_results_once() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(
        r#"{"qualified": true, "metric": [{"name": "pipeline_usd", "value": 400000, "note": "Acme"}, {"name": "qualified_leads", "value": 1}]}"#,
    )));
    let runtime = runtime(llm, &stores);
    runtime.sync_goals().await.unwrap();
    for lead in ["Acme", "Globex"] {
        runtime
            .activate(
                "cro",
                "revenue_ops",
                "qualify",
                State::from_value(json!({"lead": lead})).unwrap(),
            )
            .await
            .unwrap();
    }
    let goals = runtime.get_role("cro").unwrap().goals().unwrap();
    let progress = goals.progress().await.unwrap().remove(0);
    assert_eq!(progress.key_results[0].current, 1_300_000.0);
    assert_eq!(progress.key_results[1].current, 2.0);
    assert!((progress.progress - (0.8 / 1.5 + 2.0 / 40.0) / 2.0).abs() < 1e-9);
    // Each report names its episode, and recording it again counts once.
    let episodes = runtime
        .get_role("cro")
        .unwrap()
        .agent_memory()
        .unwrap()
        .recall_episodes(Default::default())
        .await
        .unwrap();
    let replay = openvibe_protocols::MetricOutput {
        name: "pipeline_usd".into(),
        value: 400_000.0,
        mode: Default::default(),
        note: "Acme".into(),
    }
    .report("cro", &episodes[0].id);
    let again = goals.report(replay).await.unwrap();
    assert_eq!(again.episode_id.as_deref(), Some(episodes[0].id.as_str()));
    let after = goals.progress().await.unwrap().remove(0);
    assert_eq!(after.key_results[0].current, 1_300_000.0, "counted once");
}

#[tokio::test]
async fn a_malformed_metric_fails_the_node_clearly() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(
        r#"{"metric": {"name": "pipeline_usd"}}"#,
    )));
    let runtime = runtime(llm, &stores);
    let failed = runtime
        .activate(
            "cro",
            "revenue_ops",
            "qualify",
            State::from_value(json!({"lead": "Acme"})).unwrap(),
        )
        .await;
    let message = failed.unwrap_err().to_string();
    assert!(message.contains("metric"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn the_scheduler_prioritizes_every_day() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(PRIORITIES)));
    let start: DateTime<Utc> = "2026-11-25T00:00:00Z".parse().unwrap();
    let scheduler = Arc::new(InProcessScheduler::with_clock(Arc::new(
        TokioClock::starting_at(start),
    )));
    let runtime = runtime(llm.clone(), &stores)
        .with_scheduler(scheduler)
        .with_prioritization(Prioritization::daily());
    let triggers: Vec<TriggerConfig> = runtime
        .scheduled_triggers()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(triggers.len(), 1);
    assert_eq!(triggers[0].kind, TriggerKind::Cron);
    let mut seen = Vec::new();
    let report = runtime
        .serve(
            tokio::time::sleep(Duration::from_secs(2 * 86_400 + 60)),
            |fired: &Fired| {
                if let Outcome::Prioritized(p) = &fired.outcome {
                    seen.push((p.day, p.items.len()));
                }
            },
        )
        .await
        .unwrap();
    assert_eq!(report.failed, 0);
    let d = |n| NaiveDate::from_ymd_opt(2026, 11, n).unwrap();
    assert_eq!(seen, [(d(25), 3), (d(26), 3)]);
    let stored = runtime
        .get_role("cro")
        .unwrap()
        .goals()
        .unwrap()
        .priorities(d(27))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.day, d(26));
}

#[tokio::test]
async fn a_tool_result_with_a_metric_moves_the_key_results_once_per_run() {
    use openvibe_primitives::FnTool;
    use openvibe_protocols::{Action, DecisionEvent, Insight, Outcome as Decided};
    use openvibe_roles::AuthorityConfig;
    let stores = in_memory_stores();
    let close = FnTool::new(
        "close_deal",
        "Close a deal in the CRM.",
        |input: serde_json::Value| async move {
            let usd = input["usd"].as_f64().unwrap_or(0.0);
            Ok::<_, String>(
                json!({"closed": true, "metric": {"name": "pipeline_usd", "value": usd, "note": "closed"}})
                    .to_string(),
            )
        },
    );
    let role = cro()
        .domains(["revenue"])
        .authority(AuthorityConfig::new().autonomous(["close_deal"]))
        .action_tool(close);
    let goals = parse_goals(GOALS, Path::new("goals.yaml"), Some(&["cro"])).unwrap();
    let runtime = RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text("{}"))))
        .with_stores(stores.clone())
        .role(role)
        .unwrap()
        .with_goals(goals);
    runtime.sync_goals().await.unwrap();
    let role = runtime.get_role("cro").unwrap();
    role.agent_memory()
        .unwrap()
        .store_insight(
            Insight::new("i1", "cro", "closing deals closes deals", 0.95).domain("revenue"),
        )
        .await
        .unwrap();
    let event = DecisionEvent::new("deal-1", "deal.won", "revenue")
        .summary("closing deals")
        .action(Action::tool(
            "close_deal",
            "close_deal",
            json!({"usd": 40000}),
        ));
    let handled = role.handle(&event).await.unwrap();
    assert_eq!(
        handled.decision.outcome,
        Decided::Act,
        "{:?}",
        handled.decision
    );
    let progress = role.goals().unwrap().progress().await.unwrap().remove(0);
    assert_eq!(progress.key_results[0].current, 540_000.0);
    // The same decision handled again (a redelivered event) counts once.
    role.handle(&event).await.unwrap();
    let again = role.goals().unwrap().progress().await.unwrap().remove(0);
    assert_eq!(again.key_results[0].current, 540_000.0);
    assert_eq!(again.key_results[0].reports, 1);
}

/// A tool an agent node calls reports a metric in its result (issue 64):
/// the role's key result moves, once per call id, however often the call
/// is replayed.
#[tokio::test]
async fn a_tool_result_inside_an_agent_node_moves_a_key_result_once_per_call() {
    use openvibe_primitives::{AgentNode, FnTool};
    use openvibe_protocols::ContentBlock;
    let stores = in_memory_stores();
    let book = FnTool::new(
        "book_deal",
        "Book a deal in the CRM.",
        |input: serde_json::Value| async move {
            let amount = input["amount"].as_f64().unwrap_or_default();
            Ok::<_, String>(
                json!({"booked": true, "metric": {"name": "pipeline_usd", "value": amount, "note": "booked"}})
                    .to_string(),
            )
        },
    );
    let op = Operator::new("deals")
        .node(
            AgentNode::new("book", "You book deals.", |_| Ok("Book Acme".into()))
                .tool(book)
                .output_key("result"),
        )
        .sequence("book", ["book"])
        .unwrap();
    let call = |id: &str| {
        LlmResponse::from_blocks(vec![ContentBlock::ToolUse {
            id: id.into(),
            name: "book_deal".into(),
            input: json!({"amount": 250000}),
        }])
    };
    // Two runs that replay call t1 (a retried run), then one with t2.
    let llm = Arc::new(ScriptedLlm::new([
        call("t1"),
        LlmResponse::text("booked"),
        call("t1"),
        LlmResponse::text("booked"),
        call("t2"),
        LlmResponse::text("booked"),
    ]));
    let goals = parse_goals(GOALS, Path::new("goals.yaml"), Some(&["cro"])).unwrap();
    let runtime = RoleRuntime::new(llm)
        .with_stores(stores.clone())
        .role(cro().operator(op))
        .unwrap()
        .with_goals(goals);
    runtime.sync_goals().await.unwrap();
    let progress = || async {
        runtime
            .get_role("cro")
            .unwrap()
            .goals()
            .unwrap()
            .progress()
            .await
            .unwrap()
            .remove(0)
            .key_results[0]
            .current
    };
    for expected in [750_000.0, 750_000.0, 1_000_000.0] {
        runtime
            .activate("cro", "deals", "book", State::new())
            .await
            .unwrap();
        assert_eq!(progress().await, expected);
    }
}

/// A key result behind its pace escalates to the goal's people once per
/// period, with the numbers (issue 64).
#[tokio::test]
async fn a_key_result_behind_its_pace_escalates_once_per_period() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(PRIORITIES)));
    let goals = parse_goals(GOALS, Path::new("goals.yaml"), Some(&["cro"])).unwrap();
    let runtime = RoleRuntime::new(llm)
        .with_stores(stores.clone())
        .role(cro().escalate_to("user:ann"))
        .unwrap()
        .with_goals(goals);
    runtime.sync_goals().await.unwrap();
    let system = runtime.get_role("cro").unwrap().goals().unwrap();
    let goal = system.list().await.unwrap().remove(0);
    let start = goal.meta.created_at;
    let due = NaiveDate::from_ymd_opt(2026, 12, 31)
        .unwrap()
        .and_hms_opt(23, 59, 59)
        .unwrap()
        .and_utc();
    // A tenth of the time gone, nothing done: within the margin.
    let early = start + (due - start) / 10;
    assert!(system.check_pace(early, 0.1, 7).await.unwrap().is_empty());
    // Half the time gone, nothing done: both key results escalate.
    let half = start + (due - start) / 2;
    let behind = system.check_pace(half, 0.1, 7).await.unwrap();
    assert_eq!(behind.len(), 2);
    let first = &behind[0];
    assert_eq!(first.key_result_id, "pipeline-value");
    assert!((first.expected - 0.5).abs() < 0.01 && first.progress == 0.0);
    let p = &first.proposal;
    assert_eq!(p.outcome, openvibe_protocols::Outcome::Escalate);
    assert_eq!(p.assignee.as_deref(), Some("user:ann"));
    assert!(
        p.summary.contains("behind its pace")
            && p.summary.contains("0% of the way (500000 of 2000000 USD"),
        "{}",
        p.summary
    );
    // Again within the period: the same escalation, nothing new.
    let again = system
        .check_pace(half + chrono::Duration::hours(1), 0.1, 7)
        .await
        .unwrap();
    assert_eq!(again[0].proposal.id, p.id);
    let pending = stores
        .proposals
        .list(
            &openvibe_protocols::CallerContext::system(),
            &openvibe_protocols::ProposalQuery::new(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(pending.len(), 2);
    // A week later: the next period's escalation.
    let later = system
        .check_pace(half + chrono::Duration::days(7), 0.1, 7)
        .await
        .unwrap();
    assert_ne!(later[0].proposal.id, p.id);
}

/// The schedules reach the loop (issue 64): a prioritization firing sets
/// the day's priorities, each becomes an event the decision engine decides
/// (one names an action, the others leave it to a person); a reflection
/// firing becomes a reflection event.
#[tokio::test(start_paused = true)]
async fn scheduler_firings_become_events_of_the_loop() {
    use openvibe_primitives::FnTool;
    use openvibe_roles::{CognitiveLoop, InMemoryJournal, LoopJournal, Reflection};
    const WITH_ACTION: &str = r#"[{"title": "Call Acme", "reason": "largest open deal", "goal_id": "pipeline-q4",
      "action": {"action": "call_lead", "target": {"kind": "tool", "tool": "crm"}, "input": {"lead": "acme"}}},
     {"title": "Review the forecast", "reason": "", "goal_id": "pipeline-q4"}]"#;
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(WITH_ACTION)));
    let crm = FnTool::new("crm", "Call a lead.", |_: serde_json::Value| async move {
        Ok::<_, String>("called".to_owned())
    })
    .action("call_lead");
    let goals = parse_goals(GOALS, Path::new("goals.yaml"), Some(&["cro"])).unwrap();
    let start: DateTime<Utc> = "2026-11-25T00:00:00Z".parse().unwrap();
    let scheduler = Arc::new(InProcessScheduler::with_clock(Arc::new(
        TokioClock::starting_at(start),
    )));
    let runtime = RoleRuntime::new(llm.clone())
        .with_stores(stores.clone())
        .role(cro().domains(["revenue"]).action_tool(crm))
        .unwrap()
        .with_goals(goals)
        .with_scheduler(scheduler)
        .with_prioritization(Prioritization::daily())
        .with_reflection(Reflection::daily());
    runtime.sync_goals().await.unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let cognitive = CognitiveLoop::new(Arc::new(runtime), journal.clone());
    cognitive
        .serve(tokio::time::sleep(Duration::from_secs(86_400)), |_| {})
        .await
        .unwrap();
    // The model was told the actions it may name.
    let asked = &llm.requests()[0];
    assert!(asked.system.contains("\"action\""), "{}", asked.system);
    assert!(
        format!("{:?}", asked.messages).contains("`call_lead` (tool `crm`)"),
        "{:?}",
        asked.messages
    );
    let first = journal
        .load("cro", "priority-2026-11-25-1")
        .await
        .unwrap()
        .expect("the first priority is an event");
    assert!(first.is_done(), "{}", first.render());
    let decided = first.decision.as_ref().unwrap();
    assert_eq!(decided.event.kind, "priority");
    assert_eq!(
        decided.event.action.as_ref().map(|a| a.action.as_str()),
        Some("call_lead")
    );
    assert_eq!(
        decided.outcome,
        openvibe_protocols::Outcome::Propose,
        "{}",
        first.render()
    );
    let second = journal
        .load("cro", "priority-2026-11-25-2")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        second.decision.as_ref().unwrap().outcome,
        openvibe_protocols::Outcome::Escalate,
        "no action: a person chooses"
    );
    let reflection = journal
        .load("cro", "reflection@2026-11-25T03:00:00.000Z")
        .await
        .unwrap()
        .expect("the reflection schedule reaches the loop");
    assert!(
        reflection.is_reflection() && reflection.is_done(),
        "{}",
        reflection.render()
    );
}
