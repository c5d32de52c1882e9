//! In-memory semantic memory: [`KnowledgeStore`] on the working store's
//! state: hybrid search (an inverted index for BM25 with postings per
//! reader, an HNSW graph or the exact scan for vectors) over the readable
//! knowledge.

use async_trait::async_trait;
use openvibe_protocols::{
    AuditOp, CallerContext, Change, Knowledge, KnowledgeHit, KnowledgeQuery, KnowledgeStore,
    NewKnowledge, Retriever, StoreError, content_hash, store_time,
};
use openvibe_protocols::{
    check_label, json_object, knowledge_read_allowed, resolve_embedding, validate_knowledge,
};
use openvibe_retrieval::{combine, knowledge_search};

use crate::rows::{Hot, Interner};
use crate::working::{InMemoryWorkingStore, Tenant, new_meta, not_found};

/// Whether `ctx` may read `k` (see [`knowledge_read_allowed`]).
fn readable(ctx: &CallerContext, k: &Knowledge) -> bool {
    readable_at(ctx, k, chrono::Utc::now())
}

/// Whether `ctx` may read `k` at `now`.
fn readable_at(ctx: &CallerContext, k: &Knowledge, now: chrono::DateTime<chrono::Utc>) -> bool {
    k.meta.tenant_id == ctx.tenant_id()
        && !k.meta.is_expired(now)
        && ctx.rights(&k.meta.namespace).read
        && knowledge_read_allowed(
            ctx.sees_project(k.meta.project_id.as_deref()),
            ctx.is_owner(&k.meta.owner),
            k.is_public,
        )
}

/// What a search checks of each piece of knowledge, in the knowledge's
/// dense column ([`Rows`](crate::rows::Rows)): the read rule's fields,
/// strings interned, and the rank key's.
pub(crate) struct KnowledgeHot {
    id: Box<str>,
    created_at: chrono::DateTime<chrono::Utc>,
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
    tenant: u32,
    owner: u32,
    namespace: u32,
    project: Option<u32>,
    public: bool,
}

impl Hot for Knowledge {
    type Column = KnowledgeHot;

    fn column(&self, id: &str, strings: &mut Interner) -> KnowledgeHot {
        KnowledgeHot {
            id: id.into(),
            created_at: self.meta.created_at,
            expires_at: self.meta.expires_at,
            tenant: strings.intern(&self.meta.tenant_id),
            owner: strings.intern(&self.meta.owner),
            namespace: strings.intern(&self.meta.namespace),
            project: self.meta.project_id.as_deref().map(|p| strings.intern(p)),
            public: self.is_public,
        }
    }
}

/// A caller resolved against the column's strings: [`readable_at`] and
/// ownership on a [`KnowledgeHot`], without reading the record.
struct HotReader<'a> {
    ctx: &'a CallerContext,
    strings: &'a Interner,
    tenant: Option<u32>,
    owner: Option<u32>,
    project: Option<u32>,
}

impl<'a> HotReader<'a> {
    fn new(ctx: &'a CallerContext, strings: &'a Interner) -> Self {
        Self {
            ctx,
            strings,
            tenant: strings.get(ctx.tenant_id()),
            owner: strings.get(&ctx.owner_key()),
            project: ctx.project_id().and_then(|p| strings.get(p)),
        }
    }

    /// Whether the caller owns it (as [`CallerContext::is_owner`]).
    fn owns(&self, h: &KnowledgeHot) -> bool {
        self.owner == Some(h.owner)
    }

    /// [`readable_at`] of its record.
    fn reads(&self, h: &KnowledgeHot, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.tenant == Some(h.tenant)
            && h.expires_at.is_none_or(|at| at > now)
            && self.ctx.rights(self.strings.name(h.namespace)).read
            && knowledge_read_allowed(
                h.project.is_none_or(|p| self.project == Some(p)),
                self.owns(h),
                h.public,
            )
    }
}

