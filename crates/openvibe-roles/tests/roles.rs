//! Roles: the seed's test_role_v2.py and test_integration_v2.py, authority
//! enforcement on tool calls, and the role runtime.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use openvibe_memory::{AgentMemory, ClearanceProfile, InMemoryStore, WorkspaceMemory};
use openvibe_operators::Operator;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{AgentNode, FnTool, LlmNode, ScopeSpec};
use openvibe_protocols::{
    Classification, ContentBlock, EpisodeQuery, Fact, Insight, LlmResponse, MemoryProvider,
    MessageContent, ScheduleError, ScheduleInfo, ScheduleProvider, State, TriggerConfig,
    TriggerKind,
};
use openvibe_roles::{
    ApprovalDecision, ApprovalHook, ApprovalRequest, ApproveAll, Authority, AuthorityConfig, Error,
    Role, RoleRuntime,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// ---------- helpers ----------

fn revenue_ops() -> Operator {
    Operator::new("revenue_ops")
        .node(
            LlmNode::new("qualify", "You are a lead qualifier.", |s: &State| {
                Ok(format!("Score: {}", s.get_str("lead").unwrap_or("")))
            })
            .model("sonnet")
            .output_key("score")
            .memory_scope(
                ScopeSpec::new()
                    .domain("revenue")
                    .entity_from_key("company"),
            ),
        )
        .sequence("qualify", ["qualify"])
        .unwrap()
}

fn cro() -> Role {
    Role::new("cro")
        .soul("You are the CRO. Data-driven.")
        .operator(revenue_ops())
        .authority(
            AuthorityConfig::new()
                .autonomous(["qualify_lead"])
                .needs_approval(["change_pricing"])
                .forbidden(["sign_contracts"]),
        )
        .clearance(
            ClearanceProfile::new("cro")
                .with_domain("revenue", Classification::Confidential)
                .with_domain("customer", Classification::Internal),
        )
}

fn text(s: &str) -> LlmResponse {
    LlmResponse::text(s).with_usage(10, 20)
}

// ---------- seed: authority ----------

#[test]
fn role_can_act_autonomous() {
    assert_eq!(cro().can_act("qualify_lead"), Authority::Autonomous);
}

#[test]
fn role_can_act_forbidden() {
    assert_eq!(cro().can_act("sign_contracts"), Authority::Forbidden);
}

#[test]
fn role_can_act_no_authority() {
    assert_eq!(
        Role::new("noauth").can_act("anything"),
        Authority::Autonomous
    );
}

// ---------- seed: agent memory wiring ----------

#[test]
fn operator_gets_memory_assembler_and_episode_recorder() {
    let role = cro()
        .with_llm(Arc::new(ScriptedLlm::default()))
        .with_agent_memory(AgentMemory::new("cro"));
    let op = role.get_operator("revenue_ops").unwrap();
    assert!(op.context().assembler.is_some());
    assert!(op.context().episode_sink.is_some());
    assert!(op.context().tool_gate.is_some());
    assert_eq!(op.context().operator_id, "revenue_ops");
}

#[test]
fn without_agent_memory_no_assembler_or_recorder() {
    let role = cro().with_llm(Arc::new(ScriptedLlm::default()));
    let op = role.get_operator("revenue_ops").unwrap();
    assert!(op.context().assembler.is_none());
    assert!(op.context().episode_sink.is_none());
}

#[tokio::test]
async fn memory_scope_assembled_via_role() {
    let llm = ScriptedLlm::new([text("output")]);
    let memory = AgentMemory::new("cro");
    memory
        .store_insight(
            Insight::new("ins1", "cro", "Test insight for revenue", 0.9)
                .domain("revenue")
                .evidence(5),
        )
        .await
        .unwrap();
    let role = cro()
        .with_llm(Arc::new(llm.clone()))
        .with_agent_memory(memory);
    role.get_operator("revenue_ops")
        .unwrap()
        .run_node("qualify", [("lead", "Acme")].into_iter().collect())
        .await
        .unwrap();
    let system = llm.last_request().unwrap().system;
    assert!(system.contains("CRO"), "{system}");
    assert!(system.contains("Test insight for revenue"), "{system}");
    assert!(
        system.starts_with("You are the CRO. Data-driven.\n\nYou are a lead qualifier."),
        "{system}"
    );
}

#[tokio::test]
async fn role_aware_llm_soul_only_with_agent_memory() {
    let llm = ScriptedLlm::new([text("output")]);
    let v1 = Arc::new(InMemoryStore::new());
    v1.store("cro", "m1", "Webinar leads convert 2x")
        .await
        .unwrap();
    let role = cro()
        .with_llm(Arc::new(llm.clone()))
        .with_memory(v1)
        .with_agent_memory(AgentMemory::new("cro"));
    role.get_operator("revenue_ops")
        .unwrap()
        .run_node("qualify", [("lead", "Acme")].into_iter().collect())
        .await
        .unwrap();
    let system = llm.last_request().unwrap().system;
    assert!(system.contains("CRO"));
    assert!(!system.contains("Relevant Memories"), "{system}");
    assert!(!system.contains("Webinar"), "{system}");
}

#[tokio::test]
async fn v1_memory_still_works() {
    let llm = ScriptedLlm::new([text("output")]);
    let v1 = Arc::new(InMemoryStore::new());
    v1.store("cro", "m1", "Webinar leads convert 2x")
        .await
        .unwrap();
    let role = Role::new("cro")
        .soul("You are the CRO.")
        .operator(revenue_ops())
        .with_llm(Arc::new(llm.clone()))
        .with_memory(v1);
    role.get_operator("revenue_ops")
        .unwrap()
        .run_node("qualify", [("lead", "Acme")].into_iter().collect())
        .await
        .unwrap();
    let system = llm.last_request().unwrap().system;
    assert_eq!(
        system,
        "You are the CRO.\n\nYou are a lead qualifier.\n\n## Relevant Memories\n- Webinar leads convert 2x"
    );
}

#[tokio::test]
async fn unknown_operator_and_missing_llm_are_typed_errors() {
    let err = cro()
        .with_llm(Arc::new(ScriptedLlm::default()))
        .get_operator("nope")
        .unwrap_err();
    assert!(matches!(err, Error::UnknownOperator { .. }), "{err}");
    assert!(err.to_string().contains("revenue_ops"));
    let err = cro().get_operator("revenue_ops").unwrap_err();
    assert!(matches!(err, Error::NoLlm(_)), "{err}");
    let err = Role::new("x")
        .soul("/definitely/missing/soul.md")
        .operator(revenue_ops())
        .with_llm(Arc::new(ScriptedLlm::default()))
        .get_operator("revenue_ops")
        .unwrap_err();
    assert!(matches!(err, Error::Soul { .. }), "{err}");
}

// ---------- seed: integration ----------

#[tokio::test]
async fn full_v2_stack() {
    let llm = ScriptedLlm::always(LlmResponse::text(r#"{"score": 85}"#).with_usage(10, 20));
    let workspace = WorkspaceMemory::new();
    workspace
        .store_fact(
            Fact::new("f1", "Acme Corp has 200 employees")
                .entity("acme_corp")
                .domain("customer")
                .classification(Classification::Public),
        )
        .await
        .unwrap();
    let memory = AgentMemory::new("cro").with_workspace(workspace);
    memory
        .store_insight(
            Insight::new("ins1", "cro", "VP sponsor predicts conversion", 0.9)
                .domain("revenue")
                .evidence(5),
        )
        .await
        .unwrap();
    let role = cro()
        .with_llm(Arc::new(llm.clone()))
        .with_agent_memory(memory.clone());
    let out = role
        .get_operator("revenue_ops")
        .unwrap()
        .run_node(
            "qualify",
            [("lead", "Acme Corp"), ("company", "acme_corp")]
                .into_iter()
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(out.get("score"), Some(&json!({"score": 85})));
    let system = llm.requests()[0].system.clone();
    assert!(system.contains("CRO"));
    assert!(system.contains("VP sponsor"), "{system}");
    let episodes = memory.recall_episodes(EpisodeQuery::new()).await.unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].operator_id, "revenue_ops");
    assert_eq!(episodes[0].node_name, "qualify");
    assert_eq!(episodes[0].domain, "revenue");
    assert_eq!(episodes[0].entity, "acme_corp");
    assert_eq!(episodes[0].agent_id, "cro");
    assert_eq!(role.can_act("qualify_lead"), Authority::Autonomous);
    assert_eq!(role.can_act("sign_contracts"), Authority::Forbidden);
}

// ---------- authority enforcement on tools ----------

#[derive(Deserialize, JsonSchema)]
struct Deal {
    deal: String,
}

/// Run the signing role's `close` workflow.
async fn close(role: &Role) {
    role.get_operator("deals")
        .unwrap()
        .run_workflow("close", State::new())
        .await
        .unwrap();
}

fn signing_role(calls: Arc<AtomicUsize>, authority: AuthorityConfig) -> (Role, ScriptedLlm) {
    let c = calls.clone();
    let sign = FnTool::new("sign_contract", "Sign a contract.", move |d: Deal| {
        let c = c.clone();
        async move {
            c.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("signed {}", d.deal))
        }
    })
    .action("sign_contracts");
    let op = Operator::new("deals")
        .node(
            AgentNode::new("close", "You close deals.", |_| {
                Ok("Close the Acme deal".into())
            })
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
        LlmResponse::text("done"),
    ]);
    let role = Role::new("cro")
        .operator(op)
        .authority(authority)
        .with_llm(Arc::new(llm.clone()))
        .with_agent_memory(AgentMemory::new("cro"));
    (role, llm)
}

