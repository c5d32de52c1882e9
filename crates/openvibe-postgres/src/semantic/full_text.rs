//! The full-text list of a knowledge query: candidates from the postings
//! table (`knowledge_postings`, one row per record and term, kept by a
//! trigger: migration 0012), scored in Rust by the shared BM25 and query
//! expansion with the tenant's corpus statistics, exactly as in memory.
//!
//! A candidate is known by the postings of the query's terms only: BM25
//! needs no other term of it. The expansion reads the whole term lists of
//! the first round's best [`Expansion::pool`](openvibe_retrieval::Expansion)
//! documents, by primary key.

use foldhash::HashMap;
use std::cmp::Reverse;

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;

use openvibe_protocols::{CallerContext, KnowledgeFilter, StoreError};
use openvibe_retrieval::{
    Bm25Doc, CorpusStats, EXPANSION, RankKey, TermCounts, bm25_rank, bm25_rank_weighted, rank_key,
};

use crate::access::{push_knowledge_filters, push_knowledge_readable};
use crate::error::store_error;
use crate::rows::{col, columns};
use crate::sql::Sql;
use crate::tx::Tx;

/// The `reader` of a public record's postings (migration 0015); a private
/// record's is its owner's key.
const PUBLIC_READER: &str = "*";

/// The full-text list: BM25 over the readable knowledge the query's
/// filters keep, with the query expanded by pseudo-relevance feedback
/// ([`EXPANSION`]); the best `limit`, as the in-memory backend ranks them.
/// `first_done` is told (or dropped) once the first round is answered.
pub(super) async fn full_text(
    tx: &mut Tx,
    ctx: &CallerContext,
    filter: &KnowledgeFilter,
    terms: &[String],
    limit: usize,
    first_done: Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<Vec<(RankKey, f32)>, StoreError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut candidates = Postings::default();
    // The first round brings the corpus statistics along (one round trip
    // fewer); without a candidate there is nothing to rank.
    let first = candidates.read(tx, ctx, filter, terms, 0, true).await;
    if let Some(done) = first_done {
        // The waiter may have gone (its query failed): nothing to tell.
        let _ = done.send(());
    }
    let Some(stats) = first? else {
        return Ok(Vec::new());
    };
    // Ranked by borrowed keys: only the best ids are copied.
    let best = bm25_rank(terms, stats, candidates.keyed(), EXPANSION.pool);
    let ids = best.iter().map(|((_, id), _)| (*id).to_owned()).collect();
    let lists = term_lists(tx, ctx, ids).await?;
    let best: Vec<&TermCounts> = best
        .iter()
        .filter_map(|((_, id), _)| lists.get(*id))
        .collect();
    let added = EXPANSION.select_from(terms, &best);
    let weighted = EXPANSION.weighted(terms, &added);
    if !added.is_empty() {
        candidates
            .read(tx, ctx, filter, &added, terms.len(), false)
            .await?;
    }
    let ranked = bm25_rank_weighted(&weighted, stats, candidates.keyed(), limit);
    Ok(ranked
        .into_iter()
        .map(|((Reverse(created), id), score)| (rank_key(created, id), score))
        .collect())
}

/// A candidate: when it was created, its length, and the counts of the
/// terms read for it so far, each by the term's place in the expanded
/// query ([`Expansion::weighted`](openvibe_retrieval::Expansion::weighted):
/// the query's terms, then the added ones).
struct Candidate {
    created: DateTime<Utc>,
    len: u32,
    tfs: Vec<(usize, u32)>,
}

impl Bm25Doc for Candidate {
    fn length(&self) -> u32 {
        self.len
    }

    fn tf(&self, i: usize, _: &str) -> u32 {
        self.tfs
            .iter()
            .find(|(at, _)| *at == i)
            .map_or(0, |(_, tf)| *tf)
    }
}

/// Candidates by id.
#[derive(Default)]
struct Postings {
    docs: HashMap<String, Candidate>,
}

impl Postings {
    /// Every candidate with its rank key ([`RankKey`], the id borrowed).
    fn keyed(&self) -> impl Iterator<Item = ((Reverse<DateTime<Utc>>, &str), &Candidate)> {
        self.docs
            .iter()
            .map(|(id, doc)| ((Reverse(doc.created), id.as_str()), doc))
    }

