//! The cognitive loop (issue 40): each event goes perceive → decide → act
//! → observe → reflect → learn, journaled stage by stage; an event pushed
//! twice runs once; a full queue refuses with a typed error and records
//! nothing; a loop killed mid-stage resumes the event at that stage
//! without repeating the finished ones (an action it began is recorded
//! interrupted, never run twice); a reflection event reflects and learns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use openvibe_memory::in_memory_stores;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{Action, BeliefStatus, DecisionEvent, EpisodeQuery, LlmResponse, Stores};
use openvibe_roles::testing::{DiscountCro, discount};
use openvibe_roles::{
    ActOutcome, CognitiveLoop, Error, EventSource, InMemoryJournal, Learning, LoopConfig,
    LoopJournal, LoopTrace, RoleRuntime, Stage,
};
use serde_json::json;

/// The CRO (as in the proposals tests): acts on small discounts, proposes
/// large ones. `gate`, when given, holds every discount until notified.
async fn runtime(
    stores: &Stores,
    runs: Arc<AtomicUsize>,
    gate: Option<Arc<tokio::sync::Notify>>,
    reflection: &str,
) -> Arc<RoleRuntime> {
    let mut cro = DiscountCro::new(stores).counting(runs);
    if let Some(gate) = gate {
        cro = cro.gated(gate);
    }
    let role = cro.role().await.unwrap();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(reflection)));
    Arc::new(
        RoleRuntime::new(llm)
            .with_stores(stores.clone())
            .role(role)
            .unwrap(),
    )
}

/// Wait until event `id` of the CRO is done in `journal`.
async fn done(journal: &dyn LoopJournal, id: &str) -> LoopTrace {
    for _ in 0..500 {
        if let Some(trace) = journal.load("cro", id).await.unwrap()
            && trace.is_done()
        {
            return trace;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("event {id} did not finish");
}

fn stages(trace: &LoopTrace) -> Vec<Stage> {
    trace.stages.iter().map(|s| s.stage).collect()
}

#[tokio::test]
async fn events_run_every_stage_once_even_when_pushed_twice() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(&stores, runs.clone(), None, "[]").await;
    let journal: Arc<dyn LoopJournal> = Arc::new(InMemoryJournal::new());
    let cognitive = Arc::new(CognitiveLoop::new(runtime.clone(), journal.clone()));
    let first = cognitive
        .push("cro", discount("e-small", 500), EventSource::Code)
        .await
        .unwrap();
    assert!(!first.duplicate);
    let again = cognitive
        .push("cro", discount("e-small", 500), EventSource::Http)
        .await
        .unwrap();
    assert!(again.duplicate, "the same id is one event");
    cognitive
        .push("cro", discount("e-large", 50_000), EventSource::Mcp)
        .await
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move {
            cognitive
                .run(async {
                    let _ = stopped.await;
                })
                .await
        })
    };
    let small = done(journal.as_ref(), "e-small").await;
    let large = done(journal.as_ref(), "e-large").await;
    // Pushed again once it is done: still one event.
    assert!(
        cognitive
            .push("cro", discount("e-small", 500), EventSource::Code)
            .await
            .unwrap()
            .duplicate
    );
    stop.send(()).unwrap();
    let report = running.await.unwrap().unwrap();
    assert_eq!(report.events, 2);
    assert_eq!(report.failed, 0);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the discount ran once");

    assert_eq!(stages(&small), Stage::ALL.to_vec());
    assert!(small.failed.is_none());
    assert!(
        matches!(small.act, Some(ActOutcome::Ran { .. })),
        "{small:?}"
    );
    let decision = small.decision.clone().unwrap();
    assert!(
        small.stages[3]
            .outcome
            .contains(&format!("{}-run", decision.id))
    );
    assert!(small.stages[4].outcome.starts_with("not due"));
    let role = runtime.get_role("cro").unwrap();
    let run = role
        .agent_memory()
        .unwrap()
        .get_episode(&format!("{}-run", decision.id))
        .await
        .unwrap()
        .expect("observe recorded the run");
    assert_eq!(
        run.external_id.as_deref(),
        Some(format!("decision:{}", decision.id).as_str())
    );

    let Some(ActOutcome::Proposed { proposal_id }) = &large.act else {
        panic!("{large:?}");
    };
    assert!(
        stores
            .proposals
            .get(&role.proposal_context(), proposal_id)
            .await
            .unwrap()
            .is_some()
    );
    let text = small.render();
    assert!(text.contains("decide") && text.contains("done"), "{text}");
}

