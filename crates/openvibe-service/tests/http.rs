//! The service over real HTTP: authentication and authorization (checked
//! against the database after each refusal), request ids, health and
//! readiness, malformed bodies, limits, saturation, time limits, and the
//! OpenAPI document.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "../../openvibe-postgres/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use openvibe_api::{CALLER_HEADER, Caller, ErrorBody, ErrorCode, REQUEST_ID_HEADER};
use openvibe_governance::Governance;
use openvibe_protocols::{CallerContext, Fact, FactQuery, Principal, Stores};
use openvibe_service::{Access, Readiness, Service, ServiceConfig};
use serde_json::{Value, json};

const POLICY: &str = r#"
shared_namespace: shared
recall: [self, team, vault]
namespaces:
  team:
    read: ["*"]
    write: [alice, bob]
  vault:
    read: [alice]
    write: [alice]
api_keys:
  - { principal: alice, kind: agent, env: KEY_ALICE, namespace: team }
  - { principal: bob, kind: agent, env: KEY_BOB, namespace: team }
  - { principal: runtime, env: KEY_RUNTIME, trusted: true }
"#;

fn governance() -> Governance {
    Governance::from_yaml_with_keys(
        POLICY,
        "policy.yaml",
        &[
            ("KEY_ALICE", "alice-key"),
            ("KEY_BOB", "bob-key"),
            ("KEY_RUNTIME", "runtime-key"),
        ],
    )
    .unwrap()
}

/// Every fact in the default tenant, read directly from the stores.
async fn all_facts(stores: &Stores) -> Vec<Fact> {
    stores
        .facts
        .query(&CallerContext::system(), &FactQuery::default().limit(1000))
        .await
        .unwrap()
}

async fn send(
    method: reqwest::Method,
    url: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let client = reqwest::Client::new();
    let mut request = client.request(method, url);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, value)
}

fn code(body: &Value) -> ErrorCode {
    serde_json::from_value::<ErrorBody>(body.clone())
        .unwrap_or_else(|e| panic!("not an error body ({e}): {body}"))
        .error
        .code
}

#[tokio::test]
async fn keys_decide_who_calls_and_refusals_write_nothing() {
    let Some(_) = common::database_url() else {
        return;
    };
    let stores = common::fresh_stores().await.stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let facts = format!("{url}/v1/memory/facts");
    let fact = |id: &str, ns: &str| serde_json::to_value(Fact::new(id, "x").namespace(ns)).unwrap();

    // No key, an unknown key, a malformed header: 401, nothing written.
    for key in [None, Some("nope")] {
        let (status, headers, body) =
            send(reqwest::Method::POST, &facts, key, Some(fact("f1", "team"))).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(code(&body), ErrorCode::Unauthenticated);
        assert!(headers.contains_key(REQUEST_ID_HEADER));
        assert!(all_facts(&stores).await.is_empty());
    }
    // A policy refusal: 403 naming the rule, nothing written.
    let (status, _, body) = send(
        reqwest::Method::POST,
        &facts,
        Some("bob-key"),
        Some(fact("f1", "vault")),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(code(&body), ErrorCode::Forbidden);
    let reason = body["error"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("vault") && reason.contains("write"),
        "{reason}"
    );
    assert!(all_facts(&stores).await.is_empty());

    // Alice may write the vault; the record is hers, in her tenant.
    let (status, _, body) = send(
        reqwest::Method::POST,
        &facts,
        Some("alice-key"),
        Some(fact("f1", "vault")),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let stored = all_facts(&stores).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].meta.owner, "agent:alice");
    // Bob cannot see it; alice can.
    let one = format!("{facts}/f1");
    let (status, _, _) = send(reqwest::Method::GET, &one, Some("bob-key"), None).await;
    assert_eq!(status, 404);
    let (status, _, body) = send(reqwest::Method::GET, &one, Some("alice-key"), None).await;
    assert_eq!(status, 200, "{body}");
    // Bob may not delete it either (invisible to him), and it stays.
    let (status, _, _) = send(reqwest::Method::DELETE, &one, Some("bob-key"), None).await;
    assert_eq!(status, 404);
    assert_eq!(all_facts(&stores).await.len(), 1);

    // An ordinary key cannot act for someone else...
    let alice = Caller::from(&CallerContext::agent("alice"));
    let client = reqwest::Client::new();
    let response = client
        .get(&one)
        .bearer_auth("bob-key")
        .header(CALLER_HEADER, alice.to_header())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    // ...a trusted runtime can, governed as the caller it states.
    let response = client
        .get(&one)
        .bearer_auth("runtime-key")
        .header(CALLER_HEADER, alice.to_header())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let bob = Caller::from(&CallerContext::new("default", Principal::agent("bob")));
    let response = client
        .get(&one)
        .bearer_auth("runtime-key")
        .header(CALLER_HEADER, bob.to_header())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404, "bob's grants apply");
}

