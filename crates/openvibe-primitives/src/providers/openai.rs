//! Placeholder: replaced by the OpenAI-compatible provider implementation.
/// OpenAI-compatible chat completions provider.
#[derive(Debug)]
pub struct OpenAiProvider;
