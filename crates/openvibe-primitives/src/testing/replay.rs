//! Placeholder: replaced by the record/replay implementation.
/// Record/replay provider.
#[derive(Debug)]
pub struct RecordReplayProvider;

/// Stable key of a request.
pub fn request_key(_request: &openvibe_protocols::LlmRequest) -> String {
    String::new()
}
