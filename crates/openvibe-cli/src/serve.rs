//! `openvibe serve`: the memory service on PostgreSQL or in process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use openvibe::governance::Governance;
use openvibe::service::{Access, Readiness, Service, ServiceConfig};

use crate::CliError;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// PostgreSQL (`None`: in-process memory, lost when the process ends).
    pub database_url: Option<String>,
    /// The governance file (`None`: development mode, no keys, loopback only).
    pub governance: Option<PathBuf>,
    /// The tenant of development-mode requests that state no caller.
    pub tenant: String,
    /// Limits.
    pub config: ServiceConfig,
}

/// The governance file at `path` (positioned errors name it).
pub fn read_governance(path: &std::path::Path) -> Result<Governance, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    Ok(Governance::from_yaml(&text, path.display().to_string())?)
}

/// The stores and access `options` describe, and a readiness check.
async fn backend(
    options: &ServeOptions,
) -> Result<(openvibe::protocols::Stores, Access, Option<Readiness>), CliError> {
    let (stores, ready): (_, Option<Readiness>) = match &options.database_url {
        Some(url) => {
            let pg = openvibe::postgres::PgStores::connect(url).await?;
            let pool = pg.pool().clone();
            let ready: Readiness = Arc::new(move || {
                let pool = pool.clone();
                Box::pin(async move {
                    openvibe::postgres::ping(&pool)
                        .await
                        .map_err(|e| e.to_string())
                })
            });
            (pg.stores(), Some(ready))
        }
        None => (openvibe::memory::in_memory_stores(), None),
    };
    let access = match &options.governance {
        Some(path) => Access::Governed(Arc::new(read_governance(path)?)),
        None if options.addr.ip().is_loopback() => Access::open(options.tenant.clone()),
        None => {
            return Err(CliError::Usage(format!(
                "without --governance the service takes no API keys (development mode), so it \
                 only listens on a loopback address, not {}",
                options.addr
            )));
        }
    };
    Ok((stores, access, ready))
}

/// Build the service `options` describe.
pub async fn service(options: &ServeOptions) -> Result<Service, CliError> {
    let (stores, access, ready) = backend(options).await?;
    let inbox = stores.inbox.clone();
    let mut service = Service::new(stores, access).with_config(options.config.clone());
    if let Some(ready) = ready {
        service = service.with_readiness(ready);
        // On PostgreSQL every instance takes events into the durable
        // inbox, for the loop processes that lease from it (`openvibe run
        // --loop --inbox`), wherever they run.
        service = service.with_inbox(Arc::new(openvibe::protocols::StoreInbox::new(inbox)));
    }
    Ok(service)
}

/// Serve until Ctrl-C or SIGTERM, then finish the requests in flight.
pub async fn serve(options: ServeOptions) -> Result<(), CliError> {
    let service = service(&options).await?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| CliError::Usage(format!("cannot listen on {}: {e}", options.addr)))?;
    let addr = listener.local_addr()?;
    eprintln!(
        "memory service on http://{addr} ({}, {}); OpenAPI at http://{addr}/openapi.json; \
         console at http://{addr}/console",
        if options.database_url.is_some() {
            "PostgreSQL; events for the roles' loops into the durable inbox at \
             /v1/loop/{role}/events"
        } else {
            "in-process memory: lost when it stops"
        },
        if options.governance.is_some() {
            "API keys from the governance file"
        } else {
            "development mode: no API keys"
        }
    );
    service.serve(listener, shutdown_signal()).await?;
    eprintln!("memory service stopped");
    Ok(())
}

/// Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Where a server's memory lives, and its policy (`serve`, `mcp`).
#[derive(Debug, Clone, clap::Args)]
pub struct ServedArgs {
    /// Keep memory in this PostgreSQL database.
    #[arg(long, env = "OPENVIBE_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Keep memory in this process (lost when it stops): for development.
    /// Wins over OPENVIBE_DATABASE_URL.
    #[arg(long)]
    pub memory: bool,
    /// The governance file: API keys, principals, namespace policies.
    #[arg(long)]
    pub governance: Option<PathBuf>,
}

impl ServedArgs {
    /// Where memory lives: the database URL, or `None` for in-process
    /// memory (`--memory`, which wins over `OPENVIBE_DATABASE_URL`);
    /// neither is a usage error.
    pub fn location(&self) -> Result<Option<String>, CliError> {
        match (&self.database_url, self.memory) {
            (_, true) => Ok(None),
            (Some(url), false) => Ok(Some(url.clone())),
            (None, false) => Err(CliError::Usage(
                "say where memory lives: --database-url URL (or OPENVIBE_DATABASE_URL), \
                 or --memory for in-process memory (development)"
                    .into(),
            )),
        }
    }
}

/// Serve the MCP tools on stdio, as the caller `api_key` names (development
/// mode without --governance: `user:anonymous` in the tenant).
pub async fn mcp_stdio(options: ServeOptions, api_key: Option<String>) -> Result<(), CliError> {
    let (stores, access, _) = backend(&options).await?;
    let authorization = api_key.map(|k| format!("Bearer {k}"));
    let (caller, projects) = access
        .identify(authorization.as_deref(), None)
        .map_err(|f| CliError::Usage(f.error_body().error.message.clone()))?;
    openvibe::service::mcp::serve_stdio(stores, caller, projects).await?;
    Ok(())
}

