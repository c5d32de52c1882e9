//! Roles that decide (issue 38): groups `decision` (in memory) and
//! `pg_decision` (PostgreSQL, needs `DATABASE_URL`; `cargo xtask bench
//! pg_decision` provides it).
//!
//! - `decision_evaluate_p50_us` / `pg_decision_evaluate_p50_us`: one
//!   `DecisionEngine::evaluate` without a model (domain, authority,
//!   confidence from the role's memory by hybrid retrieval, impact rules,
//!   matrix) for a role with 1,000 insights and 10,000 episodes; in memory
//!   with vectors on (a 384-dimension hash embedder: the model's own cost
//!   is `embed_minilm_per_s`, and a role caches its query vectors) and 100
//!   active beliefs of several domains;
//! - `priority_to_decision_p50_us`: a day's priority made the loop's event
//!   (`priority_event`) and decided by the role (`Role::decide`: standing
//!   rejections read, evaluated, the decision recorded as an episode), the
//!   same role in memory;
//! - `learn_after_event_p50_ms`: one event whose run is a setback through
//!   the whole loop, reflection and learning after it (one role, 1,000
//!   insights, the model a stub answering at once);
//! - `pg_proposal_decide_p50_us`: one person's verdict on a pending
//!   proposal (`ProposalStore::decide`: row lock, checks, update, audit
//!   row), one at a time, over 2,000 proposals.

use std::hint::black_box;

use openvibe_bench::{report, sample};
use openvibe_memory::{
    AgentMemory, ClearanceProfile, MemoryGateway, in_memory_stores_with_embedder,
};
use openvibe_postgres::PgStores;
use openvibe_primitives::FnTool;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_protocols::testing::HashEmbedder;
use openvibe_protocols::{
    Action, Belief, CallerContext, Classification, Clearance, DecisionEvent, Episode, Impact,
    Insight, LlmResponse, Principal, Priorities, Priority, Proposal, Stores, Verdict,
};
use openvibe_roles::{AuthorityConfig, ImpactRules, Role};
use serde_json::json;

const INSIGHTS: u32 = 1_000;
const EPISODES: u32 = 10_000;
const PROPOSALS: u32 = 2_000;
const SCHEMA: &str = "openvibe_bench_decision";
const TOPICS: &[&str] = &[
    "discount",
    "renewal",
    "pricing",
    "pipeline",
    "churn",
    "upsell",
    "contract",
    "onboarding",
];

fn clearance() -> ClearanceProfile {
    ClearanceProfile::new("cro").with_domain("revenue", Classification::Restricted)
}

