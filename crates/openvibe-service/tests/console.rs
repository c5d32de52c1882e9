//! The console over HTTP (issue 42), without a browser: sign-in with a key
//! of the governance file (an unknown key is refused, the key is not kept
//! in the cookie), the session cookie's attributes, the security headers,
//! a CSRF token on every change, escaping, a principal who may not read a
//! namespace seeing none of its records on any page, the `approve` right,
//! sign-out, and the idle timeout. The browser tests are in
//! `console_browser.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod console_fixture;

#[path = "../../openvibe-postgres/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use console_fixture::{ANN, BOB, CAROL, CRO_MARKERS, World};
use openvibe_protocols::{CallerContext, ProposalStatus};
use openvibe_service::ServiceConfig;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, LOCATION, SET_COOKIE};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Sign in with `key`: the session cookie (`name=value`).
async fn sign_in(url: &str, key: &str) -> String {
    let response = client()
        .post(format!("{url}/console/login"))
        .form(&[("key", key)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::SEE_OTHER,
        "signed in with {key}"
    );
    assert_eq!(response.headers()[LOCATION], "/console/inbox");
    let cookie = response.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("Path=/console"), "{cookie}");
    assert!(!cookie.contains(key), "the key is never in the cookie");
    cookie.split(';').next().unwrap().to_owned()
}

