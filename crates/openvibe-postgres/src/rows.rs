//! Reading rows: typed columns with their errors, column lists.

use openvibe_protocols::{Classification, RecordMeta, StoreError};

use crate::error::corrupt;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row, Type};

/// A count as `bigint`.
pub(crate) fn to_i64(field: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::invalid(field, format!("{value} exceeds {}", i64::MAX)))
}

/// Typed column access; a mismatch is a `Backend` error naming the column.
pub(crate) fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Postgres> + Type<Postgres>,
{
    row.try_get(name).map_err(|e| {
        StoreError::backend_from(format!("cannot read column `{name}`: {e}"), false, e)
    })
}

/// A `bigint` count column as `u64`.
pub(crate) fn count_col(row: &PgRow, name: &str) -> Result<u64, StoreError> {
    let v: i64 = col(row, name)?;
    u64::try_from(v)
        .map_err(|_| StoreError::backend(format!("column `{name}` holds a negative count {v}")))
}

/// The column list `a` + each of `cols`, comma-separated.
pub(crate) fn columns(cols: &[&str], a: &str) -> String {
    cols.iter()
        .map(|c| format!("{a}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn parse_classification(
    kind: &str,
    id: &str,
    value: &str,
) -> Result<Classification, StoreError> {
    value.parse().map_err(|e| corrupt(kind, id, e))
}

/// The governance columns every record table has (`expires_at` only
/// those of the kinds that expire).
pub(crate) fn decode_meta(kind: &str, id: &str, row: &PgRow) -> Result<RecordMeta, StoreError> {
    let classification: String = col(row, "classification")?;
    Ok(RecordMeta {
        tenant_id: col(row, "tenant_id")?,
        namespace: col(row, "namespace")?,
        project_id: col(row, "project_id")?,
        owner: col(row, "owner")?,
        classification: parse_classification(kind, id, &classification)?,
        source: col(row, "source")?,
        created_at: col(row, "created_at")?,
        updated_at: col(row, "updated_at")?,
        // Only the kinds that expire have the column.
        expires_at: match row.try_get::<Option<chrono::DateTime<chrono::Utc>>, _>("expires_at") {
            Err(sqlx::Error::ColumnNotFound(_)) => None,
            _ => col(row, "expires_at")?,
        },
    })
}
