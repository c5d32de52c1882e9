//! The source design's full example (section 4), runnable: a CRO role that
//! owns `RevenueOps` (`qualify_lead`, `enrich_lead`) and asks a CMO, who
//! owns marketing and `ContentEngine` (`write_case_study`), for a case
//! study through their space (V4 delegation), loaded by [`RoleRuntime::with_config_path`] from a
//! configuration directory (roles, soul, operator prompts and triggers in
//! files; `examples/full/` in this crate), with the memory pyramid it
//! leaves behind: every LLM call in the raw log (L1), one episode per node
//! run (L2), insights distilled from them (L3) and published to the
//! workspace.
//!
//! `cargo run -p openvibe --example full` and `openvibe demo --full` run
//! it offline from the recorded [`CASSETTE`]; the tools are stand-ins
//! (a CRM and a web search over a few fixed records).

use std::path::Path;

use openvibe_memory::{Decisions, Distillation, MemoryFilesystem, MemoryPyramid};
use openvibe_operators::config::OperatorConfig;
use openvibe_operators::{CompiledGraph, END, OperatorRuntime, StateGraph};
use openvibe_primitives::{AgentNode, FnTool, LlmNode, Node, ScopeSpec};
use openvibe_protocols::{
    Action, DecisionEvent, Episode, EpisodeQuery, Insight, RawCall, RawCallQuery, State,
};
use openvibe_protocols::{GoalProgress, Priorities};
use openvibe_roles::config::OPERATORS_FILE;
use openvibe_roles::{Handled, Prioritization};

use crate::RoleRuntime;

/// The configuration directory, compiled in (path relative to it, text),
/// so that `openvibe demo --full` runs anywhere ([`write_config`]).
pub const CONFIG_FILES: &[(&str, &str)] = &[
    ("roles.yaml", include_str!("../examples/full/roles.yaml")),
    (
        "souls/cro.md",
        include_str!("../examples/full/souls/cro.md"),
    ),
    (
        "souls/cmo.md",
        include_str!("../examples/full/souls/cmo.md"),
    ),
    (
        "operators.yaml",
        include_str!("../examples/full/operators.yaml"),
    ),
    (
        "prompts/case_study.md",
        include_str!("../examples/full/prompts/case_study.md"),
    ),
    ("goals.yaml", include_str!("../examples/full/goals.yaml")),
];

/// The CRO's objective in `goals.yaml`.
pub const OBJECTIVE: &str = "pipeline-q4";

/// The day the example's scheduler prioritizes (its clock starts just
/// before 06:00 UTC that day, when the daily prioritization is due), so
/// that the prompts, and so the recorded answers, are the same every run.
pub fn example_day() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(2026, 11, 26).unwrap_or_default()
}

/// The recorded model answers the example replays (recorded from the
/// stand-in model, `stand_in` with the `testing` feature, by
/// `openvibe demo --full --llm standin --record FILE`).
pub const CASSETTE: &str = include_str!("../examples/full/cassette.jsonl");

/// The sentence vectors the example ranks memory with: all-MiniLM-L6-v2's,
/// recorded once (`openvibe demo --full --embedder local
/// --record-embeddings FILE`) and replayed, so that evidence reaches
/// decisions by meaning offline and identically everywhere.
pub const EMBEDDINGS: &str = include_str!("../examples/full/embeddings.jsonl");

/// [`EMBEDDINGS`] as an embedder that replays them (feature `testing`).
///
/// # Errors
/// [`EmbedError::Model`](openvibe_protocols::EmbedError::Model) when the
/// recording is not a cassette.
#[cfg(feature = "testing")]
pub fn embeddings()
-> Result<openvibe_primitives::testing::RecordReplayEmbedder, openvibe_protocols::EmbedError> {
    openvibe_primitives::testing::RecordReplayEmbedder::replay_str(
        EMBEDDINGS,
        "examples/full/embeddings.jsonl",
    )
}

/// The lead the example qualifies and enriches.
pub const LEAD: &str =
    "Acme Logistics, 450 employees, VP Operations attended the route-planning webinar";

/// The customer the case study is about.
pub const CUSTOMER: &str = "Acme Logistics";

