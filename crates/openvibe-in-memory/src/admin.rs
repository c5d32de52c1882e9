//! Namespace administration of the in-memory stores ([`InMemoryAdmin`])
//! and snapshot files ([`MemorySnapshot`]): what the CLI's `namespaces`
//! commands use with `--memory-file`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::governed::{Maintained, Pass, Swept, counts};
use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, CallerContext, Episode, Fact, Insight, KnowledgeStore, NamespaceAdmin, NamespaceCount,
    RECORD_KINDS, RecordMeta, RecordVector, RecordVectors, StoreError, Stores, VectorStatus,
    store_time,
};
use openvibe_protocols::{
    DERIVED_KINDS, ERASURE_KINDS, ErasureCount, ErasureSubject, Sweep, check_erasure,
};
use openvibe_protocols::{
    EMBEDDED_KINDS, KindVectors, check_admin, check_caller, check_vector_admin,
    check_vector_lookup, cleanup_scope, no_embedder,
};

use crate::audit::InMemoryAuditLog;
use crate::beliefs::InMemoryBeliefStore;
use crate::goals::InMemoryGoalStore;
use crate::inbox::InMemoryInboxStore;
use crate::proposals::InMemoryProposalStore;
use crate::raw::InMemoryRawLog;
use crate::records::{InMemoryEpisodicStore, InMemoryFactStore, InMemoryInsightStore};
use crate::spaces::InMemorySpaceStore;
use crate::span::{store_span, store_span_of};
use crate::vectors::VectorTable;
use crate::working::InMemoryWorkingStore;
use tracing::Instrument;

/// `record` serialised, without its governance fields and id.
fn content_of<T: serde::Serialize>(record: &T) -> serde_json::Value {
    openvibe_protocols::record_content(serde_json::to_value(record).unwrap_or_default())
}

impl InMemoryAdmin {
    /// Fresh stores sharing one audit trail, `working` among them.
    /// Facts, insights and episodes get vectors (on write, and through
    /// [`RecordVectors`]) when `working` has an embedder.
    pub(crate) fn over(working: InMemoryWorkingStore) -> Self {
        let audit = Arc::new(InMemoryAuditLog::new());
        let vectors = working
            .embedder
            .clone()
            .map(|e| Arc::new(VectorTable::new(e)));
        let mut facts = InMemoryFactStore::new().with_audit(audit.clone());
        facts.set_vectors(vectors.clone());
        let mut episodes = InMemoryEpisodicStore::new().with_audit(audit.clone());
        episodes.set_vectors(vectors.clone());
        let mut insights = InMemoryInsightStore::new().with_audit(audit.clone());
        insights.set_vectors(vectors.clone());
        Self {
            facts: Arc::new(facts),
            episodes: Arc::new(episodes),
            insights: Arc::new(insights),
            working: Arc::new(working.with_audit(audit.clone())),
            raw: Arc::new(InMemoryRawLog::new().with_audit(audit.clone())),
            proposals: Arc::new(InMemoryProposalStore::new().with_audit(audit.clone())),
            goals: Arc::new(InMemoryGoalStore::new().with_audit(audit.clone())),
            beliefs: Arc::new(InMemoryBeliefStore::new().with_audit(audit.clone())),
            spaces: Arc::new(InMemorySpaceStore::new().with_audit(audit.clone())),
            inbox: Arc::new(InMemoryInboxStore::new().with_audit(audit.clone())),
            audit,
            vectors,
        }
    }

    /// Fresh stores without an embedder.
    fn fresh() -> Self {
        Self::over(InMemoryWorkingStore::new())
    }

    /// The set of stores, administered by this.
    pub(crate) fn into_stores(self) -> Stores {
        let admin = Arc::new(self);
        Stores {
            facts: admin.facts.clone(),
            episodes: admin.episodes.clone(),
            insights: admin.insights.clone(),
            working: admin.working.clone(),
            knowledge: admin.working.clone(),
            raw: admin.raw.clone(),
            audit: admin.audit.clone(),
            vectors: admin.clone(),
            proposals: admin.proposals.clone(),
            goals: admin.goals.clone(),
            beliefs: admin.beliefs.clone(),
            spaces: admin.spaces.clone(),
            inbox: admin.inbox.clone(),
            admin,
        }
    }
}

