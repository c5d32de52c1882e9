//! The governance file: the seeds' rule tables and access matrix, and every
//! load-time error with its position.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_governance::{Error, Governance, Resolved, api_key_digest};
use openvibe_protocols::{Principal, PrincipalKind, Rights};

use openvibe_governance::examples::SEED_003;

/// The keys the policies' `env:` entries name (any other is unset).
const KEYS: &[(&str, &str)] = &[("MCP_API_KEY_L", "key-of-l"), ("MCP_API_KEY_C", "key-of-c")];

fn seed_003() -> Governance {
    Governance::from_yaml_with_keys(SEED_003, "seed-003.governance.yaml", KEYS).unwrap()
}

fn load(text: &str) -> Result<Governance, Error> {
    Governance::from_yaml_with_keys(text, "g.yaml", KEYS)
}

/// The error's (line, key, message).
fn problem(text: &str) -> (usize, String, String) {
    match load(text) {
        Ok(_) => panic!("loaded:\n{text}"),
        Err(Error::Config {
            line, key, message, ..
        }) => (line, key, message),
    }
}

#[test]
fn seed_003_access_matrix_holds_as_written() {
    let gov = seed_003();
    let l = gov.resolve_api_key("key-of-l").expect("L's key");
    let c = gov.resolve_api_key("key-of-c").expect("C's key");
    assert_eq!(l.principal, Principal::service("l-cto"));
    assert_eq!(c.principal, Principal::service("cursor-ide"));
    assert_eq!(gov.resolve_api_key("key-of-x"), None);
    let (gl, gc) = (gov.grants_for(&l), gov.grants_for(&c));
    // L: READ/WRITE (and delete, manage) everywhere; no `approve`: the
    // file names no approvers, and by default only users approve proposals.
    for ns in ["developer", "l-private", "global"] {
        let expected = Rights {
            approve: false,
            ..Rights::ALL
        };
        assert_eq!(gl.rights(ns), expected, "L in {ns}");
    }
    // C: developer + global read/write/delete own; l-private BLOCKED.
    assert_eq!(gc.rights("developer"), Rights::OWN);
    assert_eq!(gc.rights("global"), Rights::OWN);
    assert_eq!(gc.rights("l-private"), Rights::NONE);
    assert_eq!(gc.readable(), vec!["developer", "global"]);
    // "Any query from C MUST filter: WHERE scope IN ('developer', 'global')"
    assert_eq!(gc.recall_namespaces(), vec!["developer", "global"]);
    assert_eq!(
        gl.recall_namespaces(),
        vec!["developer", "global", "l-private"]
    );
    // Project isolation for developer and l-private; global spans projects.
    assert!(gc.project_scoped("developer") && gl.project_scoped("l-private"));
    assert!(!gc.project_scoped("global"));
    // Writes go home by default.
    assert_eq!(gc.home(), "developer");
    assert_eq!(gl.home(), "l-private");
}

#[test]
fn defaults_are_self_plus_shared() {
    let gov = load("{}").unwrap();
    let file = gov.file();
    assert_eq!(file.shared_namespace, "shared");
    assert_eq!(file.default_principal, "default");
    assert_eq!(file.recall, vec!["self", "shared"]);
    let who = Resolved::new(Principal::agent("cro"));
    let g = gov.grants_for(&who);
    assert_eq!(g.home(), "cro");
    assert_eq!(g.rights("cro"), Rights::OWN);
    assert_eq!(g.rights("shared"), Rights::OWN);
    assert_eq!(
        g.rights("cmo"),
        Rights::NONE,
        "another agent's namespace is private"
    );
    assert_eq!(g.recall_namespaces(), vec!["cro", "shared"]);
    let ctx = gov.context("acme", &who);
    assert_eq!(ctx.tenant_id(), "acme");
    assert_eq!(ctx.grants(), Some(&g));
}

const RULES: &str = r#"
namespaces:
  ops: { read: ["*"], write: ["service:deployer"] }
session_keys:
  - map: { "telegram:42": "Alice", "telegram:7": bob }
    kind: user
  - prefix: "agent:"
  - prefix: "cron:"
    principal: scheduler
    kind: service
    namespace: ops
  - regex: "^slack:(?P<team>[A-Z]+):(?P<principal>[^:]+)$"
    principal: "${team}-${principal}"
  - regex: "^ci:([a-z]+)"
