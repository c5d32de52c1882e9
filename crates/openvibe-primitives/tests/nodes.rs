//! Behaviour of `LlmNode` and `AgentNode` (including the seed's memory-scope tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{
    AgentNode, Error, FnTool, LlmNode, Node, NodeContext, ScopeSpec, Tool, ToolDecision, ToolError,
    ToolGate, tool,
};
use openvibe_protocols::{
    ContentBlock, ContextAssembler, Episode, EpisodeSink, LlmError, LlmResponse, MemoryScope,
    MessageContent, MessageRole, State, StoreError,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ---------- test helpers ----------

#[derive(Default)]
struct FakeAssembler {
    context: String,
    last_scope: Mutex<Option<MemoryScope>>,
    last_budget: Mutex<Option<usize>>,
}

impl FakeAssembler {
    fn with(context: &str) -> Arc<Self> {
        Arc::new(Self {
            context: context.into(),
            ..Self::default()
        })
    }
    fn scope(&self) -> MemoryScope {
        self.last_scope
            .lock()
            .unwrap()
            .clone()
            .expect("assemble was called")
    }
}

#[async_trait]
impl ContextAssembler for FakeAssembler {
    async fn assemble(&self, scope: &MemoryScope, budget: usize) -> Result<String, StoreError> {
        *self.last_scope.lock().unwrap() = Some(scope.clone());
        *self.last_budget.lock().unwrap() = Some(budget);
        Ok(self.context.clone())
    }
}

#[derive(Default)]
struct Recorder {
    episodes: Mutex<Vec<Episode>>,
    fail: bool,
}

impl Recorder {
    fn all(&self) -> Vec<Episode> {
        self.episodes.lock().unwrap().clone()
    }
}

#[async_trait]
impl EpisodeSink for Recorder {
    async fn record(&self, episode: Episode) -> Result<(), StoreError> {
        if self.fail {
            return Err(StoreError::backend("disk full"));
        }
        self.episodes.lock().unwrap().push(episode);
        Ok(())
    }
}

fn state(pairs: &[(&str, &str)]) -> State {
    pairs.iter().map(|(k, v)| (*k, *v)).collect()
}

fn ctx(llm: &ScriptedLlm) -> NodeContext {
    NodeContext::new(Arc::new(llm.clone())).with_operator_id("scoped")
}

fn scoped_qualify() -> LlmNode {
    LlmNode::new("qualify", "You are a lead qualifier.", |s: &State| {
        Ok(format!("Score: {}", s.require_str("lead")?))
    })
    .model("sonnet")
    .output_key("score")
    .memory_scope(
        ScopeSpec::new()
            .domain("revenue")
            .entity_from(|s| s.get_str("company").map(str::to_owned))
            .tags(["qualification"]),
    )
}

fn text(s: &str) -> LlmResponse {
    LlmResponse::text(s).with_usage(10, 20)
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

fn tool_results(msg: &openvibe_protocols::Message) -> Vec<(String, String, bool)> {
    assert_eq!(msg.role, MessageRole::User);
    match &msg.content {
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => (tool_use_id.clone(), content.clone(), *is_error),
                other => panic!("expected a tool result, got {other:?}"),
            })
            .collect(),
        other => panic!("expected blocks, got {other:?}"),
    }
}

// ---------- llm_node: memory scope (seed test_memory_scope.py) ----------

#[tokio::test]
async fn memory_scope_resolved_and_assembled() {
    let llm = ScriptedLlm::new([text("output")]);
    let assembler = FakeAssembler::with("## Insights\n- VP sponsor predicts conversion");
    let ctx = ctx(&llm).with_assembler(assembler.clone());
    scoped_qualify()
        .run(&ctx, state(&[("lead", "Acme"), ("company", "acme_corp")]))
        .await
        .unwrap();
    let scope = assembler.scope();
    assert_eq!(scope.domain.as_deref(), Some("revenue"));
    assert_eq!(scope.entity.as_deref(), Some("acme_corp"));
    assert_eq!(scope.tags, vec!["qualification".to_string()]);
    assert_eq!(*assembler.last_budget.lock().unwrap(), Some(2000));
}

