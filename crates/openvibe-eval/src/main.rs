//! `openvibe-eval`: retrieval evaluations, run by `cargo xtask eval`.
//!
//! ```text
//! openvibe-eval locomo --data DIR [--backend memory|postgres] [--method bm25|dense|hybrid|all] [--vectors default|exact|graph] [--misses FILE]
//! openvibe-eval subjects [--pairs FILE]... [--dump FILE]
//! ```
//!
//! Prints `EVAL <method> <metric> <value>` lines on standard output;
//! progress on standard error. The Postgres backend reads `DATABASE_URL`.

mod locomo;
mod subjects;

use std::path::PathBuf;
use std::sync::Arc;

use openvibe_local_embed::LocalEmbedder;
use openvibe_protocols::{Embedder, KnowledgeStore};
use openvibe_retrieval::VectorSearch;

const SUBJECTS_USAGE: &str = "usage: openvibe-eval subjects [--pairs FILE]... [--dump FILE]

Judges whether the two statements of each labelled pair are about the same
subject, by meaning (all-MiniLM-L6-v2 vectors with the analyzer's terms)
and by words alone, and prints precision, recall and F1 of same-subject
detection (EVAL lines), how many contradictions would be merged as
duplicates, and the confusion tables. Needs the local model (cargo xtask
models fetch).

  --pairs FILE  JSON lines {\"a\", \"b\", \"label\"}, labels duplicate, refines,
                contradicts (the same subject) or unrelated; repeat for
                several files (default: crates/openvibe-eval/data/'s tuning
                and held-out splits)
  --dump FILE   write one tab-separated line per pair: label, similarity,
                shared terms, overlap, jaccard, negation differs, a, b";

const USAGE: &str = "usage: openvibe-eval locomo --data DIR [--backend memory|postgres] [--method bm25|dense|hybrid|all] [--vectors default|exact|graph] [--misses FILE]

Indexes every LoCoMo conversation of DIR (one tenant each, one record per
turn) and asks its category 1-4 questions; prints recall_any@5/@10/@20 and
recall_all@10 per method. Needs the local model (cargo xtask models fetch);
the postgres backend reads DATABASE_URL.

  --vectors MODE  how the memory backend searches vectors: default (an HNSW
                  graph from 4,096 records on, so exact for a conversation),
                  exact (always the exact scan), graph (the graph at any size)
  --misses FILE   write every question with no evidence turn in its top 10:
                  the evidence as indexed, its rank, and what came first";

struct Args {
    data: PathBuf,
    backend: String,
    methods: Vec<String>,
    vectors: VectorSearch,
    misses: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut data = None;
    let mut backend = "memory".to_owned();
    let mut method = "hybrid".to_owned();
    let mut misses = None;
    let mut vectors = VectorSearch::default();
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("locomo") => {}
        _ => return Err(USAGE.into()),
    }
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs a value\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--data" => data = Some(PathBuf::from(value()?)),
            "--backend" => backend = value()?,
            "--method" => method = value()?,
            "--misses" => misses = Some(PathBuf::from(value()?)),
            "--vectors" => {
                vectors = match value()?.as_str() {
                    "default" => VectorSearch::default(),
                    "exact" => VectorSearch::EXACT,
                    "graph" => VectorSearch::APPROXIMATE.exact_below(1),
                    other => {
                        return Err(format!(
                            "unknown --vectors `{other}` (default, exact, graph)\n\n{USAGE}"
                        ));
                    }
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    let methods = if method == "all" {
        vec!["bm25".into(), "dense".into(), "hybrid".into()]
    } else {
        locomo::mode(&method)?;
        vec![method]
    };
    if !matches!(backend.as_str(), "memory" | "postgres") {
        return Err(format!("unknown backend `{backend}` (memory, postgres)"));
    }
    Ok(Args {
        data: data.ok_or_else(|| format!("--data DIR is required\n\n{USAGE}"))?,
        backend,
        methods,
        vectors,
        misses,
    })
}

async fn store(
    backend: &str,
    embedder: Arc<dyn Embedder>,
    vectors: VectorSearch,
) -> Result<Arc<dyn KnowledgeStore>, String> {
    match backend {
        "postgres" => {
            let url = std::env::var("DATABASE_URL")
                .map_err(|_| "the postgres backend needs DATABASE_URL".to_owned())?;
            let stores = openvibe_postgres::PgStores::connect(&url)
                .await
                .map_err(|e| e.to_string())?
                .with_embedder(embedder)
                .await
                .map_err(|e| e.to_string())?;
            Ok(stores.knowledge())
        }
        _ => Ok(Arc::new(
            openvibe_in_memory::InMemoryWorkingStore::new()
                .with_embedder(embedder)
                .with_vector_search(vectors),
        )),
    }
}

/// `openvibe-eval subjects ...`.
async fn subjects_main(args: &[String]) -> Result<(), String> {
    let mut files = Vec::new();
    let mut dump_file = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs a value\n\n{SUBJECTS_USAGE}"))
        };
        match arg.as_str() {
            "--pairs" => files.push(PathBuf::from(value()?)),
            "--dump" => dump_file = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(SUBJECTS_USAGE.into()),
            other => return Err(format!("unknown argument `{other}`\n\n{SUBJECTS_USAGE}")),
        }
    }
    if files.is_empty() {
        files = subjects::default_files();
    }
    let mut pairs = Vec::new();
    for file in &files {
        let read = subjects::read(file)?;
        eprintln!("eval: {} pairs from {}", read.len(), file.display());
        pairs.extend(read);
    }
    if pairs.is_empty() {
        return Err("no pairs to judge".into());
    }
    let embedder: Arc<dyn Embedder> = Arc::new(LocalEmbedder::minilm().map_err(|e| e.to_string())?);
    let started = std::time::Instant::now();
    let mut dump = dump_file.as_ref().map(|_| String::new());
    let thresholds = openvibe_memory::SubjectThresholds::default();
    let (lines, tables) = subjects::run(embedder, &pairs, &thresholds, dump.as_mut()).await?;
    if let (Some(path), Some(text)) = (&dump_file, &dump) {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    print!("{tables}");
    for line in lines {
        println!("{line}");
    }
    eprintln!(
        "eval: {} pairs, {:.1} s",
        pairs.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = async {
        if args.first().map(String::as_str) == Some("subjects") {
            return subjects_main(&args[1..]).await;
        }
        let args = parse(&args)?;
        let local: Arc<dyn Embedder> =
            Arc::new(LocalEmbedder::minilm().map_err(|e| e.to_string())?);
        let cache_file = std::env::var_os("OPENVIBE_EVAL_CACHE").map(PathBuf::from);
        let cache = cache_file.map(|path| Arc::new(locomo::DiskCache::new(local.clone(), path)));
        let embedder: Arc<dyn Embedder> = match &cache {
            Some(cache) => cache.clone(),
            None => local,
        };
        let store = store(&args.backend, embedder.clone(), args.vectors).await?;
        let started = std::time::Instant::now();
        let mut misses = args.misses.as_ref().map(|_| String::new());
        let lines =
            locomo::run(store, embedder, &args.data, &args.methods, misses.as_mut()).await?;
        if let (Some(path), Some(report)) = (&args.misses, &misses) {
            std::fs::write(path, report).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        if let Some(cache) = &cache {
            cache.save()?;
        }
        for line in lines {
            println!("{line}");
        }
        eprintln!(
            "eval: {} backend, {:.1} s",
            args.backend,
            started.elapsed().as_secs_f64()
        );
        Ok::<(), String>(())
    }
    .await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("openvibe-eval: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
