//! Namespace administration of the in-memory stores ([`InMemoryAdmin`])
//! and snapshot files ([`MemorySnapshot`]): what the CLI's `namespaces`
//! commands use with `--memory-file`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::governed::Pass;
use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, BELIEF_KIND, CallerContext, Episode, Fact, GOAL_KIND, Insight, KnowledgeStore,
    MESSAGE_KIND, METRIC_KIND, NamespaceAdmin, NamespaceCount, PRIORITIES_KIND, RecordMeta,
    RecordVector, RecordVectors, SPACE_KIND, StoreError, Stores, VectorStatus, store_time,
};
use openvibe_protocols::{
    ContextStore, DERIVED_KINDS, ERASURE_KINDS, ErasureCount, ErasureSubject, PlanStore,
    SessionStore, Sweep, check_erasure,
};
use openvibe_protocols::{
    EMBEDDED_KINDS, KindVectors, check_admin, check_caller, check_vector_admin,
    check_vector_lookup, cleanup_scope, no_embedder,
};

use crate::audit::InMemoryAuditLog;
use crate::beliefs::InMemoryBeliefStore;
use crate::goals::InMemoryGoalStore;
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

/// `counts` of `kind` as [`NamespaceCount`]s.
fn counts_of(
    kind: &str,
    counts: BTreeMap<String, u64>,
) -> impl Iterator<Item = NamespaceCount> + '_ {
    counts
        .into_iter()
        .map(move |(namespace, records)| NamespaceCount {
            kind: kind.to_owned(),
            namespace,
            records,
        })
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

