//! `capabilities hub add <OpenAPI document>`: an HTTP API as a source. The document is read
//! (a URL or a file), the base URL and the way the credential is sent are fixed now, the
//! credential is asked for once (a prompt that does not echo, or `--stdin`) into the keychain,
//! and the operations are reviewed like any source's tools: reads run, writes ask.
//!
//! A document whose only credential is OAuth 2.0 (the authorization code flow) or OpenID
//! Connect, or any document with `--auth oauth`, signs the person in instead (`oauth::api`):
//! the connection is an OAuth connection, its tokens in the keychain, refreshed like an MCP
//! server's, the bearer sent only to the base URL fixed here.

use std::process::ExitCode;

use anyhow::Result;
use capabilities_core::address::Namespace;
use capabilities_core::openapi::{HttpApi, HttpAuth};

use super::add::{AddArgs, register_connected, register_tools};
use crate::config;
use crate::error::UsageError;
use crate::oauth::{api as oauth_api, flow};
use crate::openapi;
use crate::secrets::{SecretStore, SlotKey, check_value, read_hidden};
use crate::settings::Settings;
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport};

pub(super) fn run(settings: &Settings, store: &Store, target: &str, args: &AddArgs) -> Result<ExitCode> {
    if !args.command.is_empty() || !args.env.is_empty() || !args.header.is_empty() {
        return Err(UsageError(
            "an OpenAPI document takes `--auth` for its credential, not `--env`, `--header` or a command"
                .into(),
        )
        .into());
    }
    let api_args = &args.api;
    eprintln!("reading the OpenAPI document `{target}`…");
    let fetched = openapi::fetch(target, api_args.allow_http)?;
    let base_url =
        openapi::base_url(&fetched, api_args.base_url.as_deref(), &api_args.server_var, api_args.allow_http)?;
    let mut sign_in = None;
    let auth = match api_args.auth.as_deref() {
        Some("none") => None,
        Some("oauth") => match oauth_api::plan(&fetched.document) {
            Some(plan) => {
                sign_in = Some(plan.map_err(UsageError)?);
                Some(HttpAuth::bearer())
            }
            None => {
                return Err(UsageError(
                    "`--auth oauth`: the document declares no OAuth 2.0 or OpenID Connect security scheme; \
                     pass `--auth bearer` with a token, or another `--auth`"
                        .into(),
                )
                .into());
            }
        },
        Some(raw) => Some(HttpAuth::parse(raw).map_err(UsageError)?),
        None => match fetched.document.default_auth() {
            Some(auth) => Some(auth),
            None => match oauth_api::plan(&fetched.document) {
                Some(plan) => {
                    sign_in = Some(plan.map_err(UsageError)?);
                    Some(HttpAuth::bearer())
                }
                None => None,
            },
        },
    };
    if sign_in.is_some() && api_args.stdin {
        return Err(UsageError(
            "`--stdin` reads a static credential, and this source signs in with OAuth; leave it out (or \
             pass `--auth bearer` to send a token you have)"
                .into(),
        )
        .into());
    }
    let namespace = match &args.namespace {
        Some(raw) => Namespace::new(raw).map_err(|e| {
            UsageError(format!("`{raw}` is not a valid namespace ({e}); pick another with `--namespace`"))
        })?,
        None => suggest(&fetched.document.title, &base_url),
    };
    let ns = namespace.as_str();
    if store.root().join(config::source_path(ns)).is_file() {
        return Err(UsageError(format!(
            "a source named `{ns}` exists already: re-read its document with `capabilities hub refresh {ns}`, \
             remove it with `capabilities hub remove {ns}`, or pick another name with `--namespace`"
        ))
        .into());
    }
    let spec = SourceSpec {
        namespace: ns.to_owned(),
        transport: SourceTransport::OpenApi(HttpApi {
            base_url: base_url.clone(),
            document: Some(fetched.location.clone()),
            auth: auth.clone(),
        }),
    };
    let listed = openapi::tool_list(ns, &fetched);
    let operations = &fetched.document.operations;
    let reads = operations.iter().filter(|op| op.http.as_ref().is_some_and(|h| h.reads())).count();
    eprintln!(
        "`{}` ({}): {} operations, {reads} that read and {} that may write; calls go to {base_url}",
        if fetched.document.title.is_empty() { ns } else { fetched.document.title.as_str() },
        fetched.document.version,
        operations.len(),
        operations.len() - reads,
    );
    if let Some(plan) = &sign_in {
        let manifest = sign_in_and_register(settings, store, &spec, &listed, &fetched, plan, args)?;
        return super::add::added_then_review(settings, store, &format!("`{ns}`"), &manifest, args.yes);
    }
    if auth.is_none() && !fetched.document.security_schemes.is_empty() {
        eprintln!(
            "note: the document's security schemes are not ones the hub sends by itself; pass `--auth` to say how"
        );
    }
    let secrets = match &auth {
        Some(auth) => {
            let value = ask_credential(settings, ns, auth, api_args.stdin)?;
            let secrets = SecretStore::open(store)?;
            secrets.set(&SlotKey { namespace: ns, connection: "default", slot: HttpAuth::SLOT }, &value)?;
            Some(secrets)
        }
        None => None,
    };
    let manifest = match register_tools(store, &spec, &listed) {
        Ok(manifest) => manifest,
        Err(err) => {
            if let Some(secrets) = &secrets {
                let _ =
                    secrets.delete(&SlotKey { namespace: ns, connection: "default", slot: HttpAuth::SLOT });
            }
            return Err(err);
        }
    };
    if let (Some(secrets), Some(auth)) = (&secrets, &auth) {
        eprintln!(
            "the credential ({}) is in {}; it goes only to {base_url}",
            auth.describe(),
            secrets.describe()
        );
    }
    super::add::added_then_review(settings, store, &format!("`{ns}`"), &manifest, args.yes)
}

