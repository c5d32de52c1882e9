//! What every handler shares.

use openvibe_protocols::Stores;

use crate::Readiness;
use crate::access::Access;

/// The state of the router: the stores served, how callers are
/// authenticated, and whether the backend is ready.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) stores: Stores,
    pub(crate) access: Access,
    pub(crate) ready: Readiness,
    /// The cognitive loop of this process, when it runs one.
    pub(crate) inbox: Option<std::sync::Arc<dyn openvibe_protocols::EventInbox>>,
    /// The longest a long poll (`wait_ms`) waits here: under the
    /// request's time limit, so that a valid wait never times out.
    pub(crate) max_wait: std::time::Duration,
    /// The console's sessions.
    pub(crate) console: std::sync::Arc<crate::console::session::Sessions>,
}

impl AppState {
    /// `query` with its wait bounded by [`AppState::max_wait`]: a long
    /// poll answers before the request's time limit.
    pub(crate) fn bounded_wait(
        &self,
        mut query: openvibe_protocols::MessageQuery,
    ) -> openvibe_protocols::MessageQuery {
        let max_wait = u64::try_from(self.max_wait.as_millis()).unwrap_or(u64::MAX);
        query.wait_ms = query.wait_ms.min(max_wait);
        query
    }
}

impl AppState {
    /// The loop that receives `role`'s events, when this service runs one
    /// (404 naming the loop otherwise).
    pub(crate) fn inbox_of(
        &self,
        role: &str,
    ) -> Result<std::sync::Arc<dyn openvibe_protocols::EventInbox>, openvibe_protocols::StoreError>
    {
        inbox(self.inbox.as_ref(), role)
    }

    /// The embedding model the stores' semantic memory uses.
    pub(crate) async fn embedding_model(
        &self,
    ) -> Result<openvibe_api::dto::EmbeddingModel, openvibe_protocols::StoreError> {
        let (model, dimensions) = self.stores.knowledge.embedding_model();
        Ok(openvibe_api::dto::EmbeddingModel {
            model: model.to_owned(),
            dimensions,
        })
    }
}

impl axum::extract::FromRef<AppState> for std::sync::Arc<crate::console::session::Sessions> {
    fn from_ref(state: &AppState) -> Self {
        state.console.clone()
    }
}

/// The loop of a service that has one, or why there is none (the routes
/// and the MCP tools alike).
pub(crate) fn inbox(
    inbox: Option<&std::sync::Arc<dyn openvibe_protocols::EventInbox>>,
    role: &str,
) -> Result<std::sync::Arc<dyn openvibe_protocols::EventInbox>, openvibe_protocols::StoreError> {
    inbox
        .cloned()
        .ok_or_else(|| openvibe_protocols::StoreError::NotFound {
            kind: "loop",
            id: role.to_owned(),
        })
}
