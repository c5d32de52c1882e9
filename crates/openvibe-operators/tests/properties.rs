//! Property tests of the operator YAML loader: any text loads or fails with
//! a positioned `Error::Config`, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use openvibe_operators::Error;
use openvibe_operators::config::parse;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

proptest! {
    // Minimised failures are kept beside this file (`properties.regressions`)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_text_loads_or_fails_with_a_config_error(text in "\\PC{0,300}") {
        check(&text)?;
    }

    #[test]
    fn yaml_shaped_noise_loads_or_fails_with_a_config_error(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("operators:".to_owned()),
                Just("  - id: ops".to_owned()),
                Just("    workflows:".to_owned()),
                Just("      - id: wf".to_owned()),
                Just("        nodes: [a, b]".to_owned()),
                Just("    triggers:".to_owned()),
                Just("      - { id: t, type: cron, schedule: \"* * *\" }".to_owned()),
                Just("    prompts: { a: { file: missing.md } }".to_owned()),
                Just("model: m".to_owned()),
                "[ a-z:{}\\[\\]\",-]{0,30}",
            ],
            0..12,
        )
    ) {
        check(&lines.join("\n"))?;
    }
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text, Path::new("/nonexistent/ops.yaml")) {
        Ok(_) => Ok(()),
        Err(Error::Config { path, .. } | Error::Io { path, .. }) => {
            prop_assert!(
                path.to_string_lossy().contains("ops.yaml")
                    || path.to_string_lossy().contains("missing.md")
            );
            Ok(())
        }
        Err(other) => Err(TestCaseError::fail(format!("not a config error: {other}"))),
    }
}
