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
//! refused it), or whose batch failed as a whole (a deadlock, a constraint,
//! a lost connection), is not lost and not failed: its caller runs it alone
//! as it would have, so every write gets the answer and audit entry of its
//! own ([`Turn::Follow`] yields `None`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use openvibe_protocols::{CallerContext, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::error::store_error;
use crate::sql::{Ran, Run, Sql, write_replacing_expired};

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
}

struct Pending {
    id: String,
    row: RowFn,
    reply: oneshot::Sender<PgRow>,
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
    /// Wait: the row as written, or `None` (refused by the statement's
    /// condition, or the batch failed): write alone then.
    Follow(oneshot::Receiver<PgRow>),
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
        })
    }

    /// The next batch of `key`: up to [`MAX_BATCH`] queued writes of
    /// distinct ids, in queue order (a later write of an id waits for the
    /// next batch, so writes of one id keep their order).
    fn take(&self, key: &str) -> Option<(Arc<Spec>, Vec<Pending>)> {
        let mut groups = self.lock();
        let group = groups.get_mut(key)?;
        let mut ids = HashSet::new();
        let mut batch = Vec::new();
        let mut kept = VecDeque::new();
        while let Some(p) = group.queue.pop_front() {
            if batch.len() < MAX_BATCH && ids.insert(p.id.clone()) {
                batch.push(p);
            } else {
                kept.push_back(p);
            }
        }
        group.queue = kept;
        (!batch.is_empty()).then(|| (Arc::clone(&group.spec), batch))
    }
}

/// Holds a group open; dropped, it hands the queue to a task that writes
/// it, or closes the group when nothing is queued. Runs on every exit,
/// a cancelled or panicking writer included, so a queued write is never
/// left waiting.
pub(crate) struct Guard {
    groups: Groups,
    pool: PgPool,
    key: Key,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut groups = self.groups.lock();
        let queued = groups
            .get(&self.key)
            .is_some_and(|group| !group.queue.is_empty());
        let handle = tokio::runtime::Handle::try_current();
        match handle {
            Ok(handle) if queued => {
                drop(groups);
                let next = Guard {
                    groups: self.groups.clone(),
                    pool: self.pool.clone(),
                    key: std::mem::take(&mut self.key),
                };
                handle.spawn(drain(next));
            }
            // Closing the group drops the queued replies: their writers
            // (if any are left without a runtime) write alone.
            _ => {
                groups.remove(&self.key);
            }
        }
    }
}

/// Write batches of the group while any are queued.
async fn drain(guard: Guard) {
    while let Some((spec, batch)) = guard.groups.take(&guard.key) {
        let span = tracing::debug_span!(
            "store",
            backend = "postgres",
            kind = spec.kind,
            op = "store_group",
            rows = batch.len(),
            tenant = %spec.ctx.tenant_id(),
            principal = %spec.ctx.principal()
        );
        write_batch(&guard.pool, &spec, batch)
            .instrument(span)
            .await;
    }
}

/// Write `batch` in one statement and answer each writer its row; a writer
/// whose row is missing (or all of them, when the batch failed) hears
/// nothing and writes alone.
async fn write_batch(pool: &PgPool, spec: &Spec, mut batch: Vec<Pending>) {
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
    let written = async {
        let (tx, ran) =
            write_replacing_expired(pool, &spec.ctx, spec.table, &ids, sql, Run::All).await?;
        tx.commit().await.map_err(store_error)?;
        Ok::<_, StoreError>(match ran {
            Ran::All(rows) => rows,
            _ => Vec::new(),
        })
    }
    .await;
    let rows = match written {
        Ok(rows) => rows,
        Err(e) => {
            tracing::debug!(error = %e, rows = batch.len(), "group write failed; each writes alone");
            return;
        }
    };
    let mut by_id: HashMap<String, PgRow> = rows
        .into_iter()
        .filter_map(|row| Some((row.try_get::<String, _>("id").ok()?, row)))
        .collect();
    for p in batch {
        if let Some(row) = by_id.remove(&p.id) {
            // A writer that stopped waiting has gone; its row is written.
            let _ = p.reply.send(row);
        }
    }
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
        }
    }

    fn lazy_pool() -> PgPool {
        sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@127.0.0.1:1/none")
            .unwrap_or_else(|e| unreachable!("a lazy pool does not connect: {e}"))
    }

    fn queue(groups: &Groups, key: &str, ids: &[&str]) -> Vec<oneshot::Receiver<PgRow>> {
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
                .take("k")
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
        assert!(taken(&groups).is_empty());
        // Nothing queued: dropping the guard closes the group, and the
        // next write leads again.
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
}
