//! `openvibe namespaces ls | migrate`: the namespaces with their records
//! per kind (and, with a governance file, their policies), and moving
//! records written before namespaces into one, in PostgreSQL
//! (`--database-url`) or an in-memory snapshot file (`--memory-file`, see
//! [`crate::admin`]).

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use openvibe::governance::Governance;
use openvibe::protocols::{NamespaceCount, RECORD_KINDS, Stores};

use crate::CliError;
use crate::admin::{Opened, Progress, admin, open};
use crate::args::BackendArgs;

/// `openvibe namespaces`: inspect namespaces and move legacy records into
/// one.
#[derive(Subcommand)]
pub enum NamespacesCommand {
    /// List namespaces with their records per kind (and policies, with --governance).
    #[command(after_help = "\
Examples:
  openvibe namespaces ls --database-url postgres://openvibe_app:openvibe_app@127.0.0.1:54329/openvibe
  openvibe namespaces ls --memory-file memory.json --governance governance.yaml")]
    Ls {
        /// Which records.
        #[command(flatten)]
        backend: BackendArgs,
        /// A governance file whose policies to show.
        #[arg(long)]
        governance: Option<PathBuf>,
    },
    /// Move records written before namespaces (or of --from) into --to, in
    /// batches; resumable: run it again to finish an interrupted migration.
    #[command(after_help = "\
Examples:
  openvibe namespaces migrate --to default --dry-run --memory-file memory.json
  openvibe namespaces migrate --to default --database-url $DATABASE_URL --batch 1000")]
    Migrate {
        /// Which records.
        #[command(flatten)]
        backend: BackendArgs,
        /// The target namespace.
        #[arg(long)]
        to: String,
        /// The source namespace (default: none, i.e. legacy records).
        #[arg(long, default_value = "")]
        from: String,
        /// Records per batch (one transaction each).
        #[arg(long, default_value_t = 500)]
        batch: usize,
        /// Only say what would move.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Run a `namespaces` command, printing to `out`.
pub async fn run(command: NamespacesCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        NamespacesCommand::Ls {
            backend,
            governance,
        } => {
            let governance = governance
                .as_deref()
                .map(crate::serve::read_governance)
                .transpose()?;
            let opened = open(&backend.backend()?).await?;
            ls(&opened.stores, &backend.tenant, governance.as_ref(), out).await
        }
        NamespacesCommand::Migrate {
            backend,
            to,
            from,
            batch,
            dry_run,
        } => {
            let opened = open(&backend.backend()?).await?;
            migrate(
                &opened,
                &Migration {
                    tenant: backend.tenant.clone(),
                    from,
                    to,
                    batch,
                    dry_run,
                },
                Progress::detect(),
                out,
            )
            .await
            .map(|_| ())
        }
    }
}

/// `namespaces ls`: every namespace with its records per kind and, with a
/// governance file, its policy.
pub async fn ls(
    stores: &Stores,
    tenant: &str,
    governance: Option<&Governance>,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let counts = stores.admin.namespace_counts(&admin(tenant)).await?;
    let mut names: Vec<String> = counts.iter().map(|c| c.namespace.clone()).collect();
    if let Some(g) = governance {
        names.extend(g.file().namespaces.keys().cloned());
        names.push(g.shared_namespace().to_owned());
    }
    names.sort();
    names.dedup();
    writeln!(
        out,
        "{:<20} {:>8}  records by kind; policy",
        "NAMESPACE", "RECORDS"
    )?;
    for ns in &names {
        let mine: Vec<&NamespaceCount> = counts.iter().filter(|c| &c.namespace == ns).collect();
        let total: u64 = mine.iter().map(|c| c.records).sum();
        let kinds = mine
            .iter()
            .map(|c| format!("{} {}", c.records, c.kind))
            .collect::<Vec<_>>()
            .join(", ");
        let label = if ns.is_empty() { "(none: legacy)" } else { ns };
        writeln!(
            out,
            "{label:<20} {total:>8}  {}",
            if kinds.is_empty() { "-" } else { &kinds }
        )?;
        if let Some(g) = governance {
            if let Some(p) = g.file().namespaces.get(ns) {
                let list = |l: &[String]| {
                    if l.is_empty() {
                        "-".to_owned()
                    } else {
                        l.join(",")
                    }
                };
                writeln!(
                    out,
                    "{:<20} {:>8}  read {} · write {} · delete {} · manage {}{}",
                    "",
                    "",
                    list(&p.read),
                    list(&p.write),
                    list(&p.delete),
                    list(&p.manage),
                    if p.project_scoped {
                        " · per project"
                    } else {
                        ""
                    }
                )?;
            } else if ns == g.shared_namespace() {
                writeln!(
                    out,
                    "{:<20} {:>8}  everyone: read, write, delete own",
                    "", ""
                )?;
            } else if !ns.is_empty() {
                writeln!(
                    out,
                    "{:<20} {:>8}  undeclared: only a principal at home there",
                    "", ""
                )?;
            }
        }
    }
    Ok(())
}

/// What `namespaces migrate` does.
#[derive(Debug, Clone)]
pub struct Migration {
    /// The tenant.
    pub tenant: String,
    /// The source namespace (`""`: legacy records).
    pub from: String,
    /// The target namespace.
    pub to: String,
    /// Records per batch.
    pub batch: usize,
    /// Count only.
    pub dry_run: bool,
}

/// `namespaces migrate`: move legacy records (`from`, default `""`) into
/// `to`, kind by kind, in batches of `batch`; resumable (a rerun moves what
/// is left). `dry_run`: count only. Returns how many records moved (or
/// would move).
pub async fn migrate(
    opened: &Opened,
    migration: &Migration,
    progress: Progress,
    out: &mut impl Write,
) -> Result<u64, CliError> {
    let Migration {
        tenant,
        from,
        to,
        batch,
        dry_run,
    } = migration;
    let (tenant, from, to, batch, dry_run) = (
        tenant.as_str(),
        from.as_str(),
        to.as_str(),
        *batch,
        *dry_run,
    );
    if to.is_empty() || to == from {
        return Err(CliError::Usage(format!(
            "--to must name another namespace than `{from}`"
        )));
    }
    let ctx = admin(tenant);
    let counts = opened.stores.admin.namespace_counts(&ctx).await?;
    let pending: Vec<(&str, u64)> = RECORD_KINDS
        .iter()
        .filter_map(|kind| {
            counts
                .iter()
                .find(|c| c.kind == *kind && c.namespace == from)
                .map(|c| (*kind, c.records))
        })
        .collect();
    let total: u64 = pending.iter().map(|(_, n)| n).sum();
    let source = if from.is_empty() {
        "(none: legacy)"
    } else {
        from
    };
    if dry_run {
        for (kind, n) in &pending {
            writeln!(out, "would move {n} {kind} record(s) from {source} to {to}")?;
        }
        writeln!(
            out,
            "dry run: {total} record(s) would move; nothing changed"
        )?;
        return Ok(total);
    }
    let bar = progress.bar(total, "{spinner} migrating [{bar:30}] {pos}/{len} {msg}");
    let mut moved = 0;
    for (kind, _) in &pending {
        loop {
            let n = opened
                .stores
                .admin
                .move_namespace(&ctx, kind, from, to, batch.max(1))
                .await?;
            if n == 0 {
                break;
            }
            moved += n;
            match &bar {
                Some(bar) => {
                    bar.set_message((*kind).to_owned());
                    bar.inc(n);
                }
                None => eprintln!("migrate: {moved}/{total} ({n} {kind} record(s) moved)"),
            }
            // A file backend is saved after every batch, so a crash loses
            // at most the batch in flight (a rerun finishes the rest).
            opened.save()?;
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    opened.save()?;
    writeln!(out, "moved {moved} record(s) from {source} to {to}")?;
    Ok(moved)
}
