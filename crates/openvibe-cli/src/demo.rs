//! Running a role file: activations, reflection between them, and a report
//! of what happened (states, prompts, episodes, insights, the memory tree).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use openvibe::memory::{
    Assembly, MemoryFilesystem, ReflectOptions, Stores, describe_retrievers, in_memory_stores,
};
use openvibe::primitives::testing::RecordReplayProvider;
use openvibe::primitives::{AnthropicProvider, OpenAiProvider, ProviderConfig};
use openvibe::protocols::{
    Embedder, EpisodeQuery, InsightQuery, LlmError, LlmProvider, LlmRequest, LlmResponse,
    RecordMeta, State,
};
use openvibe::{Role, RoleRuntime};

use crate::CliError;
use crate::args::{EmbedderArg, Llm, LlmArgs};
use crate::spec::{Files, RoleFile};
use crate::standin::stand_in;

/// The CRO example, compiled into the binary so `openvibe demo` runs anywhere.
pub const DEMO_FILES: &[(&str, &str)] = &[
    ("role.yaml", include_str!("../demo/cro/role.yaml")),
    ("soul.md", include_str!("../demo/cro/soul.md")),
    ("crm.json", include_str!("../demo/cro/crm.json")),
];

/// The demo's recorded model answers.
pub const DEMO_CASSETTE: &str = include_str!("../demo/cro/cassette.jsonl");

/// Which model answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LlmChoice {
    /// A recorded cassette (the demo's own by default): offline, deterministic.
    #[default]
    Replay,
    /// The deterministic stand-in model the demo cassette was recorded from.
    StandIn,
    /// Anthropic's API (`ANTHROPIC_API_KEY`).
    Anthropic,
    /// An OpenAI-compatible server (`OPENAI_BASE_URL` or `--base-url`, optional `OPENAI_API_KEY`).
    OpenAi,
}

/// What ranks the memory recalled into prompts for a scope's query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmbedderChoice {
    /// Hybrid with the local all-MiniLM-L6-v2 when its files are present
    /// (`cargo xtask models fetch`), else full text only.
    #[default]
    Auto,
    /// Hybrid with the local all-MiniLM-L6-v2; an error without its files.
    Local,
    /// Full text only.
    None,
}

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// What ranks recalled memory.
    pub embedder: EmbedderChoice,
    /// The model.
    pub llm: LlmChoice,
    /// Base URL of the model server.
    pub base_url: Option<String>,
    /// Force this model name (OpenAI-compatible servers).
    pub model: Option<String>,
    /// Replay this cassette instead of the demo's.
    pub cassette: Option<PathBuf>,
    /// Record every exchange to this cassette.
    pub record: Option<PathBuf>,
    /// Record every embedded text and its vector to this cassette.
    pub record_embeddings: Option<PathBuf>,
    /// Reflect (and publish insights) after every run but the last.
    pub reflect: bool,
    /// Keep memory in this PostgreSQL database instead of in process.
    pub database_url: Option<String>,
    /// On PostgreSQL, keep the run's tenant when the run ends (by default
    /// its records are deleted, so demo runs do not accumulate).
    pub keep_memory: bool,
    /// Keep memory in this memory service instead (the remote client).
    pub memory_url: Option<String>,
    /// Its API key.
    pub memory_key: Option<String>,
    /// Act in this tenant (kept when the run ends) instead of the default
    /// one in process, or a fresh one per run on PostgreSQL: what roles in
    /// several processes sharing one database need.
    pub tenant: Option<String>,
}

/// The run options the command line's `args` name (`default` answering
/// without `--llm`; `reflect`: reflect between runs), and how the output
/// names the model.
pub fn run_options(args: &LlmArgs, default: Llm, reflect: bool) -> (Options, String) {
    let llm = args.llm.unwrap_or(default);
    let label = match llm {
        Llm::Replay => format!(
            "replay of {}",
            args.cassette
                .as_ref()
                .map_or("demo/cro/cassette.jsonl".to_owned(), |p| p
                    .display()
                    .to_string())
        ),
        Llm::Standin => "deterministic stand-in".to_owned(),
        Llm::Anthropic => "Anthropic".to_owned(),
        Llm::Openai => format!(
            "OpenAI-compatible{}",
            args.model
                .as_ref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        ),
    };
    let options = Options {
        embedder: match args.embedder {
            EmbedderArg::Auto => EmbedderChoice::Auto,
            EmbedderArg::Local => EmbedderChoice::Local,
            EmbedderArg::None => EmbedderChoice::None,
        },
        llm: match llm {
            Llm::Replay => LlmChoice::Replay,
            Llm::Standin => LlmChoice::StandIn,
            Llm::Anthropic => LlmChoice::Anthropic,
            Llm::Openai => LlmChoice::OpenAi,
        },
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        cassette: args.cassette.clone(),
        record: args.record.clone(),
        record_embeddings: args.record_embeddings.clone(),
        reflect,
        database_url: args.database_url.clone(),
        keep_memory: args.keep_memory,
        memory_url: args.memory_url.clone(),
        memory_key: args.memory_key.clone(),
        tenant: args.tenant.clone(),
    };
    (options, label)
}