#[tokio::test]
async fn memory_scope_injected_into_system_prompt() {
    let llm = ScriptedLlm::new([text("output")]);
    let ctx = ctx(&llm).with_assembler(FakeAssembler::with("## Insights\n- Test insight"));
    scoped_qualify()
        .run(&ctx, state(&[("lead", "Acme"), ("company", "acme_corp")]))
        .await
        .unwrap();
    let system = llm.last_request().unwrap().system;
    assert_eq!(
        system,
        "You are a lead qualifier.\n\n## Insights\n- Test insight"
    );
}

#[tokio::test]
async fn empty_memory_context_leaves_the_prompt_alone() {
    let llm = ScriptedLlm::new([text("output")]);
    let ctx = ctx(&llm).with_assembler(FakeAssembler::with(""));
    scoped_qualify()
        .run(&ctx, state(&[("lead", "Acme")]))
        .await
        .unwrap();
    assert_eq!(
        llm.last_request().unwrap().system,
        "You are a lead qualifier."
    );
}

#[tokio::test]
async fn no_memory_scope_backward_compat() {
    let llm = ScriptedLlm::new([text("done")]);
    let node = LlmNode::new("process", "You are a processor.", |_| {
        Ok("process this".into())
    })
    .output_key("out");
    // An assembler is wired but the node has no scope: it must not be used.
    let assembler = FakeAssembler::with("SHOULD NOT APPEAR");
    let result = node
        .run(
            &ctx(&llm).with_assembler(assembler.clone()),
            state(&[("input", "x")]),
        )
        .await
        .unwrap();
    assert_eq!(result.get("out"), Some(&json!("done")));
    assert_eq!(
        result.get("input"),
        Some(&json!("x")),
        "other keys are kept"
    );
    assert_eq!(llm.last_request().unwrap().system, "You are a processor.");
    assert!(assembler.last_scope.lock().unwrap().is_none());
}

#[tokio::test]
async fn no_assembler_memory_scope_ignored() {
    let llm = ScriptedLlm::new([text("output")]);
    let result = scoped_qualify()
        .run(
            &ctx(&llm),
            state(&[("lead", "Acme"), ("company", "acme_corp")]),
        )
        .await
        .unwrap();
    assert!(result.contains_key("score"));
    assert_eq!(
        llm.last_request().unwrap().system,
        "You are a lead qualifier."
    );
}

// ---------- llm_node: request, parsing, state ----------

#[tokio::test]
async fn request_carries_model_temperature_and_user_message() {
    let llm = ScriptedLlm::new([text("x")]);
    let node = LlmNode::new("n", "sys", |s: &State| {
        Ok(format!("hello {}", s.require_str("who")?))
    })
    .model("opus")
    .temperature(0.2)
    .max_tokens(512);
    node.run(&ctx(&llm), state(&[("who", "bob")]))
        .await
        .unwrap();
    let req = llm.last_request().unwrap();
    assert_eq!(req.model, "opus");
    assert_eq!(req.temperature, Some(0.2));
    assert_eq!(req.max_tokens, 512);
    assert_eq!(req.messages.len(), 1);
    assert_eq!(req.first_user_text(), "hello bob");
    assert!(req.tools.is_empty());
}

#[tokio::test]
async fn defaults_follow_the_seed() {
    let llm = ScriptedLlm::new([text("x")]);
    LlmNode::new("n", "sys", |_| Ok("u".into()))
        .run(&ctx(&llm), State::new())
        .await
        .unwrap();
    let req = llm.last_request().unwrap();
    assert_eq!(req.model, "haiku");
    assert_eq!(req.temperature, Some(0.7));
    assert_eq!(req.max_tokens, 4096);
}

