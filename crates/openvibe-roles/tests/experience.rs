//! Learning from what happened (issue 64): a run whose result was a setback
//! weighs against the evidence it was decided on in the next decision; a
//! person's rejection becomes an episode and stands until a person approves
//! that action again; the loop reflects and learns right after a setback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use openvibe_memory::{ClearanceProfile, Decisions, in_memory_stores};
use openvibe_primitives::FnTool;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    Action, Belief, CallerContext, Classification, Clearance, DecisionEvent, Episode, EventSource,
    EvidenceKind, LlmResponse, Outcome, ProposalStatus, Stage, Stores, Verdict,
};
use openvibe_roles::{
    AuthorityConfig, CognitiveLoop, InMemoryJournal, LoopConfig, Role, RoleRuntime,
};
use serde_json::json;

fn ann() -> CallerContext {
    CallerContext::user("ann").with_clearance(Clearance::unrestricted())
}

/// The CRO, who may follow leads up on its own; the CRM answers a setback
/// (`{"status": "stalled"}`) for a note that says so.
fn runtime(stores: &Stores, answer: &str) -> RoleRuntime {
    let crm = FnTool::new(
        "crm",
        "Schedule a follow-up.",
        |input: serde_json::Value| async move {
            let note = input["note"].as_str().unwrap_or_default().to_owned();
            Ok::<_, String>(if note == "stalled" {
                json!({"status": "stalled", "result": "stalled in procurement"}).to_string()
            } else if note == "lost" {
                json!({"result": "Acme went with a competitor",
                       "metric": {"name": "pipeline_usd", "value": -40000, "note": "Acme lost"}})
                .to_string()
            } else {
                format!("follow-up booked: {note}")
            })
        },
    );
    let role = Role::new("cro")
        .soul("You are the CRO.")
        .domains(["revenue"])
        .authority(AuthorityConfig::new().autonomous(["follow_up"]))
        .action_tool(crm)
        .clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        );
    RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text(answer))))
        .with_stores(stores.clone())
        .role(role)
        .unwrap()
}

fn lead(id: &str, note: &str) -> DecisionEvent {
    DecisionEvent::new(id, "lead.arrived", "revenue")
        .summary(format!("Webinar lead {id} from logistics"))
        .action(Action::tool("follow_up", "crm", json!({"note": note})))
}

async fn believe(stores: &Stores, role: &Role, id: &str, statement: &str) {
    role.agent_memory()
        .unwrap()
        .propose_belief(Belief::new("cro", statement, 0.9).id(id).domain("revenue"))
        .await
        .unwrap();
    stores
        .beliefs
        .decide(&ann(), id, &Verdict::approve("seen it"))
        .await
        .unwrap();
}

/// A runtime whose model answers `answer`, the CRO holding one approved
/// belief about webinar leads.
async fn believing(answer: &str) -> (Stores, RoleRuntime) {
    let stores = in_memory_stores();
    let runtime = runtime(&stores, answer);
    let role = runtime.get_role("cro").unwrap();
    believe(
        &stores,
        role,
        "b-webinar",
        "Webinar leads from logistics close fast",
    )
    .await;
    (stores, runtime)
}

#[tokio::test]
async fn a_setback_weighs_against_what_it_was_decided_on_relevant_or_not() {
    let (_stores, runtime) = believing("{}").await;
    let role = runtime.get_role("cro").unwrap();
    let before = role.decide(&lead("e1", "ok")).await.unwrap();
    assert_eq!(before.outcome, Outcome::Act, "{:?}", before.explain());
    // A setback decided on the belief, in words unlike any lead.
    role.agent_memory()
        .unwrap()
        .record_episode(Episode {
            id: "run-past".into(),
            action: "qqq".into(),
            input_summary: "zzz".into(),
            output_summary: "qqq".into(),
            domain: "revenue".into(),
            outcome: json!({"status": "stalled", "decided_on": ["b-webinar"]}),
            ..Episode::default()
        })
        .await
        .unwrap();
    let after = role.decide(&lead("e2", "ok")).await.unwrap();
    let against = after
        .confidence
        .evidence
        .iter()
        .find(|e| e.id == "run-past")
        .unwrap_or_else(|| panic!("{:?}", after.confidence.evidence));
    assert_eq!((against.kind, against.value), (EvidenceKind::Episode, 0.0));
    assert!(
        against.why.contains("decided on `b-webinar`"),
        "{}",
        against.why
    );
    assert!(
        (after.confidence.score - before.confidence.score * 0.6).abs() < 1e-9,
        "{} then {}",
        before.confidence.score,
        after.confidence.score
    );
}

