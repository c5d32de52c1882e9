//! The learn step (issue 40): strong insights become proposed beliefs, each
//! filed as a proposal; a person's approval makes the belief active exactly
//! once; a rejected insight is not proposed again until its evidence grows;
//! a belief about the subject of an active one supersedes it once approved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_memory::Decisions;
use std::sync::Arc;

use openvibe_memory::{AgentMemory, ClearanceProfile, in_memory_stores};
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::{
    BeliefStatus, CallerContext, Classification, Clearance, Insight, LlmResponse, ProposalStatus,
    StoreError, Stores, Verdict, belief_proposal_id,
};
use openvibe_roles::{Learning, Role, RoleRuntime};

fn ann() -> CallerContext {
    CallerContext::user("ann").with_clearance(Clearance::unrestricted())
}

fn runtime(stores: &Stores, answer: &str) -> RoleRuntime {
    let llm = Arc::new(ScriptedLlm::always(LlmResponse::text(answer)));
    RoleRuntime::new(llm)
        .with_stores(stores.clone())
        .role(Role::new("cro").soul("You are the CRO.").clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        ))
        .unwrap()
}

async fn insight(memory: &AgentMemory, id: &str, content: &str, confidence: f64, evidence: u64) {
    memory
        .store_insight(
            Insight::new(id, "cro", content, confidence)
                .evidence(evidence)
                .domain("revenue"),
        )
        .await
        .unwrap();
}

/// A role whose model answers `answer`, with one active belief learned
/// from "Deals with a VP sponsor close within 30 days" (approved by ann).
async fn with_an_active_vp_belief(
    answer: &str,
    learning: &Learning,
) -> (Stores, RoleRuntime, openvibe_protocols::Belief) {
    let stores = in_memory_stores();
    let runtime = runtime(&stores, answer);
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    insight(
        &memory,
        "i-vp",
        "Deals with a VP sponsor close within 30 days",
        0.9,
        4,
    )
    .await;
    let first = role.learn(learning).await.unwrap().proposed;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].predecessor(), None, "nothing to follow yet");
    stores
        .decide_proposal(
            &ann(),
            &belief_proposal_id(&first[0].id),
            &Verdict::approve("ok"),
        )
        .await
        .unwrap();
    let first = first.into_iter().next().unwrap();
    (stores, runtime, first)
}

