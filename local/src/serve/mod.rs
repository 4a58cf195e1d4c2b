//! The hub's own MCP endpoint: exactly three tools (`search`, `describe`, `execute`) over
//! stdio or loopback HTTP, for agents on this machine.

pub mod approvals;
mod ask;
pub mod gate;
pub mod handler;
pub mod http;
pub mod lines;
pub mod rounds;
pub mod skills;
mod stdio;
pub mod token;
pub mod tools;

use anyhow::{Context, Result};
use rmcp::ServiceExt;

pub use self::http::serve_http;
pub use handler::HubServer;

use std::path::Path;

/// Serves MCP on stdin and stdout until the client closes stdin. Logs go to stderr only.
/// Input reaches rmcp through [`lines::check_input`], so an oversized message is answered.
pub async fn serve_stdio(home: &Path, profile: &str) -> Result<()> {
    let (stdin, stdout) = stdio::stdio();
    let (server_side, hub_side) = tokio::io::duplex(256 * 1024);
    let (from_server, to_server) = tokio::io::split(hub_side);
    let (errors_tx, errors_rx) = tokio::sync::mpsc::unbounded_channel();
    let input = tokio::spawn(lines::check_input(stdin, to_server, errors_tx));
    let output = tokio::spawn(lines::merge_output(from_server, stdout, errors_rx));
    let service = HubServer::for_profile(home, profile)
        .serve(server_side)
        .await
        .context("starting the MCP server on stdio")?;
    service.waiting().await.context("serving MCP on stdio")?;
    input.abort();
    output.await.context("writing to stdout")?.context("writing to stdout")?;
    Ok(())
}