/// Build the model `options` asks for (the CRO demo's cassette and stand-in).
pub fn make_llm(options: &Options) -> Result<Arc<dyn LlmProvider>, CliError> {
    make_llm_for(
        options,
        (DEMO_CASSETTE, "demo/cro/cassette.jsonl"),
        Arc::new(stand_in()),
    )
}

/// Build the model `options` asks for, replaying `cassette` (text, name)
/// unless another is given, with `stand_in` as the stand-in model.
pub fn make_llm_for(
    options: &Options,
    cassette: (&str, &str),
    stand_in: Arc<dyn LlmProvider>,
) -> Result<Arc<dyn LlmProvider>, CliError> {
    let llm: Arc<dyn LlmProvider> = match options.llm {
        LlmChoice::Replay => Arc::new(match &options.cassette {
            Some(path) => RecordReplayProvider::replay(path.clone())?,
            None => RecordReplayProvider::replay_str(cassette.0, cassette.1)?,
        }),
        LlmChoice::StandIn => stand_in,
        LlmChoice::Anthropic => Arc::new(match &options.base_url {
            Some(url) => {
                let mut config = ProviderConfig::new(url.clone());
                config.api_key = std::env::var("ANTHROPIC_API_KEY").ok();
                AnthropicProvider::new(config)?
            }
            None => AnthropicProvider::from_env()?,
        }),
        LlmChoice::OpenAi => {
            let provider = match &options.base_url {
                Some(url) => {
                    let mut config = ProviderConfig::new(url.clone());
                    config.api_key = std::env::var("OPENAI_API_KEY")
                        .ok()
                        .filter(|k| !k.is_empty());
                    OpenAiProvider::new(config)?
                }
                None => OpenAiProvider::from_env()?,
            };
            Arc::new(match &options.model {
                Some(model) => provider.with_model(model.clone()),
                None => provider,
            })
        }
    };
    Ok(match &options.record {
        Some(path) => Arc::new(RecordReplayProvider::record(llm, path.clone())),
        None => llm,
    })
}

/// `embedder`, recording every text it embeds to the cassette `options`
/// name (`--record-embeddings`), when they name one.
pub(crate) fn recording_embeddings(
    embedder: Option<Arc<dyn Embedder>>,
    options: &Options,
) -> Option<Arc<dyn Embedder>> {
    match (embedder, &options.record_embeddings) {
        (Some(inner), Some(path)) => Some(Arc::new(
            openvibe::primitives::testing::RecordReplayEmbedder::record(inner, path.clone()),
        )),
        (embedder, _) => embedder,
    }
}

/// The embedder `choice` asks for, and how the output names the retrieval.
pub fn make_embedder(
    choice: EmbedderChoice,
) -> Result<(Option<Arc<dyn Embedder>>, String), CliError> {
    match choice {
        EmbedderChoice::None => Ok((None, "full text (--embedder none)".to_owned())),
        EmbedderChoice::Auto | EmbedderChoice::Local => local_embedder(choice),
    }
}

#[cfg(feature = "local-embed")]
fn local_embedder(choice: EmbedderChoice) -> Result<(Option<Arc<dyn Embedder>>, String), CliError> {
    use openvibe::local_embed::{LocalEmbedError, LocalEmbedder};
    match LocalEmbedder::minilm() {
        Ok(embedder) => {
            let label = format!("hybrid (full text + {} vectors)", embedder.model_id());
            Ok((Some(Arc::new(embedder)), label))
        }
        Err(LocalEmbedError::Missing { .. }) if choice == EmbedderChoice::Auto => Ok((
            None,
            "full text (no local embedding model; `cargo xtask models fetch` adds vectors)"
                .to_owned(),
        )),
        Err(e) => Err(CliError::Embedding(format!(
            "{e}; `cargo xtask models fetch` downloads all-MiniLM-L6-v2, or use --embedder none"
        ))),
    }
}

