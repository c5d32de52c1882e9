//! The memory tools: save, search, count, clean up and promote facts.

use openvibe_protocols::promotion::{PromoteMode, Promotion};
use openvibe_protocols::{Fact, FactQuery, StoreError};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{MemoryTools, Who, answer};

/// The largest number of facts `getMemoryStats` counts.
pub const STATS_LIMIT: usize = 10_000;

/// `saveMemory`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemory {
    /// What to remember.
    pub content: String,
    /// The namespace (scope) to save it in; the caller's home by default.
    #[serde(default)]
    pub scope: Option<String>,
    /// The project you work in: a memory in a project-scoped scope
    /// belongs to it and is seen only from it.
    #[serde(default)]
    pub project: Option<String>,
    /// What it is about.
    #[serde(default)]
    pub entity: Option<String>,
    /// Its domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Forget it this many seconds from now (the scope's retention may
    /// make it sooner); kept until deleted when absent.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
    /// Free annotations (`agent`, `tool_name`, `notes`, …): a JSON object
    /// of at most 64 KiB.
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
}

/// `deleteExpiredMemories`' arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteExpiredMemories {
    /// Records deleted per batch (one transaction each): 500 by default.
    #[serde(default)]
    pub batch: Option<usize>,
    /// The project you work in (its project-scoped memories are cleaned
    /// too; those of other projects are not).
    #[serde(default)]
    pub project: Option<String>,
}

/// The batch `deleteExpiredMemories` uses when none is given.
pub const CLEANUP_BATCH: usize = 500;

/// `searchMemory`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemory {
    /// Words to look for (every one must appear).
    pub query: String,
    /// Namespaces to search (the caller's recall namespaces by default).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The project you work in (project-scoped memories of other projects
    /// are not searched).
    #[serde(default)]
    pub project: Option<String>,
    /// At most this many results (10 by default).
    #[serde(default)]
    pub top_k: Option<usize>,
}

/// `promoteMemory`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromoteMemory {
    /// The memory (a fact's id, or an insight's with `kind: insight`).
    pub id: String,
    /// `fact` (default) or `insight`.
    #[serde(default)]
    pub kind: Option<String>,
    /// The scope it goes to (`shared` by default).
    #[serde(default)]
    pub to: Option<String>,
    /// Move it instead of copying it (the original is deleted).
    #[serde(default, rename = "move")]
    pub moving: bool,
    /// Why (kept in the audit trail).
    #[serde(default)]
    pub note: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `getMemoryStats`'s arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryStats {
    /// The project you work in (counts its project-scoped memories).
    #[serde(default)]
    pub project: Option<String>,
}

fn fact_json(f: &Fact) -> Value {
    json!({
        "id": f.id,
        "content": f.content,
        "scope": f.meta.namespace,
        "creator": f.meta.owner,
        "source": f.meta.source,
        "entity": f.entity,
        "domain": f.domain,
        "tags": f.tags,
        "confidence": f.confidence,
        "metadata": f.metadata,
        "created_at": f.meta.created_at,
        "expires_at": f.meta.expires_at,
    })
}

impl MemoryTools {
    /// `saveMemory`: the fact its arguments describe, written as `who`.
    async fn save(&self, who: Who, args: SaveMemory) -> Result<Value, StoreError> {
        let caller = who.in_project(args.project.as_deref())?;
        let mut fact = Fact::new("", args.content);
        if let Some(scope) = args.scope {
            fact = fact.namespace(scope);
        }
        fact.entity = args.entity.unwrap_or_default();
        fact.domain = args.domain.unwrap_or_default();
        fact.tags = args.tags;
        fact.metadata = args.metadata;
        if let Some(ttl) = args.ttl_seconds {
            let ttl = i64::try_from(ttl)
                .ok()
                .and_then(chrono::TimeDelta::try_seconds)
                .unwrap_or(chrono::TimeDelta::MAX);
            fact.meta.expires_at = Some(
                chrono::Utc::now()
                    .checked_add_signed(ttl)
                    .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC),
            );
        }
        // The seed's `source`: who wrote it, never the caller's choice: the
        // key's (stamped by the store), or `mcp:<principal>` for a caller
        // without one (development mode).
        fact.meta.source = format!("mcp:{}", caller.principal());
        let stored = self.stores.facts.store(&caller, fact).await?;
        Ok(fact_json(&stored))
    }
}

