//! The cognitive loop on a durable inbox ([`InboxStore`]): events pushed
//! by any process (a service instance, a trigger, a space request, a
//! priority) and worked by whichever loop process leases them.
//!
//! ```text
//! push ─▶ inbox (pending) ─lease─▶ process A: stages, each journaled with a renewal ─finish─▶ done
//!                                  └─ killed: the lease lapses ─▶ process B leases it, resumes at
//!                                     its first unfinished stage
//! ```
//!
//! A loop process ([`CognitiveLoop::durable`]) runs one worker per role:
//! it leases the oldest free events of its role (a batch, each for
//! [`Leasing::lease_ms`]), runs each one's stages, saves the event's trace
//! with a renewal after each stage (the journal lives in the inbox row, so
//! it is the lease that fences a process which lost it: a late save is
//! refused and the process stops working that event), renews while a long
//! stage runs, and finishes the event with its trace. Before the act stage
//! runs an action it journals that it began ([`LoopTrace::act_began`]): a
//! process that resumes an event whose action began and never finished
//! records it [interrupted](openvibe_protocols::ACT_INTERRUPTED) instead of
//! running it again, so an action runs at most once; every other stage
//! writes under ids derived from the event and may run again harmlessly.
//!
//! Idle workers wait for a push: the store's notifications
//! ([`InboxStore::pushes`]: PostgreSQL's `LISTEN`), a push through this
//! loop, or [`Leasing::poll`] (what takes over a lapsed lease).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openvibe_protocols::{
    ACT_INTERRUPTED, Accepted, ActOutcome, CallerContext, DecisionEvent, EventSource, InboxEvent,
    InboxOutcome, InboxStore, LeaseRequest, LoopTrace, MIN_LEASE_MS, Outcome, Renewal, Stage,
    StageRecord, StoreError, inbox_event_id, inbox_trace, push_to_inbox,
};
use tokio::sync::Notify;

use crate::cognitive::{LoopJournal, LoopReport};
use crate::{CognitiveLoop, Error, RoleRuntime};

/// How long a loop process holds an event before another may take it over,
/// by default (it renews while it works it).
pub const DEFAULT_LEASE_MS: u64 = 30_000;

/// How many events a worker leases at once, by default.
pub const DEFAULT_LEASE_BATCH: usize = 8;

/// How long an idle worker waits before it looks again, by default (what
/// takes over an event whose holder died, and all a backend without push
/// notifications has).
pub const DEFAULT_POLL: Duration = Duration::from_millis(250);

/// How many times an event is leased before it is given up (`failed`), by
/// default: an event every process fails to journal (or dies on) does not
/// come back forever.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// How a loop process leases the events of a durable inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leasing {
    /// Who this process is in the inbox (unique per process:
    /// [`Leasing::process_holder`]).
    pub holder: String,
    /// How long a lease lasts, in milliseconds ([`DEFAULT_LEASE_MS`]); a
    /// process that dies is taken over this long after its last renewal.
    pub lease_ms: u64,
    /// How many events a worker leases at once ([`DEFAULT_LEASE_BATCH`]).
    pub batch: usize,
    /// How long an idle worker waits before it looks again ([`DEFAULT_POLL`]).
    pub poll: Duration,
    /// How many leases an event gets before it is given up
    /// ([`DEFAULT_MAX_ATTEMPTS`]).
    pub max_attempts: u32,
}

impl Default for Leasing {
    fn default() -> Self {
        Self::new(Self::process_holder())
    }
}

impl Leasing {
    /// The defaults, as `holder`.
    pub fn new(holder: impl Into<String>) -> Self {
        Self {
            holder: holder.into(),
            lease_ms: DEFAULT_LEASE_MS,
            batch: DEFAULT_LEASE_BATCH,
            poll: DEFAULT_POLL,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }

    /// A holder name for this process: its host, its process id and when
    /// it started (`host:pid:millis`), so a restarted process with a reused
    /// id is another holder.
    pub fn process_holder() -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "host".to_owned());
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        format!("{host}:{}:{started}", std::process::id())
    }

    /// Leases of `lease_ms` (at least [`MIN_LEASE_MS`]).
    #[must_use]
    pub fn lease_ms(mut self, lease_ms: u64) -> Self {
        self.lease_ms = lease_ms.max(MIN_LEASE_MS);
        self
    }

    /// Lease up to `batch` events at once (1 to
    /// [`MAX_LEASE_BATCH`](openvibe_protocols::MAX_LEASE_BATCH)).
    #[must_use]
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.clamp(1, openvibe_protocols::MAX_LEASE_BATCH);
        self
    }

    /// Look again after `poll` when idle.
    #[must_use]
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll.max(Duration::from_millis(1));
        self
    }

    /// Give an event up after `max_attempts` leases (at least 1).
    #[must_use]
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }
}

