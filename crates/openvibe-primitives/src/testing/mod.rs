//! Test doubles (feature `testing`): a scripted LLM, a record/replay
//! provider, and a stand-in model that answers by rules.

mod replay;
mod scripted;
mod standin;

pub use replay::{RecordReplayProvider, request_key};
pub use scripted::ScriptedLlm;
pub use standin::{STAND_IN_MODEL, StandIn};
