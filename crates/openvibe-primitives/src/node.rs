//! Placeholder while nodes are written.
/// Node trait.
pub trait Node {}
/// Context.
pub struct NodeContext;
/// LLM node.
pub struct LlmNode;
/// Agent node.
pub struct AgentNode;
