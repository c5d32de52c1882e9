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
    Accepted, CallerContext, DecisionEvent, EventSource, InboxEvent, InboxOutcome, InboxStore,
    LeaseRequest, LoopTrace, MIN_LEASE_MS, Renewal, Stage, StoreError, inbox_event_id, inbox_trace,
    push_to_inbox,
};
use tokio::sync::Notify;

use crate::cognitive::{LoopJournal, LoopReport};
use crate::leasing::{Durable, Leasing};
use crate::{CognitiveLoop, Error, RoleRuntime};

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

impl CognitiveLoop {
    /// A loop over `runtime`'s roles working the durable inbox `store`:
    /// pushes go into the inbox (from this process or any other), and
    /// [`run`](Self::run) and [`serve`](Self::serve) lease the events of
    /// these roles as `leasing` says, beside any other loop process that
    /// leases from the same store. Each stage is journaled in the event's
    /// inbox row with a renewal of the lease (a process that lost its lease
    /// has its save refused: [`Error::LeaseLost`]); a killed process's
    /// events are taken over once its leases lapse and resumed at their
    /// first unfinished stage; an action a killed process began is recorded
    /// interrupted, never run twice (`docs/scale.md`).
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
        // The pushes heard when a lease last found fewer events than it
        // asked for: until another is heard, there is nothing new to lease
        // (what lapses is found by the lease after the next wait).
        let mut drained_at: Option<u64> = None;
        loop {
            if *stop.borrow() {
                return report;
            }
            // Listen before looking, so a push in between wakes the wait.
            let woken = durable.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let seen = durable.store.pushes();
            let nothing_new = drained_at.is_some() && drained_at == seen;
            let leased = if nothing_new {
                Vec::new()
            } else {
                match durable.store.lease(&ctx, &request).await {
                    Ok(leased) => leased,
                    Err(e) => {
                        tracing::warn!(role = %role_id, error = %e, "leasing events failed; trying again");
                        Vec::new()
                    }
                }
            };
            if leased.is_empty() {
                // Whatever ends the wait, the next turn leases.
                drained_at = None;
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
            drained_at = if leased.len() < leasing.batch {
                seen
            } else {
                None
            };
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
            // The first beat a third of a lease from now (an interval's
            // first tick at once would wait for the timer's next
            // millisecond before the work starts).
            let every = Duration::from_millis((leasing.lease_ms / 3).max(MIN_LEASE_MS / 2));
            let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
