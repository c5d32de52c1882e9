//! The cognitive loop (seed 001, V4): an event-driven runtime per role.
//!
//! ```text
//! perceive ─▶ decide ─▶ act ─▶ observe ─▶ reflect ─▶ learn
//! ```
//!
//! - **perceive**: an event is accepted ([`CognitiveLoop::push`]: in code,
//!   from a trigger firing, or over the wire) and journaled before anything
//!   else happens; an event id seen before is not run again.
//! - **decide**: the role's decision engine ([`Role::decide`]).
//! - **act**: the decided action runs (a tool or an operator's workflow), or
//!   a proposal is filed for a person, or nothing (refused).
//! - **observe**: the run becomes an episode linked to its decision (the
//!   track record later decisions weigh).
//! - **reflect**: on the role's reflection schedule: a reflection firing is
//!   an event whose path reflects (L2 → L3) and publishes.
//! - **learn**: after a reflection, strong insights are proposed as beliefs
//!   ([`Role::learn`]).
//!
//! Each stage runs in a `loop_stage` span and is journaled when it ends
//! (a [`Checkpointer`]: in memory, or a file that outlives the process), so
//! each event's path is queryable ([`CognitiveLoop::trace`],
//! `openvibe loop trace EVENT_ID`), and a process killed mid-event resumes
//! it at the first unfinished stage: a finished stage never runs again.
//!
//! Back-pressure: each role has a bounded queue ([`LoopConfig::capacity`]);
//! when it is full, [`CognitiveLoop::push`] refuses the event with
//! [`Error::LoopFull`] and journals nothing: an event is never dropped
//! silently. Events of one role run one at a time, in the order accepted;
//! roles run side by side.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use openvibe_operators::{Checkpoint, Checkpointer, END};
use openvibe_protocols::{
    Accepted, ActOutcome, Action, DecisionEvent, EventSource, InitiativeStatus, InitiativeUpdate,
    LoopTrace, Outcome, REFLECT_EVENT, Stage, StageRecord, State,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::{Error, Learning, RoleRuntime};

/// How many events a role's queue holds by default.
pub const DEFAULT_LOOP_CAPACITY: usize = 256;

fn micros_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Check an event before the loop accepts it: a decision event
/// ([`check_event`](crate::check_event)), or a reflection event with an id.
pub fn check_loop_event(event: &DecisionEvent) -> Result<(), Error> {
    if event.kind != REFLECT_EVENT {
        return crate::decision::check_event(event);
    }
    if event.id.trim().is_empty() {
        return Err(Error::InvalidEvent {
            field: "id".into(),
            message: "must not be empty".into(),
        });
    }
    Ok(())
}

/// The journal's run id of event `event_id` of `role_id`.
pub fn run_id(role_id: &str, event_id: &str) -> String {
    openvibe_protocols::loop_run_id(role_id, event_id)
}

fn journal_error(run_id: &str, message: String) -> Error {
    Error::Operator(openvibe_operators::Error::Checkpoint {
        run_id: run_id.to_owned(),
        source: openvibe_protocols::StoreError::backend(message),
    })
}

fn journal_store_error(run_id: &str, source: openvibe_protocols::StoreError) -> Error {
    Error::Operator(openvibe_operators::Error::Checkpoint {
        run_id: run_id.to_owned(),
        source,
    })
}

/// Where the loop journals each event's trace: after each stage that did
/// something, so a process that restarts resumes unfinished events and
/// anyone can read an event's path.
#[async_trait::async_trait]
pub trait LoopJournal: Send + Sync {
    /// Save `trace` (replacing the event's previous one).
    async fn save(&self, trace: &LoopTrace) -> Result<(), Error>;
    /// Event `event_id` of `role_id`, when journaled.
    async fn load(&self, role_id: &str, event_id: &str) -> Result<Option<LoopTrace>, Error>;
    /// Every event not done yet (what a restarted process resumes).
    async fn unfinished(&self) -> Result<Vec<LoopTrace>, Error>;
}

/// A journal in this process (lost when it ends): traces kept as they
/// are, without serializing them.
#[derive(Debug, Default)]
pub struct InMemoryJournal {
    traces: Mutex<std::collections::HashMap<String, LoopTrace>>,
}

impl InMemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    fn traces(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, std::collections::HashMap<String, LoopTrace>>, Error>
    {
        self.traces
            .lock()
            .map_err(|_| journal_error("(journal)", "the journal's lock is poisoned".into()))
    }
}

#[async_trait::async_trait]
impl LoopJournal for InMemoryJournal {
    async fn save(&self, trace: &LoopTrace) -> Result<(), Error> {
        let id = run_id(&trace.role_id, &trace.event.id);
        let mut traces = self.traces()?;
        match traces.get_mut(&id) {
            Some(old) => old.clone_from(trace),
            None => {
                traces.insert(id, trace.clone());
            }
        }
        Ok(())
    }

    async fn load(&self, role_id: &str, event_id: &str) -> Result<Option<LoopTrace>, Error> {
        Ok(self.traces()?.get(&run_id(role_id, event_id)).cloned())
    }

    async fn unfinished(&self) -> Result<Vec<LoopTrace>, Error> {
        Ok(self
            .traces()?
            .values()
            .filter(|t| !t.is_done())
            .cloned()
            .collect())
    }
}

/// A journal in a [`Checkpointer`] (a `FileCheckpointer` outlives the
/// process): each trace a checkpoint whose run id is [`run_id`].
pub struct CheckpointJournal(pub Arc<dyn Checkpointer>);

#[async_trait::async_trait]
impl LoopJournal for CheckpointJournal {
    async fn save(&self, trace: &LoopTrace) -> Result<(), Error> {
        let checkpoint = to_checkpoint(trace)?;
        self.0
            .save(&checkpoint)
            .await
            .map_err(|e| journal_store_error(&checkpoint.run_id, e))
    }

    async fn load(&self, role_id: &str, event_id: &str) -> Result<Option<LoopTrace>, Error> {
        let id = run_id(role_id, event_id);
        let checkpoint = self
            .0
            .load(&id)
            .await
            .map_err(|e| journal_store_error(&id, e))?;
        match &checkpoint {
            Some(checkpoint) => decode_checkpoint(checkpoint),
            None => Ok(None),
        }
    }

    async fn unfinished(&self) -> Result<Vec<LoopTrace>, Error> {
        let unfinished = self
            .0
            .unfinished()
            .await
            .map_err(|e| journal_store_error("(unfinished events)", e))?;
        let mut traces = Vec::with_capacity(unfinished.len());
        for checkpoint in &unfinished {
            traces.extend(decode_checkpoint(checkpoint)?);
        }
        Ok(traces)
    }
}

fn to_checkpoint(trace: &LoopTrace) -> Result<Checkpoint, Error> {
    let state = State::from_value(serde_json::json!({ "loop": trace }))
        .map_err(|e| journal_error(&run_id(&trace.role_id, &trace.event.id), e.to_string()))?;
    let completed = trace
        .stages
        .last()
        .map_or(Stage::Perceive, |s| s.stage)
        .as_str()
        .to_owned();
    Ok(Checkpoint {
        run_id: run_id(&trace.role_id, &trace.event.id),
        step: u32::try_from(trace.stages.len()).unwrap_or(u32::MAX),
        completed,
        next: trace.next.map_or(END, Stage::as_str).to_owned(),
        state,
        origin: serde_json::json!({
            "kind": "loop",
            "role_id": trace.role_id,
            "event_id": trace.event.id,
        }),
    })
}

/// The trace a loop checkpoint holds (what [`CheckpointJournal`] wrote) (`None` for other checkpoints).
pub fn trace_of_checkpoint(checkpoint: &Checkpoint) -> Option<LoopTrace> {
    decode_checkpoint(checkpoint).ok().flatten()
}

/// The trace of a loop checkpoint; `None` for another kind of checkpoint,
/// and an error for a loop checkpoint that does not decode (written by
/// another version: taking it for "no such event" would run it again).
fn decode_checkpoint(checkpoint: &Checkpoint) -> Result<Option<LoopTrace>, Error> {
    if checkpoint.origin.get("kind").and_then(Value::as_str) != Some("loop") {
        return Ok(None);
    }
    let trace = checkpoint.state.get("loop").ok_or_else(|| {
        journal_error(
            &checkpoint.run_id,
            "a loop checkpoint without its trace".into(),
        )
    })?;
    serde_json::from_value(trace.clone())
        .map(Some)
        .map_err(|e| {
            journal_error(
                &checkpoint.run_id,
                format!(
                    "a loop checkpoint that does not decode ({e}): written by another version?"
                ),
            )
        })
}

/// How a [`CognitiveLoop`] runs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoopConfig {
    /// How many accepted events wait per role before pushes are refused
    /// ([`Error::LoopFull`]); default [`DEFAULT_LOOP_CAPACITY`].
    pub capacity: usize,
    /// What the learn stage proposes (default [`Learning::default`]).
    pub learning: Learning,
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_LOOP_CAPACITY,
            learning: Learning::default(),
        }
    }
}

