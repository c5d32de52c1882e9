//! Test doubles (feature `testing`): a scripted LLM and a record/replay provider.

mod replay;
mod scripted;

pub use replay::{RecordReplayProvider, request_key};
pub use scripted::ScriptedLlm;
