//! A record/replay provider: record real answers once into a cassette file
//! (JSON lines), then replay them in tests without network access.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use openvibe_protocols::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, MessageRole, truncate_chars,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of a cassette.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    request: LlmRequest,
    response: LlmResponse,
}

/// The recorded answers of one request key, replayed in order.
struct Recorded {
    responses: Vec<LlmResponse>,
    next: usize,
}

enum Mode {
    Record {
        inner: Arc<dyn LlmProvider>,
        /// Serializes appends so concurrent calls never interleave lines.
        write: Mutex<()>,
    },
    Replay {
        answers: Mutex<HashMap<String, Recorded>>,
    },
}

/// An [`LlmProvider`] that records another provider's answers into a
/// cassette file, or replays them from it.
///
/// A cassette is a JSON-lines file, one `{"key", "request", "response"}`
/// object per call; the key is [`request_key`] of the request. Recording
/// appends to the file (delete it to re-record from scratch). When the same
/// request was recorded several times, replay returns the answers in recorded
/// order and then keeps repeating the last one.
///
/// ```no_run
/// use std::sync::Arc;
/// use openvibe_primitives::AnthropicProvider;
/// use openvibe_primitives::testing::RecordReplayProvider;
/// # fn demo() -> Result<(), openvibe_protocols::LlmError> {
/// // Once, with a key: record.
/// let real = Arc::new(AnthropicProvider::from_env()?);
/// let recorder = RecordReplayProvider::record(real, "tests/cassettes/summary.jsonl");
/// // In CI: replay, no network.
/// let replayer = RecordReplayProvider::replay("tests/cassettes/summary.jsonl")?;
/// # Ok(()) }
/// ```
pub struct RecordReplayProvider {
    cassette: PathBuf,
    mode: Mode,
}

impl RecordReplayProvider {
    /// Forward every call to `inner` and append each successful answer to
    /// `cassette` (created, with its parent directories, on the first call).
    /// Errors of `inner` are passed through and not recorded.
    pub fn record(inner: Arc<dyn LlmProvider>, cassette: impl Into<PathBuf>) -> Self {
        Self {
            cassette: cassette.into(),
            mode: Mode::Record {
                inner,
                write: Mutex::new(()),
            },
        }
    }

    /// Answer from a recorded cassette; never calls a real provider.
    ///
    /// # Errors
    /// [`LlmError::Other`] naming the file when it cannot be read, or naming
    /// the file and line number when a line is not a cassette entry.
    pub fn replay(cassette: impl Into<PathBuf>) -> Result<Self, LlmError> {
        let cassette = cassette.into();
        let text = std::fs::read_to_string(&cassette).map_err(|e| {
            LlmError::Other(format!(
                "could not read cassette {}: {e}; record it first with RecordReplayProvider::record",
                cassette.display()
            ))
        })?;
        Self::replay_str(&text, cassette)
    }

    /// Replay a cassette given as text (e.g. embedded with `include_str!`);
    /// `name` identifies it in error messages.
    pub fn replay_str(text: &str, name: impl Into<PathBuf>) -> Result<Self, LlmError> {
        let cassette = name.into();
        let mut answers: HashMap<String, Recorded> = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(line).map_err(|e| {
                LlmError::Other(format!(
                    "cassette {} line {}: not a recorded call ({e}); fix or re-record the cassette",
                    cassette.display(),
                    index + 1
                ))
            })?;
            answers
                .entry(entry.key)
                .or_insert_with(|| Recorded {
                    responses: Vec::new(),
                    next: 0,
                })
                .responses
                .push(entry.response);
        }
        Ok(Self {
            cassette,
            mode: Mode::Replay {
                answers: Mutex::new(answers),
            },
        })
    }

    /// The cassette file.
    pub fn cassette(&self) -> &Path {
        &self.cassette
    }

    /// True when replaying, false when recording.
    pub fn is_replaying(&self) -> bool {
        matches!(self.mode, Mode::Replay { .. })
    }

    fn append(&self, write: &Mutex<()>, entry: &Entry) -> Result<(), LlmError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            LlmError::Other(format!(
                "could not {what} cassette {}: {e}",
                self.cassette.display()
            ))
        };
        let mut line =
            serde_json::to_string(entry).map_err(|e| fail("serialize an entry for", &e))?;
        line.push('\n');
        let _guard = lock(write);
        append_to(&self.cassette, &line).map_err(|(what, e)| fail(what, &e))
    }
}

/// Append `text` to the cassette at `path`, creating it and its parent
/// directories; on failure, what could not be done and why.
pub(super) fn append_to(path: &Path, text: &str) -> Result<(), (&'static str, std::io::Error)> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| ("create the directory of", e))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ("open", e))?
        .write_all(text.as_bytes())
        .map_err(|e| ("write to", e))
}

