//! `capabilities hub logout`: revoke the hosted hub's sign-in and forget it here.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::print_stdout;
use crate::error::Exit;
use crate::hosted;
use crate::secrets::SecretStore;
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct LogoutArgs {}

pub fn run(settings: &Settings, _args: LogoutArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let Some(login) = hosted::read_login(&store)? else {
        print_stdout("not signed in to a hosted hub; nothing to do\n")?;
        return Ok(Exit::Ok.into());
    };
    let secrets = SecretStore::open(&store)?;
    let tokens = hosted::forget(&store, &secrets)?;
    // Revoking the refresh token ends its whole family at the hub; the short-lived access token
    // runs out by itself.
    let revoked = match tokens.and_then(|t| t.refresh_token) {
        Some(refresh) => hosted::runtime()?.block_on(revoke(&login, &refresh)),
        None => Ok(()),
    };
    match revoked {
        Ok(()) => {
            print_stdout(&format!("signed out of {}; its tokens are revoked and deleted here\n", login.hub))?
        }
        Err(why) => print_stdout(&format!(
            "signed out here (the tokens are deleted), but {} did not take the revocation: {why}\n",
            login.hub
        ))?,
    }
    Ok(Exit::Ok.into())
}

async fn revoke(login: &hosted::Login, refresh: &str) -> Result<(), String> {
    let form = form_urlencoded::Serializer::new(String::new())
        .append_pair("token", refresh)
        .append_pair("token_type_hint", "refresh_token")
        .append_pair("client_id", &login.client.client_id)
        .finish();
    let answer = hosted::http_client()
        .map_err(|e| e.to_string())?
        .post(format!("{}/oauth/revoke", login.hub))
        .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if answer.status().is_success() { Ok(()) } else { Err(format!("HTTP {}", answer.status().as_u16())) }
}
