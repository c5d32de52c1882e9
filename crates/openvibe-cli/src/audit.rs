//! `openvibe audit tail | verify | anchor`: read the audit trail, check its
//! hash chain, and print the chain's head to keep elsewhere, in PostgreSQL
//! (`--database-url`; an in-memory trail lives and dies with its process).

use std::io::Write;

use clap::Subcommand;
use openvibe::protocols::{AuditEntry, AuditOp, AuditQuery, ChainHead, Stores};

use crate::CliError;
use crate::admin::{Backend, admin, open};
use crate::args::{BackendArgs, named};

/// `openvibe audit`: read the audit trail.
#[derive(Subcommand)]
pub enum AuditCommand {
    /// The newest audit entries (oldest of them first), filtered.
    #[command(after_help = "\
Examples:
  openvibe audit tail --database-url $DATABASE_URL -n 50
  openvibe audit tail --database-url $DATABASE_URL --principal agent:cro --operation search
  openvibe audit tail --database-url $DATABASE_URL --namespace shared --since 2026-11-01T00:00:00Z")]
    Tail {
        /// Which trail.
        #[command(flatten)]
        backend: BackendArgs,
        /// Only this principal's entries (`agent:cro`, `user:ann`).
        #[arg(long)]
        principal: Option<String>,
        /// Only entries about this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Only this operation.
        #[arg(long, value_parser = named::<AuditOp>())]
        operation: Option<AuditOp>,
        /// Only entries at or after this time (RFC 3339).
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// Only entries before this time (RFC 3339).
        #[arg(long)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// How many entries.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
    },
    /// Check that nobody edited the audit trail: recompute the tenant's
    /// hash chain and report the first entry that does not hold (exit code
    /// 1 when one does not).
    #[command(after_help = "\
Each audit entry carries the hash of the entry before it in its tenant's chain
and its own (SHA-256 over a canonical encoding). An edited entry breaks its own
hash; a removed or inserted one breaks the link after it. Someone who could
rewrite the whole chain from an edit onwards changes its head: keep the head
`openvibe audit anchor` prints somewhere else, and check against it.

Examples:
  openvibe audit verify --database-url $DATABASE_URL
  openvibe audit verify --database-url $DATABASE_URL --anchor 18230:5f2c…e1
  openvibe audit verify --database-url $DATABASE_URL --since 2026-11-01T00:00:00Z")]
    Verify {
        /// Which trail.
        #[command(flatten)]
        backend: BackendArgs,
        /// Start at the first entry at or after this time (RFC 3339),
        /// trusting the hash it names as its predecessor.
        #[arg(long)]
        since: Option<chrono::DateTime<chrono::Utc>>,
        /// A head `openvibe audit anchor` printed earlier: the entry it
        /// names must still carry its hash.
        #[arg(long, value_name = "SEQ:HASH")]
        anchor: Option<String>,
    },
    /// Print the head of the tenant's audit chain (`<number>:<hash>` of its
    /// last entry), to keep somewhere the database's owner cannot write.
    #[command(after_help = "\
Examples:
  openvibe audit anchor --database-url $DATABASE_URL >> ~/audit-anchors.txt
  openvibe audit verify --database-url $DATABASE_URL --anchor \"$(tail -1 ~/audit-anchors.txt)\"")]
    Anchor {
        /// Which trail.
        #[command(flatten)]
        backend: BackendArgs,
    },
}

/// The backend of an `audit` command: a database (an in-memory trail
/// lives and dies with its process).
fn audit_backend(backend: &BackendArgs) -> Result<Backend, CliError> {
    let choice = backend.backend()?;
    if matches!(choice, Backend::File(_)) {
        return Err(CliError::Usage(
            "an in-memory audit trail lives and dies with its process: `audit` needs --database-url".into(),
        ));
    }
    Ok(choice)
}