fn tool_result(llm: &ScriptedLlm) -> (String, bool) {
    match &llm.requests()[1].messages[2].content {
        MessageContent::Blocks(blocks) => match &blocks[0] {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => (content.clone(), *is_error),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

async fn refused_in_episode(role: &Role) -> bool {
    let episodes = role
        .agent_memory()
        .unwrap()
        .recall_episodes(EpisodeQuery::new())
        .await
        .unwrap();
    episodes[0].outcome["agent"]["tool_calls"][0]["refused"] == json!(true)
}

#[tokio::test]
async fn a_forbidden_action_is_not_executed_and_the_model_is_told() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (role, llm) = signing_role(
        calls.clone(),
        AuthorityConfig::new().forbidden(["sign_contracts"]),
    );
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let (content, is_error) = tool_result(&llm);
    assert!(is_error);
    assert!(content.contains("forbidden for role `cro`"), "{content}");
    assert!(
        refused_in_episode(&role).await,
        "the episode records the refusal"
    );
}

#[tokio::test]
async fn a_needs_approval_action_is_denied_by_default() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (role, llm) = signing_role(
        calls.clone(),
        AuthorityConfig::new().needs_approval(["sign_contracts"]),
    );
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let (content, is_error) = tool_result(&llm);
    assert!(is_error);
    assert!(
        content.contains("needs approval") && content.contains("not approved"),
        "{content}"
    );
    assert!(refused_in_episode(&role).await);
}

#[tokio::test]
async fn unlisted_actions_need_approval_too() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (role, llm) = signing_role(
        calls.clone(),
        AuthorityConfig::new().autonomous(["qualify_lead"]),
    );
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(tool_result(&llm).1);
}

