//! The hub's own MCP endpoint: exactly three tools (`search`, `describe`, `execute`) over
//! stdio or loopback HTTP, for agents on this machine.

pub mod approvals;
mod ask;
pub mod gate;
pub mod handler;
pub mod http;
pub mod lines;
pub mod rounds;
mod sent;
pub mod skills;
mod stdio;
pub mod token;
pub mod tools;

use anyhow::{Context, Result};
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;

pub use self::http::serve_http;
pub use handler::HubServer;

use std::path::Path;
use std::sync::Arc;

/// Serves MCP on stdin and stdout until the client closes stdin. Logs go to stderr only.
/// rmcp reads and writes them through [`lines`], so an oversized message is answered.
pub async fn serve_stdio(home: &Path, profile: &str) -> Result<()> {
    sent::count_messages();
    let (stdin, stdout) = stdio::stdio();
    let output = lines::Lines::new(stdout);
    let input = lines::Checked::new(stdin, output.clone());
    let transport =
        AsyncRwTransport::new_server(input, output.clone()).with_max_line_length(lines::MAX_LINE_BYTES);
    let service = HubServer::for_profile(home, profile)
        .answering_to(Arc::new(output.clone()))
        .serve(transport)
        .await
        .context("starting the MCP server on stdio")?;
    service.waiting().await.context("serving MCP on stdio")?;
    // The answer to an oversized last line may still be waiting.
    output.flush_errors().await.context("writing to stdout")?;
    Ok(())
}