/// A loop's durable inbox and how it leases from it.
pub(crate) struct Durable {
    pub(crate) store: Arc<dyn InboxStore>,
    pub(crate) leasing: Leasing,
    /// Woken by a push through this loop.
    pub(crate) wake: Notify,
}

/// The loop's journal in the inbox, for one holder: a save is a renewal of
/// the holder's lease carrying the trace (refused once another process
/// took the event over: [`Error::LeaseLost`]); a load is the event's trace
/// as last saved, else its perceive stage.
pub(crate) struct InboxJournal {
    store: Arc<dyn InboxStore>,
    contexts: BTreeMap<String, CallerContext>,
    holder: String,
    lease_ms: u64,
}

impl InboxJournal {
    fn context(&self, role_id: &str) -> Result<&CallerContext, Error> {
        self.contexts
            .get(role_id)
            .ok_or_else(|| Error::UnknownRole {
                role: role_id.to_owned(),
                known: self.contexts.keys().cloned().collect(),
            })
    }
}

/// An inbox error of event `event_id` of `role_id` as the loop's: a
/// conflict is a lost lease, anything else a journal error.
fn inbox_error(role_id: &str, event_id: &str, holder: &str, e: StoreError) -> Error {
    match e {
        StoreError::Conflict { .. } => Error::LeaseLost {
            role: role_id.to_owned(),
            event: event_id.to_owned(),
            holder: holder.to_owned(),
            source: Box::new(e),
        },
        other => Error::Operator(openvibe_operators::Error::Checkpoint {
            run_id: crate::loop_run_id(role_id, event_id),
            source: other,
        }),
    }
}

#[async_trait::async_trait]
impl LoopJournal for InboxJournal {
    async fn save(&self, trace: &LoopTrace) -> Result<(), Error> {
        let ctx = self.context(&trace.role_id)?;
        let renewal = Renewal::new(self.holder.clone(), self.lease_ms).trace(trace.clone());
        self.store
            .renew(
                ctx,
                &inbox_event_id(&trace.role_id, &trace.event.id),
                &renewal,
            )
            .await
            .map(|_| ())
            .map_err(|e| inbox_error(&trace.role_id, &trace.event.id, &self.holder, e))
    }

    async fn load(&self, role_id: &str, event_id: &str) -> Result<Option<LoopTrace>, Error> {
        let ctx = self.context(role_id)?;
        self.store
            .get(ctx, &inbox_event_id(role_id, event_id))
            .await
            .map(|e| e.map(|e| inbox_trace(&e)))
            .map_err(|e| inbox_error(role_id, event_id, &self.holder, e))
    }

    /// None: a durable loop resumes events by leasing them, not from a
    /// list of its own.
    async fn unfinished(&self) -> Result<Vec<LoopTrace>, Error> {
        Ok(Vec::new())
    }
}

/// Who a loop process is in its roles' inbox: the role, with the manage
/// right where it may write (an event is owned by whoever pushed it: a
/// person, a key, another role), so it leases, renews and finishes the
/// events pushed for it. The loop is code the deployment runs: its
/// identity comes from the code, never from an event.
fn inbox_context(role: &crate::Role) -> CallerContext {
    role.proposal_context().with_privileged(true)
}

/// Whether the act stage of `trace` runs an action (the decision acts and
/// the event names one).
pub(crate) fn runs_action(trace: &LoopTrace) -> bool {
    trace.event.action.is_some()
        && trace
            .decision
            .as_ref()
            .is_some_and(|d| d.outcome == Outcome::Act)
}

