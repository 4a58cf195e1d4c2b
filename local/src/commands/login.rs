//! `capabilities hub login`: sign in to a hosted hub (OAuth authorization code with PKCE through
//! a loopback redirect, as a connection signs in to a remote server), keep the tokens in the
//! keychain, and say which account and tenant the hub gave.

use std::process::ExitCode;

use anyhow::{Result, anyhow};
use clap::Args;
use serde_json::json;

use super::add::SignInArgs;
use super::print_stdout;
use crate::error::Exit;
use crate::hosted::{self, Hosted, Login, SCOPES};
use crate::platform::now_ms;
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The hosted hub, by its origin (default https://hub.capabilities.sh).
    #[arg(long, value_name = "URL", env = hosted::HUB_ENV)]
    pub hub: Option<String>,
    #[command(flatten)]
    pub sign_in: SignInArgs,
}

pub fn run(settings: &Settings, args: LoginArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let hub = hosted::hub_origin(args.hub.as_deref())?;
    let mut options = args.sign_in.options(settings)?;
    options.scopes = SCOPES.iter().map(|s| (*s).to_owned()).collect();
    eprintln!("signing in to {hub}");
    let runtime = hosted::runtime()?;
    let signed_in = runtime
        .block_on(crate::oauth::sign_in(&format!("{hub}/mcp"), None, &options))
        .map_err(|why| anyhow!("signing in to {hub} failed: {why}"))?;
    let mut login = Login {
        hub: hub.clone(),
        client: signed_in.client,
        account: None,
        tenant: None,
        signed_in_ms: now_ms(),
    };
    hosted::write_login(&store, &login)?;
    let link = Hosted::open(&store)?;
    link.keep_tokens(&signed_in.tokens)?;
    let status = runtime.block_on(link.ok("/hub/status", None))?;
    login.account = status["name"].as_str().or(status["account"].as_str()).map(str::to_owned);
    login.tenant = status["tenant"].as_str().map(str::to_owned);
    hosted::write_login(&store, &login)?;
    if settings.json {
        let out =
            json!({ "hub": hub, "account": login.account, "tenant": login.tenant, "keptIn": link.kept_in() });
        print_stdout(&format!("{out}\n"))?;
    } else {
        print_stdout(&format!(
            "signed in to {hub} as {} (tenant {}); the tokens are in {}\nnext: `capabilities hub push` sends this hub's sources there\n",
            login.account.as_deref().unwrap_or("?"),
            login.tenant.as_deref().unwrap_or("?"),
            link.kept_in(),
        ))?;
    }
    Ok(Exit::Ok.into())
}