/// Fill `memory` with the role's insights and episodes.
async fn fill(memory: &AgentMemory, episodes_in_batches: Option<&PgStores>) -> Result<(), String> {
    for i in 0..INSIGHTS {
        let topic = TOPICS[(i as usize) % TOPICS.len()];
        let insight = Insight::new(
            format!("ins{i:05}"),
            "cro",
            format!("{topic} requests from account {i} close when answered within a day"),
            0.5 + f64::from(i % 50) / 100.0,
        )
        .domain("revenue");
        memory
            .store_insight(insight)
            .await
            .map_err(|e| e.to_string())?;
    }
    let episode = |i: u32| {
        let topic = TOPICS[(i as usize) % TOPICS.len()];
        let failed = i.is_multiple_of(9);
        Episode {
            id: format!("ep{i:06}"),
            agent_id: "cro".into(),
            operator_id: "revenue_ops".into(),
            node_name: "act".into(),
            action: "give_discount".into(),
            input_summary: format!("{topic} request of account {i}"),
            output_summary: format!("{topic} handled for account {i}"),
            outcome: json!({"status": if failed { "failed" } else { "ok" }}),
            domain: "revenue".into(),
            entity: format!("account{}", i % 500),
            tags: if failed {
                vec!["failed".into()]
            } else {
                Vec::new()
            },
            ..Episode::default()
        }
    };
    match episodes_in_batches {
        Some(pg) => {
            let ctx = memory.context().clone();
            for start in (0..EPISODES).step_by(1_000) {
                let batch: Vec<Episode> = (start..start + 1_000).map(episode).collect();
                pg.episodes()
                    .store_batch(&ctx, batch)
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        None => {
            for i in 0..EPISODES {
                memory
                    .record_episode(episode(i))
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

fn role(memory: AgentMemory) -> Result<Role, String> {
    Ok(Role::new("cro")
        .domains(["revenue"])
        .authority(AuthorityConfig::new().autonomous(["give_discount"]))
        .impact_rules(
            ImpactRules::new()
                .rule("amount > 10000", Impact::High)
                .map_err(|e| e.to_string())?
                .rule("customer.tier == \"A\" and amount > 1000", Impact::Medium)
                .map_err(|e| e.to_string())?,
        )
        .clearance(clearance())
        .with_agent_memory(memory))
}

fn events() -> Vec<DecisionEvent> {
    (0..200u32)
        .map(|k| {
            let topic = TOPICS[(k as usize) % TOPICS.len()];
            DecisionEvent::new(format!("evt{k}"), "discount.requested", "revenue")
                .summary(format!("account {k} asks about a {topic} on the annual plan"))
                .entity(format!("account{}", k % 500))
                .data(json!({"amount": 500 + k * 137, "customer": {"tier": if k % 3 == 0 { "A" } else { "B" }}}))
                .action(Action::tool("give_discount", "apply_discount", json!({"pct": 10})))
        })
        .collect()
}

/// The p50 of `evaluate` over `events`, in µs.
async fn evaluate_p50(role: &Role) -> f64 {
    let engine = role.decision_engine();
    let events = events();
    let mut next = 0usize;
    let samples = sample(100, 1_000, || {
        let event = &events[next % events.len()];
        next += 1;
        let engine = &engine;
        async move {
            match engine.evaluate(event).await {
                Ok(d) => {
                    black_box(d.outcome);
                }
                Err(e) => eprintln!("evaluate failed: {e}"),
            }
        }
    })
    .await;
    samples.quantile_us(0.50)
}

/// The dimensions of the benchmark's vectors (MiniLM's).
const DIMS: usize = 384;

/// The number of active beliefs of the in-memory role.
const BELIEFS: u32 = 100;

/// Give `memory` [`BELIEFS`] active beliefs, a person approving each; a
/// fifth of them outside the role's domain.
async fn beliefs(memory: &AgentMemory) -> Result<(), String> {
    let ann = CallerContext::user("ann").with_clearance(Clearance::unrestricted());
    for i in 0..BELIEFS {
        let topic = TOPICS[(i as usize) % TOPICS.len()];
        let domain = if i % 5 == 0 { "customer" } else { "revenue" };
        let belief = memory
            .propose_belief(
                Belief::new(
                    "cro",
                    format!("{topic} asks of segment {i} close faster with a VP sponsor"),
                    0.9,
                )
                .domain(domain)
                .from_insights([format!("ins{i:05}")], 5),
            )
            .await
            .map_err(|e| e.to_string())?;
        memory
            .belief_store()
            .decide(&ann, &belief.id, &Verdict::approve("seen it"))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The in-memory role: stores that embed on write, the role's assembler
/// with the same embedder, 1,000 insights, 10,000 episodes, 100 beliefs.
async fn memory_role() -> Result<Role, String> {
    let embedder = std::sync::Arc::new(HashEmbedder::new(DIMS));
    let stores = in_memory_stores_with_embedder(embedder.clone());
    let memory = MemoryGateway::new()
        .with_stores(stores)
        .agent_memory("cro", &clearance());
    fill(&memory, None).await?;
    beliefs(&memory).await?;
    Ok(role(memory)?.with_embedder(embedder))
}

/// The p50 of a priority made an event and decided, in µs.
async fn priority_p50(role: &Role) -> f64 {
    let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 26).unwrap_or_default();
    let items: Vec<Priority> = TOPICS
        .iter()
        .take(3)
        .map(|topic| Priority {
            title: format!("Answer every {topic} request of the annual plan today"),
            reason: format!("{topic} requests close when answered within a day"),
            goal_id: None,
            action: Some(Action::tool(
                "give_discount",
                "apply_discount",
                json!({"pct": 5}),
            )),
        })
        .collect();
    let priorities = Priorities::new("cro", day, items);
    let mut next = 0usize;
    let samples = sample(50, 500, || {
        let index = next % priorities.items.len();
        next += 1;
        let (role, priorities) = (role, &priorities);
        async move {
            let Some(event) = openvibe_roles::priority_event(role, priorities, index) else {
                eprintln!("no event for priority {index}");
                return;
            };
            match role.decide(&event).await {
                Ok(d) => {
                    black_box(d.outcome);
                }
                Err(e) => eprintln!("decide failed: {e}"),
            }
        }
    })
    .await;
    samples.quantile_us(0.50)
}

/// The p50 of one setback event through the loop with learning after it,
/// in ms.
async fn learn_after_event_p50() -> Result<f64, String> {
    use openvibe_roles::{CognitiveLoop, EventSource, InMemoryJournal, LoopConfig, RoleRuntime};
    let stores = openvibe_memory::in_memory_stores();
    let memory = MemoryGateway::new()
        .with_stores(stores.clone())
        .agent_memory("cro", &clearance());
    for i in 0..INSIGHTS {
        let topic = TOPICS[(i as usize) % TOPICS.len()];
        let mut insight = Insight::new(
            format!("ins{i:05}"),
            "cro",
            format!("{topic} requests from account {i} close when answered within a day"),
            0.5 + f64::from(i % 50) / 100.0,
        )
        .domain("revenue");
        insight.evidence_count = 1 + u64::from(i % 4);
        memory
            .store_insight(insight)
            .await
            .map_err(|e| e.to_string())?;
    }
    let stalled = FnTool::new(
        "apply_discount",
        "Apply a discount.",
        |_d: serde_json::Value| async move {
            Ok::<_, String>(
                r#"{"status": "stalled", "summary": "stalled in procurement"}"#.to_owned(),
            )
        },
    );
    let matrix = serde_json::from_value(json!({"outcomes": {"low": {"low": "act"}}}))
        .map_err(|e| e.to_string())?;
    let role = role(memory)?
        .decision_matrix(matrix)
        .with_proposals(stores.proposals.clone())
        .action_tool(stalled);
    let runtime = std::sync::Arc::new(
        RoleRuntime::new(std::sync::Arc::new(ScriptedLlm::always(LlmResponse::text(
            "[]",
        ))))
        .with_stores(stores)
        .role(role)
        .map_err(|e| e.to_string())?,
    );
    let cognitive = CognitiveLoop::with_config(
        runtime,
        std::sync::Arc::new(InMemoryJournal::new()),
        LoopConfig::default(),
    );
    let events = events();
    let mut next = 0usize;
    let failed = std::cell::Cell::new(0usize);
    let samples = sample(10, 200, || {
        let mut event = events[next % events.len()].clone();
        event.id = format!("learn-{next}");
        event.data = json!({"amount": 500});
        next += 1;
        let (cognitive, failed) = (&cognitive, &failed);
        async move {
            match cognitive.run_event("cro", event, EventSource::Code).await {
                Ok(trace) if trace.reflected_after_experience() => {
                    black_box(trace);
                }
                Ok(trace) => {
                    failed.set(failed.get() + 1);
                    eprintln!(
                        "no learning after {}: {:?}",
                        trace.event.id,
                        trace.stages.last()
                    );
                }
                Err(e) => {
                    failed.set(failed.get() + 1);
                    eprintln!("the loop failed: {e}");
                }
            }
        }
    })
    .await;
    if failed.get() > 0 {
        return Err(format!("{} events did not learn after", failed.get()));
    }
    Ok(samples.quantile_us(0.50) / 1_000.0)
}

/// Run the in-memory group.
pub async fn run_memory() {
    match memory_role().await {
        Ok(role) => {
            report("decision_evaluate_p50_us", evaluate_p50(&role).await, "us");
            report(
                "priority_to_decision_p50_us",
                priority_p50(&role).await,
                "us",
            );
        }
        Err(e) => eprintln!("decision: {e}"),
    }
    match learn_after_event_p50().await {
        Ok(ms) => report("learn_after_event_p50_ms", ms, "ms"),
        Err(e) => eprintln!("decision: learning after an event: {e}"),
    }
}

async fn proposals_p50(stores: &Stores, role_ctx: &CallerContext) -> Result<f64, String> {
    let mut ids = Vec::new();
    for i in 0..PROPOSALS {
        let p = Proposal::new(
            "cro",
            format!("discount for account {i}"),
            Action::tool("give_discount", "apply_discount", json!({"pct": 10})),
        )
        .id(format!("bench-proposal-{i}"))
        .domain("revenue");
        ids.push(
            stores
                .proposals
                .create(role_ctx, p)
                .await
                .map_err(|e| e.to_string())?
                .id,
        );
    }
    let person = CallerContext::new(role_ctx.tenant_id(), Principal::user("ann"))
        .with_clearance(Clearance::unrestricted());
    let mut next = 0usize;
    let failed = std::cell::Cell::new(0usize);
    let samples = sample(100, (PROPOSALS - 100) as usize, || {
        let id = ids[next % ids.len()].clone();
        next += 1;
        let (stores, person, failed) = (stores, &person, &failed);
        async move {
            let verdict = if next.is_multiple_of(2) {
                Verdict::approve("within budget")
            } else {
                Verdict::reject("too much")
            };
            if let Err(e) = stores.proposals.decide(person, &id, &verdict).await {
                failed.set(failed.get() + 1);
                eprintln!("decide failed: {e}");
            }
        }
    })
    .await;
    if failed.get() > 0 {
        return Err(format!("{} verdicts failed", failed.get()));
    }
    Ok(samples.quantile_us(0.50))
}

async fn run_pg_inner(url: &str) -> Result<(), String> {
    crate::pg::drop_schema(url, SCHEMA).await?;
    let pool = crate::pg::schema_pool(url, SCHEMA, 4).await?;
    let pg = PgStores::from_pool(pool);
    let stores = pg.stores();
    let ctx = CallerContext::agent("cro")
        .with_tenant(crate::pg::TENANT)
        .with_clearance(clearance().clearance());
    let memory = AgentMemory::new("cro")
        .with_stores(stores.episodes.clone(), stores.insights.clone())
        .with_context(ctx.clone());
    fill(&memory, Some(&pg)).await?;
    let role = role(memory)?;
    report(
        "pg_decision_evaluate_p50_us",
        evaluate_p50(&role).await,
        "us",
    );
    report(
        "pg_proposal_decide_p50_us",
        proposals_p50(&stores, &ctx).await?,
        "us",
    );
    Ok(())
}

/// Run the PostgreSQL group.
pub async fn run_pg() {
    let Some(url) = openvibe_bench::database_url("pg_decision") else {
        return;
    };
    if let Err(e) = run_pg_inner(&url).await {
        eprintln!("pg_decision: benchmark failed: {e}");
    }
}