#[tokio::test]
async fn output_is_parsed_as_json_fenced_json_or_text() {
    for (answer, expected) in [
        (r#"{"score": 85}"#, json!({"score": 85})),
        (
            "Here you go:\n```json\n{\"score\": 90, \"tier\": \"A\"}\n```",
            json!({"score": 90, "tier": "A"}),
        ),
        ("[1, 2, 3]", json!([1, 2, 3])),
        ("A warm lead.", json!("A warm lead.")),
    ] {
        let llm = ScriptedLlm::new([text(answer)]);
        let out = LlmNode::new("n", "s", |_| Ok("u".into()))
            .output_key("result")
            .run(&ctx(&llm), State::new())
            .await
            .unwrap();
        assert_eq!(out.get("result"), Some(&expected), "answer {answer:?}");
    }
}

#[tokio::test]
async fn without_output_key_the_state_is_unchanged() {
    let llm = ScriptedLlm::new([text("{\"a\": 1}")]);
    let input = state(&[("k", "v")]);
    let out = LlmNode::new("n", "s", |_| Ok("u".into()))
        .run(&ctx(&llm), input.clone())
        .await
        .unwrap();
    assert_eq!(out, input);
}

#[tokio::test]
async fn missing_state_key_is_a_typed_error_and_no_call_is_made() {
    let llm = ScriptedLlm::new([text("x")]);
    let err = scoped_qualify()
        .run(&ctx(&llm), state(&[("company", "acme")]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::State { ref node, .. } if node == "qualify"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`lead`"), "{err}");
    assert_eq!(llm.call_count(), 0);
}

#[tokio::test]
async fn provider_errors_are_wrapped_with_the_node_name() {
    let llm = ScriptedLlm::default();
    llm.push_error(LlmError::Overloaded {
        provider: "anthropic".into(),
        status: 529,
        message: "Overloaded".into(),
        attempts: 4,
    });
    let err = LlmNode::new("n", "s", |_| Ok("u".into()))
        .run(&ctx(&llm), State::new())
        .await
        .unwrap_err();
    match err {
        Error::Llm { node, source } => {
            assert_eq!(node, "n");
            assert!(matches!(source, LlmError::Overloaded { status: 529, .. }));
        }
        other => panic!("unexpected {other:?}"),
    }
}

// ---------- llm_node: episodes ----------

#[tokio::test]
async fn episode_auto_recorded() {
    let llm = ScriptedLlm::new([text(r#"{"score": 85}"#)]);
    let recorder = Arc::new(Recorder::default());
    let ctx = ctx(&llm)
        .with_assembler(FakeAssembler::with("ctx"))
        .with_episode_sink(recorder.clone());
    scoped_qualify()
        .run(&ctx, state(&[("lead", "Acme"), ("company", "acme_corp")]))
        .await
        .unwrap();
    let episodes = recorder.all();
    assert_eq!(episodes.len(), 1);
    let ep = &episodes[0];
    assert_eq!(ep.operator_id, "scoped");
    assert_eq!(ep.node_name, "qualify");
    assert_eq!(ep.action, "qualify");
    assert_eq!(ep.domain, "revenue");
    assert_eq!(ep.entity, "acme_corp");
    assert_eq!(ep.tags, vec!["qualification".to_string()]);
    assert_eq!(ep.tokens_in, 10);
    assert_eq!(ep.tokens_out, 20);
    assert_eq!(ep.input_summary, "Score: Acme");
    assert_eq!(ep.output_summary, r#"{"score":85}"#);
    assert_eq!(
        ep.outcome,
        json!({"output_key": "score", "value": {"score": 85}})
    );
    assert!(ep.id.starts_with("ep_"));
}

#[tokio::test]
async fn episode_scope_is_resolved_without_an_assembler() {
    let llm = ScriptedLlm::new([text("ok")]);
    let recorder = Arc::new(Recorder::default());
    scoped_qualify()
        .run(
            &ctx(&llm).with_episode_sink(recorder.clone()),
            state(&[("lead", "Acme"), ("company", "beta")]),
        )
        .await
        .unwrap();
    assert_eq!(recorder.all()[0].entity, "beta");
}

#[tokio::test]
async fn episode_duration_is_measured() {
    let llm = ScriptedLlm::from_fn(|_| {
        std::thread::sleep(Duration::from_millis(30));
        Ok(LlmResponse::text("slow"))
    });
    let recorder = Arc::new(Recorder::default());
    LlmNode::new("n", "s", |_| Ok("u".into()))
        .run(&ctx(&llm).with_episode_sink(recorder.clone()), State::new())
        .await
        .unwrap();
    let ms = recorder.all()[0].duration_ms;
    assert!((30..5_000).contains(&ms), "duration {ms} ms");
}

#[tokio::test]
async fn episode_summaries_are_truncated_on_char_boundaries() {
    let long = "é".repeat(500);
    let llm = ScriptedLlm::new([text(&"ü".repeat(300))]);
    let recorder = Arc::new(Recorder::default());
    let input = long.clone();
    LlmNode::new("n", "s", move |_| Ok(input.clone()))
        .run(&ctx(&llm).with_episode_sink(recorder.clone()), State::new())
        .await
        .unwrap();
    let ep = &recorder.all()[0];
    assert_eq!(ep.input_summary.chars().count(), 200);
    assert_eq!(ep.output_summary.chars().count(), 200);
}

#[tokio::test]
async fn no_recorder_no_error() {
    let llm = ScriptedLlm::new([text("x")]);
    scoped_qualify()
        .run(
            &ctx(&llm),
            state(&[("lead", "Acme"), ("company", "acme_corp")]),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_failing_episode_sink_is_reported_not_swallowed() {
    let llm = ScriptedLlm::new([text("x")]);
    let recorder = Arc::new(Recorder {
        fail: true,
        ..Recorder::default()
    });
    let err = LlmNode::new("n", "s", |_| Ok("u".into()))
        .run(&ctx(&llm).with_episode_sink(recorder), State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Memory { .. }), "{err:?}");
    assert!(err.to_string().contains("disk full"));
}

// ---------- agent_node ----------

fn agent_scoped() -> AgentNode {
    AgentNode::new("investigate", "You are a research analyst.", |s: &State| {
        Ok(format!("Research: {}", s.require_str("topic")?))
    })
    .output_key("research")
    .memory_scope(ScopeSpec::new().domain("revenue"))
}

#[tokio::test]
async fn agent_node_memory_scope() {
    let llm = ScriptedLlm::new([text("research results")]);
    let assembler = FakeAssembler::with("## Insights\n- Agent insight");
    let result = agent_scoped()
        .run(
            &ctx(&llm).with_assembler(assembler.clone()),
            state(&[("topic", "AI")]),
        )
        .await
        .unwrap();
    assert_eq!(assembler.scope().domain.as_deref(), Some("revenue"));
    assert!(llm.last_request().unwrap().system.contains("Agent insight"));
    assert_eq!(result.get("research"), Some(&json!("research results")));
}

#[tokio::test]
async fn agent_node_episode_recorded() {
    let llm = ScriptedLlm::new([text("done")]);
    let recorder = Arc::new(Recorder::default());
    agent_scoped()
        .run(
            &ctx(&llm).with_episode_sink(recorder.clone()),
            state(&[("topic", "AI")]),
        )
        .await
        .unwrap();
    let episodes = recorder.all();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].node_name, "investigate");
    assert_eq!(episodes[0].domain, "revenue");
}

#[derive(Deserialize, JsonSchema)]
struct CityArgs {
    city: String,
}

fn weather_tool(calls: Arc<AtomicUsize>) -> impl Tool {
    FnTool::new(
        "weather",
        "Current weather in a city.",
        move |a: CityArgs| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                if a.city == "Atlantis" {
                    Err(format!("no weather station in {}", a.city))
                } else {
                    Ok(json!({"city": a.city, "temp_c": 21}))
                }
            }
        },
    )
}

#[tokio::test]
async fn two_tool_calls_in_one_turn_are_both_answered_in_order() {
    let calls = Arc::new(AtomicUsize::new(0));
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![
            ContentBlock::text("Checking both."),
            tool_use("t1", "weather", json!({"city": "Paris"})),
            tool_use("t2", "weather", json!({"city": "Oslo"})),
        ])
        .with_usage(100, 10),
        LlmResponse::text(r#"{"warmest": "Paris"}"#).with_usage(200, 5),
    ]);
    let recorder = Arc::new(Recorder::default());
    let node = AgentNode::new("compare", "You compare weather.", |_| {
        Ok("Paris or Oslo?".into())
    })
    .tool(weather_tool(calls.clone()))
    .output_key("answer");
    let out = node
        .run(&ctx(&llm).with_episode_sink(recorder.clone()), State::new())
        .await
        .unwrap();
    assert_eq!(out.get("answer"), Some(&json!({"warmest": "Paris"})));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].tools.len(), 1);
    assert_eq!(requests[0].tools[0].name, "weather");
    let second = &requests[1];
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.messages[1].role, MessageRole::Assistant);
    let results = tool_results(&second.messages[2]);
    assert_eq!(
        results,
        vec![
            ("t1".into(), r#"{"city":"Paris","temp_c":21}"#.into(), false),
            ("t2".into(), r#"{"city":"Oslo","temp_c":21}"#.into(), false),
        ]
    );

    let ep = &recorder.all()[0];
    assert_eq!(
        (ep.tokens_in, ep.tokens_out),
        (300, 15),
        "usage summed over turns"
    );
    assert_eq!(ep.outcome["agent"]["turns"], 2);
    assert_eq!(
        ep.outcome["agent"]["tool_calls"].as_array().unwrap().len(),
        2
    );
}

#[tokio::test]
async fn tool_errors_unknown_tools_and_bad_arguments_become_error_results() {
    let calls = Arc::new(AtomicUsize::new(0));
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![
            tool_use("a", "weather", json!({"city": "Atlantis"})),
            tool_use("b", "teleport", json!({"to": "Mars"})),
            tool_use("c", "weather", json!({"town": "Oslo"})),
        ]),
        LlmResponse::text("I could not find it."),
    ]);
    let node = AgentNode::new("n", "s", |_| Ok("go".into()))
        .tool(weather_tool(calls.clone()))
        .output_key("out");
    let out = node.run(&ctx(&llm), State::new()).await.unwrap();
    assert_eq!(out.get("out"), Some(&json!("I could not find it.")));
    let results = tool_results(&llm.requests()[1].messages[2]);
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        ("a".into(), "no weather station in Atlantis".into(), true)
    );
    assert_eq!(results[1].0, "b");
    assert!(results[1].2);
    assert!(results[1].1.contains("unknown tool `teleport`") && results[1].1.contains("weather"));
    assert_eq!(results[2].0, "c");
    assert!(results[2].2);
    assert!(
        results[2]
            .1
            .starts_with("invalid arguments for tool `weather`"),
        "{}",
        results[2].1
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "only the valid call reached the tool"
    );
}

