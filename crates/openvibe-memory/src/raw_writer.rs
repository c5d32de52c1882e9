//! [`RawLogWriter`]: appends raw calls (L1) to a [`RawLogStore`] in
//! batches, from a background task, so that logging a call costs the
//! caller one channel send and no store round trip.
//!
//! **What is lost on a crash.** A call is in the writer's queue or buffer
//! until its batch is appended: at most [`RawLogConfig::batch_size`] calls
//! and [`RawLogConfig::flush_interval`] after it was logged. A process
//! that dies in between loses those calls; nothing else. A graceful end
//! loses nothing: [`RawLogWriter::flush`] appends everything logged before
//! it (the role runtime flushes after every activation), and dropping the
//! last handle makes the task append what is left before it exits (when
//! the tokio runtime is still running).
//!
//! **When the store fails.** A transient error is retried (three times,
//! with backoff); a batch refused for bad input is appended call by call,
//! so only the bad calls are dropped; what is dropped is counted
//! ([`RawLogStats::dropped`]) and logged as an error. A full queue
//! ([`RawLogConfig::queue`]) makes `log` wait (backpressure): calls are
//! never dropped for lack of room. A call logged after the writer's
//! runtime shut down is counted as dropped.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use openvibe_protocols::{CallerContext, RawCall, RawLogStore, RawRetention, StoreError};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

/// A hook that redacts a raw call before it is stored (e.g. masks e-mail
/// addresses in the request and the response). Runs on the writer's task,
/// not on the call path.
pub type Redactor = Arc<dyn Fn(&mut RawCall) + Send + Sync>;

/// How a [`RawLogWriter`] batches, retains and redacts.
#[derive(Clone)]
pub struct RawLogConfig {
    /// Calls appended in one store call at most (default 256).
    pub batch_size: usize,
    /// How long a logged call waits at most before its batch is appended
    /// (default 200 ms).
    pub flush_interval: Duration,
    /// Calls the queue holds before `log` waits (default 10,000).
    pub queue: usize,
    /// What the writer prunes the agent's log to (default: keep all).
    pub retention: RawRetention,
    /// How often the retention is applied (default every minute).
    pub prune_interval: Duration,
    /// Redaction applied to every call before it is stored.
    pub redact: Option<Redactor>,
    /// `false`: calls are not logged at all.
    pub enabled: bool,
}

impl Default for RawLogConfig {
    fn default() -> Self {
        Self {
            batch_size: 256,
            flush_interval: Duration::from_millis(200),
            queue: 10_000,
            retention: RawRetention::default(),
            prune_interval: Duration::from_secs(60),
            redact: None,
            enabled: true,
        }
    }
}

impl RawLogConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append at most `n` calls per store call (at least 1).
    #[must_use]
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// Append a logged call within `interval`.
    #[must_use]
    pub fn flush_interval(mut self, interval: Duration) -> Self {
        self.flush_interval = interval;
        self
    }

    /// Keep the agent's log within `retention`.
    #[must_use]
    pub fn retention(mut self, retention: RawRetention) -> Self {
        self.retention = retention;
        self
    }

    /// Apply the retention every `interval`.
    #[must_use]
    pub fn prune_interval(mut self, interval: Duration) -> Self {
        self.prune_interval = interval;
        self
    }

    /// Redact every call with `redact` before it is stored.
    #[must_use]
    pub fn redact(mut self, redact: impl Fn(&mut RawCall) + Send + Sync + 'static) -> Self {
        self.redact = Some(Arc::new(redact));
        self
    }

    /// Do not log calls.
    #[must_use]
    pub fn disabled(mut self) -> Self {
        self.enabled = false;
        self
    }
}

impl fmt::Debug for RawLogConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawLogConfig")
            .field("batch_size", &self.batch_size)
            .field("flush_interval", &self.flush_interval)
            .field("queue", &self.queue)
            .field("retention", &self.retention)
            .field("prune_interval", &self.prune_interval)
            .field("redact", &self.redact.is_some())
            .field("enabled", &self.enabled)
            .finish()
    }
}

/// What a writer has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawLogStats {
    /// Calls handed to [`RawLogWriter::log`].
    pub logged: u64,
    /// Calls the store accepted.
    pub appended: u64,
    /// Calls the store refused or could not take (see the module docs).
    pub dropped: u64,
    /// Calls pruned by the retention.
    pub pruned: u64,
}

#[derive(Default)]
struct Counters {
    logged: AtomicU64,
    appended: AtomicU64,
    dropped: AtomicU64,
    pruned: AtomicU64,
}

