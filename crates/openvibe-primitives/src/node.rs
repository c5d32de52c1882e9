//! Nodes: `LlmNode` (one LLM call) and `AgentNode` (a bounded tool-use loop).

use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use chrono::Utc;
use futures::FutureExt;
use openvibe_protocols::{
    CallOrigin, ContentBlock, ContextAssembler, DEFAULT_TOKEN_BUDGET, Episode, EpisodeSink,
    LlmProvider, LlmRequest, LlmResponse, MemoryScope, Message, MessageRole, State, StateError,
    ToolCall, truncate_chars,
};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::scope::ScopeSpec;
use crate::tool::{Tool, ToolDecision, ToolGate};
use crate::{Error, parse_output};

/// Longest input/output summary kept in an episode, in characters.
const SUMMARY_CHARS: usize = 200;

/// What a node needs from its surroundings: the model, and optionally the
/// memory hooks and the tool gate. An operator builds one and hands it to
/// every node it runs.
#[derive(Clone)]
pub struct NodeContext {
    /// The model.
    pub llm: Arc<dyn LlmProvider>,
    /// The operator the node runs under (recorded in episodes).
    pub operator_id: String,
    /// Turns a resolved memory scope into prompt context.
    pub assembler: Option<Arc<dyn ContextAssembler>>,
    /// Receives one episode per node run.
    pub episode_sink: Option<Arc<dyn EpisodeSink>>,
    /// Decides on tool calls that declare an action.
    pub tool_gate: Option<Arc<dyn ToolGate>>,
    /// Whom a [`DelegateNode`](crate::DelegateNode) asks through (the
    /// role running the workflow, when it works in a space).
    pub delegate: Option<Arc<dyn Delegate>>,
}

impl NodeContext {
    /// A context with just a model.
    pub fn new(llm: Arc<dyn LlmProvider>) -> Self {
        Self {
            llm,
            operator_id: String::new(),
            assembler: None,
            episode_sink: None,
            tool_gate: None,
            delegate: None,
        }
    }

    /// Set the operator id.
    #[must_use]
    pub fn with_operator_id(mut self, operator_id: impl Into<String>) -> Self {
        self.operator_id = operator_id.into();
        self
    }

    /// Wire a memory context assembler.
    #[must_use]
    pub fn with_assembler(mut self, assembler: Arc<dyn ContextAssembler>) -> Self {
        self.assembler = Some(assembler);
        self
    }

    /// Wire an episode sink.
    #[must_use]
    pub fn with_episode_sink(mut self, sink: Arc<dyn EpisodeSink>) -> Self {
        self.episode_sink = Some(sink);
        self
    }

    /// Wire a tool gate.
    #[must_use]
    pub fn with_tool_gate(mut self, gate: Arc<dyn ToolGate>) -> Self {
        self.tool_gate = Some(gate);
        self
    }

    /// Wire the delegate [`DelegateNode`](crate::DelegateNode)s ask through.
    #[must_use]
    pub fn with_delegate(mut self, delegate: Arc<dyn Delegate>) -> Self {
        self.delegate = Some(delegate);
        self
    }
}

impl fmt::Debug for NodeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("operator_id", &self.operator_id)
            .field("assembler", &self.assembler.is_some())
            .field("episode_sink", &self.episode_sink.is_some())
            .field("tool_gate", &self.tool_gate.is_some())
            .field("delegate", &self.delegate.is_some())
            .finish_non_exhaustive()
    }
}

/// What a node delegates through: the role that runs it (its identity
/// comes from the role, never from the state).
#[async_trait]
pub trait Delegate: Send + Sync {
    /// The asking role.
    fn role_id(&self) -> &str;

    /// Ask the owner of `domain` to do `task` with `input` under the
    /// request id `request_id` (the same id again: the same request), and
    /// wait at most `timeout` for the final answer: its output, or the
    /// typed error of a refusal, a failure or a timeout.
    async fn ask(
        &self,
        request_id: &str,
        domain: &str,
        task: &str,
        input: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>>;
}

/// A step of a workflow: takes the state, returns it updated.
#[async_trait]
pub trait Node: Send + Sync {
    /// The node's name (unique within a workflow).
    fn name(&self) -> &str;