impl LoopConfig {
    /// At most `capacity` waiting events per role (at least 1).
    #[must_use]
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// What the learn stage proposes.
    #[must_use]
    pub fn learning(mut self, learning: Learning) -> Self {
        self.learning = learning;
        self
    }
}

/// What [`CognitiveLoop::run`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopReport {
    /// Events that went through the loop.
    pub events: u64,
    /// Of them, events an earlier process left unfinished.
    pub resumed: u64,
    /// Events that ended on a failed stage.
    pub failed: u64,
}

/// An accepted event on its way: its journal id and its perceived trace.
type Queued = (String, Box<LoopTrace>);

struct Queue {
    sender: mpsc::Sender<Queued>,
    receiver: Mutex<Option<mpsc::Receiver<Queued>>>,
}

/// An event claimed by this process; released on drop unless handed over.
struct Claim<'a> {
    owner: &'a CognitiveLoop,
    id: String,
    held: bool,
}

impl Claim<'_> {
    /// The worker that runs the event releases it when done.
    fn hand_over(mut self) {
        self.held = false;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.held {
            self.owner.release(&self.id);
        }
    }
}

/// The cognitive loop of a [`RoleRuntime`]'s roles: see the module
/// documentation. Cheap to share (`Arc`); push from anywhere, run once.
pub struct CognitiveLoop {
    pub(crate) runtime: Arc<RoleRuntime>,
    journal: Arc<dyn LoopJournal>,
    config: LoopConfig,
    queues: BTreeMap<String, Queue>,
    /// Accepted events not yet done in this process (no double accept).
    inflight: Mutex<HashSet<String>>,
    /// Set once `run` has taken on the unfinished events of the journal:
    /// an unfinished, unclaimed event a push finds after that was cut off
    /// half-way, and the push queues it again.
    running: std::sync::atomic::AtomicBool,
    /// The durable inbox this loop works, when it does
    /// ([`CognitiveLoop::durable`]).
    pub(crate) durable: Option<crate::leasing::Durable>,
}

