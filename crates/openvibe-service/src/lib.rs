//! The openvibe memory service: the seed's HTTP API over one set of
//! [`Stores`] (in process or PostgreSQL), so that agents in many processes
//! on many machines share one governed memory.
//!
//! - **Who is calling** comes from `Authorization: Bearer <key>`, resolved
//!   through the governance configuration ([`Access::Governed`]): the key's
//!   principal, tenant, clearance and namespace grants. A key marked
//!   `trusted` (a runtime inside your trust boundary) may instead state the
//!   caller it acts for in the [`CALLER_HEADER`](openvibe_api::CALLER_HEADER).
//!   The stores enforce every rule; the service only says who is asking.
//! - **What it answers**: JSON bodies (the protocol types and
//!   [`openvibe_api::dto`]), errors as [`ErrorBody`](openvibe_api::ErrorBody)
//!   with a request id, an OpenAPI 3.1 document at `/openapi.json` built from
//!   the same route table as the router, `/healthz` and `/readyz`.
//! - **The web console** at [`CONSOLE_PATH`] (`/console`): people sign in
//!   with an API key (a server-side session; the key is not kept) and
//!   decide proposals, read beliefs with their provenance, the memory, the
//!   audit trail, goals and spaces, through the same governed stores.
//! - **Robustness**: a body size limit (413), malformed JSON named by a JSON
//!   pointer (400), unknown fields refused, a time limit per request (504),
//!   bounded concurrency (503 with `retry-after`), graceful shutdown that
//!   finishes the requests in flight.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use openvibe_service::{Access, Service};
//! let stores = openvibe_memory::in_memory_stores();
//! let service = Service::new(stores, Access::open("default"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8077").await?;
//! service.serve(listener, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```

mod access;
mod auth;
mod console;
mod contract;
mod edges;
mod error;
mod extract;
pub mod mcp;
mod middleware;
mod openapi;
mod routes;
mod rules;
mod state;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use openvibe_governance::Governance;
use openvibe_protocols::Stores;

pub use access::Access;
pub use console::CONSOLE_PATH;
pub use error::Failure;
pub use openapi::{DATE_TIME_PATTERN, development_document, openapi_document};
pub use routes::MCP_PATH;

/// A readiness check: `Ok` when the backing database answers.
pub type Readiness =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync>;

/// Limits of the service.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServiceConfig {
    /// The largest request body accepted, in bytes (413 beyond).
    pub body_limit: usize,
    /// The time limit of one request (504 beyond; the request is cancelled).
    pub request_timeout: Duration,
    /// Requests handled at once; more are refused with 503 and `retry-after`.
    pub max_in_flight: usize,
    /// The `Host` names the MCP endpoint answers (it refuses others, against
    /// DNS rebinding); loopback names by default: add yours when serving
    /// beyond this machine.
    pub mcp_allowed_hosts: Vec<String>,
    /// How long a console session lasts without a request (30 minutes by
    /// default).
    pub console_idle_timeout: Duration,
    /// Mark the console's session cookie `Secure` (set it when a
    /// TLS-terminating proxy serves the console; a request with
    /// `X-Forwarded-Proto: https` gets it anyway).
    pub console_secure_cookies: bool,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: Duration::from_secs(30),
            max_in_flight: 512,
            mcp_allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            console_idle_timeout: Duration::from_secs(30 * 60),
            console_secure_cookies: false,
        }
    }
}

/// The default body limit: 16 MiB. A record's content and JSON are at
/// most 1 MB ([`MAX_JSON_BYTES`](openvibe_protocols::MAX_JSON_BYTES)), and
/// the document allows 1,000,000 characters, which JSON may escape as
/// `\uXXXX` pairs (12 bytes a character): every body the document allows
/// fits, so a 413 never answers a valid request.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// The memory service: stores, how callers are authenticated, limits.
#[derive(Clone)]
pub struct Service {
    stores: Stores,
    access: Access,
    ready: Readiness,
    config: ServiceConfig,
    inbox: Option<Arc<dyn openvibe_protocols::EventInbox>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("access", &self.access)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// A service over `stores`, authenticating callers by `access`; always
    /// ready until [`Service::with_readiness`] says how to check.
    pub fn new(stores: Stores, access: Access) -> Self {
        Self {
            stores,
            access,
            ready: Arc::new(|| Box::pin(async { Ok(()) })),
            config: ServiceConfig::default(),
            inbox: None,
        }
    }

    /// Governed by `governance`: every request needs an API key it lists.
    pub fn governed(stores: Stores, governance: Governance) -> Self {
        Self::new(stores, Access::Governed(Arc::new(governance)))
    }

    /// Serve the cognitive loop of this process too: `/v1/loop` and the
    /// MCP tools `pushEvent` and `eventTrace` push events into `inbox`
    /// (e.g. an `openvibe_roles::CognitiveLoop`) and read their traces.
    /// Without one they answer 404.
    #[must_use]
    pub fn with_inbox(mut self, inbox: Arc<dyn openvibe_protocols::EventInbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// How `/readyz` checks the database.
    #[must_use]
    pub fn with_readiness(mut self, ready: Readiness) -> Self {
        self.ready = ready;
        self
    }

    /// Set the limits.
    #[must_use]
    pub fn with_config(mut self, config: ServiceConfig) -> Self {
        self.config = config;
        self
    }

    /// The limits.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The axum router (every route, middleware included).
    pub fn router(self) -> axum::Router {
        routes::router(self)
    }

    /// Serve on `listener` until `shutdown` completes, then stop accepting
    /// connections and finish the requests in flight. The audit trail's
    /// batched entries are flushed before returning.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let audit = self.stores.audit.clone();
        let addr = listener.local_addr()?;
        tracing::info!(%addr, "memory service listening");
        // The peer's address tells the console's development sign-in that
        // it comes from this machine.
        let app = self
            .router()
            .into_make_service_with_connect_info::<std::net::SocketAddr>();
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await?;
        if let Err(e) = audit.flush().await {
            tracing::warn!(error = %e, "could not flush the audit trail at shutdown");
        }
        tracing::info!(%addr, "memory service stopped");
        Ok(())
    }
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