/// What the callers hand the task. A shared queue rather than a channel:
/// a call is pushed under an uncontended lock, and the task is woken only
/// when a batch starts (to start its timer), fills, or is flushed, not
/// once per call (a cross-thread wake costs more than the rest of `log`).
#[derive(Default)]
struct Queue {
    calls: Vec<RawCall>,
    /// When the oldest queued call was logged.
    since: Option<Instant>,
    /// Flushes waiting for everything queued before them.
    flushes: Vec<oneshot::Sender<()>>,
    /// Every writer handle is gone: append what is left and stop.
    closed: bool,
    /// The task is gone (its runtime shut down): nothing will append.
    dead: bool,
}

#[derive(Default)]
struct Channel {
    queue: Mutex<Queue>,
    /// Wakes the task.
    work: Notify,
    /// Wakes callers waiting for room.
    room: Notify,
}

impl Channel {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding this lock leaves a consistent queue.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Shared {
    store: Arc<dyn RawLogStore>,
    ctx: CallerContext,
    agent_id: String,
    config: RawLogConfig,
    counters: Arc<Counters>,
    channel: Arc<Channel>,
    started: OnceLock<()>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.channel.lock().closed = true;
        self.channel.work.notify_one();
    }
}

/// Appends one agent's raw calls in the background (see the module docs).
/// Cheap to clone; the task starts with the first call and ends when the
/// last handle is dropped.
#[derive(Clone)]
pub struct RawLogWriter {
    shared: Arc<Shared>,
}

impl fmt::Debug for RawLogWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawLogWriter")
            .field("agent_id", &self.shared.agent_id)
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl RawLogWriter {
    /// A writer appending `agent_id`'s calls to `store` as `ctx`.
    pub fn new(
        store: Arc<dyn RawLogStore>,
        ctx: CallerContext,
        agent_id: impl Into<String>,
        config: RawLogConfig,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                ctx,
                agent_id: agent_id.into(),
                config,
                counters: Arc::default(),
                channel: Arc::default(),
                started: OnceLock::new(),
            }),
        }
    }

    /// The store calls are appended to.
    pub fn store(&self) -> &Arc<dyn RawLogStore> {
        &self.shared.store
    }

    /// The configuration.
    pub fn config(&self) -> &RawLogConfig {
        &self.shared.config
    }

    /// Log `call`: its agent and (when empty) namespace are the writer's.
    /// Returns at once unless the queue is full. Must be called within a
    /// tokio runtime (the writer's task is spawned on the first call).
    pub async fn log(&self, mut call: RawCall) {
        let shared = &self.shared;
        if !shared.config.enabled {
            return;
        }
        if call.agent_id != shared.agent_id {
            call.agent_id.clone_from(&shared.agent_id);
        }
        if call.meta.namespace.is_empty() {
            call.meta.namespace.clone_from(&shared.agent_id);
        }
        shared.counters.logged.fetch_add(1, Ordering::Relaxed);
        self.start();
        let channel = &shared.channel;
        let mut pending = Some(call);
        loop {
            match self.try_push(&mut pending) {
                Push::Queued { wake } => {
                    if wake {
                        channel.work.notify_one();
                    }
                    return;
                }
                Push::Dead => {
                    shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Push::Full => {
                    // Wait for the task to take a batch: register, then look
                    // again, so a wake-up between the two is not missed.
                    let room = channel.room.notified();
                    tokio::pin!(room);
                    room.as_mut().enable();
                    if matches!(self.try_push(&mut pending), Push::Full) {
                        room.await;
                    } else if pending.is_none() {
                        channel.work.notify_one();
                        return;
                    }
                }
            }
        }
    }

    /// Queue `pending` (taken when queued) unless the queue is full or dead.
    fn try_push(&self, pending: &mut Option<RawCall>) -> Push {
        let mut queue = self.shared.channel.lock();
        if queue.dead {
            return Push::Dead;
        }
        if queue.calls.len() >= self.shared.config.queue.max(1) {
            return Push::Full;
        }
        let Some(call) = pending.take() else {
            return Push::Queued { wake: false };
        };
        queue.calls.push(call);
        let n = queue.calls.len();
        if n == 1 {
            queue.since = Some(Instant::now());
        }
        Push::Queued {
            wake: n == 1 || n >= self.shared.config.batch_size,
        }
    }

    /// Wait until every call logged before this returns has been appended
    /// (or dropped, see [`RawLogStats`]).
    pub async fn flush(&self) {
        if !self.shared.config.enabled || self.shared.started.get().is_none() {
            return;
        }
        let (ack, done) = oneshot::channel();
        {
            let mut queue = self.shared.channel.lock();
            if queue.dead {
                return;
            }
            queue.flushes.push(ack);
        }
        self.shared.channel.work.notify_one();
        let _ = done.await;
    }

    /// What the writer has done so far.
    pub fn stats(&self) -> RawLogStats {
        let c = &self.shared.counters;
        RawLogStats {
            logged: c.logged.load(Ordering::Relaxed),
            appended: c.appended.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            pruned: c.pruned.load(Ordering::Relaxed),
        }
    }

    /// Spawn the task, once.
    fn start(&self) {
        let shared = &self.shared;
        shared.started.get_or_init(|| {
            let task = Task {
                store: shared.store.clone(),
                ctx: shared.ctx.clone(),
                agent_id: shared.agent_id.clone(),
                config: shared.config.clone(),
                counters: shared.counters.clone(),
                channel: shared.channel.clone(),
            };
            tokio::spawn(task.run());
        });
    }
}

