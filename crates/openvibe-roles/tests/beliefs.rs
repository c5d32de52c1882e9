//! Beliefs (L4) in a role's prompts (issue 40): a belief a person approved
//! appears under `## Beliefs`, before the insights, in every prompt of the
//! role about its domain; a proposed or rejected one never does; one
//! superseded disappears when its successor is approved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use openvibe_memory::{ClearanceProfile, in_memory_stores};
use openvibe_operators::Operator;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{LlmNode, ScopeSpec};
use openvibe_protocols::{
    Belief, CallerContext, Classification, Clearance, Insight, LlmResponse, State, Verdict,
};
use openvibe_roles::{Role, RoleRuntime};
use serde_json::json;

fn role() -> Role {
    let op = Operator::new("revenue_ops")
        .node(
            LlmNode::new("qualify", "You qualify leads.", |s: &State| {
                Ok(format!("Lead: {}", s.require_str("lead")?))
            })
            .memory_scope(ScopeSpec::new().domain("revenue"))
            .output_key("score"),
        )
        .sequence("qualify", ["qualify"])
        .unwrap();
    Role::new("cro")
        .soul("You are the CRO.")
        .operator(op)
        .clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        )
}

/// The CRO of [`role`], owning `revenue`, who may give discounts on its
/// own (the `apply_discount` tool).
fn deciding_role() -> Role {
    let tool = openvibe_primitives::FnTool::new(
        "apply_discount",
        "Apply a discount.",
        |_: serde_json::Value| async move { Ok::<_, String>("applied".to_owned()) },
    );
    role()
        .domains(["revenue"])
        .authority(openvibe_roles::AuthorityConfig::new().autonomous(["give_discount"]))
        .action_tool(tool)
}

fn ann() -> CallerContext {
    CallerContext::user("ann").with_clearance(Clearance::unrestricted())
}

