//! The seed's V3 and V4 exports, imported from the facade's root: its
//! `DecisionEngine, GoalSystem, OKR, Decision` and `CognitiveLoop, Space,
//! BeliefStore, MemoryAccessControl` (an OKR is an `Objective`; memory
//! access control is `ClearanceProfile` and `Clearance`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe::protocols::{CallerContext, Outcome};
use openvibe::{
    Belief, BeliefStore, Classification, Clearance, ClearanceProfile, CognitiveLoop, Decision,
    DecisionEngine, DecisionEvent, GoalSystem, KeyResult, Objective, Space,
};

#[tokio::test]
async fn v3_and_v4_exports_work_from_the_root() {
    // V3: the four steps; an event of a domain the role does not own
    // escalates whatever else holds.
    let engine = DecisionEngine::new("cro").domains(["revenue"]);
    let mine: Decision = engine
        .evaluate(&DecisionEvent::new("e1", "renewal", "revenue"))
        .await
        .unwrap();
    assert!(mine.domain.owned, "{:?}", mine.explain());
    let theirs = engine
        .evaluate(&DecisionEvent::new("e2", "campaign", "marketing"))
        .await
        .unwrap();
    assert!(!theirs.domain.owned);
    assert_eq!(theirs.outcome, Outcome::Escalate);
    assert_eq!(theirs.explain().len(), mine.explain().len());
    // An OKR: an objective with its key results.
    let okr = Objective {
        id: "pipeline-q4".into(),
        owner: "cro".into(),
        title: "Pipeline $2M this quarter".into(),
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
    assert!(okr.problems().is_empty());
    let _: Option<GoalSystem<'_>> = None;
    let _: Option<CognitiveLoop> = None;

    // V4: beliefs behind a store, a space, clearance.
    let stores = openvibe::in_memory::in_memory_stores();
    let beliefs: &dyn BeliefStore = stores.beliefs.as_ref();
    let cro = CallerContext::agent("cro").with_clearance(Clearance::unrestricted());
    let b = beliefs
        .propose(&cro, Belief::new("cro", "Webinar leads close faster", 0.8))
        .await
        .unwrap();
    assert!(!b.id.is_empty());
    let space = Space::new("deal room");
    assert_eq!(space.title, "deal room");
    // Memory access control: a role's clearance (domain × classification)
    // is what its queries are filtered by.
    let profile = ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential);
    let clearance: Clearance = profile.clearance();
    assert!(clearance.allows("revenue", Classification::Internal));
    assert!(!clearance.allows("hr", Classification::Internal));
}
