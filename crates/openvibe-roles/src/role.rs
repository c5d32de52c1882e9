//! `Role`: who the agent is (soul), what it may do (authority), what it may
//! read (clearance), what it remembers (memory), and the operators it owns.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use openvibe_memory::{
    AgentMemory, ClearanceProfile, DECISION_TAG, MemoryAssembler, MemoryFilesystem, MemoryPyramid,
    RecallObserver,
};
use openvibe_operators::{BoundOperator, Operator};
use openvibe_primitives::{NodeContext, Tool};
use openvibe_protocols::{
    Action, ActionTarget, CachedEmbedder, Decision, DecisionEvent, DecisionMatrix, Embedder,
    Episode, Impact, LlmError, LlmProvider, LlmRequest, LlmResponse, MemoryProvider, Outcome,
    Proposal, ProposalStore, RawCall, State, truncate_chars,
};
use serde_json::{Value, json};

use crate::Error;
use crate::authority::{ApprovalHook, Authority, AuthorityConfig, AuthorityGate, DenyAll};
use crate::decision::{ConfidenceAssessor, DecisionEngine};
use crate::rules::ImpactRules;
use crate::soul::Soul;

/// How many V1 memories the role-aware LLM recalls into a prompt.
pub const DEFAULT_RECALL_LIMIT: usize = 10;

/// How many analyzed texts (and as many vectors) a role keeps for ranking
/// what it recalls (the records of its evidence and prompts).
pub const TERM_CACHE_ENTRIES: usize = 20_000;

/// How many vectors a role's embedding cache holds (about 15 MB at 384
/// dimensions).
pub const EMBEDDING_CACHE_ENTRIES: usize = 10_000;

/// A role.
///
/// ```
/// use openvibe_memory::ClearanceProfile;
/// use openvibe_protocols::Classification;
/// use openvibe_roles::{Authority, AuthorityConfig, Role};
///
/// let cro = Role::new("cro")
///     .soul("You are the CRO. Data-driven.")
///     .authority(AuthorityConfig::new().autonomous(["qualify_lead"]).forbidden(["sign_contracts"]))
///     .clearance(ClearanceProfile::new("cro").with_domain("revenue", Classification::Confidential));
/// assert_eq!(cro.can_act("qualify_lead"), Authority::Autonomous);
/// assert_eq!(cro.can_act("sign_contracts"), Authority::Forbidden);
/// assert_eq!(cro.can_act("anything_else"), Authority::NeedsApproval);
/// assert_eq!(Role::new("free").can_act("anything"), Authority::Autonomous);
/// ```
#[derive(Clone)]
pub struct Role {
    role_id: String,
    soul: Soul,
    operators: Vec<Operator>,
    authority: Option<AuthorityConfig>,
    clearance: Option<ClearanceProfile>,
    llm: Option<Arc<dyn LlmProvider>>,
    memory: Option<Arc<dyn MemoryProvider>>,
    agent_memory: Option<AgentMemory>,
    approver: Arc<dyn ApprovalHook>,
    recall_limit: usize,
    embedder: Option<Arc<dyn Embedder>>,
    observer: Option<RecallObserver>,
    domains: Vec<String>,
    impact: ImpactRules,
    matrix: DecisionMatrix,
    assessor: Option<Arc<dyn ConfidenceAssessor>>,
    tools: Vec<Arc<dyn Tool>>,
    proposals: Option<Arc<dyn ProposalStore>>,
    pub(crate) goals: Option<Arc<dyn openvibe_protocols::GoalStore>>,
    escalate_to: Option<String>,
    pub(crate) spaces: Option<Arc<dyn openvibe_protocols::SpaceStore>>,
    pub(crate) space: Option<String>,
    pub(crate) experience: Arc<crate::experience::Experience>,
    /// The analyzed texts and vectors of the records it recalls
    /// ([`TERM_CACHE_ENTRIES`]).
    recall_cache: Arc<openvibe_memory::RecallCache>,
}