#[tokio::test]
async fn max_turns_bounds_the_loop_with_a_clear_error() {
    let llm = ScriptedLlm::always(LlmResponse::from_blocks(vec![tool_use(
        "x",
        "weather",
        json!({"city": "Rome"}),
    )]));
    let err = AgentNode::new("loopy", "s", |_| Ok("go".into()))
        .tool(weather_tool(Arc::default()))
        .max_turns(3)
        .run(&ctx(&llm), State::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::MaxTurnsExceeded { max_turns: 3, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("raise max_turns"));
    assert_eq!(llm.call_count(), 3);
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[tokio::test]
async fn parallel_safe_tools_of_one_turn_run_concurrently() {
    // Both calls wait on a barrier of two: it only opens if they run at the same time.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let b = barrier.clone();
    let meet = FnTool::new("meet", "Wait for the other call.", move |_: Empty| {
        let b = b.clone();
        async move {
            b.wait().await;
            Ok::<_, String>("met")
        }
    });
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![
            tool_use("1", "meet", json!({})),
            tool_use("2", "meet", json!({})),
        ]),
        LlmResponse::text("done"),
    ]);
    let node = AgentNode::new("n", "s", |_| Ok("go".into())).tool(meet);
    let ctx = ctx(&llm);
    let run = node.run(&ctx, State::new());
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("calls of one turn must run concurrently")
        .unwrap();
}

