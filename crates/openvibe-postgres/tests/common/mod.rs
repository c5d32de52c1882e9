//! Test support: a fresh, migrated schema per test on `DATABASE_URL`.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use openvibe_postgres::{PgStores, connect_options, migrate, pool_options};
use sqlx::{Connection, Executor, PgConnection, PgPool, Row};

/// Test schemas older than this are dropped by the next test run.
const STALE_SECS: u64 = 1800;

/// `DATABASE_URL`, or `None` when the test is skipped (recorded by name,
/// see `openvibe_memory_testkit::skip`); without either, a panic.
pub fn database_url() -> Option<String> {
    openvibe_memory_testkit::skip::database_url()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

static CLEANED: AtomicBool = AtomicBool::new(false);

/// Whether the test schema `name` belongs to no running test: its test
/// binary (`ovt_<pid>_<secs>_<rand>`) has exited, or it is older than
/// [`STALE_SECS`] (an old-format name, or a pid reused since).
fn is_stale(name: &str, now: u64) -> bool {
    let parts: Vec<&str> = name.split('_').collect();
    let number = |i: usize| parts.get(i).and_then(|s| s.parse::<u64>().ok());
    match (parts.len(), number(1), number(2)) {
        (4, Some(pid), Some(born)) => {
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || now.saturating_sub(born) > STALE_SECS
        }
        (_, Some(born), _) => now.saturating_sub(born) > STALE_SECS,
        _ => false,
    }
}

/// Drop the test schemas of earlier runs (once per test binary): every
/// schema whose test binary has exited, so they do not accumulate.
async fn drop_stale_schemas(conn: &mut PgConnection) {
    if CLEANED.swap(true, Ordering::SeqCst) {
        return;
    }
    let rows = sqlx::query(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ovt\\_%' AND \
         pg_get_userbyid(nspowner) = current_user",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let now = now_secs();
    for row in rows {
        let name: String = row.get(0);
        if is_stale(&name, now) {
            let _ = conn
                .execute(sqlx::AssertSqlSafe(format!(
                    "DROP SCHEMA IF EXISTS {name} CASCADE"
                )))
                .await;
        }
    }
}

/// A new empty schema (not migrated); returns its name.
pub async fn new_schema(url: &str) -> String {
    let mut conn = PgConnection::connect(url).await.unwrap();
    drop_stale_schemas(&mut conn).await;
    let name = format!(
        "ovt_{}_{}_{:016x}",
        std::process::id(),
        now_secs(),
        fastrand::u64(..)
    );
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}")))
        .await
        .unwrap();
    conn.close().await.unwrap();
    name
}

/// A pool whose connections use `schema` (then `public`, for `vector`).
pub async fn pool_in(url: &str, schema: &str, max: u32) -> PgPool {
    let options = connect_options(url)
        .unwrap()
        .options([("search_path", format!("{schema},public"))]);
    pool_options(max).connect_with(options).await.unwrap()
}

/// A fresh schema, migrated, and a pool on it.
pub async fn fresh_pool(url: &str, max: u32) -> PgPool {
    let schema = new_schema(url).await;
    let pool = pool_in(url, &schema, max).await;
    migrate(&pool).await.unwrap();
    pool
}

/// Fresh, empty Postgres stores (call after the skip guard: panics without a database).
pub async fn fresh_stores() -> PgStores {
    let url = database_url().expect("the guard checked for a database");
    PgStores::from_pool(fresh_pool(&url, 3).await)
}

/// A transaction on `conn` confined to `tenant` (as the stores set it), for
/// statements that check what row-level security lets through.
pub async fn tenant_tx<'c>(
    conn: &'c mut PgConnection,
    tenant: &str,
) -> sqlx::Transaction<'c, sqlx::Postgres> {
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', $1, true)")
        .bind(tenant)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}