#[tokio::test]
async fn approved_beliefs_lead_the_prompt_and_others_stay_out() {
    let stores = in_memory_stores();
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(r#"{"score": 80}"#)));
    let runtime = RoleRuntime::new(llm.clone())
        .with_stores(stores.clone())
        .role(role())
        .unwrap();
    let memory = runtime
        .get_role("cro")
        .unwrap()
        .agent_memory()
        .unwrap()
        .clone();
    memory
        .store_insight(Insight::new("i1", "cro", "webinar leads reply fast", 0.7).domain("revenue"))
        .await
        .unwrap();
    let propose = |id: &str, statement: &str| {
        Belief::new("cro", statement, 0.9)
            .id(id)
            .domain("revenue")
            .from_insights(["i1"], 4)
    };
    memory
        .propose_belief(propose("b-webinar", "Webinar leads close faster"))
        .await
        .unwrap();
    memory
        .propose_belief(propose("b-cold", "Cold calls never work"))
        .await
        .unwrap();
    memory
        .propose_belief(propose("b-waiting", "Referrals close fastest"))
        .await
        .unwrap();
    stores
        .beliefs
        .decide(&ann(), "b-webinar", &Verdict::approve("matches the data"))
        .await
        .unwrap();
    stores
        .beliefs
        .decide(&ann(), "b-cold", &Verdict::reject("one bad week"))
        .await
        .unwrap();
    let run = || async {
        runtime
            .activate(
                "cro",
                "revenue_ops",
                "qualify",
                State::from_value(json!({"lead": "Acme"})).unwrap(),
            )
            .await
            .unwrap();
        let request = llm.last_request().unwrap();
        format!("{}\n{}", request.system, request.messages[0].text())
    };
    let prompt = run().await;
    let beliefs = prompt.find("## Beliefs\n- Webinar leads close faster (confidence: 0.9)");
    let insights = prompt.find("## Insights");
    assert!(beliefs.is_some() && insights.is_some(), "{prompt}");
    assert!(beliefs < insights, "beliefs come before insights: {prompt}");
    assert!(
        !prompt.contains("Cold calls"),
        "a rejected belief: {prompt}"
    );
    assert!(!prompt.contains("Referrals"), "a proposed belief: {prompt}");
    // A successor approved: the old belief leaves the prompt.
    memory
        .propose_belief(
            propose(
                "b-webinar-2",
                "Webinar leads close faster when demoed within a day",
            )
            .supersedes("b-webinar"),
        )
        .await
        .unwrap();
    stores
        .beliefs
        .decide(&ann(), "b-webinar-2", &Verdict::approve("sharper"))
        .await
        .unwrap();
    let prompt = run().await;
    assert!(prompt.contains("demoed within a day"), "{prompt}");
    assert!(
        !prompt.contains("- Webinar leads close faster (confidence"),
        "the superseded belief left: {prompt}"
    );
}

/// A belief about the event weighs in the decision's confidence (on
/// record as evidence of kind `belief`), and a belief marked as a
/// constraint turns an `Act` into a `Propose` that names it.
#[tokio::test]
async fn beliefs_weigh_in_decisions_and_constraints_cap_them() {
    use openvibe_protocols::{Action, DecisionEvent, EvidenceKind, Outcome};
    let stores = in_memory_stores();
    let role = deciding_role();
    let runtime = RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text("{}"))))
        .with_stores(stores.clone())
        .role(role)
        .unwrap();
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    let event = |id: &str| {
        DecisionEvent::new(id, "discount.requested", "revenue")
            .summary("Acme asks an annual plan discount")
            .action(Action::tool(
                "give_discount",
                "apply_discount",
                json!({"pct": 5}),
            ))
    };
    // No evidence: no confidence, so no acting.
    let before = role.decide(&event("e0")).await.unwrap();
    assert_eq!(before.confidence.score, 0.0);
    assert_ne!(before.outcome, Outcome::Act);
    memory
        .propose_belief(
            Belief::new("cro", "Annual plan discounts close deals", 0.9)
                .id("b-discounts")
                .domain("revenue"),
        )
        .await
        .unwrap();
    // Proposed only: still no confidence.
    assert_eq!(
        role.decide(&event("e1")).await.unwrap().confidence.score,
        0.0
    );
    stores
        .beliefs
        .decide(&ann(), "b-discounts", &Verdict::approve("our data says so"))
        .await
        .unwrap();
    let decided = role.decide(&event("e2")).await.unwrap();
    assert_eq!(decided.outcome, Outcome::Act, "{:?}", decided.explain());
    assert!((decided.confidence.score - 0.9).abs() < 1e-9);
    assert_eq!(decided.confidence.evidence[0].kind, EvidenceKind::Belief);
    assert_eq!(decided.confidence.evidence[0].id, "b-discounts");
    // A constraint on discounts: the same event is proposed to a person.
    memory
        .propose_belief(
            Belief::new("cro", "Every discount needs a second look", 0.8)
                .id("b-constraint")
                .domain("revenue")
                .constraint(),
        )
        .await
        .unwrap();
    stores
        .beliefs
        .decide(&ann(), "b-constraint", &Verdict::approve("policy"))
        .await
        .unwrap();
    let capped = role.decide(&event("e3")).await.unwrap();
    assert_eq!(capped.outcome, Outcome::Propose, "{:?}", capped.explain());
    assert!(capped.reason.contains("b-constraint"), "{}", capped.reason);
}

/// A stand-in sentence model: a text's vector counts its words per topic
/// (pricing, people), so texts on one topic with no word in common are
/// alike, as with a real model.
struct TopicEmbedder;