    /// Run the node.
    async fn run(&self, ctx: &NodeContext, state: State) -> Result<State, Error>;

    /// The tools the node's model may call (none by default): a role runs
    /// an approved call of one of them outside the node (a proposal).
    fn tools(&self) -> &[Arc<dyn Tool>] {
        &[]
    }
}

type UserFn = Arc<dyn Fn(&State) -> Result<String, StateError> + Send + Sync>;

/// Configuration shared by both node kinds.
#[derive(Clone)]
struct Spec {
    name: String,
    system_prompt: String,
    user_message: UserFn,
    model: String,
    temperature: Option<f32>,
    max_tokens: u32,
    output_key: Option<String>,
    memory_scope: Option<ScopeSpec>,
    token_budget: usize,
    action: Option<String>,
}

impl Spec {
    fn new(
        name: impl Into<String>,
        system_prompt: impl Into<String>,
        user_message: impl Fn(&State) -> Result<String, StateError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            system_prompt: system_prompt.into(),
            user_message: Arc::new(user_message),
            model: "haiku".into(),
            temperature: Some(0.7),
            max_tokens: LlmRequest::DEFAULT_MAX_TOKENS,
            output_key: None,
            memory_scope: None,
            token_budget: DEFAULT_TOKEN_BUDGET,
            action: None,
        }
    }

    /// Build the user message, resolve the scope and assemble the system prompt.
    async fn prepare(&self, ctx: &NodeContext, state: &State) -> Result<Prepared, Error> {
        let user = (self.user_message)(state).map_err(|source| Error::State {
            node: self.name.clone(),
            source,
        })?;
        let scope = self.memory_scope.as_ref().map(|spec| spec.resolve(state));
        let mut system = self.system_prompt.clone();
        if let (Some(scope), Some(assembler)) = (&scope, &ctx.assembler) {
            let context = assembler
                .assemble(scope, self.token_budget)
                .instrument(tracing::debug_span!("memory_assemble", node = %self.name))
                .await
                .map_err(|source| Error::Memory {
                    node: self.name.clone(),
                    source,
                })?;
            if !context.is_empty() {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(&context);
            }
        }
        Ok(Prepared {
            system,
            user,
            scope: scope.unwrap_or_default(),
            started: Instant::now(),
            episode_id: new_episode_id(),
        })
    }

    /// The first request of a run: the prepared system prompt (taken) and
    /// user message, with the call's origin.
    fn request(&self, ctx: &NodeContext, prepared: &mut Prepared) -> LlmRequest {
        LlmRequest {
            system: std::mem::take(&mut prepared.system),
            messages: vec![Message::user(prepared.user.clone())],
            model: self.model.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            tools: Vec::new(),
            tool_choice: None,
            origin: Some(CallOrigin {
                operator_id: ctx.operator_id.clone(),
                node_name: self.name.clone(),
                episode_id: prepared.episode_id.clone(),
                entity: prepared.scope.entity.clone().unwrap_or_default(),
                domain: prepared.scope.domain.clone().unwrap_or_default(),
            }),
        }
    }

    async fn call(&self, ctx: &NodeContext, request: &LlmRequest) -> Result<LlmResponse, Error> {
        let span = tracing::info_span!(
            "llm_call",
            node = %self.name,
            model = %request.model,
            model_used = tracing::field::Empty,
            stop_reason = tracing::field::Empty,
            tokens_in = tracing::field::Empty,
            tokens_out = tracing::field::Empty,
        );
        let response = ctx
            .llm
            .call(request)
            .instrument(span.clone())
            .await
            .map_err(|source| Error::Llm {
                node: self.name.clone(),
                source,
            })?;
        span.record("model_used", response.model.as_str());
        span.record("stop_reason", tracing::field::debug(&response.stop_reason));
        span.record("tokens_in", response.tokens_in);
        span.record("tokens_out", response.tokens_out);
        Ok(response)
    }

