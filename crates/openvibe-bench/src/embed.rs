//! Local embedding throughput.
//!
//! Group `embed` (needs the model: `cargo xtask models fetch`, which
//! `cargo xtask bench` runs):
//! - `embed_minilm_per_s`: LoCoMo turns (`Speaker: text`, the first 400 of
//!   the development split's first conversation) embedded per second by
//!   all-MiniLM-L6-v2 on candle, in batches, after one warm-up batch.

use std::time::Instant;

use openvibe_bench::report;
use openvibe_local_embed::LocalEmbedder;

const TURNS: usize = 400;

/// The texts: LoCoMo turns from `../shared/data/locomo-dev`.
fn turns() -> Result<Vec<String>, String> {
    let dir = std::path::Path::new("../shared/data/locomo-dev");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?,
        )
        .map_err(|e| format!("{}: {e}", file.display()))?;
        // The turns sit under `conversation` in the original release and
        // at the top level in the development split.
        let Some(conversation) = doc.get("conversation").unwrap_or(&doc).as_object() else {
            continue;
        };
        let mut sessions: Vec<(u32, &serde_json::Value)> = conversation
            .iter()
            .filter_map(|(k, v)| {
                let n = k.strip_prefix("session_")?.parse().ok()?;
                v.is_array().then_some((n, v))
            })
            .collect();
        sessions.sort_by_key(|(n, _)| *n);
        for (_, turns) in sessions {
            for turn in turns.as_array().into_iter().flatten() {
                let speaker = turn.get("speaker").and_then(|s| s.as_str()).unwrap_or("");
                let text = turn.get("text").and_then(|s| s.as_str()).unwrap_or("");
                out.push(format!("{speaker}: {text}"));
                if out.len() == TURNS {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// Run the group.
pub async fn run() {
    if let Err(e) = run_inner() {
        eprintln!("embed: {e}");
    }
}

fn run_inner() -> Result<(), String> {
    let texts = turns()?;
    if texts.len() < TURNS {
        return Err(format!("found {} LoCoMo turns, need {TURNS}", texts.len()));
    }
    let model = LocalEmbedder::minilm().map_err(|e| e.to_string())?;
    model
        .embed_blocking(&texts[..32])
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let vectors = model.embed_blocking(&texts).map_err(|e| e.to_string())?;
    let secs = t0.elapsed().as_secs_f64();
    std::hint::black_box(vectors.len());
    report(
        "embed_minilm_per_s",
        texts.len() as f64 / secs.max(1e-9),
        "per_s",
    );
    Ok(())
}
