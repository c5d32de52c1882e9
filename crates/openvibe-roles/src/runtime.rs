//! `RoleRuntime`: roles wired to the shared LLM, memory, workspace and scheduler.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use openvibe_memory::{MemoryGateway, RawLogConfig, Stores, WorkspaceMemory};
use openvibe_operators::{BoundOperator, Checkpointer, OperatorRuntime, Step};
use openvibe_protocols::{
    DecisionEvent, LlmProvider, MemoryProvider, PROPOSAL_KIND, Proposal, ScheduleProvider, State,
    StoreError, TriggerConfig,
};
use tracing::Instrument;

use crate::{Error, Handled, Reflection, Resumed, Role};

/// Roles plus the infrastructure they share.
///
/// ```
/// use std::sync::Arc;
/// use openvibe_memory::{ClearanceProfile, WorkspaceMemory};
/// use openvibe_operators::Operator;
/// use openvibe_primitives::{LlmNode, testing::ScriptedLlm};
/// use openvibe_protocols::{LlmResponse, State};
/// use openvibe_roles::{Role, RoleRuntime};
///
/// let ops = Operator::new("revenue_ops")
///     .node(LlmNode::new("qualify", "You qualify leads.", |s: &State| {
///         Ok(format!("Score: {}", s.require_str("lead")?))
///     }).output_key("score"))
///     .sequence("qualify", ["qualify"]).unwrap();
/// let cro = Role::new("cro").soul("You are the CRO.").operator(ops).clearance(ClearanceProfile::new("cro"));
/// let llm = ScriptedLlm::new([LlmResponse::text(r#"{"score": 85}"#)]);
/// let runtime = RoleRuntime::new(Arc::new(llm.clone()))
///     .with_workspace(WorkspaceMemory::new())
///     .role(cro).unwrap();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let out = runtime.activate("cro", "revenue_ops", "qualify", [("lead", "Acme")].into_iter().collect()).await.unwrap();
/// assert_eq!(out.get("score").unwrap()["score"], 85);
/// assert_eq!(llm.requests()[0].system, "You are the CRO.\n\nYou qualify leads.");
/// # });
/// ```
#[derive(Clone)]
pub struct RoleRuntime {
    llm: Arc<dyn LlmProvider>,
    memory: Option<Arc<dyn MemoryProvider>>,
    /// The sentence model of the roles added without one of their own.
    embedder: Option<Arc<dyn openvibe_protocols::Embedder>>,
    /// Every agent memory and the workspace come from here.
    gateway: MemoryGateway,
    /// `gateway.workspace()`, kept current by the builder methods.
    workspace: Option<WorkspaceMemory>,
    pub(crate) scheduler: Option<Arc<dyn ScheduleProvider>>,
    /// When roles with agent memory reflect (see [`Reflection`]).
    pub(crate) reflection: Option<Reflection>,
    /// When roles with goals prioritize their day (see [`Prioritization`]).
    pub(crate) prioritization: Option<crate::Prioritization>,
    /// The objectives people set the roles (`goals.yaml`).
    goals: crate::goals::GoalsFile,
    /// Where scheduled runs keep their checkpoints (see `with_checkpointer`).
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    roles: BTreeMap<String, Role>,
    /// When this runtime was made: proposals claimed before belong to an
    /// earlier process (see [`Role::resume_proposals`]).
    pub(crate) started: chrono::DateTime<chrono::Utc>,
    /// How often [`serve`](Self::serve) looks for approved proposals.
    pub(crate) proposal_poll: std::time::Duration,
    /// The space the roles delegate in ([`with_space`](Self::with_space)).
    space: Option<String>,
    /// The people members of that space (escalations go to them).
    space_people: Vec<String>,
}

/// How often [`RoleRuntime::serve`] looks for approved proposals by default.
pub const DEFAULT_PROPOSAL_POLL: std::time::Duration = std::time::Duration::from_secs(2);

