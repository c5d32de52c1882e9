//! `openvibe memory reindex | forget`: embed the records that have no
//! current vector of the embedding model, and erase everything about a
//! subject, in PostgreSQL (`--database-url`) or, for `forget`, an in-memory
//! snapshot file (`--memory-file`, see [`crate::admin`]).

use std::io::Write;
use std::sync::Arc;

use clap::Subcommand;
use openvibe::memory::ForgetOptions;
use openvibe::protocols::{ErasureSubject, RecordVectors};

use crate::CliError;
use crate::admin::{Opened, Progress, admin, open};
use crate::args::BackendArgs;
use crate::demo::{EmbedderChoice, make_embedder};

/// `openvibe memory`: memory maintenance.
#[derive(Subcommand)]
pub enum MemoryCommand {
    /// Embed the records (facts, insights, episodes, knowledge) that have no
    /// current vector of the embedding model: after a model change, after
    /// the embedder was down, or for records written before embeddings.
    /// Batched and resumable; records are not rewritten.
    #[command(after_help = "\
Needs the local embedding model (`cargo xtask models fetch`) and a build with
the `local-embed` feature (the default).

Examples:
  openvibe memory reindex --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe
  openvibe memory reindex --database-url $DATABASE_URL --tenant acme --batch 128
  openvibe memory reindex --database-url $DATABASE_URL --status       only say what waits")]
    Reindex {
        /// The PostgreSQL database.
        #[arg(long, env = "OPENVIBE_DATABASE_URL")]
        database_url: String,
        /// The tenant.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Records per embedder call.
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Only print how many records have a current vector and how many wait.
        #[arg(long)]
        status: bool,
    },
    /// Erase everything about a subject: an entity (records whose entity is
    /// it or whose texts name it as a whole word), everything a principal
    /// owns, or one namespace. Every kind, expired records included, with
    /// their vectors, postings and the raw calls behind an erased episode;
    /// in batches (one transaction each), resumable: run it again to finish
    /// an interrupted erasure. Audit entries quoting the subject are
    /// redacted, the redaction recorded in the hash chain, and the erasure
    /// itself audited (who, when, the subject, counts per kind).
    #[command(after_help = "\
Prints a verification report: per kind, the records matched before, deleted,
and found after (must be 0), then the vectors and postings left without their
record (must be 0). Exits with 1 when anything is left.

Examples:
  openvibe memory forget --entity acme_corp --dry-run --database-url $DATABASE_URL
  openvibe memory forget --entity acme_corp --database-url $DATABASE_URL
  openvibe memory forget --owner agent:intern --database-url $DATABASE_URL --batch 1000
  openvibe memory forget --namespace scratch --memory-file memory.json")]
    #[command(group(clap::ArgGroup::new("subject").required(true).args(["entity", "owner", "namespace"])))]
    Forget {
        /// Which records.
        #[command(flatten)]
        backend: BackendArgs,
        /// Everything about this entity.
        #[arg(long)]
        entity: Option<String>,
        /// Everything this principal owns (`agent:cro`, `user:ann`).
        #[arg(long)]
        owner: Option<String>,
        /// Everything in this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Records per batch (one transaction each).
        #[arg(long, default_value_t = 500)]
        batch: usize,
        /// Only count what would go; nothing changes.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Run a `memory` command, printing to `out`; `forget` fails when it
/// leaves records behind.
pub async fn run(command: MemoryCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        MemoryCommand::Reindex {
            database_url,
            tenant,
            batch,
            status,
        } => {
            let (embedder, _) = make_embedder(EmbedderChoice::Local)?;
            let embedder = embedder
                .ok_or_else(|| CliError::Embedding("reindexing needs an embedding model".into()))?;
            reindex(
                &database_url,
                &tenant,
                embedder,
                Reindexing { batch, status },
                Progress::detect(),
                out,
            )
            .await
            .map(drop)
        }
        MemoryCommand::Forget {
            backend,
            entity,
            owner,
            namespace,
            batch,
            dry_run,
            json,
        } => {
            let subject = match (entity, owner, namespace) {
                (Some(e), _, _) => ErasureSubject::Entity(e),
                (_, Some(o), _) => ErasureSubject::Owner(o),
                (_, _, Some(n)) => ErasureSubject::Namespace(n),
                _ => {
                    return Err(CliError::Usage(
                        "name --entity, --owner or --namespace".into(),
                    ));
                }
            };
            let opened = open(&backend.backend()?).await?;
            let report = forget(
                &opened,
                &backend.tenant,
                &subject,
                ForgetOptions { batch, dry_run },
                Progress::detect(),
                json,
                out,
            )
            .await?;
            if report.complete() || report.dry_run {
                Ok(())
            } else {
                Err(CliError::Incomplete(format!(
                    "the erasure of {} left records behind (see the report)",
                    report.subject.describe()
                )))
            }
        }
    }
}

/// `memory forget`: erase everything about `subject` in `tenant`
/// ([`openvibe::memory::forget`]), with a progress bar, then print the
/// verification report (a table, or JSON). A file backend is saved.
pub async fn forget(
    opened: &Opened,
    tenant: &str,
    subject: &openvibe::protocols::ErasureSubject,
    options: ForgetOptions,
    progress: Progress,
    json: bool,
    out: &mut impl Write,
) -> Result<openvibe::protocols::ErasureReport, CliError> {
    let ctx = admin(tenant);
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut report_progress = |done: u64, total: u64| match progress {
        Progress::Bar => {
            let b = bar.get_or_insert_with(|| {
                Progress::Bar
                    .bar(total, "{spinner} erasing [{bar:30}] {pos}/{len}")
                    .unwrap_or_else(indicatif::ProgressBar::hidden)
            });
            b.set_position(done);
        }
        Progress::Lines => {
            if done > 0 {
                eprintln!("forget: {done}/{total} record(s) erased");
            }
        }
    };
    let report = openvibe::memory::forget(
        opened.stores.admin.as_ref(),
        opened.stores.audit.as_ref(),
        &ctx,
        subject,
        options,
        &mut report_progress,
    )
    .await?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    opened.save()?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(report);
    }
    writeln!(
        out,
        "{} {} in tenant {tenant}{}",
        if report.dry_run {
            "would erase"
        } else {
            "erased"
        },
        subject.describe(),
        if report.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "{:<14} {:>10} {:>10} {:>10}",
        "kind", "matched", "deleted", "after"
    )?;
    for k in &report.kinds {
        writeln!(
            out,
            "{:<14} {:>10} {:>10} {:>10}",
            k.kind, k.matched, k.deleted, k.after
        )?;
    }
    writeln!(
        out,
        "audit entries {} {}",
        if report.dry_run {
            "to redact:"
        } else {
            "redacted:"
        },
        report.audit_redacted
    )?;
    if !report.dry_run {
        writeln!(
            out,
            "{}",
            if report.complete() {
                "verified: nothing about the subject is left"
            } else {
                "NOT COMPLETE: records are left (see `after`)"
            }
        )?;
    }
    Ok(report)
}

