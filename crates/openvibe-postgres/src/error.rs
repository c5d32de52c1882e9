//! The crate's error type and the mapping of database errors onto
//! [`StoreError`].

use openvibe_protocols::StoreError;

/// What can go wrong outside a store call: connecting and migrating.
/// Store calls return [`StoreError`] like every backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The URL or the connection options are malformed.
    #[error("invalid database URL or options: {0}")]
    Config(String),
    /// The server could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(String),
    /// Applying the migrations failed.
    #[error("cannot migrate the database: {0}")]
    Migrate(String),
    /// A statement failed.
    #[error("database error: {0}")]
    Database(String),
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        StoreError::Backend(e.to_string())
    }
}

/// Map an sqlx error to the shared vocabulary.
///
/// - Data the database refuses (a NUL byte, a check or not-null
///   constraint, an over-long value, a malformed array or JSON): `InvalidInput`;
/// - a unique violation, serialization failure or deadlock: `Conflict`;
/// - everything else (connection, pool, protocol, decoding): `Backend`.
pub(crate) fn store_error(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(db) => {
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
                "23505" => StoreError::Conflict(message),
                "40001" | "40P01" => StoreError::Conflict(message),
                // integrity (not null, check, foreign key), data exceptions
                // (class 22: encoding, NUL, numeric range, string length,
                // malformed array/JSON) and program limits (index row size).
                c if c.starts_with("23") || c.starts_with("22") || c == "54000" => {
                    StoreError::invalid(field, message)
                }
                _ => StoreError::Backend(format!("postgres error {code}: {message}")),
            }
        }
        _ => StoreError::Backend(e.to_string()),
    }
}

/// A row the database returned that this crate cannot represent
/// (e.g. a classification written by hand that names no level).
pub(crate) fn corrupt(kind: &str, id: &str, what: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("corrupt {kind} row `{id}`: {what}"))
}