/// Record the act stage of `trace` interrupted: its action began in a
/// process that stopped before recording how it went
/// ([`ACT_INTERRUPTED`]); it does not run again.
pub(crate) fn record_interrupted_act(trace: &mut LoopTrace) {
    let now = chrono::Utc::now();
    let outcome = match trace.event.action.clone() {
        Some(action) => {
            let line = format!("{} failed: {ACT_INTERRUPTED}", action.action);
            trace.act = Some(ActOutcome::Failed {
                action,
                error: ACT_INTERRUPTED.to_owned(),
            });
            line
        }
        None => {
            trace.act = None;
            format!("nothing: {ACT_INTERRUPTED}")
        }
    };
    trace.stages.push(StageRecord {
        stage: Stage::Act,
        at: now,
        took_us: 0,
        outcome,
    });
    trace.next = Stage::Act.next();
}

impl CognitiveLoop {
    /// A loop over `runtime`'s roles working the durable inbox `store`:
    /// pushes go into the inbox (from this process or any other), and
    /// [`run`](Self::run) and [`serve`](Self::serve) lease the events of
    /// these roles as `leasing` says, beside any other loop process that
    /// leases from the same store (see the [module documentation](self)).
    pub fn durable(
        runtime: Arc<RoleRuntime>,
        store: Arc<dyn InboxStore>,
        leasing: Leasing,
    ) -> Self {
        Self::durable_with_config(runtime, store, leasing, crate::LoopConfig::default())
    }

    /// [`CognitiveLoop::durable`] with a configuration (its capacity is
    /// unused: the inbox holds what waits).
    pub fn durable_with_config(
        runtime: Arc<RoleRuntime>,
        store: Arc<dyn InboxStore>,
        leasing: Leasing,
        config: crate::LoopConfig,
    ) -> Self {
        let contexts = runtime
            .role_ids()
            .into_iter()
            .filter_map(|id| {
                let ctx = inbox_context(runtime.get_role(&id).ok()?);
                Some((id, ctx))
            })
            .collect();
        let journal = Arc::new(InboxJournal {
            store: store.clone(),
            contexts,
            holder: leasing.holder.clone(),
            lease_ms: leasing.lease_ms,
        });
        let mut cognitive = Self::with_config(runtime, journal, config);
        cognitive.durable = Some(Durable {
            store,
            leasing,
            wake: Notify::new(),
        });
        cognitive
    }

    /// How this loop leases, when it works a durable inbox.
    pub fn leasing(&self) -> Option<&Leasing> {
        self.durable.as_ref().map(|d| &d.leasing)
    }

    /// Push `event` into the durable inbox as `ctx` (its owner), and wake
    /// this process's worker.
    pub(crate) async fn push_durable(
        &self,
        durable: &Durable,
        ctx: &CallerContext,
        role_id: &str,
        event: DecisionEvent,
        source: EventSource,
    ) -> Result<Accepted, Error> {
        crate::check_loop_event(&event)?;
        let event_id = event.id.clone();
        let accepted = push_to_inbox(durable.store.as_ref(), ctx, role_id, event, source)
            .await
            .map_err(|e| match e {
                StoreError::InvalidInput { field, reason } => Error::InvalidEvent {
                    field,
                    message: reason,
                },
                other => inbox_error(role_id, &event_id, &durable.leasing.holder, other),
            })?;
        if !accepted.duplicate {
            durable.wake.notify_waiters();
        }
        Ok(accepted)
    }