/// Signs connection `default` in as `plan` says, then writes the source's records (tokens
/// first; they go again if the records cannot be written).
fn sign_in_and_register(
    settings: &Settings,
    store: &Store,
    spec: &SourceSpec,
    listed: &crate::sources::ToolList,
    fetched: &openapi::Fetched,
    plan: &oauth_api::Plan,
    args: &AddArgs,
) -> Result<capabilities_core::manifest::Manifest> {
    let ns = spec.namespace.as_str();
    let SourceTransport::OpenApi(api) = &spec.transport else { unreachable!("an API source") };
    eprintln!("`{ns}` asks you to sign in ({})", plan.describe());
    let mut options = args.sign_in.options(settings)?;
    options.scopes = oauth_api::scopes(&fetched.document, plan, &options.scopes);
    let signed_in = sign_in_now(ns, &api.base_url, plan, &options)?;
    let connected = flow::Connected { signed_in, tools: listed.clone() };
    let manifest = register_connected(store, spec, "default", &connected)?;
    eprintln!("the access token goes only to {}", api.base_url);
    Ok(manifest)
}

/// Runs one sign-in for an API source.
pub(super) fn sign_in_now(
    ns: &str,
    base_url: &str,
    plan: &oauth_api::Plan,
    options: &crate::oauth::SignInOptions,
) -> Result<crate::oauth::SignedIn> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting the async runtime: {e}"))?;
    runtime
        .block_on(oauth_api::sign_in(base_url, plan, options))
        .map_err(|why| anyhow::anyhow!("signing `{ns}` in failed: {why}"))
}

/// The credential, from stdin or a prompt that does not echo; asked once, here.
fn ask_credential(settings: &Settings, ns: &str, auth: &HttpAuth, stdin: bool) -> Result<String> {
    let value = if stdin {
        super::auth::read_stdin(&[HttpAuth::SLOT.to_owned()])?.remove(0)
    } else if settings.no_input {
        return Err(UsageError(format!(
            "`{ns}` takes a credential ({}): run this at a terminal, or pipe it in with `--stdin` \
             (or `--auth none` if the API needs none)",
            auth.describe()
        ))
        .into());
    } else {
        read_hidden(&format!("credential for `{ns}`, {} (input hidden): ", auth.describe()))?
    };
    check_value(HttpAuth::SLOT, &value).map_err(|why| UsageError(format!("{why}; nothing was added")))?;
    Ok(value)
}

/// A namespace from the API's title (`Swagger Petstore - OpenAPI 3.0` → `swaggerPetstore`), or
/// from the base URL's host.
fn suggest(title: &str, base_url: &str) -> Namespace {
    // Words that say nothing about which API it is (`GitHub's official OpenAPI spec`).
    const EMPTY: [&str; 5] = ["the", "official", "rest", "public", "s"];
    let title = title.replace(['\'', '\u{2019}'], " ");
    let words: Vec<&str> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !EMPTY.iter().any(|e| w.eq_ignore_ascii_case(e)))
        .take_while(|w| !w.eq_ignore_ascii_case("api") && !w.eq_ignore_ascii_case("openapi"))
        .take(2)
        .collect();
    if words.is_empty() {
        return super::add::suggest(&SourceTransport::Http {
            url: base_url.to_owned(),
            header_slots: Vec::new(),
        });
    }
    Namespace::suggest(&words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_from_titles() {
        let ns = |title: &str| suggest(title, "https://api.example.com").to_string();
        assert_eq!(ns("Swagger Petstore - OpenAPI 3.0"), "swagger_petstore");
        assert_eq!(ns("GitHub's official OpenAPI spec + Octokit extension"), "github");
        assert_eq!(ns("The Stripe REST API"), "stripe");
    }
}