impl CognitiveLoop {
    /// A loop over `runtime`'s roles, journaling in `journal`.
    pub fn new(runtime: Arc<RoleRuntime>, journal: Arc<dyn LoopJournal>) -> Self {
        Self::with_config(runtime, journal, LoopConfig::default())
    }

    /// [`CognitiveLoop::new`] with a configuration.
    pub fn with_config(
        runtime: Arc<RoleRuntime>,
        journal: Arc<dyn LoopJournal>,
        config: LoopConfig,
    ) -> Self {
        let queues = runtime
            .role_ids()
            .into_iter()
            .map(|role| {
                let (sender, receiver) = mpsc::channel(config.capacity.max(1));
                (
                    role,
                    Queue {
                        sender,
                        receiver: Mutex::new(Some(receiver)),
                    },
                )
            })
            .collect();
        Self {
            runtime,
            journal,
            config,
            queues,
            inflight: Mutex::new(HashSet::new()),
            running: std::sync::atomic::AtomicBool::new(false),
            durable: None,
        }
    }

    /// The runtime underneath.
    pub fn runtime(&self) -> &Arc<RoleRuntime> {
        &self.runtime
    }

    /// Accept `event` for `role_id`: checked, journaled (its `perceive`
    /// stage), then queued. An event id seen before (journaled, or
    /// accepted and not yet done) is a [duplicate](Accepted::duplicate) and
    /// runs once. Refused, journaling nothing: an unknown role
    /// ([`Error::UnknownRole`]), a malformed event ([`Error::InvalidEvent`]),
    /// a full queue ([`Error::LoopFull`]).
    pub async fn push(
        &self,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
    ) -> Result<Accepted, Error> {
        let role = self.runtime.get_role(role_id)?;
        if let Some(durable) = &self.durable {
            return self
                .push_durable(durable, &role.proposal_context(), role_id, event, source)
                .await;
        }
        check_loop_event(&event)?;
        let queue = self.queue(role_id)?;
        let id = run_id(role_id, &event.id);
        let Some(claim) = self.claim(&id)? else {
            return Ok(Accepted::new(id, true));
        };
        // Reserve the queue's slot first: a full queue journals nothing.
        let permit = queue.sender.try_reserve().map_err(|e| match e {
            mpsc::error::TrySendError::Full(()) => Error::LoopFull {
                role: role_id.to_owned(),
                capacity: self.config.capacity,
            },
            mpsc::error::TrySendError::Closed(()) => Error::LoopStopped {
                role: role_id.to_owned(),
            },
        })?;
        let (trace, duplicate) = match self.journal.load(role_id, &event.id).await? {
            Some(seen) if seen.is_done() => return Ok(Accepted::new(id, true)),
            // Unfinished and run by no one here: before `run` starts, an
            // event an earlier process left (`run` resumes it); once it
            // runs, a push cut off before it queued the event: queue it
            // again, from where it stands.
            Some(seen) if self.running.load(std::sync::atomic::Ordering::SeqCst) => (seen, true),
            Some(_) => return Ok(Accepted::new(id, true)),
            None => {
                let trace = LoopTrace::perceived(role_id, event, source);
                self.journal.save(&trace).await?;
                tracing::debug!(role = %role_id, event = %trace.event.id, "event perceived");
                (trace, false)
            }
        };
        permit.send((id.clone(), Box::new(trace)));
        // The worker releases the claim once the event is done.
        claim.hand_over();
        Ok(Accepted::new(id, duplicate))
    }

    /// Take `event` through the whole loop now, in this task (not through
    /// the role's queue, so beside the role's queued events): perceived and
    /// journaled as [`push`](Self::push) does, then every stage; its trace.
    /// An event seen before is not run again: a finished one's trace is
    /// returned, an unfinished one is taken on from where it stands. For
    /// code that wants the outcome at once (a test, a script, a demo).
    pub async fn run_event(
        &self,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
    ) -> Result<LoopTrace, Error> {
        self.runtime.get_role(role_id)?;
        if self.durable.is_some() {
            return Err(Error::NotLocal {
                what: format!("running event `{}` in this task", event.id),
            });
        }
        check_loop_event(&event)?;
        let id = run_id(role_id, &event.id);
        let event_id = event.id.clone();
        let Some(_claim) = self.claim(&id)? else {
            return Err(Error::InvalidEvent {
                field: "id".into(),
                message: format!("event `{event_id}` is being run already"),
            });
        };
        let trace = match self.journal.load(role_id, &event_id).await? {
            Some(seen) if seen.is_done() => return Ok(seen),
            Some(seen) => seen,
            None => {
                let trace = LoopTrace::perceived(role_id, event, source);
                self.journal.save(&trace).await?;
                trace
            }
        };
        self.process(&id, Some(trace)).await
    }

