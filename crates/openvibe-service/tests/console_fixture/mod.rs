//! The console's test world: a governed service over given stores, with a
//! CRO role whose large discount waits for a person, and records of every
//! kind in the CRO's namespace (one fact's content is a `<script>`), which
//! `ann` may read and approve, `carol` may read but not approve, and `bob`
//! may not read at all. A background task runs approved proposals, as a
//! role runtime's poll does.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_roles::testing::DiscountCro;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use chrono::{NaiveDate, Utc};
use openvibe_governance::Governance;
use openvibe_protocols::{
    Action, Belief, CallOrigin, DecisionEvent, Episode, Goal, Insight, KeyResult, LlmRequest,
    LlmResponse, Member, MetricReport, Objective, Priorities, Priority, RawCall, Space,
    SpaceMessage, Stores,
};
use openvibe_roles::Role;
use openvibe_service::{Service, ServiceConfig};
use serde_json::json;

pub const POLICY: &str = "\
namespaces:
  cro:
    read: [ann, carol, cro]
    write: [cro]
    approve: [ann]
  ops:
    read: [bob, ann]
    write: [bob]
api_keys:
  - { principal: ann, kind: user, env: CONSOLE_KEY_ANN, clearance: { everywhere: restricted } }
  - { principal: carol, kind: user, env: CONSOLE_KEY_CAROL, clearance: { everywhere: restricted } }
  - { principal: bob, kind: user, env: CONSOLE_KEY_BOB, namespace: ops, clearance: { everywhere: restricted } }
";

pub const ANN: &str = "ann-console-key";
pub const CAROL: &str = "carol-console-key";
pub const BOB: &str = "bob-console-key";

/// Text that appears only in records of the CRO's namespace: no page bob
/// sees may contain any of it.
pub const CRO_MARKERS: &[&str] = &[
    "Acme asks a discount",
    "XSS-MARKER",
    "annual plan discounts close deals",
    "Discounts over ten percent need the CFO",
    "qualify_lead",
    "Pipeline $2M this quarter",
    "deals desk",
    "case study for Acme",
];

/// A fact whose content would run if it were not escaped.
pub const SCRIPT_FACT: &str =
    "<script>window.__xss = 1; document.title = 'pwned'</script> XSS-MARKER Acme renewal";

pub fn governance() -> Governance {
    Governance::from_yaml_with_keys(
        POLICY,
        "console.yaml",
        &[
            ("CONSOLE_KEY_ANN", ANN),
            ("CONSOLE_KEY_CAROL", CAROL),
            ("CONSOLE_KEY_BOB", BOB),
        ],
    )
    .unwrap()
}

pub struct World {
    pub url: String,
    pub stores: Stores,
    /// How many times the discount tool ran.
    pub runs: Arc<AtomicUsize>,
    /// The pending proposal of the large discount.
    pub proposal: String,
    /// The ids of the CRO's records (none may show to bob).
    pub cro_ids: Vec<String>,
}

/// The discount CRO over `stores`, its memory governed by the policy.
async fn cro(stores: &Stores, runs: Arc<AtomicUsize>) -> Role {
    DiscountCro::new(stores)
        .counting(runs)
        .governed(Arc::new(governance()))
        .role()
        .await
        .unwrap()
}