#[tokio::test]
async fn sequential_tools_run_one_at_a_time_in_order() {
    let active = Arc::new(AtomicUsize::new(0));
    let max_active = Arc::new(AtomicUsize::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    let (a, m, o) = (active.clone(), max_active.clone(), order.clone());
    let step = FnTool::new("step", "One ordered step.", move |args: CityArgs| {
        let (a, m, o) = (a.clone(), m.clone(), o.clone());
        async move {
            let now = a.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            o.lock().unwrap().push(args.city);
            a.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, String>("ok")
        }
    })
    .sequential();
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![
            tool_use("1", "step", json!({"city": "a"})),
            tool_use("2", "step", json!({"city": "b"})),
            tool_use("3", "step", json!({"city": "c"})),
        ]),
        LlmResponse::text("done"),
    ]);
    AgentNode::new("n", "s", |_| Ok("go".into()))
        .tool(step)
        .run(&ctx(&llm), State::new())
        .await
        .unwrap();
    assert_eq!(max_active.load(Ordering::SeqCst), 1);
    assert_eq!(*order.lock().unwrap(), vec!["a", "b", "c"]);
}

struct Gate {
    allow: bool,
    seen: Mutex<Vec<(String, String)>>,
}

#[async_trait]
impl ToolGate for Gate {
    async fn check(&self, tool: &str, action: &str, _input: &Value) -> ToolDecision {
        self.seen.lock().unwrap().push((tool.into(), action.into()));
        if self.allow {
            ToolDecision::Allow
        } else {
            ToolDecision::Deny(format!("action `{action}` is forbidden for this role"))
        }
    }
}

