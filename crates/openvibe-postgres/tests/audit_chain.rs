//! The audit chain on PostgreSQL (issue 43): the database's owner edits an
//! entry, deletes one, or writes one with the chain's trigger switched
//! off, and `verify` names the entry; a trail written before the chain
//! existed is linked, in its order, by the migration that adds it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::borrow::Cow;

use openvibe_postgres::{MIGRATOR, PgStores};
use openvibe_protocols::{AuditQuery, CallerContext, Fact, Stores, VerifyChain};
use sqlx::PgPool;

fn sys(tenant: &str) -> CallerContext {
    CallerContext::system().with_tenant(tenant)
}

async fn write(stores: &Stores, tenant: &str, n: usize) {
    let ctx = CallerContext::agent("cro").with_tenant(tenant);
    for i in 0..n {
        stores
            .facts
            .store(
                &ctx,
                Fact::new(format!("{tenant}-f{i}"), format!("fact {i}")),
            )
            .await
            .unwrap();
    }
    stores.audit.flush().await.unwrap();
}

/// Run `statement` as the tables' owner (the migrating role), with the
/// append-only guard lifted: what someone with the database's keys can do.
async fn as_owner(pool: &PgPool, tenant: &str, statement: &str) {
    let mut tx = pool.begin().await.unwrap();
    for sql in [
        "GRANT UPDATE, DELETE ON audit_log TO CURRENT_USER",
        "ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update",
        "ALTER TABLE audit_log NO FORCE ROW LEVEL SECURITY",
    ] {
        sqlx::query(sql).execute(&mut *tx).await.unwrap();
    }
    sqlx::query("SELECT set_config('openvibe.tenant_id', $1, true)")
        .bind(tenant)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
        .execute(&mut *tx)
        .await
        .unwrap();
    for sql in [
        "ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update",
        "ALTER TABLE audit_log FORCE ROW LEVEL SECURITY",
        "REVOKE UPDATE, DELETE ON audit_log FROM CURRENT_USER",
    ] {
        sqlx::query(sql).execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

async fn verify(stores: &Stores, tenant: &str) -> openvibe_protocols::ChainReport {
    stores
        .audit
        .verify(&sys(tenant), &VerifyChain::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_edited_entry_is_found() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 3).await;
    let stores = PgStores::from_pool(pool.clone()).stores();
    write(&stores, "t1", 6).await;
    assert!(verify(&stores, "t1").await.ok());
    let head = stores.audit.anchor(&sys("t1")).await.unwrap();
    as_owner(
        &pool,
        "t1",
        "UPDATE audit_log SET principal = 'user:mallory' WHERE tenant_id = 't1' AND chain_seq = 3",
    )
    .await;
    let report = verify(&stores, "t1").await;
    let broken = report.broken.expect("the edit is found");
    assert_eq!((broken.chain_seq, broken.what.as_str()), (3, "hash"));
    assert_ne!(broken.expected, broken.found);
    assert_eq!(report.checked, 3, "the walk stops at the first break");
    // Rewriting the chain from there on hides the edit from the walk, not
    // from the anchor kept before.
    as_owner(
        &pool,
        "t1",
        "DO $$ DECLARE r audit_log; prev bytea; BEGIN \
           SELECT hash INTO prev FROM audit_log WHERE tenant_id = 't1' AND chain_seq = 2; \
           FOR r IN SELECT * FROM audit_log WHERE tenant_id = 't1' AND chain_seq >= 3 ORDER BY chain_seq LOOP \
             r.prev_hash := prev; r.hash := openvibe_audit_hash(r); \
             UPDATE audit_log SET prev_hash = r.prev_hash, hash = r.hash WHERE tenant_id = 't1' AND seq = r.seq; \
             prev := r.hash; \
           END LOOP; END $$",
    )
    .await;
    assert!(
        verify(&stores, "t1").await.ok(),
        "a consistent rewrite walks"
    );
    let anchored = VerifyChain {
        anchor: Some(head),
        ..VerifyChain::default()
    };
    let broken = stores
        .audit
        .verify(&sys("t1"), &anchored)
        .await
        .unwrap()
        .broken
        .expect("the anchor finds it");
    assert_eq!(broken.what, "anchor");
}

#[tokio::test]
async fn a_deleted_or_unchained_entry_is_found() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 3).await;
    let stores = PgStores::from_pool(pool.clone()).stores();
    write(&stores, "t1", 5).await;
    write(&stores, "t2", 2).await;
    as_owner(
        &pool,
        "t1",
        "DELETE FROM audit_log WHERE tenant_id = 't1' AND chain_seq = 4",
    )
    .await;
    let broken = verify(&stores, "t1").await.broken.unwrap();
    assert_eq!((broken.chain_seq, broken.what.as_str()), (5, "gap"));
    assert!(
        verify(&stores, "t2").await.ok(),
        "another tenant's chain holds"
    );

    sqlx::query("ALTER TABLE audit_log DISABLE TRIGGER audit_log_link")
        .execute(&pool)
        .await
        .unwrap();
    write(&stores, "t2", 1).await;
    sqlx::query("ALTER TABLE audit_log ENABLE TRIGGER audit_log_link")
        .execute(&pool)
        .await
        .unwrap();
    let broken = verify(&stores, "t2").await.broken.unwrap();
    assert_eq!(broken.what, "unchained");
}

#[tokio::test]
async fn a_trail_from_before_the_chain_is_linked_by_its_migration() {
    let Some(url) = common::database_url() else {
        return;
    };
    let schema = common::new_schema(&url).await;
    let pool = common::pool_in(&url, &schema, 3).await;
    let before = sqlx::migrate::Migrator {
        migrations: Cow::Owned(
            MIGRATOR
                .migrations
                .iter()
                .filter(|m| m.version < 24)
                .cloned()
                .collect(),
        ),
        ..sqlx::migrate::Migrator::DEFAULT
    };
    before.run(&pool).await.unwrap();
    let stores = PgStores::from_pool(pool.clone()).stores();
    write(&stores, "t1", 4).await;
    write(&stores, "t2", 3).await;
    write(&stores, "t1", 2).await;
    openvibe_postgres::migrate(&pool).await.unwrap();
    for (tenant, n) in [("t1", 6), ("t2", 3)] {
        let report = verify(&stores, tenant).await;
        assert!(report.ok(), "{tenant}: {report:?}");
        assert_eq!(report.checked, n);
        let mut entries = stores
            .audit
            .query(&sys(tenant), &AuditQuery::new())
            .await
            .unwrap();
        entries.sort_by_key(|e| e.seq);
        let numbers: Vec<u64> = entries.iter().map(|e| e.chain_seq).collect();
        assert_eq!(
            numbers,
            (1..=n).collect::<Vec<_>>(),
            "{tenant}: in trail order"
        );
    }
    // New entries continue each chain.
    write(&stores, "t2", 1).await;
    let report = verify(&stores, "t2").await;
    assert!(report.ok());
    assert_eq!(report.head.chain_seq, 4);
}

#[tokio::test]
async fn purging_a_tenant_keeps_its_chain_going() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 3).await;
    let stores = PgStores::from_pool(pool.clone()).stores();
    write(&stores, "t3", 3).await;
    openvibe_postgres::purge_tenant(&pool, "t3").await.unwrap();
    write(&stores, "t3", 2).await;
    let report = verify(&stores, "t3").await;
    assert!(report.ok(), "{report:?}");
    assert_eq!(
        report.checked, 8,
        "3 writes, their 3 deletions and 2 writes: the trail and its chain outlive the records"
    );
}