#[tokio::test]
async fn strong_insights_become_beliefs_a_person_approves_once() {
    let stores = in_memory_stores();
    let runtime = runtime(&stores, "unused");
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    insight(
        &memory,
        "i-vp",
        "Deals with a VP sponsor close within 30 days",
        0.9,
        4,
    )
    .await;
    insight(&memory, "i-weak", "Webinar leads reply fast", 0.9, 1).await;
    insight(&memory, "i-unsure", "Cold calls rarely convert", 0.5, 9).await;

    let learning = Learning::default();
    let report = role.learn(&learning).await.unwrap();
    assert_eq!(report.eligible, 1);
    assert_eq!(report.proposed.len(), 1, "{report:?}");
    let belief = report.proposed[0].clone();
    assert_eq!(belief.status, BeliefStatus::Proposed);
    assert_eq!(belief.insight_ids, vec!["i-vp"]);
    assert_eq!(belief.evidence, 4);
    assert_eq!(belief.domain, "revenue");
    let proposal_id = belief_proposal_id(&belief.id);
    let proposal = stores
        .proposals
        .get(&ann(), &proposal_id)
        .await
        .unwrap()
        .expect("filed in the inbox");
    assert_eq!(proposal.status, ProposalStatus::Pending);
    assert_eq!(proposal.belief_id(), Some(belief.id.as_str()));

    // Learning again proposes nothing new: the insight is held.
    let again = role.learn(&learning).await.unwrap();
    assert!(again.proposed.is_empty());
    assert_eq!(again.held, 1);

    // The role may not approve its own belief.
    assert!(matches!(
        stores
            .decide_proposal(
                &role.proposal_context(),
                &proposal_id,
                &Verdict::approve("mine")
            )
            .await,
        Err(StoreError::Unauthorized { .. })
    ));
    // A person approves it in the inbox: the belief is active, once.
    let approved = stores
        .decide_proposal(
            &ann(),
            &proposal_id,
            &Verdict::approve("matches the pipeline"),
        )
        .await
        .unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    let active = stores
        .beliefs
        .get(&ann(), &belief.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(active.status, BeliefStatus::Active);
    assert_eq!(active.decided_by.as_deref(), Some("user:ann"));
    assert!(matches!(
        stores
            .decide_proposal(&ann(), &proposal_id, &Verdict::approve("again"))
            .await,
        Err(StoreError::Conflict { .. })
    ));
    // The runtime runs the approved proposal: it confirms the belief.
    let resumed = role.resume_proposals(chrono::Utc::now()).await.unwrap();
    assert_eq!(resumed.ran.len(), 1);
    assert_eq!(resumed.ran[0].status, ProposalStatus::Executed);
    assert_eq!(
        resumed.ran[0].result.as_ref().unwrap()["belief_id"],
        belief.id
    );
    assert_eq!(
        memory.active_beliefs(Some("revenue")).await.unwrap().len(),
        1
    );

    // A rejected insight is not proposed again until its evidence grows.
    insight(&memory, "i-cold", "Cold outreach to CFOs converts", 0.85, 3).await;
    let cold = role.learn(&learning).await.unwrap().proposed;
    assert_eq!(cold.len(), 1);
    let rejected = stores
        .decide_belief(&ann(), &cold[0].id, &Verdict::reject("one quarter of data"))
        .await
        .unwrap();
    assert_eq!(rejected.status, BeliefStatus::Rejected);
    let cold_proposal = stores
        .proposals
        .get(&ann(), &belief_proposal_id(&cold[0].id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        cold_proposal.status,
        ProposalStatus::Rejected,
        "deciding the belief decides its proposal"
    );
    assert!(role.learn(&learning).await.unwrap().proposed.is_empty());
    stores
        .insights
        .strengthen(&role.proposal_context(), "i-cold", &[])
        .await
        .unwrap();
    let grown = role.learn(&learning).await.unwrap().proposed;
    assert_eq!(grown.len(), 1, "evidence grew: proposed again");
    assert_ne!(grown[0].id, cold[0].id);
    assert_eq!(grown[0].evidence, 4);
}

#[tokio::test]
async fn a_belief_on_the_same_subject_supersedes_the_active_one() {
    let learning = Learning::default().check_with_model(true);
    let (stores, runtime, first) =
        with_an_active_vp_belief(r#"{"contradicts": true}"#, &learning).await;
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    insight(
        &memory,
        "i-stall",
        "Since the pricing change, VP-sponsored deals stall in procurement",
        0.85,
        3,
    )
    .await;
    insight(
        &memory,
        "i-other",
        "Webinar signups peak on Tuesdays",
        0.9,
        5,
    )
    .await;
    let next = role.learn(&learning).await.unwrap().proposed;
    assert_eq!(next.len(), 2);
    let stall = next.iter().find(|b| b.insight_ids == ["i-stall"]).unwrap();
    let other = next.iter().find(|b| b.insight_ids == ["i-other"]).unwrap();
    assert_eq!(stall.supersedes.as_deref(), Some(first.id.as_str()));
    assert_eq!(other.supersedes, None, "another subject");
    stores
        .decide_proposal(
            &ann(),
            &belief_proposal_id(&stall.id),
            &Verdict::approve("new pricing"),
        )
        .await
        .unwrap();
    let old = stores
        .beliefs
        .get(&ann(), &first.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(old.status, BeliefStatus::Retired);
    assert_eq!(old.superseded_by.as_deref(), Some(stall.id.as_str()));
    let active = memory.active_beliefs(Some("revenue")).await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].id, stall.id);
    assert_eq!(active[0].version, 2);
}

#[tokio::test]
async fn the_model_can_say_there_is_no_contradiction() {
    let learning = Learning::default().check_with_model(true);
    let (_stores, runtime, first) =
        with_an_active_vp_belief(r#"{"contradicts": false}"#, &learning).await;
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    insight(
        &memory,
        "i-vp2",
        "VP sponsor deals also renew more often",
        0.9,
        4,
    )
    .await;
    let next = role.learn(&learning).await.unwrap().proposed;
    assert_eq!(next.len(), 1);
    assert_eq!(
        (next[0].supersedes.as_deref(), next[0].refines.as_deref()),
        (None, Some(first.id.as_str())),
        "no contradiction: it refines"
    );
}

/// Without the model's check, a belief on the subject of an active one is
/// proposed as refining it; the person approving chooses: keep both, or
/// supersede (issue 64).
#[tokio::test]
async fn without_the_model_a_same_subject_belief_refines_and_the_person_chooses() {
    let learning = Learning::default();
    let (stores, runtime, first) =
        with_an_active_vp_belief("the model is not asked", &learning).await;
    let role = runtime.get_role("cro").unwrap();
    let memory = role.agent_memory().unwrap().clone();
    insight(
        &memory,
        "i-stall",
        "Since the pricing change, VP-sponsored deals stall in procurement",
        0.85,
        3,
    )
    .await;
    let next = role.learn(&learning).await.unwrap().proposed;
    assert_eq!(next.len(), 1);
    assert_eq!(
        (next[0].refines.as_deref(), next[0].supersedes.as_deref()),
        (Some(first.id.as_str()), None)
    );
    let proposal = stores
        .proposals
        .get(&ann(), &belief_proposal_id(&next[0].id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(proposal.refined_belief(), Some(first.id.as_str()));
    assert!(
        role.learn(&learning).await.unwrap().proposed.is_empty(),
        "one successor at a time"
    );
    // The person supersedes through the proposal: the old one retires.
    stores
        .decide_proposal(
            &ann(),
            &belief_proposal_id(&next[0].id),
            &Verdict::approve("the pricing changed it")
                .superseding()
                .as_constraint(),
        )
        .await
        .unwrap();
    let active = memory.active_beliefs(Some("revenue")).await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].id, next[0].id);
    assert!(
        active[0].constraint,
        "approved through its proposal as a constraint"
    );
    assert_eq!(active[0].supersedes.as_deref(), Some(first.id.as_str()));
    // A superseding approval of a proposal that adopts no belief: a conflict.
    let plain = stores
        .proposals
        .create(
            &role.proposal_context(),
            openvibe_protocols::Proposal::new(
                "cro",
                "Offer a discount",
                openvibe_protocols::Action::tool("discount", "crm", serde_json::json!({})),
            )
            .id("p-plain")
            .domain("revenue"),
        )
        .await
        .unwrap();
    let refused = stores
        .decide_proposal(&ann(), &plain.id, &Verdict::approve("ok").superseding())
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Conflict { .. })),
        "{refused:?}"
    );
    // So is an approval as a constraint: it has no belief to make one.
    let refused = stores
        .decide_proposal(&ann(), &plain.id, &Verdict::approve("ok").as_constraint())
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Conflict { .. })),
        "{refused:?}"
    );
}
