//! Property tests of the role file loader: any text parses or fails with an
//! error naming the file, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use openvibe_cli::spec::RoleFile;
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
    fn any_text_parses_or_names_the_file(text in "\\PC{0,300}") {
        if let Err(e) = RoleFile::parse(&text, Path::new("role.yaml")) {
            prop_assert!(e.to_string().contains("role.yaml"), "{}", e);
        }
    }

    #[test]
    fn role_shaped_noise_parses_or_names_the_file(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("role:".to_owned()),
                Just("  id: cro".to_owned()),
                Just("  soul: You are the CRO.".to_owned()),
                Just("  clearance: { revenue: confidential }".to_owned()),
                Just("  clearance: { revenue: top-secret }".to_owned()),
                Just("  authority: { autonomous: [a], forbidden: [a] }".to_owned()),
                Just("operators: [ops.yaml]".to_owned()),
                Just("memory: structured".to_owned()),
                "[ a-z:{}\\[\\]\",-]{0,30}",
            ],
            0..10,
        )
    ) {
        if let Err(e) = RoleFile::parse(&lines.join("\n"), Path::new("role.yaml")) {
            prop_assert!(e.to_string().contains("role.yaml"), "{}", e);
        }
    }
}
