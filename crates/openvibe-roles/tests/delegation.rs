//! Delegation (issue 41): a role asks the owner of a domain through a
//! space; the owner's loop decides with its own engine and authority and
//! answers in the thread; the asker gets the output, or a typed refusal,
//! failure or timeout. In process, on the in-memory stores.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_memory::Decisions;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use openvibe_memory::{ClearanceProfile, MemoryGateway, in_memory_stores};
use openvibe_operators::Operator;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{DelegateNode, FnTool};
use openvibe_protocols::{
    Action, AnswerStatus, CallerContext, Classification, DecisionEvent, Insight, LlmResponse,
    MessageBody, MessageQuery, ProposalStatus, Stores, Verdict,
};
use openvibe_roles::{
    ActOutcome, AuthorityConfig, CognitiveLoop, Error, EventSource, InMemoryJournal, LoopJournal,
    Role, RoleRuntime,
};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, schemars::JsonSchema)]
struct Brief {
    customer: String,
}

/// The CRO (revenue) and the CMO (marketing, who writes case studies on
/// its own, publishes them with a person's approval, and never signs
/// contracts), in the space `team` with Ann.
async fn team(stores: &Stores, written: Arc<AtomicUsize>) -> Arc<RoleRuntime> {
    let gateway = MemoryGateway::new().with_stores(stores.clone());
    // The CRO may read marketing's internal records (the CMO's proposals
    // among them), as in the full example.
    let cro_clearance = ClearanceProfile::new("cro")
        .with_domain("revenue", Classification::Restricted)
        .with_domain("marketing", Classification::Internal);
    let cmo_clearance =
        ClearanceProfile::new("cmo").with_domain("marketing", Classification::Restricted);
    let cmo_memory = gateway.agent_memory("cmo", &cmo_clearance);
    cmo_memory
        .store_insight(
            Insight::new(
                "i-brand",
                "cmo",
                "a case study the customer approved writes well and converts",
                0.95,
            )
            .domain("marketing"),
        )
        .await
        .unwrap();
    let write = FnTool::new(
        "write_case_study",
        "Write a case study.",
        move |b: Brief| {
            let written = written.clone();
            async move {
                written.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("How {} grew with us", b.customer))
            }
        },
    );
    let publish = FnTool::new(
        "publish_case_study",
        "Publish a case study.",
        |b: Brief| async move { Ok::<_, String>(format!("published {}", b.customer)) },
    );
    let sign = FnTool::new("sign_contracts", "Sign.", |_b: Brief| async move {
        Ok::<_, String>("signed".to_owned())
    });
    let cmo = Role::new("cmo")
        .domains(["marketing"])
        .authority(
            AuthorityConfig::new()
                .autonomous(["write_case_study"])
                .needs_approval(["publish_case_study"])
                .forbidden(["sign_contracts"]),
        )
        .clearance(cmo_clearance)
        .with_agent_memory(cmo_memory)
        .action_tool(write)
        .action_tool(publish)
        .action_tool(sign);
    let deals = Operator::new("deals")
        .node(
            DelegateNode::new("case_study", "marketing", "write_case_study", "case_study")
                .input_key("deal")
                .timeout(Duration::from_secs(20)),
        )
        .sequence("close", ["case_study"])
        .unwrap();
    let cro = Role::new("cro")
        .domains(["revenue"])
        .operator(deals)
        .authority(AuthorityConfig::new().autonomous(["write_case_study"]))
        .clearance(cro_clearance.clone())
        .with_agent_memory(gateway.agent_memory("cro", &cro_clearance));
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text("[]")));
    Arc::new(
        RoleRuntime::new(llm)
            .with_stores(stores.clone())
            .role(cro)
            .unwrap()
            .role(cmo)
            .unwrap()
            .with_space("team", ["user:ann"]),
    )
}