impl Role {
    /// A role with no soul, operators, authority, clearance or memory.
    pub fn new(role_id: impl Into<String>) -> Self {
        Self {
            role_id: role_id.into(),
            soul: Soul::None,
            operators: Vec::new(),
            authority: None,
            clearance: None,
            llm: None,
            memory: None,
            agent_memory: None,
            approver: Arc::new(DenyAll),
            recall_limit: DEFAULT_RECALL_LIMIT,
            embedder: None,
            observer: None,
            domains: Vec::new(),
            impact: ImpactRules::new(),
            matrix: DecisionMatrix::default(),
            assessor: None,
            tools: Vec::new(),
            proposals: None,
            goals: None,
            escalate_to: None,
            spaces: None,
            space: None,
            experience: Arc::default(),
            recall_cache: Arc::new(openvibe_memory::RecallCache::new(TERM_CACHE_ENTRIES)),
        }
    }

    /// The soul: inline text, or the path of a `.md`/`.yaml` file.
    #[must_use]
    pub fn soul(mut self, soul: impl Into<String>) -> Self {
        self.soul = Soul::from_value(soul);
        self
    }

    /// The soul from a file, whatever its name.
    #[must_use]
    pub fn soul_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.soul = Soul::File(path.into());
        self
    }

    /// Add an operator.
    #[must_use]
    pub fn operator(mut self, operator: Operator) -> Self {
        self.operators.push(operator);
        self
    }

    /// What the role may do. Without it, every action is autonomous.
    #[must_use]
    pub fn authority(mut self, authority: AuthorityConfig) -> Self {
        self.authority = Some(authority);
        self
    }

    /// What the role may read. A role with a clearance gets an
    /// [`AgentMemory`] from the [`RoleRuntime`](crate::RoleRuntime).
    #[must_use]
    pub fn clearance(mut self, clearance: ClearanceProfile) -> Self {
        self.clearance = Some(clearance);
        self
    }

    /// Who decides on `needs_approval` actions (default: [`DenyAll`]).
    #[must_use]
    pub fn approver(mut self, approver: impl ApprovalHook + 'static) -> Self {
        self.approver = Arc::new(approver);
        self
    }

    /// The LLM its operators use.
    #[must_use]
    pub fn with_llm(mut self, llm: Arc<dyn LlmProvider>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// V1 key/value memory, recalled into prompts when the role has no agent memory.
    #[must_use]
    pub fn with_memory(mut self, memory: Arc<dyn MemoryProvider>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Structured memory: episodes are recorded in it and its insights,
    /// workspace facts and recent episodes are assembled into prompts.
    #[must_use]
    pub fn with_agent_memory(mut self, memory: AgentMemory) -> Self {
        self.agent_memory = Some(memory);
        self
    }

    /// Rank the memory assembled into prompts by vector similarity too
    /// (hybrid retrieval; see [`MemoryAssembler`]). The role keeps a
    /// [`CachedEmbedder`] of [`EMBEDDING_CACHE_ENTRIES`] in front of
    /// `embedder`, so each fact or insight is embedded once, not at every prompt.
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(Arc::new(CachedEmbedder::new(
            embedder,
            EMBEDDING_CACHE_ENTRIES,
        )));
        self
    }

    /// Whether the role ranks its memory by meaning ([`Role::with_embedder`]).
    pub fn has_embedder(&self) -> bool {
        self.embedder.is_some()
    }

    /// Call `observer` with every memory assembly of the role's prompts: the
    /// records recalled and which retriever found each.
    #[must_use]
    pub fn on_recall(
        mut self,
        observer: impl Fn(&openvibe_memory::Assembly) + Send + Sync + 'static,
    ) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// How many V1 memories are recalled into a prompt (default 10).
    #[must_use]
    pub fn recall_limit(mut self, limit: usize) -> Self {
        self.recall_limit = limit;
        self
    }

    /// The domains the role owns (its identity): events of other domains
    /// are escalated ([`ANY_DOMAIN`](crate::ANY_DOMAIN) for all).
    #[must_use]
    pub fn domains<I: IntoIterator<Item = S>, S: Into<String>>(mut self, domains: I) -> Self {
        self.domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// How much its actions matter ([`ImpactRules`]; default: all `low`).
    #[must_use]
    pub fn impact_rules(mut self, rules: ImpactRules) -> Self {
        self.impact = rules;
        self
    }

    /// Its confidence × impact matrix (default: [`DecisionMatrix::default`]).
    #[must_use]
    pub fn decision_matrix(mut self, matrix: DecisionMatrix) -> Self {
        self.matrix = matrix;
        self
    }

    /// A second opinion on its decisions' confidence.
    #[must_use]
    pub fn confidence_assessor(mut self, assessor: impl ConfidenceAssessor + 'static) -> Self {
        self.assessor = Some(Arc::new(assessor));
        self
    }

    /// A tool the role runs when it acts on a decision (an [`Action`] whose
    /// target is this tool), under its authority.
    #[must_use]
    pub fn action_tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// The role's action tools.
    pub fn action_tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// File what waits for a person in `store`: `Propose` and `Escalate`
    /// decisions of [`Role::handle`] become proposals, and a tool call whose
    /// authority is `needs_approval` files one instead of asking the
    /// [approver](Role::approver) (see [`Role::run_approved`]).
    #[must_use]
    pub fn with_proposals(mut self, store: Arc<dyn ProposalStore>) -> Self {
        self.proposals = Some(store);
        self
    }

    /// Assign the role's escalations to `person` (an owner key such as
    /// `user:ann`; `openvibe proposals ls --assignee user:ann` finds them).
    #[must_use]
    pub fn escalate_to(mut self, person: impl Into<String>) -> Self {
        self.escalate_to = Some(person.into());
        self
    }

    /// Who the role's escalations are assigned to, when someone.
    pub fn escalation_assignee(&self) -> Option<&str> {
        self.escalate_to.as_deref()
    }

    /// Where the role files its proposals, when it has a store.
    pub fn proposals(&self) -> Option<&Arc<dyn ProposalStore>> {
        self.proposals.as_ref()
    }

    /// The domains it owns.
    pub fn owned_domains(&self) -> &[String] {
        &self.domains
    }

    /// The domain of the role's own events when nothing names one (a
    /// firing, a request, a priority, a pace escalation): its first owned
    /// domain, else `general`.
    pub fn home_domain(&self) -> String {
        self.domains
            .first()
            .cloned()
            .unwrap_or_else(|| "general".to_owned())
    }

    /// The role id.
    pub fn role_id(&self) -> &str {
        &self.role_id
    }

    /// How the role may perform `action`: forbidden > needs approval >
    /// autonomous, unknown actions need approval; without an authority
    /// configuration everything is autonomous.
    pub fn can_act(&self, action: &str) -> Authority {
        self.authority
            .as_ref()
            .map_or(Authority::Autonomous, |a| a.can_act(action))
    }

    /// The authority configuration.
    pub fn authority_config(&self) -> Option<&AuthorityConfig> {
        self.authority.as_ref()
    }

    /// The clearance.
    pub fn clearance_profile(&self) -> Option<&ClearanceProfile> {
        self.clearance.as_ref()
    }

    /// The structured memory.
    pub fn agent_memory(&self) -> Option<&AgentMemory> {
        self.agent_memory.as_ref()
    }

    /// The role's LLM, as its operators get it ([`RoleAwareLlm`]: the soul
    /// injected, every call in the raw log when the role has agent memory).
    pub fn llm(&self) -> Result<Arc<dyn LlmProvider>, Error> {
        let inner = self
            .llm
            .clone()
            .ok_or_else(|| Error::NoLlm(self.role_id.clone()))?;
        Ok(Arc::new(RoleAwareLlm::new(self, inner)?))
    }

    /// The role's memory pyramid (L1 raw log, L2 episodes, L3 insights and
    /// the workspace), when it has agent memory.
    pub fn pyramid(&self) -> Option<MemoryPyramid> {
        self.agent_memory.clone().map(MemoryPyramid::new)
    }

    /// The V1 memory.
    pub fn memory(&self) -> Option<&Arc<dyn MemoryProvider>> {
        self.memory.as_ref()
    }

    /// The soul's text (a soul file is read now).
    pub fn soul_text(&self) -> Result<String, Error> {
        self.soul.load(&self.role_id)
    }

    /// The operators.
    pub fn operators(&self) -> &[Operator] {
        &self.operators
    }

    /// Operator ids, in the order they were added.
    pub fn operator_ids(&self) -> Vec<&str> {
        self.operators.iter().map(Operator::id).collect()
    }

    /// The effective clearance (no clearance: public only).
    fn effective_clearance(&self) -> ClearanceProfile {
        self.clearance
            .clone()
            .unwrap_or_else(|| ClearanceProfile::new(self.role_id.clone()))
    }

    /// The operator `operator_id`, bound to this role: its LLM injects the
    /// soul (and V1 memories when there is no agent memory), its memory
    /// scopes are assembled from the agent memory within the role's
    /// clearance, its episodes go to the agent memory, and its tools are
    /// gated by the role's authority.
    pub fn get_operator(&self, operator_id: &str) -> Result<BoundOperator, Error> {
        let operator = self
            .operators
            .iter()
            .find(|o| o.id() == operator_id)
            .ok_or_else(|| Error::UnknownOperator {
                role: self.role_id.clone(),
                operator: operator_id.to_owned(),
                known: self.operator_ids().into_iter().map(str::to_owned).collect(),
            })?;
        let mut ctx = NodeContext::new(self.llm()?).with_tool_gate(Arc::new(AuthorityGate {
            role_id: self.role_id.clone(),
            authority: self.authority.clone(),
            approver: self.approver.clone(),
            proposals: self
                .proposals
                .clone()
                .map(|store| (store, self.proposal_context())),
            metrics: self.metric_reporter(),
        }));
        if let (Some(memory), Some(assembler)) = (&self.agent_memory, self.assembler()) {
            ctx = ctx.with_assembler(Arc::new(assembler));
            ctx = match self.metric_reporter() {
                Some(reporter) => ctx.with_episode_sink(Arc::new(crate::goal_hooks::MetricSink {
                    memory: memory.clone(),
                    reporter,
                })),
                None => ctx.with_episode_sink(Arc::new(memory.clone())),
            };
        }
        if self.space().is_some() {
            ctx = ctx.with_delegate(Arc::new(RoleDelegate(self.clone())));
        }
        Ok(operator.bind(ctx))
    }

    /// How the role compares statements' subjects: by meaning with its
    /// embedder, by words without one.
    pub fn subjects(&self) -> openvibe_memory::Subjects {
        match &self.embedder {
            Some(embedder) => openvibe_memory::Subjects::by_meaning(embedder.clone()),
            None => openvibe_memory::Subjects::by_words(),
        }
    }

    /// The role's memory assembler (its agent memory within its
    /// clearance, with its embedder and observer), when it has agent memory.
    fn assembler(&self) -> Option<MemoryAssembler> {
        let memory = self.agent_memory.as_ref()?;
        let mut assembler = MemoryAssembler::new(memory.clone(), self.effective_clearance())
            .with_recall_cache(self.recall_cache.clone());
        if let Some(embedder) = &self.embedder {
            assembler = assembler.with_embedder(embedder.clone());
        }
        if let Some(observer) = &self.observer {
            assembler = assembler.with_observer(observer.clone());
        }
        Some(assembler)
    }

    /// The role's decision engine: its domains, authority, impact rules,
    /// matrix and assessor, with its memory as the evidence.
    pub fn decision_engine(&self) -> DecisionEngine {
        let mut engine = DecisionEngine::new(self.role_id.clone())
            .domains(self.domains.clone())
            .impact_rules(self.impact.clone())
            .matrix(self.matrix.clone());
        if let Some(authority) = &self.authority {
            engine = engine.authority(authority.clone());
        }
        if let Some(assembler) = self.assembler() {
            engine = engine.memory(assembler);
        }
        if let Some(assessor) = &self.assessor {
            engine = engine.assessor(assessor.clone());
        }
        engine
    }

    /// What the role would decide on `event` now if its memory held none
    /// of the records `without` (beliefs, insights or episodes, by id):
    /// [`DecisionEngine::evaluate_without`] with the rejections that stand.
    /// A what-if: nothing is recorded and nothing runs.
    pub async fn decide_without(
        &self,
        event: &DecisionEvent,
        without: &[&str],
    ) -> Result<Decision, Error> {
        let rejections = self.verdicts(false).await?;
        self.decision_engine()
            .standing_rejections(rejections)
            .evaluate_without(event, without)
            .await
    }

    /// Decide on `event` (seed 001, V3: `role.decision_engine.evaluate`),
    /// and record the decision in the role's memory as an episode tagged
    /// [`DECISION_TAG`] (audited like every write), when it has agent
    /// memory. Nothing runs: see [`Role::execute`].
    pub async fn decide(&self, event: &DecisionEvent) -> Result<Decision, Error> {
        let rejections = self.observe_verdicts().await?;
        let decision = self
            .decision_engine()
            .standing_rejections(rejections)
            .evaluate(event)
            .await?;
        if let Some(memory) = &self.agent_memory {
            memory.record_episode(decision_episode(&decision)).await?;
        }
        Ok(decision)
    }

    /// Decide on `event` and, when the decision is to act, run its action
    /// and record how it went as an episode (`outcome.status` `ok` or
    /// `failed`: the track record later decisions weigh). With a
    /// [proposal store](Role::with_proposals), a `Propose` or `Escalate`
    /// decision files a proposal for a person ([`Role::propose`]).
    pub async fn handle(&self, event: &DecisionEvent) -> Result<Handled, Error> {
        let decision = self.decide(event).await?;
        let mut handled = Handled {
            decision,
            result: None,
            proposal: None,
        };
        let decision = &handled.decision;
        match (decision.outcome, &event.action) {
            (Outcome::Act, Some(action)) => {
                let result = self.execute_as(action, false, Some(&event.id)).await;
                self.record_run(decision, action, &result).await?;
                handled.result = Some(result.map_err(|e| e.to_string()));
            }
            (Outcome::Propose | Outcome::Escalate, _) if self.proposals.is_some() => {
                handled.proposal = Some(self.propose(decision).await?);
            }
            _ => {}
        }
        Ok(handled)
    }

    /// Record one run of a decided action as an episode of the role.
    pub(crate) async fn record_run(
        &self,
        decision: &Decision,
        action: &Action,
        result: &Result<Value, Error>,
    ) -> Result<(), Error> {
        let Some(memory) = &self.agent_memory else {
            return Ok(());
        };
        // The beliefs and insights it was decided on (what carried it): a
        // run that goes against what was decided weighs against them next
        // time.
        let decided_on: Vec<&str> = decision
            .confidence
            .evidence
            .iter()
            .filter(|e| {
                e.kind != openvibe_protocols::EvidenceKind::Episode
                    && e.relevance >= crate::decision::BASIS_RELEVANCE
            })
            .map(|e| e.id.as_str())
            .collect();
        let (setback, summary) = match result {
            Ok(output) => crate::experience::read_result(output),
            Err(e) => (None, e.to_string()),
        };
        let (status, detail) = match (result, &setback) {
            (Ok(output), None) => (
                "ok".to_owned(),
                json!({"status": "ok", "output": output, "decided_on": decided_on}),
            ),
            (Ok(output), Some(setback)) => (
                setback.clone(),
                json!({"status": setback, "output": output, "decided_on": decided_on}),
            ),
            (Err(e), _) => (
                "failed".to_owned(),
                json!({"status": "failed", "error": e.to_string(), "decided_on": decided_on}),
            ),
        };
        let mut tags = vec!["action".to_owned()];
        if status == "failed" {
            tags.push("failed".to_owned());
        }
        if setback.is_some() {
            tags.push(openvibe_memory::SETBACK_TAG.to_owned());
        }
        if status != "ok" {
            self.experience.note_lesson();
        }
        let episode_id = run_episode_id(&decision.id);
        memory
            .record_episode(Episode {
                id: episode_id.clone(),
                agent_id: self.role_id.clone(),
                operator_id: "decision_engine".to_owned(),
                node_name: "act".to_owned(),
                action: action.action.clone(),
                input_summary: truncate_chars(
                    &format!("{}: {}", decision.event.kind, decision.event.summary),
                    500,
                )
                .to_owned(),
                output_summary: truncate_chars(&format!("{status}: {summary}"), 500).to_owned(),
                outcome: detail,
                entity: decision.event.entity.clone(),
                domain: decision.event.domain.clone(),
                tags,
                external_id: Some(format!("decision:{}", decision.id)),
                ..Episode::default()
            })
            .await?;
        // The initiative it worked, when it worked one: done or blocked.
        let read = match result {
            Ok(_) => Ok((setback.as_deref(), summary.as_str())),
            Err(e) => Err(e),
        };
        self.note_initiative(&decision.event, crate::run_update(action, read))
            .await?;
        // A tool result that names metrics (a JSON object with a `metric`
        // field) moves the role's key results, once per run.
        if let (Some(reporter), Ok(Value::String(text))) = (self.metric_reporter(), result)
            && let Ok(value) = serde_json::from_str::<Value>(text)
        {
            let metrics =
                openvibe_protocols::MetricOutput::all_in(&value).map_err(|source| Error::Goal {
                    id: episode_id.clone(),
                    source,
                })?;
            for metric in &metrics {
                reporter
                    .report(metric, &episode_id)
                    .await
                    .map_err(|source| Error::Goal {
                        id: episode_id.clone(),
                        source,
                    })?;
            }
        }
        Ok(())
    }

    /// How the role reports its metrics, when it has a goal store.
    pub(crate) fn metric_reporter(&self) -> Option<crate::goal_hooks::MetricReporter> {
        Some(crate::goal_hooks::MetricReporter {
            goals: self.goals.clone()?,
            ctx: self.proposal_context(),
            role_id: self.role_id.clone(),
            domain: self.home_domain(),
            experience: self.experience.clone(),
            memory: self.agent_memory.clone(),
        })
    }

    /// Run `action` under the role's authority: a forbidden action never
    /// runs ([`Error::Forbidden`]), one that needs approval runs only when
    /// `approved` (a proposal's approval), any other runs. A tool target
    /// is one of the role's [action tools](Role::action_tool), called with
    /// the action's input; a workflow target runs the operator's workflow
    /// (bound to the role) from the input as its state. The result is the
    /// tool's output (a string) or the workflow's final state.
    pub async fn execute(&self, action: &Action, approved: bool) -> Result<Value, Error> {
        self.execute_as(action, approved, None).await
    }

    /// [`Role::execute`], `key` naming what asked for it (an event, a
    /// proposal): a delegated action's request id is derived from it, so
    /// running it again asks once (none: a new request).
    pub(crate) async fn execute_as(
        &self,
        action: &Action,
        approved: bool,
        key: Option<&str>,
    ) -> Result<Value, Error> {
        match self.can_act(&action.action) {
            Authority::Forbidden => {
                return Err(Error::Forbidden {
                    role: self.role_id.clone(),
                    action: action.action.clone(),
                });
            }
            Authority::NeedsApproval if !approved => {
                return Err(Error::NotApproved {
                    role: self.role_id.clone(),
                    action: action.action.clone(),
                });
            }
            _ => {}
        }
        let span = tracing::info_span!("act", role = %self.role_id, action = %action.action);
        let _entered = span.enter();
        match &action.target {
            ActionTarget::Tool { tool } => {
                let known = self.all_tools();
                let found =
                    known
                        .iter()
                        .find(|t| t.name() == tool)
                        .ok_or_else(|| Error::UnknownTool {
                            role: self.role_id.clone(),
                            tool: tool.clone(),
                            known: known.iter().map(|t| t.name().to_owned()).collect(),
                        })?;
                let output = found
                    .call(action.input.clone())
                    .await
                    .map_err(|e| Error::Action {
                        role: self.role_id.clone(),
                        action: action.action.clone(),
                        message: e.to_string(),
                    })?;
                Ok(Value::String(output))
            }
            ActionTarget::Workflow { operator, workflow } => {
                let state = State::from_value(action.input.clone()).map_err(|e| Error::Action {
                    role: self.role_id.clone(),
                    action: action.action.clone(),
                    message: e.to_string(),
                })?;
                let state = self
                    .get_operator(operator)?
                    .run_workflow(workflow, state)
                    .await?;
                Ok(state.into_value())
            }
            ActionTarget::Delegate { domain } => {
                drop(_entered);
                let key =
                    key.map_or_else(|| uuid::Uuid::new_v4().simple().to_string(), str::to_owned);
                self.run_delegated(action, domain, &key).await
            }
        }
    }

    /// The role's action tools, then the tools of its operators' nodes (a
    /// gated call of one of them runs here once approved).
    pub(crate) fn all_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools.clone();
        for operator in &self.operators {
            for name in operator.node_names() {
                if let Some(node) = operator.get_node(name) {
                    tools.extend(node.tools().iter().cloned());
                }
            }
        }
        tools
    }

    /// The role's memory as a browsable filesystem (when it has agent memory).
    pub fn filesystem(&self) -> Result<Option<MemoryFilesystem>, Error> {
        let Some(memory) = &self.agent_memory else {
            return Ok(None);
        };
        Ok(Some(
            MemoryFilesystem::new(self.role_id.clone(), memory.clone())
                .with_soul(self.soul_text()?)
                .with_clearance(self.effective_clearance()),
        ))
    }
}

