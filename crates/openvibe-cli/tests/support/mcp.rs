//! An MCP client on `openvibe mcp` (stdio), as MCP hosts run it.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

/// A client connected to `openvibe ARGS` with `env` set (the binary
/// spawned as a child process, speaking MCP on its stdio; memory only
/// where the arguments say: `OPENVIBE_DATABASE_URL` is not passed on).
pub async fn spawn(
    args: &[&str],
    env: &[(&str, &str)],
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_openvibe"));
    command.args(args).env_remove("OPENVIBE_DATABASE_URL");
    for (name, value) in env {
        command.env(name, value);
    }
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

/// Call `tool` with `args` (a JSON object).
pub async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    args: serde_json::Value,
) -> rmcp::model::CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap()
}
