//! Proposals in the role runtime: a `Propose` decision files one, a person
//! approves it, and its action runs exactly once whoever races; rejected
//! and expired proposals never run; a runtime that stopped between approval
//! and execution runs the action on restart; a gated tool call files a
//! proposal instead of asking a callback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openvibe_memory::in_memory_stores;
use openvibe_operators::Operator;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{AgentNode, FnTool};
use openvibe_protocols::{
    Action, CallerContext, Clearance, ContentBlock, DecisionEvent, EpisodeQuery, LlmResponse,
    Outcome, Principal, ProposalStatus, State, Stores, Verdict,
};
use openvibe_roles::testing::{DiscountCro, discount};
use openvibe_roles::{AuthorityConfig, INTERRUPTED, Role, RoleRuntime};
use openvibe_schedule::InProcessScheduler;
use serde_json::json;

/// The discount CRO over `stores` (`openvibe_roles::testing`); `runs`
/// counts discounts applied.
async fn cro(stores: &Stores, runs: Arc<AtomicUsize>) -> Role {
    DiscountCro::new(stores)
        .counting(runs)
        .role()
        .await
        .unwrap()
}

/// The proposal `role` files for a discount of `amount` (event `id`).
async fn proposed(role: &Role, id: &str, amount: u64) -> openvibe_protocols::Proposal {
    role.handle(&discount(id, amount))
        .await
        .unwrap()
        .proposal
        .expect("a proposal")
}

fn person(role: &Role, name: &str) -> CallerContext {
    CallerContext::new(role.proposal_context().tenant_id(), Principal::user(name))
        .with_clearance(Clearance::unrestricted())
}

