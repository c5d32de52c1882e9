//! Group commit for record upserts: concurrent `store` calls of one caller
//! into one table share a transaction.
//!
//! The first write of a group runs at once, alone, exactly as it would
//! without grouping. Writes that arrive while it runs (same table, same
//! transaction settings, same conflict clause: the [`Key`]) queue; when it
//! is done, a task writes everything queued as one multi-row `INSERT … ON
//! CONFLICT … RETURNING` in one transaction, and again while more arrive.
//! A lone writer therefore waits for nothing, and many writers pay one
//! `BEGIN`, one statement and one commit (one WAL flush) per batch instead
//! of per record.
//!
//! A queued write whose row the batch did not return (its conflict clause
//! refused it), or whose batch failed before its commit (a deadlock, a
//! constraint, a lost connection), is not lost and not failed: its caller
//! runs it alone as it would have ([`Answer::Alone`]), so every write gets
//! the answer and audit entry of its own, and the group waits for those
//! before its next batch. A failed commit is answered as that error
//! ([`Answer::Failed`]), never retried: its outcome is unknown. A queued
//! write whose caller stopped waiting is dropped unwritten.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use openvibe_protocols::{CallerContext, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::error::store_error;
use crate::sql::Sql;
use crate::tx::{Run, write_replacing_expired};

/// Rows written by one statement at most.
pub(crate) const MAX_BATCH: usize = 64;

/// Pushes one row's values, `(…)`, onto a statement.
pub(crate) type RowFn = Arc<dyn Fn(&mut Sql) + Send + Sync>;

/// What makes writes groupable: the table, the caller's transaction
/// settings, and the statement's text and values apart from the rows.
pub(crate) type Key = String;

/// The statement around the rows of one group.
pub(crate) struct Spec {
    /// The caller the transaction runs as.
    pub(crate) ctx: CallerContext,
    /// The table written (for replacing expired rows).
    pub(crate) table: &'static str,
    /// The record kind (for spans).
    pub(crate) kind: &'static str,
    /// The statement before the rows (`INSERT INTO … VALUES `).
    pub(crate) head: String,
    /// The statement after the rows (`ON CONFLICT … RETURNING …`).
    pub(crate) tail: RowFn,
    /// Whether a returned row decodes as the record (checked before the
    /// commit: a row that does not is not committed, as alone).
    pub(crate) decodes: fn(&PgRow) -> Result<(), StoreError>,
}

/// What a queued write hears from its batch.
pub(crate) enum Answer {
    /// Written and committed: its row.
    Written(PgRow),
    /// Not written (its row was refused, or the batch failed before its
    /// commit): write alone, then drop the token. The group takes no
    /// further batch until every token is dropped, so writes of one id
    /// keep their order.
    Alone(oneshot::Sender<()>),
    /// The batch's commit failed: the outcome is unknown, as it would be
    /// for a lone write whose commit failed.
    Failed(StoreError),
}

struct Pending {
    id: String,
    row: RowFn,
    reply: oneshot::Sender<Answer>,
}

struct Group {
    spec: Arc<Spec>,
    queue: VecDeque<Pending>,
}

/// The groups of one store (cheap to clone: shared).
#[derive(Clone, Default)]
pub(crate) struct Groups {
    inner: Arc<Mutex<HashMap<Key, Group>>>,
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Groups").finish_non_exhaustive()
    }
}

/// The part a write plays in its group.
pub(crate) enum Turn {
    /// Write alone now; queued writes follow when the guard is dropped.
    Lead(Guard),
    /// Wait for the batch's [`Answer`]; a closed channel (the group was
    /// closed without a batch) means: write alone.
    Follow(oneshot::Receiver<Answer>),
}

impl Groups {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Group>> {
        // A panic while holding the lock leaves the map consistent (every
        // change is one insert, remove or queue operation).
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Join the group of `key` with the write of `id` (values `row`);
    /// `spec` makes the group's statement when this write starts it.
    pub(crate) fn join(
        &self,
        pool: &PgPool,
        key: Key,
        spec: impl FnOnce() -> Spec,
        id: &str,
        row: &RowFn,
    ) -> Turn {
        let mut groups = self.lock();
        if let Some(group) = groups.get_mut(&key) {
            let (reply, answer) = oneshot::channel();
            group.queue.push_back(Pending {
                id: id.to_owned(),
                row: Arc::clone(row),
                reply,
            });
            return Turn::Follow(answer);
        }
        groups.insert(
            key.clone(),
            Group {
                spec: Arc::new(spec()),
                queue: VecDeque::new(),
            },
        );
        Turn::Lead(Guard {
            groups: self.clone(),
            pool: pool.clone(),
            key,
            role: Role::Lead,
        })
    }

