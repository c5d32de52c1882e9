//! A schema of its own for a test that runs the CLI against PostgreSQL, so
//! that nothing it writes (records, audit rows) stays in the dev database:
//! made by the Postgres crate's test support (`ovt_<pid>_<secs>_<rand>`,
//! dropped by later runs if this one dies) and dropped when the test ends.

use sqlx::{Connection, Executor, PgConnection};

#[path = "../../../openvibe-postgres/tests/common/mod.rs"]
mod common;

pub struct TempSchema {
    base: String,
    name: String,
}

impl TempSchema {
    /// A new, empty schema in the database at `url`.
    pub async fn new(url: &str) -> Self {
        Self {
            base: url.to_owned(),
            name: common::new_schema(url).await,
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
