//! Faults injected into PostgreSQL: connections killed in the middle of a
//! run of writes, a statement past its timeout, an exhausted pool. What the
//! API reported as written is there, what it reported as failed is not
//! half there, the pool recovers by itself, and time-outs are typed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use openvibe_postgres::{PgStores, connect_options, migrate, pool_options};
use openvibe_protocols::{CallerContext, Episode, Fact, RecordStore, RevisableStore, StoreError};
use sqlx::{Connection, PgConnection, Row};

fn sys() -> CallerContext {
    CallerContext::system().with_tenant("t1")
}

fn episode(id: String, minute: i64) -> Episode {
    Episode {
        id,
        agent_id: "a".into(),
        operator_id: "op".into(),
        node_name: "n".into(),
        timestamp: chrono::Utc::now() + chrono::Duration::minutes(minute),
        action: "act".into(),
        input_summary: "in".into(),
        output_summary: "out".into(),
        ..Episode::default()
    }
}

/// Stores on a fresh schema whose connections carry `application_name`,
/// so that only they are killed; `max` connections; `timeout` statements.
async fn stores_named(url: &str, name: &str, max: u32, statement_timeout: &str) -> PgStores {
    let schema = common::new_schema(url).await;
    let options = connect_options(url)
        .unwrap()
        .application_name(name)
        .options([
            ("search_path", format!("{schema},public")),
            ("statement_timeout", statement_timeout.to_owned()),
        ]);
    let pool = pool_options(max)
        .acquire_timeout(Duration::from_millis(300))
        .connect_with(options)
        .await
        .unwrap();
    migrate(&pool).await.unwrap();
    PgStores::from_pool(pool)
}

/// Kill every backend of `name`, from a connection of its own.
async fn kill(url: &str, name: &str) -> i64 {
    let mut conn = PgConnection::connect(url).await.unwrap();
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid()) k",
    )
    .bind(name)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    killed
}

/// Writes are single facts and batches of ten episodes while every
/// connection of the pool is killed, again and again. Afterwards each write
/// reported done is there (all of a batch), each reported failed is absent
/// (none of a batch), failures were transient, and the next calls succeed.
#[tokio::test]
async fn killed_connections_lose_nothing_and_the_pool_recovers() {
    let Some(url) = common::database_url() else {
        return;
    };
    let name = format!("ovt-fault-{}", std::process::id());
    let pg = stores_named(&url, &name, 3, "30s").await;
    let ctx = sys();
    let writer = {
        let pg = pg.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for i in 0..150u32 {
                let fact = pg
                    .facts()
                    .store(&ctx, Fact::new(format!("f{i}"), "x"))
                    .await;
                let batch: Vec<Episode> = (0..10)
                    .map(|k| episode(format!("e{i}-{k}"), i64::from(k)))
                    .collect();
                let episodes = pg.episodes().store_batch(&ctx, batch).await;
                outcomes.push((i, fact.map(|_| ()), episodes.map(|_| ())));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            outcomes
        })
    };
    let mut killed = 0;
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(40)).await;
        killed += kill(&url, &name).await;
    }
    let outcomes = writer.await.unwrap();
    assert!(killed > 0, "the test killed no connection");
    let (mut lost, mut half, mut failed) = (0, 0, 0);
    for (i, fact, episodes) in &outcomes {
        let stored = pg.facts().get(&ctx, &format!("f{i}")).await.unwrap();
        match fact {
            Ok(()) => lost += usize::from(stored.is_none()),
            Err(e) => {
                failed += 1;
                assert!(e.is_transient(), "f{i}: {e}");
            }
        }
        let mut present = 0;
        for k in 0..10 {
            present += usize::from(
                openvibe_protocols::RecordStore::<openvibe_protocols::Episode>::get(
                    pg.episodes().as_ref(),
                    &ctx,
                    &format!("e{i}-{k}"),
                )
                .await
                .unwrap()
                .is_some(),
            );
        }
        match episodes {
            Ok(()) => lost += 10 - present,
            Err(e) => {
                failed += 1;
                assert!(e.is_transient(), "batch {i}: {e}");
                half += usize::from(present != 0 && present != 10);
            }
        }
    }
    eprintln!(
        "BENCH pg_fault_writes_lost {lost} writes ({killed} connections killed, {failed} writes \
         failed and were reported as failed, {} writes in all)",
        outcomes.len() * 2
    );
    assert_eq!(lost, 0, "writes reported done but missing");
    assert_eq!(half, 0, "batches reported failed but partly there");
    assert!(failed > 0, "no write was hit: the fault was not injected");
    // The pool recovers by itself.
    for i in 0..5 {
        pg.facts()
            .store(&ctx, Fact::new(format!("after{i}"), "x"))
            .await
            .unwrap();
    }
}