/// The id of the episode that records how the action decided in
/// `decision_id` ran (`<decision id>-run`).
pub fn run_episode_id(decision_id: &str) -> String {
    format!("{decision_id}-run")
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Role")
            .field("role_id", &self.role_id)
            .field("soul", &self.soul)
            .field("operators", &self.operator_ids())
            .field("authority", &self.authority)
            .field("clearance", &self.clearance)
            .field("llm", &self.llm.is_some())
            .field("memory", &self.memory.is_some())
            .field("agent_memory", &self.agent_memory.is_some())
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .finish_non_exhaustive()
    }
}

/// What a role did with an event ([`Role::handle`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Handled {
    /// The decision.
    pub decision: Decision,
    /// When it acted: the action's result (its output) or why it failed.
    pub result: Option<Result<Value, String>>,
    /// When it proposed or escalated and has a proposal store: the
    /// proposal waiting for a person.
    pub proposal: Option<Proposal>,
}

/// A decision as an L2 episode of its role: what was decided on, the
/// outcome and its steps (the whole decision in `outcome`), tagged
/// [`DECISION_TAG`] and `outcome:<outcome>`.
pub fn decision_episode(decision: &Decision) -> Episode {
    let event = &decision.event;
    let impact = decision.impact.impact;
    Episode {
        id: decision.id.clone(),
        agent_id: decision.role_id.clone(),
        operator_id: "decision_engine".to_owned(),
        node_name: "decide".to_owned(),
        timestamp: decision.decided_at,
        action: event
            .action
            .as_ref()
            .map_or_else(|| event.kind.clone(), |a| a.action.clone()),
        input_summary: truncate_chars(&format!("{}: {}", event.kind, event.summary), 500)
            .to_owned(),
        output_summary: truncate_chars(
            &format!(
                "{}: {} (confidence {:.2}, {impact} impact)",
                decision.outcome, decision.reason, decision.confidence.score
            ),
            500,
        )
        .to_owned(),
        outcome: serde_json::to_value(decision).unwrap_or(Value::Null),
        entity: event.entity.clone(),
        domain: event.domain.clone(),
        tags: vec![
            DECISION_TAG.to_owned(),
            format!("outcome:{}", decision.outcome),
        ],
        importance: match impact {
            Impact::Low => 0.3,
            Impact::Medium => 0.6,
            Impact::High => 0.9,
        },
        external_id: Some(format!("event:{}", event.id)),
        ..Episode::default()
    }
}

