//! Property tests of the governance file and principal resolution: any
//! text loads or fails with a positioned error, never a panic; a file
//! written back loads to the same policy; sanitised tokens are safe.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use openvibe_governance::{
    Error, Governance, GovernanceFile, MAX_TOKEN_LEN, NamespacePolicy, SessionRule, sanitize,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn token() -> impl Strategy<Value = String> {
    "[a-z](-?[a-z0-9_]){0,10}"
}

fn principals() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(prop_oneof![token(), Just("*".to_owned())], 0..3)
}

fn policy() -> impl Strategy<Value = NamespacePolicy> {
    (
        any::<bool>(),
        principals(),
        principals(),
        principals(),
        principals(),
        proptest::option::of(principals()),
    )
        .prop_map(
            |(project_scoped, read, write, delete, manage, approve)| NamespacePolicy {
                project_scoped,
                read,
                write,
                delete,
                manage,
                approve,
                retention: None,
            },
        )
}

/// Valid files: declared namespaces, rules naming only them.
fn file() -> impl Strategy<Value = GovernanceFile> {
    (
        proptest::collection::btree_map(token(), policy(), 0..4),
        proptest::collection::vec((0u8..3, token(), token()), 0..4),
    )
        .prop_map(|(namespaces, rules)| {
            let names: Vec<String> = namespaces.keys().cloned().collect();
            let session_keys = rules
                .into_iter()
                .enumerate()
                .map(|(i, (kind, a, b))| {
                    let namespace = names.get(i % names.len().max(1)).cloned();
                    match kind {
                        0 => SessionRule {
                            map: Some(BTreeMap::from([(format!("{a}-{i}"), b)])),
                            namespace,
                            ..SessionRule::default()
                        },
                        1 => SessionRule {
                            prefix: Some(format!("{a}:")),
                            ..SessionRule::default()
                        },
                        _ => SessionRule {
                            regex: Some(format!("^{a}:(?P<principal>[a-z]+)")),
                            principal: Some(format!("{b}-${{principal}}")),
                            ..SessionRule::default()
                        },
                    }
                })
                .collect();
            GovernanceFile {
                namespaces,
                session_keys,
                ..GovernanceFile::default()
            }
        })
}

proptest! {
    // Minimised failures are kept beside this file (`properties.regressions`)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_text_loads_or_fails_with_a_positioned_error(text in "\\PC{0,300}") {
        match Governance::from_yaml_with_env(&text, "g.yaml", |_| None) {
            Ok(_) => {}
            Err(Error::Config { path, key: _, message, .. }) => {
                prop_assert_eq!(path, "g.yaml");
                prop_assert!(!message.is_empty());
            }
        }
    }

    #[test]
    fn yaml_shaped_noise_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("namespaces:".to_owned()),
                Just("session_keys:".to_owned()),
                Just("  - regex: \"(\"".to_owned()),
                Just("  - prefix: \"a:\"".to_owned()),
                Just("    namespace: x".to_owned()),
                Just("  x: { read: [\"*\"] }".to_owned()),
                Just("recall: [self, shared]".to_owned()),
                Just("api_keys:".to_owned()),
                Just("  - { principal: a, sha256: abc }".to_owned()),
                "[ a-z:{}\\[\\]\",-]{0,30}",
            ],
            0..12,
        )
    ) {
        let text = lines.join("\n");
        let _ = Governance::from_yaml_with_env(&text, "g.yaml", |_| None);
    }

    #[test]
    fn a_written_file_loads_to_the_same_policy(file in file()) {
        let text = yaml_serde::to_string(&file).unwrap();
        let gov = Governance::from_yaml_with_env(&text, "g.yaml", |_| None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        prop_assert_eq!(gov.file(), &file);
    }

    #[test]
    fn sanitised_tokens_are_safe_short_and_stable(raw in "\\PC{0,120}") {
        if let Some(token) = sanitize(&raw) {
            prop_assert!(token.len() <= MAX_TOKEN_LEN);
            prop_assert!(token
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c)));
            prop_assert!(!token.starts_with(['-', '.']) && !token.ends_with(['-', '.']));
            prop_assert_eq!(sanitize(&token), Some(token.clone()));
        }
    }

    #[test]
    fn every_session_key_resolves_to_a_safe_principal(file in file(), key in "\\PC{0,60}") {
        let text = yaml_serde::to_string(&file).unwrap();
        let gov = Governance::from_yaml_with_env(&text, "g.yaml", |_| None).unwrap();
        let who = gov.resolve_session_key(&key);
        prop_assert_eq!(sanitize(&who.principal.id), Some(who.principal.id.clone()));
        let grants = gov.grants_for(&who);
        prop_assert_eq!(grants.home(), who.home.as_str());
    }
}
