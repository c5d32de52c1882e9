//! Running a runtime's schedules in this process: [`RoleRuntime::serve`].

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use openvibe_memory::DEFAULT_PUBLISH_CONFIDENCE;
use openvibe_protocols::{Firing, State, TriggerConfig};
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use crate::reflection::REFLECTION_WORKFLOW;
use crate::{Error, RoleRuntime};

/// What one firing did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Outcome {
    /// The workflow ran to its end; its final state.
    Completed(State),
    /// The role reflected and published.
    Reflected {
        /// Episodes shown to the model.
        episodes: usize,
        /// New insights.
        created: usize,
        /// Existing insights strengthened.
        strengthened: usize,
        /// Facts published to the workspace.
        published: usize,
        /// Beliefs proposed by the learn step.
        beliefs: usize,
    },
    /// A prioritization ran: the role's priorities of the day, stored.
    Prioritized(openvibe_protocols::Priorities),
    /// The schedule's previous activation was still running, so this one
    /// was not started.
    Skipped,
    /// The activation failed.
    Failed(Error),
}

/// What a reflection did: the counts of [`Outcome::Reflected`], as a value
/// that travels (a Temporal activity returns it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReflectionSummary {
    /// Episodes shown to the model.
    pub episodes: usize,
    /// New insights.
    pub created: usize,
    /// Existing insights strengthened.
    pub strengthened: usize,
    /// Facts published to the workspace.
    pub published: usize,
    /// Beliefs proposed by the learn step (when the reflection learns).
    #[serde(default)]
    pub beliefs: usize,
}

impl From<ReflectionSummary> for Outcome {
    fn from(s: ReflectionSummary) -> Self {
        Outcome::Reflected {
            episodes: s.episodes,
            created: s.created,
            strengthened: s.strengthened,
            published: s.published,
            beliefs: s.beliefs,
        }
    }
}

/// What a trigger starts: its operator, and the state its workflow starts
/// from (its `input`, an object, or an empty state when it has none). A
/// trigger that names no operator, or whose input is not an object, is
/// [`Error::Firing`]. The in-process runner and the Temporal worker both
/// read a firing through this.
pub fn trigger_target(trigger: &TriggerConfig) -> Result<(&str, State), Error> {
    let refuse = |message: String| Error::Firing {
        trigger: trigger.id.clone(),
        message,
    };
    let operator = trigger
        .operator_id
        .as_deref()
        .ok_or_else(|| refuse("it names no operator".into()))?;
    let state = match &trigger.input {
        serde_json::Value::Null => State::new(),
        value => State::from_value(value.clone())
            .map_err(|e| refuse(format!("its input is not a state: {e}")))?,
    };
    Ok((operator, state))
}

/// A firing and what came of it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Fired {
    /// What fired.
    pub firing: Firing,
    /// What came of it.
    pub outcome: Outcome,
    /// How long the activation took (zero when skipped).
    pub took: Duration,
    /// Whether this run was left unfinished by an earlier process and
    /// resumed from its checkpoint.
    pub resumed: bool,
}

/// What [`RoleRuntime::serve`] did, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeReport {
    /// Schedules registered.
    pub schedules: usize,
    /// Firings received.
    pub fired: u64,
    /// Activations (and reflections) that completed.
    pub completed: u64,
    /// Activations that failed.
    pub failed: u64,
    /// Firings skipped because their schedule's previous run was still going.
    pub skipped: u64,
    /// Runs an earlier process left unfinished, resumed from their checkpoints.
    pub resumed: u64,
    /// Approved proposals whose action ran (executed or failed).
    pub proposals_run: u64,
    /// Proposals an earlier process claimed and never finished, marked failed.
    pub proposals_interrupted: u64,
    /// Pending proposals past their deadline, recorded expired.
    pub proposals_expired: u64,
    /// Looks for approved proposals that failed (the store was unreachable).
    pub proposal_errors: u64,
}

impl ServeReport {
    /// Count what one role's look for approved proposals did.
    fn count_proposals(&mut self, done: Result<crate::proposals::Resumed, Error>) {
        match done {
            Ok(done) => {
                self.proposals_run += done.ran.len() as u64;
                self.proposals_interrupted += done.interrupted.len() as u64;
                self.proposals_expired += done.expired;
            }
            Err(e) => {
                self.proposal_errors += 1;
                tracing::warn!(error = %e, "looking for approved proposals failed");
            }
        }
    }

    fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Completed(_) | Outcome::Reflected { .. } | Outcome::Prioritized(_) => {
                self.completed += 1;
            }
            Outcome::Failed(_) => self.failed += 1,
            Outcome::Skipped => self.skipped += 1,
        }
    }
}

impl RoleRuntime {
    /// Run the schedules in this process until `stop` resolves: register
    /// every timed trigger (as [`start`](Self::start)), then run each
    /// firing's activation as it comes, several at once, and tell `observe`
    /// how each ended. A schedule whose previous activation is still running
    /// skips the firing (reported as [`Outcome::Skipped`]). A failed
    /// activation is reported and the schedules go on. When roles file
    /// proposals, it also runs those a person approved, once each, at
    /// start and every [poll](Self::with_proposal_poll)
    /// ([`Role::resume_proposals`](crate::Role::resume_proposals)), each
    /// role's beside the firings (at most one look per role at a time), so
    /// a long action delays no firing.
    ///
    /// Stopping is graceful: no new activation starts, the schedules this
    /// call registered are cancelled, and the running activations finish
    /// (and are observed) before it returns.
    ///
    /// Needs a scheduler that runs firings in this process
    /// ([`ScheduleProvider::take_firings`](openvibe_protocols::ScheduleProvider::take_firings),
    /// e.g. `openvibe_schedule::InProcessScheduler`), once.
    pub async fn serve<S, O>(&self, stop: S, mut observe: O) -> Result<ServeReport, Error>
    where
        S: Future<Output = ()>,
        O: FnMut(&Fired),
    {
        let scheduler = self.scheduler.as_ref().ok_or(Error::NoScheduler)?;
        // Read before registering anything, so a checkpointer that fails
        // leaves no schedule behind.
        let unfinished = self.unfinished_firings().await?;
        let ids = self.start().await?;
        let Some(mut firings) = scheduler.take_firings() else {
            for id in &ids {
                let _ = scheduler.cancel(id).await;
            }
            return Err(Error::NoFirings);
        };
        let mut report = ServeReport {
            schedules: ids.len(),
            ..ServeReport::default()
        };
        let mut running = FuturesUnordered::new();
        let mut busy: HashSet<String> = HashSet::new();
        for firing in unfinished {
            report.resumed += 1;
            busy.insert(firing.schedule_id.clone());
            running.push(self.run_firing(firing, true));
        }
        tokio::pin!(stop);
        let watch_proposals = self.has_proposals();
        let mut resuming = FuturesUnordered::new();
        let mut resuming_roles: HashSet<String> = HashSet::new();
        let mut proposal_poll = tokio::time::interval(self.proposal_poll);
        proposal_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = &mut stop => break,
                _ = proposal_poll.tick(), if watch_proposals => {
                    // Each role's approved actions run beside the firings
                    // (one look per role at a time): a long action never
                    // holds up this loop.
                    for role in self.roles_with_proposals() {
                        if resuming_roles.insert(role.role_id().to_owned()) {
                            let started = self.started;
                            resuming.push(async move {
                                (role.role_id().to_owned(), role.resume_proposals(started).await)
                            });
                        }
                    }
                }
                Some((role_id, done)) = resuming.next(), if !resuming.is_empty() => {
                    resuming_roles.remove(&role_id);
                    report.count_proposals(done);
                }
                firing = firings.next() => {
                    let Some(firing) = firing else { break };
                    report.fired += 1;
                    if busy.contains(&firing.schedule_id) {
                        tracing::info!(schedule = %firing.schedule_id, "firing skipped: the previous run is still going");
                        report.count(&Outcome::Skipped);
                        observe(&Fired {
                            firing,
                            outcome: Outcome::Skipped,
                            took: Duration::ZERO,
                            resumed: false,
                        });
                    } else {
                        busy.insert(firing.schedule_id.clone());
                        running.push(self.run_firing(firing, false));
                    }
                }
                Some(fired) = running.next(), if !running.is_empty() => {
                    busy.remove(&fired.firing.schedule_id);
                    report.count(&fired.outcome);
                    observe(&fired);
                }
            }
        }
        for id in &ids {
            // A schedule that is already gone is what stopping wants.
            let _ = scheduler.cancel(id).await;
        }
        while let Some(fired) = running.next().await {
            report.count(&fired.outcome);
            observe(&fired);
        }
        // Actions already claimed finish too (a claimed one cut off would
        // be marked interrupted by the next process).
        while let Some((_, done)) = resuming.next().await {
            report.count_proposals(done);
        }
        Ok(report)
    }

    /// The firings whose runs an earlier process left unfinished (with a
    /// checkpointer), for this runtime's roles.
    async fn unfinished_firings(&self) -> Result<Vec<Firing>, Error> {
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(Vec::new());
        };
        let unfinished = checkpointer.unfinished().await.map_err(|source| {
            Error::Operator(openvibe_operators::Error::Checkpoint {
                run_id: "(unfinished runs)".into(),
                source,
            })
        })?;
        Ok(unfinished
            .iter()
            .filter_map(|cp| firing_of(&cp.origin))
            .filter(|f| self.get_role(&f.role_id).is_ok())
            .collect())
    }

    /// Run one firing: its workflow, or the role's reflection.
    async fn run_firing(&self, firing: Firing, resumed: bool) -> Fired {
        let lag_ms = (firing.fired_at - firing.scheduled_at).num_milliseconds();
        let span = tracing::info_span!(
            "firing",
            schedule = %firing.schedule_id,
            role = %firing.role_id,
            trigger = %firing.trigger.id,
            workflow = %firing.trigger.workflow,
            lag_ms,
            resumed,
        );
        let started = Instant::now();
        let outcome = async {
            let result = if firing.trigger.workflow == REFLECTION_WORKFLOW {
                self.reflect_role(&firing).await
            } else if firing.trigger.workflow == crate::PRIORITIZE_WORKFLOW {
                let prioritized = self
                    .prioritize_role(&firing.role_id, firing.scheduled_at.date_naive())
                    .await;
                self.check_pace(&firing.role_id, firing.scheduled_at).await;
                prioritized.map(Outcome::Prioritized)
            } else {
                self.activate_firing(&firing).await.map(Outcome::Completed)
            };
            match result {
                Ok(outcome) => outcome,
                Err(e) => {
                    tracing::warn!(error = %e, "scheduled activation failed");
                    Outcome::Failed(e)
                }
            }
        }
        .instrument(span)
        .await;
        Fired {
            firing,
            outcome,
            took: started.elapsed(),
            resumed,
        }
    }

    async fn activate_firing(&self, firing: &Firing) -> Result<State, Error> {
        let trigger = &firing.trigger;
        let (operator, input) = trigger_target(trigger)?;
        let run_id = run_id_of(firing);
        let run = Some((run_id.as_str(), origin_of(firing)));
        self.activate_run(&firing.role_id, operator, &trigger.workflow, input, run)
            .await
    }

    async fn reflect_role(&self, firing: &Firing) -> Result<Outcome, Error> {
        self.reflect_and_publish(&firing.role_id, &firing.trigger)
            .await
            .map(Outcome::from)
    }

    /// The daily pace check of `role_id`'s key results at `at`
    /// ([`GoalSystem::check_pace`](crate::GoalSystem::check_pace), default
    /// margin and period), when it has goals and a proposal store; a
    /// failure is logged (the day's priorities stand).
    pub async fn check_pace(&self, role_id: &str, at: chrono::DateTime<chrono::Utc>) {
        let Ok(role) = self.get_role(role_id) else {
            return;
        };
        let (Ok(goals), Some(_)) = (role.goals(), role.proposals()) else {
            return;
        };
        match goals
            .check_pace(at, crate::DEFAULT_PACE_MARGIN, crate::PACE_PERIOD_DAYS)
            .await
        {
            Ok(behind) => {
                for b in behind {
                    tracing::info!(role = %role_id, goal = %b.goal_id, key_result = %b.key_result_id, proposal = %b.proposal.id, "key result behind its pace");
                }
            }
            Err(e) => tracing::warn!(role = %role_id, error = %e, "the pace check failed"),
        }
    }

    /// What a firing of a [prioritization](Self::with_prioritization)
    /// trigger does for `role_id`: ask the model for the role's top
    /// priorities of `day` and store them
    /// ([`GoalSystem::prioritize`](crate::GoalSystem::prioritize)).
    pub async fn prioritize_role(
        &self,
        role_id: &str,
        day: chrono::NaiveDate,
    ) -> Result<openvibe_protocols::Priorities, Error> {
        self.get_role(role_id)?.goals()?.prioritize("", day).await
    }

    /// What a firing of a [reflection](Self::with_reflection) trigger does
    /// for `role_id`: reflect on its recent episodes through the role's LLM
    /// (soul injected, calls in its raw log), then publish the insights at
    /// least as confident as the trigger's `min_confidence` input (default
    /// [`DEFAULT_PUBLISH_CONFIDENCE`]) to the workspace. A new insight is
    /// compared with the role's by [`Role::subjects`](crate::Role::subjects);
    /// with the learn input's `check_with_model`, the model says whether it
    /// only restates one. It reads only the episodes after the newest the
    /// role's previous reflection in this process saw: it never re-reads
    /// what it has seen. Fails for a role without agent memory, and while
    /// another reflection of the role runs (a role learns once at a time).
    pub async fn reflect_and_publish(
        &self,
        role_id: &str,
        trigger: &TriggerConfig,
    ) -> Result<ReflectionSummary, Error> {
        let role = self.get_role(role_id)?;
        let Some(_learning) = role.experience.begin() else {
            return Err(Error::Firing {
                trigger: trigger.id.clone(),
                message: format!("a reflection of role `{role_id}` runs already"),
            });
        };
        self.reflect_and_publish_now(role, trigger).await
    }

    /// [`RoleRuntime::reflect_and_publish`] for a caller that began the
    /// role's reflection ([`Experience::begin`](crate::experience::Experience)).
    pub(crate) async fn reflect_and_publish_now(
        &self,
        role: &crate::Role,
        trigger: &TriggerConfig,
    ) -> Result<ReflectionSummary, Error> {
        let role_id = role.role_id();
        let Some(pyramid) = role.pyramid() else {
            return Err(Error::Firing {
                trigger: trigger.id.clone(),
                message: format!("role `{role_id}` has no agent memory to reflect on"),
            });
        };
        let min_confidence = trigger
            .input
            .get("min_confidence")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(DEFAULT_PUBLISH_CONFIDENCE);
        let learning = trigger.input.get("learn").map(crate::Learning::from_value);
        // Same subject by the role's judge (by meaning with an embedder);
        // the model is asked how insights relate when learning asks it
        // about beliefs.
        let options = openvibe_memory::ReflectOptions {
            subjects: role.subjects(),
            check_with_model: learning.as_ref().is_some_and(|l| l.check_with_model),
            since: role.experience.reflected_until(),
            ..openvibe_memory::ReflectOptions::default()
        };
        let done = pyramid
            .distill_with(role.llm()?.as_ref(), &options, min_confidence)
            .await?;
        role.experience.reflected(done.reflection.newest);
        let report = done.reflection;
        let beliefs = match &learning {
            Some(learning) => role.learn(learning).await?.proposed.len(),
            None => 0,
        };
        Ok(ReflectionSummary {
            episodes: report.episodes_considered,
            created: report.created.len(),
            strengthened: report.strengthened.len(),
            published: done.published.len(),
            beliefs,
        })
    }
}