/// The LLM a role's operators talk to: it puts the soul before every system
/// prompt, then, for roles with a goal store, their priorities of the day
/// (`## Priorities`), and, for roles without agent memory, appends the
/// role's V1 memories under `## Relevant Memories`. For roles with agent memory it
/// logs every call, answered or failed, to the raw log (L1): request as
/// sent, response, model, tokens, latency, stop reason and the node's
/// origin, appended in the background ([`openvibe_memory::RawLogWriter`]).
pub struct RoleAwareLlm {
    role_id: String,
    soul: String,
    memory: Option<Arc<dyn MemoryProvider>>,
    recall_limit: usize,
    raw_log: Option<AgentMemory>,
    priorities: Option<crate::goal_hooks::PrioritySource>,
    inner: Arc<dyn LlmProvider>,
}

impl RoleAwareLlm {
    /// Wrap `inner` for `role`.
    pub fn new(role: &Role, inner: Arc<dyn LlmProvider>) -> Result<Self, Error> {
        Ok(Self {
            role_id: role.role_id.clone(),
            soul: role.soul_text()?,
            memory: if role.agent_memory.is_none() {
                role.memory.clone()
            } else {
                None
            },
            recall_limit: role.recall_limit,
            raw_log: role
                .agent_memory
                .clone()
                .filter(|m| m.raw_log().config().enabled),
            priorities: role.goals.clone().map(|store| {
                crate::goal_hooks::PrioritySource::new(
                    store,
                    role.proposal_context(),
                    role.role_id.clone(),
                )
            }),
            inner,
        })
    }
}

