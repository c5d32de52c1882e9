//! The space tools: list spaces, post and read messages.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

use super::{MemoryTools, answer, to_value};

/// `listSpaces`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSpaces {
    /// At most this many (20 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Continue after the page that returned this cursor.
    #[serde(default)]
    pub cursor: Option<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `postMessage`'s arguments. Its author is your key, never an argument.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The space.
    pub space: String,
    /// What it says: `{"type": "text", "text": ...}`, a request
    /// `{"type": "request", "task": ..., "input": {...}}`, or an answer
    /// `{"type": "answer", "request": ..., "status": ..., "output": ...}`.
    pub body: openvibe_protocols::MessageBody,
    /// Its id (posting the same id again returns the stored message).
    #[serde(default)]
    pub id: Option<String>,
    /// The id of the message whose thread it continues.
    #[serde(default)]
    pub thread: Option<String>,
    /// Route it to the member owning this domain (no owner: the space's
    /// people, escalated).
    #[serde(default)]
    pub domain: Option<String>,
    /// Address it to these members (owner keys) instead.
    #[serde(default)]
    pub to: Vec<String>,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// `readMessages`' arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMessages {
    /// The space.
    pub space: String,
    /// Only messages with a greater `seq` (0: from the start).
    #[serde(default)]
    pub after: u64,
    /// At most this many (100 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only this thread (the id of its first message).
    #[serde(default)]
    pub thread: Option<String>,
    /// Only the messages addressed to you (or to everyone).
    #[serde(default)]
    pub for_me: bool,
    /// When none follows `after`, wait up to this many milliseconds (at
    /// most 30000) for one.
    #[serde(default)]
    pub wait_ms: u64,
    /// The project you work in.
    #[serde(default)]
    pub project: Option<String>,
}

/// The page size `listSpaces` uses when none is given.
pub const SPACE_PAGE: usize = 20;

#[tool_router(router = space_router, vis = "pub(super)")]
impl MemoryTools {
    /// Mirrors [`QUERY_SPACES`](openvibe_api::endpoints::QUERY_SPACES).
    #[tool(
        name = "listSpaces",
        description = "The spaces you are a member of (shared environments of roles and people, each with an ordered message log), newest first, a page at a time, with their members and the domains each owns."
    )]
    async fn list_spaces(
        &self,
        Parameters(args): Parameters<ListSpaces>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "listSpaces")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mut query =
                    openvibe_protocols::SpaceQuery::new().limit(args.limit.unwrap_or(SPACE_PAGE));
                query.cursor = args.cursor.clone();
                to_value(self.stores.spaces.list(&caller, &query).await?)
            }
            .await,
        ))
    }

    /// Mirrors [`POST_MESSAGES`](openvibe_api::endpoints::POST_MESSAGES).
    #[tool(
        name = "postMessage",
        description = "Post a message in a space you are a member of (with the write right in its namespace): text, a request for the owner of a domain (its loop decides and answers in the thread), or an answer. You are its author. Naming a domain routes it to the member owning it, or to the space's people when none does."
    )]
    async fn post_message(
        &self,
        Parameters(args): Parameters<PostMessage>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "postMessage")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mut message = openvibe_protocols::SpaceMessage::text("");
                message.body = args.body.clone();
                message.id = args.id.clone().unwrap_or_default();
                message.thread = args.thread.clone();
                message.domain = args.domain.clone();
                message.to = args.to.clone();
                to_value(
                    self.stores
                        .spaces
                        .post(&caller, &args.space, message)
                        .await?,
                )
            }
            .await,
        ))
    }

    /// Mirrors [`READ_MESSAGES`](openvibe_api::endpoints::READ_MESSAGES).
    #[tool(
        name = "readMessages",
        description = "The messages of a space you are a member of after a seq, in order (`messages`), optionally only a thread or those addressed to you; with wait_ms, waits for the next one when none follows."
    )]
    async fn read_messages(
        &self,
        Parameters(args): Parameters<ReadMessages>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = self.caller(&ctx, "readMessages")?;
        Ok(answer(
            async {
                let caller = who.in_project(args.project.as_deref())?;
                let mut query = openvibe_protocols::MessageQuery::after(args.after)
                    .limit(args.limit.unwrap_or(100))
                    .wait_ms(args.wait_ms);
                query.thread = args.thread.clone();
                query.for_me = args.for_me;
                let messages = self
                    .stores
                    .spaces
                    .messages(&caller, &args.space, &query)
                    .await?;
                Ok(serde_json::json!({ "messages": messages }))
            }
            .await,
        ))
    }
}
