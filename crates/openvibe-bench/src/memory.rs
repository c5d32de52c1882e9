//! Memory-core benchmarks: indexed fact queries with clearance, and one
//! context assembly, over 100,000 records of each kind.

use std::hint::black_box;
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use openvibe_bench::{report, sample};

use crate::pg::{Lcg, clearance, domain, entity, fact, fact_queries};
use openvibe_in_memory::{InMemoryEpisodicStore, InMemoryFactStore, InMemoryInsightStore};
use openvibe_memory::{AgentMemory, MemoryAssembler, WorkspaceMemory};
use openvibe_protocols::{
    CallerContext, ContextAssembler, DEFAULT_TOKEN_BUDGET, Episode, FactStore, Insight,
    MemoryScope, RecordStore,
};

const RECORDS: u32 = 100_000;

async fn fill_facts(store: &dyn FactStore, rng: &mut Lcg) {
    fill_fact_range(store, rng, 0..RECORDS).await;
}

/// Store facts `range` (the same every run for the same generator state).
pub(crate) async fn fill_fact_range(
    store: &dyn FactStore,
    rng: &mut Lcg,
    range: std::ops::Range<u32>,
) {
    let writer = CallerContext::system();
    for i in range {
        let fact = fact(format!("f{i:06}"), i, rng);
        if let Err(e) = store.store(&writer, fact).await {
            eprintln!("cannot fill the fact store: {e}");
            return;
        }
    }
}

/// Run the group.
pub async fn run() {
    let mut rng = Lcg(42);
    let facts = Arc::new(InMemoryFactStore::new());
    fill_facts(facts.as_ref(), &mut rng).await;
    let profile = clearance();
    let reader = profile.context("default");

    // --- fact query: entity + domain + clearance, limit 10 ---
    // 1,000 of the 5,000 (entity, domain) scopes, scattered, queried in
    // turn: the working set of a tenant's active accounts. (Rotating over
    // all 5,000 makes every query cache-cold: about +3 us on a 2-vCPU VM.)
    let pairs = fact_queries();
    let mut next = 0usize;
    let samples = sample(5_000, 20_000, || {
        let query = &pairs[next % pairs.len()];
        next += 1;
        let store = &facts;
        let reader = &reader;
        async move {
            let found = store.query(reader, query).await;
            black_box(found.map(|f| f.len()).unwrap_or(0));
        }
    })
    .await;
    report("mem_fact_query_p50_us", samples.quantile_us(0.50), "us");
    report("mem_fact_query_p99_us", samples.quantile_us(0.99), "us");

    // --- one assembly over 100k insights + 100k facts + 100k episodes ---
    let workspace = WorkspaceMemory::with_store(facts.clone());
    let episodes = Arc::new(InMemoryEpisodicStore::new());
    let insights = Arc::new(InMemoryInsightStore::new());
    let memory = AgentMemory::new("cro")
        .with_stores(episodes.clone(), insights.clone())
        .with_workspace(workspace);
    let start = Utc
        .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    for i in 0..RECORDS {
        let insight = Insight::new(
            format!("ins{i:06}"),
            "cro",
            format!(
                "Leads like {} convert when a VP sponsor joins early ({i})",
                entity(i)
            ),
            rng.unit(),
        )
        .entity(entity(i))
        .domain(domain(i))
        .created_at(start + Duration::seconds(i64::from(i)));
        let episode = Episode {
            id: format!("ep{i:06}"),
            operator_id: "revenue_ops".into(),
            node_name: "qualify".into(),
            timestamp: start + Duration::seconds(i64::from(i)),
            action: "qualify_lead".into(),
            input_summary: format!("Score lead {}", entity(i)),
            output_summary: format!("{{\"score\": {}}}", rng.next() % 100),
            entity: entity(i),
            domain: domain(i),
            ..Episode::default()
        };
        if let Err(e) = memory.store_insight(insight).await {
            eprintln!("cannot fill the insight store: {e}");
            return;
        }
        if let Err(e) = memory.record_episode(episode).await {
            eprintln!("cannot fill the episodic store: {e}");
            return;
        }
    }
    let assembler = MemoryAssembler::new(memory, profile);
    let scopes: Vec<MemoryScope> = (0..1000u32)
        .map(|k| {
            let i = k.wrapping_mul(7919) % RECORDS;
            MemoryScope {
                entity: Some(entity(i)),
                domain: Some(domain(i)),
                ..MemoryScope::default()
            }
        })
        .collect();
    let mut next = 0usize;
    let empty = std::cell::Cell::new(0usize);
    let samples = sample(500, 5_000, || {
        let scope = &scopes[next % scopes.len()];
        next += 1;
        let assembler = &assembler;
        let empty = &empty;
        async move {
            match assembler.assemble(scope, DEFAULT_TOKEN_BUDGET).await {
                Ok(text) if text.is_empty() => empty.set(empty.get() + 1),
                Ok(text) => {
                    black_box(text);
                }
                Err(e) => eprintln!("assemble failed: {e}"),
            }
        }
    })
    .await;
    if empty.get() > 0 {
        eprintln!("warning: {} assemblies were empty", empty.get());
    }
    report("mem_assemble_p50_us", samples.quantile_us(0.50), "us");
}
