//! The in-process scheduler of openvibe: the embedded default
//! [`ScheduleProvider`].
//!
//! [`InProcessScheduler`] runs cron triggers (five fields, or six with
//! seconds; `CRON_TZ=Europe/Berlin ` in front reads them in that time zone)
//! and interval triggers (`30s`, `5m`, `1h 30m`) on tokio timers, one task
//! per schedule, and hands every firing to whoever runs the activations
//! ([`ScheduleProvider::take_firings`]; `RoleRuntime::serve` in
//! `openvibe-roles`). It keeps nothing on disk: schedules live as long as
//! the process, and a firing missed while the process was down is not run
//! later (a schedule that falls behind skips to its next due time rather
//! than firing a burst).
//!
//! Time comes from a [`Clock`]: the system's by default, or
//! [`TokioClock`], which follows tokio's clock, so tests run hours of
//! schedules in no time under `tokio::time::pause` with nothing sleeping.
//!
//! ```
//! use std::sync::Arc;
//! use openvibe_protocols::{ScheduleProvider, TriggerConfig, TriggerKind};
//! use openvibe_schedule::{InProcessScheduler, TokioClock};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let scheduler = InProcessScheduler::with_clock(Arc::new(TokioClock::starting_at(
//!     "2026-11-25T08:59:00Z".parse().unwrap(),
//! )));
//! let daily = TriggerConfig {
//!     id: "morning".into(),
//!     kind: TriggerKind::Cron,
//!     schedule: Some("CRON_TZ=Europe/London 0 9 * * *".into()),
//!     workflow: "digest".into(),
//!     operator_id: Some("reports".into()),
//!     input: serde_json::Value::Null,
//! };
//! let id = scheduler.schedule("cro", &daily).await.unwrap();
//! let active = scheduler.list_active("cro").await.unwrap();
//! assert_eq!(active[0].next_run, Some("2026-11-25T09:00:00Z".parse().unwrap()));
//!
//! let mut firings = scheduler.take_firings().unwrap();
//! let firing = firings.next().await.unwrap(); // a minute later, in virtual time
//! assert_eq!((firing.schedule_id.as_str(), firing.trigger.workflow.as_str()), (id.as_str(), "digest"));
//! assert_eq!(firing.scheduled_at, "2026-11-25T09:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap());
//! scheduler.cancel(&id).await.unwrap();
//! # }
//! ```