/// The world over `stores`, served with `config`.
pub async fn start(stores: Stores, config: ServiceConfig) -> World {
    let runs = Arc::new(AtomicUsize::new(0));
    let role = Arc::new(cro(&stores, runs.clone()).await);
    let ctx = role.proposal_context();
    let event = DecisionEvent::new("e-large", "discount.requested", "revenue")
        .summary("Acme asks a discount on 50000")
        .data(json!({"amount": 50_000}))
        .action(Action::tool(
            "give_discount",
            "apply_discount",
            json!({"pct": 10}),
        ));
    let proposal = role
        .handle(&event)
        .await
        .unwrap()
        .proposal
        .expect("a proposal")
        .id;
    let mut cro_ids = vec![proposal.clone(), "i-discount".to_owned()];
    // The pyramid: a raw call behind an episode behind an insight behind
    // a belief.
    let mut request = LlmRequest::new("sonnet", "Score lead Acme").system("You are the CRO.");
    request.origin = Some(CallOrigin {
        operator_id: "revenue_ops".into(),
        node_name: "qualify_lead".into(),
        episode_id: "ep-acme".into(),
        entity: "acme".into(),
        domain: String::new(),
    });
    let mut call = RawCall::new("cro", Utc::now(), 900, request, Ok(LlmResponse::text("85")));
    call.id = "raw-acme".into();
    stores.raw.append(&ctx, vec![call]).await.unwrap();
    let episode = Episode {
        id: "ep-acme".into(),
        agent_id: "cro".into(),
        operator_id: "revenue_ops".into(),
        node_name: "qualify_lead".into(),
        timestamp: Utc::now(),
        action: "qualify_lead".into(),
        input_summary: "Acme, 300 seats".into(),
        output_summary: "score 85".into(),
        ..Episode::default()
    };
    stores.episodes.store(&ctx, episode).await.unwrap();
    let mut insight = Insight::new(
        "i-annual",
        "cro",
        "annual plan discounts close deals with large accounts",
        0.85,
    );
    insight.source_episode_ids = vec!["ep-acme".into()];
    stores.insights.store(&ctx, insight).await.unwrap();
    let belief = stores
        .beliefs
        .propose(
            &ctx,
            Belief::new("cro", "Discounts over ten percent need the CFO", 0.9)
                .id("b-cfo")
                .from_insights(["i-annual"], 3),
        )
        .await
        .unwrap();
    let fact = openvibe_protocols::Fact::new("f-script", SCRIPT_FACT);
    stores.facts.store(&ctx, fact).await.unwrap();
    // A goal with three reports, and today's priorities.
    let objective = Objective {
        id: "pipeline".into(),
        owner: "cro".into(),
        title: "Pipeline $2M this quarter".into(),
        due: NaiveDate::from_ymd_opt(2026, 12, 31).unwrap(),
        key_results: vec![KeyResult {
            id: "value".into(),
            metric: "pipeline_usd".into(),
            baseline: 500_000.0,
            target: 2_000_000.0,
            unit: "USD".into(),
            due: None,
        }],
    };
    stores.goals.put(&ctx, Goal::new(objective)).await.unwrap();
    for (i, amount) in [250_000.0, 400_000.0, 300_000.0].into_iter().enumerate() {
        stores
            .goals
            .report(
                &ctx,
                MetricReport::add("cro", "pipeline_usd", amount)
                    .id(format!("rep-{i}"))
                    .note("closed a deal"),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stores
        .goals
        .put_priorities(
            &ctx,
            Priorities::new(
                "cro",
                Utc::now().date_naive(),
                vec![Priority {
                    title: "Close the Acme renewal".into(),
                    reason: "Pipeline $2M this quarter".into(),
                    goal_id: Some("pipeline".into()),
                    action: None,
                }],
            ),
        )
        .await
        .unwrap();
    // A space with a thread: a request and a text.
    let space = stores
        .spaces
        .create(
            &ctx,
            Space::new("deals desk")
                .id("deals")
                .member(Member::new("agent:cro").owning(["revenue"]).admin())
                .member(Member::new("user:ann"))
                .member(Member::new("user:carol")),
        )
        .await
        .unwrap();
    let request = stores
        .spaces
        .post(
            &ctx,
            &space.id,
            SpaceMessage::request("revenue", "case study for Acme", json!({"account": "acme"})),
        )
        .await
        .unwrap();
    let mut reply = SpaceMessage::text("Drafting the case study for Acme now.");
    reply.thread = Some(request.id.clone());
    stores.spaces.post(&ctx, &space.id, reply).await.unwrap();
    cro_ids.extend([
        "raw-acme".to_owned(),
        "ep-acme".to_owned(),
        "i-annual".to_owned(),
        belief.id,
        "f-script".to_owned(),
        "deals".to_owned(),
    ]);
    // Bob's own record, which he sees.
    let bob = governance_ctx("bob");
    stores
        .facts
        .store(
            &bob,
            openvibe_protocols::Fact::new("f-ops", "ops runbook: restart the sync"),
        )
        .await
        .unwrap();
    // Approved proposals run, as a runtime's poll runs them.
    let started = Utc::now() - chrono::Duration::seconds(1);
    let runner = role.clone();
    tokio::spawn(async move {
        loop {
            let _ = runner.resume_proposals(started).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let service = Service::governed(stores.clone(), governance()).with_config(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    World {
        url,
        stores,
        runs,
        proposal,
        cro_ids,
    }
}

/// The caller context `principal`'s key resolves to.
pub fn governance_ctx(principal: &str) -> openvibe_protocols::CallerContext {
    let g = governance();
    let key = match principal {
        "ann" => ANN,
        "carol" => CAROL,
        "bob" => BOB,
        other => panic!("no key for {other}"),
    };
    g.key_context(g.api_key(key).unwrap())
}
