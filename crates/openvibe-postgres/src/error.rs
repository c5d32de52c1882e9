//! The crate's error type and the mapping of database errors onto
//! [`StoreError`].

use openvibe_protocols::StoreError;

/// What can go wrong outside a store call: connecting and migrating. Each
/// keeps the database error as its source. Store calls return
/// [`StoreError`] like every backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The URL or the connection options are malformed.
    #[error("invalid database URL or options: {0}")]
    Config(#[source] sqlx::Error),
    /// The server could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(#[source] sqlx::Error),
    /// Applying the migrations failed.
    #[error("cannot migrate the database: {0}")]
    Migrate(#[source] sqlx::migrate::MigrateError),
}

impl PgError {
    /// Whether trying again later may succeed (the server was unreachable).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Connect(e) => is_transient(e),
            Self::Config(_) | Self::Migrate(_) => false,
        }
    }
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        let transient = e.is_transient();
        StoreError::backend_from(e.to_string(), transient, e)
    }
}

/// Whether an sqlx error is worth retrying unchanged: the connection was
/// lost or could not be made, the pool timed out or was closed under it,
/// or the server gave up on the transaction (serialization failure,
/// deadlock, shutdown, too many connections).
pub(crate) fn is_transient(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            // 40001 serialization failure, 40P01 deadlock, class 08
            // connection exceptions, 57P01-03 admin/crash shutdown and
            // cannot-connect-now, 53300 too many connections.
            matches!(
                code.as_ref(),
                "40001" | "40P01" | "57P01" | "57P02" | "57P03" | "53300"
            ) || code.starts_with("08")
        }
        _ => false,
    }
}

/// Map an sqlx error to the shared vocabulary, keeping it as the source.
///
/// - Data the database refuses (a NUL byte, a check or not-null
///   constraint, an over-long value, a malformed array or JSON): `InvalidInput`;
/// - a unique violation: `Conflict` (retrying does not help);
/// - everything else (connection, pool, protocol, decoding, serialization
///   failures): `Backend`, transient when [retrying can help](is_transient).
pub(crate) fn store_error(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e {
        let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
        let message = db.message().to_owned();
        let field = db
            .constraint()
            .map(str::to_owned)
            .or_else(|| {
                db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                    .and_then(|pg| pg.column())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "record".to_owned());
        match code.as_str() {
            // query_canceled: the statement timeout (or a cancel request).
            "57014" => {
                return StoreError::Timeout {
                    message: format!(
                        "the statement was cancelled after the statement timeout: {message}"
                    ),
                    source: Some(std::sync::Arc::new(e)),
                };
            }
            // A governance rule the database holds (migration 0028: no
            // one decides what they proposed or own).
            "OV403" => {
                let pg = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>();
                return StoreError::Unauthorized {
                    principal: pg
                        .and_then(|p| p.detail())
                        .unwrap_or("the caller")
                        .to_owned(),
                    operation: pg
                        .and_then(|p| p.hint())
                        .unwrap_or("change this record")
                        .to_owned(),
                    reason: message,
                };
            }
            "23505" => {
                return StoreError::Conflict {
                    message,
                    source: Some(std::sync::Arc::new(e)),
                };
            }
            // integrity (not null, check, foreign key), data exceptions
            // (class 22: encoding, NUL, numeric range, string length,
            // malformed array/JSON) and program limits (index row size).
            c if c.starts_with("23") || c.starts_with("22") || c == "54000" => {
                return StoreError::invalid(field, message);
            }
            _ => {
                let transient = is_transient(&e);
                return StoreError::backend_from(
                    format!("postgres error {code}: {message}"),
                    transient,
                    e,
                );
            }
        }
    }
    if matches!(e, sqlx::Error::PoolTimedOut) {
        return StoreError::Timeout {
            message: "no database connection came free within the pool's acquire timeout".into(),
            source: Some(std::sync::Arc::new(e)),
        };
    }
    let transient = is_transient(&e);
    StoreError::backend_from(e.to_string(), transient, e)
}

/// Whether a write failed because a row that has expired is in its way:
/// the upsert's conflict row is hidden by the `unexpired` policy (SQLSTATE
/// 42501), or a plain insert hit its id (a unique violation, 23505). The
/// store then deletes the expired rows in its way and writes again, once.
pub(crate) fn maybe_blocked_by_expired(e: &StoreError) -> bool {
    let Some(source) = std::error::Error::source(e) else {
        return false;
    };
    match source.downcast_ref::<sqlx::Error>() {
        Some(sqlx::Error::Database(db)) => {
            matches!(db.code().as_deref(), Some("42501" | "23505"))
        }
        _ => false,
    }
}

/// A row the database returned that this crate cannot represent
/// (e.g. a classification written by hand that names no level).
pub(crate) fn corrupt(kind: &str, id: &str, what: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("corrupt {kind} row `{id}`: {what}"))
}