#[tokio::test]
async fn the_remote_client_with_an_ordinary_key_acts_as_the_key() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let remote = openvibe_remote::RemoteMemory::connect(&url, Some("alice-key".into()))
        .await
        .unwrap()
        .stores();
    let alice = CallerContext::agent("alice");
    let f = remote
        .facts
        .store(&alice, Fact::new("f1", "x").namespace("vault"))
        .await
        .unwrap();
    assert_eq!(f.meta.owner, "agent:alice");
    let err = remote
        .facts
        .get(&CallerContext::agent("bob"), "f1")
        .await
        .unwrap_err();
    assert!(
        matches!(err, openvibe_protocols::StoreError::Unauthorized { .. }),
        "{err}"
    );
    let bad = openvibe_remote::RemoteMemory::connect(&url, Some("wrong".into())).await;
    assert!(bad.is_err());
}

fn slow_readiness(delay: Duration) -> Readiness {
    Arc::new(move || {
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(())
        })
    })
}

#[tokio::test]
async fn health_readiness_and_request_ids() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::new(stores.clone(), Access::open("default"))).await;
    let (status, headers, body) =
        send(reqwest::Method::GET, &format!("{url}/healthz"), None, None).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    let id = headers[REQUEST_ID_HEADER].to_str().unwrap();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    // A client's own id is kept, in the header and the error body.
    let response = reqwest::Client::new()
        .get(format!("{url}/v1/memory/facts/missing"))
        .header(REQUEST_ID_HEADER, "trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert_eq!(response.headers()[REQUEST_ID_HEADER], "trace-42");
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.request_id.as_deref(), Some("trace-42"));
    assert_eq!(body.error.kind.as_deref(), Some("fact"));

    let down: Readiness = Arc::new(|| Box::pin(async { Err("database unreachable".into()) }));
    let url =
        support::spawn(Service::new(stores, Access::open("default")).with_readiness(down)).await;
    let (status, _, body) = send(reqwest::Method::GET, &format!("{url}/readyz"), None, None).await;
    assert_eq!(status, 503);
    assert!(body["status"].as_str().unwrap().contains("unreachable"));
}