    /// Store the output under `output_key` and send the episode.
    async fn finish(
        &self,
        ctx: &NodeContext,
        mut state: State,
        prepared: Prepared,
        output: Value,
        usage: (u64, u64),
        extra_outcome: Option<(&str, Value)>,
    ) -> Result<State, Error> {
        let duration_ms = u64::try_from(prepared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(sink) = &ctx.episode_sink {
            let mut outcome = serde_json::Map::new();
            if let Some(key) = &self.output_key {
                outcome.insert("output_key".into(), Value::String(key.clone()));
                outcome.insert("value".into(), output.clone());
            }
            if let Some((key, value)) = extra_outcome {
                outcome.insert(key.into(), value);
            }
            let output_text = match &output {
                Value::String(s) => truncate_chars(s, SUMMARY_CHARS).to_owned(),
                other => truncated(other.to_string()),
            };
            let MemoryScope {
                entity,
                domain,
                tags,
                ..
            } = prepared.scope;
            let episode = Episode {
                id: prepared.episode_id,
                agent_id: String::new(),
                operator_id: ctx.operator_id.clone(),
                node_name: self.name.clone(),
                timestamp: Utc::now(),
                action: self.action.clone().unwrap_or_else(|| self.name.clone()),
                input_summary: truncated(prepared.user),
                output_summary: output_text,
                outcome: Value::Object(outcome),
                duration_ms,
                tokens_in: usage.0,
                tokens_out: usage.1,
                entity: entity.unwrap_or_default(),
                domain: domain.unwrap_or_default(),
                tags,
                ..Episode::default()
            };
            sink.record(episode)
                .instrument(tracing::debug_span!("episode_record", node = %self.name))
                .await
                .map_err(|source| Error::Memory {
                    node: self.name.clone(),
                    source,
                })?;
        }
        if let Some(key) = &self.output_key {
            state.insert(key.clone(), output);
        }
        Ok(state)
    }
}

/// `text` cut to [`SUMMARY_CHARS`] characters, in place.
fn truncated(mut text: String) -> String {
    let end = truncate_chars(&text, SUMMARY_CHARS).len();
    text.truncate(end);
    text
}

/// A unique episode id (`ep_` + a random v4 UUID). Drawn from a fast
/// thread-local generator: ids need uniqueness, not unpredictability, and a
/// system call per node run would dominate the node's own overhead.
fn new_episode_id() -> String {
    let mut bytes = [0u8; 16];
    fastrand::fill(&mut bytes);
    let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
    format!("ep_{}", id.simple())
}

struct Prepared {
    system: String,
    user: String,
    scope: MemoryScope,
    started: Instant,
    /// The id the run's episode gets, known before the first LLM call so
    /// that the calls can name it ([`CallOrigin::episode_id`]).
    episode_id: String,
}

/// Builder methods shared by [`LlmNode`] and [`AgentNode`].
macro_rules! spec_builders {
    () => {
        /// The model (name or alias; default `haiku`).
        #[must_use]
        pub fn model(mut self, model: impl Into<String>) -> Self {
            self.spec.model = model.into();
            self
        }

        /// Sampling temperature (default 0.7).
        #[must_use]
        pub fn temperature(mut self, temperature: f32) -> Self {
            self.spec.temperature = Some(temperature);
            self
        }

        /// Leave the temperature to the provider's default.
        #[must_use]
        pub fn default_temperature(mut self) -> Self {
            self.spec.temperature = None;
            self
        }

        /// Upper bound on generated tokens per call (default 4096).
        #[must_use]
        pub fn max_tokens(mut self, max_tokens: u32) -> Self {
            self.spec.max_tokens = max_tokens;
            self
        }

        /// Store the (JSON-parsed) answer under this state key.
        #[must_use]
        pub fn output_key(mut self, key: impl Into<String>) -> Self {
            self.spec.output_key = Some(key.into());
            self
        }

        /// Recall memory for this scope into the system prompt (when an
        /// assembler is wired) and address the episode with it.
        #[must_use]
        pub fn memory_scope(mut self, scope: ScopeSpec) -> Self {
            self.spec.memory_scope = Some(scope);
            self
        }

        /// Token budget of the memory context (default 2000).
        #[must_use]
        pub fn token_budget(mut self, tokens: usize) -> Self {
            self.spec.token_budget = tokens;
            self
        }

        /// The action recorded in episodes (default: the node name).
        #[must_use]
        pub fn action(mut self, action: impl Into<String>) -> Self {
            self.spec.action = Some(action.into());
            self
        }

        /// Replace the system prompt (e.g. with one loaded from configuration).
        #[must_use]
        pub fn prompt(mut self, system_prompt: impl Into<String>) -> Self {
            self.spec.system_prompt = system_prompt.into();
            self
        }

        /// The node's system prompt (without memory context).
        pub fn system_prompt(&self) -> &str {
            &self.spec.system_prompt
        }

        /// The state key the answer is stored under.
        pub fn get_output_key(&self) -> Option<&str> {
            self.spec.output_key.as_deref()
        }

        /// The configured model.
        pub fn get_model(&self) -> &str {
            &self.spec.model
        }
    };
}

/// One LLM call: system prompt + a user message built from the state; the
/// answer, parsed as JSON when it is JSON, is stored under `output_key`.
///
/// ```
/// use std::sync::Arc;
/// use openvibe_primitives::{LlmNode, Node, NodeContext, ScopeSpec, testing::ScriptedLlm};
/// use openvibe_protocols::{LlmResponse, State};
///
/// let node = LlmNode::new("qualify", "You are a lead qualifier.", |state: &State| {
///     Ok(format!("Score this lead: {}", state.require_str("lead")?))
/// })
/// .model("sonnet")
/// .output_key("score")
/// .memory_scope(ScopeSpec::new().domain("revenue").entity_from_key("company"));
///
/// let llm = ScriptedLlm::new([LlmResponse::text(r#"{"score": 85}"#)]);
/// let ctx = NodeContext::new(Arc::new(llm.clone()));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let state: State = [("lead", "Acme"), ("company", "acme")].into_iter().collect();
/// let state = node.run(&ctx, state).await.unwrap();
/// assert_eq!(state.get("score").unwrap()["score"], 85);
/// assert_eq!(llm.requests()[0].system, "You are a lead qualifier.");
/// # });
/// ```
#[derive(Clone)]
pub struct LlmNode {
    spec: Spec,
}

impl LlmNode {
    /// A node named `name` with this system prompt; `user_message` builds
    /// the user message from the state (use [`State::require_str`] and `?`
    /// for keys that must be present).
    pub fn new(
        name: impl Into<String>,
        system_prompt: impl Into<String>,
        user_message: impl Fn(&State) -> Result<String, StateError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec: Spec::new(name, system_prompt, user_message),
        }
    }

