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
    pub(crate) console: std::sync::Arc<crate::console::Sessions>,
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

impl axum::extract::FromRef<AppState> for std::sync::Arc<crate::console::Sessions> {
    fn from_ref(state: &AppState) -> Self {
        state.console.clone()
    }
}
