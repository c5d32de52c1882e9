//! `--features otel`: the demo's spans reach an OTLP receiver over HTTP.
//!
//! The receiver is a stand-in that speaks the protocol (`POST /v1/traces`,
//! `ExportTraceServiceRequest` as protobuf or JSON) and keeps what it gets;
//! the binary runs as a user runs it, configured only by the standard
//! `OTEL_*` variables.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// One export request as the receiver got it.
#[derive(Debug, Clone)]
struct Received {
    content_type: String,
    body: Bytes,
}

/// An OTLP/HTTP trace receiver on a free loopback port.
struct Receiver {
    endpoint: String,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start() -> Self {
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let keep = got.clone();
        let app = Router::new().route(
            "/v1/traces",
            post(move |headers: HeaderMap, body: Bytes| {
                let keep = keep.clone();
                async move {
                    let content_type = headers
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    // An empty ExportTraceServiceResponse, in the request's encoding.
                    let answer = if content_type == "application/json" {
                        Bytes::from_static(b"{}")
                    } else {
                        Bytes::new()
                    };
                    keep.lock().unwrap().push(Received {
                        content_type: content_type.clone(),
                        body,
                    });
                    (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, content_type)],
                        answer,
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { endpoint, got }
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }
}

/// `out` with record ids (32 hex digits, new every run) masked.
fn masked(out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out);
    let mut result = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        result.push_str(if run.len() == 32 { "<id>" } else { &run });
        run.clear();
        result.push(c);
    }
    result.pop();
    result
}

/// Run `openvibe args…` with `env`, as a user would, off the test's runtime.
async fn openvibe(args: &[&str], env: &[(&str, &str)]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_openvibe"));
        command.args(&args).env_remove("RUST_LOG");
        for name in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_SERVICE_NAME",
            "OTEL_RESOURCE_ATTRIBUTES",
            "OTEL_SDK_DISABLED",
            "OTEL_TRACES_EXPORTER",
            "OPENVIBE_DATABASE_URL",
        ] {
            command.env_remove(name);
        }
        command.envs(env).output().unwrap()
    })
    .await
    .unwrap()
}

fn string_of(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            AnyValue::StringValue(s) => s.clone(),
            AnyValue::IntValue(i) => i.to_string(),
            AnyValue::BoolValue(b) => b.to_string(),
            AnyValue::DoubleValue(d) => d.to_string(),
            other => format!("{other:?}"),
        })
}