    spec_builders!();
}

#[async_trait]
impl Node for LlmNode {
    fn name(&self) -> &str {
        &self.spec.name
    }

    async fn run(&self, ctx: &NodeContext, state: State) -> Result<State, Error> {
        let spec = &self.spec;
        let span = tracing::info_span!("node", node = %spec.name, kind = "llm", operator = %ctx.operator_id);
        async move {
            let mut prepared = spec.prepare(ctx, &state).await?;
            let request = spec.request(ctx, &mut prepared);
            let response = spec.call(ctx, &request).await?;
            let output = parse_output(&response.content);
            spec.finish(
                ctx,
                state,
                prepared,
                output,
                (response.tokens_in, response.tokens_out),
                None,
            )
            .await
        }
        .instrument(span)
        .await
    }
}

impl fmt::Debug for LlmNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmNode")
            .field("name", &self.spec.name)
            .field("model", &self.spec.model)
            .field("output_key", &self.spec.output_key)
            .field("memory_scope", &self.spec.memory_scope)
            .finish_non_exhaustive()
    }
}

/// A tool-use loop: the model is called with the tools; every tool call it
/// makes is executed and answered; it loops until the model answers with
/// text, at most `max_turns` model calls.
///
/// - Every `tool_use` gets exactly one `tool_result`, in the order of the calls.
/// - A tool error, an unknown tool name, bad arguments, a panic inside a tool
///   and a refusal by the [`ToolGate`] all become `is_error` results the model
///   can react to; the loop goes on.
/// - Several calls in one turn run concurrently when every tool involved is
///   [`Tool::parallel_safe`], else one after another in order.
#[derive(Clone)]
pub struct AgentNode {
    spec: Spec,
    tools: Vec<Arc<dyn Tool>>,
    max_turns: u32,
}