/// Who may read knowledge's postings besides the read rule's other
/// conditions: everyone for public knowledge, else its owner.
const PUBLIC_READER: &str = "*";

/// The reader its full-text postings are filed under: [`PUBLIC_READER`]
/// or the owner's key (as PostgreSQL's `knowledge_postings.reader`).
fn reader_of(k: &Knowledge) -> &str {
    if k.is_public {
        PUBLIC_READER
    } else {
        &k.meta.owner
    }
}

/// The upsert key of knowledge owned by `owner`.
fn upsert_key(tenant: &Tenant, owner: &str, external: Option<&str>, hash: &str) -> Option<String> {
    match external {
        Some(ext) => tenant
            .by_external
            .get(&(owner.to_owned(), ext.to_owned()))
            .cloned(),
        None => tenant
            .by_hash
            .get(&(owner.to_owned(), hash.to_owned()))
            .cloned(),
    }
}

impl InMemoryWorkingStore {
    /// The embedding a write or a query uses (see [`resolve_embedding`]).
    async fn embedding_for(
        &self,
        field: &str,
        given: Option<&Vec<f32>>,
        text: Option<&str>,
    ) -> Result<Vec<f32>, StoreError> {
        resolve_embedding(
            self.embedder.as_deref(),
            self.dimensions,
            field,
            given,
            text,
        )
        .await
    }
}

#[async_trait]
impl KnowledgeStore for InMemoryWorkingStore {
    fn embedding_model(&self) -> (&str, usize) {
        (&self.model, self.dimensions)
    }

    async fn store_knowledge(
        &self,
        ctx: &CallerContext,
        input: NewKnowledge,
    ) -> Result<Knowledge, StoreError> {
        validate_knowledge(ctx, &input)?;
        let metadata = json_object("metadata", input.metadata)?;
        let embedding = self
            .embedding_for("embedding", input.embedding.as_ref(), Some(&input.content))
            .await?;
        let _span = Self::span("store_knowledge", ctx);
        let hash = content_hash(&input.content);
        let owner = ctx.owner_key();
        let mut guard = self.write()?;
        let tenant = guard.entry(ctx.tenant_id().to_owned()).or_default();
        if let Some(plan) = &input.plan_id {
            tenant.readable_plan(ctx, plan)?;
        }
        if let Some(session) = &input.session_id {
            tenant.readable_session(ctx, session)?;
        }
        let mut existing = upsert_key(tenant, &owner, input.external_id.as_deref(), &hash)
            .and_then(|id| tenant.knowledge.get(&id).cloned());
        // Expired knowledge is gone: storing its key again stores it anew.
        if let Some(old) = existing.take_if(|old| old.meta.is_expired(chrono::Utc::now())) {
            tenant.remove_knowledge(&old.id);
            self.audit_change(ctx, AuditOp::Delete, "knowledge", &old.id, &old.meta);
        }
        let mut meta = match &existing {
            Some(old) => {
                let mut meta = old.meta.clone();
                meta.updated_at = store_time();
                meta
            }
            None => new_meta(ctx, "store knowledge")?,
        };
        meta.source = input.source.unwrap_or_default();
        ctx.stamp(&mut meta);
        // Retention counts from the latest store: storing again renews it.
        meta.expires_at = ctx.expiry(
            "knowledge",
            &meta.namespace,
            meta.updated_at,
            input.expires_at,
        )?;
        let id = existing.as_ref().map_or_else(
            || uuid::Uuid::new_v4().simple().to_string(),
            |old| old.id.clone(),
        );
        if let Some(old) = &existing
            && old.external_id.is_none()
        {
            tenant
                .by_hash
                .remove(&(owner.clone(), old.content_hash.clone()));
        }
        let knowledge = Knowledge {
            id: id.clone(),
            meta,
            content: input.content,
            external_id: input.external_id,
            is_public: input.is_public,
            tags: input.tags,
            plan_id: input.plan_id,
            session_id: input.session_id,
            metadata,
            content_hash: hash,
            embedding,
        };
        match &knowledge.external_id {
            Some(ext) => tenant.by_external.insert((owner, ext.clone()), id.clone()),
            None => tenant
                .by_hash
                .insert((owner, knowledge.content_hash.clone()), id.clone()),
        };
        let op = if existing.is_some() {
            AuditOp::Update
        } else {
            AuditOp::Insert
        };
        self.audit_change(ctx, op, "knowledge", &id, &knowledge.meta);
        let row = tenant.knowledge.insert(id.clone(), knowledge.clone());
        tenant
            .knowledge_text
            .insert(&id, row, &knowledge.content, reader_of(&knowledge));
        tenant.knowledge_vectors.insert(
            &id,
            row,
            &knowledge.embedding,
            reader_of(&knowledge),
            self.vector_search,
        );
        Ok(knowledge)
    }