#[cfg(not(feature = "local-embed"))]
fn local_embedder(choice: EmbedderChoice) -> Result<(Option<Arc<dyn Embedder>>, String), CliError> {
    match choice {
        EmbedderChoice::Local => Err(CliError::Embedding(
            "this openvibe was built without the `local-embed` feature; rebuild with it or use --embedder none"
                .to_owned(),
        )),
        _ => Ok((
            None,
            "full text (built without the `local-embed` feature)".to_owned(),
        )),
    }
}

/// The memory backend, its tenant, a label, and the pool to purge the
/// tenant from when the run ends: in process by default, PostgreSQL with a
/// database URL (each run then gets a fresh tenant, so runs never see each
/// other's memory).
pub(crate) async fn make_stores(
    options: &Options,
) -> Result<(Stores, String, String, Option<openvibe::postgres::PgStores>), CliError> {
    if let Some(url) = &options.memory_url {
        let remote = openvibe::remote::RemoteMemory::connect(url, options.memory_key.clone())
            .await
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let tenant = run_tenant();
        let backend = format!("memory service {url} (tenant {tenant})");
        return Ok((remote.stores(), tenant, backend, None));
    }
    match &options.database_url {
        None => Ok((
            in_memory_stores(),
            options
                .tenant
                .clone()
                .unwrap_or_else(|| RecordMeta::DEFAULT_TENANT.to_owned()),
            "in-memory".to_owned(),
            None,
        )),
        Some(url) => {
            let stores = openvibe::postgres::PgStores::connect(url).await?;
            // A named tenant is shared (other processes, later runs): kept.
            let (tenant, purge) = match &options.tenant {
                Some(tenant) => (tenant.clone(), None),
                None => (run_tenant(), (!options.keep_memory).then(|| stores.clone())),
            };
            let backend = format!("PostgreSQL (tenant {tenant})");
            Ok((stores.stores(), tenant, backend, purge))
        }
    }
}

/// A tenant of its own for one run: `cli_<milliseconds since 1970>`.
fn run_tenant() -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("cli_{stamp}")
}

/// Remembers every request it forwards (to show the prompts the role built).
struct Transcript {
    inner: Arc<dyn LlmProvider>,
    requests: Mutex<Vec<LlmRequest>>,
}

impl Transcript {
    fn len(&self) -> usize {
        self.requests.lock().map(|r| r.len()).unwrap_or(0)
    }

    fn get(&self, index: usize) -> Option<LlmRequest> {
        self.requests
            .lock()
            .ok()
            .and_then(|r| r.get(index).cloned())
    }
}

#[async_trait]
impl LlmProvider for Transcript {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        if let Ok(mut log) = self.requests.lock() {
            log.push(request.clone());
        }
        self.inner.call(request).await
    }
}

/// Run every activation of `file` and print what happened to `out`.
pub async fn execute(
    file: &RoleFile,
    files: &Files,
    options: &Options,
    llm_label: &str,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let setup = Setup::new(options).await?;
    let purge = setup.purge();
    let tenant = setup.tenant.clone();
    let result = run_all(file, files, options, llm_label, setup, out).await;
    finish(purge, &tenant, result).await
}

/// The model, memory and retrieval a role file runs with.
pub(crate) struct Setup {
    transcript: Arc<Transcript>,
    embedder: Option<Arc<dyn Embedder>>,
    /// What ranks recalled memory, for people.
    pub(crate) retrieval: String,
    pub(crate) stores: Stores,
    /// The tenant the run acts in.
    pub(crate) tenant: String,
    /// Where memory lives, for people.
    pub(crate) backend: String,
    purge: Option<openvibe::postgres::PgStores>,
}

impl Setup {
    /// Build what `options` asks for.
    pub(crate) async fn new(options: &Options) -> Result<Self, CliError> {
        let transcript = Arc::new(Transcript {
            inner: make_llm(options)?,
            requests: Mutex::new(Vec::new()),
        });
        let (embedder, retrieval) = make_embedder(options.embedder)?;
        let embedder = recording_embeddings(embedder, options);
        let (stores, tenant, backend, purge) = make_stores(options).await?;
        Ok(Self {
            transcript,
            embedder,
            retrieval,
            stores,
            tenant,
            backend,
            purge,
        })
    }