    /// Add the postings of `terms` (the expanded query's terms from place
    /// `first` on) in the readable knowledge the query's filters keep:
    /// every such record holding one of them becomes (or stays) a
    /// candidate, with those terms' counts. With `stats`, the statement
    /// also reads the tenant's corpus statistics for BM25 (aggregate counts
    /// of every row of the tenant, as in memory), returned when a posting
    /// came.
    async fn read(
        &mut self,
        tx: &mut Tx,
        ctx: &CallerContext,
        filter: &KnowledgeFilter,
        terms: &[String],
        first: usize,
        stats: bool,
    ) -> Result<Option<CorpusStats>, StoreError> {
        // The read rule and the filters are written on alias `f.`: the
        // postings carry the rule's columns (so alone they are `f`); the
        // filters need the record (then it is `f`, joined to postings `p`).
        let (from, a) = if filter.narrows() {
            (
                "knowledge_postings p JOIN knowledge f \
                 ON f.tenant_id = p.tenant_id AND f.id = p.id",
                "p.",
            )
        } else {
            ("knowledge_postings f", "f.")
        };
        let cols = columns(&["id", "created_at", "len", "term", "tf"], a);
        // One row of arrays, not a row per posting: the client decodes a
        // few hundred postings per round, and a row costs far more to
        // receive and read than an array element.
        let arrays = "array_agg(x.id) AS ids, array_agg(x.created_at) AS ats, \
                      array_agg(x.len) AS lens, array_agg(x.term) AS terms, \
                      array_agg(x.tf) AS tfs";
        let mut sql = if stats {
            let mut sql = Sql::new(
                "WITH s AS (SELECT coalesce(sum(docs), 0)::int8 AS docs, \
                 coalesce(sum(total_len), 0)::int8 AS total_len FROM knowledge_text_stats \
                 WHERE tenant_id = ",
            );
            sql.bind(ctx.tenant_id().to_owned()).push(&format!(
                ") SELECT (SELECT docs FROM s) AS docs, (SELECT total_len FROM s) AS total_len, \
                 {arrays} FROM (SELECT {cols} FROM {from} WHERE {a}tenant_id = "
            ));
            sql
        } else {
            Sql::new(&format!(
                "SELECT {arrays} FROM (SELECT {cols} FROM {from} WHERE {a}tenant_id = "
            ))
        };
        // The postings are keyed by who may read them (migration 0015):
        // the caller's own and the public ones are index ranges; the read
        // rule below still decides.
        sql.bind(ctx.tenant_id().to_owned())
            .push(&format!(" AND {a}term = ANY("))
            .bind(terms.to_vec())
            .push(&format!("::text[]) AND {a}reader = ANY("))
            .bind(vec![ctx.owner_key(), PUBLIC_READER.to_owned()])
            .push("::text[]) AND ");
        push_knowledge_readable(&mut sql, ctx, filter.include_public);
        push_knowledge_filters(&mut sql, filter);
        sql.push(") x");
        let row = sql
            .build()?
            .fetch_one(&mut **tx)
            .await
            .map_err(store_error)?;
        // No posting: the aggregates are null.
        let Some(ids) = Elements::of(&row, "ids", Elements::TEXT)? else {
            return Ok(None);
        };
        let column = |name, oid| -> Result<Elements, StoreError> {
            Elements::of(&row, name, oid)?
                .ok_or_else(|| StoreError::backend(format!("column `{name}` came back null")))
        };
        let posted = column("terms", Elements::TEXT)?;
        let ats = column("ats", Elements::TIMESTAMPTZ)?;
        let lens = column("lens", Elements::INT4)?;
        let tfs = column("tfs", Elements::INT4)?;
        let n = ids.len;
        if [posted.len, ats.len, lens.len, tfs.len] != [n; 4] {
            return Err(StoreError::backend(
                "the postings' columns came back of different lengths",
            ));
        }
        let postings = ids.zip(posted).zip(ats).zip(lens).zip(tfs);
        for ((((id, term), created), len), tf) in postings {
            let term = term?;
            let Some(at) = terms.iter().position(|t| t.as_bytes() == term) else {
                return Err(StoreError::backend(
                    "a posting came back for a term not asked",
                ));
            };
            let tf = (first + at, Elements::count(tf?)?);
            let id = Elements::text(id?)?;
            match self.docs.get_mut(id) {
                Some(doc) => doc.tfs.push(tf),
                None => {
                    let doc = Candidate {
                        created: Elements::timestamp(created?)?,
                        len: Elements::count(len?)?,
                        tfs: vec![tf],
                    };
                    self.docs.insert(id.to_owned(), doc);
                }
            }
        }
        if !stats {
            return Ok(None);
        }
        let docs: i64 = col(&row, "docs")?;
        let total_len: i64 = col(&row, "total_len")?;
        Ok(Some(CorpusStats {
            docs: u64::try_from(docs).unwrap_or(0),
            total_len: u64::try_from(total_len).unwrap_or(0),
        }))
    }
}

/// The elements of a one-dimensional array column in PostgreSQL's binary
/// format, read in place: a round's postings are ~1,000 elements per
/// column, and decoding each into an owned value (a `String` per id and
/// term) cost the client more than the rest of the round's work.
#[derive(Default)]
struct Elements<'r> {
    rest: &'r [u8],
    len: usize,
}

