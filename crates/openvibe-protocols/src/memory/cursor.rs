//! Paging, written once for every kind listed a page at a time: the
//! opaque cursor a keyset-paged list continues after (the same on every
//! backend), a list query's checked limit ([`PageQuery`]) and where a
//! page that ends with a record continues ([`Listed`], for
//! [`Page::of`](super::Page::of)).

use chrono::{DateTime, Utc};

use super::StoreError;

/// A list query read a page at a time: its limit, checked once for every
/// kind (the service states the same bound in its document).
pub trait PageQuery {
    /// The most items one page holds.
    const MAX_PAGE: usize;

    /// The page size asked for.
    fn page_limit(&self) -> usize;

    /// The limit, checked: 1 to [`PageQuery::MAX_PAGE`].
    fn checked_limit(&self) -> Result<usize, StoreError> {
        check_limit(self.page_limit(), Self::MAX_PAGE)
    }
}

/// `limit`, when it is 1 to `max`.
pub fn check_limit(limit: usize, max: usize) -> Result<usize, StoreError> {
    if limit == 0 || limit > max {
        return Err(StoreError::invalid(
            "limit",
            format!("must be between 1 and {max}"),
        ));
    }
    Ok(limit)
}

/// A record listed a page at a time: where a page that ends with it
/// continues (its [`page_cursor`], or its id for lists in id order).
pub trait Listed {
    /// The cursor of a page that ends with this record.
    fn cursor(&self) -> String;
}

/// `Listed` for records whose cursor is their creation time and id.
macro_rules! listed_by_creation {
    ($($record:ty),* $(,)?) => {$(
        impl $crate::Listed for $record {
            fn cursor(&self) -> String {
                $crate::page_cursor(self.meta.created_at, &self.id)
            }
        }
    )*};
}
pub(crate) use listed_by_creation;

/// `PageQuery` for queries with a `limit` field bounded by a constant,
/// and their `limit` builder; with `cursor`, their `after` builder too (a
/// `cursor: Option<String>` field).
macro_rules! page_query {
    ($($query:ty => $max:expr $(, $cursor:ident)?);* $(;)?) => {$(
        impl $crate::PageQuery for $query {
            const MAX_PAGE: usize = $max;
            fn page_limit(&self) -> usize {
                self.limit
            }
        }

        impl $query {
            /// At most `limit` a page.
            #[must_use]
            pub fn limit(mut self, limit: usize) -> Self {
                self.limit = limit;
                self
            }

            $($crate::memory::page_query!(@$cursor);)?
        }
    )*};
    (@cursor) => {
        /// Continue after the page that returned `cursor`.
        #[must_use]
        pub fn after(mut self, cursor: impl Into<String>) -> Self {
            self.cursor = Some(cursor.into());
            self
        }
    };
}
pub(crate) use page_query;

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