/// [`NamespaceAdmin`] over one set of in-memory stores.
pub struct InMemoryAdmin {
    facts: Arc<InMemoryFactStore>,
    episodes: Arc<InMemoryEpisodicStore>,
    insights: Arc<InMemoryInsightStore>,
    working: Arc<InMemoryWorkingStore>,
    raw: Arc<InMemoryRawLog>,
    proposals: Arc<InMemoryProposalStore>,
    goals: Arc<InMemoryGoalStore>,
    beliefs: Arc<InMemoryBeliefStore>,
    spaces: Arc<InMemorySpaceStore>,
    inbox: Arc<InMemoryInboxStore>,
    audit: Arc<InMemoryAuditLog>,
    vectors: Option<Arc<VectorTable>>,
}

#[async_trait]
impl RecordVectors for InMemoryAdmin {
    async fn vectors(
        &self,
        ctx: &CallerContext,
        model: &str,
        kind: &str,
        ids: &[String],
    ) -> Result<Vec<RecordVector>, StoreError> {
        check_vector_lookup(kind, ids)?;
        check_caller(ctx)?;
        if self.vectors.as_ref().is_none_or(|t| t.model() != model) {
            return Ok(Vec::new());
        }
        async {
            match kind {
                "fact" => self.facts.current_vectors(ctx, ids),
                "insight" => self.insights.current_vectors(ctx, ids),
                "episode" => self.episodes.current_vectors(ctx, ids),
                _ => {
                    // Knowledge keeps its vector inside the record.
                    let mut out = Vec::new();
                    for id in ids {
                        if let Some(k) = self.working.get_knowledge(ctx, id).await? {
                            out.push(RecordVector {
                                id: k.id,
                                vector: k.embedding,
                            });
                        }
                    }
                    Ok(out)
                }
            }
        }
        .instrument(store_span_of("vector", "vectors", ctx))
        .await
    }

    async fn vector_status(&self, ctx: &CallerContext) -> Result<VectorStatus, StoreError> {
        let _span = store_span("vector", "status", ctx);
        check_vector_admin(ctx, "read the vector status", None)?;
        let counts = [
            self.facts.vector_counts(ctx)?,
            self.insights.vector_counts(ctx)?,
            self.episodes.vector_counts(ctx)?,
            {
                let n = self.working.knowledge_count(ctx.tenant_id())?;
                (n, n)
            },
        ];
        Ok(VectorStatus {
            model: self.vectors.as_ref().map(|t| t.model().to_owned()),
            kinds: EMBEDDED_KINDS
                .iter()
                .zip(counts)
                .map(|(kind, (embedded, all))| KindVectors {
                    kind: (*kind).to_owned(),
                    embedded,
                    pending: all - embedded,
                })
                .collect(),
        })
    }

    async fn embed_pending(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        check_vector_admin(ctx, "embed pending records", Some(batch))?;
        let table = self.vectors.as_ref().ok_or_else(no_embedder)?;
        let mut pending = self.facts.pending_vectors(ctx, batch)?;
        pending.extend(self.insights.pending_vectors(ctx, batch - pending.len())?);
        pending.extend(self.episodes.pending_vectors(ctx, batch - pending.len())?);
        if pending.is_empty() {
            return Ok(0);
        }
        table
            .embed(ctx.tenant_id(), pending)
            .instrument(store_span_of("vector", "embed_pending", ctx))
            .await
    }
}

impl InMemoryAdmin {
    /// Every store, as maintenance sees it.
    fn keepers(&self) -> [&dyn Maintained; 10] {
        [
            &*self.raw,
            &*self.facts,
            &*self.episodes,
            &*self.insights,
            &*self.working,
            &*self.proposals,
            &*self.goals,
            &*self.beliefs,
            &*self.spaces,
            &*self.inbox,
        ]
    }

    /// The store that keeps `kind` (a row of the registry).
    fn keeper(&self, kind: &str) -> Result<&dyn Maintained, StoreError> {
        self.keepers()
            .into_iter()
            .find(|k| k.keeps(kind))
            .ok_or_else(|| StoreError::invalid("kind", format!("`{kind}` is not a record kind")))
    }

