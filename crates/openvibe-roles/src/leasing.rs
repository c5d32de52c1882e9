//! How a loop process leases events from a durable inbox ([`Leasing`]),
//! and the act stage's rule across a crash: an action journaled as begun
//! and never finished is recorded interrupted, never run again. The loop
//! on the inbox itself is in `leased.rs`.

use std::sync::Arc;
use std::time::Duration;

use openvibe_protocols::{
    ACT_INTERRUPTED, ActOutcome, InboxStore, LoopTrace, MIN_LEASE_MS, Outcome, Stage, StageRecord,
};
use tokio::sync::Notify;

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