impl AgentNode {
    /// Default bound on model calls per run.
    pub const DEFAULT_MAX_TURNS: u32 = 10;

    /// An agent node; see [`LlmNode::new`] for the arguments.
    pub fn new(
        name: impl Into<String>,
        system_prompt: impl Into<String>,
        user_message: impl Fn(&State) -> Result<String, StateError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec: Spec::new(name, system_prompt, user_message),
            tools: Vec::new(),
            max_turns: Self::DEFAULT_MAX_TURNS,
        }
    }

    /// Give the model a tool.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Give the model a shared tool.
    #[must_use]
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// At most this many model calls per run (default 10).
    #[must_use]
    pub fn max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// The tools.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    spec_builders!();

    fn tool_index(&self) -> Result<HashMap<&str, &Arc<dyn Tool>>, Error> {
        let mut index = HashMap::with_capacity(self.tools.len());
        for tool in &self.tools {
            if index.insert(tool.name(), tool).is_some() {
                return Err(Error::Config {
                    node: self.spec.name.clone(),
                    message: format!("two tools are named `{}`", tool.name()),
                });
            }
        }
        Ok(index)
    }

    async fn run_loop(
        &self,
        ctx: &NodeContext,
        mut request: LlmRequest,
    ) -> Result<LoopOutcome, Error> {
        let index = self.tool_index()?;
        request.tools = self.tools.iter().map(|t| t.definition()).collect();
        let mut outcome = LoopOutcome::default();
        for _ in 0..self.max_turns {
            let response = self.spec.call(ctx, &request).await?;
            outcome.turns += 1;
            outcome.tokens_in += response.tokens_in;
            outcome.tokens_out += response.tokens_out;
            if response.tool_calls.is_empty() {
                outcome.answer = response.content;
                return Ok(outcome);
            }
            request.messages.push(Message::blocks(
                MessageRole::Assistant,
                assistant_blocks(&response),
            ));
            let results = execute_calls(ctx, &index, &response.tool_calls).await;
            let mut blocks = Vec::with_capacity(results.len());
            for (block, record) in results {
                blocks.push(block);
                outcome.tool_log.push(record);
            }
            request
                .messages
                .push(Message::blocks(MessageRole::User, blocks));
        }
        Err(Error::MaxTurnsExceeded {
            node: self.spec.name.clone(),
            max_turns: self.max_turns,
        })
    }
}

#[derive(Default)]
struct LoopOutcome {
    answer: String,
    turns: u32,
    tokens_in: u64,
    tokens_out: u64,
    tool_log: Vec<Value>,
}

/// The assistant turn to append: the provider's raw blocks, or blocks rebuilt
/// from the text and tool calls when a provider left them empty.
fn assistant_blocks(response: &LlmResponse) -> Vec<ContentBlock> {
    if !response.raw_content.is_empty() {
        return response.raw_content.clone();
    }
    let mut blocks = Vec::with_capacity(response.tool_calls.len() + 1);
    if !response.content.is_empty() {
        blocks.push(ContentBlock::text(response.content.clone()));
    }
    blocks.extend(
        response
            .tool_calls
            .iter()
            .map(|call| ContentBlock::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            }),
    );
    blocks
}

