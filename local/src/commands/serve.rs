//! `capabilities hub serve`: the hub's MCP endpoint for agents, over stdio or loopback HTTP.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use crate::error::{Exit, UsageError};
use crate::serve::http::DEFAULT_PORT;
use crate::settings::Settings;

/// How long an idle run thread, with its prepared guest, is kept for the next call.
const RUN_THREAD_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Speak MCP on stdin and stdout (how agents start the hub).
    #[arg(long)]
    pub stdio: bool,
    /// Serve MCP over streamable HTTP at http://127.0.0.1:<port>/mcp, for agents that connect
    /// to a running hub. Clients need the bearer token in the file `http-token` in the hub's
    /// store.
    #[arg(long)]
    pub http: bool,
    /// The port for --http, on 127.0.0.1 only; 0 picks a free one (the URL is printed on stderr).
    #[arg(long, requires = "http", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The profile to serve (`hub profiles list`); `default` serves every source.
    #[arg(long, default_value = "default")]
    pub profile: String,
}

pub fn run(settings: &Settings, args: ServeArgs) -> Result<ExitCode> {
    let http = match (args.stdio, args.http) {
        (true, false) => false,
        (false, true) => true,
        (false, false) => {
            return Err(UsageError(format!(
                "pick a transport: --stdio when an agent starts the hub itself, or --http to serve \
                 agents that connect to http://127.0.0.1:{DEFAULT_PORT}/mcp"
            ))
            .into());
        }
        (true, true) => {
            return Err(UsageError("pass either --stdio or --http, not both".into()).into());
        }
    };
    // A profile that does not exist or cannot be read is said now, not at the first call.
    let store = crate::store::Store::open(&settings.home)?;
    crate::profiles::require(&store, &args.profile).map_err(|e| UsageError(format!("{e:#}")))?;
    drop(store);
    // Harness entries run `<hub>/bin/capabilities`: keep it pointing at the binary in use.
    crate::install::refresh_link_or_warn(&settings.home);
    // Over stdio one client's messages are read and routed on one worker thread, and a
    // `tools/call` is run and answered on the thread that read it while the worker's part moves
    // to another thread (`block_in_place`): a hand-off to a run thread and back would cost two
    // wake-ups of an idle core on every call. HTTP serves many clients at once.
    //
    // A run thread keeps what makes the next run fast: its runtime, the next guest prepared
    // after each answer, its HTTP client and kept-alive connections. Tokio ends an idle blocking
    // thread after ten seconds, and an agent's calls are often further apart than that, so the
    // hub keeps them for `RUN_THREAD_IDLE`.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(if http { 2 } else { 1 });
    let runtime = builder
        .enable_all()
        .thread_keep_alive(RUN_THREAD_IDLE)
        .build()
        .context("starting the server's async runtime")?;
    let served = if http {
        runtime.block_on(crate::serve::serve_http(&settings.home, args.port, &args.profile))
    } else {
        runtime.block_on(crate::serve::serve_stdio(&settings.home, &args.profile))
    };
    // A read of stdin left pending by the transport must not hold the exit.
    runtime.shutdown_background();
    // Runs answered already have their last records on the way to disk.
    crate::store::wait_for_writes();
    served?;
    Ok(Exit::Ok.into())
}