    /// Push a reflection event for `role_id` (what a reflection firing does
    /// in loop mode): its path reflects, publishes and learns.
    pub async fn push_reflection(
        &self,
        role_id: &str,
        id: impl Into<String>,
        source: EventSource,
    ) -> Result<Accepted, Error> {
        let event = DecisionEvent::new(id, REFLECT_EVENT, "").summary("the reflection schedule");
        self.push(role_id, event, source).await
    }

    /// Prioritize `role_id`'s day at `at` (the model sets the day's
    /// priorities, [`GoalSystem::prioritize`](crate::GoalSystem::prioritize)),
    /// check its key results' pace (an escalation for each behind it), and
    /// push each priority into its loop as an event
    /// ([`priority_event`](crate::priority_event)): the decision engine
    /// decides it like any other. What a prioritization firing does in
    /// loop mode; the events, as accepted.
    pub async fn push_priorities(
        &self,
        role_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<Accepted>, Error> {
        let priorities = self
            .runtime
            .prioritize_role(role_id, at.date_naive())
            .await?;
        self.runtime.check_pace(role_id, at).await;
        let role = self.runtime.get_role(role_id)?;
        let mut accepted = Vec::with_capacity(priorities.items.len());
        for event in crate::priority_events(role, &priorities) {
            accepted.push(self.push(role_id, event, EventSource::Trigger).await?);
        }
        accepted.extend(self.push_initiatives(role_id).await?);
        Ok(accepted)
    }

    /// Push `role_id`'s open initiatives into its loop, one event each
    /// ([`initiative_event`](crate::initiative_event)): its own are worked
    /// by their action, one in a domain another role owns is delegated to
    /// it through the space, a person's are left to them. Only goals
    /// decomposed at their current version count ([`GoalSystem::decompose`](crate::GoalSystem::decompose):
    /// stale initiatives wait for the new decomposition). The events, as
    /// accepted (an initiative's event is decided once, however often it
    /// is pushed).
    pub async fn push_initiatives(&self, role_id: &str) -> Result<Vec<Accepted>, Error> {
        let role = self.runtime.get_role(role_id)?;
        let mut accepted = Vec::new();
        for event in crate::initiative_events(role).await? {
            accepted.push(self.push(role_id, event, EventSource::Trigger).await?);
        }
        Ok(accepted)
    }

    fn queue(&self, role_id: &str) -> Result<&Queue, Error> {
        self.queues.get(role_id).ok_or_else(|| Error::UnknownRole {
            role: role_id.to_owned(),
            known: self.queues.keys().cloned().collect(),
        })
    }

    /// Claim event `id` for this process (`None`: someone here has it).
    /// The claim is released when dropped, unless handed over to the
    /// worker ([`Claim::hand_over`]): a push cut off half-way (a client
    /// gone, a timeout) never leaves an event claimed by no one.
    fn claim(&self, id: &str) -> Result<Option<Claim<'_>>, Error> {
        let mut inflight = self
            .inflight
            .lock()
            .map_err(|_| journal_error(id, "the loop's lock is poisoned".into()))?;
        Ok(inflight.insert(id.to_owned()).then(|| Claim {
            owner: self,
            id: id.to_owned(),
            held: true,
        }))
    }

    fn release(&self, id: &str) {
        if let Ok(mut inflight) = self.inflight.lock() {
            inflight.remove(id);
        }
    }

    /// The path of event `event_id` of `role_id` so far, from the journal.
    pub async fn trace(&self, role_id: &str, event_id: &str) -> Result<Option<LoopTrace>, Error> {
        self.journal.load(role_id, event_id).await
    }

    /// Run the loop until `stop` resolves: first the events an earlier
    /// process left unfinished (from their first unfinished stage), then
    /// each role's queue, one event at a time per role, roles side by side.
    /// Stopping is graceful: the event in progress finishes its stages;
    /// events still queued stay journaled and run on the next start. Once.
    pub async fn run<S>(&self, stop: S) -> Result<LoopReport, Error>
    where
        S: std::future::Future<Output = ()>,
    {
        self.run_with(stop, |_| {}).await
    }

    /// [`CognitiveLoop::run`], telling `observe` each event's trace when it
    /// is done.
    pub async fn run_with<S, O>(&self, stop: S, observe: O) -> Result<LoopReport, Error>
    where
        S: std::future::Future<Output = ()>,
        O: Fn(&LoopTrace) + Send + Sync,
    {
        self.runtime.join_space().await?;
        if let Some(durable) = &self.durable {
            let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
            let workers = self
                .queues
                .keys()
                .map(|role| self.lease_worker(durable, role.clone(), stop_rx.clone(), &observe))
                .collect();
            return Ok(self.run_workers(workers, stop_tx, stop_rx, stop).await);
        }
        let unfinished = self.journal.unfinished().await?;
        let mut resume: BTreeMap<String, Vec<(DateTime<Utc>, String)>> = BTreeMap::new();
        for trace in unfinished {
            if self.queues.contains_key(&trace.role_id) {
                let id = run_id(&trace.role_id, &trace.event.id);
                // Claimed already: a push took it on (and queued it).
                if let Some(claim) = self.claim(&id)? {
                    claim.hand_over();
                    resume
                        .entry(trace.role_id.clone())
                        .or_default()
                        .push((trace.received_at, id));
                }
            }
        }
        self.running
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut workers = Vec::new();
        for (role, queue) in &self.queues {
            let receiver = queue
                .receiver
                .lock()
                .map_err(|_| journal_error(role, "the loop's lock is poisoned".into()))?
                .take()
                .ok_or_else(|| Error::LoopStopped { role: role.clone() })?;
            let mut earlier = resume.remove(role).unwrap_or_default();
            earlier.sort();
            workers.push(self.worker(
                earlier.into_iter().map(|(_, id)| id).collect(),
                receiver,
                stop_rx.clone(),
                &observe,
            ));
        }
        Ok(self.run_workers(workers, stop_tx, stop_rx, stop).await)
    }