/// Run one turn's tool calls; results come back in call order.
async fn execute_calls(
    ctx: &NodeContext,
    index: &HashMap<&str, &Arc<dyn Tool>>,
    calls: &[ToolCall],
) -> Vec<(ContentBlock, Value)> {
    let all_parallel = calls
        .iter()
        .all(|c| index.get(c.name.as_str()).is_none_or(|t| t.parallel_safe()));
    if all_parallel {
        futures::future::join_all(calls.iter().map(|call| execute_call(ctx, index, call))).await
    } else {
        let mut out = Vec::with_capacity(calls.len());
        for call in calls {
            out.push(execute_call(ctx, index, call).await);
        }
        out
    }
}

async fn execute_call(
    ctx: &NodeContext,
    index: &HashMap<&str, &Arc<dyn Tool>>,
    call: &ToolCall,
) -> (ContentBlock, Value) {
    let (content, is_error, refused) = match index.get(call.name.as_str()) {
        None => {
            let mut names: Vec<&str> = index.keys().copied().collect();
            names.sort_unstable();
            (
                format!(
                    "unknown tool `{}`; available tools: {}",
                    call.name,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
                true,
                false,
            )
        }
        Some(tool) => {
            run_tool(ctx, tool.as_ref(), call)
                .instrument(tracing::info_span!("tool", tool = %call.name, id = %call.id))
                .await
        }
    };
    let record = json!({
        "id": call.id,
        "name": call.name,
        "is_error": is_error,
        "refused": refused,
    });
    let block = ContentBlock::ToolResult {
        tool_use_id: call.id.clone(),
        content: openvibe_protocols::bound_tool_result(content),
        is_error,
    };
    (block, record)
}

/// Gate, then run one tool (and tell the gate what it answered). Returns
/// (content, is_error, refused).
async fn run_tool(ctx: &NodeContext, tool: &dyn Tool, call: &ToolCall) -> (String, bool, bool) {
    if let (Some(action), Some(gate)) = (tool.action(), &ctx.tool_gate)
        && let ToolDecision::Deny(reason) = gate.check(&call.name, action, &call.input).await
    {
        tracing::info!(tool = %call.name, action, %reason, "tool call refused");
        return (
            format!("tool `{}` was not run: {reason}", call.name),
            true,
            true,
        );
    }
    match AssertUnwindSafe(tool.call(call.input.clone()))
        .catch_unwind()
        .await
    {
        Ok(Ok(content)) => {
            if let Some(gate) = &ctx.tool_gate {
                gate.ran(&call.name, &call.id, &content).await;
            }
            (content, false, false)
        }
        Ok(Err(e)) => (e.message, true, false),
        Err(_) => {
            tracing::error!(tool = %call.name, "tool panicked");
            (
                format!("tool `{}` failed unexpectedly (it panicked)", call.name),
                true,
                false,
            )
        }
    }
}

#[async_trait]
impl Node for AgentNode {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    async fn run(&self, ctx: &NodeContext, state: State) -> Result<State, Error> {
        let spec = &self.spec;
        let span = tracing::info_span!("node", node = %spec.name, kind = "agent", operator = %ctx.operator_id);
        async move {
            let mut prepared = spec.prepare(ctx, &state).await?;
            let request = spec.request(ctx, &mut prepared);
            let outcome = self.run_loop(ctx, request).await?;
            let output = parse_output(&outcome.answer);
            let extra = json!({ "turns": outcome.turns, "tool_calls": outcome.tool_log });
            spec.finish(
                ctx,
                state,
                prepared,
                output,
                (outcome.tokens_in, outcome.tokens_out),
                Some(("agent", extra)),
            )
            .await
        }
        .instrument(span)
        .await
    }
}

impl fmt::Debug for AgentNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("AgentNode")
            .field("name", &self.spec.name)
            .field("model", &self.spec.model)
            .field("tools", &tools)
            .field("max_turns", &self.max_turns)
            .field("output_key", &self.spec.output_key)
            .finish_non_exhaustive()
    }
}
