//! Maintenance commands: `namespaces ls`, `namespaces migrate`, `audit tail`,
//! `memory reindex`,
//! against PostgreSQL (`--database-url`) or an in-memory snapshot file
//! (`--memory-file`, JSON of [`MemorySnapshot`]; `migrate` writes it back).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use openvibe::governance::Governance;
use openvibe::in_memory::{MemorySnapshot, SnapshotHandle};
use openvibe::protocols::RECORD_KINDS;
use std::sync::Arc;

use openvibe::protocols::{
    AuditEntry, AuditQuery, CallerContext, NamespaceCount, RecordVectors, Stores,
};

use crate::CliError;

/// Where the records are.
pub enum Backend {
    /// A PostgreSQL database.
    Postgres(String),
    /// A JSON snapshot file.
    File(PathBuf),
}

/// An opened backend: its stores, and for a file what to save.
pub struct Opened {
    /// The stores.
    pub stores: Stores,
    file: Option<(PathBuf, SnapshotHandle)>,
}

impl Opened {
    /// Write a file backend back (atomically: a temporary file renamed).
    pub fn save(&self) -> Result<(), CliError> {
        let Some((path, handle)) = &self.file else {
            return Ok(());
        };
        let snapshot = handle.snapshot()?;
        let text = serde_json::to_string_pretty(&snapshot)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(|e| io(&tmp, &e))?;
        std::fs::rename(&tmp, path).map_err(|e| io(path, &e))
    }
}

fn io(path: &Path, e: &std::io::Error) -> CliError {
    CliError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// Open `backend`.
pub async fn open(backend: &Backend) -> Result<Opened, CliError> {
    match backend {
        Backend::Postgres(url) => Ok(Opened {
            stores: openvibe::postgres::PgStores::connect(url).await?.stores(),
            file: None,
        }),
        Backend::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| io(path, &e))?;
            let snapshot: MemorySnapshot =
                serde_json::from_str(&text).map_err(|e| CliError::Spec {
                    path: path.clone(),
                    message: format!("not a memory snapshot: {e}"),
                })?;
            let (stores, handle) = snapshot.into_stores()?;
            Ok(Opened {
                stores,
                file: Some((path.clone(), handle)),
            })
        }
    }
}

/// The maintenance caller of `tenant`: the system, privileged.
pub fn admin(tenant: &str) -> CallerContext {
    CallerContext::system().with_tenant(tenant)
}

/// `namespaces ls`: every namespace with its records per kind and, with a
/// governance file, its policy.
pub async fn namespaces_ls(
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

/// How `namespaces migrate` and `memory reindex` report progress.
pub enum Progress {
    /// A progress bar (a terminal).
    Bar,
    /// A plain line per batch.
    Lines,
}

impl Progress {
    /// A bar of `total` steps drawn with `template` (`Bar`), or none (`Lines`).
    pub fn bar(self, total: u64, template: &str) -> Option<indicatif::ProgressBar> {
        match self {
            Self::Bar => {
                let bar = indicatif::ProgressBar::new(total);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                Some(bar)
            }
            Self::Lines => None,
        }
    }

    /// A bar on a terminal, lines otherwise.
    pub fn detect() -> Self {
        if std::io::stderr().is_terminal() {
            Self::Bar
        } else {
            Self::Lines
        }
    }
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
pub async fn namespaces_migrate(
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

/// `memory forget`: erase everything about `subject` in `tenant`
/// ([`openvibe::protocols::forget`]), with a progress bar, then print the
/// verification report (a table, or JSON). A file backend is saved.
pub async fn memory_forget(
    opened: &Opened,
    tenant: &str,
    subject: &openvibe::protocols::ErasureSubject,
    options: openvibe::protocols::ForgetOptions,
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
    let report = openvibe::protocols::forget(
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
pub async fn memory_reindex(
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

/// `audit tail`: the newest entries matching `query`, oldest of them first.
pub async fn audit_tail(
    stores: &Stores,
    tenant: &str,
    query: &AuditQuery,
    out: &mut impl Write,
) -> Result<(), CliError> {
    stores.audit.flush().await?;
    let mut entries = stores.audit.query(&admin(tenant), query).await?;
    entries.reverse();
    for e in &entries {
        writeln!(out, "{}", audit_line(e))?;
    }
    Ok(())
}

/// `audit verify`: walk the tenant's chain; a break is an error (exit 1)
/// after its report.
pub async fn audit_verify(
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
pub async fn audit_anchor(
    stores: &Stores,
    tenant: &str,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let head = stores.audit.anchor(&admin(tenant)).await?;
    writeln!(out, "{}", head.token())?;
    Ok(())
}

/// One entry as a line.
pub fn audit_line(e: &AuditEntry) -> String {
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