/// What `openvibe serve` is asked: its command line (the field docs are
/// its `--help`).
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Without --governance the service runs in development mode: no API keys, and
only on a loopback address. With it, every request needs an API key the file
lists (Authorization: Bearer <key>); see docs/governance.md.

The web console is at /console: people sign in with a key of the governance
file (in development mode, without one) to approve proposals, read beliefs
with their provenance, the memory, the audit trail, goals and spaces; see
docs/console.md.

Examples:
  openvibe serve --memory                                    development, in process
  openvibe serve --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe \\
                 --governance governance.yaml --addr 0.0.0.0:8077
  curl -s http://127.0.0.1:8077/openapi.json                 the API, as OpenAPI 3.1")]
pub struct ServeCommand {
    /// Listen on this address.
    #[arg(long, default_value = "127.0.0.1:8077")]
    pub addr: SocketAddr,
    /// Where memory lives, and the policy.
    #[command(flatten)]
    pub served: ServedArgs,
    /// Development mode: the tenant of requests that state no caller.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    /// Requests handled at once; more get 503 with retry-after.
    #[arg(long, default_value_t = 512)]
    pub max_in_flight: usize,
    /// The largest request body, in bytes (413 beyond).
    #[arg(long, default_value_t = openvibe::service::DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// Seconds a request may take (504 beyond).
    #[arg(long, default_value_t = 30)]
    pub request_timeout: u64,
    /// A host name (or host:port) the MCP endpoint answers besides the
    /// loopback ones; repeat for several. It refuses other Host headers
    /// (DNS-rebinding protection), so name yours when serving beyond this machine.
    #[arg(long = "mcp-host", value_name = "HOST")]
    pub mcp_hosts: Vec<String>,
    /// Minutes a console session lasts without a request.
    #[arg(long, default_value_t = 30, value_name = "MINUTES")]
    pub console_idle_timeout: u64,
    /// Mark the console's session cookie `Secure`: set it when a
    /// TLS-terminating proxy serves the console (a request with
    /// `X-Forwarded-Proto: https` gets it anyway).
    #[arg(long)]
    pub console_secure_cookies: bool,
}

/// Run `openvibe serve` as `command` says: [`serve`] until stopped.
pub async fn serve_command(command: ServeCommand) -> Result<(), CliError> {
    let ServeCommand {
        addr,
        served,
        tenant,
        max_in_flight,
        body_limit,
        request_timeout,
        mcp_hosts,
        console_idle_timeout,
        console_secure_cookies,
    } = command;
    let database_url = served.location()?;
    let governance = served.governance;
    let mut config = ServiceConfig::default();
    config.max_in_flight = max_in_flight;
    config.body_limit = body_limit;
    config.request_timeout = std::time::Duration::from_secs(request_timeout);
    config.mcp_allowed_hosts.extend(mcp_hosts);
    config.console_idle_timeout =
        std::time::Duration::from_secs(console_idle_timeout.max(1).saturating_mul(60));
    config.console_secure_cookies = console_secure_cookies;
    serve(ServeOptions {
        addr,
        database_url,
        governance,
        tenant,
        config,
    })
    .await
}

/// What `openvibe mcp` is asked: its command line (the field docs are its
/// `--help`).
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = mcp_help())]
pub struct McpCommand {
    /// Where memory lives, and the policy.
    #[command(flatten)]
    pub served: ServedArgs,
    /// The API key to act with (with --governance).
    #[arg(long, env = "OPENVIBE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Development mode: the tenant to act in.
    #[arg(long, default_value = "default")]
    pub tenant: String,
}

/// Run `openvibe mcp`: the MCP tools on stdio ([`mcp_stdio`]), with memory
/// in `database_url` or (`memory`) in this process, acting as the caller
/// `api_key` names in `governance` (development mode without it: in
/// `tenant`).
pub async fn mcp_command(command: McpCommand) -> Result<(), CliError> {
    let McpCommand {
        served,
        api_key,
        tenant,
    } = command;
    let database_url = served.location()?;
    let governance = served.governance;
    mcp_stdio(
        ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url,
            governance,
            tenant,
            config: ServiceConfig::default(),
        },
        api_key,
    )
    .await
}

/// `openvibe mcp --help`'s closing text: the server's own tool list (the
/// same tools as the service's `/mcp` endpoint), so the help cannot
/// forget one.
pub fn mcp_help() -> String {
    let mut help = String::from("Tools (the same as the service's /mcp endpoint):\n");
    for (name, description) in openvibe::service::mcp::MemoryTools::tools() {
        help.push_str(&format!("  {name}: {description}\n"));
    }
    help.push_str(
        "\nEvery call acts as the principal the API key names in the governance file, writes\nits source, and may name only the projects the key is granted (`projects:`).\n\n\
         Examples:\n  openvibe mcp --memory\n  \
         OPENVIBE_API_KEY=... openvibe mcp --database-url postgres://... --governance governance.yaml",
    );
    help
}