    /// One role's worker: lease a batch, work each event, wait for more.
    pub(crate) async fn lease_worker(
        &self,
        durable: &Durable,
        role_id: String,
        mut stop: tokio::sync::watch::Receiver<bool>,
        observe: &(dyn Fn(&LoopTrace) + Send + Sync),
    ) -> LoopReport {
        let mut report = LoopReport::default();
        let ctx = match self.runtime.get_role(&role_id) {
            Ok(role) => inbox_context(role),
            Err(_) => return report,
        };
        let leasing = &durable.leasing;
        let request = LeaseRequest::new(
            [role_id.as_str()],
            leasing.holder.clone(),
            leasing.lease_ms,
            leasing.batch,
        );
        loop {
            if *stop.borrow() {
                return report;
            }
            // Listen before looking, so a push in between wakes the wait.
            let woken = durable.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let seen = durable.store.pushes();
            let leased = match durable.store.lease(&ctx, &request).await {
                Ok(leased) => leased,
                Err(e) => {
                    tracing::warn!(role = %role_id, error = %e, "leasing events failed; trying again");
                    Vec::new()
                }
            };
            if leased.is_empty() {
                let heard = async {
                    match seen {
                        Some(seen) => durable.store.wait_for_push(seen, leasing.poll).await,
                        None => tokio::time::sleep(leasing.poll).await,
                    }
                };
                tokio::select! {
                    _ = stop.changed() => return report,
                    () = &mut woken => {}
                    () = heard => {}
                }
                continue;
            }
            let mut leased = leased.into_iter();
            for event in leased.by_ref() {
                if *stop.borrow() {
                    break;
                }
                self.work_leased(durable, &ctx, event, &mut report, observe)
                    .await;
            }
            // Stopping: what this process leased and did not start goes
            // back at once (its lease shortened to the least), not after
            // a whole lease.
            for event in leased {
                let release = Renewal::new(leasing.holder.clone(), MIN_LEASE_MS);
                if let Err(e) = durable.store.renew(&ctx, &event.id, &release).await {
                    tracing::debug!(event = %event.id, error = %e, "an unstarted event was not released: it lapses");
                }
            }
        }
    }

    /// Work one leased event to its end, renewing its lease while a stage
    /// runs, and finish it in the inbox.
    async fn work_leased(
        &self,
        durable: &Durable,
        ctx: &CallerContext,
        leased: InboxEvent,
        report: &mut LoopReport,
        observe: &(dyn Fn(&LoopTrace) + Send + Sync),
    ) {
        let leasing = &durable.leasing;
        let id = leased.id.clone();
        let mut trace = inbox_trace(&leased);
        let run_id = crate::loop_run_id(&trace.role_id, &trace.event.id);
        // Held here (a push of it cannot run it twice in this process).
        let Ok(Some(_claim)) = self.claim(&run_id) else {
            return;
        };
        let worked = if leased.attempts > leasing.max_attempts {
            let why = format!(
                "given up after {} leases: no loop process finished it",
                leasing.max_attempts
            );
            trace.failed = Some(why);
            trace.next = None;
            Ok(trace)
        } else if trace.is_done() {
            // Its stages ran; its holder died before finishing it.
            Ok(trace)
        } else {
            let work = self.process(&run_id, Some(trace));
            tokio::pin!(work);
            let mut beat = tokio::time::interval(Duration::from_millis(
                (leasing.lease_ms / 3).max(MIN_LEASE_MS / 2),
            ));
            beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            beat.tick().await;
            loop {
                tokio::select! {
                    worked = &mut work => break worked,
                    _ = beat.tick() => {
                        let renewal = Renewal::new(leasing.holder.clone(), leasing.lease_ms);
                        if let Err(e) = durable.store.renew(ctx, &id, &renewal).await {
                            tracing::warn!(event = %id, error = %e, "renewing a lease failed");
                        }
                    }
                }
            }
        };
        let trace = match worked {
            Ok(trace) => trace,
            Err(Error::LeaseLost { .. }) => {
                tracing::info!(event = %id, holder = %leasing.holder, "lost the lease of an event: another process works it");
                return;
            }
            Err(e) => {
                // Left to lapse: another lease tries again.
                tracing::warn!(event = %id, error = %e, "an event could not be journaled; its lease will lapse and it is tried again");
                return;
            }
        };
        let note = trace
            .failed
            .clone()
            .or_else(|| {
                trace
                    .stages
                    .iter()
                    .rev()
                    .find(|s| s.stage == Stage::Act)
                    .map(|s| s.outcome.clone())
            })
            .unwrap_or_default();
        let outcome = if trace.failed.is_some() {
            InboxOutcome::failed(leasing.holder.clone(), note)
        } else {
            InboxOutcome::done(leasing.holder.clone(), note)
        }
        .trace(trace.clone());
        match durable.store.finish(ctx, &id, &outcome).await {
            Ok(_) => {
                report.events += 1;
                if leased.attempts > 1 {
                    report.resumed += 1;
                }
                if trace.failed.is_some() {
                    report.failed += 1;
                }
                observe(&trace);
            }
            Err(e) => {
                tracing::info!(event = %id, error = %e, "an event's finish was refused: another process holds it");
            }
        }
    }
}