#[tokio::test]
async fn the_tool_gate_decides_on_tools_that_declare_an_action() {
    for allow in [false, true] {
        let sent = Arc::new(AtomicUsize::new(0));
        let s = sent.clone();
        let send = FnTool::new("send_contract", "Send a contract.", move |_: Empty| {
            let s = s.clone();
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("sent")
            }
        })
        .action("sign_contracts");
        let weather_calls = Arc::new(AtomicUsize::new(0));
        let llm = ScriptedLlm::new([
            LlmResponse::from_blocks(vec![
                tool_use("1", "send_contract", json!({})),
                tool_use("2", "weather", json!({"city": "Oslo"})),
            ]),
            LlmResponse::text("ok"),
        ]);
        let gate = Arc::new(Gate {
            allow,
            seen: Mutex::default(),
        });
        let recorder = Arc::new(Recorder::default());
        AgentNode::new("n", "s", |_| Ok("go".into()))
            .tool(send)
            .tool(weather_tool(weather_calls.clone()))
            .run(
                &ctx(&llm)
                    .with_tool_gate(gate.clone())
                    .with_episode_sink(recorder.clone()),
                State::new(),
            )
            .await
            .unwrap();
        let results = tool_results(&llm.requests()[1].messages[2]);
        assert_eq!(
            *gate.seen.lock().unwrap(),
            vec![("send_contract".to_string(), "sign_contracts".to_string())],
            "only the tool with an action is gated"
        );
        assert_eq!(weather_calls.load(Ordering::SeqCst), 1);
        let log = recorder.all()[0].outcome["agent"]["tool_calls"].clone();
        if allow {
            assert_eq!(sent.load(Ordering::SeqCst), 1);
            assert_eq!(results[0], ("1".into(), "sent".into(), false));
            assert_eq!(log[0]["refused"], false);
        } else {
            assert_eq!(
                sent.load(Ordering::SeqCst),
                0,
                "a refused tool is not executed"
            );
            assert!(results[0].2);
            assert!(results[0].1.contains("forbidden"), "{}", results[0].1);
            assert_eq!(log[0]["refused"], true, "the episode records the refusal");
        }
    }
}

struct Panicky;

#[async_trait]
impl Tool for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn description(&self) -> &str {
        "Always panics."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "required": []})
    }
    async fn call(&self, _input: Value) -> Result<String, ToolError> {
        panic!("boom")
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![tool_use("p", "panicky", json!({}))]),
        LlmResponse::text("recovered"),
    ]);
    let out = AgentNode::new("n", "s", |_| Ok("go".into()))
        .tool(Panicky)
        .output_key("o")
        .run(&ctx(&llm), State::new())
        .await
        .unwrap();
    assert_eq!(out.get("o"), Some(&json!("recovered")));
    let results = tool_results(&llm.requests()[1].messages[2]);
    assert!(results[0].2 && results[0].1.contains("panicked"));
}

