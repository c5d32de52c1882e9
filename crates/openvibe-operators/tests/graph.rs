//! StateGraph: validation, routing, bounds, checkpoints and resume.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openvibe_operators::{Checkpointer, END, Error, InMemoryCheckpointer, Operator, StateGraph};
use openvibe_primitives::testing::ScriptedLlm;
use openvibe_primitives::{LlmNode, NodeContext};
use openvibe_protocols::{LlmError, LlmResponse, State};
use serde_json::json;

fn noop(name: &str) -> LlmNode {
    LlmNode::new(name, format!("You are {name}."), |_| Ok("go".into())).output_key(name)
}

fn ctx(llm: &ScriptedLlm) -> NodeContext {
    NodeContext::new(Arc::new(llm.clone()))
}

/// A node that counts its runs and appends its name to `path`.
fn step(
    name: &'static str,
    counter: Arc<AtomicUsize>,
) -> impl Fn(State) -> Result<State, openvibe_primitives::Error> + Send + Sync {
    move |mut state: State| {
        counter.fetch_add(1, Ordering::SeqCst);
        let mut path: Vec<String> = state.get_as("path").unwrap().unwrap_or_default();
        path.push(name.to_owned());
        state.set("path", path).unwrap();
        Ok(state)
    }
}

#[test]
fn compile_rejects_a_missing_entry_point() {
    let err = StateGraph::new()
        .add_node(noop("a"))
        .add_edge("a", END)
        .compile()
        .unwrap_err();
    assert!(matches!(err, Error::MissingEntryPoint), "{err}");
}

#[test]
fn compile_rejects_unknown_nodes_everywhere() {
    let err = StateGraph::new()
        .add_node(noop("a"))
        .set_entry_point("b")
        .add_edge("a", END)
        .compile()
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownNode { ref node, .. } if node == "b"),
        "{err}"
    );

    let err = StateGraph::new()
        .add_node(noop("a"))
        .set_entry_point("a")
        .add_edge("a", "ghost")
        .compile()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "graph: unknown node `ghost` (edge from `a`)"
    );

    let err = StateGraph::new()
        .add_node(noop("a"))
        .set_entry_point("a")
        .add_conditional_edges("a", |_| END.to_string(), ["a", "phantom"])
        .compile()
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownNode { ref node, .. } if node == "phantom"),
        "{err}"
    );

    let err = StateGraph::new()
        .add_node(noop("a"))
        .set_entry_point("a")
        .add_edge("a", END)
        .add_edge("nobody", "a")
        .compile()
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownNode { ref node, .. } if node == "nobody"),
        "{err}"
    );
}