impl RoleRuntime {
    /// A runtime whose roles use `llm`.
    pub fn new(llm: Arc<dyn LlmProvider>) -> Self {
        Self {
            llm,
            memory: None,
            embedder: None,
            gateway: MemoryGateway::new(),
            workspace: None,
            scheduler: None,
            reflection: None,
            prioritization: None,
            goals: crate::goals::GoalsFile::default(),
            checkpointer: None,
            roles: BTreeMap::new(),
            started: chrono::Utc::now(),
            proposal_poll: DEFAULT_PROPOSAL_POLL,
            space: None,
            space_people: Vec::new(),
        }
    }

    /// Let the roles work together in the space `space_id` (of the
    /// runtime's stores): each role delegates there ([`Role::delegate`])
    /// and its loop takes the requests routed to it
    /// ([`CognitiveLoop::run`](crate::CognitiveLoop::run) joins it first:
    /// [`join_space`](Self::join_space)). `people` (owner keys, `user:ann`)
    /// are members too: a request for a domain no role owns goes to them.
    #[must_use]
    pub fn with_space<I, S>(mut self, space_id: impl Into<String>, people: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let space = space_id.into();
        self.space_people = people.into_iter().map(Into::into).collect();
        for role in self.roles.values_mut() {
            if role.space.is_none() {
                *role = role.clone().in_space(space.clone());
            }
        }
        self.space = Some(space);
        self
    }

    /// Create the runtime's space when it does not exist (idempotent) and
    /// make each role that delegates there a member owning its domains,
    /// and the space's people members: what every process running some of
    /// the roles does when its loop starts. The space is created public
    /// (its membership is what gates it; see docs/spaces.md). `None` when
    /// the runtime has no space.
    pub async fn join_space(&self) -> Result<Option<openvibe_protocols::Space>, Error> {
        use openvibe_protocols::{CallerContext, Classification, Member, Space};
        let Some(space_id) = &self.space else {
            return Ok(None);
        };
        let mut joined = None;
        for role in self.roles.values() {
            let Some((store, id)) = role.space() else {
                continue;
            };
            if id != space_id {
                continue;
            }
            let role_ctx = role.proposal_context();
            let ctx = CallerContext::system().with_tenant(role_ctx.tenant_id().to_owned());
            let failed = |source| Error::Space {
                role: role.role_id().to_owned(),
                source,
            };
            let mut space = Space::new(space_id.clone()).id(space_id.clone());
            space.meta.classification = Classification::Public;
            let created = store.create(&ctx, space).await.map_err(failed)?;
            let me = Member::new(role_ctx.owner_key()).owning(role.owned_domains().to_vec());
            let mut current = created;
            if current.find_member(&me.principal) != Some(&me) {
                current = store.add_member(&ctx, id, me).await.map_err(failed)?;
            }
            for person in &self.space_people {
                if current.find_member(person).is_none() {
                    current = store
                        .add_member(&ctx, id, Member::new(person.clone()))
                        .await
                        .map_err(failed)?;
                }
            }
            joined = Some(current);
        }
        Ok(joined)
    }

    /// How often [`serve`](Self::serve) looks for proposals a person
    /// approved, to run them (default [`DEFAULT_PROPOSAL_POLL`]).
    #[must_use]
    pub fn with_proposal_poll(mut self, every: std::time::Duration) -> Self {
        self.proposal_poll = every.max(std::time::Duration::from_millis(10));
        self
    }

