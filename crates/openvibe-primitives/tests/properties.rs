//! Property tests of what a model's output goes through: the output parser
//! (JSON, fenced JSON, text) and the cassette format. Any input gives a
//! value or a typed error, never a panic; JSON round-trips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_primitives::testing::RecordReplayProvider;
use openvibe_primitives::{FnTool, Tool, parse_output};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::Value;

/// Arbitrary JSON values (finite numbers).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A tool's typed arguments.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    company: String,
    limit: u32,
    tags: Vec<String>,
    exact: Option<bool>,
}

fn lookup_tool() -> impl Tool {
    FnTool::new("lookup", "Look a company up", |args: Lookup| async move {
        Ok::<_, String>(args)
    })
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

proptest! {
    // Minimised failures are kept beside this file (`properties.regressions`)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn json_output_round_trips_bare_and_fenced(v in json(), prose in "[A-Za-z ,.]{0,30}") {
        let text = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(parse_output(&text), v.clone());
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let fenced = format!("{prose}\n```json\n{pretty}\n```\nthat is all");
        prop_assert_eq!(parse_output(&fenced), v.clone());
        let plain_fence = format!("```\n{pretty}\n```");
        prop_assert_eq!(parse_output(&plain_fence), v);
    }

    #[test]
    fn any_output_is_a_value_and_prose_stays_text(text in "\\PC{0,300}") {
        let parsed = parse_output(&text);
        if let Value::String(s) = &parsed {
            // Text that is not JSON comes back exactly as it was.
            if serde_json::from_str::<Value>(text.trim()).is_err() && !text.contains("```") {
                prop_assert_eq!(s, &text);
            }
        }
    }

    #[test]
    fn any_cassette_text_replays_or_names_the_bad_line(
        lines in proptest::collection::vec(
            prop_oneof![
                "\\PC{0,60}",
                Just(r#"{"key":"k","response":{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1},"model":"m"}}"#.to_owned()),
                Just(String::new()),
            ],
            0..6,
        )
    ) {
        let text = lines.join("\n");
        match RecordReplayProvider::replay_str(&text, "c.jsonl") {
            Ok(_) => {}
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains("c.jsonl") && message.contains("line"), "{}", message);
            }
        }
    }

    #[test]
    fn tool_arguments_are_parsed_or_refused_never_a_panic(input in json()) {
        let tool = lookup_tool();
        match block_on(tool.call(input.clone())) {
            Ok(out) => {
                let echoed: Lookup = serde_json::from_str(&out).unwrap();
                prop_assert_eq!(serde_json::from_value::<Lookup>(input).unwrap(), echoed);
            }
            Err(e) => prop_assert!(e.to_string().contains("lookup"), "{}", e),
        }
    }

    #[test]
    fn valid_tool_arguments_reach_the_tool_unchanged(
        company in "\\PC{0,20}", limit in any::<u32>(),
        tags in proptest::collection::vec("\\PC{0,8}", 0..3), exact in any::<Option<bool>>(),
    ) {
        let args = Lookup { company, limit, tags, exact };
        let out = block_on(lookup_tool().call(serde_json::to_value(&args).unwrap())).unwrap();
        prop_assert_eq!(serde_json::from_str::<Lookup>(&out).unwrap(), args);
    }
}
