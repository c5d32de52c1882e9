//! Roles that decide (seed 001, V3): the matrix as a table, evidence from
//! the role's memory, acting on a decision, and the property that a
//! forbidden action never runs, whatever the event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openvibe_memory::{AgentMemory, ClearanceProfile};
use openvibe_primitives::FnTool;
use openvibe_protocols::{
    Action, Classification, ConfidenceBand, DecisionEvent, Episode, EpisodeQuery, EvidenceKind,
    Impact, Insight, Outcome,
};
use openvibe_roles::{AuthorityConfig, Error, ImpactRules, Role, config};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
struct Discount {
    pct: u32,
}

/// A CRO owning `revenue`, with an action tool that counts its runs, and
/// one insight about discounts of confidence `confidence` (none at 0).
async fn cro(confidence: f64, authority: AuthorityConfig, runs: Arc<AtomicUsize>) -> Role {
    let memory = AgentMemory::new("cro");
    if confidence > 0.0 {
        memory
            .store_insight(
                Insight::new(
                    "i-discount",
                    "cro",
                    "annual plan discounts close deals",
                    confidence,
                )
                .domain("revenue"),
            )
            .await
            .unwrap();
    }
    let tool = FnTool::new("apply_discount", "Apply a discount.", move |d: Discount| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("{}% applied", d.pct))
        }
    });
    Role::new("cro")
        .domains(["revenue"])
        .authority(authority)
        .impact_rules(
            ImpactRules::new()
                .rule("amount > 1000", Impact::Medium)
                .unwrap()
                .rule("amount > 10000", Impact::High)
                .unwrap(),
        )
        .clearance(ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted))
        .with_agent_memory(memory)
        .action_tool(tool)
}

fn discount(id: &str, action: &str, amount: u64) -> DecisionEvent {
    DecisionEvent::new(id, "discount.requested", "revenue")
        .summary("Acme asks an annual plan discount")
        .data(json!({"amount": amount}))
        .action(Action::tool(action, "apply_discount", json!({"pct": 10})))
}