#[tokio::test]
async fn duplicate_tool_names_are_a_configuration_error() {
    let llm = ScriptedLlm::new([text("x")]);
    let err = AgentNode::new("n", "s", |_| Ok("go".into()))
        .tool(weather_tool(Arc::default()))
        .tool(weather_tool(Arc::default()))
        .run(&ctx(&llm), State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
    assert_eq!(llm.call_count(), 0);
}

/// Look up a company's headcount.
#[tool(params(name = "Company name"))]
async fn headcount(name: String) -> Result<u32, String> {
    match name.as_str() {
        "Acme" => Ok(200),
        other => Err(format!("no company named {other}")),
    }
}

#[tokio::test]
async fn macro_tools_work_in_the_loop() {
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![
            tool_use("1", "headcount", json!({"name": "Acme"})),
            tool_use("2", "headcount", json!({"name": "Nope"})),
        ]),
        LlmResponse::text("Acme has 200 people."),
    ]);
    AgentNode::new("n", "s", |_| Ok("go".into()))
        .tool(Headcount)
        .run(&ctx(&llm), State::new())
        .await
        .unwrap();
    let results = tool_results(&llm.requests()[1].messages[2]);
    assert_eq!(results[0], ("1".into(), "200".into(), false));
    assert_eq!(
        results[1],
        ("2".into(), "no company named Nope".into(), true)
    );
}

#[tokio::test]
async fn a_provider_without_raw_blocks_still_gets_a_valid_assistant_turn() {
    let mut response =
        LlmResponse::from_blocks(vec![tool_use("z", "weather", json!({"city": "Rome"}))]);
    response.raw_content.clear();
    let llm = ScriptedLlm::new([response, LlmResponse::text("done")]);
    AgentNode::new("n", "s", |_| Ok("go".into()))
        .tool(weather_tool(Arc::default()))
        .run(&ctx(&llm), State::new())
        .await
        .unwrap();
    let assistant = &llm.requests()[1].messages[1];
    assert_eq!(
        assistant.content,
        MessageContent::Blocks(vec![tool_use("z", "weather", json!({"city": "Rome"}))])
    );
}

/// You research companies with the tools you have.
#[openvibe_primitives::agent_node(
    tools = [Headcount],
    max_turns = 3,
    output_key = "research",
    model = "opus",
    memory_scope(domain = "revenue", entity_key = "company", tags = ["research"])
)]
fn research(state: &State) -> String {
    format!("Research {}", state.get_str("company").unwrap_or("nobody"))
}

#[tokio::test]
async fn agent_node_attribute_builds_a_working_node() {
    let llm = ScriptedLlm::new([
        LlmResponse::from_blocks(vec![tool_use("1", "headcount", json!({"name": "Acme"}))]),
        LlmResponse::text("Acme: 200 people"),
    ]);
    let assembler = FakeAssembler::with("");
    let node = research();
    assert_eq!(node.name(), "research");
    assert_eq!(
        node.system_prompt(),
        "You research companies with the tools you have."
    );
    assert_eq!(node.tools().len(), 1);
    let out = node
        .run(
            &ctx(&llm).with_assembler(assembler.clone()),
            state(&[("company", "Acme")]),
        )
        .await
        .unwrap();
    assert_eq!(out.get("research"), Some(&json!("Acme: 200 people")));
    let first = &llm.requests()[0];
    assert_eq!(first.model, "opus");
    assert_eq!(first.first_user_text(), "Research Acme");
    let scope = assembler.scope();
    assert_eq!(scope.entity.as_deref(), Some("Acme"));
    assert_eq!(scope.tags, vec!["research".to_string()]);
    let results = tool_results(&llm.requests()[1].messages[2]);
    assert_eq!(results[0], ("1".into(), "200".into(), false));
}