    /// Run `workers` (one per role) and the space feeds until `stop`
    /// resolves (then tell them through `stop_tx`); their reports summed.
    async fn run_workers<W, S>(
        &self,
        workers: Vec<W>,
        stop_tx: tokio::sync::watch::Sender<bool>,
        stop_rx: tokio::sync::watch::Receiver<bool>,
        stop: S,
    ) -> LoopReport
    where
        W: std::future::Future<Output = LoopReport>,
        S: std::future::Future<Output = ()>,
    {
        let feeds = futures::future::join_all(
            self.queues
                .keys()
                .filter_map(|role| self.runtime.get_role(role).ok())
                .filter(|role| role.space().is_some())
                .map(|role| self.feed_space(role, stop_rx.clone())),
        );
        let all = async {
            let (reports, _) = tokio::join!(futures::future::join_all(workers), feeds);
            reports
        };
        tokio::pin!(all);
        tokio::pin!(stop);
        let reports = tokio::select! {
            reports = &mut all => reports,
            () = &mut stop => {
                let _ = stop_tx.send(true);
                all.await
            }
        };
        let mut report = LoopReport::default();
        for r in reports {
            report.events += r.events;
            report.resumed += r.resumed;
            report.failed += r.failed;
        }
        report
    }

    async fn worker(
        &self,
        resume: Vec<String>,
        mut receiver: mpsc::Receiver<Queued>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        observe: &(dyn Fn(&LoopTrace) + Send + Sync),
    ) -> LoopReport {
        let mut report = LoopReport::default();
        for id in resume {
            if *stop.borrow() {
                return report;
            }
            report.resumed += 1;
            self.finish_event(&id, None, &mut report, observe).await;
        }
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => return report,
                next = receiver.recv() => match next {
                    Some((id, trace)) => self.finish_event(&id, Some(*trace), &mut report, observe).await,
                    None => return report,
                },
            }
        }
    }

    async fn finish_event(
        &self,
        id: &str,
        trace: Option<LoopTrace>,
        report: &mut LoopReport,
        observe: &(dyn Fn(&LoopTrace) + Send + Sync),
    ) {
        report.events += 1;
        match self.process(id, trace).await {
            Ok(trace) => {
                if trace.failed.is_some() {
                    report.failed += 1;
                }
                observe(&trace);
            }
            Err(e) => {
                report.failed += 1;
                tracing::warn!(event = %id, error = %e, "the loop could not journal an event");
            }
        }
        self.release(id);
    }

    /// Run event `id`'s remaining stages (from `trace` as accepted, else
    /// from the journal), journaling after each stage that does something
    /// for the event: a stage that is a no-op for it ([`LoopTrace::is_noop`])
    /// is journaled with the stage before it.
    pub(crate) async fn process(
        &self,
        id: &str,
        trace: Option<LoopTrace>,
    ) -> Result<LoopTrace, Error> {
        let mut trace = match trace {
            Some(trace) => trace,
            None => {
                let (role, event) = id
                    .strip_prefix("loop/")
                    .and_then(|rest| rest.split_once('/'))
                    .ok_or_else(|| journal_error(id, "not a loop event".into()))?;
                self.journal
                    .load(role, event)
                    .await?
                    .ok_or_else(|| journal_error(id, "accepted but not journaled".into()))?
            }
        };
        let span = tracing::info_span!(
            "loop_event",
            role = %trace.role_id,
            event = %trace.event.id,
            kind = %trace.event.kind
        );
        async {
            while let Some(stage) = trace.next {
                if stage == Stage::Act && trace.act_began.is_some() {
                    // Begun by a process that stopped: at most once.
                    crate::leasing::record_interrupted_act(&mut trace);
                } else {
                    if stage == Stage::Act && crate::leasing::runs_action(&trace) {
                        trace.act_began = Some(Utc::now());
                        self.journal.save(&trace).await?;
                    }
                    self.runtime
                        .run_loop_stage(&mut trace, stage, &self.config.learning)
                        .await;
                }
                if trace.next.is_some_and(|next| trace.is_noop(next)) {
                    continue;
                }
                // Journaled by what comes next: the act stage's `act_began`
                // (it carries the decision), or a durable loop's finish (it
                // carries the whole trace).
                let journaled_next = match trace.next {
                    Some(Stage::Act) => {
                        trace.act_began.is_none() && crate::leasing::runs_action(&trace)
                    }
                    None => self.durable.is_some(),
                    Some(_) => false,
                };
                if !journaled_next {
                    self.journal.save(&trace).await?;
                }
            }
            Ok(trace)
        }
        .instrument(span)
        .await
    }
}

