//! Delegation from inside a workflow: [`DelegateNode`] asks the owner of a
//! domain for something through the [`Delegate`] its node context carries
//! (a role in a space sets it when it binds its operators; see
//! `openvibe-roles`), and puts the answer's output in the state.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use openvibe_protocols::State;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::{Delegate, Error, Node, NodeContext};

/// How long a [`DelegateNode`] waits by default.
pub const DELEGATE_TIMEOUT: Duration = Duration::from_secs(300);

/// A workflow node that delegates: it asks the owner of `domain` to do
/// `task` with the state's value at its input key (an object; the whole
/// state when none), waits for the answer (at most its timeout) and puts
/// the output at its output key. A refusal, failure or timeout fails the
/// node ([`Error::Failed`], the delegate's typed error its source); a node
/// context without a delegate is [`Error::Config`]. The request's id is
/// derived from the asking role, the node and the state's value at the run
/// key (default `run_id`; the whole input state when absent), so a resumed
/// run asks once.
///
/// ```
/// use openvibe_primitives::DelegateNode;
/// let node = DelegateNode::new("case_study", "marketing", "write_case_study", "case_study")
///     .input_key("deal");
/// # let _ = node;
/// ```
pub struct DelegateNode {
    name: String,
    domain: String,
    task: String,
    input_key: Option<String>,
    output_key: String,
    run_key: String,
    timeout: Duration,
}

impl DelegateNode {
    /// A node named `name` that asks the owner of `domain` to do `task`;
    /// the answer's output goes to state key `output_key`.
    pub fn new(
        name: impl Into<String>,
        domain: impl Into<String>,
        task: impl Into<String>,
        output_key: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            domain: domain.into(),
            task: task.into(),
            input_key: None,
            output_key: output_key.into(),
            run_key: "run_id".into(),
            timeout: DELEGATE_TIMEOUT,
        }
    }

    /// Send the state's value at `key` as the request's input.
    #[must_use]
    pub fn input_key(mut self, key: impl Into<String>) -> Self {
        self.input_key = Some(key.into());
        self
    }

    /// Derive the request's id from the state's value at `key`.
    #[must_use]
    pub fn run_key(mut self, key: impl Into<String>) -> Self {
        self.run_key = key.into();
        self
    }

    /// Wait at most `timeout` for the answer.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A stable id for a message about `parts` (what asked: a role, an event
/// or a workflow run, an action), `prefix` first: a hash, so any text makes
/// a valid id of bounded length, and the same parts make the same id (a
/// retried step posts the same message).
///
/// ```
/// use openvibe_primitives::delegation_id;
/// assert_eq!(delegation_id("dl", &["cro", "e1"]), delegation_id("dl", &["cro", "e1"]));
/// assert_ne!(delegation_id("dl", &["cro", "e1"]), delegation_id("dl", &["cro", "e2"]));
/// assert!(delegation_id("ans", &["r"]).starts_with("ans-"));
/// ```
pub fn delegation_id(prefix: &str, parts: &[&str]) -> String {
    let hash = openvibe_protocols::content_hash(&parts.join("\u{1f}"));
    format!("{prefix}-{}", hash.trim_start_matches("fnv1a64:"))
}

#[async_trait]
impl Node for DelegateNode {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(&self, ctx: &NodeContext, state: State) -> Result<State, Error> {
        let delegate: &Arc<dyn Delegate> = ctx.delegate.as_ref().ok_or_else(|| Error::Config {
            node: self.name.clone(),
            message: "no role in a space runs this node: it has nobody to delegate as".into(),
        })?;
        let value = state.clone().into_value();
        let input = match &self.input_key {
            Some(key) => value.get(key).cloned().unwrap_or_else(|| json!({})),
            None => value.clone(),
        };
        let key = value
            .get(&self.run_key)
            .map_or_else(|| value.to_string(), Value::to_string);
        let id = delegation_id("dl", &[delegate.role_id(), &self.name, &key]);
        let span = tracing::info_span!("delegate", node = %self.name, to = %self.domain, task = %self.task);
        let output = delegate
            .ask(&id, &self.domain, &self.task, input, self.timeout)
            .instrument(span)
            .await
            .map_err(|source| Error::Failed {
                node: self.name.clone(),
                source,
            })?;
        let mut state = state;
        state
            .set(&self.output_key, output)
            .map_err(|source| Error::State {
                node: self.name.clone(),
                source,
            })?;
        Ok(state)
    }
}