/// Every span of every protobuf request, with its resource's service name.
fn decode(received: &[Received]) -> (Vec<String>, Vec<Span>) {
    let mut services = Vec::new();
    let mut spans = Vec::new();
    for r in received {
        assert_eq!(r.content_type, "application/x-protobuf");
        let request = ExportTraceServiceRequest::decode(r.body.clone()).unwrap();
        for rs in request.resource_spans {
            let resource = rs.resource.unwrap_or_default();
            services.extend(string_of(&resource.attributes, "service.name"));
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    (services, spans)
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The names of `span`'s ancestors, nearest first.
fn ancestors<'a>(spans: &'a [Span], span: &Span) -> Vec<&'a Span> {
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let mut out = Vec::new();
    let mut parent = span.parent_span_id.as_slice();
    while let Some(p) = by_id.get(parent) {
        out.push(*p);
        parent = p.parent_span_id.as_slice();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_exports_its_spans_as_otlp_protobuf() {
    let receiver = Receiver::start().await;
    let plain = openvibe(&["demo"], &[]).await;
    let out = openvibe(
        &["demo"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "openvibe-otel-test"),
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        masked(&out.stdout),
        masked(&plain.stdout),
        "exporting changes nothing the user sees"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (services, spans) = decode(&receiver.received());
    assert!(
        !services.is_empty() && services.iter().all(|s| s == "openvibe-otel-test"),
        "{services:?}"
    );
    // Info level: the agent stack, no store queries.
    for name in ["activate", "operator_run", "node", "llm_call"] {
        assert!(
            !named(&spans, name).is_empty(),
            "no {name} span in {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    }
    assert!(named(&spans, "store").is_empty(), "store spans are debug");

    let calls = named(&spans, "llm_call");
    for call in &calls {
        assert!(string_of(&call.attributes, "model").is_some(), "{call:?}");
        let tokens: u64 = string_of(&call.attributes, "tokens_in")
            .unwrap()
            .parse()
            .unwrap();
        assert!(tokens > 0, "{call:?}");
        assert!(
            string_of(&call.attributes, "tokens_out").is_some(),
            "{call:?}"
        );
        assert!(
            string_of(&call.attributes, "stop_reason").is_some(),
            "{call:?}"
        );
    }
    // A node's call nests under its node, operator run and activation, in one trace.
    let node_call = calls
        .iter()
        .find(|c| string_of(&c.attributes, "purpose").is_none())
        .unwrap();
    let chain = ancestors(&spans, node_call);
    let names: Vec<&str> = chain.iter().map(|s| s.name.as_str()).collect();
    assert!(names.starts_with(&["node"]), "{names:?}");
    assert!(names.contains(&"operator_run"), "{names:?}");
    let activate = chain
        .iter()
        .find(|s| s.name == "activate")
        .expect("under an activation");
    assert_eq!(activate.trace_id, node_call.trace_id);
    assert_eq!(
        string_of(&activate.attributes, "role").as_deref(),
        Some("cro")
    );
    assert!(
        string_of(&activate.attributes, "tenant").is_some(),
        "{activate:?}"
    );
    assert!(
        string_of(&activate.attributes, "principal").is_some_and(|p| p.starts_with("agent:")),
        "{activate:?}"
    );
    // The reflection between the runs is a call of its own, with its caller.
    let reflect = calls
        .iter()
        .find(|c| string_of(&c.attributes, "purpose").as_deref() == Some("reflect"))
        .expect("the reflection's llm_call");
    assert!(
        string_of(&reflect.attributes, "principal").is_some(),
        "{reflect:?}"
    );

    // No record contents and no prompt text in what left the process.
    let everything = format!("{spans:?}");
    assert!(!everything.contains("Acme"), "record contents exported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_vv_store_queries_are_exported_with_tenant_and_principal() {
    let receiver = Receiver::start().await;
    let out = openvibe(
        &["-vv", "demo"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str())],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (services, spans) = decode(&receiver.received());
    assert!(
        services.iter().all(|s| s == "openvibe"),
        "the default service name: {services:?}"
    );
    let stores = named(&spans, "store");
    assert!(!stores.is_empty());
    for store in stores {
        for key in ["backend", "kind", "op", "tenant", "principal"] {
            assert!(
                string_of(&store.attributes, key).is_some(),
                "{key} missing: {store:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_is_spoken_when_asked_for() {
    let receiver = Receiver::start().await;
    let out = openvibe(
        &["demo"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let received = receiver.received();
    assert!(!received.is_empty());
    let mut names = Vec::new();
    for r in &received {
        assert_eq!(r.content_type, "application/json");
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        for rs in body["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                for span in ss["spans"].as_array().unwrap() {
                    names.push(span["name"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    assert!(names.iter().any(|n| n == "llm_call"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_or_switched_off_costs_the_command_nothing() {
    // A port nobody listens on: bind one, learn it, let it go.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let plain = openvibe(&["demo"], &[]).await;
    let down = openvibe(
        &["demo"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", closed.as_str())],
    )
    .await;
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert_eq!(masked(&down.stdout), masked(&plain.stdout));

    let receiver = Receiver::start().await;
    for off in [
        ("OTEL_SDK_DISABLED", "true"),
        ("OTEL_TRACES_EXPORTER", "none"),
    ] {
        let out = openvibe(
            &["demo"],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
                off,
            ],
        )
        .await;
        assert!(out.status.success());
    }
    assert!(
        receiver.received().is_empty(),
        "switched off, nothing is sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_that_is_not_built_in_is_one_warning_and_nothing_sent() {
    let receiver = Receiver::start().await;
    let out = openvibe(
        &["demo"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    )
    .await;
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("\"grpc\" is not supported"), "{stderr}");
    assert!(receiver.received().is_empty());
}