    /// The next batch of `key`: up to [`MAX_BATCH`] queued writes of
    /// distinct ids, in queue order (a later write of an id waits for the
    /// next batch, so writes of one id keep their order); writes whose
    /// caller stopped waiting are dropped unwritten, as a cancelled lone
    /// write would be. With none left, the group is closed.
    fn take_or_close(&self, key: &str) -> Option<(Arc<Spec>, Vec<Pending>)> {
        let mut groups = self.lock();
        let group = groups.get_mut(key)?;
        let mut ids = HashSet::new();
        let mut batch = Vec::new();
        let mut kept = VecDeque::new();
        while let Some(p) = group.queue.pop_front() {
            if p.reply.is_closed() {
                continue;
            }
            if batch.len() < MAX_BATCH && ids.insert(p.id.clone()) {
                batch.push(p);
            } else {
                kept.push_back(p);
            }
        }
        group.queue = kept;
        if batch.is_empty() {
            groups.remove(key);
            return None;
        }
        Some((Arc::clone(&group.spec), batch))
    }
}

#[derive(Clone, Copy)]
enum Role {
    /// The first write's: dropped, it hands the queue to a drain task.
    Lead,
    /// A drain task's: dropped before the queue ran dry (cancelled, or a
    /// panic), it closes the group and its waiters write alone.
    Drain,
    /// The group is closed already.
    Done,
}

/// Holds a group open. Runs on every exit, a cancelled or panicking writer
/// included, so a queued write is never left waiting: the leader's hands
/// the queue to a task that writes it (or closes the group when nothing is
/// queued); a drain task's closes the group when the task ends early (a
/// runtime shutting down drops tasks unpolled: handing on again would
/// never end).
pub(crate) struct Guard {
    groups: Groups,
    pool: PgPool,
    key: Key,
    role: Role,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut groups = self.groups.lock();
        let queued = groups
            .get(&self.key)
            .is_some_and(|group| !group.queue.is_empty());
        match (self.role, tokio::runtime::Handle::try_current()) {
            (Role::Done, _) => {}
            (Role::Lead, Ok(handle)) if queued => {
                drop(groups);
                handle.spawn(drain(Guard {
                    groups: self.groups.clone(),
                    pool: self.pool.clone(),
                    key: std::mem::take(&mut self.key),
                    role: Role::Drain,
                }));
            }
            // Closing the group drops the queued replies: their writers
            // write alone.
            _ => {
                groups.remove(&self.key);
            }
        }
    }
}

/// Write batches of the group while any are queued, then close it.
async fn drain(mut guard: Guard) {
    while let Some((spec, batch)) = guard.groups.take_or_close(&guard.key) {
        let span = tracing::debug_span!(
            "store",
            backend = "postgres",
            kind = spec.kind,
            op = "store_group",
            rows = batch.len(),
            tenant = %spec.ctx.tenant_id(),
            principal = %spec.ctx.principal()
        );
        let alone = write_batch(&guard.pool, &spec, batch)
            .instrument(span)
            .await;
        // Writes told to go alone finish before the next batch starts.
        for done in alone {
            let _ = done.await;
        }
    }
    guard.role = Role::Done;
}

