//! The raw log in the leak check: calls appended by random writers, read
//! by id and by page.

use openvibe_protocols::{
    CallerContext, Classification, RawCall, RawCallQuery, RecordMeta, StoreError,
};

use super::{Kept, Leak, LeakKind};
use crate::governance::draw::{DOMAINS, Rng, random_namespaces};

/// Raw calls: appended (the log is append-only: no changes), read by id
/// and by page in the search scope (recall when no namespace is named),
/// newest first.
pub(super) struct RawLeak;

/// A raw call is not a `KeptRecord`: its read rule, the contract's rule on
/// its metadata and domain, is written here.
impl Kept for RawCall {
    fn key(&self) -> &str {
        &self.id
    }
    fn record_meta(&self) -> &RecordMeta {
        &self.meta
    }
    fn readable(&self, reader: &CallerContext) -> bool {
        reader.can_read(&self.meta, &self.domain)
    }
}

impl LeakKind for RawLeak {
    const KIND: &'static str = "raw_call";
    const WRITES: usize = 80;
    const READS: usize = 1_000;
    const MIX: [usize; 3] = [40, 60, 0];

    type Record = RawCall;
    type Query = RawCallQuery;
    type State = ();

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> RawCall {
        let minute = i64::try_from(i).unwrap_or(i64::MAX);
        let mut call = crate::raw::raw(&format!("raw{i}"), "a0", minute, None);
        call.meta.namespace = ns.to_owned();
        call.meta.classification = *rng.pick(&Classification::ALL);
        call.domain = (*rng.pick(DOMAINS)).to_owned();
        call
    }

    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        call: RawCall,
    ) -> Result<RawCall, StoreError> {
        let mut written = cx.s.raw.append(writer, vec![call]).await?;
        Ok(written.remove(0))
    }

    async fn get(
        cx: &Leak<'_>,
        reader: &CallerContext,
        id: &str,
    ) -> Result<Option<RawCall>, StoreError> {
        cx.s.raw.get(reader, id).await
    }

    fn random_query(rng: &mut Rng) -> RawCallQuery {
        let mut query = RawCallQuery {
            limit: 1 + rng.below(30),
            ..RawCallQuery::default()
        };
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &RawCallQuery,
    ) -> Result<Vec<RawCall>, StoreError> {
        Ok(cx.s.raw.query(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &RawCallQuery, call: &RawCall) -> bool {
        reader
            .search_scope(&query.namespaces)
            .contains(&call.meta.namespace)
    }

    fn limit(query: &RawCallQuery) -> usize {
        query.limit
    }

    /// Newest first, ids ascending among equals (the raw log's order).
    fn order(calls: &mut [&RawCall]) {
        calls.sort_by(|a, b| (b.timestamp, &a.id).cmp(&(a.timestamp, &b.id)));
    }
}