/// The loop as an [`EventInbox`](openvibe_protocols::EventInbox): what the
/// service's `/v1/loop` endpoints and MCP tools push into. The caller must
/// be allowed to write in the role's namespace (its id) in the role's
/// tenant; loop errors become store errors (a full queue a transient
/// backend error: retry later).
#[async_trait::async_trait]
impl openvibe_protocols::EventInbox for CognitiveLoop {
    async fn push(
        &self,
        ctx: &openvibe_protocols::CallerContext,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
    ) -> Result<Accepted, openvibe_protocols::StoreError> {
        self.inbox_check(ctx, role_id, "push an event into the loop of")?;
        openvibe_protocols::check_pushed_kind(&event, source)?;
        // Into the durable inbox, the caller its owner.
        if let Some(durable) = &self.durable {
            return self
                .push_durable(durable, ctx, role_id, event, source)
                .await
                .map_err(inbox_error);
        }
        CognitiveLoop::push(self, role_id, event, source)
            .await
            .map_err(inbox_error)
    }

    async fn trace(
        &self,
        ctx: &openvibe_protocols::CallerContext,
        role_id: &str,
        event_id: &str,
    ) -> Result<Option<LoopTrace>, openvibe_protocols::StoreError> {
        self.inbox_check(ctx, role_id, "read the loop of")?;
        CognitiveLoop::trace(self, role_id, event_id)
            .await
            .map_err(inbox_error)
    }
}

impl CognitiveLoop {
    /// The role exists in `ctx`'s tenant and `ctx` may write in its
    /// namespace.
    fn inbox_check(
        &self,
        ctx: &openvibe_protocols::CallerContext,
        role_id: &str,
        what: &str,
    ) -> Result<(), openvibe_protocols::StoreError> {
        let unknown = || openvibe_protocols::StoreError::NotFound {
            kind: "role",
            id: role_id.to_owned(),
        };
        let role = self.runtime.get_role(role_id).map_err(|_| unknown())?;
        if role.proposal_context().tenant_id() != ctx.tenant_id() {
            return Err(unknown());
        }
        ctx.placement(role_id, &format!("{what} role {role_id}"))
            .map(|_| ())
    }
}

/// A loop error as a store error (what crosses the wire).
fn inbox_error(error: Error) -> openvibe_protocols::StoreError {
    use openvibe_protocols::StoreError;
    match error {
        Error::InvalidEvent { field, message } => StoreError::invalid(field, message),
        Error::UnknownRole { role, .. } => StoreError::NotFound {
            kind: "role",
            id: role,
        },
        Error::LoopFull { .. } | Error::LoopStopped { .. } => StoreError::Backend {
            message: error.to_string(),
            transient: true,
            source: None,
        },
        Error::Operator(openvibe_operators::Error::Checkpoint { source, .. }) => source,
        other => StoreError::backend(other.to_string()),
    }
}

impl CognitiveLoop {
    /// Run the loop on the runtime's schedules until `stop` resolves: its
    /// timed triggers (and reflection schedule) register with the
    /// in-process scheduler, and each firing becomes an event of the loop
    /// ([`firing_event`]; a reflection firing a reflection event); proposals
    /// a person approved run as in [`RoleRuntime::serve`]. `observe` sees
    /// each event when it is done. Stopping is graceful (see
    /// [`CognitiveLoop::run`]); the schedules are cancelled.
    pub async fn serve<S, O>(&self, stop: S, observe: O) -> Result<LoopReport, Error>
    where
        S: std::future::Future<Output = ()>,
        O: Fn(&LoopTrace) + Send + Sync,
    {
        let runtime = &self.runtime;
        let scheduler = runtime.scheduler.as_ref().ok_or(Error::NoScheduler)?;
        let ids = runtime.start().await?;
        let Some(mut firings) = scheduler.take_firings() else {
            for id in &ids {
                let _ = scheduler.cancel(id).await;
            }
            return Err(Error::NoFirings);
        };
        let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
        let mut loop_stop = stop_rx.clone();
        let feed = async {
            let watch_proposals = runtime.has_proposals();
            let mut poll = tokio::time::interval(runtime.proposal_poll);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop_rx.changed() => return,
                    _ = poll.tick(), if watch_proposals => {
                        if let Err(e) = runtime.resume_proposals().await {
                            tracing::warn!(error = %e, "looking for approved proposals failed");
                        }
                    }
                    firing = firings.next() => {
                        let Some(firing) = firing else { return };
                        let pushed = if firing.trigger.workflow == crate::REFLECTION_WORKFLOW {
                            self.push_reflection(&firing.role_id, firing_event_id(&firing), EventSource::Trigger).await.map(|_| ())
                        } else if firing.trigger.workflow == crate::PRIORITIZE_WORKFLOW {
                            self.push_priorities(&firing.role_id, firing.scheduled_at).await.map(|_| ())
                        } else {
                            match runtime.get_role(&firing.role_id).and_then(|role| firing_event(role, &firing)) {
                                Ok(event) => self.push(&firing.role_id, event, EventSource::Trigger).await.map(|_| ()),
                                Err(e) => Err(e),
                            }
                        };
                        if let Err(e) = pushed {
                            tracing::warn!(role = %firing.role_id, trigger = %firing.trigger.id, error = %e, "a firing was not taken into the loop");
                        }
                    }
                }
            }
        };
        let looping = self.run_with(
            async move {
                let _ = loop_stop.wait_for(|stopped| *stopped).await;
            },
            observe,
        );
        tokio::pin!(stop);
        tokio::pin!(looping);
        tokio::pin!(feed);
        let mut fed = false;
        let report = loop {
            tokio::select! {
                () = &mut stop, if !*stop_tx.borrow() => { let _ = stop_tx.send(true); }
                () = &mut feed, if !fed => { fed = true; }
                report = &mut looping => break report,
            }
        };
        for id in &ids {
            let _ = scheduler.cancel(id).await;
        }
        report
    }
}