/// Write `batch` in one statement and answer each writer; returns the
/// tokens of those told to write alone.
async fn write_batch(
    pool: &PgPool,
    spec: &Spec,
    mut batch: Vec<Pending>,
) -> Vec<oneshot::Receiver<()>> {
    // One order for every batch, so two batches over the same ids take
    // their row locks in the same order.
    batch.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<String> = batch.iter().map(|p| p.id.clone()).collect();
    let mut sql = Sql::new(&spec.head);
    for (i, p) in batch.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        (p.row)(&mut sql);
    }
    (spec.tail)(&mut sql);
    let ran = async {
        let (tx, ran) =
            write_replacing_expired(pool, &spec.ctx, spec.table, &ids, sql, Run::All).await?;
        let rows = ran.rows()?;
        if let Some(e) = rows.iter().find_map(|row| (spec.decodes)(row).err()) {
            let _ = tx.rollback().await;
            return Err(e);
        }
        Ok((tx, rows))
    }
    .await;
    let mut rows: HashMap<String, PgRow> = match ran {
        Ok((tx, rows)) => {
            if let Err(e) = tx.commit().await {
                let e = store_error(e);
                for p in batch {
                    let _ = p.reply.send(Answer::Failed(e.clone()));
                }
                return Vec::new();
            }
            rows.into_iter()
                .filter_map(|row| Some((row.try_get::<String, _>("id").ok()?, row)))
                .collect()
        }
        Err(e) => {
            tracing::debug!(error = %e, rows = batch.len(), "group write failed; each writes alone");
            HashMap::new()
        }
    };
    let mut alone = Vec::new();
    for p in batch {
        // A writer that stopped waiting once its batch began: its row is
        // written, as a lone write cancelled during its commit would be.
        let answer = match rows.remove(&p.id) {
            Some(row) => Answer::Written(row),
            None => {
                let (token, done) = oneshot::channel();
                alone.push(done);
                Answer::Alone(token)
            }
        };
        let _ = p.reply.send(answer);
    }
    alone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            ctx: CallerContext::agent("a").with_tenant("t"),
            table: "facts",
            kind: "fact",
            head: String::new(),
            tail: Arc::new(|_: &mut Sql| {}),
            decodes: |_| Ok(()),
        }
    }

    fn lazy_pool() -> PgPool {
        sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@127.0.0.1:1/none")
            .unwrap_or_else(|e| unreachable!("a lazy pool does not connect: {e}"))
    }

    fn queue(groups: &Groups, key: &str, ids: &[&str]) -> Vec<oneshot::Receiver<Answer>> {
        let row: RowFn = Arc::new(|_: &mut Sql| {});
        ids.iter()
            .map(
                |id| match groups.join(&lazy_pool(), key.to_owned(), spec, id, &row) {
                    Turn::Follow(answer) => answer,
                    Turn::Lead(_) => unreachable!("the group is open"),
                },
            )
            .collect()
    }

    /// Open the group `k` with a write that leads it.
    fn lead(groups: &Groups) -> Guard {
        let row: RowFn = Arc::new(|_: &mut Sql| {});
        match groups.join(&lazy_pool(), "k".into(), spec, "x", &row) {
            Turn::Lead(guard) => guard,
            Turn::Follow(_) => unreachable!("the first write leads"),
        }
    }

    #[tokio::test]
    async fn batches_take_distinct_ids_in_order_and_the_group_closes_when_done() {
        let groups = Groups::default();
        let guard = lead(&groups);
        let mut ids: Vec<String> = vec!["a".into(), "b".into(), "a".into(), "c".into()];
        ids.extend((0..MAX_BATCH).map(|i| format!("n{i:03}")));
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let _answers = queue(&groups, "k", &refs);
        let taken = |groups: &Groups| -> Vec<String> {
            groups
                .take_or_close("k")
                .map(|(_, batch)| batch.into_iter().map(|p| p.id).collect())
                .unwrap_or_default()
        };
        let first = taken(&groups);
        assert_eq!(first.len(), MAX_BATCH);
        assert_eq!(&first[..3], ["a", "b", "c"]);
        // The second "a" and the writes past the limit wait, in order.
        let second = taken(&groups);
        assert_eq!(second[0], "a");
        assert_eq!(second.len(), 1 + 3);
        // Nothing left: the group is closed, and the next write leads.
        assert!(taken(&groups).is_empty());
        assert!(groups.lock().is_empty());
        drop(guard);
        assert!(groups.lock().is_empty());
        drop(lead(&groups));
    }

    #[tokio::test]
    async fn a_dropped_guard_without_a_runtime_frees_its_waiters() {
        let groups = Groups::default();
        let guard = lead(&groups);
        let answers = queue(&groups, "k", &["a"]);
        // Dropped off the runtime: no task can write the queue, so the
        // group closes and its writer hears nothing (and writes alone).
        std::thread::spawn(move || drop(guard))
            .join()
            .unwrap_or_else(|_| unreachable!("dropping a guard does not panic"));
        assert!(groups.lock().is_empty());
        for answer in answers {
            assert!(answer.await.is_err());
        }
    }

    #[tokio::test]
    async fn a_write_whose_caller_stopped_waiting_is_not_written() {
        let groups = Groups::default();
        let _guard = lead(&groups);
        let mut answers = queue(&groups, "k", &["gone", "kept"]);
        drop(answers.remove(0));
        let batch = groups
            .take_or_close("k")
            .map(|(_, b)| b)
            .unwrap_or_default();
        let ids: Vec<&str> = batch.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["kept"]);
    }

    #[test]
    fn a_runtime_shutting_down_closes_the_group() {
        let groups = Groups::default();
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            unreachable!("a current-thread runtime builds");
        };
        let answers = runtime.block_on(async {
            let guard = lead(&groups);
            let answers = queue(&groups, "k", &["a"]);
            // A leader still writing when the runtime goes: its guard
            // hands the queue to a task the closing runtime drops unpolled.
            tokio::spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            });
            tokio::task::yield_now().await;
            answers
        });
        drop(runtime);
        assert!(groups.lock().is_empty());
        for answer in answers {
            assert!(answer.blocking_recv().is_err());
        }
    }
}