"#;

#[test]
fn session_key_rules_in_order() {
    let gov = load(RULES).unwrap();
    let table: &[(&str, &str, PrincipalKind, &str)] = &[
        ("telegram:42", "alice", PrincipalKind::User, "alice"),
        ("telegram:7", "bob", PrincipalKind::User, "bob"),
        ("agent:CRO:main", "cro", PrincipalKind::Agent, "cro"),
        (
            "agent:Sales Bot/../x",
            "sales-bot-..-x",
            PrincipalKind::Agent,
            "sales-bot-..-x",
        ),
        ("cron:nightly", "scheduler", PrincipalKind::Service, "ops"),
        (
            "slack:ENG:Dana",
            "eng-dana",
            PrincipalKind::Agent,
            "eng-dana",
        ),
        ("ci:build-7", "build", PrincipalKind::Agent, "build"),
        // Nothing matches, or a match sanitises to nothing: the default.
        ("telegram:999", "default", PrincipalKind::Agent, "default"),
        ("agent::x", "default", PrincipalKind::Agent, "default"),
        ("", "default", PrincipalKind::Agent, "default"),
    ];
    for (key, id, kind, home) in table {
        let r = gov.resolve_session_key(key);
        assert_eq!(
            (&r.principal.id[..], r.principal.kind, &r.home[..]),
            (*id, *kind, *home),
            "{key}"
        );
    }
    let deployer = gov.grants_for(&Resolved::new(Principal::service("deployer")));
    assert!(deployer.rights("ops").write);
    assert!(
        !gov.grants_for(&Resolved::new(Principal::agent("deployer")))
            .rights("ops")
            .write
    );
}

#[test]
fn sanitised_tokens_are_safe() {
    use openvibe_governance::sanitize;
    for (raw, want) in [
        ("Cursor-IDE", Some("cursor-ide")),
        ("a b\tc", Some("a-b-c")),
        ("--x--", Some("x")),
        ("ÄÖÜ", None),
        ("émile", Some("mile")),
        ("a/b\\c", Some("a-b-c")),
        ("..", None),
    ] {
        assert_eq!(sanitize(raw).as_deref(), want, "{raw}");
    }
    let long = "x".repeat(200);
    assert_eq!(
        sanitize(&long).unwrap().len(),
        openvibe_governance::MAX_TOKEN_LEN
    );
}

#[test]
fn load_errors_are_positioned() {
    let (line, key, msg) = problem("session_keys:\n  - regex: \"(unclosed\"\n");
    assert_eq!((line, key.as_str()), (2, "session_keys[0].regex"), "{msg}");
    assert!(msg.contains("invalid regex"), "{msg}");

    let (line, key, msg) = problem(
        "namespaces:\n  a: {}\nsession_keys:\n  - prefix: \"x:\"\n    namespace: nowhere\n",
    );
    assert_eq!(
        (line, key.as_str()),
        (5, "session_keys[0].namespace"),
        "{msg}"
    );
    assert!(msg.contains("unknown namespace `nowhere`"), "{msg}");

    let (line, key, msg) = problem(
        "session_keys:\n  - map: { \"k1\": a }\n  - map:\n      \"k2\": b\n      \"k1\": c\n",
    );
    assert_eq!(key, "session_keys[1].map.k1", "{msg}");
    assert!(
        line > 0 && msg.contains("already mapped by session_keys[0]"),
        "{msg}"
    );

    // A key repeated inside one mapping (YAML parsers keep the last): the
    // error points at the mapping and names the key.
    let (line, key, msg) = problem("namespaces:\n  a: {}\n  a: {}\n");
    assert_eq!((line, key.as_str()), (2, "namespaces"), "{msg}");
    assert!(msg.contains("duplicate key `a`"), "{msg}");
    let (line, _, msg) = problem("session_keys:\n  - map:\n      k: a\n      k: b\n");
    assert!(
        line >= 2 && msg.contains("duplicate key `k`"),
        "{line} {msg}"
    );

    let digest = api_key_digest("same");
    let text = format!(
        "api_keys:\n  - {{ principal: a, sha256: \"{digest}\" }}\n  - {{ principal: b, sha256: \"{digest}\" }}\n"
    );
    let (_, key, msg) = problem(&text);
    assert_eq!(key, "api_keys[1]");
    assert!(msg.contains("listed twice"), "{msg}");

    let (line, key, msg) = problem("api_keys:\n  - { principal: a, env: NOT_SET_ANYWHERE }\n");
    assert_eq!((line, key.as_str()), (2, "api_keys[0].env"), "{msg}");

    let (line, key, msg) = problem("api_keys:\n  - { principal: a, sha256: abc }\n");
    assert_eq!((line, key.as_str()), (2, "api_keys[0].sha256"), "{msg}");

    let (_, key, msg) = problem("session_keys:\n  - { prefix: a, regex: b }\n");
    assert_eq!(key, "session_keys[0]", "{msg}");

    let (line, key, msg) = problem("namespaces:\n  dev:\n    reed: [a]\n");
    assert_eq!(line, 3, "{key}: {msg}");
    assert!(msg.contains("unknown field `reed`"), "{msg}");

    let (_, key, msg) = problem("namespaces:\n  Dev Team: {}\n");
    assert_eq!(key, "namespaces.Dev Team", "{msg}");

    let (_, key, _) = problem("recall: [self, elsewhere]\n");
    assert_eq!(key, "recall[1]");
}

