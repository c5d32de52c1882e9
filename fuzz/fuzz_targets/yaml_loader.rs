//! The YAML loaders: operator configuration and the governance file. Any
//! bytes load or fail with a typed error; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = openvibe_operators::config::parse(text, std::path::Path::new("/fuzz/ops.yaml"));
        let _ = openvibe_governance::Governance::from_yaml_with_env(text, "fuzz.yaml", |_| None);
    }
});