/// The run id of a firing's run: the same in every process, so a restarted
/// one finds the checkpoint.
fn run_id_of(firing: &Firing) -> String {
    format!(
        "{}/{}@{}",
        firing.role_id,
        firing.trigger.id,
        firing
            .scheduled_at
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    )
}

/// What a firing's checkpoints record, to resume it after a restart.
fn origin_of(firing: &Firing) -> serde_json::Value {
    serde_json::json!({
        "kind": "firing",
        "schedule_id": firing.schedule_id,
        "role_id": firing.role_id,
        "trigger": firing.trigger,
        "scheduled_at": firing.scheduled_at,
    })
}

/// The firing an [`origin_of`] describes (none for other origins).
fn firing_of(origin: &serde_json::Value) -> Option<Firing> {
    if origin.get("kind")?.as_str()? != "firing" {
        return None;
    }
    let trigger: TriggerConfig = serde_json::from_value(origin.get("trigger")?.clone()).ok()?;
    let scheduled_at = serde_json::from_value(origin.get("scheduled_at")?.clone()).ok()?;
    Some(Firing::new(
        origin.get("schedule_id")?.as_str()?,
        origin.get("role_id")?.as_str()?,
        trigger,
        scheduled_at,
        chrono::Utc::now(),
    ))
}
