//! `openvibe demo --full`: the source design's full example
//! ([`openvibe::full_example`]) with a report of the memory pyramid it
//! leaves: the raw calls (L1) by episode (L2), the insights (L3) with the
//! calls they cite, and what was published.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use openvibe::RoleRuntime;
use openvibe::full_example::{self, CASSETTE, FullRun, stand_in};

use crate::CliError;
use crate::demo::{Options, finish, indent, make_llm_for, make_stores, tree};

/// A directory of its own for the configuration files, removed on drop.
struct ConfigDir(PathBuf);

impl ConfigDir {
    fn new() -> Result<Self, CliError> {
        let dir = std::env::temp_dir().join(format!(
            "openvibe-full-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        full_example::write_config(&dir).map_err(|e| CliError::Io {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        Ok(Self(dir))
    }
}

impl Drop for ConfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run the full example as `options` say and print what happened.
pub async fn execute(
    options: &Options,
    llm_label: &str,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let llm = make_llm_for(
        options,
        (CASSETTE, "examples/full/cassette.jsonl"),
        Arc::new(stand_in()),
    )?;
    let (stores, tenant, backend, purge) = make_stores(options).await?;
    let config = ConfigDir::new()?;
    writeln!(
        out,
        "== the full example: a CRO with RevenueOps and ContentEngine, loaded from a configuration directory"
    )?;
    writeln!(out, "   model: {llm_label}")?;
    writeln!(out, "   memory: {backend}")?;
    let runtime = RoleRuntime::new(llm)
        .with_tenant(tenant.clone())
        .with_stores(stores);
    let result = async {
        let run = full_example::run(&config.0, runtime).await?;
        report(&run, out).await
    }
    .await;
    finish(purge, &tenant, result).await
}

async fn report(run: &FullRun, out: &mut dyn Write) -> Result<(), CliError> {
    for (workflow, state) in &run.states {
        writeln!(out, "\n== {workflow}")?;
        let shown = serde_json::to_string_pretty(state)?;
        writeln!(out, "{}", indent(&shown))?;
    }
    writeln!(
        out,
        "\n== L1 raw log: {} LLM calls ({} tokens in, {} out)",
        run.raw_calls.len(),
        run.raw_calls.iter().map(|c| c.tokens_in).sum::<u64>(),
        run.raw_calls.iter().map(|c| c.tokens_out).sum::<u64>(),
    )?;
    writeln!(
        out,
        "\n== L2 episodes, each with the raw calls it was made from"
    )?;
    for episode in run.episodes.iter().rev() {
        let calls: Vec<_> = run
            .raw_calls
            .iter()
            .filter(|c| c.episode_id.as_deref() == Some(episode.id.as_str()))
            .collect();
        writeln!(
            out,
            "- {}/{}: {} call(s), {} tokens in, {} out",
            episode.operator_id,
            episode.node_name,
            calls.len(),
            episode.tokens_in,
            episode.tokens_out
        )?;
    }
    let outside = run
        .raw_calls
        .iter()
        .filter(|c| c.episode_id.is_none())
        .count();
    writeln!(out, "- outside any node (reflection): {outside} call(s)")?;
    let reflection = &run.distillation.reflection;
    writeln!(
        out,
        "\n== L3 insights from {} episodes, citing {} raw calls",
        reflection.episodes_considered,
        reflection.cited_calls.len()
    )?;
    for insight in reflection.insights() {
        writeln!(out, "- ({:.2}) {}", insight.confidence, insight.content)?;
    }
    writeln!(
        out,
        "\n== published to the workspace: {} fact(s)",
        run.distillation.published.len()
    )?;
    for fact in &run.distillation.published {
        writeln!(out, "- {}", fact.content)?;
    }
    if let Some(first) = reflection.created.first() {
        let lineage = run.pyramid.trace(&first.id).await?;
        writeln!(
            out,
            "\n== trace of \"{}\": {} episodes, {} raw calls",
            lineage.insight.content,
            lineage.episodes.len(),
            lineage.raw_calls.len()
        )?;
    }
    writeln!(out, "\n== memory tree")?;
    tree(&run.filesystem, out).await
}