#[tokio::test]
async fn a_full_queue_refuses_with_a_typed_error_and_records_nothing() {
    let stores = in_memory_stores();
    let runtime = runtime(&stores, Arc::new(AtomicUsize::new(0)), None, "[]").await;
    let journal: Arc<dyn LoopJournal> = Arc::new(InMemoryJournal::new());
    let cognitive =
        CognitiveLoop::with_config(runtime, journal.clone(), LoopConfig::default().capacity(2));
    for id in ["e1", "e2"] {
        cognitive
            .push("cro", discount(id, 100), EventSource::Code)
            .await
            .unwrap();
    }
    let full = cognitive
        .push("cro", discount("e3", 100), EventSource::Code)
        .await;
    assert!(
        matches!(full, Err(Error::LoopFull { capacity: 2, .. })),
        "{full:?}"
    );
    assert!(cognitive.trace("cro", "e3").await.unwrap().is_none());
    assert!(matches!(
        cognitive
            .push(
                "cro",
                DecisionEvent::new("e4", "", "revenue"),
                EventSource::Code
            )
            .await,
        Err(Error::InvalidEvent { .. })
    ));
    assert!(matches!(
        cognitive
            .push("cmo", discount("e5", 100), EventSource::Code)
            .await,
        Err(Error::UnknownRole { .. })
    ));
    assert_eq!(journal.unfinished().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_loop_killed_mid_stage_resumes_there_without_repeating_finished_stages() {
    let stores = in_memory_stores();
    let journal: Arc<dyn LoopJournal> = Arc::new(InMemoryJournal::new());
    let held = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Notify::new());
    let first = runtime(&stores, held.clone(), Some(gate), "[]").await;
    let cognitive = Arc::new(CognitiveLoop::new(first, journal.clone()));
    cognitive
        .push("cro", discount("e-kill", 500), EventSource::Code)
        .await
        .unwrap();
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move { cognitive.run(std::future::pending()).await })
    };
    while held.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Killed mid-act: the process is gone, the journal stays.
    running.abort();
    let _ = running.await;
    let cut = cognitive.trace("cro", "e-kill").await.unwrap().unwrap();
    assert_eq!(stages(&cut), vec![Stage::Perceive, Stage::Decide]);
    assert_eq!(cut.next, Some(Stage::Act));

    // A new process over the same stores and journal.
    let runs = Arc::new(AtomicUsize::new(0));
    let second = runtime(&stores, runs.clone(), None, "[]").await;
    let cognitive = Arc::new(CognitiveLoop::new(second.clone(), journal.clone()));
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move { cognitive.run(std::future::pending()).await })
    };
    let trace = done(journal.as_ref(), "e-kill").await;
    running.abort();
    assert_eq!(stages(&trace), Stage::ALL.to_vec(), "each stage once");
    assert_eq!(
        trace.stages[1].at, cut.stages[1].at,
        "decide kept, not rerun"
    );
    // The killed process began the discount (journaled before the tool
    // ran): whether it ran is unknown, so it is recorded interrupted and
    // not run again (at most once).
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the action is not run twice"
    );
    match &trace.act {
        Some(ActOutcome::Failed { error, .. }) => {
            assert_eq!(error, openvibe_protocols::ACT_INTERRUPTED);
        }
        other => panic!("{other:?}"),
    }
    let decisions = second
        .get_role("cro")
        .unwrap()
        .agent_memory()
        .unwrap()
        .recall_episodes(EpisodeQuery::new().tags([openvibe_memory::DECISION_TAG]))
        .await
        .unwrap();
    assert_eq!(decisions.len(), 1, "decided once");
}