    /// A runtime with `file`'s role (recording what it recalls into
    /// `recalls`) and its workspace seeded; returns the role id too.
    pub(crate) async fn runtime(
        &self,
        file: &RoleFile,
        files: &Files,
        recalls: Arc<Mutex<Vec<Assembly>>>,
    ) -> Result<(RoleRuntime, String), CliError> {
        let mut role = file.build_role(files)?.on_recall(move |assembly| {
            if let Ok(mut log) = recalls.lock() {
                log.push(assembly.clone());
            }
        });
        if let Some(embedder) = &self.embedder {
            role = role.with_embedder(embedder.clone());
        }
        let role_id = role.role_id().to_owned();
        let runtime = RoleRuntime::new(self.transcript.clone())
            .with_tenant(self.tenant.clone())
            .with_stores(self.stores.clone())
            .role(role)?;
        if let Some(workspace) = runtime.workspace() {
            file.seed_workspace(workspace).await?;
        }
        Ok((runtime, role_id))
    }

    /// A runtime with the roles of `files` (each role file's role, its
    /// workspace facts seeded); their ids, in order.
    pub(crate) async fn runtime_of_all(
        &self,
        files: &[(RoleFile, Files)],
    ) -> Result<(RoleRuntime, Vec<String>), CliError> {
        let mut runtime = RoleRuntime::new(self.transcript.clone())
            .with_tenant(self.tenant.clone())
            .with_stores(self.stores.clone());
        let mut ids = Vec::with_capacity(files.len());
        for (file, base) in files {
            let mut role = file.build_role(base)?;
            if let Some(embedder) = &self.embedder {
                role = role.with_embedder(embedder.clone());
            }
            ids.push(role.role_id().to_owned());
            runtime = runtime.role(role)?;
        }
        if let Some(workspace) = runtime.workspace() {
            for (file, _) in files {
                file.seed_workspace(workspace).await?;
            }
        }
        Ok((runtime, ids))
    }

    /// Where the run's tenant is purged when it ends (PostgreSQL without
    /// `--keep-memory`).
    pub(crate) fn purge(&self) -> Option<openvibe::postgres::PgStores> {
        self.purge.clone()
    }
}

/// Run `work` with what `options` asks for, then end the run as [`finish`]
/// does (purging its tenant when asked to, even when `work` failed).
pub(crate) async fn with_setup(
    options: &Options,
    work: impl AsyncFnOnce(&Setup) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let setup = Setup::new(options).await?;
    let purge = setup.purge();
    let tenant = setup.tenant.clone();
    let result = work(&setup).await;
    finish(purge, &tenant, result).await
}

/// End a run: purge its tenant when asked to, even when the run failed
/// (the run's error comes first).
pub(crate) async fn finish(
    purge: Option<openvibe::postgres::PgStores>,
    tenant: &str,
    result: Result<(), CliError>,
) -> Result<(), CliError> {
    if let Some(pool) = purge {
        let deleted = openvibe::postgres::purge_tenant(pool.pool(), tenant).await;
        result?;
        tracing::info!(%tenant, deleted = deleted?, "run tenant purged (--keep-memory keeps it)");
        return Ok(());
    }
    result
}

async fn run_all(
    file: &RoleFile,
    files: &Files,
    options: &Options,
    llm_label: &str,
    setup: Setup,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let recalls: Arc<Mutex<Vec<Assembly>>> = Arc::default();
    let (runtime, role_id) = setup.runtime(file, files, recalls.clone()).await?;
    let transcript = setup.transcript.clone();
    let (retrieval, backend) = (&setup.retrieval, &setup.backend);
    let role = runtime.get_role(&role_id)?;

    writeln!(
        out,
        "== role `{role_id}` · model: {llm_label} · memory backend: {backend}"
    )?;
    writeln!(
        out,
        "   operators: {} · memory: {}",
        role.operator_ids().join(", "),
        if role.agent_memory().is_some() {
            "structured (episodes, insights, workspace)"
        } else {
            "none (the role declares no clearance)"
        }
    )?;
    writeln!(out, "   memory retrieval: {retrieval}")?;
    let last = file.runs.len().saturating_sub(1);
    for (index, run) in file.runs.iter().enumerate() {
        let input = State::from(run.input.clone());
        writeln!(
            out,
            "\n== run {}: {}/{}",
            index + 1,
            run.operator,
            run.workflow
        )?;
        writeln!(out, "input: {}", serde_json::to_string(&input)?)?;
        let first_request = transcript.len();
        let first_recall = recalls.lock().map(|r| r.len()).unwrap_or(0);
        let state = runtime
            .activate(&role_id, &run.operator, &run.workflow, input)
            .await?;
        if let Some(request) = transcript.get(first_request) {
            writeln!(out, "system prompt of the first model call:")?;
            for line in request.system.lines() {
                writeln!(out, "  | {line}")?;
            }
        }
        let recalled = recalls
            .lock()
            .ok()
            .and_then(|r| r.get(first_recall).cloned());
        if let Some(assembly) = recalled.filter(|a| !a.recalled.is_empty()) {
            writeln!(out, "memory recalled into it, and what found it:")?;
            for r in &assembly.recalled {
                writeln!(
                    out,
                    "  - {}: {} [{}]",
                    r.kind.as_str(),
                    first_line(&r.content),
                    describe_retrievers(&r.retrievers)
                )?;
            }
        }
        writeln!(
            out,
            "final state:\n{}",
            indent(&serde_json::to_string_pretty(&state)?)
        )?;
        if options.reflect && index < last {
            reflect(role, transcript.as_ref(), out).await?;
        }
    }
    report_memory(role, out).await
}