/// Marks the queue dead when the task ends or is dropped with its runtime,
/// so that callers stop waiting for it.
struct Alive(Arc<Channel>);

impl Drop for Alive {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        queue.dead = true;
        for ack in queue.flushes.drain(..) {
            let _ = ack.send(());
        }
        drop(queue);
        self.0.room.notify_waiters();
    }
}

/// What [`RawLogWriter::try_push`] did.
enum Push {
    /// Queued; `wake`: the task must look (a batch started or filled).
    Queued { wake: bool },
    /// The queue is full.
    Full,
    /// The task is gone.
    Dead,
}

/// What the task took from the queue in one go.
struct Taken {
    calls: Vec<RawCall>,
    flushes: Vec<oneshot::Sender<()>>,
    closed: bool,
}

/// The background task: everything but the writer handles, so that
/// dropping the last handle closes the queue and ends it.
struct Task {
    store: Arc<dyn RawLogStore>,
    ctx: CallerContext,
    agent_id: String,
    config: RawLogConfig,
    counters: Arc<Counters>,
    channel: Arc<Channel>,
}

impl Task {
    async fn run(self) {
        let _alive = Alive(self.channel.clone());
        let mut next_prune = Instant::now() + self.config.prune_interval;
        loop {
            let taken = self.next().await;
            self.channel.room.notify_waiters();
            for chunk in taken.calls.chunks(self.config.batch_size.max(1)) {
                self.append(chunk.to_vec()).await;
            }
            if !self.config.retention.keeps_all() && Instant::now() >= next_prune {
                self.prune().await;
                next_prune = Instant::now() + self.config.prune_interval;
            }
            for ack in taken.flushes {
                let _ = ack.send(());
            }
            if taken.closed {
                return;
            }
        }
    }

    /// Wait until a batch is due (full, old enough, flushed or closed) and take it.
    async fn next(&self) -> Taken {
        loop {
            let work = self.channel.work.notified();
            tokio::pin!(work);
            work.as_mut().enable();
            let deadline = {
                let mut queue = self.channel.lock();
                let oldest = queue.since;
                let due = queue.calls.len() >= self.config.batch_size
                    || !queue.flushes.is_empty()
                    || queue.closed
                    || oldest.is_some_and(|t| t + self.config.flush_interval <= Instant::now());
                if due {
                    queue.since = None;
                    return Taken {
                        calls: std::mem::take(&mut queue.calls),
                        flushes: std::mem::take(&mut queue.flushes),
                        closed: queue.closed,
                    };
                }
                oldest.map(|t| t + self.config.flush_interval)
            };
            match deadline {
                Some(at) => {
                    let _ = tokio::time::timeout_at(at, work).await;
                }
                None => work.await,
            }
        }
    }