#[tokio::test]
async fn bad_bodies_are_named_and_change_nothing() {
    let stores = openvibe_memory::in_memory_stores();
    let mut config = ServiceConfig::default();
    config.body_limit = 4096;
    let url =
        support::spawn(Service::new(stores.clone(), Access::open("default")).with_config(config))
            .await;
    let facts = format!("{url}/v1/memory/facts");
    let client = reqwest::Client::new();
    let post = |body: String| {
        client
            .post(&facts)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    // Not JSON.
    let r = post("{not json".into()).await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: ErrorBody = r.json().await.unwrap();
    assert_eq!(body.error.code, ErrorCode::MalformedRequest);
    // A wrong type, named by a JSON pointer.
    let r = post(json!({"id": "f1", "content": "x", "confidence": "high"}).to_string())
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: ErrorBody = r.json().await.unwrap();
    assert_eq!(
        body.error.pointer.as_deref(),
        Some("/confidence"),
        "{body:?}"
    );
    // An unknown field in a request DTO is refused.
    let r = client
        .post(format!("{url}/v1/memory/atomic/increment"))
        .json(&json!({"plan_id": "p", "key": "k", "by": 1, "extra": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: ErrorBody = r.json().await.unwrap();
    assert!(body.error.message.contains("extra"), "{body:?}");
    // An unknown field in a record is refused too (records flatten their
    // metadata, so this is checked by the service, not by serde).
    let mut fact = serde_json::to_value(Fact::new("f1", "x")).unwrap();
    fact["colour"] = json!("red");
    let r = post(fact.to_string()).await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: ErrorBody = r.json().await.unwrap();
    assert_eq!(body.error.pointer.as_deref(), Some("/colour"), "{body:?}");
    // An absent optional field may be given as null.
    let mut fact = serde_json::to_value(Fact::new("f0", "x")).unwrap();
    fact["project_id"] = Value::Null;
    let r = post(fact.to_string()).await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    stores
        .facts
        .delete(&CallerContext::system(), "f0")
        .await
        .unwrap();
    // Too large: 413.
    let big = json!({"id": "f2", "content": "x".repeat(10_000)}).to_string();
    let r = post(big).await.unwrap();
    assert_eq!(r.status().as_u16(), 413);
    let body: ErrorBody = r.json().await.unwrap();
    assert_eq!(body.error.code, ErrorCode::PayloadTooLarge);
    assert!(all_facts(&stores).await.is_empty());
}

#[tokio::test]
async fn a_record_body_needs_only_what_the_caller_knows() {
    let stores = openvibe_memory::in_memory_stores();
    let url = support::spawn(Service::new(stores.clone(), Access::open("acme"))).await;
    let (status, _, body) = send(
        reqwest::Method::POST,
        &format!("{url}/v1/memory/facts"),
        None,
        Some(json!({"content": "the pilot starts in May"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let stored: Fact = serde_json::from_value(body).unwrap();
    assert!(!stored.id.is_empty(), "the store made an id");
    assert_eq!(stored.meta.tenant_id, "acme", "the tenant is the caller's");
    assert_eq!(
        stored.meta.classification,
        openvibe_protocols::Classification::Internal
    );
    assert!(!stored.meta.owner.is_empty());
    let age = chrono::Utc::now() - stored.meta.created_at;
    assert!(age < chrono::TimeDelta::seconds(60), "created now: {age}");
    let caller = CallerContext::system().with_tenant("acme");
    assert_eq!(
        stores.facts.get(&caller, &stored.id).await.unwrap(),
        Some(stored)
    );
}

/// Seed 002's `test_delete_plan_state`: a deleted key reads as a 404 over
/// HTTP (the remote client turns that 404 into `None`), and deleting the
/// plan's state counts the keys that went.
async fn deleted_plan_state_reads_as_not_found(stores: Stores) {
    let url = support::spawn(Service::new(stores, Access::open("acme"))).await;
    let (status, _, plan) = send(
        reqwest::Method::POST,
        &format!("{url}/v1/memory/plans"),
        None,
        Some(json!({"goal_event": "research.goal"})),
    )
    .await;
    assert_eq!(status, 200, "{plan}");
    let plan = plan["id"].as_str().unwrap().to_owned();
    let key_url = format!("{url}/v1/memory/working/{plan}/data");
    for (key, value) in [("data", json!({"test": "value"})), ("other", json!(2))] {
        let (status, _, body) = send(
            reqwest::Method::PUT,
            &format!("{url}/v1/memory/working/{plan}/{key}"),
            None,
            Some(json!({ "value": value })),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, _, body) = send(reqwest::Method::DELETE, &key_url, None, None).await;
    assert_eq!((status, &body), (200, &json!({"deleted": true})));
    let (status, _, body) = send(reqwest::Method::GET, &key_url, None, None).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(code(&body), ErrorCode::NotFound);
    let (status, _, body) = send(reqwest::Method::DELETE, &key_url, None, None).await;
    assert_eq!((status, &body), (200, &json!({"deleted": false})));
    let (status, _, body) = send(
        reqwest::Method::DELETE,
        &format!("{url}/v1/memory/working/{plan}"),
        None,
        None,
    )
    .await;
    assert_eq!((status, &body), (200, &json!({"deleted_count": 1})));
}

#[tokio::test]
async fn a_deleted_plan_state_key_is_a_404_in_memory() {
    deleted_plan_state_reads_as_not_found(openvibe_memory::in_memory_stores()).await;
}

#[tokio::test]
async fn a_deleted_plan_state_key_is_a_404_on_postgres() {
    let Some(_) = common::database_url() else {
        return;
    };
    deleted_plan_state_reads_as_not_found(common::fresh_stores().await.stores()).await;
}

#[tokio::test]
async fn a_saturated_service_says_so_and_slow_requests_end() {
    let stores = openvibe_memory::in_memory_stores();
    let mut config = ServiceConfig::default();
    config.max_in_flight = 1;
    let service = Service::new(stores.clone(), Access::open("default"))
        .with_readiness(slow_readiness(Duration::from_millis(400)))
        .with_config(config);
    let url = support::spawn(service).await;
    let ready = format!("{url}/readyz");
    let slow = tokio::spawn(async move { send(reqwest::Method::GET, &ready, None, None).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, headers, body) =
        send(reqwest::Method::GET, &format!("{url}/healthz"), None, None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(code(&body), ErrorCode::Unavailable);
    assert_eq!(slow.await.unwrap().0, 200);

    let mut config = ServiceConfig::default();
    config.request_timeout = Duration::from_millis(100);
    let service = Service::new(stores, Access::open("default"))
        .with_readiness(slow_readiness(Duration::from_secs(5)))
        .with_config(config);
    let url = support::spawn(service).await;
    let (status, _, body) = send(reqwest::Method::GET, &format!("{url}/readyz"), None, None).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(code(&body), ErrorCode::Timeout);
}

/// A CRM webhook posts "closed $40k" as plain JSON over HTTP: it moves the
/// goal of the namespace its key writes to, a retry with the same id
/// counts once, a key that may not write there is refused and counts
/// nothing, and anyone who reads the goal reads its progress.
#[tokio::test]
async fn a_webhook_reports_a_metric_over_http() {
    let Some(_) = common::database_url() else {
        return;
    };
    let stores = common::fresh_stores().await.stores();
    let url = support::spawn(Service::governed(stores.clone(), governance())).await;
    let goal = json!({
        "namespace": "vault",
        "objective": {
            "id": "pipeline-q4", "owner": "cro", "title": "Pipeline $2M this quarter",
            "due": "2026-12-31",
            "key_results": [{"id": "value", "metric": "pipeline_usd", "target": 2000000, "unit": "USD"}]
        }
    });
    let (status, _, body) = send(
        reqwest::Method::POST,
        &format!("{url}/v1/memory/goals"),
        Some("alice-key"),
        Some(goal),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["version"].as_u64(), body["owner"].as_str()),
        (Some(1), Some("agent:alice"))
    );
    let deal = json!({"id": "crm-981", "role_id": "cro", "metric": "pipeline_usd", "value": 40000,
                      "note": "closed Acme, $40k", "namespace": "vault"});
    let metrics = format!("{url}/v1/memory/metrics");
    for _ in 0..2 {
        let (status, _, body) = send(
            reqwest::Method::POST,
            &metrics,
            Some("alice-key"),
            Some(deal.clone()),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            (body["seq"].as_u64(), body["total"].as_f64()),
            (Some(1), Some(40000.0))
        );
    }
    let (status, _, body) =
        send(reqwest::Method::POST, &metrics, Some("bob-key"), Some(json!({
            "id": "crm-982", "role_id": "cro", "metric": "pipeline_usd", "value": 1, "namespace": "vault"
        }))).await;
    assert_eq!(status, 403, "{body}");
    let progress = format!("{url}/v1/memory/goals/pipeline-q4/progress");
    let (status, _, body) = send(reqwest::Method::GET, &progress, Some("alice-key"), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["key_results"][0]["current"], 40000.0);
    assert_eq!(body["key_results"][0]["reports"], 1);
    assert_eq!(body["progress"], 0.02);
    // Bob may not read the vault: the goal is not there for him.
    let (status, _, body) = send(reqwest::Method::GET, &progress, Some("bob-key"), None).await;
    assert_eq!(status, 404, "{body}");
}

#[test]
fn the_openapi_document_covers_every_route() {
    let doc = openvibe_service::openapi_document();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/v1/memory/task-context",
        "/v1/memory/task-context/{id}",
        "/v1/memory/task-context/by-subtask/{id}",
        "/v1/memory/plan-context",
        "/v1/memory/plan-context/{id}",
        "/v1/memory/plan-context/by-correlation/{id}",
        "/v1/memory/plans",
        "/v1/memory/plans/{id}",
        "/v1/memory/sessions",
        "/v1/memory/sessions/{id}",
        "/v1/memory/semantic",
        "/v1/memory/semantic/search",
        "/v1/memory/working/{plan_id}/{key}",
        "/v1/memory/working/{plan_id}",
    ] {
        assert!(paths.contains_key(path), "{path} is missing");
    }
    // Every reference resolves.
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for reference in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = reference.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "dangling $ref {name}");
    }
    insta::assert_json_snapshot!("openapi", doc);
}

/// A verdict on a belief takes no action: its document offers none, and a
/// body with one is refused (400, naming the field) and decides nothing.
#[tokio::test]
async fn a_verdict_on_a_belief_takes_no_action() {
    use openvibe_protocols::{Belief, BeliefStatus, Clearance};
    let stores = openvibe_memory::in_memory_stores();
    let cro = CallerContext::agent("cro").with_clearance(Clearance::unrestricted());
    stores
        .beliefs
        .propose(
            &cro,
            Belief::new("cro", "Webinar leads close faster", 0.8).id("b1"),
        )
        .await
        .unwrap();
    let url = support::spawn(Service::new(stores.clone(), Access::open("default"))).await;
    let verdict = json!({
        "approve": true,
        "reason": "fine",
        "action": {"kind": "tool", "tool": "give_discount", "name": "apply", "args": {}},
    });
    let (status, _, body) = send(
        reqwest::Method::POST,
        &format!("{url}/v1/memory/beliefs/b1/decide"),
        None,
        Some(verdict),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("action"), "{body}");
    let b = stores.beliefs.get(&cro, "b1").await.unwrap().unwrap();
    assert_eq!(b.status, BeliefStatus::Proposed);
    // The document: a belief's verdict has no `action`; a proposal's has.
    let (_, _, doc) = send(
        reqwest::Method::GET,
        &format!("{url}/openapi.json"),
        None,
        None,
    )
    .await;
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["BeliefVerdict"]["properties"]
            .get("action")
            .is_none()
    );
    assert!(schemas["Verdict"]["properties"].get("action").is_some());
    let body = &doc["paths"]["/v1/memory/beliefs/{id}/decide"]["post"]["requestBody"];
    assert!(body.to_string().contains("BeliefVerdict"), "{body}");
}
