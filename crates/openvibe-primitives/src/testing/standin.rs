//! A stand-in model: answers requests by rules, as a good model would for
//! a known script, so that an example can record its cassette where no
//! real model is reachable.

use std::sync::Arc;

use async_trait::async_trait;
use openvibe_protocols::{
    ContentBlock, LlmError, LlmProvider, LlmRequest, LlmResponse, MessageContent, MessageRole,
    truncate_chars,
};

/// One rule: the answer to the requests it knows, `None` for the others.
type Rule = Arc<dyn Fn(&LlmRequest) -> Option<LlmResponse> + Send + Sync>;

/// The model name a stand-in's answers carry.
pub const STAND_IN_MODEL: &str = "openvibe-standin-1";

/// A deterministic [`LlmProvider`] that answers by rules: the first rule
/// that knows a request answers it; a request no rule knows is an
/// [`LlmError::Other`] naming it. Every answer carries a token estimate
/// (a quarter of the characters in and out) and the model
/// [`STAND_IN_MODEL`], like a real model's.
///
/// ```
/// use openvibe_primitives::testing::StandIn;
/// use openvibe_protocols::{LlmProvider, LlmRequest, LlmResponse};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let llm = StandIn::new()
///     .rule(|r| r.system.contains("reflecting").then(|| LlmResponse::text("[]")))
///     .rule(|r| Some(LlmResponse::text(format!("You said: {}", r.first_user_text()))));
/// let answer = llm.call(&LlmRequest::new("any", "hi")).await.unwrap();
/// assert_eq!(answer.content, "You said: hi");
/// assert_eq!(answer.model, "openvibe-standin-1");
/// assert!(StandIn::new().call(&LlmRequest::new("any", "hi")).await.is_err());
/// # });
/// ```
#[derive(Clone, Default)]
pub struct StandIn {
    rules: Vec<Rule>,
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn")
            .field("rules", &self.rules.len())
            .finish()
    }
}

impl StandIn {
    /// A stand-in that knows nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answer the requests `rule` knows (it returns `None` for the others),
    /// after the rules given before it.
    #[must_use]
    pub fn rule(
        mut self,
        rule: impl Fn(&LlmRequest) -> Option<LlmResponse> + Send + Sync + 'static,
    ) -> Self {
        self.rules.push(Arc::new(rule));
        self
    }

    /// The result of the tool call the request's last turn answers, and
    /// whether it was an error; `None` when the last turn is not a tool
    /// result (the model has not called a tool yet).
    pub fn last_tool_result(request: &LlmRequest) -> Option<(String, bool)> {
        let last = request.messages.last()?;
        if last.role != MessageRole::User {
            return None;
        }
        let MessageContent::Blocks(blocks) = &last.content else {
            return None;
        };
        blocks.iter().find_map(|b| match b {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
    }
}

#[async_trait]
impl LlmProvider for StandIn {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let Some(answer) = self.rules.iter().find_map(|rule| rule(request)) else {
            return Err(LlmError::Other(format!(
                "the stand-in model has no answer for: {}",
                truncate_chars(&request.first_user_text(), 80)
            )));
        };
        let tokens_in = (request.system.len()
            + request
                .messages
                .iter()
                .map(|m| m.text().len())
                .sum::<usize>())
            / 4;
        let tokens_out = answer.content.len() / 4 + 8;
        Ok(answer
            .with_usage(tokens_in as u64, tokens_out as u64)
            .with_model(STAND_IN_MODEL))
    }
}