/// Write [`CONFIG_FILES`] under `dir` (created when missing).
pub fn write_config(dir: &Path) -> std::io::Result<()> {
    for (name, text) in CONFIG_FILES {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// The CRM the `search_hubspot` stand-in searches. A deal's record names
/// its opportunity as a metric: the CRO's agent node calling the tool moves
/// the pipeline key result (the tool gate reports it, once per call).
const CRM: &[(&str, &str)] = &[
    (
        "acme logistics",
        r#"{"company": "Acme Logistics", "employees": 450, "stage": "evaluation", "owner": "J. Rivera", "last_touch": "webinar follow-up call", "metric": {"name": "pipeline_usd", "value": 180000, "note": "Acme Logistics: open opportunity in evaluation, 450 seats"}}"#,
    ),
    (
        "globex",
        r#"{"company": "Globex", "employees": 1200, "stage": "customer", "owner": "M. Chen", "last_touch": "renewal signed"}"#,
    ),
];

/// What the `search_web` stand-in finds.
const WEB: &[(&str, &str)] = &[(
    "acme logistics",
    "Acme Logistics cut empty truck miles by 18% in six months after moving route planning to our platform (press release, March).",
)];

fn lookup(table: &[(&str, &str)], query: &str) -> String {
    let query = query.to_lowercase();
    table
        .iter()
        .filter(|(key, _)| query.contains(key) || key.contains(query.trim()))
        .map(|(_, record)| *record)
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    /// What to search for.
    query: String,
}

fn one_node(node: impl Node + 'static) -> Result<CompiledGraph, openvibe_operators::Error> {
    let name = node.name().to_owned();
    StateGraph::new()
        .add_node(node)
        .set_entry_point(&name)
        .add_edge(&name, END)
        .compile()
}

fn qualify_lead(cfg: &OperatorConfig) -> Result<CompiledGraph, openvibe_operators::Error> {
    one_node(
        cfg.apply_llm(LlmNode::new("qualify_lead", "", |s: &State| {
            Ok(format!("Score this lead: {}", s.require_str("lead_data")?))
        }))
        .output_key("score")
        .memory_scope(
            ScopeSpec::new()
                .domain("revenue")
                .entity_from_key("company"),
        ),
    )
}

fn enrich_lead(cfg: &OperatorConfig) -> Result<CompiledGraph, openvibe_operators::Error> {
    let search_hubspot = FnTool::new(
        "search_hubspot",
        "Search HubSpot CRM for contacts and deals.",
        |q: Query| async move { Ok::<_, String>(lookup(CRM, &q.query)) },
    )
    .action("read_crm");
    one_node(
        cfg.apply_agent(AgentNode::new("enrich_lead", "", |s: &State| {
            Ok(format!("Enrich: {}", s.require_str("lead_data")?))
        }))
        .tool(search_hubspot)
        .max_turns(4)
        .output_key("enriched")
        .memory_scope(
            ScopeSpec::new()
                .domain("revenue")
                .entity_from_key("company"),
        ),
    )
}

fn write_case_study(cfg: &OperatorConfig) -> Result<CompiledGraph, openvibe_operators::Error> {
    let search_web = FnTool::new(
        "search_web",
        "Search the web (a stand-in over a few fixed pages).",
        |q: Query| async move { Ok::<_, String>(lookup(WEB, &q.query)) },
    )
    .action("search_web");
    one_node(
        cfg.apply_agent(AgentNode::new("write_case_study", "", |s: &State| {
            Ok(format!(
                "Write case study for: {}",
                s.require_str("customer")?
            ))
        }))
        .tool(search_web)
        .max_turns(4)
        .output_key("draft")
        .memory_scope(
            ScopeSpec::new()
                .domain("marketing")
                .entity_from_key("company"),
        ),
    )
}

/// The operators of `config_path`'s `operators.yaml` with their workflows
/// registered: `RevenueOps` and `ContentEngine`.
pub fn operators(config_path: &Path) -> Result<OperatorRuntime, openvibe_operators::Error> {
    let mut operators = OperatorRuntime::from_yaml(config_path.join(OPERATORS_FILE))?;
    operators.register_workflow("revenue_ops", "qualify_lead", qualify_lead)?;
    operators.register_workflow("revenue_ops", "enrich_lead", enrich_lead)?;
    operators.register_workflow("content_engine", "write_case_study", write_case_study)?;
    Ok(operators)
}

/// What one run of the example produced.
#[derive(Debug)]
pub struct FullRun {
    /// The final states of the three steps, in order: the CRO's
    /// `qualify_lead` and `enrich_lead`, and the case study the CMO wrote
    /// when the CRO asked it (`write_case_study`, delegated).
    pub states: Vec<(String, State)>,
    /// The CRO's memory pyramid.
    pub pyramid: MemoryPyramid,
    /// The reflection and what it published.
    pub distillation: Distillation,
    /// Every raw call of the role, newest first.
    pub raw_calls: Vec<RawCall>,
    /// Every episode of the role, newest first.
    pub episodes: Vec<Episode>,
    /// The role's memory as a filesystem (`/raw/` included).
    pub filesystem: MemoryFilesystem,
    /// The discount requests of [`discount_events`], each handled by the
    /// CRO: what it decided (and why), what ran, what waits for a person.
    pub decisions: Vec<Handled>,
    /// The runtime, to run what a person approves
    /// ([`RoleRuntime::run_approved`]) and to run the CRO's cognitive loop
    /// ([`two_weeks`]).
    pub runtime: std::sync::Arc<RoleRuntime>,
    /// The case study's request in the CMO's loop: how the CMO decided
    /// (its brand beliefs as evidence), what ran, and the answer it sent.
    pub delegation: openvibe_protocols::LoopTrace,
    /// Where the CRO's goals stood when `goals.yaml` was loaded.
    pub goals_before: Vec<GoalProgress>,
    /// Where they stand after the lead was qualified and enriched (the
    /// qualifying node reported a qualified lead, the enriching agent's CRM
    /// tool call the opportunity), with the objective's initiatives.
    pub goals: Vec<GoalProgress>,
    /// The metric reports that moved them, oldest first: the qualifying
    /// node's (its episode) and the CRM tool call's (`call-…`).
    pub reports: Vec<openvibe_protocols::MetricReport>,
    /// The CRO's priorities of [`example_day`], set by the scheduler's
    /// daily prioritization.
    pub priorities: Priorities,
    /// The day's work in the CRO's loop: each priority, then each open
    /// initiative, decided like any event (the case studies' initiative is
    /// marketing's: delegated to the CMO through the space).
    pub worked: Vec<openvibe_protocols::LoopTrace>,
    /// Where the goals stand after the day's work, its initiatives' status
    /// with them.
    pub goals_after: Vec<GoalProgress>,
}

/// The insight the CRO's pricing playbook gives it before the discount
/// requests (stored as an L3 insight of the role, so the decision engine
/// finds it as evidence).
pub const PLAYBOOK: &str =
    "Annual-plan discounts of up to 10% close mid-market logistics deals faster";

/// Three requests the CRO decides on (seed 001, V3), one per outcome:
/// a small discount it is confident about (act), a large one (propose: a
/// person approves it, then it runs once), and signing the contract, which
/// its authority forbids (refuse: never runs).
pub fn discount_events() -> Vec<DecisionEvent> {
    let discount = |pct: u32| {
        Action::tool(
            "give_discount",
            "apply_discount",
            serde_json::json!({"customer": CUSTOMER, "pct": pct}),
        )
    };
    vec![
        DecisionEvent::new("deal-small", "discount.requested", "revenue")
            .summary("Acme Logistics asks 5% off a 4,000 annual plan")
            .entity("acme_logistics")
            .data(serde_json::json!({"amount": 4000, "customer": {"tier": "B"}}))
            .action(discount(5)),
        DecisionEvent::new("deal-large", "discount.requested", "revenue")
            .summary("Acme Logistics asks 10% off a 48,000 annual plan")
            .entity("acme_logistics")
            .data(serde_json::json!({"amount": 48000, "customer": {"tier": "B"}}))
            .action(discount(10)),
        DecisionEvent::new("deal-sign", "contract.ready", "revenue")
            .summary("Acme Logistics' contract is ready to sign")
            .entity("acme_logistics")
            .data(serde_json::json!({"amount": 48000}))
            .action(Action::tool(
                "sign_contracts",
                "sign_contract",
                serde_json::json!({"customer": CUSTOMER}),
            )),
    ]
}

/// Two weeks of leads, compressed (seed 001, V4): day by day, what the
/// CRO's cognitive loop perceives. Week 1: logistics leads whose VP
/// attended the webinar, each followed up; week 2, after a price change,
/// such deals stall in procurement. On day 12 a customer's renewal (the
/// `customer` domain) asks for a discount in words that share none with
/// what the CRO learned about procurement, but mean the same trouble. A
/// reflection event ends days 3, 10 and 14.
pub fn two_weeks() -> Vec<(u32, DecisionEvent)> {
    let lead = |day: u32, company: &str, note: &str| {
        (
            day,
            DecisionEvent::new(
                format!("lead-day{day:02}-{company}"),
                "lead.arrived",
                "revenue",
            )
            .summary(format!(
                "Day {day}: webinar lead {company}, logistics, its VP attended"
            ))
            .entity(company.to_owned())
            .data(serde_json::json!({"amount": 0}))
            .action(Action::tool(
                "follow_up_lead",
                "schedule_follow_up",
                serde_json::json!({"company": company, "note": note}),
            )),
        )
    };
    let reflect = |day: u32| {
        (
            day,
            DecisionEvent::new(
                format!("reflect-day{day:02}"),
                openvibe_protocols::REFLECT_EVENT,
                "",
            )
            .summary(format!("Day {day}: the reflection schedule")),
        )
    };
    vec![
        lead(1, "northwind_freight", "VP Operations booked a demo"),
        lead(2, "contoso_cargo", "VP Supply Chain asked for pricing"),
        lead(3, "fabrikam_haulage", "VP Operations scored 88"),
        reflect(3),
        lead(4, "tailspin_trucking", "VP Logistics booked a demo"),
        lead(6, "adatum_shipping", "VP Operations asked for a pilot"),
        lead(7, "litware_lines", "VP Fleet scored 84"),
        lead(
            8,
            "wingtip_transport",
            "stalled in procurement since the price change",
        ),
        lead(
            9,
            "proseware_logistics",
            "stalled in procurement since the price change",
        ),
        reflect(10),
        lead(
            11,
            "lucerne_freight",
            "stalled in procurement since the price change",
        ),
        (
            12,
            DecisionEvent::new("renewal-day12-contoso_cargo", "renewal.held", "customer")
                .summary(RENEWAL)
                .entity("contoso_cargo")
                .data(serde_json::json!({"amount": 600}))
                .action(Action::tool(
                    "give_discount",
                    "apply_discount",
                    serde_json::json!({"customer": "contoso_cargo", "pct": 5}),
                )),
        ),
        lead(
            13,
            "woodgrove_carriers",
            "stalled in procurement since the price change",
        ),
        reflect(14),
    ]
}

/// Day 12 of [`two_weeks`]: a customer's renewal held over the new rates,
/// worded with none of the words of what the CRO learns about the price
/// change (a belief reaches it by meaning only).
pub const RENEWAL: &str =
    "Day 12: contoso_cargo's purchasing team holds its renewal over our new rates";

/// One day of [`run_two_weeks`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Day {
    /// The day (1 to 14).
    pub day: u32,
    /// The event's path through the CRO's loop.
    pub trace: openvibe_protocols::LoopTrace,
    /// After a reflection (on the schedule, or after experience): the CRO's
    /// revenue insights.
    pub insights: Vec<openvibe_protocols::Insight>,
    /// After a reflection: the beliefs the learn step proposed, each with
    /// what its approver said.
    pub proposed: Vec<(openvibe_protocols::Belief, String)>,
    /// The proposal of the day a person rejected, and why: the first
    /// follow-up proposed since deals stalled ([`REJECTION`]).
    pub rejected: Option<(String, String)>,
    /// What a belief changed: for each belief the day's decision cites
    /// whose absence would have changed its outcome, that belief's id and
    /// the decision without it ([`Role::decide_without`](openvibe_roles::Role::decide_without),
    /// which writes nothing).
    pub moved_by: Vec<(String, openvibe_protocols::Decision)>,
}

/// Why [`APPROVER`] rejects the first follow-up the CRO proposes once
/// deals stall: the next like decision cites the rejection.
pub const REJECTION: &str = "procurement is frozen since the price change: hold webinar follow-ups until the new price list is out";

/// The CRO's cognitive loop over [`two_weeks`] (learning insights observed
/// at least twice): each proposed belief is handed to `approve` (a person,
/// e.g. `openvibe beliefs approve`), which says what happened.
pub async fn run_two_weeks<F, Fut>(run: &FullRun, mut approve: F) -> Result<Vec<Day>, Error>
where
    F: FnMut(openvibe_protocols::Belief) -> Fut,
    Fut: std::future::Future<Output = Result<String, String>>,
{
    use openvibe_roles::{CognitiveLoop, InMemoryJournal, Learning, LoopConfig};
    let config = LoopConfig::default().learning(Learning::default().min_evidence(2));
    let cognitive = CognitiveLoop::with_config(
        run.runtime.clone(),
        std::sync::Arc::new(InMemoryJournal::new()),
        config,
    );
    let memory = run.pyramid.memory();
    let stores = run.runtime.stores().ok_or(Error::NoMemory)?;
    let person = openvibe_protocols::CallerContext::user("ann")
        .with_tenant(memory.context().tenant_id().to_owned())
        .with_clearance(openvibe_protocols::Clearance::unrestricted());
    let mut days = Vec::new();
    let mut rejected_one = false;
    let role = run.runtime.get_role("cro")?;
    for (day, event) in two_weeks() {
        let trace = cognitive
            .run_event("cro", event.clone(), openvibe_protocols::EventSource::Code)
            .await?;
        let moved_by = match &trace.decision {
            Some(decision) => moved_by(role, &event, decision).await?,
            None => Vec::new(),
        };
        let mut step = Day {
            day,
            trace,
            insights: Vec::new(),
            proposed: Vec::new(),
            rejected: None,
            moved_by,
        };
        // The first follow-up proposed once deals stall: a person rejects
        // it, with the reason (the next like decision cites it).
        if let Some(openvibe_protocols::ActOutcome::Proposed { proposal_id }) = &step.trace.act
            && !rejected_one
            && step.trace.event.summary.contains("webinar lead")
        {
            stores
                .proposals
                .decide(
                    &person,
                    proposal_id,
                    &openvibe_protocols::Verdict::reject(REJECTION),
                )
                .await
                .map_err(openvibe_memory::MemoryError::from)?;
            step.rejected = Some((proposal_id.clone(), REJECTION.to_owned()));
            rejected_one = true;
        }
        if step.trace.is_reflection() || step.trace.reflected_after_experience() {
            step.insights = memory
                .recall_insights(
                    openvibe_protocols::InsightQuery::new()
                        .domain("revenue")
                        .limit(10),
                )
                .await?;
            for belief in memory.all_beliefs().await? {
                if belief.status == openvibe_protocols::BeliefStatus::Proposed {
                    let said = approve(belief.clone()).await.map_err(Error::Approval)?;
                    step.proposed.push((belief, said));
                }
            }
        }
        days.push(step);
    }
    Ok(days)
}

/// The beliefs `decision` (on `event`) cites whose absence would have
/// changed its outcome, each with the decision without it: what-ifs asked
/// after the decision (nothing is written), over memory as it is then less
/// the run the decision made. None when that memory no longer gives the
/// same decision (what was learned since moved it), so that a what-if is
/// shown only beside the decision it varies.
async fn moved_by(
    role: &openvibe_roles::Role,
    event: &DecisionEvent,
    decision: &openvibe_protocols::Decision,
) -> Result<Vec<(String, openvibe_protocols::Decision)>, Error> {
    let run = openvibe_roles::run_episode_id(&decision.id);
    let again = role.decide_without(event, &[run.as_str()]).await?;
    if again.outcome != decision.outcome
        || (again.confidence.score - decision.confidence.score).abs() > 1e-9
    {
        return Ok(Vec::new());
    }
    let mut moved = Vec::new();
    for belief in decision
        .confidence
        .evidence
        .iter()
        .filter(|e| e.kind == openvibe_protocols::EvidenceKind::Belief)
    {
        let without = role
            .decide_without(event, &[run.as_str(), belief.id.as_str()])
            .await?;
        if without.outcome != decision.outcome {
            moved.push((belief.id.clone(), without));
        }
    }
    Ok(moved)
}

/// The CRO's key results behind their pace `days` days from now (the
/// two weeks gone): each files an escalation for a person, with the
/// numbers, once per period.
pub async fn pace_after(
    run: &FullRun,
    days: i64,
) -> Result<Vec<openvibe_roles::BehindPace>, Error> {
    let at = chrono::Utc::now() + chrono::Duration::days(days);
    Ok(run
        .runtime
        .get_role("cro")?
        .goals()?
        .check_pace(
            at,
            openvibe_roles::DEFAULT_PACE_MARGIN,
            openvibe_roles::PACE_PERIOD_DAYS,
        )
        .await?)
}

/// The CRO's follow-up tool (a stand-in for the CRM's task list).
fn schedule_follow_up() -> impl openvibe_primitives::Tool + use<> {
    FnTool::new(
        "schedule_follow_up",
        "Schedule a follow-up with a lead.",
        |input: serde_json::Value| async move {
            let company = input["company"].as_str().unwrap_or("?").to_owned();
            let note = input["note"].as_str().unwrap_or("").to_owned();
            let result = format!("follow-up scheduled with {company}: {note}");
            // The CRM says when a deal went against the plan: a setback.
            Ok::<_, String>(if note.starts_with("stalled") {
                serde_json::json!({"status": "stalled", "result": result}).to_string()
            } else {
                result
            })
        },
    )
}

/// The CRO's discount tool (a stand-in for the billing system).
fn apply_discount() -> impl openvibe_primitives::Tool + use<> {
    FnTool::new(
        "apply_discount",
        "Apply a discount to a customer's annual plan.",
        |input: serde_json::Value| async move {
            let customer = input["customer"].as_str().unwrap_or("?").to_owned();
            let pct = input["pct"].as_u64().unwrap_or(0);
            Ok::<_, String>(format!(
                "{pct}% discount applied to {customer}'s annual plan"
            ))
        },
    )
}

/// What can stop the example.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration or a role failed.
    #[error(transparent)]
    Role(#[from] openvibe_roles::Error),
    /// The operators file or a workflow failed.
    #[error(transparent)]
    Operator(#[from] openvibe_operators::Error),
    /// Memory failed.
    #[error(transparent)]
    Memory(#[from] openvibe_memory::MemoryError),
    /// The configuration's `cro` role has no clearance, so no memory.
    #[error("role `cro` has no clearance in roles.yaml, so it has no memory pyramid to show")]
    NoMemory,
    /// A person's approval in [`run_two_weeks`] failed.
    #[error("approving a belief failed: {0}")]
    Approval(String),
    /// The scheduler's prioritization did not run (or failed).
    #[error("the scheduled prioritization of the CRO did not run: {0}")]
    Prioritization(String),
    /// The CRO's delegation to the CMO did not come back as a state.
    #[error("the case study the CMO wrote is not a state: {0}")]
    Delegation(String),
}

/// Run the example with the configuration in `config_path` on `runtime`
/// (its model, stores and tenant; the roles come from the directory): the
/// CRO qualifies and enriches [`LEAD`], asks the CMO (in the space
/// [`SPACE`]) for a case study about [`CUSTOMER`], which the CMO's loop
/// decides on with its [`BRAND_BELIEFS`] and writes, then reflects (through its own LLM, so the reflection is
/// in the raw log too) and publishes what it learned. Its goals
/// (`goals.yaml`) are put in the goal store first; qualifying the lead
/// reports the metrics that move them; the model decomposes the objective,
/// and a scheduler (its clock just before 06:00 UTC on [`example_day`]
/// when it registers the schedules) runs the daily prioritization.
///
/// ```
/// # #[cfg(feature = "testing")] // the stand-in model is a test double
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use openvibe::full_example;
/// use openvibe::{RoleRuntime, memory::in_memory_stores};
///
/// let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/full");
/// let runtime = RoleRuntime::new(Arc::new(full_example::stand_in())).with_stores(in_memory_stores());
/// let run = full_example::run(&config, runtime).await?;
/// assert_eq!(run.states.len(), 3);
/// // The CRO's 1 + 2 node calls, the decomposition, the prioritization, the
/// // reflection (the case study's calls are the CMO's)
/// assert_eq!(run.raw_calls.len(), 6);
/// assert!(run.delegation.render().contains("answered done"));
/// assert_eq!(run.priorities.items.len(), 3);
/// assert!(run.goals[0].progress > run.goals_before[0].progress);
/// # Ok::<(), full_example::Error>(())
/// # }).unwrap();
/// ```
pub async fn run(config_path: &Path, runtime: RoleRuntime) -> Result<FullRun, Error> {
    let operators = operators(config_path)?;
    let runtime = openvibe_roles::config::load_roles(config_path, &operators)?
        .into_iter()
        .map(|role| {
            if role.role_id() == "cro" {
                role.action_tool(apply_discount())
                    .action_tool(schedule_follow_up())
            } else {
                role
            }
        })
        .try_fold(runtime, RoleRuntime::role)?;
    // The objectives people set (goals.yaml), put in the goal store; the
    // daily prioritization runs on a scheduler whose clock reads just
    // before it is due when the schedules are registered.
    let dawn = example_day()
        .and_hms_milli_opt(5, 59, 59, 700)
        .unwrap_or_default()
        .and_utc();
    let scheduler = openvibe_schedule::InProcessScheduler::with_clock(std::sync::Arc::new(
        FirstReadClock::new(dawn),
    ));
    let runtime = runtime
        .with_goals(openvibe_roles::goals::load_goals(config_path, &["cro"])?)
        .with_scheduler(std::sync::Arc::new(scheduler))
        .with_prioritization(Prioritization::daily())
        .with_space(SPACE, [APPROVER]);
    runtime.sync_goals().await?;
    let goals_before = runtime.get_role("cro")?.goals()?.progress().await?;
    let lead: State = [("lead_data", LEAD), ("company", "acme_logistics")]
        .into_iter()
        .collect();
    let customer: State = [("customer", CUSTOMER), ("company", "acme_logistics")]
        .into_iter()
        .collect();
    let mut states = Vec::new();
    for (operator, workflow, input) in [
        ("revenue_ops", "qualify_lead", lead.clone()),
        ("revenue_ops", "enrich_lead", lead),
    ] {
        let out = runtime.activate("cro", operator, workflow, input).await?;
        states.push((format!("{operator}/{workflow}"), out));
    }
    // The case study is marketing's: the CRO asks the owner of `marketing`
    // in the team's space, and the CMO's loop decides (its brand beliefs are
    // its evidence), runs its Content Engine and answers.
    let runtime = std::sync::Arc::new(runtime);
    brand_beliefs(&runtime).await?;
    let (case_study, delegation) = delegate_case_study(&runtime, customer).await?;
    states.push(("cro → cmo: write_case_study".to_owned(), case_study));
    let role = runtime.get_role("cro")?;
    // The objective's initiatives (the model, once per version of it), then
    // the day's priorities, run by the scheduler.
    role.goals()?.decompose(OBJECTIVE).await?;
    let priorities = prioritize_by_schedule(&runtime).await?;
    let goals = role.goals()?.progress().await?;
    let reports = runtime
        .stores()
        .ok_or(Error::NoMemory)?
        .goals
        .reports(
            &role.proposal_context(),
            &openvibe_protocols::ReportQuery::new("cro"),
        )
        .await
        .map_err(openvibe_memory::MemoryError::from)?
        .items;
    let pyramid = role.pyramid().ok_or(Error::NoMemory)?;
    let filesystem = role.filesystem()?.ok_or(Error::NoMemory)?;
    let distillation = pyramid.distill(role.llm()?.as_ref(), 0.5).await?;
    let query = RawCallQuery::new().limit(100);
    let raw_calls = openvibe_protocols::Page::all(|cursor| {
        let query = match cursor {
            Some(cursor) => query.clone().cursor(cursor),
            None => query.clone(),
        };
        pyramid.raw(query)
    })
    .await?;
    let episodes = pyramid.episodes(EpisodeQuery::new().limit(100)).await?;
    let memory = role.agent_memory().ok_or(Error::NoMemory)?;
    memory
        .store_insight(
            Insight::new("cro-playbook-discounts", "cro", PLAYBOOK, 0.9).domain("revenue"),
        )
        .await?;
    let mut decisions = Vec::new();
    for event in discount_events() {
        decisions.push(runtime.handle("cro", &event).await?);
    }
    let worked = work_the_day(&runtime, &priorities).await?;
    let goals_after = role.goals()?.progress().await?;
    Ok(FullRun {
        states,
        pyramid,
        distillation,
        raw_calls,
        episodes,
        filesystem,
        decisions,
        runtime,
        delegation,
        goals_before,
        goals,
        reports,
        priorities,
        worked,
        goals_after,
    })
}

/// Run `runtime`'s loop in the background while `work` runs (the CMO's
/// loop answers the CRO's requests meanwhile); what `work` gave.
async fn with_loop_running<T, F, Fut>(
    runtime: &std::sync::Arc<RoleRuntime>,
    work: F,
) -> Result<T, Error>
where
    F: FnOnce(std::sync::Arc<openvibe_roles::CognitiveLoop>) -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    use openvibe_roles::{CognitiveLoop, InMemoryJournal};
    runtime.join_space().await?;
    let cognitive = std::sync::Arc::new(CognitiveLoop::new(
        runtime.clone(),
        std::sync::Arc::new(InMemoryJournal::new()),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let looping = cognitive.clone();
    let running = tokio::spawn(async move {
        looping
            .run(async move {
                let _ = stopped.await;
            })
            .await
    });
    let done = work(cognitive).await;
    let _ = stop.send(());
    running
        .await
        .map_err(|e| Error::Delegation(e.to_string()))??;
    done
}

/// The day's work (issue 64): each of the CRO's priorities, then each of
/// its open initiatives, through its loop, one after the other, while the
/// CMO's loop runs (it takes the initiative delegated to it); the traces.
async fn work_the_day(
    runtime: &std::sync::Arc<RoleRuntime>,
    priorities: &Priorities,
) -> Result<Vec<openvibe_protocols::LoopTrace>, Error> {
    let role = runtime.get_role("cro")?;
    let mut events = openvibe_roles::priority_events(role, priorities);
    events.extend(openvibe_roles::initiative_events(role).await?);
    with_loop_running(runtime, |cognitive| async move {
        let mut traces = Vec::with_capacity(events.len());
        for event in events {
            traces.push(
                cognitive
                    .run_event("cro", event, openvibe_protocols::EventSource::Trigger)
                    .await?,
            );
        }
        Ok(traces)
    })
    .await
}

/// The space the CRO and the CMO work together in.
pub const SPACE: &str = "team";

/// The person of the example: a member of the space, who approves.
pub const APPROVER: &str = "user:ann";

/// The CMO's brand beliefs: what a person approved it holds true (L4),
/// in its prompts and its decisions' evidence.
pub const BRAND_BELIEFS: &[&str] = &[
    "Case studies name the customer's problem and one measured result",
    "A case study goes out only once the customer approved it",
];

/// Give the CMO its brand beliefs: proposed, then approved by
/// [`APPROVER`] (idempotent: an active belief is not proposed again).
async fn brand_beliefs(runtime: &RoleRuntime) -> Result<(), Error> {
    use openvibe_protocols::{Belief, BeliefStatus, CallerContext, Clearance, Verdict};
    let cmo = runtime.get_role("cmo")?;
    let memory = cmo.agent_memory().ok_or(Error::NoMemory)?;
    let stores = runtime.stores().ok_or(Error::NoMemory)?;
    let person = CallerContext::user("ann")
        .with_tenant(memory.context().tenant_id().to_owned())
        .with_clearance(Clearance::unrestricted());
    for (i, statement) in BRAND_BELIEFS.iter().enumerate() {
        let id = format!("cmo-brand-{}", i + 1);
        let proposed = memory
            .belief_store()
            .propose(
                memory.context(),
                Belief::new("cmo", *statement, 0.9)
                    .id(id.clone())
                    .domain("marketing"),
            )
            .await
            .map_err(openvibe_memory::MemoryError::from)?;
        if proposed.status == BeliefStatus::Proposed {
            stores
                .decide_belief(&person, &id, &Verdict::approve("our brand rules"))
                .await
                .map_err(openvibe_memory::MemoryError::from)?;
        }
    }
    Ok(())
}

/// A clock that reads `start` the first time it is read (when the
/// scheduler registers the roles' schedules) and follows tokio's time from
/// there. A clock started when the runtime is built would be past 06:00 by
/// then on a slow or busy machine (the run before the prioritization takes
/// longer than 300 ms on PostgreSQL under load), and the daily schedule
/// would be due tomorrow.
#[derive(Debug)]
struct FirstReadClock {
    start: chrono::DateTime<chrono::Utc>,
    clock: std::sync::OnceLock<openvibe_schedule::TokioClock>,
}

impl FirstReadClock {
    fn new(start: chrono::DateTime<chrono::Utc>) -> Self {
        Self {
            start,
            clock: std::sync::OnceLock::new(),
        }
    }
}

impl openvibe_schedule::Clock for FirstReadClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock
            .get_or_init(|| openvibe_schedule::TokioClock::starting_at(self.start))
            .now()
    }
}

/// The CRO asks the owner of `marketing` for a case study of `customer`
/// while the roles' loop runs (the CMO's takes the request); the CMO's
/// answer, as a state, and the request's path through the CMO's loop.
async fn delegate_case_study(
    runtime: &std::sync::Arc<RoleRuntime>,
    customer: State,
) -> Result<(State, openvibe_protocols::LoopTrace), Error> {
    const REQUEST: &str = "case-study-acme-logistics";
    let asker = runtime.clone();
    with_loop_running(runtime, |cognitive| async move {
        let output = asker
            .get_role("cro")?
            .ask(
                REQUEST,
                "marketing",
                "write_case_study",
                customer.into_value(),
                std::time::Duration::from_secs(60),
            )
            .await?;
        let trace = cognitive
            .trace("cmo", &openvibe_roles::request_event_id(SPACE, REQUEST))
            .await?
            .ok_or_else(|| {
                Error::Delegation("the CMO's loop has no trace of the request".into())
            })?;
        let state = State::from_value(output).map_err(|e| Error::Delegation(e.to_string()))?;
        Ok((state, trace))
    })
    .await
}

/// How long [`prioritize_by_schedule`] waits for the firing.
const PRIORITIZATION_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Serve `runtime`'s schedules until the CRO's daily prioritization has
/// run (at most [`PRIORITIZATION_WAIT`]); its priorities.
async fn prioritize_by_schedule(runtime: &RoleRuntime) -> Result<Priorities, Error> {
    let done = tokio::sync::Notify::new();
    let mut outcome: Option<Result<Priorities, String>> = None;
    // Due 300 ms after the schedules are registered: a firing that has not
    // come in a minute will not come (a failure, not a hang).
    let stop = async {
        tokio::select! {
            () = done.notified() => {}
            () = tokio::time::sleep(PRIORITIZATION_WAIT) => {}
        }
    };
    runtime
        .serve(stop, |fired| match &fired.outcome {
            openvibe_roles::Outcome::Prioritized(p) => {
                outcome = Some(Ok(p.clone()));
                done.notify_one();
            }
            openvibe_roles::Outcome::Failed(e) => {
                outcome = Some(Err(e.to_string()));
                done.notify_one();
            }
            _ => {}
        })
        .await?;
    match outcome {
        Some(Ok(p)) => Ok(p),
        Some(Err(e)) => Err(Error::Prioritization(e)),
        None => Err(Error::Prioritization(format!(
            "no firing within {} s of its schedule's registration",
            PRIORITIZATION_WAIT.as_secs()
        ))),
    }
}

/// A deterministic stand-in for a model that answers the example's
/// requests the way a good model would (qualification, CRM enrichment with
/// a tool call, a case study with a web search, reflection): what
/// [`CASSETTE`] was recorded from (feature `testing`).
#[cfg(feature = "testing")]
pub fn stand_in() -> openvibe_primitives::testing::StandIn {
    use openvibe_primitives::testing::StandIn;
    use openvibe_protocols::{ContentBlock, LlmResponse};
    use serde_json::{Value, json};
    let tool_use = |name: &str, query: &str| {
        LlmResponse::from_blocks(vec![ContentBlock::ToolUse {
            id: format!("call_{name}"),
            name: name.to_owned(),
            input: json!({ "query": query }),
        }])
    };
    StandIn::new()
        .rule(|request| {
            request
                .system
                .contains("You decompose an objective")
                .then(|| {
                    LlmResponse::text(
                        json!([
                            {"title": "Qualify every webinar lead within a day", "description": "Webinar leads with a VP attending score above 80: reach them first.", "key_results": ["qualified-leads"], "domain": "revenue", "due": "2026-12-15"},
                            {"title": "Turn qualified logistics leads into route-planning demos", "description": "A demo with the VP Operations is the step before a priced proposal.", "key_results": ["pipeline-value"], "domain": "revenue"},
                            {"title": "Publish customer case studies with measured results", "description": "Proof such as 18% fewer empty miles shortens evaluations.", "key_results": ["pipeline-value", "qualified-leads"], "domain": "marketing", "due": "2026-12-31",
                             "action": {"action": "write_case_study", "target": {"kind": "tool", "tool": "write_case_study"}, "input": {"customer": CUSTOMER, "company": "acme_logistics"}}}
                        ])
                        .to_string(),
                    )
                })
        })
        .rule(|request| {
            request
                .system
                .contains("You set the daily priorities")
                .then(|| {
                    LlmResponse::text(
                        json!([
                            {"title": "Book the route-planning demo with Acme Logistics' VP Operations", "reason": "Acme is qualified (86) and in evaluation: the largest step toward the $2M pipeline today", "goal_id": "pipeline-q4"},
                            {"title": "Follow up every lead from the route-planning webinar", "reason": "1 of 40 qualified leads so far; webinar leads qualify fastest", "goal_id": "pipeline-q4",
                             "action": {"action": "follow_up_lead", "target": {"kind": "tool", "tool": "schedule_follow_up"}, "input": {"company": "route_planning_webinar_attendees", "note": "follow up every webinar lead this week"}}},
                            {"title": "Send the Acme case study to the three logistics prospects in evaluation", "reason": "measured results shorten evaluations", "goal_id": "pipeline-q4"}
                        ])
                        .to_string(),
                    )
                })
        })
        .rule(|request| {
            // Reflections during the two weeks: what the episodes show.
            if !request.system.contains("reflecting on recent work experiences") {
                return None;
            }
            let episodes = request
                .messages
                .first()
                .map(openvibe_protocols::Message::text)
                .unwrap_or_default();
            if episodes.contains("stalled in procurement") {
                return Some(LlmResponse::text(
                    json!([
                        {"content": "Since the price change, freight leads from webinars stall in procurement", "confidence": 0.85, "domain": "revenue", "tags": ["pricing"]}
                    ])
                    .to_string(),
                ));
            }
            if episodes.contains("follow-up scheduled") {
                return Some(LlmResponse::text(
                    json!([
                        {"content": "Logistics leads whose VP attended a webinar score above 80", "confidence": 0.8, "domain": "revenue", "tags": ["webinar"]}
                    ])
                    .to_string(),
                ));
            }
            // Only decisions to propose since the last reflection: no
            // outcome yet, nothing new to learn.
            episodes.contains("follow_up_lead").then(|| LlmResponse::text("[]"))
        })
        .rule(|request| {
            request
                .system
                .contains("reflecting on recent work experiences")
                .then(|| {
                    LlmResponse::text(
                        json!([
                            {"content": "Logistics leads whose VP attended a webinar score above 80", "confidence": 0.8, "domain": "revenue", "tags": ["webinar"]},
                            {"content": "Case studies that quote a measured result (18% fewer empty miles) are ready to publish", "confidence": 0.6, "domain": "marketing"}
                        ])
                        .to_string(),
                    )
                })
        })
        .rule(move |request| {
            if !request.tools.iter().any(|t| t.name == "search_hubspot") {
                return None;
            }
            Some(match StandIn::last_tool_result(request) {
                None => tool_use("search_hubspot", CUSTOMER),
                Some((found, _)) => {
                    let record: Value = serde_json::from_str(found.lines().next().unwrap_or("{}"))
                        .unwrap_or(Value::Null);
                    LlmResponse::text(
                        json!({
                            "company": record["company"],
                            "employees": record["employees"],
                            "stage": record["stage"],
                            "next_step": "book a route-planning demo with the VP Operations",
                        })
                        .to_string(),
                    )
                }
            })
        })
        .rule(move |request| {
            if !request.tools.iter().any(|t| t.name == "search_web") {
                return None;
            }
            Some(match StandIn::last_tool_result(request) {
                None => tool_use("search_web", CUSTOMER),
                Some((found, _)) => LlmResponse::text(format!(
                    "# {CUSTOMER}: 18% fewer empty miles\n\n**Challenge.** Trucks ran empty on return legs.\n\n**Solution.** Route planning on our platform.\n\n**Result.** {found}"
                )),
            })
        })
        .rule(|request| {
            let user = request
                .messages
                .first()
                .map(openvibe_protocols::Message::text)
                .unwrap_or_default();
            user.starts_with("Score this lead").then(|| {
                LlmResponse::text(
                    json!({
                        "score": 86,
                        "reason": "450 employees in logistics and a VP who attended the webinar",
                        "metric": [
                            {"name": "qualified_leads", "value": 1, "note": "Acme Logistics qualified (86)"}
                        ]
                    })
                    .to_string(),
                )
            })
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use openvibe_schedule::Clock;

    use super::FirstReadClock;

    #[tokio::test(start_paused = true)]
    async fn the_example_clock_starts_at_its_first_read_not_at_its_making() {
        let dawn = chrono::DateTime::<chrono::Utc>::from_timestamp(1_000_000, 0).unwrap();
        let clock = FirstReadClock::new(dawn);
        // However long the run before the schedules takes...
        tokio::time::advance(std::time::Duration::from_secs(5)).await;
        assert_eq!(clock.now(), dawn);
        // ...from the first read on, it follows tokio's time.
        tokio::time::advance(std::time::Duration::from_millis(300)).await;
        assert_eq!(clock.now(), dawn + chrono::Duration::milliseconds(300));
    }
}
