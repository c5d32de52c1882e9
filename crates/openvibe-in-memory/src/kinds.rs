//! How the in-memory index sees each record kind ([`Indexed`] for facts,
//! insights and episodes): ids, governance, the indexed columns, the order
//! and what a write derives.

use std::borrow::Cow;
use std::cmp::Reverse;

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    Episode, Fact, Insight, InsightStatus, RecordMeta, StoreError, content_hash, validate_episode,
    validate_fact, validate_insight,
};

use crate::index::{ConfidenceOrder, Indexed, Score, WalkBy};

/// The [`Indexed`] methods facts and insights share: both are ordered by
/// confidence, then recency, then id, and validated and tracked alike.
macro_rules! confidence_ordered {
    () => {
        fn id(&self) -> &str {
            &self.id
        }
        fn set_id(&mut self, id: String) {
            self.id = id;
        }
        fn meta(&self) -> &RecordMeta {
            &self.meta
        }
        fn meta_mut(&mut self) -> &mut RecordMeta {
            &mut self.meta
        }
        fn entity(&self) -> &str {
            &self.entity
        }
        fn domain(&self) -> &str {
            &self.domain
        }
        fn tags(&self) -> &[String] {
            &self.tags
        }
        fn search_text(&self) -> Cow<'_, str> {
            Cow::Borrowed(&self.content)
        }
        fn heap_fields(&self, visit: &mut dyn FnMut(&[u8])) {
            visit(self.id.as_bytes());
            visit(self.content.as_bytes());
            for tag in &self.tags {
                visit(tag.as_bytes());
            }
            if let Some(hash) = &self.content_hash {
                visit(hash.as_bytes());
            }
        }
        fn order_key(&self) -> ConfidenceOrder {
            (
                Reverse(Score(self.confidence)),
                Reverse(self.meta.created_at),
                self.id.clone(),
            )
        }
        fn confidence(&self) -> f64 {
            self.confidence
        }
        fn time(&self) -> DateTime<Utc> {
            self.meta.created_at
        }
        const WALK: WalkBy = WalkBy::Confidence;
        fn prepare_new(&mut self) {
            self.access_count = 0;
            self.last_accessed = None;
            self.content_hash = Some(content_hash(&self.content));
        }
        fn keep_from(&mut self, old: &Self) {
            self.access_count = old.access_count;
            self.last_accessed = old.last_accessed;
            self.content_hash = Some(content_hash(&self.content));
        }
        fn record_access(&mut self, now: DateTime<Utc>) {
            self.access_count = self.access_count.saturating_add(1);
            self.last_accessed = Some(now);
        }
    };
}

impl Indexed for Fact {
    const KIND: &'static str = "fact";
    type Order = ConfidenceOrder;

    confidence_ordered!();

    fn validate(&self) -> Result<(), StoreError> {
        validate_fact(self).map(drop)
    }
    fn agent_id(&self) -> Option<&str> {
        None
    }
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String)) {
        visit(&mut self.meta.tenant_id);
        visit(&mut self.meta.namespace);
        visit(&mut self.meta.owner);
        visit(&mut self.meta.source);
        visit(&mut self.entity);
        visit(&mut self.domain);
    }
}

impl Indexed for Insight {
    const KIND: &'static str = "insight";
    type Order = ConfidenceOrder;

    confidence_ordered!();

    fn validate(&self) -> Result<(), StoreError> {
        validate_insight(self).map(drop)
    }
    fn status(&self) -> Option<InsightStatus> {
        Some(self.status)
    }
    fn agent_id(&self) -> Option<&str> {
        Some(&self.agent_id)
    }
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String)) {
        visit(&mut self.meta.tenant_id);
        visit(&mut self.meta.namespace);
        visit(&mut self.meta.owner);
        visit(&mut self.meta.source);
        visit(&mut self.entity);
        visit(&mut self.domain);
        visit(&mut self.agent_id);
    }
}

impl Indexed for Episode {
    const KIND: &'static str = "episode";
    type Order = (Reverse<DateTime<Utc>>, String);

    fn id(&self) -> &str {
        &self.id
    }
    fn set_id(&mut self, id: String) {
        self.id = id;
    }
    fn meta(&self) -> &RecordMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut RecordMeta {
        &mut self.meta
    }
    fn entity(&self) -> &str {
        &self.entity
    }
    fn domain(&self) -> &str {
        &self.domain
    }
    fn tags(&self) -> &[String] {
        &self.tags
    }
    fn agent_id(&self) -> Option<&str> {
        Some(&self.agent_id)
    }
    fn search_text(&self) -> Cow<'_, str> {
        Cow::Owned(self.searchable_text())
    }
    fn order_key(&self) -> Self::Order {
        (Reverse(self.timestamp), self.id.clone())
    }
    fn confidence(&self) -> f64 {
        1.0
    }
    fn time(&self) -> DateTime<Utc> {
        self.timestamp
    }
    const WALK: WalkBy = WalkBy::Time;
    fn validate(&self) -> Result<(), StoreError> {
        validate_episode(self).map(drop)
    }
    fn prepare_new(&mut self) {
        self.content_hash = Some(content_hash(&self.searchable_text()));
    }
    fn keep_from(&mut self, _old: &Self) {
        self.content_hash = Some(content_hash(&self.searchable_text()));
    }
    fn record_access(&mut self, _now: DateTime<Utc>) {}
    fn shared_fields(&mut self, visit: &mut dyn FnMut(&mut String)) {
        visit(&mut self.meta.tenant_id);
        visit(&mut self.meta.namespace);
        visit(&mut self.meta.owner);
        visit(&mut self.meta.source);
        visit(&mut self.entity);
        visit(&mut self.domain);
        visit(&mut self.agent_id);
        visit(&mut self.operator_id);
        visit(&mut self.node_name);
        visit(&mut self.action);
    }
}