#[test]
fn compile_rejects_unreachable_nodes() {
    let err = StateGraph::new()
        .add_node(noop("a"))
        .add_node(noop("island"))
        .add_node(noop("b"))
        .set_entry_point("a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .add_edge("island", "b")
        .compile()
        .unwrap_err();
    match err {
        Error::UnreachableNodes { entry, nodes } => {
            assert_eq!(entry, "a");
            assert_eq!(nodes, vec!["island".to_string()]);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn compile_rejects_dead_ends_duplicates_and_ambiguity() {
    let err = StateGraph::new()
        .add_node(noop("a"))
        .add_node(noop("b"))
        .set_entry_point("a")
        .add_edge("a", "b")
        .compile()
        .unwrap_err();
    assert!(
        matches!(err, Error::NoOutgoingEdge(ref n) if n == "b"),
        "{err}"
    );

    let err = StateGraph::new()
        .add_node(noop("a"))
        .add_node(noop("a"))
        .set_entry_point("a")
        .add_edge("a", END)
        .compile()
        .unwrap_err();
    assert!(
        matches!(err, Error::DuplicateNode(ref n) if n == "a"),
        "{err}"
    );

    let err = StateGraph::new()
        .add_node(noop("a"))
        .set_entry_point("a")
        .add_edge("a", END)
        .add_conditional_edges("a", |_| END.to_string(), ["a"])
        .compile()
        .unwrap_err();
    assert!(
        matches!(err, Error::AmbiguousEdges(ref n) if n == "a"),
        "{err}"
    );
}

#[tokio::test]
async fn linear_graph_runs_nodes_in_order() {
    let llm = ScriptedLlm::new([
        LlmResponse::text("one"),
        LlmResponse::text("two"),
        LlmResponse::text("{\"three\": 3}"),
    ]);
    let graph = StateGraph::new()
        .add_node(noop("a"))
        .add_node(noop("b"))
        .add_node(noop("c"))
        .set_entry_point("a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .compile()
        .unwrap();
    let out = graph.invoke(&ctx(&llm), State::new()).await.unwrap();
    assert_eq!(out.get("a"), Some(&json!("one")));
    assert_eq!(out.get("b"), Some(&json!("two")));
    assert_eq!(out.get("c"), Some(&json!({"three": 3})));
    let systems: Vec<String> = llm.requests().into_iter().map(|r| r.system).collect();
    assert_eq!(systems, vec!["You are a.", "You are b.", "You are c."]);
}

#[tokio::test]
async fn conditional_edges_route_on_the_state() {
    let counter = Arc::new(AtomicUsize::new(0));
    let graph = StateGraph::new()
        .add_fn_node("score", move |mut s: State| {
            let score = s.get_as::<u32>("score").unwrap().unwrap_or(0);
            s.insert("tier", if score >= 80 { "hot" } else { "cold" });
            Ok(s)
        })
        .add_fn_node("hot", step("hot", counter.clone()))
        .add_fn_node("cold", step("cold", counter.clone()))
        .set_entry_point("score")
        .add_conditional_edges(
            "score",
            |s: &State| s.get_str("tier").unwrap_or("cold").to_owned(),
            ["hot", "cold"],
        )
        .add_edge("hot", END)
        .add_edge("cold", END)
        .compile()
        .unwrap();
    let llm = ScriptedLlm::default();
    for (score, expected) in [(90, "hot"), (10, "cold")] {
        let mut input = State::new();
        input.insert("score", score);
        let out = graph.invoke(&ctx(&llm), input).await.unwrap();
        assert_eq!(out.get("path"), Some(&json!([expected])));
    }
    assert_eq!(counter.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_router_choosing_an_undeclared_target_is_an_error() {
    let graph = StateGraph::new()
        .add_fn_node("a", Ok)
        .add_fn_node("b", Ok)
        .set_entry_point("a")
        .add_conditional_edges("a", |_| "c".to_string(), ["b"])
        .add_edge("b", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke(&ctx(&ScriptedLlm::default()), State::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidRoute { ref target, .. } if target == "c"),
        "{err}"
    );
}

#[tokio::test]
async fn cycles_are_bounded_by_the_recursion_limit() {
    let counter = Arc::new(AtomicUsize::new(0));
    let graph = StateGraph::new()
        .add_fn_node("again", step("again", counter.clone()))
        .set_entry_point("again")
        .add_conditional_edges("again", |_| "again".to_string(), ["again"])
        .compile()
        .unwrap()
        .recursion_limit(7);
    let err = graph
        .invoke(&ctx(&ScriptedLlm::default()), State::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::RecursionLimit { limit: 7, .. }),
        "{err}"
    );
    assert_eq!(counter.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn a_loop_that_exits_runs_the_right_number_of_times() {
    let graph = StateGraph::new()
        .add_fn_node("inc", |mut s: State| {
            let n = s.get_as::<u32>("n").unwrap().unwrap_or(0);
            s.insert("n", n + 1);
            Ok(s)
        })
        .set_entry_point("inc")
        .add_conditional_edges(
            "inc",
            |s: &State| {
                if s.get_as::<u32>("n").unwrap().unwrap_or(0) < 5 {
                    "inc".to_string()
                } else {
                    END.to_string()
                }
            },
            ["inc"],
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(&ctx(&ScriptedLlm::default()), State::new())
        .await
        .unwrap();
    assert_eq!(out.get("n"), Some(&json!(5)));
}

#[tokio::test]
async fn node_errors_name_the_node() {
    let llm = ScriptedLlm::new([LlmResponse::text("ok")]);
    llm.push_error(LlmError::Other("model exploded".into()));
    let graph = StateGraph::new()
        .add_node(noop("first"))
        .add_node(noop("second"))
        .set_entry_point("first")
        .add_edge("first", "second")
        .add_edge("second", END)
        .compile()
        .unwrap();
    let err = graph.invoke(&ctx(&llm), State::new()).await.unwrap_err();
    assert!(
        matches!(err, Error::Node { ref node, .. } if node == "second"),
        "{err}"
    );
    assert!(err.to_string().contains("model exploded"));
}

#[tokio::test]
async fn a_failed_run_resumes_from_the_node_that_failed() {
    let checkpoints = Arc::new(InMemoryCheckpointer::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let failures_left = Arc::new(AtomicUsize::new(1));
    let fl = failures_left.clone();
    let graph = StateGraph::new()
        .add_fn_node("n1", step("n1", runs.clone()))
        .add_fn_node("n2", step("n2", runs.clone()))
        .add_fn_node("flaky", move |mut s: State| {
            if fl.load(Ordering::SeqCst) > 0 {
                fl.fetch_sub(1, Ordering::SeqCst);
                return Err(openvibe_primitives::Error::Config {
                    node: "flaky".into(),
                    message: "temporary outage".into(),
                });
            }
            let mut path: Vec<String> = s.get_as("path").unwrap().unwrap_or_default();
            path.push("flaky".into());
            s.set("path", path).unwrap();
            Ok(s)
        })
        .add_fn_node("n4", step("n4", runs.clone()))
        .set_entry_point("n1")
        .add_edge("n1", "n2")
        .add_edge("n2", "flaky")
        .add_edge("flaky", "n4")
        .add_edge("n4", END)
        .compile()
        .unwrap()
        .with_checkpointer(checkpoints.clone());
    let ctx = ctx(&ScriptedLlm::default());

    let err = graph
        .invoke_run(&ctx, "run-1", State::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Node { ref node, .. } if node == "flaky"));
    let saved = checkpoints.load("run-1").await.unwrap().unwrap();
    assert_eq!(
        (saved.step, saved.completed.as_str(), saved.next.as_str()),
        (2, "n2", "flaky")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Resume: n1 and n2 are not run again; the given state is ignored.
    let out = graph
        .invoke_run(&ctx, "run-1", [("ignored", "yes")].into_iter().collect())
        .await
        .unwrap();
    assert_eq!(out.get("path"), Some(&json!(["n1", "n2", "flaky", "n4"])));
    assert!(!out.contains_key("ignored"));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "only n4 ran after resuming");
    let done = checkpoints.load("run-1").await.unwrap().unwrap();
    assert_eq!((done.step, done.next.as_str()), (4, END));

    // A finished run returns its final state without running anything.
    let again = graph.invoke_run(&ctx, "run-1", State::new()).await.unwrap();
    assert_eq!(again, out);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn operators_bind_their_context_and_run_nodes_and_workflows() {
    let op = Operator::new("revenue_ops")
        .node(noop("qualify"))
        .node(noop("route"))
        .sequence("pipeline", ["qualify", "route"])
        .unwrap();
    let llm = ScriptedLlm::new([
        LlmResponse::text("q1"),
        LlmResponse::text("q2"),
        LlmResponse::text("r2"),
    ]);
    let bound = op.bind(ctx(&llm));
    assert_eq!(bound.context().operator_id, "revenue_ops");
    let one = bound.run_node("qualify", State::new()).await.unwrap();
    assert_eq!(one.get("qualify"), Some(&json!("q1")));
    let both = bound.run_workflow("pipeline", State::new()).await.unwrap();
    assert_eq!(both.get("route"), Some(&json!("r2")));
    assert!(matches!(
        bound.run_workflow("nope", State::new()).await.unwrap_err(),
        Error::UnknownWorkflow { .. }
    ));
    assert!(matches!(
        bound.run_node("nope", State::new()).await.unwrap_err(),
        Error::UnknownNode { .. }
    ));
    assert!(matches!(
        Operator::new("x").sequence("w", ["missing"]).unwrap_err(),
        Error::UnknownNode { .. }
    ));
}