#[async_trait::async_trait]
impl openvibe_protocols::Embedder for TopicEmbedder {
    fn model_id(&self) -> &str {
        "topics"
    }
    fn dimensions(&self) -> usize {
        3
    }
    async fn embed(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, openvibe_protocols::EmbedError> {
        const TOPICS: [&[&str]; 2] = [
            &[
                "discount",
                "discounts",
                "price",
                "pricing",
                "rebates",
                "cheaper",
                "markdown",
            ],
            &["hire", "hiring", "recruiter", "candidate", "candidates"],
        ];
        Ok(texts
            .iter()
            .map(|text| {
                let lower = text.to_lowercase();
                let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
                let mut v: Vec<f32> = TOPICS
                    .iter()
                    .map(|topic| words.iter().filter(|w| topic.contains(w)).count() as f32)
                    .collect();
                v.push(0.1);
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

/// Evidence by meaning (issue 64): a belief of another domain that shares
/// no word with the event but is on its subject bears on the decision, at
/// the other-domain weight, and the decision says why it was chosen; one
/// on another subject does not.
#[tokio::test]
async fn a_belief_bears_on_a_decision_by_meaning_whatever_its_domain() {
    use openvibe_protocols::{Action, DecisionEvent, EvidenceKind};
    let stores = in_memory_stores();
    let role = deciding_role().clearance(
        ClearanceProfile::new("cro")
            .with_domain("revenue", Classification::Confidential)
            .with_domain("finance", Classification::Confidential),
    );
    assert!(!role.has_embedder());
    // The runtime's embedder is the role's (it has none of its own).
    let runtime = RoleRuntime::new(Arc::new(ScriptedLlm::always(LlmResponse::text("{}"))))
        .with_embedder(Arc::new(TopicEmbedder))
        .with_stores(stores.clone())
        .role(role)
        .unwrap();
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    for (id, statement) in [
        ("b-pricing", "Rebates beyond a tenth hurt renewal margins"),
        ("b-hiring", "Candidates from referrals stay longer"),
    ] {
        memory
            .propose_belief(Belief::new("cro", statement, 0.8).id(id).domain("finance"))
            .await
            .unwrap();
        stores
            .beliefs
            .decide(&ann(), id, &Verdict::approve("seen it"))
            .await
            .unwrap();
    }
    let event = DecisionEvent::new("e-meaning", "discount.requested", "revenue")
        .summary("Acme asks a markdown on the annual plan")
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 5}),
        ));
    let decided = role.decide(&event).await.unwrap();
    let cited: Vec<_> = decided
        .confidence
        .evidence
        .iter()
        .filter(|e| e.kind == EvidenceKind::Belief)
        .collect();
    assert_eq!(cited.len(), 1, "{:?}", decided.confidence.evidence);
    assert_eq!(cited[0].id, "b-pricing");
    assert!(
        (cited[0].relevance - openvibe_memory::OTHER_DOMAIN_WEIGHT).abs() < 1e-9,
        "another domain counts at its weight: {}",
        cited[0].relevance
    );
    assert!(cited[0].why.contains("vector #1"), "{}", cited[0].why);
    assert!(
        cited[0].why.contains("domain `finance`"),
        "{}",
        cited[0].why
    );
    assert!((decided.confidence.score - 0.8 * 0.75).abs() < 1e-9);

    // What the belief changed: the same event without it has no evidence
    // (the other belief is on another subject), and asking writes nothing.
    let episodes = |memory: openvibe_memory::AgentMemory| async move {
        memory
            .recall_episodes(openvibe_protocols::EpisodeQuery::new().limit(100))
            .await
            .unwrap()
            .len()
    };
    let before = episodes(memory.clone()).await;
    let without = role.decide_without(&event, &["b-pricing"]).await.unwrap();
    assert!(without.confidence.evidence.is_empty(), "{without:?}");
    assert_eq!(without.confidence.score, 0.0);
    assert_ne!(without.outcome, decided.outcome);
    let engine = role.decision_engine();
    assert_eq!(
        engine
            .evaluate_without(&event, &[])
            .await
            .unwrap()
            .confidence
            .score,
        decided.confidence.score
    );
    assert_eq!(episodes(memory).await, before, "a what-if records nothing");
}