    /// One pass of `sweep` over every kind, in the order of
    /// [`ERASURE_KINDS`]: the records it takes counted, or at most a
    /// batch deleted (each kind's derived data with it); how many per kind.
    /// The cleanup of expired records and an erasure both run through it.
    async fn sweep(
        &self,
        ctx: &CallerContext,
        sweep: &Sweep,
        pass: Pass,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        let mut out = Vec::new();
        let mut left = pass.limit();
        // The raw calls behind an episode about the subject go with it
        // (first: a run stopped after the episodes went would orphan them).
        let episodes: HashSet<String> = match sweep {
            Sweep::Subject(_) => self
                .episodes
                .sweep_ids(ctx, sweep, &|_| false, Pass::Count)?
                .into_iter()
                .collect(),
            Sweep::Expired { .. } => HashSet::new(),
        };
        let swept = Swept {
            sweep,
            episodes: &episodes,
        };
        for kind in ERASURE_KINDS {
            if left == 0 {
                break;
            }
            let this = match pass {
                Pass::Count => Pass::Count,
                Pass::Delete(_) => Pass::Delete(left),
            };
            let n = self.keeper(kind)?.sweep(ctx, kind, &swept, this).await?;
            if let Pass::Delete(_) = pass {
                left = left.saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
            }
            out.push(ErasureCount {
                kind: kind.to_owned(),
                records: n,
            });
        }
        Ok(out)
    }
}

#[async_trait]
impl NamespaceAdmin for InMemoryAdmin {
    async fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError> {
        let _span = crate::span::store_span("namespace", "namespace_counts", ctx);
        check_admin(ctx, "count namespaces", None)?;
        let mut out = Vec::new();
        for kind in RECORD_KINDS {
            let counts = self.keeper(kind)?.counts(ctx, kind)?;
            out.extend(
                counts
                    .into_iter()
                    .map(|(namespace, records)| NamespaceCount {
                        kind: kind.to_owned(),
                        namespace,
                        records,
                    }),
            );
        }
        out.sort_by(|a, b| (&a.kind, &a.namespace).cmp(&(&b.kind, &b.namespace)));
        Ok(out)
    }

    async fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        let _span = crate::span::store_span("namespace", "move_namespace", ctx);
        check_admin(ctx, "move records between namespaces", Some(kind))?;
        openvibe_protocols::check_label("namespace", to)?;
        self.keeper(kind)?
            .move_namespace(ctx, kind, from, to, batch)
    }

    async fn delete_expired(&self, ctx: &CallerContext, batch: usize) -> Result<u64, StoreError> {
        let scope = match cleanup_scope(ctx, batch) {
            Ok(scope) => scope,
            Err(e) => {
                return self
                    .audit
                    .refusal(ctx, AuditOp::Delete, "expired", "", Err(e));
            }
        };
        let swept = self
            .sweep(ctx, &Sweep::expired(scope), Pass::Delete(batch))
            .instrument(store_span_of("expired", "delete_expired", ctx))
            .await?;
        Ok(swept.iter().map(|c| c.records).sum())
    }

    async fn erasure_counts(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        check_erasure(ctx, subject, None)?;
        let mut counts = self
            .sweep(ctx, &Sweep::Subject(subject.clone()), Pass::Count)
            .instrument(store_span_of("erasure", "erasure_counts", ctx))
            .await?;
        let (knowledge_vectors, postings) = self.working.orphan_knowledge_rows(ctx)?;
        let vectors = knowledge_vectors
            + self.facts.orphan_vectors(ctx)?
            + self.episodes.orphan_vectors(ctx)?
            + self.insights.orphan_vectors(ctx)?;
        for (kind, records) in DERIVED_KINDS.into_iter().zip([vectors, postings]) {
            counts.push(ErasureCount {
                kind: kind.to_owned(),
                records,
            });
        }
        Ok(counts)
    }

    async fn erase(
        &self,
        ctx: &CallerContext,
        subject: &ErasureSubject,
        batch: usize,
    ) -> Result<Vec<ErasureCount>, StoreError> {
        check_erasure(ctx, subject, Some(batch))?;
        let swept = self
            .sweep(ctx, &Sweep::Subject(subject.clone()), Pass::Delete(batch))
            .instrument(store_span_of("erasure", "erase", ctx))
            .await?;
        Ok(swept.into_iter().filter(|c| c.records > 0).collect())
    }
}

/// The records of in-memory stores as a file holds them (JSON): what the
/// CLI's namespace tools read with `--memory-file` and write back.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySnapshot {
    /// Facts.
    pub facts: Vec<Fact>,
    /// Episodes.
    pub episodes: Vec<Episode>,
    /// Insights.
    pub insights: Vec<Insight>,
}

impl MemorySnapshot {
    /// In-memory stores holding these records as they are (owners,
    /// namespaces, tenants and times kept), and a handle to take a
    /// snapshot of them again.
    pub fn into_stores(self) -> Result<(Stores, SnapshotHandle), StoreError> {
        self.restore_into(InMemoryAdmin::fresh())
    }