/// Lock `mutex`: the guarded data stays consistent even if a holder panicked.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data stays consistent even if a holder panicked.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `model ..., last user message: "..."` (80 characters at most).
fn summary(request: &LlmRequest) -> String {
    let last_user = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .map(|m| m.text())
        .unwrap_or_default();
    format!(
        "model {}, last user message: {:?}",
        request.model,
        truncate_chars(&last_user, 80)
    )
}

#[async_trait]
impl LlmProvider for RecordReplayProvider {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let key = request_key(request);
        match &self.mode {
            Mode::Record { inner, write } => {
                let response = inner.call(request).await?;
                let entry = Entry {
                    key,
                    request: request.clone(),
                    response,
                };
                self.append(write, &entry)?;
                Ok(entry.response)
            }
            Mode::Replay { answers } => {
                let mut answers = lock(answers);
                let Some(recorded) = answers.get_mut(&key) else {
                    return Err(LlmError::NotRecorded {
                        key,
                        summary: format!(
                            "{}, cassette {}",
                            summary(request),
                            self.cassette.display()
                        ),
                    });
                };
                let last = recorded.responses.len().saturating_sub(1);
                let index = recorded.next.min(last);
                recorded.next = recorded.next.saturating_add(1);
                recorded
                    .responses
                    .get(index)
                    .cloned()
                    .ok_or_else(|| LlmError::NotRecorded {
                        key,
                        summary: summary(request),
                    })
            }
        }
    }
}

impl std::fmt::Debug for RecordReplayProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match &self.mode {
            Mode::Record { .. } => "record",
            Mode::Replay { .. } => "replay",
        };
        f.debug_struct("RecordReplayProvider")
            .field("cassette", &self.cassette)
            .field("mode", &mode)
            .finish_non_exhaustive()
    }
}

/// The stable key of a request: FNV-1a (64 bit) of its canonical JSON
/// (object keys sorted recursively, no whitespace), as 16 lowercase hex
/// characters.
///
/// The key depends only on the request's content, not on map iteration order
/// or serde_json features, so cassettes stay valid across runs and machines.
pub fn request_key(request: &LlmRequest) -> String {
    let value = serde_json::to_value(request)
        .unwrap_or_else(|e| Value::String(format!("unserializable request: {e}")));
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    format!("{:016x}", fnv1a64(canonical.as_bytes()))
}

/// Compact JSON with object keys sorted, whatever the map type.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
    }
}

fn write_string(s: &str, out: &mut String) {
    // A string always serializes; the fallback only keeps this infallible.
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => {
            let _ = write!(out, "{s:?}");
        }
    }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::{ToolChoice, ToolDefinition};
    use serde_json::json;

    fn fixed_request() -> LlmRequest {
        let mut request = LlmRequest::new("haiku", "What is the capital of France?")
            .system("Answer in one word.")
            .temperature(0.5)
            .max_tokens(64)
            .tools(vec![ToolDefinition {
                name: "lookup".into(),
                description: "Look a fact up.".into(),
                input_schema: json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}),
            }]);
        request.tool_choice = Some(ToolChoice::Auto);
        request
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn canonical_json_sorts_keys_recursively() {
        let mut out = String::new();
        write_canonical(
            &json!({"b": [{"z": 1, "a": "x\"y"}], "a": null, "c": {"y": true, "x": 1.5}}),
            &mut out,
        );
        assert_eq!(
            out,
            r#"{"a":null,"b":[{"a":"x\"y","z":1}],"c":{"x":1.5,"y":true}}"#
        );
    }

    #[test]
    fn request_key_is_pinned() {
        // If this changes, every recorded cassette stops matching: only
        // change it on purpose (and re-record the cassettes).
        let key = request_key(&fixed_request());
        assert_eq!(key, "0f5f8f1a00b61d4a");
        assert_eq!(key.len(), 16);
    }

    #[test]
    fn request_key_changes_with_the_request() {
        let a = request_key(&fixed_request());
        let b = request_key(&fixed_request().max_tokens(65));
        assert_ne!(a, b);
        assert_eq!(a, request_key(&fixed_request()));
    }

    #[test]
    fn summary_names_model_and_truncates_the_last_user_message() {
        let mut request = LlmRequest::new("haiku", "first");
        request
            .messages
            .push(openvibe_protocols::Message::user("é".repeat(100)));
        let s = summary(&request);
        assert!(s.starts_with("model haiku"), "{s}");
        assert_eq!(s.matches('é').count(), 80, "{s}");
    }
}
