//! Inbox events in the leak check: pushed for random roles by random
//! callers, read by id and by page.

use openvibe_protocols::{
    CallerContext, Classification, DecisionEvent, EventSource, INBOX_KIND, InboxEvent, InboxQuery,
    InboxStatus, StoreError,
};

use super::{Leak, LeakKind};
use crate::governance::draw::{DOMAINS, Rng, random_namespaces};

/// Inbox events: pages filtered by namespace, role and status, newest
/// first.
pub(super) struct InboxLeak;

impl LeakKind for InboxLeak {
    const KIND: &'static str = INBOX_KIND;
    const WRITES: usize = 80;
    const READS: usize = 600;
    const MIX: [usize; 3] = [40, 60, 0];

    type Record = InboxEvent;
    type Query = InboxQuery;
    type State = ();

    fn random_record(rng: &mut Rng, i: usize, ns: &str) -> InboxEvent {
        let event = DecisionEvent::new(format!("e{i}"), "lead.arrived", *rng.pick(DOMAINS))
            .summary(format!("event {i}"));
        let mut e = InboxEvent::new(format!("role{}", rng.below(2)), event, EventSource::Http)
            .namespace(ns);
        e.meta.classification = *rng.pick(&Classification::ALL);
        e
    }

    async fn write(
        cx: &Leak<'_>,
        writer: &CallerContext,
        e: InboxEvent,
    ) -> Result<InboxEvent, StoreError> {
        cx.s.inbox.push(writer, e).await
    }

    async fn get(
        cx: &Leak<'_>,
        reader: &CallerContext,
        id: &str,
    ) -> Result<Option<InboxEvent>, StoreError> {
        cx.s.inbox.get(reader, id).await
    }

    fn random_query(rng: &mut Rng) -> InboxQuery {
        let mut query = InboxQuery::new().limit(1 + rng.below(30));
        if rng.chance(40) {
            query.namespaces = random_namespaces(rng);
        }
        if rng.chance(30) {
            query.role_id = Some(format!("role{}", rng.below(2)));
        }
        if rng.chance(20) {
            query.status = Some(InboxStatus::Pending);
        }
        query
    }

    async fn page(
        cx: &Leak<'_>,
        reader: &CallerContext,
        query: &InboxQuery,
    ) -> Result<Vec<InboxEvent>, StoreError> {
        Ok(cx.s.inbox.list(reader, query).await?.items)
    }

    fn selects(reader: &CallerContext, query: &InboxQuery, e: &InboxEvent) -> bool {
        reader
            .list_scope(&query.namespaces)
            .contains(&e.meta.namespace)
            && query.matches(e)
    }

    fn limit(query: &InboxQuery) -> usize {
        query.limit
    }
}
