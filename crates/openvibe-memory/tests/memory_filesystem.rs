//! Ported from the seed's tests/test_memory_filesystem.py, plus
//! `/references/` over clearance-filtered workspace facts and path validation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_memory::{
    AgentMemory, ClearanceProfile, MAX_PATH_LEN, MemoryError, MemoryFilesystem, WorkspaceMemory,
    WriteOptions,
};
use openvibe_protocols::{Classification, EpisodeQuery, Fact, Insight, InsightQuery, TraceAction};

fn insight(id: &str, content: &str, confidence: f64, domain: &str) -> Insight {
    Insight::new(id, "cro", content, confidence)
        .evidence(5)
        .domain(domain)
}

// --- Browse ---

#[tokio::test]
async fn test_browse_root() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem).with_soul("You are the CRO.");
    let entries = fs.browse("/").await.unwrap();
    for dir in [
        "identity",
        "beliefs",
        "knowledge",
        "experience",
        "references",
        "raw",
    ] {
        assert!(entries.contains(&dir.to_owned()), "{dir}");
    }
}

#[tokio::test]
async fn test_browse_identity() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem).with_soul("You are the CRO.");
    let entries = fs.browse("/identity/").await.unwrap();
    assert!(entries.contains(&"soul.md".to_owned()));
}

#[tokio::test]
async fn test_browse_knowledge_lists_domains() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(insight("ins1", "Revenue insight", 0.8, "revenue"))
        .await
        .unwrap();
    mem.store_insight(insight("ins2", "Marketing insight", 0.7, "marketing"))
        .await
        .unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    let entries = fs.browse("/knowledge/").await.unwrap();
    assert!(entries.contains(&"revenue".to_owned()));
    assert!(entries.contains(&"marketing".to_owned()));
}

#[tokio::test]
async fn test_browse_knowledge_domain() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(
        insight("ins1", "VP sponsor predicts conversion", 0.9, "revenue").tags(["qualification"]),
    )
    .await
    .unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    let entries = fs.browse("/knowledge/revenue/").await.unwrap();
    assert!(!entries.is_empty());
    assert_eq!(entries, vec!["ins1"]);
}

// --- Read ---

#[tokio::test]
async fn test_read_identity_soul() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem).with_soul("You are the CRO.");
    let content = fs.read("/identity/soul.md").await.unwrap();
    assert_eq!(content, "You are the CRO.");
}

#[tokio::test]
async fn test_read_knowledge_insight() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(insight(
        "ins1",
        "VP sponsor predicts conversion",
        0.9,
        "revenue",
    ))
    .await
    .unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    let content = fs.read("/knowledge/revenue/ins1").await.unwrap();
    assert!(content.contains("VP sponsor predicts conversion"));
    assert!(content.contains("Confidence: 0.9"));
    assert!(content.contains("Evidence: 5"));
    assert_eq!(
        fs.read("/knowledge/marketing/ins1").await.unwrap(),
        "",
        "wrong domain"
    );
}

#[tokio::test]
async fn test_read_missing_returns_empty() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem);
    let content = fs.read("/knowledge/nonexistent/nothing").await.unwrap();
    assert_eq!(content, "");
}

// --- Search ---

#[tokio::test]
async fn test_search_scoped() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(insight(
        "ins1",
        "VP sponsor predicts conversion",
        0.9,
        "revenue",
    ))
    .await
    .unwrap();
    mem.store_insight(insight("ins2", "Brand voice matters", 0.8, "marketing"))
        .await
        .unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    let results = fs
        .search("VP sponsor", "/knowledge/revenue/")
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert!(results[0].content.contains("VP sponsor"));
    assert_eq!(results[0].path, "/knowledge/revenue/ins1");
    assert_eq!(results[0].confidence, Some(0.9));
}

#[tokio::test]
async fn test_search_global() {
    let mem = AgentMemory::new("cro");
    mem.store_insight(insight(
        "ins1",
        "VP sponsor predicts conversion",
        0.9,
        "revenue",
    ))
    .await
    .unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    let results = fs.search("VP sponsor", "/").await.unwrap();
    assert!(!results.is_empty());
}

// --- Write ---

