//! The model output parser: any text is a JSON value; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = openvibe_primitives::parse_output(text);
    }
});