mod plan;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use openvibe_protocols::{
    Firing, FiringSource, ScheduleError, ScheduleInfo, ScheduleProvider, TriggerConfig,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use plan::{MIN_INTERVAL, Plan, split_zone};

/// Firings waiting for the runner; past this, a firing is dropped with a
/// warning rather than piling up behind a runner that does not keep up.
pub const FIRING_QUEUE: usize = 4096;

/// The longest a schedule task sleeps before it looks at the clock again
/// (so a wall clock that jumps is noticed within this).
const MAX_NAP: Duration = Duration::from_secs(60);

/// Where a scheduler reads the time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that follows tokio's: `start` plus the tokio time elapsed since
/// it was made. Under `tokio::time::pause()` (or `start_paused`) time
/// advances only when every task waits, straight to the next timer, so a
/// test drives days of schedules without sleeping and without jitter.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: DateTime<Utc>,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock that reads `start` now.
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        Self {
            start,
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed =
            chrono::Duration::from_std(self.origin.elapsed()).unwrap_or(chrono::Duration::MAX);
        self.start
            .checked_add_signed(elapsed)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// Cron and interval triggers on tokio timers, in this process.
///
/// Cloning gives another handle to the same schedules. Dropping the last
/// handle stops every schedule. Needs a tokio runtime (with the `time`
/// driver) when a trigger is scheduled.
#[derive(Clone)]
pub struct InProcessScheduler {
    shared: Arc<Shared>,
}

struct Shared {
    clock: Arc<dyn Clock>,
    schedules: Mutex<BTreeMap<String, Entry>>,
    sender: mpsc::Sender<Firing>,
    receiver: Mutex<Option<mpsc::Receiver<Firing>>>,
    counter: AtomicU64,
}

struct Entry {
    role_id: String,
    trigger: TriggerConfig,
    next_run: Arc<Mutex<Option<DateTime<Utc>>>>,
    task: JoinHandle<()>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        for entry in lock(&self.schedules).values() {
            entry.task.abort();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data whole: a panic elsewhere while
    // one was held leaves nothing half-done.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Default for InProcessScheduler {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for InProcessScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessScheduler")
            .field("schedules", &lock(&self.shared.schedules).len())
            .finish_non_exhaustive()
    }
}

impl InProcessScheduler {
    /// A scheduler on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// A scheduler on `clock` (a [`TokioClock`] in tests).
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        let (sender, receiver) = mpsc::channel(FIRING_QUEUE);
        Self {
            shared: Arc::new(Shared {
                clock,
                schedules: Mutex::new(BTreeMap::new()),
                sender,
                receiver: Mutex::new(Some(receiver)),
                counter: AtomicU64::new(0),
            }),
        }
    }

    /// How many schedules are active.
    pub fn len(&self) -> usize {
        lock(&self.shared.schedules).len()
    }

    /// Whether no schedule is active.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cancel every schedule.
    pub fn cancel_all(&self) {
        let all = std::mem::take(&mut *lock(&self.shared.schedules));
        for entry in all.into_values() {
            entry.task.abort();
        }
    }
}

#[async_trait]
impl ScheduleProvider for InProcessScheduler {
    async fn schedule(
        &self,
        role_id: &str,
        trigger: &TriggerConfig,
    ) -> Result<String, ScheduleError> {
        let shared = &self.shared;
        let plan = Plan::of(trigger, shared.clock.now())?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            ScheduleError::Backend("the in-process scheduler needs a tokio runtime".into())
        })?;
        let n = shared.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let schedule_id = format!("{role_id}/{}#{n}", trigger.id);
        // The first due time is known before `schedule` returns, so
        // `list_active` shows it at once; the task starts from it.
        let next_run = Arc::new(Mutex::new(plan.next_after(shared.clock.now())));
        let job = Job {
            schedule_id: schedule_id.clone(),
            role_id: role_id.to_owned(),
            trigger: trigger.clone(),
            plan,
            clock: shared.clock.clone(),
            sender: shared.sender.clone(),
            next_run: next_run.clone(),
        };
        let mut schedules = lock(&shared.schedules);
        let task = runtime.spawn(job.run());
        schedules.insert(
            schedule_id.clone(),
            Entry {
                role_id: role_id.to_owned(),
                trigger: trigger.clone(),
                next_run,
                task,
            },
        );
        tracing::debug!(schedule = %schedule_id, trigger = %trigger.id, "scheduled");
        Ok(schedule_id)
    }

    async fn cancel(&self, schedule_id: &str) -> Result<(), ScheduleError> {
        let entry = lock(&self.shared.schedules)
            .remove(schedule_id)
            .ok_or_else(|| ScheduleError::UnknownSchedule(schedule_id.to_owned()))?;
        entry.task.abort();
        tracing::debug!(schedule = %schedule_id, "cancelled");
        Ok(())
    }

    async fn list_active(&self, role_id: &str) -> Result<Vec<ScheduleInfo>, ScheduleError> {
        Ok(lock(&self.shared.schedules)
            .iter()
            .filter(|(_, e)| e.role_id == role_id)
            .map(|(id, e)| ScheduleInfo {
                schedule_id: id.clone(),
                role_id: e.role_id.clone(),
                trigger: e.trigger.clone(),
                next_run: *lock(&e.next_run),
            })
            .collect())
    }

    fn take_firings(&self) -> Option<Box<dyn FiringSource>> {
        lock(&self.shared.receiver)
            .take()
            .map(|receiver| Box::new(Firings(receiver)) as Box<dyn FiringSource>)
    }
}

/// The firings of an [`InProcessScheduler`].
struct Firings(mpsc::Receiver<Firing>);

#[async_trait]
impl FiringSource for Firings {
    async fn next(&mut self) -> Option<Firing> {
        self.0.recv().await
    }
}

/// One schedule's task: wait until due, fire, repeat.
struct Job {
    schedule_id: String,
    role_id: String,
    trigger: TriggerConfig,
    plan: Plan,
    clock: Arc<dyn Clock>,
    sender: mpsc::Sender<Firing>,
    next_run: Arc<Mutex<Option<DateTime<Utc>>>>,
}

impl Job {
    /// Fire from the due time `schedule` put in `next_run`, then every
    /// next one, keeping `next_run` current.
    async fn run(self) {
        let mut next = *lock(&self.next_run);
        while let Some(due) = next {
            loop {
                let now = self.clock.now();
                let Ok(wait) = (due - now).to_std() else {
                    break; // due (the difference is not positive)
                };
                if wait.is_zero() {
                    break;
                }
                tokio::time::sleep(wait.min(MAX_NAP)).await;
            }
            let fired_at = self.clock.now();
            let firing = Firing::new(
                self.schedule_id.clone(),
                self.role_id.clone(),
                self.trigger.clone(),
                due,
                fired_at,
            );
            match self.sender.try_send(firing) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => tracing::warn!(
                    schedule = %self.schedule_id,
                    due = %due,
                    "firing dropped: {FIRING_QUEUE} firings are waiting for the runner"
                ),
                // Nobody will run it: the runner is gone (and with it,
                // everything else this task could do).
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
            // Strictly after the due time, and never behind the clock: a
            // schedule that fell behind skips what it missed.
            next = self.plan.next_after(due.max(fired_at));
            *lock(&self.next_run) = next;
        }
        tracing::debug!(schedule = %self.schedule_id, "no further due times");
    }
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