/// A run is held against what carried its decision, not against every
/// record it cited: `decided_on` names the beliefs and insights cited at a
/// relevance of at least `BASIS_RELEVANCE`.
#[tokio::test]
async fn a_run_is_held_only_against_what_carried_its_decision() {
    let (stores, runtime) = believing("{}").await;
    let role = runtime.get_role("cro").unwrap();
    believe(
        &stores,
        role,
        "b-invoices",
        "Invoices of customers in logistics are paid within sixty days of the quarter's close",
    )
    .await;
    let handled = role.handle(&lead("e1", "stalled")).await.unwrap();
    let cited: Vec<_> = handled
        .decision
        .confidence
        .evidence
        .iter()
        .filter(|e| e.kind != EvidenceKind::Episode)
        .collect();
    assert!(
        cited
            .iter()
            .any(|e| e.relevance < openvibe_roles::BASIS_RELEVANCE),
        "a record cited in passing: {cited:?}"
    );
    let run = role
        .agent_memory()
        .unwrap()
        .get_episode(&openvibe_roles::run_episode_id(&handled.decision.id))
        .await
        .unwrap()
        .unwrap();
    let decided_on: Vec<&str> = run.outcome["decided_on"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    for e in &cited {
        assert_eq!(
            decided_on.contains(&e.id.as_str()),
            e.relevance >= openvibe_roles::BASIS_RELEVANCE,
            "{} at {}: {decided_on:?}",
            e.id,
            e.relevance
        );
    }
    assert!(decided_on.contains(&"b-webinar"));
}

#[tokio::test]
async fn setbacks_make_like_decisions_propose_before_any_belief_changes() {
    let (stores, runtime) = believing("{}").await;
    let role = runtime.get_role("cro").unwrap();
    for (id, note) in [("e1", "stalled"), ("e2", "stalled")] {
        let handled = role.handle(&lead(id, note)).await.unwrap();
        assert_eq!(handled.decision.outcome, Outcome::Act, "{id}");
    }
    let run = role
        .agent_memory()
        .unwrap()
        .get_episode(&format!("{}-run", openvibe_roles::decision_id("cro", "e1")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.outcome["status"], "stalled");
    assert!(run.tags.iter().any(|t| t == "setback"), "{:?}", run.tags);
    assert_eq!(run.output_summary, "stalled: stalled in procurement");
    let third = role.decide(&lead("e3", "ok")).await.unwrap();
    assert_eq!(third.outcome, Outcome::Propose, "{:?}", third.explain());
    let belief = stores
        .beliefs
        .get(&ann(), "b-webinar")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        belief.status,
        openvibe_protocols::BeliefStatus::Active,
        "unchanged"
    );
}

#[tokio::test]
async fn a_rejection_stands_until_a_person_approves_that_action_again() {
    let stores = in_memory_stores();
    let runtime = runtime(&stores, "{}");
    let role = runtime.get_role("cro").unwrap();
    // No evidence yet: low confidence, proposed; a person rejects it.
    let first = role.handle(&lead("e1", "ok")).await.unwrap();
    let proposal = first.proposal.expect("proposed");
    stores
        .decide_proposal(
            &ann(),
            &proposal.id,
            &Verdict::reject("not before the price review"),
        )
        .await
        .unwrap();
    believe(
        &stores,
        role,
        "b-webinar",
        "Webinar leads from logistics close fast",
    )
    .await;
    // A like event: it would act, but the rejection stands.
    let second = role.handle(&lead("e2", "ok")).await.unwrap();
    assert_eq!(
        second.decision.outcome,
        Outcome::Propose,
        "{:?}",
        second.decision.explain()
    );
    assert!(
        second
            .decision
            .reason
            .contains("not before the price review")
            && second.decision.reason.contains(&proposal.id),
        "{}",
        second.decision.reason
    );
    let rejection = openvibe_roles::rejection_episode_id(&proposal.id);
    assert!(
        second
            .decision
            .confidence
            .evidence
            .iter()
            .any(|e| e.id == rejection),
        "it cites the rejection: {:?}",
        second.decision.confidence.evidence
    );
    let episode = role
        .agent_memory()
        .unwrap()
        .get_episode(&rejection)
        .await
        .unwrap()
        .unwrap();
    assert!(
        episode
            .output_summary
            .contains("not before the price review")
    );
    // A person approves that action again: the next like event acts.
    let again = second.proposal.expect("proposed again");
    stores
        .decide_proposal(&ann(), &again.id, &Verdict::approve("the review is done"))
        .await
        .unwrap();
    let third = role.decide(&lead("e3", "ok")).await.unwrap();
    assert_eq!(third.outcome, Outcome::Act, "{:?}", third.explain());
    assert_eq!(
        stores
            .proposals
            .get(&ann(), &proposal.id)
            .await
            .unwrap()
            .unwrap()
            .status,
        ProposalStatus::Rejected
    );
}

/// A loop over `runtime`'s roles, journaled in memory.
fn looping(runtime: &Arc<RoleRuntime>) -> CognitiveLoop {
    CognitiveLoop::with_config(
        runtime.clone(),
        Arc::new(InMemoryJournal::new()),
        LoopConfig::default(),
    )
}

/// What `stage` of `trace` said.
fn outcome(stage: Stage, trace: &openvibe_protocols::LoopTrace) -> String {
    trace
        .stages
        .iter()
        .find(|s| s.stage == stage)
        .map(|s| s.outcome.clone())
        .unwrap()
}

#[tokio::test]
async fn the_loop_reflects_and_learns_right_after_a_setback() {
    let reflection = json!([{"content": "Logistics webinar leads stall in procurement", "confidence": 0.9, "domain": "revenue"}]);
    let (_stores, runtime) = believing(&reflection.to_string()).await;
    let runtime = Arc::new(runtime);
    let cognitive = looping(&runtime);
    let calm = cognitive
        .run_event("cro", lead("e1", "ok"), EventSource::Code)
        .await
        .unwrap();
    assert!(
        outcome(Stage::Reflect, &calm).starts_with("not due"),
        "{}",
        calm.render()
    );
    let stalled = cognitive
        .run_event("cro", lead("e2", "stalled"), EventSource::Code)
        .await
        .unwrap();
    assert!(
        outcome(Stage::Reflect, &stalled).starts_with(openvibe_protocols::AFTER_EXPERIENCE),
        "{}",
        stalled.render()
    );
    assert!(
        !outcome(Stage::Learn, &stalled).starts_with("not due"),
        "{}",
        stalled.render()
    );
    // The lesson was taken: the next calm event does not reflect again.
    let next = cognitive
        .run_event("cro", lead("e3", "ok"), EventSource::Code)
        .await
        .unwrap();
    assert!(
        outcome(Stage::Reflect, &next).starts_with("not due"),
        "{}",
        next.render()
    );
}

/// A run whose result moves a key result away from its target (a deal
/// lost: pipeline down) is a lesson too: the loop reflects right after it,
/// and an episode says what moved, a setback later decisions weigh.
#[tokio::test]
async fn a_metric_that_moved_against_its_key_result_is_learned_from() {
    use openvibe_protocols::{Goal, KeyResult, Objective};
    let reflection = json!([{"content": "Logistics deals are lost to cheaper competitors", "confidence": 0.9, "domain": "revenue"}]);
    let (stores, runtime) = believing(&reflection.to_string()).await;
    let runtime = Arc::new(runtime);
    let role = runtime.get_role("cro").unwrap();
    stores
        .goals
        .put(
            &role.proposal_context(),
            Goal::new(Objective {
                id: "pipeline".into(),
                owner: "cro".into(),
                title: "Pipeline $2M".into(),
                due: chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
                key_results: vec![KeyResult {
                    id: "value".into(),
                    metric: "pipeline_usd".into(),
                    baseline: 100_000.0,
                    target: 2_000_000.0,
                    unit: "USD".into(),
                    due: None,
                }],
            }),
        )
        .await
        .unwrap();
    let cognitive = looping(&runtime);
    let grown = cognitive
        .run_event("cro", lead("e1", "ok"), EventSource::Code)
        .await
        .unwrap();
    assert!(
        outcome(Stage::Reflect, &grown).starts_with("not due"),
        "{}",
        grown.render()
    );
    let lost = cognitive
        .run_event("cro", lead("e2", "lost"), EventSource::Code)
        .await
        .unwrap();
    assert!(
        outcome(Stage::Reflect, &lost).starts_with(openvibe_protocols::AFTER_EXPERIENCE),
        "{}",
        lost.render()
    );
    let progress = stores
        .goals
        .progress(&role.proposal_context(), "pipeline")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        progress.key_results[0].current, 60_000.0,
        "the report counted once"
    );
    let episodes = role
        .agent_memory()
        .unwrap()
        .recall_episodes(openvibe_protocols::EpisodeQuery::new().limit(20))
        .await
        .unwrap();
    let moved: Vec<&Episode> = episodes
        .iter()
        .filter(|e| e.id.ends_with("-against"))
        .collect();
    assert_eq!(moved.len(), 1, "{episodes:#?}");
    assert!(openvibe_memory::went_against(moved[0]));
    assert!(
        moved[0]
            .output_summary
            .contains("pipeline_usd moved -40000 against key result `value` of `pipeline`"),
        "{}",
        moved[0].output_summary
    );
}