async fn get(url: &str, cookie: &str, path: &str) -> (StatusCode, String) {
    let response = client()
        .get(format!("{url}{path}"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

/// The CSRF token of the page at `path`.
async fn csrf(url: &str, cookie: &str) -> String {
    let (_, page) = get(url, cookie, "/console/inbox").await;
    let at = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    page[at..at + 64].to_owned()
}

async fn decide(world: &World, cookie: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
    let response = client()
        .post(format!(
            "{}/console/proposals/{}/decide",
            world.url, world.proposal
        ))
        .header("cookie", cookie)
        .form(fields)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

async fn status_of(world: &World) -> ProposalStatus {
    world
        .stores
        .proposals
        .get(&CallerContext::system(), &world.proposal)
        .await
        .unwrap()
        .unwrap()
        .status
}

async fn world() -> World {
    console_fixture::start(
        openvibe_memory::in_memory_stores(),
        ServiceConfig::default(),
    )
    .await
}

/// Every page of the console, with the records of the world.
fn pages(world: &World) -> Vec<String> {
    let mut pages: Vec<String> = [
        "/console/inbox",
        "/console/inbox?view=mine",
        "/console/beliefs",
        "/console/beliefs?status=proposed",
        "/console/beliefs?status=retired",
        "/console/beliefs?status=rejected",
        "/console/memory",
        "/console/memory?kind=raw",
        "/console/memory?kind=episode",
        "/console/memory?kind=insight",
        "/console/memory?kind=fact&q=Acme",
        "/console/memory?kind=knowledge",
        "/console/audit",
        "/console/goals",
        "/console/spaces",
        "/console/spaces/deals",
        "/console/beliefs/b-cfo",
        "/console/memory/fact/f-script",
        "/console/memory/insight/i-annual",
        "/console/memory/episode/ep-acme",
        "/console/memory/raw/raw-acme",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    pages.push(format!("/console/proposals/{}", world.proposal));
    pages.push(format!("/console/proposals/{}/card", world.proposal));
    pages
}

#[tokio::test]
async fn a_key_signs_in_and_every_page_is_served_with_its_security_headers() {
    let world = world().await;
    // Not signed in: to the sign-in page.
    let (status, _) = get(&world.url, "", "/console/inbox").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    // An unknown key: refused, no session.
    let refused = client()
        .post(format!("{}/console/login", world.url))
        .form(&[("key", "not-a-key")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.headers().get(SET_COOKIE).is_none());
    assert!(refused.text().await.unwrap().contains("unknown API key"));
    // A forged cookie is no session.
    let (status, _) = get(&world.url, "openvibe_console=forged", "/console/inbox").await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    let ann = sign_in(&world.url, ANN).await;
    for path in pages(&world) {
        let response = client()
            .get(format!("{}{path}", world.url))
            .header("cookie", &ann)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let csp = response.headers()[CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(response.headers()["x-frame-options"], "DENY");
        let page = response.text().await.unwrap();
        assert!(!page.contains(" style="), "{path}: no inline style");
        assert!(!page.contains("<script>"), "{path}: no inline script");
    }
    // What ann may read shows: the proposal, the belief's chain down to the
    // raw call, the chart, the thread.
    let (_, inbox) = get(&world.url, &ann, "/console/inbox").await;
    assert!(inbox.contains("Acme asks a discount on 50000"));
    assert!(inbox.contains("domain: owned"), "the decision's steps");
    let (_, belief) = get(&world.url, &ann, "/console/beliefs/b-cfo").await;
    for link in [
        "/console/memory/insight/i-annual",
        "/console/memory/episode/ep-acme",
        "/console/memory/raw/raw-acme",
    ] {
        assert!(belief.contains(link), "the chain links {link}");
    }
    let (_, goals) = get(&world.url, &ann, "/console/goals").await;
    assert_eq!(goals.matches("<circle").count(), 3, "one dot per report");
    assert!(goals.contains("Close the Acme renewal"));
    let (_, space) = get(&world.url, &ann, "/console/spaces/deals").await;
    assert!(space.contains("case study for Acme") && space.contains("Drafting the case study"));
    // The assets: the vendored htmx, its licence, the stylesheet.
    for asset in ["htmx.min.js", "htmx.LICENSE.txt", "console.css"] {
        let (status, _) = get(&world.url, "", &format!("/console/assets/{asset}")).await;
        assert_eq!(status, StatusCode::OK, "{asset}");
    }
}

#[tokio::test]
async fn content_is_escaped_not_run() {
    let world = world().await;
    let ann = sign_in(&world.url, ANN).await;
    for path in [
        "/console/memory",
        "/console/memory/fact/f-script",
        "/console/memory?kind=fact&q=Acme",
    ] {
        let (status, page) = get(&world.url, &ann, path).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            page.contains("&lt;script&gt;window.__xss"),
            "{path} shows it as text"
        );
        assert!(
            !page.contains("<script>window.__xss"),
            "{path} never as markup"
        );
    }
}

#[tokio::test]
async fn a_principal_who_may_not_read_a_namespace_sees_none_of_it_on_any_page() {
    no_leak(world().await).await;
}

/// The same on PostgreSQL: row-level security and the stores' read rule
/// under the console.
#[tokio::test]
async fn a_principal_who_may_not_read_a_namespace_sees_none_of_it_on_postgres() {
    if common::database_url().is_none() {
        return;
    }
    let stores = common::fresh_stores().await.stores();
    no_leak(console_fixture::start(stores, ServiceConfig::default()).await).await;
}

async fn no_leak(world: World) {
    let bob = sign_in(&world.url, BOB).await;
    let ann = sign_in(&world.url, ANN).await;
    let (_, mine) = get(&world.url, &bob, "/console/memory").await;
    assert!(mine.contains("ops runbook"), "bob sees his own records");
    for path in pages(&world) {
        let (status, page) = get(&world.url, &bob, &path).await;
        assert!(
            status == StatusCode::OK || status == StatusCode::NOT_FOUND,
            "{path}: {status}"
        );
        for marker in CRO_MARKERS {
            assert!(!page.contains(marker), "{path} shows bob `{marker}`");
        }
        for id in &world.cro_ids {
            if path.contains(id.as_str()) {
                assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            }
        }
        // The same page shows ann something (the check can fail).
        let (ann_status, _) = get(&world.url, &ann, &path).await;
        assert_eq!(ann_status, StatusCode::OK, "{path} for ann");
    }
}

#[tokio::test]
async fn changes_need_the_csrf_token_and_the_approve_right() {
    let world = world().await;
    let ann = sign_in(&world.url, ANN).await;
    let token = csrf(&world.url, &ann).await;
    // No token, a wrong one, another session's: refused, nothing changes.
    let carol = sign_in(&world.url, CAROL).await;
    let carols = csrf(&world.url, &carol).await;
    for fields in [
        vec![("verdict", "approve"), ("reason", "ok")],
        vec![("verdict", "approve"), ("reason", "ok"), ("csrf", "0000")],
        vec![
            ("verdict", "approve"),
            ("reason", "ok"),
            ("csrf", carols.as_str()),
        ],
    ] {
        let (status, page) = decide(&world, &ann, &fields).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{fields:?}");
        assert!(page.contains("CSRF"));
        assert_eq!(status_of(&world).await, ProposalStatus::Pending);
    }
    // From another site: refused at sign-in.
    let forged = client()
        .post(format!("{}/console/login", world.url))
        .header("origin", "http://evil.example")
        .form(&[("key", ANN)])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    // Carol may read but not approve: no form, and the store refuses her
    // with the rule's reason.
    let (_, card) = get(
        &world.url,
        &carol,
        &format!("/console/proposals/{}", world.proposal),
    )
    .await;
    assert!(card.contains("You may not decide this proposal"));
    assert!(!card.contains("value=\"approve\""));
    let (status, page) = decide(
        &world,
        &carol,
        &[
            ("verdict", "approve"),
            ("reason", "ok"),
            ("csrf", carols.as_str()),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("Rule:"), "the rule's reason is shown");
    assert_eq!(status_of(&world).await, ProposalStatus::Pending);
    // A rejection needs a reason (a typed refusal, nothing changes).
    let (status, _) = decide(
        &world,
        &ann,
        &[
            ("verdict", "reject"),
            ("reason", ""),
            ("csrf", token.as_str()),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(status_of(&world).await, ProposalStatus::Pending);
    // Ann approves: it runs once.
    let (status, _) = decide(
        &world,
        &ann,
        &[
            ("verdict", "approve"),
            ("reason", "go"),
            ("csrf", token.as_str()),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    for _ in 0..100 {
        if status_of(&world).await == ProposalStatus::Executed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status_of(&world).await, ProposalStatus::Executed);
    assert_eq!(world.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Deciding again is a conflict; it still ran once.
    let (status, _) = decide(
        &world,
        &ann,
        &[
            ("verdict", "approve"),
            ("reason", "again"),
            ("csrf", token.as_str()),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(world.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn sign_out_and_the_idle_timeout_end_the_session() {
    let world = world().await;
    let ann = sign_in(&world.url, ANN).await;
    let token = csrf(&world.url, &ann).await;
    // Sign-out needs the token too.
    let response = client()
        .post(format!("{}/console/logout", world.url))
        .header("cookie", &ann)
        .form(&[("csrf", "wrong")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = client()
        .post(format!("{}/console/logout", world.url))
        .header("cookie", &ann)
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(
        response.headers()[SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let (status, _) = get(&world.url, &ann, "/console/inbox").await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "the old cookie is no session"
    );

    let mut config = ServiceConfig::default();
    config.console_idle_timeout = Duration::from_millis(300);
    let quick = console_fixture::start(openvibe_memory::in_memory_stores(), config).await;
    let ann = sign_in(&quick.url, ANN).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (status, _) = get(&quick.url, &ann, "/console/inbox").await;
        assert_eq!(status, StatusCode::OK, "each request keeps it alive");
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, _) = get(&quick.url, &ann, "/console/inbox").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "idle past the timeout");
}

#[tokio::test]
async fn development_mode_signs_in_from_this_machine_without_a_key() {
    let service = openvibe_service::Service::new(
        openvibe_memory::in_memory_stores(),
        openvibe_service::Access::open("default"),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    let (_, page) = get(&url, "", "/console/login").await;
    assert!(page.contains("Development mode"));
    assert!(!page.contains("name=\"key\""), "no key field");
    let response = client()
        .post(format!("{url}/console/login"))
        .form(&[("key", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, inbox) = get(&url, &cookie, "/console/inbox").await;
    assert_eq!(status, StatusCode::OK);
    assert!(inbox.contains("user:anonymous · default"));
}

/// A belief that refines an active one: its proposal's card names the
/// refined belief and offers "Approve superseding", which retires that one
/// with the approval, and "As a constraint" (issue 64).
#[tokio::test]
async fn a_refining_beliefs_proposal_offers_to_supersede() {
    use openvibe_protocols::{Belief, BeliefStatus, Verdict};
    let world = world().await;
    let cro = CallerContext::agent("cro");
    let person =
        CallerContext::user("ann").with_clearance(openvibe_protocols::Clearance::unrestricted());
    world
        .stores
        .beliefs
        .decide(&person, "b-cfo", &Verdict::approve("yes"))
        .await
        .unwrap();
    let newer = world
        .stores
        .beliefs
        .propose(
            &cro,
            Belief::new(
                "cro",
                "Discounts over ten percent need the CFO and legal",
                0.9,
            )
            .id("b-legal")
            .namespace("cro")
            .refines("b-cfo"),
        )
        .await
        .unwrap();
    let proposal = world
        .stores
        .proposals
        .create(&cro, newer.to_proposal())
        .await
        .unwrap();
    let ann = sign_in(&world.url, ANN).await;
    let path = format!("/console/proposals/{}", proposal.id);
    let (status, page) = get(&world.url, &ann, &path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("This belief refines"), "{page}");
    assert!(page.contains(r#"value="supersede""#), "{page}");
    assert!(page.contains(r#"name="constraint""#), "{page}");
    let token = csrf(&world.url, &ann).await;
    let response = client()
        .post(format!("{}{path}/decide", world.url))
        .header("cookie", &ann)
        .form(&[
            ("verdict", "supersede"),
            ("reason", "legal joined"),
            ("constraint", "on"),
            ("csrf", token.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success() || response.status().is_redirection());
    let sys = CallerContext::system();
    let old = world
        .stores
        .beliefs
        .get(&sys, "b-cfo")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (old.status, old.superseded_by.as_deref()),
        (BeliefStatus::Retired, Some("b-legal"))
    );
    let new = world
        .stores
        .beliefs
        .get(&sys, "b-legal")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            new.status,
            new.supersedes.as_deref(),
            new.refines.as_deref()
        ),
        (BeliefStatus::Active, Some("b-cfo"), None)
    );
    assert!(new.constraint, "approved as a constraint from the console");
}