/// Reflect on the episodes so far and publish confident insights.
async fn reflect(role: &Role, llm: &dyn LlmProvider, out: &mut dyn Write) -> Result<(), CliError> {
    let Some(memory) = role.agent_memory() else {
        writeln!(
            out,
            "\n== reflection skipped: the role has no structured memory"
        )?;
        return Ok(());
    };
    let options = ReflectOptions {
        role_context: role.soul_text()?,
        ..ReflectOptions::default()
    };
    let report = memory.reflect_with(llm, &options).await?;
    let published = memory.publish_to_workspace(0.75).await?;
    writeln!(
        out,
        "\n== reflection over {} episode(s): {} new insight(s), {} strengthened, {} published to the workspace",
        report.episodes_considered,
        report.created.len(),
        report.strengthened.len(),
        published.len()
    )?;
    for insight in report.insights() {
        writeln!(out, "- ({:.2}) {}", insight.confidence, insight.content)?;
    }
    for skipped in &report.skipped {
        writeln!(out, "  skipped: {skipped}")?;
    }
    Ok(())
}

async fn report_memory(role: &Role, out: &mut dyn Write) -> Result<(), CliError> {
    let Some(memory) = role.agent_memory() else {
        return Ok(());
    };
    let mut episodes = memory
        .recall_episodes(EpisodeQuery::new().limit(100))
        .await?;
    episodes.reverse();
    writeln!(out, "\n== episodes ({}, oldest first)", episodes.len())?;
    for ep in &episodes {
        writeln!(
            out,
            "- {}/{} [domain={} entity={}] tokens {} in / {} out",
            ep.operator_id, ep.node_name, ep.domain, ep.entity, ep.tokens_in, ep.tokens_out
        )?;
        writeln!(out, "    in:  {}", ep.input_summary)?;
        writeln!(out, "    out: {}", ep.output_summary)?;
    }
    let insights = memory
        .recall_insights(InsightQuery::new().limit(100))
        .await?;
    writeln!(out, "\n== insights ({})", insights.len())?;
    for i in &insights {
        writeln!(
            out,
            "- ({:.2}, evidence {}) [{}] {}",
            i.confidence, i.evidence_count, i.domain, i.content
        )?;
    }
    if let Some(fs) = role.filesystem()? {
        writeln!(out, "\n== memory tree")?;
        tree(&fs, out).await?;
    }
    Ok(())
}

/// Print the memory filesystem: directories, then each file's first line.
pub(crate) async fn tree(fs: &MemoryFilesystem, out: &mut dyn Write) -> Result<(), CliError> {
    for top in fs.browse("/").await? {
        writeln!(out, "/{top}/")?;
        let nested = matches!(top.as_str(), "beliefs" | "knowledge" | "references");
        for entry in fs.browse(&format!("/{top}/")).await? {
            if nested {
                writeln!(out, "  {entry}/")?;
                for file in fs.browse(&format!("/{top}/{entry}/")).await? {
                    let text = fs.read(&format!("/{top}/{entry}/{file}")).await?;
                    writeln!(out, "    {file}: {}", first_line(&text))?;
                }
            } else {
                let text = fs.read(&format!("/{top}/{entry}")).await?;
                writeln!(out, "  {entry}: {}", first_line(&text))?;
            }
        }
    }
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

pub(crate) fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