/// The id of the event a firing becomes: its trigger and due time (the
/// same in every process, so a firing is one event).
pub fn firing_event_id(firing: &openvibe_protocols::Firing) -> String {
    format!(
        "{}@{}",
        firing.trigger.id,
        firing
            .scheduled_at
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    )
}

/// The event a trigger firing becomes in the loop: kind `trigger.<id>`, in
/// the trigger input's `domain` (else the role's first owned domain, else
/// `general`), asking to run the trigger's workflow as the action named
/// after the workflow: the role's authority and decision engine decide
/// whether it runs, is proposed, or escalated.
pub fn firing_event(
    role: &crate::Role,
    firing: &openvibe_protocols::Firing,
) -> Result<DecisionEvent, Error> {
    let trigger = &firing.trigger;
    let (operator, state) = crate::trigger_target(trigger)?;
    let domain = trigger
        .input
        .get("domain")
        .and_then(Value::as_str)
        .map_or_else(|| role.home_domain(), str::to_owned);
    Ok(DecisionEvent::new(
        firing_event_id(firing),
        format!("trigger.{}", trigger.id),
        domain,
    )
    .summary(format!(
        "{} fired ({operator}/{})",
        trigger.id, trigger.workflow
    ))
    .action(Action::workflow(
        trigger.workflow.clone(),
        operator,
        trigger.workflow.clone(),
        state.into_value(),
    )))
}

/// The Reflect stage's outcome when a reflection of the role runs already.
const NOT_TWICE: &str = "skipped: a reflection of this role runs already";

impl RoleRuntime {
    /// Run `stage` of `trace`'s event and record it (in `trace.stages`, with
    /// `trace.next` moved on): what the in-process loop runs. A failing
    /// stage is recorded `failed: …` and ends the event (`trace.failed`);
    /// it does not return an error.
    pub async fn run_loop_stage(&self, trace: &mut LoopTrace, stage: Stage, learning: &Learning) {
        let at = Utc::now();
        let started = Instant::now();
        if let Err(e) = self.try_loop_stage(trace, stage, learning).await {
            let why = format!("{stage} failed: {e}");
            trace.failed = Some(why.clone());
            trace.next = None;
            trace.stages.push(StageRecord {
                stage,
                at,
                took_us: micros_since(started),
                outcome: why,
            });
            // A delegated request that cannot go on: its asker hears so.
            if let Ok(role) = self.get_role(&trace.role_id)
                && let Err(e) = role.answer_delegation(trace).await
            {
                tracing::warn!(role = %trace.role_id, event = %trace.event.id, error = %e, "the failure of a delegated request could not be answered");
            }
        }
    }

    /// Run `stage` of `trace`'s event; on success record it and move
    /// `trace.next` on. On failure the trace is unchanged and the error
    /// returned: what a durable engine (Temporal) runs, retrying the stage.
    pub async fn try_loop_stage(
        &self,
        trace: &mut LoopTrace,
        stage: Stage,
        learning: &Learning,
    ) -> Result<(), Error> {
        let at = Utc::now();
        let started = Instant::now();
        let span = tracing::info_span!(
            "loop_stage",
            role = %trace.role_id,
            event = %trace.event.id,
            stage = stage.as_str(),
            outcome = tracing::field::Empty,
        );
        // A stage changes the trace only once it succeeded.
        let outcome = self
            .stage(trace, stage, learning)
            .instrument(span.clone())
            .await?;
        span.record("outcome", outcome.as_str());
        trace.next = stage.next();
        trace.stages.push(StageRecord {
            stage,
            at,
            took_us: micros_since(started),
            outcome,
        });
        Ok(())
    }