    /// [`MemorySnapshot::into_stores`] whose stores embed with `embedder`
    /// (facts, insights and episodes on write; the restored records wait
    /// for [`RecordVectors::embed_pending`]: a snapshot keeps no vectors).
    pub fn into_stores_with_embedder(
        self,
        embedder: Arc<dyn openvibe_protocols::Embedder>,
    ) -> Result<(Stores, SnapshotHandle), StoreError> {
        self.restore_into(InMemoryAdmin::over(
            InMemoryWorkingStore::new().with_embedder(embedder),
        ))
    }

    fn restore_into(self, admin: InMemoryAdmin) -> Result<(Stores, SnapshotHandle), StoreError> {
        admin.facts.restore(self.facts)?;
        admin.episodes.restore(self.episodes)?;
        admin.insights.restore(self.insights)?;
        let handle = SnapshotHandle {
            facts: admin.facts.clone(),
            episodes: admin.episodes.clone(),
            insights: admin.insights.clone(),
        };
        Ok((admin.into_stores(), handle))
    }
}

/// Takes [`MemorySnapshot`]s of the stores [`MemorySnapshot::into_stores`] made.
#[derive(Clone)]
pub struct SnapshotHandle {
    facts: Arc<InMemoryFactStore>,
    episodes: Arc<InMemoryEpisodicStore>,
    insights: Arc<InMemoryInsightStore>,
}

impl std::fmt::Debug for SnapshotHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotHandle").finish_non_exhaustive()
    }
}

impl SnapshotHandle {
    /// The records now.
    pub fn snapshot(&self) -> Result<MemorySnapshot, StoreError> {
        Ok(MemorySnapshot {
            facts: self.facts.all()?,
            episodes: self.episodes.all()?,
            insights: self.insights.all()?,
        })
    }
}

/// Namespace maintenance of the working and semantic records: sessions,
/// plans (with their context and state), task contexts and knowledge.
#[async_trait]
impl Maintained for InMemoryWorkingStore {
    fn keeps(&self, kind: &str) -> bool {
        WORKING_KINDS.contains(&kind)
    }

    fn counts(&self, ctx: &CallerContext, kind: &str) -> Result<BTreeMap<String, u64>, StoreError> {
        let guard = self.read()?;
        let Some(t) = guard.get(ctx.tenant_id()) else {
            return Ok(BTreeMap::new());
        };
        Ok(match kind {
            "session" => counts(t.sessions.values().map(|r| &r.meta)),
            "plan" => counts(t.plans.values().map(|r| &r.meta)),
            "task_context" => counts(t.tasks.values().map(|r| &r.meta)),
            _ => counts(t.knowledge.values().map(|r| &r.meta)),
        })
    }

    fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        self.relocate(ctx, kind, from, to, batch)
    }

    /// A plan is read (and goes) with its context and state.
    async fn sweep(
        &self,
        ctx: &CallerContext,
        kind: &str,
        swept: &Swept<'_>,
        pass: Pass,
    ) -> Result<u64, StoreError> {
        let ids = self.swept(ctx, kind, swept.sweep, pass.limit())?;
        if let Pass::Delete(_) = pass {
            if kind == "knowledge" {
                self.remove_knowledge(ctx, &ids)?;
            } else {
                // Chosen by the sweep, whose caller was checked before it
                // began: removed whoever owns them (issue 65).
                self.remove_working(ctx, kind, &ids)?;
            }
        }
        Ok(ids.len() as u64)
    }
}

/// The kinds the working store keeps.
const WORKING_KINDS: [&str; 4] = ["session", "plan", "task_context", "knowledge"];

impl InMemoryWorkingStore {
    /// The ids of the working or semantic records of `kind` (`knowledge`,
    /// `session`, `plan`, `task_context`) that `sweep` takes, at most
    /// `limit`. A plan is read with its context and state.
    pub(crate) fn swept(
        &self,
        ctx: &CallerContext,
        kind: &str,
        sweep: &Sweep,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        fn pick<'a, T: serde::Serialize + 'a>(
            ctx: &CallerContext,
            sweep: &Sweep,
            limit: usize,
            records: impl IntoIterator<Item = (&'a String, &'a T)>,
            meta: impl Fn(&T) -> &RecordMeta,
        ) -> Vec<String> {
            records
                .into_iter()
                .filter(|(_, r)| sweep.takes_record(ctx, meta(r), r))
                .map(|(id, _)| id.clone())
                .take(limit)
                .collect()
        }
        let guard = self.read()?;
        let Some(t) = guard.get(ctx.tenant_id()) else {
            return Ok(Vec::new());
        };
        Ok(match kind {
            "knowledge" => pick(ctx, sweep, limit, &t.knowledge, |k| &k.meta),
            "session" => pick(ctx, sweep, limit, &t.sessions, |s| &s.meta),
            "task_context" => pick(ctx, sweep, limit, &t.tasks, |k| &k.meta),
            _ => t
                .plans
                .iter()
                .filter(|(id, plan)| {
                    sweep.takes(ctx, &plan.meta, || {
                        serde_json::json!([
                            content_of(plan),
                            t.plan_contexts.get(*id).map(content_of),
                            t.state.get(*id),
                        ])
                    })
                })
                .map(|(id, _)| id.clone())
                .take(limit)
                .collect(),
        })
    }