struct Recording(Mutex<Vec<ApprovalRequest>>, bool);

#[async_trait]
impl ApprovalHook for Recording {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().push(request.clone());
        if self.1 {
            ApprovalDecision::Approved
        } else {
            ApprovalDecision::Denied("the CFO said no".into())
        }
    }
}

#[tokio::test]
async fn an_approved_action_runs_and_the_approver_sees_the_call() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (role, llm) = signing_role(
        calls.clone(),
        AuthorityConfig::new().needs_approval(["sign_contracts"]),
    );
    let hook = Arc::new(Recording(Mutex::default(), true));
    struct Shared(Arc<Recording>);
    #[async_trait]
    impl ApprovalHook for Shared {
        async fn decide(&self, r: &ApprovalRequest) -> ApprovalDecision {
            self.0.decide(r).await
        }
    }
    let role = role.approver(Shared(hook.clone()));
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(tool_result(&llm), ("signed acme".to_string(), false));
    let seen = hook.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].role_id, "cro");
    assert_eq!(seen[0].action, "sign_contracts");
    assert_eq!(seen[0].input, json!({"deal": "acme"}));
    assert!(!refused_in_episode(&role).await);
}

#[tokio::test]
async fn a_denying_approver_reason_reaches_the_model() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (role, llm) = signing_role(
        calls.clone(),
        AuthorityConfig::new().needs_approval(["sign_contracts"]),
    );
    let role = role.approver(Recording(Mutex::default(), false));
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(tool_result(&llm).0.contains("the CFO said no"));
}