    /// V1 key/value memory shared by roles that do not bring their own.
    #[must_use]
    pub fn with_memory(mut self, memory: Arc<dyn MemoryProvider>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The workspace the roles' agent memories publish to and read from.
    #[must_use]
    pub fn with_workspace(mut self, workspace: WorkspaceMemory) -> Self {
        self.gateway = self.gateway.with_workspace(workspace);
        self.workspace = self.gateway.workspace();
        self
    }

    /// Keep the roles' memory in these stores (the in-memory backend, or a
    /// database's): agent memories record episodes and insights in them and,
    /// unless a workspace was given, the workspace keeps its facts there.
    /// Swapping backends is this one call. Set it before adding roles.
    #[must_use]
    pub fn with_stores(mut self, stores: Stores) -> Self {
        self.gateway = self.gateway.with_stores(stores);
        self.workspace = self.gateway.workspace();
        self
    }

    /// The scheduler `start` registers triggers with.
    #[must_use]
    pub fn with_scheduler(mut self, scheduler: Arc<dyn ScheduleProvider>) -> Self {
        self.scheduler = Some(scheduler);
        self
    }

    /// Reflect on a schedule: every role with agent memory runs `reflect`
    /// and then `publish_to_workspace` when `reflection` comes due
    /// (registered by [`start`](Self::start), run by
    /// [`serve`](crate::RoleRuntime::serve) or a worker).
    #[must_use]
    pub fn with_reflection(mut self, reflection: Reflection) -> Self {
        self.reflection = Some(reflection);
        self
    }

    /// Prioritize on a schedule: every role with a goal store asks the
    /// model for its top priorities when `prioritization` comes due
    /// (registered by [`start`](Self::start), run by
    /// [`serve`](crate::RoleRuntime::serve) or a worker; see
    /// [`GoalSystem::prioritize`](crate::GoalSystem::prioritize)).
    #[must_use]
    pub fn with_prioritization(mut self, prioritization: crate::Prioritization) -> Self {
        self.prioritization = Some(prioritization);
        self
    }

    /// Make scheduled runs durable: each firing's run saves a checkpoint
    /// before its first node and after every node (under a run id made of
    /// its role, trigger and due time), and [`serve`](Self::serve) first
    /// resumes the runs a previous process left unfinished, without running
    /// their completed nodes again. Use a checkpointer that outlives the
    /// process (`openvibe_operators::FileCheckpointer`).
    #[must_use]
    pub fn with_checkpointer(mut self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// How the roles' raw logs (L1: every LLM call of a role with agent
    /// memory) are batched, retained and redacted. Set it before adding roles.
    #[must_use]
    pub fn with_raw_log(mut self, config: RawLogConfig) -> Self {
        self.gateway = self.gateway.with_raw_log_config(config);
        self
    }

    /// Rank the memory of every role added after this by meaning too, with
    /// `embedder`'s sentence vectors: what their prompts recall, the
    /// evidence of their decisions, and whether two insights or beliefs are
    /// on one subject ([`Role::with_embedder`]; a role with an embedder of
    /// its own keeps it). Set it before adding roles.
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn openvibe_protocols::Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The tenant the roles' agent memories act in (default `default`).
    /// Set it before adding roles.
    #[must_use]
    pub fn with_tenant(mut self, tenant_id: impl Into<String>) -> Self {
        self.gateway = self.gateway.with_tenant(tenant_id);
        self.workspace = self.gateway.workspace();
        self
    }

    /// Add a role, wired to the shared LLM and memory; a role that declares
    /// a clearance and has no agent memory gets one (connected to the workspace).
    pub fn role(mut self, role: Role) -> Result<Self, Error> {
        let id = role.role_id().to_owned();
        if self.roles.contains_key(&id) {
            return Err(Error::DuplicateRole(id));
        }
        let mut role = role.with_llm(self.llm.clone());
        if !role.has_embedder()
            && let Some(embedder) = &self.embedder
        {
            role = role.with_embedder(embedder.clone());
        }
        if role.memory().is_none()
            && let Some(memory) = &self.memory
        {
            role = role.with_memory(memory.clone());
        }
        if role.agent_memory().is_none()
            && let Some(clearance) = role.clearance_profile()
        {
            let memory = self.gateway.agent_memory(&id, clearance);
            role = role.with_agent_memory(memory);
        }
        if role.proposals().is_none()
            && let Some(stores) = self.gateway.stores()
        {
            role = role.with_proposals(stores.proposals.clone());
        }
        if role.goal_store().is_none()
            && let Some(stores) = self.gateway.stores()
        {
            role = role.with_goals(stores.goals.clone());
        }
        if role.spaces.is_none()
            && let Some(stores) = self.gateway.stores()
        {
            role = role.with_spaces(stores.spaces.clone());
        }
        if role.space.is_none()
            && let Some(space) = &self.space
        {
            role = role.in_space(space.clone());
        }
        self.roles.insert(id, role);
        Ok(self)
    }

    /// Add the roles declared in `config_path` (the source design's
    /// `config_path`; layout in [`config`](crate::config)): their ids,
    /// souls, authority and clearance from `roles.yaml`, their operators
    /// built by `operators` (usually `OperatorRuntime::from_yaml` of the
    /// directory's `operators.yaml`, with the code's workflow factories
    /// registered).
    ///
    /// The directory's `goals.yaml`, when there is one, gives the roles
    /// their objectives ([`with_goals`](Self::with_goals)), checked against
    /// the roles declared.
    pub fn with_config_path(
        self,
        config_path: impl AsRef<std::path::Path>,
        operators: &OperatorRuntime,
    ) -> Result<Self, Error> {
        let config_path = config_path.as_ref();
        let runtime = crate::config::load_roles(config_path, operators)?
            .into_iter()
            .try_fold(self, Self::role)?;
        let roles: Vec<&str> = runtime.roles.keys().map(String::as_str).collect();
        let goals = crate::goals::load_goals(config_path, &roles)?;
        Ok(runtime.with_goals(goals))
    }

    /// The objectives people set the roles (a `goals.yaml`): put in the
    /// goal store by [`start`](Self::start) (or
    /// [`sync_goals`](Self::sync_goals)), and the roles that own one
    /// prioritize on the [prioritization](Self::with_prioritization)
    /// schedule.
    #[must_use]
    pub fn with_goals(mut self, goals: crate::goals::GoalsFile) -> Self {
        self.goals = goals;
        self
    }

    /// The objectives of [`with_goals`](Self::with_goals).
    pub fn goals_file(&self) -> &crate::goals::GoalsFile {
        &self.goals
    }

    /// Put every role's objectives in its goal store (a changed objective
    /// becomes a new version; see [`GoalSystem::sync`](crate::GoalSystem::sync));
    /// returns how many goals were put. Roles without a goal store or
    /// without objectives are left alone.
    pub async fn sync_goals(&self) -> Result<usize, Error> {
        let mut put = 0;
        for role in self.roles.values() {
            if role.goal_store().is_some() && self.goals.of(role.role_id()).next().is_some() {
                put += role.goals()?.sync(&self.goals).await?.len();
            }
        }
        Ok(put)
    }

    /// The ids of the runtime's roles, sorted.
    pub fn role_ids(&self) -> Vec<String> {
        self.roles.keys().cloned().collect()
    }

    /// The role `role_id`.
    pub fn get_role(&self, role_id: &str) -> Result<&Role, Error> {
        self.roles.get(role_id).ok_or_else(|| Error::UnknownRole {
            role: role_id.to_owned(),
            known: self.roles.keys().cloned().collect(),
        })
    }

    /// Every role, by id.
    pub fn list_roles(&self) -> Vec<&Role> {
        self.roles.values().collect()
    }

    /// Decide on `event` as role `role_id` and act on the decision
    /// ([`Role::handle`]): run the action, or file a proposal.
    pub async fn handle(&self, role_id: &str, event: &DecisionEvent) -> Result<Handled, Error> {
        self.get_role(role_id)?.handle(event).await
    }

    /// Run the approved proposal `id` once, as the role that filed it
    /// ([`Role::run_approved`]).
    pub async fn run_approved(&self, id: &str) -> Result<Proposal, Error> {
        for role in self.roles.values() {
            let Some(store) = role.proposals() else {
                continue;
            };
            let found = store
                .get(&role.proposal_context(), id)
                .await
                .map_err(|source| Error::Proposal {
                    id: id.to_owned(),
                    source,
                })?;
            if found.is_some_and(|p| p.role_id == role.role_id()) {
                return role.run_approved(id).await;
            }
        }
        Err(Error::Proposal {
            id: id.to_owned(),
            source: StoreError::NotFound {
                kind: PROPOSAL_KIND,
                id: id.to_owned(),
            },
        })
    }

    /// Catch up with every role's proposals ([`Role::resume_proposals`]):
    /// run the approved ones nobody claimed, and mark `failed` those an
    /// earlier process claimed and never finished. [`serve`](Self::serve)
    /// calls it when it starts and every [poll](Self::with_proposal_poll).
    pub async fn resume_proposals(&self) -> Result<Resumed, Error> {
        let mut all = Resumed::default();
        for role in self.roles_with_proposals() {
            let done = role.resume_proposals(self.started).await?;
            all.ran.extend(done.ran);
            all.interrupted.extend(done.interrupted);
            all.expired += done.expired;
        }
        Ok(all)
    }

    /// The roles that file proposals.
    pub(crate) fn roles_with_proposals(&self) -> impl Iterator<Item = &Role> {
        self.roles.values().filter(|r| r.proposals().is_some())
    }

    /// How often `serve` and a Temporal worker look for approved proposals.
    pub fn proposal_poll(&self) -> std::time::Duration {
        self.proposal_poll
    }

    /// Whether any role files proposals (then `serve` and a Temporal
    /// worker look for approved ones).
    pub fn has_proposals(&self) -> bool {
        self.roles_with_proposals().next().is_some()
    }

    /// The stores the runtime keeps memory and proposals in, when given
    /// ([`with_stores`](Self::with_stores)).
    pub fn stores(&self) -> Option<&Stores> {
        self.gateway.stores()
    }

    /// The shared workspace.
    pub fn workspace(&self) -> Option<&WorkspaceMemory> {
        self.workspace.as_ref()
    }

    /// The shared LLM (without any role's soul).
    pub fn llm(&self) -> &Arc<dyn LlmProvider> {
        &self.llm
    }

    /// Run `workflow` of `operator` as `role`: role → operator → workflow → final state.
    pub async fn activate(
        &self,
        role_id: &str,
        operator_id: &str,
        workflow_id: &str,
        input: State,
    ) -> Result<State, Error> {
        self.activate_run(role_id, operator_id, workflow_id, input, None)
            .await
    }

    /// [`activate`](Self::activate), durably as `run` (its id and origin)
    /// when given and a checkpointer is set.
    pub(crate) async fn activate_run(
        &self,
        role_id: &str,
        operator_id: &str,
        workflow_id: &str,
        input: State,
        run: Option<(&str, serde_json::Value)>,
    ) -> Result<State, Error> {
        self.as_role(role_id, operator_id, workflow_id, |operator| async move {
            match (run, &self.checkpointer) {
                (Some((run_id, origin)), Some(checkpointer)) => {
                    operator
                        .run_workflow_durably(
                            workflow_id,
                            run_id,
                            origin,
                            checkpointer.clone(),
                            input,
                        )
                        .await
                }
                _ => operator.run_workflow(workflow_id, input).await,
            }
        })
        .await
    }

    /// Run one node of `workflow_id` as `role_id` (`node`, or the entry
    /// point when `None`) and say which comes next: how a durable engine
    /// (Temporal, `openvibe-temporal`) runs an activation, one recorded
    /// step at a time. The step's raw LLM calls are in the log when it
    /// returns.
    pub async fn activate_step(
        &self,
        role_id: &str,
        operator_id: &str,
        workflow_id: &str,
        node: Option<&str>,
        state: State,
    ) -> Result<Step, Error> {
        self.as_role(role_id, operator_id, workflow_id, |operator| async move {
            operator.step_workflow(workflow_id, node, state).await
        })
        .await
    }

    /// Run `work` with `role_id`'s `operator_id` bound, in an `activate`
    /// span naming the role's tenant and principal; flushes the role's raw
    /// log afterwards, so the calls are stored when this returns (one
    /// append, off the calls' path; a crash mid-run loses at most a batch
    /// window).
    async fn as_role<F, Fut, T>(
        &self,
        role_id: &str,
        operator_id: &str,
        workflow_id: &str,
        work: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(BoundOperator) -> Fut,
        Fut: Future<Output = Result<T, openvibe_operators::Error>>,
    {
        let span = tracing::info_span!(
            "activate",
            role = role_id,
            operator = operator_id,
            workflow = workflow_id,
            tenant = tracing::field::Empty,
            principal = tracing::field::Empty,
        );
        let role = self.get_role(role_id)?;
        if let Some(memory) = role.agent_memory() {
            let caller = memory.context();
            span.record("tenant", caller.tenant_id());
            span.record("principal", tracing::field::display(caller.principal()));
        }
        let operator = role.get_operator(operator_id)?;
        let result = work(operator).instrument(span).await;
        if let Some(memory) = role.agent_memory() {
            memory.flush_raw_log().await;
        }
        Ok(result?)
    }

    /// Put the roles' objectives in the goal store ([`sync_goals`](Self::sync_goals)),
    /// then register every timed trigger (cron, interval) of every role's
    /// operators with the scheduler, the [reflection](Self::with_reflection)
    /// of every role with agent memory, and the
    /// [prioritization](Self::with_prioritization) of every role with
    /// objectives; returns the schedule ids. Event,
    /// webhook and on-demand triggers are started by whoever receives them
    /// ([`activate`](Self::activate)). Fails without a scheduler; a trigger
    /// the scheduler refuses cancels what this call registered before it.
    pub async fn start(&self) -> Result<Vec<String>, Error> {
        let scheduler = self.scheduler.as_ref().ok_or(Error::NoScheduler)?;
        self.sync_goals().await?;
        let mut ids = Vec::new();
        for (role, trigger) in self.scheduled_triggers() {
            match scheduler.schedule(role, &trigger).await {
                Ok(id) => ids.push(id),
                Err(source) => {
                    for id in &ids {
                        let _ = scheduler.cancel(id).await;
                    }
                    return Err(Error::Schedule {
                        role: role.to_owned(),
                        source,
                    });
                }
            }
        }
        Ok(ids)
    }

    /// Every (role, trigger) [`start`](Self::start) registers, in order:
    /// each role's timed operator triggers (with their operator), then its
    /// reflection trigger when it has agent memory and a
    /// [reflection](Self::with_reflection) is set.
    pub fn scheduled_triggers(&self) -> Vec<(&str, TriggerConfig)> {
        let mut out = Vec::new();
        for role in self.roles.values() {
            for operator in role.operators() {
                for trigger in operator.triggers() {
                    if trigger.kind.is_timed() {
                        let mut trigger = trigger.clone();
                        trigger
                            .operator_id
                            .get_or_insert_with(|| operator.id().to_owned());
                        out.push((role.role_id(), trigger));
                    }
                }
            }
            if let (Some(reflection), Some(_)) = (&self.reflection, role.agent_memory()) {
                out.push((role.role_id(), reflection.trigger()));
            }
            if let (Some(prioritization), Some(_)) = (&self.prioritization, role.goal_store())
                && self.goals.of(role.role_id()).next().is_some()
            {
                out.push((role.role_id(), prioritization.trigger()));
            }
        }
        out
    }
}

impl fmt::Debug for RoleRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoleRuntime")
            .field("roles", &self.roles.keys().collect::<Vec<_>>())
            .field("memory", &self.memory.is_some())
            .field("gateway", &self.gateway)
            .field("scheduler", &self.scheduler.is_some())
            .finish_non_exhaustive()
    }
}