/// Join the space, then run the loop of `runtime` in the background until
/// the returned sender is dropped or sent to.
async fn run_loop(
    runtime: &Arc<RoleRuntime>,
) -> (Arc<CognitiveLoop>, tokio::sync::oneshot::Sender<()>) {
    runtime.join_space().await.unwrap();
    let journal: Arc<dyn LoopJournal> = Arc::new(InMemoryJournal::new());
    let looping = Arc::new(CognitiveLoop::new(runtime.clone(), journal));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let l = looping.clone();
    tokio::spawn(async move {
        l.run(async move {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (looping, stop)
}

/// The proposal the interim `proposed` answer to `request` names, once the
/// owner's loop posted it.
async fn proposed(stores: &Stores, reader: &CallerContext, request: &str) -> String {
    for _ in 0..400 {
        let found = stores
            .spaces
            .messages(reader, "team", &MessageQuery::after(0).thread(request))
            .await
            .unwrap();
        if let Some(id) = found.iter().find_map(|m| match &m.body {
            MessageBody::Answer(a) if a.status == AnswerStatus::Proposed => a.proposal.clone(),
            _ => None,
        }) {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no interim answer naming the proposal of {request}");
}

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn the_owner_decides_acts_and_answers_once() {
    let stores = in_memory_stores();
    let written = Arc::new(AtomicUsize::new(0));
    let runtime = team(&stores, written.clone()).await;
    let (_looping, _stop) = run_loop(&runtime).await;
    let cro = runtime.get_role("cro").unwrap();
    let output = cro
        .ask(
            "req-1",
            "marketing",
            "write_case_study",
            json!({"customer": "Acme", "summary": "Acme closed"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(output, json!("How Acme grew with us"));
    // Asking again (a retried step) gets the same answer; nothing runs twice.
    let again = cro
        .ask(
            "req-1",
            "marketing",
            "write_case_study",
            json!({"customer": "Acme", "summary": "Acme closed"}),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(again, output);
    assert_eq!(written.load(Ordering::SeqCst), 1);
    // The thread: the request, routed to the CMO, and one answer to the CRO.
    let ctx = cro.proposal_context();
    let thread = stores
        .spaces
        .messages(&ctx, "team", &MessageQuery::after(0).thread("req-1"))
        .await
        .unwrap();
    assert_eq!(thread.len(), 2, "{thread:#?}");
    assert_eq!(thread[0].to, ["agent:cmo"]);
    assert_eq!(thread[1].meta.owner, "agent:cmo");
    assert_eq!(thread[1].to, ["agent:cro"]);
    let MessageBody::Answer(a) = &thread[1].body else {
        panic!("{thread:#?}");
    };
    assert_eq!(a.status, AnswerStatus::Done);
}

#[tokio::test]
async fn refusals_come_back_with_the_owners_reason() {
    let stores = in_memory_stores();
    let runtime = team(&stores, Arc::default()).await;
    let (_looping, _stop) = run_loop(&runtime).await;
    let cro = runtime.get_role("cro").unwrap();
    let forbidden = cro
        .ask(
            "req-sign",
            "marketing",
            "sign_contracts",
            json!({"customer": "Acme"}),
            WAIT,
        )
        .await;
    match forbidden {
        Err(Error::DelegationRefused { reason, task, .. }) => {
            assert_eq!(task, "sign_contracts");
            assert!(reason.contains("forbidden"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A task it has no workflow or tool for: it escalates to a person (the
    // interim answer says so); the asker waits for the final one.
    let unknown = cro
        .ask(
            "req-coffee",
            "marketing",
            "make_coffee",
            json!({}),
            Duration::from_millis(500),
        )
        .await;
    assert!(
        matches!(unknown, Err(Error::DelegationTimeout { .. })),
        "{unknown:?}"
    );
    let thread = stores
        .spaces
        .messages(
            &cro.proposal_context(),
            "team",
            &MessageQuery::after(0).thread("req-coffee"),
        )
        .await
        .unwrap();
    let interim = thread.iter().find_map(|m| match &m.body {
        MessageBody::Answer(a) => Some(a.clone()),
        _ => None,
    });
    let interim = interim.expect("an interim answer");
    assert_eq!(interim.status, AnswerStatus::Escalated);
    assert!(interim.proposal.is_some());
    assert!(
        interim.reason.as_deref().unwrap_or("").contains("person"),
        "{interim:?}"
    );
    // A failing action is a failure, with its error.
    let failing = cro
        .ask(
            "req-bad",
            "marketing",
            "write_case_study",
            json!({"client": "no customer field"}),
            WAIT,
        )
        .await;
    assert!(
        matches!(failing, Err(Error::DelegationFailed { .. })),
        "{failing:?}"
    );
}

#[tokio::test]
async fn a_proposal_answers_when_a_person_approved_and_it_ran() {
    let stores = in_memory_stores();
    let runtime = team(&stores, Arc::default()).await;
    let (_looping, _stop) = run_loop(&runtime).await;
    let cro = runtime.get_role("cro").unwrap().clone();
    let asking = tokio::spawn(async move {
        cro.ask(
            "req-pub",
            "marketing",
            "publish_case_study",
            json!({"customer": "Acme"}),
            WAIT,
        )
        .await
    });
    // The CMO proposes it: the interim answer names the proposal.
    let ann =
        CallerContext::user("ann").with_clearance(openvibe_protocols::Clearance::unrestricted());
    let proposal = proposed(&stores, &ann, "req-pub").await;
    let decided = stores
        .decide_proposal(&ann, &proposal, &Verdict::approve("go ahead"))
        .await
        .unwrap();
    assert_eq!(decided.status, ProposalStatus::Approved);
    runtime.resume_proposals().await.unwrap();
    let output = asking.await.unwrap().unwrap();
    assert_eq!(output, json!("published Acme"));
}

#[tokio::test]
async fn nobody_owns_it_so_it_escalates_and_the_asker_times_out_typed() {
    let stores = in_memory_stores();
    let runtime = team(&stores, Arc::default()).await;
    runtime.join_space().await.unwrap();
    let cro = runtime.get_role("cro").unwrap();
    let d = cro
        .delegate("finance", "approve_budget", json!({"amount": 5000}))
        .await
        .unwrap();
    assert!(d.request.escalated);
    assert_eq!(d.request.to, ["user:ann"]);
    let waited = cro.await_answer(&d, Duration::from_millis(300)).await;
    assert!(
        matches!(waited, Err(Error::DelegationTimeout { .. })),
        "{waited:?}"
    );
    // A person answers in the thread: the asker gets it.
    let ann =
        CallerContext::user("ann").with_clearance(openvibe_protocols::Clearance::unrestricted());
    let answer = openvibe_protocols::SpaceMessage::answer(
        &d.request,
        openvibe_protocols::DelegationAnswer {
            request: d.id().to_owned(),
            status: AnswerStatus::Done,
            output: json!({"approved": 5000}),
            reason: Some("fine".into()),
            proposal: None,
        },
    );
    stores.spaces.post(&ann, "team", answer).await.unwrap();
    let got = cro.await_answer(&d, WAIT).await.unwrap();
    assert_eq!(got.output, json!({"approved": 5000}));
    // Without a space, delegating is a typed error.
    let alone = Role::new("solo");
    assert!(matches!(
        alone.delegate("marketing", "x", json!({})).await,
        Err(Error::NoSpace { .. })
    ));
}

#[tokio::test]
async fn a_delegated_action_runs_in_the_askers_loop() {
    let stores = in_memory_stores();
    let written = Arc::new(AtomicUsize::new(0));
    let runtime = team(&stores, written.clone()).await;
    let (looping, _stop) = run_loop(&runtime).await;
    // The CRO's own event asks for a case study: its action is delegated.
    let cro_memory = runtime
        .get_role("cro")
        .unwrap()
        .agent_memory()
        .unwrap()
        .clone();
    cro_memory
        .store_insight(
            Insight::new("i-deal", "cro", "won deals deserve a case study", 0.9).domain("revenue"),
        )
        .await
        .unwrap();
    let event = DecisionEvent::new("deal-won-acme", "deal.won", "revenue")
        .summary("won deals deserve a case study: Acme")
        .action(Action::delegate(
            "write_case_study",
            "marketing",
            json!({"customer": "Acme"}),
        ));
    let trace = looping
        .run_event("cro", event, EventSource::Code)
        .await
        .unwrap();
    match &trace.act {
        Some(ActOutcome::Ran { output, .. }) => assert_eq!(output, &json!("How Acme grew with us")),
        other => panic!("{other:?} ({trace:#?})"),
    }
    assert_eq!(written.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_workflow_node_delegates_once_per_run() {
    let stores = in_memory_stores();
    let written = Arc::new(AtomicUsize::new(0));
    let runtime = team(&stores, written.clone()).await;
    let (_looping, _stop) = run_loop(&runtime).await;
    let start = || {
        openvibe_protocols::State::from_value(
            json!({"run_id": "close-acme", "deal": {"customer": "Acme"}}),
        )
        .unwrap()
    };
    let done = runtime
        .activate("cro", "deals", "close", start())
        .await
        .unwrap();
    assert_eq!(
        done.get("case_study"),
        Some(&json!("How Acme grew with us"))
    );
    // The same run again (a resumed run) asks once.
    let again = runtime
        .activate("cro", "deals", "close", start())
        .await
        .unwrap();
    assert_eq!(again.get("case_study"), done.get("case_study"));
    assert_eq!(written.load(Ordering::SeqCst), 1);
    // A refused delegation fails the node with the typed error inside.
    let refused = openvibe_protocols::State::from_value(
        json!({"run_id": "close-bad", "deal": {"client": "no customer"}}),
    )
    .unwrap();
    let failed = runtime.activate("cro", "deals", "close", refused).await;
    assert!(
        format!("{failed:?}").contains("DelegationFailed"),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_rejected_proposal_ends_the_wait_with_the_persons_reason() {
    let stores = in_memory_stores();
    let runtime = team(&stores, Arc::default()).await;
    let (_looping, _stop) = run_loop(&runtime).await;
    let cro = runtime.get_role("cro").unwrap().clone();
    let asking = tokio::spawn(async move {
        cro.ask(
            "req-reject",
            "marketing",
            "publish_case_study",
            json!({"customer": "Acme"}),
            WAIT,
        )
        .await
    });
    let ann =
        CallerContext::user("ann").with_clearance(openvibe_protocols::Clearance::unrestricted());
    let proposal = proposed(&stores, &ann, "req-reject").await;
    stores
        .decide_proposal(
            &ann,
            &proposal,
            &Verdict::reject("not before legal signs off"),
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    match asking.await.unwrap() {
        Err(Error::DelegationRefused { reason, .. }) => {
            assert!(reason.contains("not before legal signs off"), "{reason}");
            assert!(reason.contains("user:ann"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the rejection ended the wait"
    );
}

/// Initiatives (issue 64, part 1): the CRO's loop takes its goal's open
/// initiatives; one in marketing is delegated to the CMO through the space
/// and the CMO's answer marks it done, with what it said; one without an
/// action waits on a person (working, naming the proposal); a person's
/// initiative is left to them; pushing again decides nothing twice.
#[tokio::test]
async fn initiatives_are_worked_and_delegated_through_the_space() {
    use openvibe_protocols::{Goal, Initiative, InitiativeStatus, KeyResult, Objective};
    let stores = in_memory_stores();
    let written = Arc::new(AtomicUsize::new(0));
    let runtime = team(&stores, written.clone()).await;
    let (looping, _stop) = run_loop(&runtime).await;
    let cro = runtime.get_role("cro").unwrap();
    let ctx = cro.proposal_context();
    cro.agent_memory()
        .unwrap()
        .store_insight(
            Insight::new(
                "i-studies",
                "cro",
                "case studies of won deals move the pipeline",
                0.9,
            )
            .domain("revenue"),
        )
        .await
        .unwrap();
    let objective = Objective {
        id: "pipeline".into(),
        owner: "cro".into(),
        title: "Pipeline $2M".into(),
        due: chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
        key_results: vec![KeyResult {
            id: "value".into(),
            metric: "pipeline_usd".into(),
            baseline: 0.0,
            target: 2_000_000.0,
            unit: "USD".into(),
            due: None,
        }],
    };
    let goal = stores.goals.put(&ctx, Goal::new(objective)).await.unwrap();
    let planned = vec![
        Initiative::new("Case studies of won deals", &["value"])
            .domain("marketing")
            .owner("cmo")
            .action(Action::tool(
                "write_case_study",
                "write_case_study",
                json!({"customer": "Acme"}),
            )),
        Initiative::new("Re-engage stalled deals", &["value"]).owner("cro"),
        Initiative::new("Board update", &["value"]).owner("user:ann"),
    ];
    stores
        .goals
        .decompose(&ctx, "pipeline", &goal.fingerprint, planned)
        .await
        .unwrap();
    let accepted = looping.push_initiatives("cro").await.unwrap();
    assert_eq!(
        accepted.len(),
        2,
        "the person's initiative is theirs: {accepted:#?}"
    );
    let mut goal = None;
    for _ in 0..400 {
        let g = stores.goals.get(&ctx, "pipeline").await.unwrap().unwrap();
        if g.initiatives[..2]
            .iter()
            .all(|i| matches!(i.status, InitiativeStatus::Done | InitiativeStatus::Working))
        {
            goal = Some(g);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let goal = goal.expect("both initiatives worked");
    let delegated = &goal.initiatives[0];
    assert_eq!(delegated.status, InitiativeStatus::Done, "{delegated:#?}");
    let note = delegated.note.as_deref().unwrap();
    assert!(note.contains("How Acme grew with us"), "{note}");
    assert_eq!(written.load(Ordering::SeqCst), 1);
    let own = &goal.initiatives[1];
    assert_eq!(own.status, InitiativeStatus::Working, "{own:#?}");
    assert!(
        own.note.as_deref().unwrap().contains("waits for a person"),
        "{own:#?}"
    );
    assert_eq!(goal.initiatives[2].status, InitiativeStatus::Open);
    // The request went to the CMO in the space, as the marketing owner.
    let requests = stores
        .spaces
        .messages(&ctx, "team", &MessageQuery::after(0))
        .await
        .unwrap();
    let to_cmo = requests
        .iter()
        .filter(|m| matches!(m.body, MessageBody::Request(_)) && m.to == ["agent:cmo"])
        .count();
    assert_eq!(to_cmo, 1, "{requests:#?}");
    // Pushing again: nothing open is left but the person's; nothing runs twice.
    assert!(looping.push_initiatives("cro").await.unwrap().is_empty());
    assert_eq!(written.load(Ordering::SeqCst), 1);
}