    /// Delete the knowledge records `ids` of `ctx`'s tenant (audited as
    /// deletes) with their postings and vectors; how many went.
    pub(crate) fn remove_knowledge(
        &self,
        ctx: &CallerContext,
        ids: &[String],
    ) -> Result<u64, StoreError> {
        let mut guard = self.write()?;
        let Some(t) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let mut gone = 0;
        for id in ids {
            if let Some(k) = t.remove_knowledge(id) {
                self.audit_change(ctx, AuditOp::Delete, "knowledge", id, &k.meta);
                gone += 1;
            }
        }
        Ok(gone)
    }

    /// Delete the sessions, plans or task contexts `ids` of `ctx`'s tenant
    /// (audited as deletes by `ctx`) under one lock; how many went.
    pub(crate) fn remove_working(
        &self,
        ctx: &CallerContext,
        kind: &str,
        ids: &[String],
    ) -> Result<u64, StoreError> {
        let mut guard = self.write()?;
        let Some(t) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let gone = t.remove_swept(kind, ids);
        for (id, meta) in &gone {
            self.audit_change(ctx, AuditOp::Delete, kind, id, meta);
        }
        Ok(gone.len() as u64)
    }

    /// Full-text postings and vectors of `ctx`'s tenant whose knowledge
    /// record is gone.
    pub(crate) fn orphan_knowledge_rows(
        &self,
        ctx: &CallerContext,
    ) -> Result<(u64, u64), StoreError> {
        let guard = self.read()?;
        let Some(t) = guard.get(ctx.tenant_id()) else {
            return Ok((0, 0));
        };
        let orphan = |id: &str| !t.knowledge.contains_key(id);
        Ok((
            t.knowledge_vectors.ids().filter(|id| orphan(id)).count() as u64,
            t.knowledge_text.ids().filter(|id| orphan(id)).count() as u64,
        ))
    }

    /// Move at most `batch` records of `kind` from `from` to `to`.
    fn relocate(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        fn relocated<'a>(
            metas: impl Iterator<Item = (&'a String, &'a mut RecordMeta)>,
            from: &str,
            to: &str,
            batch: usize,
        ) -> Vec<(String, RecordMeta)> {
            let now = store_time();
            metas
                .filter(|(_, m)| m.namespace == from)
                .take(batch)
                .map(|(id, m)| {
                    m.namespace = to.to_owned();
                    m.updated_at = now;
                    (id.clone(), m.clone())
                })
                .collect()
        }
        let mut guard = self.write()?;
        let Some(t) = guard.get_mut(ctx.tenant_id()) else {
            return Ok(0);
        };
        let moved = match kind {
            "session" => relocated(
                t.sessions.iter_mut().map(|(k, r)| (k, &mut r.meta)),
                from,
                to,
                batch,
            ),
            "plan" => relocated(
                t.plans.iter_mut().map(|(k, r)| (k, &mut r.meta)),
                from,
                to,
                batch,
            ),
            "task_context" => relocated(
                t.tasks.iter_mut().map(|(k, r)| (k, &mut r.meta)),
                from,
                to,
                batch,
            ),
            "knowledge" => t.knowledge.with_each_mut(|all| {
                relocated(all.map(|(k, r)| (k, &mut r.meta)), from, to, batch)
            }),
            other => {
                return Err(StoreError::invalid(
                    "kind",
                    format!("`{other}` is not a record kind"),
                ));
            }
        };
        for (id, meta) in &moved {
            self.audit_change(ctx, AuditOp::Update, kind, id, meta);
        }
        Ok(moved.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_the_registry_has_one_store_that_keeps_it() {
        let admin = InMemoryAdmin::fresh();
        for kind in openvibe_protocols::KINDS {
            let keepers = admin
                .keepers()
                .iter()
                .filter(|k| k.keeps(kind.name))
                .count();
            assert_eq!(keepers, 1, "the stores that keep `{}`", kind.name);
        }
    }
}