#[tokio::test]
async fn autonomous_actions_and_roles_without_authority_run_tools() {
    for authority in [
        Some(AuthorityConfig::new().autonomous(["sign_contracts"])),
        None,
    ] {
        let calls = Arc::new(AtomicUsize::new(0));
        let (role, llm) = signing_role(calls.clone(), AuthorityConfig::new());
        let role = match authority {
            Some(a) => role.authority(a),
            None => Role::new("cro")
                .operator(role.operators()[0].clone())
                .with_llm(Arc::new(llm.clone())),
        };
        close(&role).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(tool_result(&llm), ("signed acme".to_string(), false));
    }
}

#[tokio::test]
async fn approve_all_runs_what_needs_approval_and_the_default_approver_denies_it() {
    // The approver given: `ApproveAll` lets the action run.
    let calls = Arc::new(AtomicUsize::new(0));
    let needs = || AuthorityConfig::new().needs_approval(["sign_contracts"]);
    let (role, llm) = signing_role(calls.clone(), needs());
    let role = role.approver(ApproveAll);
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(tool_result(&llm), ("signed acme".to_string(), false));
    // No approver given: the default denies, the tool never runs, and the
    // model is told why.
    let calls = Arc::new(AtomicUsize::new(0));
    let (role, llm) = signing_role(calls.clone(), needs());
    close(&role).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let (text, is_error) = tool_result(&llm);
    assert!(is_error, "{text}");
    assert!(text.contains("no approver is configured"), "{text}");
}

// ---------- RoleRuntime ----------

#[derive(Default)]
struct FakeScheduler(Mutex<Vec<(String, TriggerConfig)>>);

#[async_trait]
impl ScheduleProvider for FakeScheduler {
    async fn schedule(
        &self,
        role_id: &str,
        trigger: &TriggerConfig,
    ) -> Result<String, ScheduleError> {
        let mut all = self.0.lock().unwrap();
        all.push((role_id.into(), trigger.clone()));
        Ok(format!("sched-{}", all.len()))
    }
    async fn cancel(&self, _id: &str) -> Result<(), ScheduleError> {
        Ok(())
    }
    async fn list_active(&self, role_id: &str) -> Result<Vec<ScheduleInfo>, ScheduleError> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .iter()
            .enumerate()
            .filter(|(_, (r, _))| r == role_id)
            .map(|(i, (r, t))| ScheduleInfo {
                schedule_id: format!("sched-{}", i + 1),
                role_id: r.clone(),
                trigger: t.clone(),
                next_run: None,
            })
            .collect())
    }
}

#[tokio::test]
async fn runtime_creates_agent_memory_for_roles_with_clearance() {
    let llm = ScriptedLlm::always(text(r#"{"score": 70}"#));
    let workspace = WorkspaceMemory::new();
    let runtime = RoleRuntime::new(Arc::new(llm.clone()))
        .with_workspace(workspace.clone())
        .role(cro())
        .unwrap()
        .role(Role::new("intern").operator(revenue_ops()))
        .unwrap();
    assert!(runtime.get_role("cro").unwrap().agent_memory().is_some());
    assert!(runtime.get_role("intern").unwrap().agent_memory().is_none());
    let ids: Vec<&str> = runtime.list_roles().iter().map(|r| r.role_id()).collect();
    assert_eq!(ids, vec!["cro", "intern"]);

    let out = runtime
        .activate(
            "cro",
            "revenue_ops",
            "qualify",
            [("lead", "Acme")].into_iter().collect(),
        )
        .await
        .unwrap();
    assert_eq!(out.get("score"), Some(&json!({"score": 70})));
    let memory = runtime.get_role("cro").unwrap().agent_memory().unwrap();
    assert_eq!(
        memory
            .recall_episodes(EpisodeQuery::new())
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        memory.workspace().is_some(),
        "agent memory is connected to the shared workspace"
    );

    assert!(matches!(
        runtime
            .activate("ghost", "revenue_ops", "qualify", State::new())
            .await
            .unwrap_err(),
        Error::UnknownRole { .. }
    ));
    assert!(matches!(
        runtime
            .activate("cro", "ghost", "qualify", State::new())
            .await
            .unwrap_err(),
        Error::UnknownOperator { .. }
    ));
    assert!(matches!(
        runtime
            .activate("cro", "revenue_ops", "ghost", State::new())
            .await
            .unwrap_err(),
        Error::Operator(openvibe_operators::Error::UnknownWorkflow { .. })
    ));
    assert!(matches!(
        RoleRuntime::new(Arc::new(llm))
            .role(cro())
            .unwrap()
            .role(cro())
            .unwrap_err(),
        Error::DuplicateRole(_)
    ));
}

#[tokio::test]
async fn start_needs_a_scheduler_and_registers_every_trigger() {
    let llm: Arc<ScriptedLlm> = Arc::new(ScriptedLlm::default());
    let op = revenue_ops().trigger(TriggerConfig {
        id: "daily".into(),
        kind: TriggerKind::Cron,
        schedule: Some("0 9 * * *".into()),
        workflow: "qualify".into(),
        operator_id: None,
        input: json!(null),
    });
    let role = Role::new("cro").operator(op);
    let runtime = RoleRuntime::new(llm.clone()).role(role.clone()).unwrap();
    let err = runtime.start().await.unwrap_err();
    assert!(matches!(err, Error::NoScheduler));
    assert!(err.to_string().contains("activate()"));

    let scheduler = Arc::new(FakeScheduler::default());
    let runtime = RoleRuntime::new(llm)
        .with_scheduler(scheduler.clone())
        .role(role)
        .unwrap();
    let ids = runtime.start().await.unwrap();
    assert_eq!(ids, vec!["sched-1"]);
    let active = scheduler.list_active("cro").await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].trigger.id, "daily");
    assert_eq!(
        active[0].trigger.operator_id.as_deref(),
        Some("revenue_ops")
    );
}