/// Run an `audit` command, printing to `out`; `verify` fails when the
/// chain is broken.
pub async fn run(command: AuditCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        AuditCommand::Tail {
            backend,
            principal,
            namespace,
            operation,
            since,
            until,
            lines,
        } => {
            let opened = open(&audit_backend(&backend)?).await?;
            let query = AuditQuery {
                principal,
                namespace,
                operation,
                since,
                until,
                limit: lines,
                ..AuditQuery::new()
            };
            tail(&opened.stores, &backend.tenant, &query, out).await
        }
        AuditCommand::Verify {
            backend,
            since,
            anchor,
        } => {
            let opened = open(&audit_backend(&backend)?).await?;
            let anchor = anchor
                .map(|token| ChainHead::parse_token(&backend.tenant, &token))
                .transpose()?;
            verify(&opened.stores, &backend.tenant, since, anchor, out).await
        }
        AuditCommand::Anchor { backend } => {
            let opened = open(&audit_backend(&backend)?).await?;
            anchor(&opened.stores, &backend.tenant, out).await
        }
    }
}

/// `audit tail`: the newest entries matching `query`, oldest of them first.
pub async fn tail(
    stores: &Stores,
    tenant: &str,
    query: &AuditQuery,
    out: &mut impl Write,
) -> Result<(), CliError> {
    stores.audit.flush().await?;
    let mut entries = stores.audit.query(&admin(tenant), query).await?;
    entries.reverse();
    for e in &entries {
        writeln!(out, "{}", line(e))?;
    }
    Ok(())
}

/// `audit verify`: walk the tenant's chain; a break is an error (exit 1)
/// after its report.
pub async fn verify(
    stores: &Stores,
    tenant: &str,
    since: Option<chrono::DateTime<chrono::Utc>>,
    anchor: Option<openvibe::protocols::ChainHead>,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let request = openvibe::protocols::VerifyChain { since, anchor };
    let report = stores.audit.verify(&admin(tenant), &request).await?;
    let range = if report.checked == 0 {
        "no entries".to_owned()
    } else {
        format!(
            "{} entries ({}..{})",
            report.checked, report.from, report.head.chain_seq
        )
    };
    match &report.broken {
        None => {
            writeln!(
                out,
                "audit chain of tenant `{tenant}`: {range} checked, intact; head {}",
                report.head.token()
            )?;
            if !report.redacted.is_empty() {
                let shown: Vec<String> = report
                    .redacted
                    .iter()
                    .take(20)
                    .map(u64::to_string)
                    .collect();
                writeln!(
                    out,
                    "{} entr{} redacted by an erasure, as the chain records: {}{}",
                    report.redacted.len(),
                    if report.redacted.len() == 1 {
                        "y"
                    } else {
                        "ies"
                    },
                    shown.join(", "),
                    if report.redacted.len() > 20 {
                        ", …"
                    } else {
                        ""
                    }
                )?;
            }
            Ok(())
        }
        Some(b) => {
            writeln!(
                out,
                "audit chain of tenant `{tenant}`: BROKEN at entry {} (trail position {}): {} expected {}, found {}",
                b.chain_seq, b.seq, b.what, b.expected, b.found
            )?;
            Err(CliError::ChainBroken(format!(
                "entry {} of tenant `{tenant}` ({}); {range} checked",
                b.chain_seq, b.what
            )))
        }
    }
}

/// `audit anchor`: the chain's head, `<number>:<hash>`.
pub async fn anchor(stores: &Stores, tenant: &str, out: &mut impl Write) -> Result<(), CliError> {
    let head = stores.audit.anchor(&admin(tenant)).await?;
    writeln!(out, "{}", head.token())?;
    Ok(())
}

/// One entry as a line.
pub fn line(e: &AuditEntry) -> String {
    let mut line = format!(
        "{} {:<8} {:<7} {:<12} {}",
        e.at.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        e.status.as_str(),
        e.operation.as_str(),
        e.kind,
        e.principal
    );
    if let Some(ns) = &e.namespace {
        line.push_str(&format!(" ns={}", if ns.is_empty() { "-" } else { ns }));
    }
    if let Some(p) = &e.project_id {
        line.push_str(&format!(" project={p}"));
    }
    if let Some(id) = &e.record_id {
        line.push_str(&format!(" id={id}"));
    }
    if let Some(k) = e.top_k {
        line.push_str(&format!(" top_k={k}"));
    }
    if let Some(f) = &e.filters {
        line.push_str(&format!(" {f}"));
    }
    if let Some(r) = &e.reason {
        line.push_str(&format!(" reason={r:?}"));
    }
    line
}