#[tokio::test]
async fn test_write_knowledge() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem.clone());
    fs.write(
        "/knowledge/revenue/new-principle",
        "Enterprise deals need VP sponsor",
    )
    .await
    .unwrap();
    let results = mem
        .recall_insights(InsightQuery::new().domain("revenue"))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert!(results[0].content.contains("VP sponsor"));
    assert_eq!(results[0].id, "new-principle");
    assert_eq!(results[0].confidence, 0.5);
}

#[tokio::test]
async fn test_write_experience() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem.clone());
    fs.write(
        "/experience/2026-02/qualified-acme",
        "Qualified Acme Corp at 85",
    )
    .await
    .unwrap();
    let results = mem.recall_episodes(EpisodeQuery::new()).await.unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].action, "qualified-acme");
    let read = fs.read("/experience/2026-02/qualified-acme").await.unwrap();
    assert!(read.contains("Output: Qualified Acme Corp at 85"), "{read}");
}

// --- Observable traces ---

#[tokio::test]
async fn test_traces_recorded() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem).with_soul("CRO soul");
    fs.browse("/").await.unwrap();
    fs.read("/identity/soul.md").await.unwrap();
    fs.search("test", "/").await.unwrap();
    let traces = fs.traces();
    assert_eq!(traces.len(), 3);
    assert_eq!(traces[0].action, "browse");
    assert_eq!(traces[1].action, "read");
    assert_eq!(traces[2].action, "search");
    assert_eq!(traces[0].path, "/");
    assert_eq!(traces[1].path, "/identity/soul.md");
    assert_eq!(traces[1].tokens_loaded, 2);
    assert_eq!(traces[2].query, "test");
    assert_eq!(traces[0].meta.owner, "agent:cro");
    assert_eq!(traces[0].meta.namespace, "cro");
}

#[tokio::test]
async fn test_clear_traces() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem);
    fs.browse("/").await.unwrap();
    assert_eq!(fs.traces().len(), 1);
    fs.clear_traces();
    assert_eq!(fs.traces().len(), 0);
}

// --- References (the seed left them empty) ---

async fn workspace_with_facts() -> WorkspaceMemory {
    let ws = WorkspaceMemory::new();
    for fact in [
        Fact::new("f_pub", "Acme has 200 employees")
            .entity("acme")
            .domain("customer")
            .classification(Classification::Public),
        Fact::new("f_rev", "Acme pipeline is 2M")
            .entity("acme")
            .domain("revenue")
            .classification(Classification::Confidential),
        Fact::new("f_hr", "Salary bands")
            .domain("hr")
            .classification(Classification::Restricted),
    ] {
        ws.store_fact(fact).await.unwrap();
    }
    ws
}

#[tokio::test]
async fn references_follow_the_roles_clearance() {
    let ws = workspace_with_facts().await;
    let mem = AgentMemory::new("cro").with_workspace(ws);
    let fs = MemoryFilesystem::new("cro", mem.clone()).with_clearance(
        ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
    );
    assert_eq!(
        fs.browse("/references/").await.unwrap(),
        vec!["customer", "revenue"]
    );
    assert_eq!(
        fs.browse("/references/revenue/").await.unwrap(),
        vec!["f_rev"]
    );
    assert!(
        fs.browse("/references/hr/").await.unwrap().is_empty(),
        "no hr clearance"
    );
    let text = fs.read("/references/revenue/f_rev").await.unwrap();
    assert!(text.starts_with("Acme pipeline is 2M"), "{text}");
    assert!(text.contains("Classification: confidential"));
    assert_eq!(
        fs.read("/references/hr/f_hr").await.unwrap(),
        "",
        "unreadable looks missing"
    );
    assert_eq!(
        fs.read("/references/customer/f_rev").await.unwrap(),
        "",
        "wrong domain"
    );
    let hits = fs.search("acme", "/references/").await.unwrap();
    let mut paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        ["/references/customer/f_pub", "/references/revenue/f_rev"]
    );
    let scoped = fs.search("acme", "/references/customer/").await.unwrap();
    assert_eq!(scoped.len(), 1);
    // Reading a reference counts as an access, persisted in the store.
    let stored = mem
        .workspace()
        .unwrap()
        .get_as(&openvibe_protocols::CallerContext::system(), "f_rev")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.access_count, 1);

    let public_only = MemoryFilesystem::new(
        "cmo",
        AgentMemory::new("cmo").with_workspace(mem.workspace().unwrap().clone()),
    );
    assert_eq!(
        public_only.browse("/references/").await.unwrap(),
        vec!["customer"]
    );
}