/// A statement past its timeout is cancelled and reported as
/// `StoreError::Timeout`, and changes nothing.
#[tokio::test]
async fn a_statement_past_its_timeout_is_a_typed_timeout() {
    let Some(url) = common::database_url() else {
        return;
    };
    let name = format!("ovt-timeout-{}", std::process::id());
    let pg = stores_named(&url, &name, 2, "300ms").await;
    let ctx = sys();
    pg.facts()
        .store(&ctx, Fact::new("f1", "before"))
        .await
        .unwrap();
    // Hold the row's lock in another transaction: the update waits on it
    // past the statement timeout.
    let mut blocker = pg.pool().begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *blocker)
        .await
        .unwrap();
    sqlx::query("SELECT id FROM facts WHERE id = 'f1' FOR UPDATE")
        .execute(&mut *blocker)
        .await
        .unwrap();
    let started = Instant::now();
    let err = pg
        .facts()
        .update(&ctx, Fact::new("f1", "after"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Timeout { .. }), "{err:?}");
    assert!(err.is_transient());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    blocker.rollback().await.unwrap();
    assert_eq!(
        pg.facts().get(&ctx, "f1").await.unwrap().unwrap().content,
        "before"
    );
}

/// With every connection taken, a call fails with `StoreError::Timeout`
/// after the acquire timeout instead of hanging.
#[tokio::test]
async fn an_exhausted_pool_is_a_typed_timeout_not_a_hang() {
    let Some(url) = common::database_url() else {
        return;
    };
    let name = format!("ovt-pool-{}", std::process::id());
    let pg = stores_named(&url, &name, 1, "30s").await;
    let held = pg.pool().acquire().await.unwrap();
    let started = Instant::now();
    let err = pg.facts().get(&sys(), "f1").await.unwrap_err();
    assert!(matches!(err, StoreError::Timeout { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    assert!(pg.facts().get(&sys(), "f1").await.unwrap().is_none());
}

/// A store call cancelled while its `BEGIN` is on the wire (a `select!`, a
/// timeout, an HTTP client gone) leaves no transaction open on the pooled
/// connection: the next statement on that connection (the pool has one)
/// runs in a transaction of its own. sqlx's `begin` alone is not
/// cancel-safe on PostgreSQL (sqlx #4393): its connection went back to the
/// pool inside a transaction nobody tracked, and the next caller's
/// statements ran in it (PostgreSQL: "there is already a transaction in
/// progress").
#[tokio::test]
async fn a_call_cancelled_during_its_begin_leaves_no_open_transaction() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pg = stores_named(&url, "ovt-cancel", 1, "30s").await;
    let pool = pg.pool().clone();
    let ctx = sys();
    let facts = pg.facts();
    let mut cancelled = 0;
    for round in 0..120u32 {
        // Cancelled after `round % 24` turns of the runtime: early rounds
        // while it waits for the connection, later ones with its BEGIN
        // sent and unanswered, the last ones after it finished.
        let write = facts.store(&ctx, Fact::new(format!("c{round}"), "x"));
        let turns = async {
            for _ in 0..round % 24 {
                tokio::task::yield_now().await;
            }
        };
        tokio::select! {
            biased;
            _ = write => {}
            () = turns => cancelled += 1,
        }
        // One simple-protocol message: in a transaction of its own, the
        // transaction began with the statement.
        let own: bool = sqlx::raw_sql("SELECT now() = statement_timestamp()")
            .fetch_one(&pool)
            .await
            .unwrap()
            .get(0);
        assert!(
            own,
            "round {round}: the next statement ran in a leftover transaction"
        );
    }
    assert!(cancelled > 0, "no call was cancelled");
    // The pool still works for the store.
    facts.store(&ctx, Fact::new("after", "x")).await.unwrap();
}