    /// Append `batch` (see the module docs for failures).
    async fn append(&self, mut batch: Vec<RawCall>) {
        if batch.is_empty() {
            return;
        }
        if let Some(redact) = &self.config.redact {
            batch.iter_mut().for_each(|call| redact(call));
        }
        match self.append_retrying(batch.clone()).await {
            Ok(n) => self.count(n, 0),
            Err(StoreError::InvalidInput { .. }) if batch.len() > 1 => {
                // One bad call refuses the batch: append them one by one.
                for call in batch {
                    match self.append_retrying(vec![call]).await {
                        Ok(n) => self.count(n, 0),
                        Err(e) => self.drop_calls(1, &e),
                    }
                }
            }
            Err(e) => self.drop_calls(batch.len(), &e),
        }
    }
    async fn append_retrying(&self, batch: Vec<RawCall>) -> Result<usize, StoreError> {
        let mut delay = Duration::from_millis(50);
        let mut attempt = 0;
        loop {
            match self.store.append(&self.ctx, batch.clone()).await {
                Ok(stored) => return Ok(stored.len()),
                Err(e) if e.is_transient() && attempt < 3 => {
                    attempt += 1;
                    tracing::warn!(agent = %self.agent_id, error = %e, attempt, "raw log append failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn count(&self, appended: usize, dropped: usize) {
        let c = &self.counters;
        c.appended.fetch_add(
            u64::try_from(appended).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        c.dropped.fetch_add(
            u64::try_from(dropped).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    fn drop_calls(&self, n: usize, error: &StoreError) {
        tracing::error!(agent = %self.agent_id, calls = n, %error, "raw log calls dropped");
        self.count(0, n);
    }

    async fn prune(&self) {
        match self
            .store
            .prune(&self.ctx, &self.agent_id, &self.config.retention)
            .await
        {
            Ok(n) => {
                self.counters.pruned.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(agent = %self.agent_id, error = %e, "raw log prune failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_in_memory::InMemoryRawLog;
    use openvibe_protocols::{LlmRequest, LlmResponse, RawCallQuery};

    fn call(i: usize) -> RawCall {
        RawCall::new(
            "cro",
            chrono::Utc::now(),
            10,
            LlmRequest::new("sonnet", format!("question {i}")),
            Ok(LlmResponse::text(format!("answer {i}"))),
        )
    }

    fn writer(config: RawLogConfig) -> (RawLogWriter, Arc<InMemoryRawLog>) {
        let store = Arc::new(InMemoryRawLog::new());
        let ctx = CallerContext::agent("cro");
        (RawLogWriter::new(store.clone(), ctx, "cro", config), store)
    }

    async fn stored(store: &InMemoryRawLog) -> usize {
        store
            .query(
                &CallerContext::agent("cro"),
                &RawCallQuery::new().limit(1000),
            )
            .await
            .unwrap()
            .items
            .len()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_makes_callers_wait_and_loses_nothing() {
        let (w, store) = writer(RawLogConfig {
            queue: 3,
            ..RawLogConfig::new().batch_size(2)
        });
        let mut tasks = Vec::new();
        for t in 0..4 {
            let w = w.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..50 {
                    w.log(call(t * 100 + i)).await;
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        w.flush().await;
        let stats = w.stats();
        assert_eq!((stats.logged, stats.appended, stats.dropped), (200, 200, 0));
        assert_eq!(stored(&store).await, 200);
    }

    #[tokio::test]
    async fn a_batch_is_appended_when_its_interval_ends_without_a_flush() {
        let (w, store) = writer(RawLogConfig::new().flush_interval(Duration::from_millis(20)));
        w.log(call(1)).await;
        for _ in 0..100 {
            if w.stats().appended == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(w.stats().appended, 1);
        assert_eq!(stored(&store).await, 1);
    }

    #[tokio::test]
    async fn a_bad_call_is_dropped_alone() {
        let (w, store) = writer(RawLogConfig::new());
        w.log(call(1)).await;
        let mut bad = call(2);
        bad.model = "a\0b".into();
        w.log(bad).await;
        w.log(call(3)).await;
        w.flush().await;
        let stats = w.stats();
        assert_eq!((stats.appended, stats.dropped), (2, 1));
        assert_eq!(stored(&store).await, 2);
    }

    #[test]
    fn calls_after_the_runtime_is_gone_are_counted_as_dropped() {
        let (w, store) = writer(RawLogConfig::new());
        let first = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        first.block_on(async {
            w.log(call(1)).await;
            w.flush().await;
        });
        drop(first); // the writer's task goes with its runtime
        let second = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        second.block_on(async {
            w.log(call(2)).await;
            w.flush().await; // returns: nothing will append
            assert_eq!(stored(&store).await, 1);
        });
        let stats = w.stats();
        assert_eq!((stats.logged, stats.appended, stats.dropped), (2, 1, 1));
    }

    #[tokio::test]
    async fn dropping_the_last_handle_appends_what_is_left() {
        let (w, store) = writer(RawLogConfig::new().flush_interval(Duration::from_secs(3600)));
        w.log(call(1)).await;
        drop(w);
        for _ in 0..100 {
            if stored(&store).await == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the queued call was not appended after the writer was dropped");
    }

    #[tokio::test]
    async fn a_disabled_writer_logs_nothing() {
        let (w, store) = writer(RawLogConfig::new().disabled());
        w.log(call(1)).await;
        w.flush().await;
        assert_eq!(w.stats(), RawLogStats::default());
        assert_eq!(stored(&store).await, 0);
    }
}