#[tool_router(router = memory_router, vis = "pub(super)")]
impl MemoryTools {
    /// Mirrors [`STORE_FACT`](openvibe_api::endpoints::STORE_FACT).
    #[tool(
        name = "saveMemory",
        description = "Save a memory (a fact) in a scope you may write to. Its creator and source are set by the server from who you are."
    )]
    async fn save_memory(
        &self,
        Parameters(args): Parameters<SaveMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "saveMemory")?;
        Ok(answer(self.save(who, args).await))
    }

    /// Mirrors [`SEARCH_MEMORY`](openvibe_api::endpoints::SEARCH_MEMORY).
    #[tool(
        name = "searchMemory",
        description = "Search the memories you may read for words (all must appear), in the scopes you name or your usual ones; a memory and its promoted copies are one result."
    )]
    async fn search_memory(
        &self,
        Parameters(args): Parameters<SearchMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "searchMemory")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let request = openvibe_api::dto::SearchMemory {
                    query: args.query,
                    scopes: args.scopes,
                    top_k: args.top_k,
                };
                let facts = crate::edges::search(&self.stores, &caller, request).await?;
                Ok(json!({"memories": facts.iter().map(fact_json).collect::<Vec<_>>()}))
            }
            .await,
        ))
    }

    /// Mirrors [`QUERY_FACTS`](openvibe_api::endpoints::QUERY_FACTS), counted per namespace.
    #[tool(
        name = "getMemoryStats",
        description = "How many memories you can see, in all and per scope."
    )]
    async fn get_memory_stats(
        &self,
        Parameters(args): Parameters<MemoryStats>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "getMemoryStats")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let query = FactQuery::default().limit(STATS_LIMIT);
                let facts = self.stores.facts.query(&caller, &query).await?;
                let mut per_scope = std::collections::BTreeMap::<String, usize>::new();
                for f in &facts {
                    *per_scope.entry(f.meta.namespace.clone()).or_default() += 1;
                }
                Ok(json!({
                    "total": facts.len(),
                    "per_scope": per_scope,
                    "capped": facts.len() >= STATS_LIMIT,
                }))
            }
            .await,
        ))
    }

    /// Mirrors [`DELETE_EXPIRED`](openvibe_api::endpoints::DELETE_EXPIRED), batch after batch.
    #[tool(
        name = "deleteExpiredMemories",
        description = "Delete expired memories (any kind, any owner) in the scopes you manage, in batches; each deletion is audited. Callers that manage no scope may not run this cleanup."
    )]
    async fn delete_expired_memories(
        &self,
        Parameters(args): Parameters<DeleteExpiredMemories>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "deleteExpiredMemories")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let batch = args.batch.unwrap_or(CLEANUP_BATCH);
                let (mut deleted, mut batches) = (0, 0);
                loop {
                    let n = self.stores.admin.delete_expired(&caller, batch).await?;
                    batches += 1;
                    deleted += n;
                    // A short batch: nothing else had expired when it ran.
                    if usize::try_from(n).is_ok_and(|n| n < batch) {
                        return Ok(json!({"deleted": deleted, "batches": batches}));
                    }
                }
            }
            .await,
        ))
    }

    /// Mirrors [`PROMOTE`](openvibe_api::endpoints::PROMOTE).
    #[tool(
        name = "promoteMemory",
        description = "Promote a memory you may read into a scope you may write to (shared by default): a copy with its lineage, or a move. Refused without those rights; audited."
    )]
    async fn promote_memory(
        &self,
        Parameters(args): Parameters<PromoteMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "promoteMemory")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let request = openvibe_api::dto::Promote {
                    kind: args.kind.unwrap_or_else(|| "fact".to_owned()),
                    id: args.id,
                    to: args.to.unwrap_or_else(|| Promotion::SHARED.to_owned()),
                    mode: if args.moving {
                        PromoteMode::Move
                    } else {
                        PromoteMode::Copy
                    },
                    note: args.note.unwrap_or_default(),
                };
                let promoted = crate::edges::promote(&self.stores, &caller, request).await?;
                Ok(fact_json(&promoted))
            }
            .await,
        ))
    }
}
