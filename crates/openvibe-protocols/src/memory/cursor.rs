//! Page cursors: the opaque position a keyset-paged list continues after,
//! the same on every backend.

use chrono::{DateTime, Utc};

use super::StoreError;

/// The cursor of a page that ends with an item created at `created_at`
/// with id `id` (opaque to callers; the same on every backend).
pub fn page_cursor(created_at: DateTime<Utc>, id: &str) -> String {
    format!("{}|{id}", created_at.timestamp_micros())
}

/// The position a cursor names: `(created_at in microseconds, id)`.
pub fn parse_cursor(cursor: &str) -> Result<(i64, String), StoreError> {
    let bad = || StoreError::invalid("cursor", "not a cursor returned by a list call");
    let (micros, id) = cursor.split_once('|').ok_or_else(bad)?;
    let micros = micros.parse::<i64>().map_err(|_| bad())?;
    // No record is older than the oldest time PostgreSQL holds: a cursor
    // before it is the same position as one at it.
    Ok((micros.max(MIN_CURSOR_MICROS), id.to_owned()))
}

/// The oldest time a cursor or a retention's cutoff names, in microseconds
/// since the epoch: PostgreSQL's oldest timestamp (4714-11-24 BC, Julian
/// day 0).
pub const MIN_CURSOR_MICROS: i64 = -210_866_803_200_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let t = Utc::now();
        let c = page_cursor(t, "p|1");
        let (micros, id) = parse_cursor(&c).unwrap();
        assert_eq!(micros, t.timestamp_micros());
        assert_eq!(id, "p|1");
        assert!(parse_cursor("nope").is_err());
        assert!(parse_cursor("x|y").is_err());
        assert_eq!(
            parse_cursor("-982255039060711637|a").unwrap(),
            (MIN_CURSOR_MICROS, "a".to_owned())
        );
    }
}
