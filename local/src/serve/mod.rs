//! The hub's own MCP endpoint: exactly three tools (`search`, `describe`, `execute`) over
//! stdio or loopback HTTP, for agents on this machine.

pub mod approvals;
pub mod gate;
pub mod handler;
pub mod http;
pub mod rounds;
pub mod token;
pub mod tools;

use anyhow::{Context, Result};
use rmcp::ServiceExt;

pub use self::http::serve_http;
pub use handler::HubServer;

use crate::cli::Settings;

/// Serves MCP on stdin and stdout until the client closes stdin. Logs go to stderr only.
pub async fn serve_stdio(settings: Settings) -> Result<()> {
    let service = HubServer::new(settings)
        .serve(rmcp::transport::stdio_pipes())
        .await
        .context("starting the MCP server on stdio")?;
    service.waiting().await.context("serving MCP on stdio")?;
    Ok(())
}