/// What `memory reindex` is asked.
#[derive(Debug, Clone, Copy)]
pub struct Reindexing {
    /// Records per embedder call.
    pub batch: usize,
    /// Only report the status.
    pub status: bool,
}

/// `memory reindex`: embed with `embedder` every record of `tenant` that has
/// no current vector of its model, in the background ([`openvibe::memory::Reindex`]),
/// showing progress; returns how many were embedded.
pub async fn reindex(
    url: &str,
    tenant: &str,
    embedder: Arc<dyn openvibe::protocols::Embedder>,
    reindexing: Reindexing,
    progress: Progress,
    out: &mut impl Write,
) -> Result<u64, CliError> {
    let stores = openvibe::postgres::PgStores::connect(url)
        .await?
        .with_embedder(embedder)
        .await?;
    let vectors: Arc<dyn RecordVectors> = stores.vectors();
    let ctx = admin(tenant);
    let status = vectors.vector_status(&ctx).await?;
    let model = status.model.clone().unwrap_or_default();
    for kind in &status.kinds {
        writeln!(
            out,
            "{:<9} {} with a current vector, {} waiting",
            kind.kind, kind.embedded, kind.pending
        )?;
    }
    if reindexing.status {
        writeln!(out, "model {model}: {} record(s) waiting", status.pending())?;
        return Ok(0);
    }
    let mut reindex = openvibe::memory::Reindex::spawn(vectors, ctx, reindexing.batch).await?;
    let total = reindex.progress().pending_at_start;
    let bar = progress.bar(
        total,
        "{spinner} embedding [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
    );
    while reindex.changed().await {
        let done = reindex.progress().embedded;
        match &bar {
            Some(bar) => {
                // Records written meanwhile wait too: the bar grows with them.
                if done > bar.length().unwrap_or(0) {
                    bar.set_length(done);
                }
                bar.set_position(done);
            }
            None => eprintln!("reindex: {done}/{total} embedded"),
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let embedded = reindex.finish().await?;
    writeln!(
        out,
        "embedded {embedded} record(s) with {model}; none waits (records unchanged)"
    )?;
    Ok(embedded)
}
