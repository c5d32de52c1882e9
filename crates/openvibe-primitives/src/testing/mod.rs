//! Test doubles (feature `testing`): a scripted LLM, a record/replay
//! provider, a record/replay embedder, and a stand-in model that answers
//! by rules.

mod embed_replay;
mod replay;
mod scripted;
mod standin;

pub use embed_replay::RecordReplayEmbedder;
pub use replay::{RecordReplayProvider, request_key};
pub use scripted::ScriptedLlm;
pub use standin::{STAND_IN_MODEL, StandIn};