#[async_trait]
impl NamespaceAdmin for InMemoryAdmin {
    async fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError> {
        let _span = crate::span::store_span("namespace", "namespace_counts", ctx);
        check_admin(ctx, "count namespaces", None)?;
        let mut out = Vec::new();
        out.extend(counts_of("fact", self.facts.namespace_counts(ctx)?));
        out.extend(counts_of("episode", self.episodes.namespace_counts(ctx)?));
        out.extend(counts_of("insight", self.insights.namespace_counts(ctx)?));
        out.extend(self.working.namespace_counts(ctx)?);
        out.extend(counts_of("proposal", self.proposals.namespace_counts(ctx)?));
        out.extend(counts_of(BELIEF_KIND, self.beliefs.namespace_counts(ctx)?));
        for kind in [SPACE_KIND, MESSAGE_KIND] {
            out.extend(counts_of(kind, self.spaces.namespace_counts(ctx, kind)?));
        }
        for kind in [GOAL_KIND, PRIORITIES_KIND, METRIC_KIND] {
            out.extend(counts_of(kind, self.goals.namespace_counts(ctx, kind)?));
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
        match kind {
            "fact" => self.facts.move_namespace(ctx, from, to, batch),
            "episode" => self.episodes.move_namespace(ctx, from, to, batch),
            "insight" => self.insights.move_namespace(ctx, from, to, batch),
            "proposal" => self.proposals.move_namespace(ctx, from, to, batch),
            BELIEF_KIND => self.beliefs.move_namespace(ctx, from, to, batch),
            SPACE_KIND | MESSAGE_KIND => self.spaces.move_namespace(ctx, kind, from, to, batch),
            GOAL_KIND => self.goals.move_namespace(ctx, GOAL_KIND, from, to, batch),
            PRIORITIES_KIND => self
                .goals
                .move_namespace(ctx, PRIORITIES_KIND, from, to, batch),
            METRIC_KIND => self.goals.move_namespace(ctx, METRIC_KIND, from, to, batch),
            _ => self.working.move_namespace(ctx, kind, from, to, batch),
        }
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

impl InMemoryAdmin {
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
        let episodes: std::collections::HashSet<String> = match sweep {
            Sweep::Subject(_) => self
                .episodes
                .sweep(ctx, sweep, &|_| false, Pass::Count)?
                .into_iter()
                .collect(),
            Sweep::Expired { .. } => Default::default(),
        };
        for kind in ERASURE_KINDS {
            if left == 0 {
                break;
            }
            let this = match pass {
                Pass::Count => Pass::Count,
                Pass::Delete(_) => Pass::Delete(left),
            };
            let n = match kind {
                "raw_call" => {
                    let behind = |r: &openvibe_protocols::RawCall| {
                        r.episode_id.as_ref().is_some_and(|e| episodes.contains(e))
                    };
                    self.raw.sweep(ctx, sweep, &behind, this)?.len() as u64
                }
                "fact" => self.facts.sweep(ctx, sweep, &|_| false, this)?.len() as u64,
                "episode" => self.episodes.sweep(ctx, sweep, &|_| false, this)?.len() as u64,
                "insight" => self.insights.sweep(ctx, sweep, &|_| false, this)?.len() as u64,
                "proposal" => self.proposals.sweep(ctx, sweep, this)?,
                BELIEF_KIND => self.beliefs.sweep(ctx, sweep, this)?,
                SPACE_KIND | MESSAGE_KIND => self.spaces.sweep(ctx, kind, sweep, this)?,
                GOAL_KIND => self.goals.sweep(ctx, GOAL_KIND, sweep, this)?,
                PRIORITIES_KIND => self.goals.sweep(ctx, PRIORITIES_KIND, sweep, this)?,
                METRIC_KIND => self.goals.sweep(ctx, METRIC_KIND, sweep, this)?,
                _ => {
                    let ids = self.working.swept(ctx, kind, sweep, this.limit())?;
                    if let Pass::Delete(_) = this {
                        self.delete_working(ctx, kind, &ids).await?;
                    }
                    ids.len() as u64
                }
            };
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

    /// Delete the working or semantic records `ids` of `kind` as their
    /// stores delete one (a plan with its context, state and correlations).
    async fn delete_working(
        &self,
        ctx: &CallerContext,
        kind: &str,
        ids: &[String],
    ) -> Result<(), StoreError> {
        if kind == "knowledge" {
            self.working.remove_knowledge(ctx, ids)?;
            return Ok(());
        }
        for id in ids {
            match kind {
                "session" => drop(self.working.delete_session(ctx, id).await?),
                "plan" => drop(self.working.delete_plan(ctx, id).await?),
                _ => drop(self.working.delete_task_context(ctx, id).await?),
            }
        }
        Ok(())
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

/// Namespace maintenance of the working and semantic records (see
/// [`NamespaceAdmin`](openvibe_protocols::NamespaceAdmin)).
impl InMemoryWorkingStore {
    /// Records per namespace, per kind, in `ctx`'s tenant.
    pub(crate) fn namespace_counts(
        &self,
        ctx: &CallerContext,
    ) -> Result<Vec<NamespaceCount>, StoreError> {
        fn count<'a>(metas: impl Iterator<Item = &'a RecordMeta>) -> BTreeMap<String, u64> {
            let now = chrono::Utc::now();
            let mut counts = BTreeMap::new();
            for meta in metas.filter(|m| !m.is_expired(now)) {
                *counts.entry(meta.namespace.clone()).or_insert(0) += 1;
            }
            counts
        }
        let guard = self.read()?;
        let Some(t) = guard.get(ctx.tenant_id()) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (kind, counts) in [
            ("session", count(t.sessions.values().map(|r| &r.meta))),
            ("plan", count(t.plans.values().map(|r| &r.meta))),
            ("task_context", count(t.tasks.values().map(|r| &r.meta))),
            ("knowledge", count(t.knowledge.values().map(|r| &r.meta))),
        ] {
            out.extend(counts_of(kind, counts));
        }
        Ok(out)
    }

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
    pub(crate) fn move_namespace(
        &self,
        ctx: &CallerContext,
        kind: &str,
        from: &str,
        to: &str,
        batch: usize,
    ) -> Result<u64, StoreError> {
        fn relocate<'a>(
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
            "session" => relocate(
                t.sessions.iter_mut().map(|(k, r)| (k, &mut r.meta)),
                from,
                to,
                batch,
            ),
            "plan" => relocate(
                t.plans.iter_mut().map(|(k, r)| (k, &mut r.meta)),
                from,
                to,
                batch,
            ),
            "task_context" => relocate(
                t.tasks.iter_mut().map(|(k, r)| (k, &mut r.meta)),
                from,
                to,
                batch,
            ),
            "knowledge" => t
                .knowledge
                .with_each_mut(|all| relocate(all.map(|(k, r)| (k, &mut r.meta)), from, to, batch)),
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