#[async_trait]
impl LlmProvider for RoleAwareLlm {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut request = request.clone();
        if !self.soul.is_empty() {
            request.system = if request.system.is_empty() {
                self.soul.clone()
            } else {
                format!("{}\n\n{}", self.soul, request.system)
            };
        }
        if let Some(source) = &self.priorities {
            let section = source.section().await.map_err(|e| {
                LlmError::Other(format!(
                    "reading the priorities of role `{}` failed: {e}",
                    self.role_id
                ))
            })?;
            if let Some(section) = section {
                if !request.system.is_empty() {
                    request.system.push_str("\n\n");
                }
                request.system.push_str(&section);
            }
        }
        if let Some(memory) = &self.memory {
            // V1 memories are a role's short notes: all of them (newest
            // first, up to the limit) go into every prompt.
            let recalled = memory
                .recall(&self.role_id, "", self.recall_limit)
                .await
                .map_err(|e| {
                    LlmError::Other(format!(
                        "recalling the memories of role `{}` failed: {e}",
                        self.role_id
                    ))
                })?;
            if !recalled.is_empty() {
                let mut section = String::from("## Relevant Memories");
                for entry in &recalled {
                    section.push_str("\n- ");
                    section.push_str(&entry.content);
                }
                if !request.system.is_empty() {
                    request.system.push_str("\n\n");
                }
                request.system.push_str(&section);
            }
        }
        let Some(memory) = &self.raw_log else {
            return self.inner.call(&request).await;
        };
        let started = chrono::Utc::now();
        let clock = std::time::Instant::now();
        let result = self.inner.call(&request).await;
        let latency_us = u64::try_from(clock.elapsed().as_micros()).unwrap_or(u64::MAX);
        let outcome = match &result {
            Ok(response) => Ok(response.clone()),
            Err(e) => Err(e.to_string()),
        };
        memory
            .log_call(RawCall::new(
                self.role_id.clone(),
                started,
                latency_us,
                request,
                outcome,
            ))
            .await;
        result
    }
}

impl fmt::Debug for RoleAwareLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoleAwareLlm")
            .field("role_id", &self.role_id)
            .field("v1_memory", &self.memory.is_some())
            .field("raw_log", &self.raw_log.is_some())
            .finish_non_exhaustive()
    }
}

/// The role as its workflows' [`Delegate`](openvibe_primitives::Delegate):
/// what a [`DelegateNode`](openvibe_primitives::DelegateNode) asks through
/// (set on the node context when the role binds an operator and has a
/// space). The identity is the role's, never the state's.
pub(crate) struct RoleDelegate(pub(crate) Role);

#[async_trait]
impl openvibe_primitives::Delegate for RoleDelegate {
    fn role_id(&self) -> &str {
        self.0.role_id()
    }

    async fn ask(
        &self,
        request_id: &str,
        domain: &str,
        task: &str,
        input: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.0.ask(request_id, domain, task, input, timeout).await?)
    }
}
