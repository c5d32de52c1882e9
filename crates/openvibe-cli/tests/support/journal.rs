//! The cognitive loop's journal as the CLI's tests read it: the traces a
//! `--journal DIR` holds, and their stages.

use std::path::Path;

/// Every stage, in order.
pub const ALL: [&str; 6] = ["perceive", "decide", "act", "observe", "reflect", "learn"];

/// The loop traces journaled in `dir` (none when it does not exist yet).
pub fn journal(dir: &Path) -> Vec<serde_json::Value> {
    let mut traces = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return traces;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json")
            && let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(cp) = serde_json::from_str::<serde_json::Value>(&text)
        {
            traces.push(cp["state"]["loop"].clone());
        }
    }
    traces
}

/// The names of the stages `trace` went through.
pub fn stage_names(trace: &serde_json::Value) -> Vec<String> {
    trace["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap().to_owned())
        .collect()
}