#[test]
fn api_keys_by_digest_are_never_kept_in_clear() {
    let digest = api_key_digest("s3cret");
    let gov = load(&format!(
        "api_keys:\n  - {{ principal: billing, sha256: \"{digest}\", kind: service }}\n"
    ))
    .unwrap();
    let who = gov.resolve_api_key("s3cret").unwrap();
    assert_eq!(who.principal, Principal::service("billing"));
    assert!(gov.resolve_api_key("s3cret ").is_none());
    assert!(!format!("{gov:?}").contains("s3cret"));
}

#[test]
fn retention_becomes_rules_in_every_callers_grants() {
    let g = load(
        "retention:\n  episode: 90d\nnamespaces:\n  scratch:\n    read: ['*']\n    write: ['*']\n    retention: 1h\n  notes:\n    read: ['*']\n    retention: { fact: 30d, knowledge: 7d }\n",
    )
    .unwrap();
    let grants = g.grants_for(&Resolved::new(Principal::agent("a")));
    let hours = |h: i64| Some(chrono::TimeDelta::hours(h));
    assert_eq!(grants.retention("scratch", "fact"), hours(1));
    assert_eq!(
        grants.retention("scratch", "episode"),
        hours(1),
        "the shortest wins"
    );
    assert_eq!(grants.retention("notes", "episode"), hours(90 * 24));
    assert_eq!(grants.retention("notes", "fact"), hours(30 * 24));
    assert_eq!(grants.retention("notes", "knowledge"), hours(7 * 24));
    assert_eq!(grants.retention("notes", "insight"), None);
    assert_eq!(grants.retention("anywhere", "insight"), None);
}

#[test]
fn bad_retentions_are_positioned() {
    let (line, key, msg) = problem("retention:\n  session: 30d\n");
    assert_eq!((line, key.as_str()), (2, "retention.session"), "{msg}");
    assert!(msg.contains("do not expire"), "{msg}");

    let (line, key, msg) = problem("namespaces:\n  a:\n    retention: { plan: 1d }\n");
    assert_eq!(
        (line, key.as_str()),
        (3, "namespaces.a.retention.plan"),
        "{msg}"
    );

    let (line, key, msg) = problem("namespaces:\n  a:\n    retention: soon\n");
    assert_eq!((line, key.as_str()), (3, "namespaces.a.retention"), "{msg}");
    assert!(msg.contains("`soon` is not a duration"), "{msg}");

    let (_, _, msg) = problem("retention:\n  fact: 0s\n");
    assert!(msg.contains("at least one second"), "{msg}");
    let (_, _, msg) = problem("retention:\n  fact: 200years\n");
    assert!(msg.contains("longer than 100 years"), "{msg}");
}