impl<'r> Elements<'r> {
    const TEXT: u32 = 25;
    const INT4: u32 = 23;
    const TIMESTAMPTZ: u32 = 1184;

    /// Column `name` of `row`, an array of elements of type `oid`; `None`
    /// when it is null.
    fn of(row: &'r PgRow, name: &str, oid: u32) -> Result<Option<Self>, StoreError> {
        let bad = |why: &str| StoreError::backend(format!("cannot read column `{name}`: {why}"));
        let value = row.try_get_raw(name).map_err(|e| {
            StoreError::backend_from(format!("cannot read column `{name}`: {e}"), false, e)
        })?;
        if sqlx::ValueRef::is_null(&value) {
            return Ok(None);
        }
        if value.format() != sqlx::postgres::PgValueFormat::Binary {
            return Err(bad("not in binary format"));
        }
        let bytes = value.as_bytes().map_err(|e| {
            let message = format!("cannot read column `{name}`: {e}");
            StoreError::Backend {
                message,
                transient: false,
                source: Some(std::sync::Arc::from(e)),
            }
        })?;
        Self::parse(bytes, oid)
            .map(Some)
            .ok_or_else(|| bad("not a one-dimensional array of the expected type"))
    }

    /// The header: dimensions, null flag, element type, then (for one
    /// dimension) its length and lower bound.
    fn parse(bytes: &'r [u8], oid: u32) -> Option<Self> {
        let int = |at: usize| -> Option<i32> {
            Some(i32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        if u32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?) != oid {
            return None;
        }
        match int(0)? {
            // An empty array has no dimension.
            0 => Some(Self::default()),
            1 => Some(Self {
                len: usize::try_from(int(12)?).ok()?,
                rest: bytes.get(20..)?,
            }),
            _ => None,
        }
    }

    fn malformed() -> StoreError {
        StoreError::backend("an array came back malformed")
    }

    /// A `text` element (sent as its UTF-8).
    fn text(bytes: &[u8]) -> Result<&str, StoreError> {
        std::str::from_utf8(bytes).map_err(|_| Self::malformed())
    }

    /// An `int4` element as a count (a negative one as 0).
    fn count(bytes: &[u8]) -> Result<u32, StoreError> {
        let int = i32::from_be_bytes(bytes.try_into().map_err(|_| Self::malformed())?);
        Ok(u32::try_from(int).unwrap_or(0))
    }

    /// A `timestamptz` element: microseconds since 2000-01-01 UTC.
    fn timestamp(bytes: &[u8]) -> Result<DateTime<Utc>, StoreError> {
        const EPOCH_2000_US: i64 = 946_684_800_000_000;
        let micros = i64::from_be_bytes(bytes.try_into().map_err(|_| Self::malformed())?);
        micros
            .checked_add(EPOCH_2000_US)
            .and_then(DateTime::from_timestamp_micros)
            .ok_or_else(Self::malformed)
    }
}

impl<'r> Iterator for Elements<'r> {
    /// An element's bytes; an error for a null element or a truncated
    /// array.
    type Item = Result<&'r [u8], StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let element = (|| {
            let size = i32::from_be_bytes(self.rest.get(..4)?.try_into().ok()?);
            let size = usize::try_from(size).ok()?;
            let element = self.rest.get(4..4 + size)?;
            self.rest = &self.rest[4 + size..];
            Some(element)
        })();
        Some(element.ok_or_else(Self::malformed))
    }
}