#[tokio::test]
async fn references_without_workspace_are_empty() {
    let fs = MemoryFilesystem::new("cro", AgentMemory::new("cro"));
    assert!(fs.browse("/references/").await.unwrap().is_empty());
    assert_eq!(fs.read("/references/x/y").await.unwrap(), "");
}

// --- Path validation ---

#[tokio::test]
async fn invalid_paths_are_rejected_and_leave_no_trace() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem.clone());
    let long = format!("/knowledge/revenue/{}", "x".repeat(MAX_PATH_LEN));
    let bad_paths = [
        "/knowledge/../identity/soul.md",
        "/knowledge/revenue/../../x",
        "/knowledge/./revenue/x",
        "/knowledge//revenue/x",
        "//knowledge/revenue/x",
        "/knowledge/revenue/x\u{7}",
        "/knowledge/rev\nenue/x",
        long.as_str(),
    ];
    for path in bad_paths {
        let err = fs.write(path, "payload").await.unwrap_err();
        assert!(
            matches!(err, MemoryError::InvalidPath { .. }),
            "{path:?}: {err}"
        );
        assert!(
            matches!(fs.read(path).await, Err(MemoryError::InvalidPath { .. })),
            "{path:?}"
        );
        assert!(
            matches!(fs.browse(path).await, Err(MemoryError::InvalidPath { .. })),
            "{path:?}"
        );
        assert!(
            matches!(
                fs.search("x", path).await,
                Err(MemoryError::InvalidPath { .. })
            ),
            "{path:?}"
        );
    }
    assert!(fs.traces().is_empty(), "rejected operations leave no trace");
    assert!(
        mem.recall_insights(InsightQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        mem.recall_episodes(EpisodeQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn read_only_and_directory_writes_are_refused() {
    let mem = AgentMemory::new("cro").with_workspace(WorkspaceMemory::new());
    let fs = MemoryFilesystem::new("cro", mem.clone()).with_soul("soul");
    for path in [
        "/identity/soul.md",
        "/references/revenue/f1",
        "/elsewhere/x",
        "/",
    ] {
        let err = fs.write(path, "payload").await.unwrap_err();
        assert!(
            matches!(
                err,
                MemoryError::ReadOnlyPath { .. } | MemoryError::InvalidPath { .. }
            ),
            "{path}: {err}"
        );
    }
    for path in ["/knowledge/revenue/", "/knowledge", "/experience/"] {
        assert!(
            matches!(
                fs.write(path, "payload").await,
                Err(MemoryError::InvalidPath { .. })
            ),
            "{path}"
        );
    }
    assert!(fs.traces().is_empty());
    assert_eq!(fs.read("/identity/soul.md").await.unwrap(), "soul");
    assert!(
        mem.recall_insights(InsightQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn paths_are_normalised() {
    let mem = AgentMemory::new("cro");
    let fs = MemoryFilesystem::new("cro", mem.clone());
    fs.write_with(
        "knowledge/_/qualification/no-domain",
        "Leads without a domain",
        &WriteOptions {
            confidence: Some(0.8),
            ..WriteOptions::default()
        },
    )
    .await
    .unwrap();
    let stored = mem.get_insight("no-domain").await.unwrap().unwrap();
    assert_eq!(stored.domain, "");
    assert_eq!(stored.tags, vec!["qualification"]);
    assert_eq!(stored.confidence, 0.8);
    assert_eq!(fs.browse("/knowledge").await.unwrap(), vec!["_"]);
    assert_eq!(fs.browse("knowledge/_").await.unwrap(), vec!["no-domain"]);
    assert!(
        fs.read("/knowledge/_/no-domain")
            .await
            .unwrap()
            .starts_with("Leads without a domain")
    );
    let traces = fs.traces();
    assert_eq!(traces[0].action, TraceAction::Write);
    assert_eq!(traces[0].path, "/knowledge/_/qualification/no-domain");
    assert_eq!(traces[1].path, "/knowledge/");
    assert_eq!(traces[2].path, "/knowledge/_/");
}

#[tokio::test]
async fn test_raw_is_paged_newest_first_and_read_only() {
    use openvibe_protocols::{LlmRequest, LlmResponse, RawCall};
    let mem = AgentMemory::new("cro");
    let start = chrono::Utc::now() - chrono::TimeDelta::hours(1);
    let calls: Vec<RawCall> = (0..120)
        .map(|i| {
            let mut call = RawCall::new(
                "cro",
                start + chrono::TimeDelta::seconds(i),
                1500,
                LlmRequest::new("sonnet", format!("question {i}")),
                Ok(LlmResponse::text(format!("answer {i}"))),
            );
            call.id = format!("raw_{i:03}");
            call.meta.namespace = "cro".into();
            call
        })
        .collect();
    mem.raw_store().append(mem.context(), calls).await.unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    let mut path = "/raw/".to_owned();
    let mut seen = Vec::new();
    loop {
        let mut entries = fs.browse(&path).await.unwrap();
        match entries.last().filter(|e| e.starts_with("after/")).cloned() {
            Some(next) => {
                entries.pop();
                assert_eq!(entries.len(), 50);
                seen.extend(entries);
                path = format!("/raw/{next}");
            }
            None => {
                seen.extend(entries);
                break;
            }
        }
    }
    let expected: Vec<String> = (0..120).rev().map(|i| format!("raw_{i:03}")).collect();
    assert_eq!(seen, expected);
    let text = fs.read("/raw/raw_007").await.unwrap();
    assert!(text.contains("## User\nquestion 7"), "{text}");
    assert!(text.contains("## Response\nanswer 7"), "{text}");
    assert!(text.contains("Latency: 1 ms"), "{text}");
    assert_eq!(fs.read("/raw/missing").await.unwrap(), "");
    assert!(matches!(
        fs.write("/raw/x", "forged").await,
        Err(openvibe_memory::MemoryError::ReadOnlyPath { .. })
    ));
}

#[tokio::test]
async fn beliefs_are_browsed_read_and_searched_once_approved() {
    use openvibe_protocols::{Belief, CallerContext, Clearance};
    let mem = AgentMemory::new("cro");
    let ann = CallerContext::user("ann").with_clearance(Clearance::unrestricted());
    for (id, statement) in [
        ("b-vp", "Deals with a VP sponsor close within 30 days"),
        ("b-waiting", "Referrals close fastest"),
    ] {
        mem.propose_belief(
            Belief::new("cro", statement, 0.9)
                .id(id)
                .domain("revenue")
                .from_insights(["ins1"], 4),
        )
        .await
        .unwrap();
    }
    mem.belief_store()
        .decide(
            &ann,
            "b-vp",
            &openvibe_protocols::Verdict::approve("seen it"),
        )
        .await
        .unwrap();
    let fs = MemoryFilesystem::new("cro", mem);
    assert_eq!(fs.browse("/beliefs/").await.unwrap(), vec!["revenue"]);
    assert_eq!(
        fs.browse("/beliefs/revenue/").await.unwrap(),
        vec!["b-vp"],
        "a proposed belief is not listed"
    );
    let text = fs.read("/beliefs/revenue/b-vp").await.unwrap();
    assert!(
        text.starts_with("Deals with a VP sponsor close within 30 days"),
        "{text}"
    );
    assert!(text.contains("Approved by: user:ann"), "{text}");
    assert!(
        text.contains("From insights: /knowledge/revenue/ins1"),
        "{text}"
    );
    assert_eq!(fs.read("/beliefs/revenue/b-waiting").await.unwrap(), "");
    assert_eq!(fs.read("/beliefs/marketing/b-vp").await.unwrap(), "");
    let hits = fs.search("vp sponsor", "/beliefs/").await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, "/beliefs/revenue/b-vp");
    assert!(fs.search("referrals", "/").await.unwrap().is_empty());
    assert!(matches!(
        fs.write("/beliefs/revenue/b-new", "I decide").await,
        Err(MemoryError::ReadOnlyPath { .. })
    ));
}