#[tokio::test]
async fn a_large_discount_is_proposed_approved_and_runs_once_however_many_race() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(&stores, runs.clone()).await;

    // Small and confident: it acts, no proposal.
    let small = role.handle(&discount("e-small", 500)).await.unwrap();
    assert_eq!(small.decision.outcome, Outcome::Act);
    assert!(small.proposal.is_none());
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Large: proposed, nothing runs yet.
    let large = role.handle(&discount("e-large", 50_000)).await.unwrap();
    assert_eq!(large.decision.outcome, Outcome::Propose);
    let proposal = large.proposal.expect("a proposal");
    assert_eq!(proposal.status, ProposalStatus::Pending);
    assert_eq!(proposal.id, large.decision.id);
    assert_eq!(proposal.meta.owner, "agent:cro");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Running it before a person approved it: a conflict, nothing runs.
    let early = role.run_approved(&proposal.id).await.unwrap_err();
    assert!(early.is_conflict(), "{early}");
    // The role may not approve its own proposal.
    let own = stores
        .proposals
        .decide(
            &role.proposal_context(),
            &proposal.id,
            &Verdict::approve("me"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(own, openvibe_protocols::StoreError::Unauthorized { .. }),
        "{own:?}"
    );

    // Eight people approve at once: one wins.
    let mut approvals = Vec::new();
    for i in 0..8 {
        let (store, ctx, id) = (
            stores.proposals.clone(),
            person(&role, &format!("p{i}")),
            proposal.id.clone(),
        );
        approvals.push(tokio::spawn(async move {
            store.decide(&ctx, &id, &Verdict::approve("fine")).await
        }));
    }
    let mut won = 0;
    for a in approvals {
        match a.await.unwrap() {
            Ok(p) => {
                won += 1;
                assert_eq!(p.status, ProposalStatus::Approved);
            }
            Err(openvibe_protocols::StoreError::Conflict { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(won, 1, "one approval wins");

    // Eight runtimes run it at once: it runs once.
    let mut runners = Vec::new();
    for _ in 0..8 {
        let (role, id) = (role.clone(), proposal.id.clone());
        runners.push(tokio::spawn(async move { role.run_approved(&id).await }));
    }
    let mut executed = 0;
    for r in runners {
        match r.await.unwrap() {
            Ok(p) => {
                executed += 1;
                assert_eq!(p.status, ProposalStatus::Executed);
                assert_eq!(p.result, Some(json!("10% applied")));
            }
            Err(e) => assert!(e.is_conflict(), "{e}"),
        }
    }
    assert_eq!(executed, 1);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the small one and the approved one"
    );
    // The run is in the role's track record.
    let episodes = role
        .agent_memory()
        .unwrap()
        .recall_episodes(EpisodeQuery::new())
        .await
        .unwrap();
    assert!(
        episodes
            .iter()
            .any(|e| e.external_id.as_deref() == Some(&format!("decision:{}", proposal.id))),
        "{episodes:?}"
    );
    // Every transition is audited.
    let entries = stores
        .audit
        .query(
            &CallerContext::system().with_tenant(role.proposal_context().tenant_id()),
            &openvibe_protocols::AuditQuery::default(),
        )
        .await
        .unwrap();
    let transitions: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == "proposal" && e.record_id.as_deref() == Some(&proposal.id))
        .filter_map(|e| {
            e.filters
                .as_ref()?
                .get("transition")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    for t in ["approve", "claim", "executed"] {
        assert!(transitions.iter().any(|x| x == t), "{t} in {transitions:?}");
    }
}

#[tokio::test]
async fn rejected_and_expired_proposals_never_run() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(&stores, runs.clone()).await;
    let rejected = proposed(&role, "e-1", 60_000).await;
    stores
        .proposals
        .decide(
            &person(&role, "ann"),
            &rejected.id,
            &Verdict::reject("too much"),
        )
        .await
        .unwrap();
    assert!(
        role.run_approved(&rejected.id)
            .await
            .unwrap_err()
            .is_conflict()
    );

    let decision = role.decide(&discount("e-2", 70_000)).await.unwrap();
    let expiring = openvibe_protocols::Proposal::from_decision(&decision)
        .deadline(chrono::Utc::now() + chrono::Duration::milliseconds(50));
    let expiring = stores
        .proposals
        .create(&role.proposal_context(), expiring)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
    let late = stores
        .proposals
        .decide(&person(&role, "ann"), &expiring.id, &Verdict::approve("ok"))
        .await
        .unwrap_err();
    assert!(
        matches!(late, openvibe_protocols::StoreError::Conflict { .. }),
        "{late:?}"
    );
    assert!(
        role.run_approved(&expiring.id)
            .await
            .unwrap_err()
            .is_conflict()
    );
    // The runtime's catch-up records it expired (audited) and runs nothing.
    let resumed = role.resume_proposals(chrono::Utc::now()).await.unwrap();
    assert_eq!((resumed.expired, resumed.ran.len()), (1, 0));
    let stored = stores
        .proposals
        .get(&role.proposal_context(), &expiring.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, ProposalStatus::Expired);
    assert!(
        role.resume_proposals(chrono::Utc::now())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_runtime_killed_between_approval_and_execution_runs_it_on_restart_once() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let first = cro(&stores, runs.clone()).await;
    let proposal = proposed(&first, "e-kill", 80_000).await;
    stores
        .proposals
        .decide(
            &person(&first, "ann"),
            &proposal.id,
            &Verdict::approve("go"),
        )
        .await
        .unwrap();
    // Another proposal: approved and claimed by the first runtime, which
    // then dies before recording how its action went.
    let claimed = proposed(&first, "e-claimed", 90_000).await;
    stores
        .proposals
        .decide(&person(&first, "ann"), &claimed.id, &Verdict::approve("go"))
        .await
        .unwrap();
    stores
        .proposals
        .claim(&first.proposal_context(), &claimed.id)
        .await
        .unwrap();
    drop(first);

    // The restarted runtime.
    let started = chrono::Utc::now();
    let second = cro(&stores, runs.clone()).await;
    let resumed = second.resume_proposals(started).await.unwrap();
    assert_eq!(resumed.ran.len(), 1);
    assert_eq!(resumed.ran[0].id, proposal.id);
    assert_eq!(resumed.ran[0].status, ProposalStatus::Executed);
    assert_eq!(resumed.interrupted, vec![claimed.id.clone()]);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the approved one ran once; the claimed one never again"
    );
    let interrupted = stores
        .proposals
        .get(&second.proposal_context(), &claimed.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(interrupted.status, ProposalStatus::Failed);
    assert_eq!(interrupted.error.as_deref(), Some(INTERRUPTED));
    // Nothing left: a second start does nothing.
    assert!(
        second
            .resume_proposals(chrono::Utc::now())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_escalation_runs_the_action_the_person_chose() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(&stores, runs.clone()).await.escalate_to("user:ann");
    // Outside its domains: escalated to ann, no action attached.
    let event = DecisionEvent::new("e-legal", "contract.review", "legal").summary("a clause");
    let handled = role.handle(&event).await.unwrap();
    assert_eq!(handled.decision.outcome, Outcome::Escalate);
    let p = handled.proposal.unwrap();
    assert_eq!(p.action, None);
    assert_eq!(p.assignee.as_deref(), Some("user:ann"));
    let mine = stores
        .proposals
        .list(
            &person(&role, "ann"),
            &openvibe_protocols::ProposalQuery::new().assignee("user:ann"),
        )
        .await
        .unwrap();
    assert_eq!(mine.items.len(), 1);
    let ann = person(&role, "ann");
    let no_action = stores
        .proposals
        .decide(&ann, &p.id, &Verdict::approve("ok"))
        .await
        .unwrap_err();
    assert!(
        matches!(no_action, openvibe_protocols::StoreError::Conflict { .. }),
        "{no_action:?}"
    );
    let chosen = Action::tool("give_discount", "apply_discount", json!({"pct": 5}));
    stores
        .proposals
        .decide(&ann, &p.id, &Verdict::approve_with(chosen, "5% is fine"))
        .await
        .unwrap();
    let done = role.run_approved(&p.id).await.unwrap();
    assert_eq!(done.result, Some(json!("5% applied")));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_gated_tool_call_files_a_proposal_and_runs_once_approved() {
    let stores = in_memory_stores();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let sign = FnTool::new(
        "sign_contract",
        "Sign a contract.",
        move |d: serde_json::Value| {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("signed {}", d["deal"].as_str().unwrap_or("?")))
            }
        },
    )
    .action("sign_contracts");
    let op = Operator::new("deals")
        .node(
            AgentNode::new("close", "You close deals.", |_| Ok("Close Acme".into()))
                .tool(sign)
                .output_key("result"),
        )
        .sequence("close", ["close"])
        .unwrap();
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "sign_contract".into(),
            input: json!({"deal": "acme"}),
        }]),
        LlmResponse::text("waiting for approval"),
    ]);
    let role = Role::new("cro")
        .operator(op)
        .authority(AuthorityConfig::new().needs_approval(["sign_contracts"]))
        .with_llm(Arc::new(llm.clone()))
        .with_proposals(stores.proposals.clone());
    role.get_operator("deals")
        .unwrap()
        .run_workflow("close", State::new())
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "not run before approval");
    let pending = stores
        .proposals
        .list(
            &person(&role, "ann"),
            &openvibe_protocols::ProposalQuery::new().status(ProposalStatus::Pending),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(pending.len(), 1);
    let p = &pending[0];
    assert_eq!(p.role_id, "cro");
    let action = p.action.as_ref().unwrap();
    assert_eq!(action.action, "sign_contracts");
    assert_eq!(action.input, json!({"deal": "acme"}));
    // The model was told a proposal waits.
    let told = format!("{:?}", llm.requests()[1].messages);
    assert!(
        told.contains(&p.id) && told.contains("waits for a person"),
        "{told}"
    );
    stores
        .proposals
        .decide(
            &person(&role, "ann"),
            &p.id,
            &Verdict::approve("signed off"),
        )
        .await
        .unwrap();
    let done = role.run_approved(&p.id).await.unwrap();
    assert_eq!(done.status, ProposalStatus::Executed);
    assert_eq!(done.result, Some(json!("signed acme")));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn serve_runs_approvals_as_they_arrive() {
    let stores = in_memory_stores();
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(&stores, runs.clone()).await;
    let p = proposed(&role, "e-serve", 50_000).await;
    let ann = person(&role, "ann");
    let runtime = RoleRuntime::new(Arc::new(ScriptedLlm::new([])))
        .with_stores(stores.clone())
        .with_scheduler(Arc::new(InProcessScheduler::new()))
        .with_proposal_poll(std::time::Duration::from_millis(20))
        .role(role)
        .unwrap();
    let (store, id) = (stores.proposals.clone(), p.id.clone());
    let approver = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        store
            .decide(&ann, &id, &Verdict::approve("go"))
            .await
            .unwrap();
    });
    let report = runtime
        .serve(
            tokio::time::sleep(std::time::Duration::from_millis(600)),
            |_| {},
        )
        .await
        .unwrap();
    approver.await.unwrap();
    assert_eq!(report.proposals_run, 1, "{report:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let done = stores
        .proposals
        .get(
            &person(&runtime.get_role("cro").unwrap().clone(), "ann"),
            &p.id,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, ProposalStatus::Executed);
}