#[tokio::test]
async fn clearance_limits_what_the_role_sees_in_its_prompt() {
    let llm = ScriptedLlm::always(text("ok"));
    let workspace = WorkspaceMemory::new();
    for (id, content, domain, class) in [
        (
            "f1",
            "Acme pipeline is $2M",
            "revenue",
            Classification::Confidential,
        ),
        (
            "f2",
            "Acme board minutes",
            "revenue",
            Classification::Restricted,
        ),
        (
            "f3",
            "Acme brand guide",
            "marketing",
            Classification::Internal,
        ),
    ] {
        workspace
            .store_fact(
                Fact::new(id, content)
                    .entity("acme")
                    .domain(domain)
                    .classification(class),
            )
            .await
            .unwrap();
    }
    let op = Operator::new("intel")
        .node(
            LlmNode::new("brief", "You brief.", |_| Ok("brief".into()))
                .memory_scope(ScopeSpec::new().entity("acme")),
        )
        .sequence("brief", ["brief"])
        .unwrap();
    let runtime = RoleRuntime::new(Arc::new(llm.clone()))
        .with_workspace(workspace)
        .role(Role::new("cro").operator(op).clearance(
            ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential),
        ))
        .unwrap();
    runtime
        .activate("cro", "intel", "brief", State::new())
        .await
        .unwrap();
    let system = llm.last_request().unwrap().system;
    assert!(system.contains("Acme pipeline is $2M"), "{system}");
    assert!(
        !system.contains("board minutes"),
        "restricted is above the role's clearance"
    );
    assert!(!system.contains("brand guide"), "no clearance in marketing");
}

#[tokio::test]
async fn with_stores_puts_agent_memory_and_workspace_in_the_given_backend() {
    use openvibe_memory::in_memory_stores;
    use openvibe_protocols::{CallerContext, EpisodeQuery as Q, FactQuery, InsightQuery};
    let stores = in_memory_stores();
    let llm = ScriptedLlm::always(text("ok"));
    let runtime = RoleRuntime::new(Arc::new(llm))
        .with_stores(stores.clone())
        .role(cro())
        .unwrap();
    runtime
        .activate(
            "cro",
            "revenue_ops",
            "qualify",
            [("lead", "Acme")].into_iter().collect(),
        )
        .await
        .unwrap();
    let memory = runtime.get_role("cro").unwrap().agent_memory().unwrap();
    memory
        .store_insight(Insight::new("i1", "cro", "Learned", 0.9))
        .await
        .unwrap();
    memory.publish_to_workspace(0.5).await.unwrap();
    let admin = CallerContext::system();
    assert_eq!(
        stores
            .episodes
            .query(&admin, &Q::new())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        stores
            .insights
            .query(&admin, &InsightQuery::new())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        stores
            .facts
            .query(&admin, &FactQuery::new())
            .await
            .unwrap()
            .len(),
        1
    );
}