    async fn stage(
        &self,
        trace: &mut LoopTrace,
        stage: Stage,
        learning: &Learning,
    ) -> Result<String, Error> {
        let role = self.get_role(&trace.role_id)?;
        let reflection = trace.is_reflection();
        match stage {
            Stage::Perceive => Ok("accepted".into()),
            Stage::Decide if reflection => Ok("skipped: a reflection event".into()),
            Stage::Decide => {
                let decision = role.decide(&trace.event).await?;
                let line = format!("{}: {}", decision.outcome, decision.reason);
                trace.decision = Some(decision);
                Ok(line)
            }
            Stage::Act => {
                let Some(decision) = &trace.decision else {
                    trace.act = None;
                    return Ok("skipped: nothing decided".into());
                };
                let act = match (decision.outcome, &trace.event.action) {
                    (Outcome::Act, Some(action)) => {
                        if let openvibe_protocols::ActionTarget::Delegate { domain } =
                            &action.target
                        {
                            let update = InitiativeUpdate::new(
                                InitiativeStatus::Delegated,
                                format!("asked the owner of `{domain}` to `{}`", action.action),
                            );
                            role.note_initiative(&trace.event, update).await?;
                        }
                        match role.execute_as(action, false, Some(&trace.event.id)).await {
                            Ok(output) => ActOutcome::Ran {
                                action: action.clone(),
                                output,
                            },
                            Err(e) => ActOutcome::Failed {
                                action: action.clone(),
                                error: e.to_string(),
                            },
                        }
                    }
                    (Outcome::Act, None) => ActOutcome::Nothing {
                        reason: "the event names no action".into(),
                    },
                    (Outcome::Propose | Outcome::Escalate, _) if role.proposals().is_some() => {
                        ActOutcome::Proposed {
                            proposal_id: role.propose(decision).await?.id,
                        }
                    }
                    (Outcome::Propose | Outcome::Escalate, _) => ActOutcome::Nothing {
                        reason: "no proposal store to file it in".into(),
                    },
                    (Outcome::Refuse, _) => ActOutcome::Nothing {
                        reason: "refused".into(),
                    },
                };
                let line = match &act {
                    ActOutcome::Ran { action, .. } => format!("ran {}", action.action),
                    ActOutcome::Failed { action, error } => {
                        format!("{} failed: {error}", action.action)
                    }
                    ActOutcome::Proposed { proposal_id } => format!("proposed {proposal_id}"),
                    ActOutcome::Nothing { reason } => format!("nothing: {reason}"),
                };
                trace.act = Some(act);
                Ok(line)
            }
            Stage::Observe => {
                let line = match (&trace.decision, &trace.act) {
                    (Some(decision), Some(ActOutcome::Ran { action, output })) => {
                        role.record_run(decision, action, &Ok(output.clone()))
                            .await?;
                        format!("episode {}", crate::run_episode_id(&decision.id))
                    }
                    (Some(decision), Some(ActOutcome::Failed { action, error })) => {
                        let failed = Err(Error::Action {
                            role: trace.role_id.clone(),
                            action: action.action.clone(),
                            message: error.clone(),
                        });
                        role.record_run(decision, action, &failed).await?;
                        format!("episode {} (failed)", crate::run_episode_id(&decision.id))
                    }
                    (Some(decision), act) => {
                        // The initiative it works, when nothing ran: a
                        // person decides (working), or nothing will.
                        let update = match act {
                            Some(ActOutcome::Proposed { proposal_id }) => {
                                Some(InitiativeUpdate::new(
                                    InitiativeStatus::Working,
                                    format!("proposal `{proposal_id}` waits for a person"),
                                ))
                            }
                            Some(ActOutcome::Nothing { reason }) => Some(InitiativeUpdate::new(
                                InitiativeStatus::Blocked,
                                format!("nothing ran ({reason}): {}", decision.reason),
                            )),
                            _ => None,
                        };
                        if let Some(update) = update {
                            role.note_initiative(&trace.event, update).await?;
                        }
                        format!("the decision's episode records it ({})", decision.id)
                    }
                    (None, _) => "skipped: nothing decided".into(),
                };
                // A delegated request: the answer goes back in its thread
                // (the same answer again when this stage is retried).
                Ok(match role.answer_delegation(trace).await? {
                    Some(status) => format!("{line}; answered {}", status.as_str()),
                    None => line,
                })
            }
            Stage::Reflect => {
                // On the schedule, or after experience: a setback or a
                // rejection (a lesson), or every so many events.
                let due =
                    reflection || role.experience.due(learning.after_setbacks, learning.every);
                if !due {
                    return Ok(
                        "not due (on the role's reflection schedule, or after a setback)".into(),
                    );
                }
                let Some(_learning) = role.experience.begin() else {
                    return Ok(NOT_TWICE.into());
                };
                let trigger = self.reflection_trigger();
                let summary = self.reflect_and_publish_now(role, &trigger).await?;
                let why = if reflection {
                    ""
                } else {
                    openvibe_protocols::AFTER_EXPERIENCE
                };
                Ok(format!(
                    "{why}{} episode(s): {} new insight(s), {} strengthened, {} published",
                    summary.episodes, summary.created, summary.strengthened, summary.published
                ))
            }
            Stage::Learn if !reflection && !trace.reflected_after_experience() => {
                Ok("not due (after a reflection)".into())
            }
            Stage::Learn if role.proposals().is_none() => {
                Ok("skipped: no proposal store to file beliefs in".into())
            }
            Stage::Learn => {
                let learned = role.learn(learning).await?;
                Ok(format!(
                    "{} belief(s) proposed ({} eligible, {} held)",
                    learned.proposed.len(),
                    learned.eligible,
                    learned.held
                ))
            }
        }
    }

    /// The reflection trigger of this runtime (its
    /// [reflection](Self::with_reflection) schedule's, else the default's)
    /// without learning: the loop's learn stage learns.
    fn reflection_trigger(&self) -> openvibe_protocols::TriggerConfig {
        let mut reflection = self.reflection.clone().unwrap_or_default();
        reflection.learning = None;
        reflection.trigger()
    }
}