/// An operator whose `qualify` workflow runs every minute.
fn every_minute() -> Operator {
    Operator::new("revenue_ops")
        .node(
            openvibe_primitives::LlmNode::new("qualify", "You qualify leads.", |_: &State| {
                Ok("Score the lead.".to_owned())
            })
            .output_key("score"),
        )
        .sequence("qualify", ["qualify"])
        .unwrap()
        .trigger(openvibe_protocols::TriggerConfig {
            id: "minutely".into(),
            kind: openvibe_protocols::TriggerKind::Interval,
            schedule: Some("1m".into()),
            workflow: "qualify".into(),
            operator_id: None,
            input: json!({}),
        })
}

/// A long approved action runs beside the schedules (issue 59): the
/// firings due while it runs are served on time, not after it.
#[tokio::test(start_paused = true)]
async fn a_long_approved_action_delays_no_firing() {
    use std::time::Duration;
    let stores = in_memory_stores();
    let gate = Arc::new(tokio::sync::Notify::new());
    let role = DiscountCro::new(&stores)
        .gated(gate.clone())
        .role()
        .await
        .unwrap()
        .operator(every_minute());
    let p = proposed(&role, "e-long", 50_000).await;
    stores
        .proposals
        .decide(&person(&role, "ann"), &p.id, &Verdict::approve("go"))
        .await
        .unwrap();
    let start: chrono::DateTime<chrono::Utc> = "2026-11-25T00:00:00Z".parse().unwrap();
    let clock = Arc::new(openvibe_schedule::TokioClock::starting_at(start));
    let runtime = RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text(
        r#"{"score": 70}"#,
    ))))
    .with_stores(stores.clone())
    .with_scheduler(Arc::new(InProcessScheduler::with_clock(clock)))
    .with_proposal_poll(Duration::from_secs(1))
    .role(role)
    .unwrap();
    let t0 = tokio::time::Instant::now();
    // The approved discount holds for five minutes.
    let opener = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(300)).await;
        gate.notify_one();
    });
    let mut served = Vec::new();
    let report = runtime
        .serve(tokio::time::sleep(Duration::from_secs(450)), |fired| {
            let due = (fired.firing.scheduled_at - start).to_std().unwrap();
            let lag = t0.elapsed().saturating_sub(due);
            let completed = matches!(fired.outcome, openvibe_roles::Outcome::Completed(_));
            served.push((due, lag, completed));
        })
        .await
        .unwrap();
    opener.await.unwrap();
    assert_eq!(report.proposals_run, 1, "{report:?}");
    assert!(
        served.len() >= 7 && served.iter().all(|(.., ok)| *ok),
        "{served:?}"
    );
    let while_held = served
        .iter()
        .filter(|(due, ..)| *due < Duration::from_secs(300))
        .count();
    assert!(
        while_held >= 4,
        "firings due while the action ran: {served:?}"
    );
    assert!(
        served
            .iter()
            .all(|(_, lag, _)| *lag <= Duration::from_secs(1)),
        "every firing served within a second of its time: {served:?}"
    );
}