    async fn query_knowledge(
        &self,
        ctx: &CallerContext,
        query: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>, StoreError> {
        let search = knowledge_search(
            ctx,
            query,
            self.embedder.as_deref(),
            self.dimensions,
            |entry| self.audit.record(entry()),
        )
        .await?;
        let _span = Self::span("query_knowledge", ctx);
        if search.top_k == 0 {
            return Ok(Vec::new());
        }
        let guard = self.read()?;
        let Some(tenant) = guard.get(ctx.tenant_id()) else {
            return Ok(Vec::new());
        };
        // One instant for the whole search.
        let now = chrono::Utc::now();
        let reader = HotReader::new(ctx, tenant.knowledge.strings());
        let filter = &search.filter;
        let narrows = filter.narrows();
        // The rank key of the knowledge at `row` when the query keeps it
        // (as `rank_key`'s, borrowed: the newest first, then by id), from
        // its column; the record itself is read only for a narrowing filter.
        let kept = |row| {
            let h = tenant.knowledge.hot(row)?;
            let owned = reader.owns(h);
            let keeps = reader.reads(h, now)
                && (filter.include_public || owned)
                && (!narrows || filter.keeps(tenant.knowledge.at(row)?, owned));
            keeps.then_some((std::cmp::Reverse(h.created_at), &*h.id))
        };
        let mut lists = Vec::new();
        let owner = ctx.owner_key();
        let readers = [owner.as_str(), PUBLIC_READER];
        if search.full_text() {
            let list = tenant
                .knowledge_text
                .rank(&search.terms, &readers, kept, search.depth);
            lists.push((Retriever::FullText, list));
        }
        if let Some(vector) = &search.vector {
            let list =
                tenant
                    .knowledge_vectors
                    .nearest(vector, &readers, kept, search.vector_depth);
            lists.push((Retriever::Vector, list));
        }
        Ok(combine(lists, search.top_k)
            .into_iter()
            .filter_map(|hit| {
                tenant.knowledge.get(hit.id.1).map(|k| KnowledgeHit {
                    knowledge: k.clone(),
                    score: hit.score,
                    retrievers: hit.retrievers,
                })
            })
            .collect())
    }

    async fn get_knowledge(
        &self,
        ctx: &CallerContext,
        id: &str,
    ) -> Result<Option<Knowledge>, StoreError> {
        let _span = Self::span("get_knowledge", ctx);
        let guard = self.read()?;
        Ok(guard
            .get(ctx.tenant_id())
            .and_then(|t| t.knowledge.get(id))
            .filter(|k| readable(ctx, k))
            .cloned())
    }

    async fn delete_knowledge(&self, ctx: &CallerContext, id: &str) -> Result<(), StoreError> {
        let _span = Self::span("delete_knowledge", ctx);
        check_label("id", id)?;
        let mut guard = self.write()?;
        let tenant = guard
            .get_mut(ctx.tenant_id())
            .ok_or_else(|| not_found("knowledge", id))?;
        let k = tenant
            .knowledge
            .get(id)
            .filter(|k| readable(ctx, k))
            .ok_or_else(|| not_found("knowledge", id))?;
        ctx.require_change(&k.meta, Change::Delete, format!("delete knowledge {id}"))?;
        if let Some(gone) = tenant.remove_knowledge(id) {
            self.audit_change(ctx, AuditOp::Delete, "knowledge", id, &gone.meta);
        }
        Ok(())
    }
}

impl Tenant {
    /// Remove knowledge `id` and its upsert key; returns it.
    pub(crate) fn remove_knowledge(&mut self, id: &str) -> Option<Knowledge> {
        let gone = self.knowledge.remove(id)?;
        self.knowledge_text.remove(id);
        self.knowledge_vectors.remove(id);
        let owner = gone.meta.owner.clone();
        match &gone.external_id {
            Some(ext) => self.by_external.remove(&(owner, ext.clone())),
            None => self.by_hash.remove(&(owner, gone.content_hash.clone())),
        };
        Some(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::{Grants, RecordMeta, Rights};

    /// The search's check on the column is the read rule on the record,
    /// for every combination of tenant, owner, visibility, project,
    /// namespace and expiry against callers of every kind (governed or
    /// not, in a project or not, of another tenant, never seen before).
    #[test]
    fn the_column_check_is_the_read_rule() {
        let now = chrono::Utc::now();
        let hour = chrono::TimeDelta::hours(1);
        let mut strings = Interner::default();
        let mut records = Vec::new();
        for tenant in ["t1", "t2"] {
            for owner in ["user:a", "user:b", "agent:a"] {
                for public in [false, true] {
                    for project in [None, Some("p"), Some("q"), Some("")] {
                        for namespace in ["home", "shared", "closed"] {
                            for expires in [None, Some(now - hour), Some(now), Some(now + hour)] {
                                let k = Knowledge {
                                    id: format!("k{}", records.len()),
                                    meta: RecordMeta {
                                        tenant_id: tenant.into(),
                                        owner: owner.into(),
                                        namespace: namespace.into(),
                                        project_id: project.map(str::to_owned),
                                        expires_at: expires,
                                        ..RecordMeta::default()
                                    },
                                    content: String::new(),
                                    external_id: None,
                                    is_public: public,
                                    tags: Vec::new(),
                                    plan_id: None,
                                    session_id: None,
                                    metadata: serde_json::Value::Null,
                                    content_hash: String::new(),
                                    embedding: Vec::new(),
                                };
                                let hot = k.column(&k.id, &mut strings);
                                records.push((k, hot));
                            }
                        }
                    }
                }
            }
        }
        let grants = Grants::new("home").grant("home", Rights::OWN, false).grant(
            "shared",
            Rights::READ,
            true,
        );
        let mut callers = Vec::new();
        for tenant in ["t1", "t2", "t3"] {
            for who in [
                CallerContext::user("a"),
                CallerContext::user("b"),
                CallerContext::agent("a"),
                CallerContext::user("z"),
            ] {
                for project in [None, Some("p"), Some("r"), Some("")] {
                    let base = who
                        .clone()
                        .with_tenant(tenant)
                        .with_project_id(project.map(str::to_owned));
                    callers.push(base.clone());
                    callers.push(base.with_grants(grants.clone()));
                }
            }
        }
        let (mut readable, mut checked) = (0, 0);
        for ctx in &callers {
            let reader = HotReader::new(ctx, &strings);
            for (k, hot) in &records {
                let want = readable_at(ctx, k, now);
                assert_eq!(reader.reads(hot, now), want, "{ctx:?} reading {k:?}");
                assert_eq!(reader.owns(hot), ctx.is_owner(&k.meta.owner));
                readable += usize::from(want);
                checked += 1;
            }
        }
        // Both answers occur often: the combinations are not all one way.
        assert!(
            readable > 1_000 && readable * 2 < checked,
            "{readable} of {checked}"
        );
    }
}
