//! The memory service's remote client: every memory store trait over HTTP,
//! so a process swaps its in-process or PostgreSQL stores for a shared,
//! governed memory service with one constructor.
//!
//! ```no_run
//! # async fn run() -> Result<(), openvibe_remote::RemoteError> {
//! use openvibe_protocols::{CallerContext, Fact};
//! let remote = openvibe_remote::RemoteMemory::connect(
//!     "http://127.0.0.1:8077",
//!     Some(std::env::var("OPENVIBE_API_KEY").unwrap_or_default()),
//! )
//! .await?;
//! let stores = remote.stores(); // the same `Stores` in-memory or Postgres give
//! let ctx = CallerContext::agent("cro");
//! stores.facts.store(&ctx, Fact::new("f1", "Acme renews in May")).await?;
//! # Ok(()) }
//! ```
//!
//! **Who the server thinks is calling.** Each request carries the API key
//! and the caller context the store method was given (the
//! [`CALLER_HEADER`]). An ordinary key acts only as its own principal: the
//! server refuses a context naming anyone else, and governs the request by
//! the key's own grants. A key marked `trusted` in the governance file (a
//! runtime inside your trust boundary) acts for the caller it states.
//!
//! **Retries.** Reads, puts, deletes and searches are retried on 503,
//! 504 and connection failures (three times, 50 ms doubling, honouring a
//! `retry-after` up to 5 s). Writes that are not idempotent (store, append,
//! increment, strengthen) are retried only when the request never reached
//! the server.

pub mod load;
mod stores;

use std::sync::Arc;
use std::time::Duration;

use openvibe_api::endpoints::{self, Endpoint};
use openvibe_api::{CALLER_HEADER, Caller, ErrorBody};
use openvibe_protocols::{CallerContext, StoreError, Stores};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument;

/// Errors building a client (store calls report [`StoreError`]s).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The URL is not an http(s) URL.
    #[error("invalid memory service URL `{url}`: {reason}")]
    Url {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// The service answered the first request with an error.
    #[error("the memory service refused the connection check: {0}")]
    Store(#[from] StoreError),
}

/// Retries of idempotent requests.
const RETRIES: u32 = 3;
/// The first backoff; it doubles.
const BACKOFF: Duration = Duration::from_millis(50);
/// The longest `retry-after` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);

/// A client of one memory service. Cheap to clone.
#[derive(Clone)]
pub struct RemoteMemory {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base: Url,
    key: Option<String>,
    model: (String, usize),
}

impl std::fmt::Debug for RemoteMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteMemory")
            .field("base", &self.inner.base.as_str())
            .field("key", &self.inner.key.as_ref().map(|_| "<hidden>"))
            .finish_non_exhaustive()
    }
}

