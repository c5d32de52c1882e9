//! A schema of its own for a test that runs the CLI against PostgreSQL, so
//! that nothing it writes (records, audit rows) stays in the dev database:
//! named like the Postgres crate's test schemas (`ovt_<pid>_<secs>_<rand>`,
//! dropped by later runs if this one dies) and dropped when the test ends.

use sqlx::{Connection, Executor, PgConnection};

pub struct TempSchema {
    base: String,
    name: String,
}

impl TempSchema {
    /// A new, empty schema in the database at `url`.
    pub async fn new(url: &str) -> Self {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let name = format!(
            "ovt_{}_{secs}_{:016x}",
            std::process::id(),
            fastrand::u64(..)
        );
        let mut conn = PgConnection::connect(url).await.unwrap();
        conn.execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}")))
            .await
            .unwrap();
        conn.close().await.unwrap();
        Self {
            base: url.to_owned(),
            name,
        }
    }

    /// The URL whose connections use this schema (then `public`).
    pub fn url(&self) -> String {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        format!(
            "{}{sep}options=-c%20search_path%3D{}%2Cpublic",
            self.base, self.name
        )
    }

    /// Drop it and everything in it.
    pub async fn drop(self) {
        let mut conn = PgConnection::connect(&self.base).await.unwrap();
        conn.execute(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            self.name
        )))
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
}