/// The whole analyzed text of the records `ids` (readable: they were just
/// found through their postings), by id.
async fn term_lists(
    tx: &mut Tx,
    ctx: &CallerContext,
    ids: Vec<String>,
) -> Result<HashMap<String, TermCounts>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::default());
    }
    let mut sql = Sql::new(
        "SELECT f.id, f.terms, f.term_counts, f.term_total FROM knowledge f WHERE f.tenant_id = ",
    );
    sql.bind(ctx.tenant_id().to_owned())
        .push(" AND f.id = ANY(")
        .bind(ids)
        .push("::text[])");
    let rows = sql
        .build()?
        .fetch_all(&mut **tx)
        .await
        .map_err(store_error)?;
    rows.iter()
        .map(|row| {
            let counts: Vec<i32> = col(row, "term_counts")?;
            let total: i32 = col(row, "term_total")?;
            let text = TermCounts {
                terms: col(row, "terms")?,
                tfs: counts
                    .into_iter()
                    .map(|c| u32::try_from(c).unwrap_or(0))
                    .collect(),
                len: u32::try_from(total).unwrap_or(0),
            };
            Ok((col(row, "id")?, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, TimeZone, Utc};

    use super::Elements;

    /// PostgreSQL's binary form of a one-dimensional array of elements of
    /// type `oid` (`None`: a null element).
    fn array(oid: u32, elements: &[Option<&[u8]>]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let nulls = i32::from(elements.iter().any(Option::is_none));
        for int in [1, nulls, oid as i32, elements.len() as i32, 1] {
            bytes.extend(int.to_be_bytes());
        }
        for element in elements {
            match element {
                Some(element) => {
                    bytes.extend((element.len() as i32).to_be_bytes());
                    bytes.extend(*element);
                }
                None => bytes.extend((-1i32).to_be_bytes()),
            }
        }
        bytes
    }

    fn texts(elements: &[Option<&str>]) -> Vec<u8> {
        let elements: Vec<Option<&[u8]>> = elements.iter().map(|e| e.map(str::as_bytes)).collect();
        array(Elements::TEXT, &elements)
    }

    /// Every element read as text (errors as their message).
    fn read(bytes: &[u8]) -> Option<Vec<Result<&str, String>>> {
        let array = Elements::parse(bytes, Elements::TEXT)?;
        Some(
            array
                .map(|e| e.and_then(Elements::text).map_err(|e| e.to_string()))
                .collect(),
        )
    }

    #[test]
    fn elements_are_read_in_place_in_order() {
        let bytes = texts(&[Some("k-1"), Some(""), Some("é日本"), Some("k-1")]);
        let elements = Elements::parse(&bytes, Elements::TEXT).unwrap();
        assert_eq!(elements.len, 4);
        let read: Vec<&str> = elements
            .map(|e| Elements::text(e.unwrap()).unwrap())
            .collect();
        assert_eq!(read, ["k-1", "", "é日本", "k-1"]);

        let ints: Vec<[u8; 4]> = [7i32, 0, -3].map(i32::to_be_bytes).to_vec();
        let ints: Vec<Option<&[u8]>> = ints.iter().map(|i| Some(&i[..])).collect();
        let bytes = array(Elements::INT4, &ints);
        let counts: Vec<u32> = Elements::parse(&bytes, Elements::INT4)
            .unwrap()
            .map(|e| Elements::count(e.unwrap()).unwrap())
            .collect();
        assert_eq!(counts, [7, 0, 0]);

        // 2023-05-08 13:56:00.123456 UTC, as PostgreSQL sends it.
        let at = Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap()
            + chrono::Duration::microseconds(123_456);
        let since_2000 = at.timestamp_micros() - 946_684_800_000_000;
        let bytes = array(Elements::TIMESTAMPTZ, &[Some(&since_2000.to_be_bytes())]);
        let mut read = Elements::parse(&bytes, Elements::TIMESTAMPTZ).unwrap();
        assert_eq!(
            Elements::timestamp(read.next().unwrap().unwrap()).unwrap(),
            at
        );
        assert_eq!(
            Elements::timestamp(&0i64.to_be_bytes()).unwrap(),
            DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z").unwrap()
        );
    }

    #[test]
    fn an_empty_array_has_no_dimension_and_no_element() {
        let bytes: Vec<u8> = [0i32, 0, 25].iter().flat_map(|i| i.to_be_bytes()).collect();
        assert_eq!(read(&bytes), Some(vec![]));
    }

    #[test]
    fn malformed_arrays_are_errors_not_panics() {
        // Two dimensions; another element type; a header cut short.
        let two: Vec<u8> = [2i32, 0, 25, 1, 1, 1, 1]
            .iter()
            .flat_map(|i| i.to_be_bytes())
            .collect();
        assert!(read(&two).is_none());
        assert!(Elements::parse(&texts(&[Some("a")]), Elements::INT4).is_none());
        let one = texts(&[Some("a")]);
        assert!(read(&one[..10]).is_none());
        // A null element, an element cut short, a length beyond the data.
        let with_null = texts(&[Some("a"), None]);
        let null = read(&with_null).unwrap();
        assert!(null[0].is_ok() && null[1].is_err());
        let whole = texts(&[Some("abcdef")]);
        assert!(read(&whole[..whole.len() - 2]).unwrap()[0].is_err());
        let mut long = texts(&[Some("a")]);
        long[12..16].copy_from_slice(&3i32.to_be_bytes());
        let elements = read(&long).unwrap();
        assert_eq!(elements.len(), 3);
        assert!(elements[0].is_ok() && elements[1].is_err());
        // Bytes that are not UTF-8; numbers of the wrong width; a time
        // beyond chrono's range.
        let mut latin = texts(&[Some("ab")]);
        let last = latin.len() - 1;
        latin[last] = 0xff;
        assert!(read(&latin).unwrap()[0].is_err());
        assert!(Elements::count(&[0, 1]).is_err());
        assert!(Elements::timestamp(&[0; 4]).is_err());
        assert!(Elements::timestamp(&i64::MAX.to_be_bytes()).is_err());
    }
}