#[tokio::test]
async fn a_reflection_event_reflects_and_learns() {
    let stores = in_memory_stores();
    let reflection = json!([{"content": "annual plan discounts close deals", "confidence": 0.9, "domain": "revenue"}]).to_string();
    let runtime = runtime(&stores, Arc::new(AtomicUsize::new(0)), None, &reflection).await;
    let journal: Arc<dyn LoopJournal> = Arc::new(InMemoryJournal::new());
    let config = LoopConfig::default().learning(Learning::default().min_evidence(2));
    let cognitive = Arc::new(CognitiveLoop::with_config(
        runtime.clone(),
        journal.clone(),
        config,
    ));
    cognitive
        .push("cro", discount("e-1", 500), EventSource::Code)
        .await
        .unwrap();
    cognitive
        .push_reflection("cro", "reflect-1", EventSource::Trigger)
        .await
        .unwrap();
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move { cognitive.run(std::future::pending()).await })
    };
    let trace = done(journal.as_ref(), "reflect-1").await;
    running.abort();
    assert!(trace.failed.is_none(), "{}", trace.render());
    assert!(trace.stages[1].outcome.starts_with("skipped"));
    assert!(
        trace.stages[4].outcome.contains("1 strengthened"),
        "{}",
        trace.render()
    );
    assert!(
        trace.stages[5].outcome.starts_with("1 belief(s) proposed"),
        "{}",
        trace.render()
    );
    let role = runtime.get_role("cro").unwrap();
    let beliefs = role.agent_memory().unwrap().all_beliefs().await.unwrap();
    assert_eq!(beliefs.len(), 1);
    assert_eq!(beliefs[0].status, BeliefStatus::Proposed);
    assert_eq!(beliefs[0].insight_ids, vec!["i-discount"]);
}

/// A journal whose first save of each event stores it and then never
/// returns: a push cut off after the event was journaled.
struct StallingJournal {
    inner: InMemoryJournal,
    stalled: std::sync::Mutex<std::collections::HashSet<String>>,
}

#[async_trait::async_trait]
impl LoopJournal for StallingJournal {
    async fn save(&self, trace: &LoopTrace) -> Result<(), Error> {
        self.inner.save(trace).await?;
        let first = self.stalled.lock().unwrap().insert(trace.event.id.clone());
        if first && trace.event.id.starts_with("stall") {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
    async fn load(&self, role_id: &str, event_id: &str) -> Result<Option<LoopTrace>, Error> {
        self.inner.load(role_id, event_id).await
    }
    async fn unfinished(&self) -> Result<Vec<LoopTrace>, Error> {
        self.inner.unfinished().await
    }
}

#[tokio::test]
async fn a_push_cut_off_half_way_leaves_nothing_stuck() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(&stores, runs.clone(), None, "[]").await;
    let journal = Arc::new(StallingJournal {
        inner: InMemoryJournal::new(),
        stalled: std::sync::Mutex::new(std::collections::HashSet::new()),
    });
    let cognitive = Arc::new(CognitiveLoop::new(runtime, journal.clone()));
    let running = {
        let cognitive = cognitive.clone();
        tokio::spawn(async move { cognitive.run(std::future::pending()).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    // The client gives up while the event is being journaled.
    let cut = tokio::time::timeout(
        Duration::from_millis(50),
        cognitive.push("cro", discount("stall-1", 500), EventSource::Http),
    )
    .await;
    assert!(cut.is_err(), "the push was cut off");
    assert!(
        journal.load("cro", "stall-1").await.unwrap().is_some(),
        "journaled"
    );
    // Its retry is a duplicate, and the event runs, once.
    let retry = cognitive
        .push("cro", discount("stall-1", 500), EventSource::Http)
        .await
        .unwrap();
    assert!(retry.duplicate);
    let trace = done(journal.as_ref(), "stall-1").await;
    running.abort();
    assert_eq!(stages(&trace), Stage::ALL.to_vec());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_belief_tool_is_reserved_to_the_learn_step() {
    let stores = in_memory_stores();
    let runtime = runtime(&stores, Arc::new(AtomicUsize::new(0)), None, "[]").await;
    let role = runtime.get_role("cro").unwrap();
    let forged = DecisionEvent::new("e-forged", "followup", "revenue").action(Action::tool(
        "give_discount",
        openvibe_protocols::ADOPT_BELIEF_TOOL,
        json!({"belief_id": "bel_x"}),
    ));
    assert!(matches!(
        role.decide(&forged).await,
        Err(Error::InvalidEvent { .. })
    ));
    let proposal = openvibe_protocols::Proposal::new(
        "cro",
        "a harmless follow-up",
        Action::tool(
            "adopt_belief",
            openvibe_protocols::ADOPT_BELIEF_TOOL,
            json!({"belief_id": "bel_x"}),
        ),
    )
    .id("p-forged");
    assert!(matches!(
        stores
            .proposals
            .create(&role.proposal_context(), proposal)
            .await,
        Err(openvibe_protocols::StoreError::Inconsistent { .. })
    ));
}