impl RemoteMemory {
    /// A client of the service at `url` (`http://host:port`) using `key`
    /// (`None`: the service runs without keys, for development). Asks the
    /// service for its embedding model, which also checks the URL and key.
    pub async fn connect(url: &str, key: Option<String>) -> Result<Self, RemoteError> {
        let mut base = Url::parse(url).map_err(|e| RemoteError::Url {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(RemoteError::Url {
                url: url.to_owned(),
                reason: "use an http:// or https:// URL".into(),
            });
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?;
        let mut client = Inner {
            http,
            base,
            key: key.filter(|k| !k.is_empty()),
            model: (String::new(), 0),
        };
        let model = client
            .call(None, &endpoints::EMBEDDING_MODEL, &[], &(), true)
            .await?;
        client.model = (model.model, model.dimensions);
        Ok(Self {
            inner: Arc::new(client),
        })
    }

    /// Who this client's key is, as the service sees it: the caller
    /// context to act with (a key that is not `trusted` may state only
    /// its own identity).
    pub async fn whoami(&self) -> Result<CallerContext, StoreError> {
        let caller = self
            .inner
            .call(None, &endpoints::WHOAMI, &[], &(), true)
            .await?;
        Ok(caller.into_context())
    }

    /// The service's URL.
    pub fn url(&self) -> &str {
        self.inner.base.as_str()
    }

    /// Every store, over this client.
    pub fn stores(&self) -> Stores {
        let me = Arc::new(self.clone());
        Stores {
            facts: me.clone(),
            episodes: me.clone(),
            insights: me.clone(),
            working: me.clone(),
            knowledge: me.clone(),
            raw: me.clone(),
            audit: me.clone(),
            admin: me.clone(),
            vectors: me.clone(),
            proposals: me.clone(),
            goals: me.clone(),
            beliefs: me.clone(),
            spaces: me.clone(),
            inbox: me,
        }
    }
}

impl Inner {
    /// `endpoint` with `params` in its path and `input` as its body or
    /// query string, as `caller` (`None`: no caller context); its answer.
    /// `idempotent`: it may be sent again once it may have been received
    /// (the endpoint's own rule, unless the call knows better).
    pub(crate) async fn call<I: Serialize, O: DeserializeOwned>(
        &self,
        caller: Option<&CallerContext>,
        endpoint: &Endpoint<I, O>,
        params: &[&str],
        input: &I,
        idempotent: bool,
    ) -> Result<O, StoreError> {
        let segments = endpoint.segments(params)?;
        let (body, query) = match endpoint.input {
            endpoints::Input::None => (None, Vec::new()),
            endpoints::Input::Body => (Some(input), Vec::new()),
            endpoints::Input::Query => (None, query_pairs(input)?),
        };
        let method = match endpoint.method {
            endpoints::Method::Get => Method::GET,
            endpoints::Method::Post => Method::POST,
            endpoints::Method::Put => Method::PUT,
            endpoints::Method::Delete => Method::DELETE,
        };
        let bytes = self
            .send(caller, method, &segments, body, &query, idempotent)
            .await?;
        let bytes = if bytes.is_empty() {
            &b"null"[..]
        } else {
            &bytes[..]
        };
        serde_json::from_slice(bytes).map_err(|e| {
            StoreError::backend_from(
                format!("the memory service answered something unexpected: {e}"),
                false,
                e,
            )
        })
    }

    async fn send(
        &self,
        caller: Option<&CallerContext>,
        method: Method,
        segments: &[String],
        body: Option<&impl Serialize>,
        query: &[(String, String)],
        idempotent: bool,
    ) -> Result<Vec<u8>, StoreError> {
        let mut url = self.url(segments)?;
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        let body = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| StoreError::invalid("body", e.to_string()))?;
        let (tenant, principal) = caller
            .map(|ctx| (ctx.tenant_id().to_owned(), ctx.principal().to_string()))
            .unwrap_or_default();
        let caller = caller.map(|ctx| Caller::from(ctx).to_header());
        let mut attempt = 0;
        loop {
            let mut request = self.http.request(method.clone(), url.clone());
            if let Some(key) = &self.key {
                request = request.bearer_auth(key);
            }
            if let Some(caller) = &caller {
                request = request.header(CALLER_HEADER, caller);
            }
            if let Some(body) = &body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            let span = tracing::debug_span!(
                "remote_memory",
                %method,
                path = url.path(),
                attempt,
                tenant = %tenant,
                principal = %principal
            );
            let outcome = request.send().instrument(span).await;
            let retry_after = match outcome {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let bytes = response.bytes().await.map_err(transport)?;
                    if status.is_success() {
                        return Ok(bytes.to_vec());
                    }
                    let err = error_of(status, &bytes);
                    let retryable = matches!(
                        status,
                        StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT
                    ) && idempotent;
                    if !retryable || attempt >= RETRIES {
                        return Err(err);
                    }
                    retry_after
                }
                Err(e) => {
                    let never_sent = e.is_connect();
                    let retryable =
                        never_sent || (idempotent && (e.is_timeout() || e.is_request()));
                    if !retryable || attempt >= RETRIES {
                        return Err(transport(e));
                    }
                    None
                }
            };
            let backoff = BACKOFF * 2u32.pow(attempt);
            let wait = retry_after.map_or(backoff, |r| r.min(MAX_RETRY_AFTER).max(backoff));
            tracing::debug!(?wait, attempt, "retrying a memory service request");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The service's URL of a path made of `segments` (each percent-encoded).
    fn url(&self, segments: &[String]) -> Result<Url, StoreError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| StoreError::invalid("path", "not a base URL"))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }
}

/// A flat struct as query-string pairs (`None` fields left out).
fn query_pairs(query: &impl Serialize) -> Result<Vec<(String, String)>, StoreError> {
    let value =
        serde_json::to_value(query).map_err(|e| StoreError::invalid("query", e.to_string()))?;
    let serde_json::Value::Object(map) = value else {
        return Err(StoreError::invalid("query", "not a set of fields"));
    };
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some((k, s)),
            other => Some((k, other.to_string())),
        })
        .collect())
}

/// A transport failure: transient (the request may not have happened).
fn transport(e: reqwest::Error) -> StoreError {
    let message = if e.is_timeout() {
        "the memory service did not answer in time".to_owned()
    } else if e.is_connect() {
        "cannot connect to the memory service".to_owned()
    } else {
        format!("the connection to the memory service failed: {e}")
    };
    StoreError::backend_from(message, true, e)
}

/// The store error an error response stands for.
fn error_of(status: StatusCode, bytes: &[u8]) -> StoreError {
    match serde_json::from_slice::<ErrorBody>(bytes) {
        Ok(body) => body.into_store_error(),
        Err(_) => StoreError::Backend {
            message: format!(
                "the memory service answered {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
            transient: status.is_server_error(),
            source: None,
        },
    }
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
