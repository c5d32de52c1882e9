//! Placeholder: replaced by the Anthropic provider implementation.
/// Anthropic Messages API provider.
#[derive(Debug)]
pub struct AnthropicProvider;