#[tokio::test]
async fn the_matrix_as_a_table() {
    use Outcome::{Act, Escalate, Propose, Refuse};
    let free = || AuthorityConfig::new().autonomous(["give_discount"]);
    let gated = || AuthorityConfig::new().needs_approval(["give_discount"]);
    let banned = || AuthorityConfig::new().forbidden(["give_discount"]);
    // (insight confidence, amount, authority, expected band, impact, outcome)
    let table: Vec<(f64, u64, AuthorityConfig, ConfidenceBand, Impact, Outcome)> = vec![
        (0.9, 500, free(), ConfidenceBand::High, Impact::Low, Act),
        (
            0.9,
            5_000,
            free(),
            ConfidenceBand::High,
            Impact::Medium,
            Act,
        ),
        (
            0.9,
            50_000,
            free(),
            ConfidenceBand::High,
            Impact::High,
            Propose,
        ),
        (0.6, 500, free(), ConfidenceBand::Medium, Impact::Low, Act),
        (
            0.6,
            5_000,
            free(),
            ConfidenceBand::Medium,
            Impact::Medium,
            Propose,
        ),
        (
            0.6,
            50_000,
            free(),
            ConfidenceBand::Medium,
            Impact::High,
            Escalate,
        ),
        (0.3, 500, free(), ConfidenceBand::Low, Impact::Low, Propose),
        (
            0.3,
            5_000,
            free(),
            ConfidenceBand::Low,
            Impact::Medium,
            Escalate,
        ),
        (
            0.0,
            50_000,
            free(),
            ConfidenceBand::Low,
            Impact::High,
            Escalate,
        ),
        // Authority caps: needs approval never acts; forbidden is refused.
        (
            0.9,
            500,
            gated(),
            ConfidenceBand::High,
            Impact::Low,
            Propose,
        ),
        (
            0.6,
            50_000,
            gated(),
            ConfidenceBand::Medium,
            Impact::High,
            Escalate,
        ),
        (
            0.9,
            500,
            banned(),
            ConfidenceBand::High,
            Impact::Low,
            Refuse,
        ),
        (
            0.0,
            50_000,
            banned(),
            ConfidenceBand::Low,
            Impact::High,
            Refuse,
        ),
    ];
    for (i, (confidence, amount, authority, band, impact, outcome)) in table.into_iter().enumerate()
    {
        let runs = Arc::new(AtomicUsize::new(0));
        let role = cro(confidence, authority, runs.clone()).await;
        let decision = role
            .decide(&discount(&format!("e{i}"), "give_discount", amount))
            .await
            .unwrap();
        let row = format!("row {i}: {:#?}", decision.explain());
        assert_eq!(decision.confidence.band, band, "{row}");
        assert_eq!(decision.impact.impact, impact, "{row}");
        assert_eq!(decision.outcome, outcome, "{row}");
        assert!(
            (decision.confidence.score - confidence).abs() < 1e-9,
            "{row}"
        );
        if confidence > 0.0 {
            assert_eq!(decision.confidence.evidence[0].id, "i-discount", "{row}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "deciding runs nothing");
    }
}

#[tokio::test]
async fn domains_and_events_without_an_action_escalate() {
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(
        0.9,
        AuthorityConfig::new().autonomous(["give_discount"]),
        runs,
    )
    .await;
    let elsewhere = DecisionEvent::new("m1", "brief.requested", "marketing").action(Action::tool(
        "give_discount",
        "apply_discount",
        json!({"pct": 1}),
    ));
    let decision = role.decide(&elsewhere).await.unwrap();
    assert_eq!(decision.outcome, Outcome::Escalate);
    assert!(!decision.domain.owned);
    assert!(
        decision.reason.contains("does not own `marketing`"),
        "{}",
        decision.reason
    );
    let question =
        DecisionEvent::new("q1", "renewal.at_risk", "revenue").summary("annual plan discounts");
    let decision = role.decide(&question).await.unwrap();
    assert_eq!(decision.outcome, Outcome::Escalate);
    assert_eq!(decision.authority.authority, None);
}

#[tokio::test]
async fn acting_runs_the_action_once_and_the_track_record_counts() {
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(
        0.9,
        AuthorityConfig::new().autonomous(["give_discount"]),
        runs.clone(),
    )
    .await;
    let handled = role
        .handle(&discount("e1", "give_discount", 500))
        .await
        .unwrap();
    assert_eq!(handled.decision.outcome, Outcome::Act);
    assert_eq!(
        handled.result,
        Some(Ok(Value::String("10% applied".into())))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The decision and the run are episodes of the role.
    let memory = role.agent_memory().unwrap();
    let decisions = memory
        .recall_episodes(EpisodeQuery::new().tags(["decision"]))
        .await
        .unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].id, handled.decision.id);
    assert_eq!(decisions[0].outcome["outcome"], "act");
    let runs_recorded = memory
        .recall_episodes(EpisodeQuery::new().tags(["action"]))
        .await
        .unwrap();
    assert_eq!(runs_recorded.len(), 1);
    assert_eq!(runs_recorded[0].outcome["status"], "ok");
    // The next decision weighs that run (and not the decision record).
    let next = role
        .decide(&discount("e2", "give_discount", 500))
        .await
        .unwrap();
    let kinds: Vec<(EvidenceKind, &str)> = next
        .confidence
        .evidence
        .iter()
        .map(|e| (e.kind, e.id.as_str()))
        .collect();
    assert!(
        kinds.contains(&(EvidenceKind::Episode, runs_recorded[0].id.as_str())),
        "{kinds:?}"
    );
    assert!(
        !kinds.iter().any(|(_, id)| *id == handled.decision.id),
        "{kinds:?}"
    );
    assert!(next.confidence.score > 0.9);
}

#[tokio::test]
async fn failures_in_memory_lower_the_confidence() {
    let runs = Arc::new(AtomicUsize::new(0));
    let role = cro(
        0.9,
        AuthorityConfig::new().autonomous(["give_discount"]),
        runs,
    )
    .await;
    let memory = role.agent_memory().unwrap();
    for i in 0..3 {
        memory
            .record_episode(Episode {
                id: format!("bad{i}"),
                action: "give_discount".into(),
                input_summary: "annual plan discount for a customer".into(),
                output_summary: "the customer churned anyway".into(),
                outcome: json!({"status": "failed"}),
                domain: "revenue".into(),
                ..Episode::default()
            })
            .await
            .unwrap();
    }
    let decision = role
        .decide(&discount("e1", "give_discount", 500))
        .await
        .unwrap();
    assert!(decision.confidence.score < 0.5, "{:?}", decision.confidence);
    assert_eq!(decision.outcome, Outcome::Propose);
    assert_eq!(
        decision
            .confidence
            .evidence
            .iter()
            .filter(|e| e.value == 0.0)
            .count(),
        3
    );
}

#[tokio::test]
async fn execute_refuses_forbidden_and_unapproved_actions() {
    let runs = Arc::new(AtomicUsize::new(0));
    let authority = AuthorityConfig::new()
        .needs_approval(["give_discount"])
        .forbidden(["sign_contract"]);
    let role = cro(0.9, authority, runs.clone()).await;
    let gated = Action::tool("give_discount", "apply_discount", json!({"pct": 5}));
    assert!(matches!(
        role.execute(&gated, false).await,
        Err(Error::NotApproved { .. })
    ));
    assert_eq!(
        role.execute(&gated, true).await.unwrap(),
        json!("5% applied")
    );
    let banned = Action::tool("sign_contract", "apply_discount", json!({"pct": 5}));
    assert!(matches!(
        role.execute(&banned, true).await,
        Err(Error::Forbidden { .. })
    ));
    let unknown = Action::tool("give_discount", "no_such_tool", json!({}));
    assert!(matches!(
        role.execute(&unknown, true).await,
        Err(Error::UnknownTool { .. })
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn roles_read_their_decision_config_with_positioned_errors() {
    let dir = std::env::temp_dir().join(format!("openvibe-decisions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("roles.yaml");
    std::fs::write(
        &file,
        "roles:\n  - id: cro\n    domains: [revenue]\n    impact_rules:\n      rules:\n        - { when: 'amount > 10000', impact: high }\n      default: medium\n    decision_matrix:\n      outcomes: { high: { high: escalate } }\n",
    )
    .unwrap();
    let roles = config::read_roles(&file).unwrap();
    let role = roles.roles[0].role(&dir);
    assert_eq!(role.owned_domains(), ["revenue"]);
    std::fs::write(
        &file,
        "roles:\n  - id: cro\n    impact_rules:\n      rules:\n        - when: 'amount >> 1'\n          impact: high\n",
    )
    .unwrap();
    let err = config::read_roles(&file).unwrap_err().to_string();
    assert!(err.contains("line 5") && err.contains("column 9"), "{err}");
    std::fs::write(
        &file,
        "roles:\n  - id: cro\n    decision_matrix:\n      outcomes: { low: { high: refuse } }\n",
    )
    .unwrap();
    let err = config::read_roles(&file).unwrap_err().to_string();
    assert!(
        err.contains("only a forbidden action is refused")
            && err.contains("roles[0].decision_matrix"),
        "{err}"
    );
    std::fs::write(&file, "roles:\n  - id: cro\n    escalate_to: user:ann\n").unwrap();
    let role = config::read_roles(&file).unwrap().roles[0].role(&dir);
    assert_eq!(role.escalation_assignee(), Some("user:ann"));
    std::fs::write(&file, "roles:\n  - id: cro\n    escalate_to: ann\n").unwrap();
    let err = config::read_roles(&file).unwrap_err().to_string();
    assert!(
        err.contains("roles[0].escalate_to") && err.contains("not an owner key"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(|n| json!(n)),
            "[a-zA-Z]{0,6}".prop_map(|s| json!(s)),
            any::<bool>().prop_map(|b| json!(b)),
            Just(Value::Null),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the event (domain, data, confidence, impact), a
        /// forbidden action is refused and never runs, even when a caller
        /// claims an approval.
        #[test]
        fn a_forbidden_action_never_runs(
            domain in prop_oneof![Just("revenue".to_owned()), "[a-z]{1,8}"],
            data in prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..5),
            amount in any::<u64>(),
            confidence in prop_oneof![Just(0.0), 0.01..1.0f64],
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let runs = Arc::new(AtomicUsize::new(0));
                let role = cro(
                    confidence,
                    AuthorityConfig::new().autonomous(["give_discount"]).forbidden(["sign_contract"]),
                    runs.clone(),
                )
                .await;
                let mut data: serde_json::Map<String, Value> = data.into_iter().collect();
                data.insert("amount".into(), json!(amount));
                let event = DecisionEvent::new("p1", "contract.requested", domain)
                    .summary("annual plan discounts")
                    .data(Value::Object(data))
                    .action(Action::tool("sign_contract", "apply_discount", json!({"pct": 1})));
                let handled = role.handle(&event).await.unwrap();
                assert_eq!(handled.decision.outcome, Outcome::Refuse);
                assert!(handled.result.is_none());
                let action = event.action.clone().unwrap();
                assert!(matches!(role.execute(&action, true).await, Err(Error::Forbidden { .. })));
                assert_eq!(runs.load(Ordering::SeqCst), 0);
            });
        }
    }
}
