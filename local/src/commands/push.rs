//! `capabilities hub push`: send this hub's HTTP sources (manifests, connections), its policy,
//! its named profiles (each served hosted at `/mcp/<profile>`) and, only with `--secrets`, credential values the person agrees to one by one, to the hosted
//! hub signed in to. The hosted hub answers with a plan and its hash; applying sends the same
//! push with that hash, so a plan that changed in between is refused, never applied blind.
//! Sources that cannot run hosted (local commands, plain http to another machine) are left out
//! and named in the plan.

use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::oauth::SLOT as OAUTH_SLOT;
use capabilities_hosted::push::{self, LeftOut, Plan, Push};
use capabilities_hosted::records::{self, Connection, SecretValues, Source};
use clap::Args;
use serde_json::json;

use super::print_stdout;
use super::review::ask;
use crate::config::HubConfig;
use crate::error::{Exit, UsageError};
use crate::hosted::{self, Hosted, said};
use crate::profiles::Profile;
use crate::secrets::{SecretStore, SlotKey};
use crate::settings::Settings;
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport};

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Also send credential values from the keychain, asking for each one.
    #[arg(long)]
    pub secrets: bool,
    /// Apply the plan without asking (and, with `--secrets`, send every value without asking).
    #[arg(long, short)]
    pub yes: bool,
    /// Show the plan and stop.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(settings: &Settings, args: PushArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let link = Hosted::open(&store)?;
    let config = HubConfig::load(&store);
    for problem in &config.problems {
        eprintln!("warning: {problem}");
    }
    let mut body = build(&config);
    body.profiles = profiles(&store);
    eprintln!(
        "pushing {} source{} and {} profile{} to {} ({} left out)",
        body.sources.len(),
        if body.sources.len() == 1 { "" } else { "s" },
        body.profiles.len(),
        if body.profiles.len() == 1 { "" } else { "s" },
        link.login.hub,
        body.left_out.len()
    );
    if args.secrets {
        if settings.no_input && !args.yes {
            return Err(UsageError(
                "`--secrets` asks before sending each value: run it at a terminal, or add `--yes` to send them all"
                    .into(),
            )
            .into());
        }
        body.secrets = secrets(settings, &store, &config, &body, &link.login.hub, args.yes)?;
        body.with_secrets = true;
    }
    let runtime = hosted::runtime()?;
    let request = serde_json::to_value(&body)?;
    let answer = runtime.block_on(link.call("/hub/push", Some(&request)))?;
    if answer.status != 200 {
        bail!("{} refused the push (HTTP {}): {}", link.login.hub, answer.status, said(&answer.body));
    }
    let plan: Plan = serde_json::from_value(answer.body["plan"].clone())?;
    let hash = answer.body["hash"].as_str().unwrap_or_default().to_owned();
    if !settings.json {
        eprintln!("the plan ({hash}):");
        for line in push::describe(&plan) {
            eprintln!("  {line}");
        }
    }
    if args.dry_run {
        return finish(settings, &plan, &hash, false);
    }
    if !args.yes && !ask(settings, &format!("apply this plan to {}? [y/N] ", link.login.hub), false)? {
        eprintln!("nothing was applied");
        return finish(settings, &plan, &hash, false);
    }
    body.apply = Some(hash);
    let request = serde_json::to_value(&body)?;
    let answer = runtime.block_on(link.call("/hub/push", Some(&request)))?;
    match answer.status {
        200 => {
            let hash = answer.body["hash"].as_str().unwrap_or_default().to_owned();
            if !settings.json {
                eprintln!("applied");
            }
            finish(settings, &plan, &hash, true)
        }
        409 => {
            if let Ok(plan) = serde_json::from_value::<Plan>(answer.body["plan"].clone()) {
                eprintln!("the plan now:");
                for line in push::describe(&plan) {
                    eprintln!("  {line}");
                }
            }
            bail!("{}", said(&answer.body))
        }
        status => bail!("{} refused the push (HTTP {status}): {}", link.login.hub, said(&answer.body)),
    }
}

fn finish(settings: &Settings, plan: &Plan, hash: &str, applied: bool) -> Result<ExitCode> {
    if settings.json {
        print_stdout(&format!("{}\n", json!({ "plan": plan, "hash": hash, "applied": applied })))?;
    } else if applied {
        let profiles = match plan.profiles.is_empty() {
            true => String::new(),
            false => format!("; profiles {} (besides default)", plan.profiles.join(", ")),
        };
        print_stdout(&format!(
            "pushed: {} added, {} changed, {} removed, {} left out; {} tools hosted{profiles}\n",
            plan.added.len(),
            plan.changed.len(),
            plan.removed.len(),
            plan.left_out.len(),
            plan.tools
        ))?;
    }
    Ok(Exit::Ok.into())
}

/// The push of `config`: its HTTP sources with their tools, and why each other one is left out.
pub fn build(config: &HubConfig) -> Push {
    let mut out = Push { policy: config.policy.clone(), ..Push::default() };
    for (record, manifest, connections) in &config.sources {
        let ns = record.spec.namespace.clone();
        let leave = |reason: &str| LeftOut { namespace: ns.clone(), reason: reason.to_owned() };
        let (url, api) = match &record.spec.transport {
            SourceTransport::Http { url, .. } => (url, None),
            SourceTransport::OpenApi(api) => (&api.base_url, Some(api.clone())),
            _ => {
                out.left_out
                    .push(leave("a local command (stdio): a hosted hub reaches only sources over HTTP"));
                continue;
            }
        };
        let Some(manifest) = manifest.clone().filter(|m| !m.tools.is_empty()) else {
            out.left_out
                .push(leave("no tools read yet: run `capabilities hub refresh` (or `hub auth`) first"));
            continue;
        };
        let source = Source {
            namespace: ns.clone(),
            url: url.clone(),
            reviewed_origin: origin(url),
            manifest,
            connections: connections
                .connections
                .iter()
                .map(|c| Connection { name: c.name.clone(), slots: c.slots.clone(), oauth: c.oauth.clone() })
                .collect(),
            default_connection: connections.default.clone(),
            api,
        };
        if let Err(why) = source.endpoint() {
            out.left_out.push(leave(&why));
            continue;
        }
        let token_endpoint = source
            .connections
            .iter()
            .filter_map(|c| c.oauth.as_ref())
            .find_map(|client| records::check_token_endpoint(&client.token_endpoint).err());
        if let Some(why) = token_endpoint {
            out.left_out.push(leave(&format!("its OAuth token endpoint: {why}")));
            continue;
        }
        out.sources.push(source);
    }
    // Contracts reviewed for sources that stay here are no business of the hosted hub.
    let pushed = |address: &String| {
        let ns = address.split_once('.').map_or(address.as_str(), |(ns, _)| ns);
        out.sources.iter().any(|s| s.namespace == ns)
    };
    let reviewed = std::mem::take(&mut out.policy.reviewed);
    out.policy.reviewed = reviewed.into_iter().filter(|(a, _)| pushed(a)).collect();
    let changes = std::mem::take(&mut out.policy.changes);
    out.policy.changes = changes.into_iter().filter(|(a, _)| pushed(a)).collect();
    out
}

/// This hub's profiles besides the built-in `default`; one that cannot be read is left out
/// with a warning.
fn profiles(store: &Store) -> Vec<Profile> {
    let mut out = Vec::new();
    for name in crate::profiles::names(store).into_iter().filter(|n| n != crate::profiles::DEFAULT) {
        match crate::profiles::load(store, &name) {
            Ok(Some(profile)) => out.push(profile),
            Ok(None) => {}
            Err(err) => eprintln!("warning: profile `{name}` is left out: {err:#}"),
        }
    }
    out
}

/// `scheme://host[:port]` of a URL (already checked when the source was added).
fn origin(url: &str) -> String {
    reqwest::Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
}

/// The values the person agrees to send, each as the hosted hub sends it (a header's prefix
/// included).
fn secrets(
    settings: &Settings,
    store: &Store,
    config: &HubConfig,
    body: &Push,
    hub: &str,
    yes: bool,
) -> Result<Vec<SecretValues>> {
    let keychain = SecretStore::open(store)?;
    let mut out = Vec::new();
    for source in &body.sources {
        let spec: Option<&SourceSpec> =
            config.sources.iter().map(|(r, _, _)| &r.spec).find(|s| s.namespace == source.namespace);
        let prefixes = match spec.map(|s| &s.transport) {
            Some(SourceTransport::Http { header_slots, .. }) => header_slots.clone(),
            _ => Vec::new(),
        };
        for connection in &source.connections {
            let oauth = connection.oauth.as_ref().map(|_| OAUTH_SLOT);
            let mut values = Vec::new();
            for slot in connection.slots.iter().map(String::as_str).chain(oauth) {
                let key = SlotKey { namespace: &source.namespace, connection: &connection.name, slot };
                let Some(value) = keychain.get(&key)? else { continue };
                let what = if slot == OAUTH_SLOT {
                    format!(
                        "the OAuth sign-in of {}/{} (the hosted hub refreshes it itself from then on; a server \
                         that rotates refresh tokens may then sign the local copy out)",
                        source.namespace, connection.name
                    )
                } else {
                    format!("{} of {}/{}", slot, source.namespace, connection.name)
                };
                if !yes && !ask(settings, &format!("send {what} to {hub}? [y/N] "), false)? {
                    continue;
                }
                let prefix =
                    prefixes.iter().find(|h| h.name == slot).map(|h| h.prefix.as_str()).unwrap_or("");
                values.push((slot.to_owned(), format!("{prefix}{value}")));
            }
            if !values.is_empty() {
                out.push(SecretValues {
                    namespace: source.namespace.clone(),
                    connection: connection.name.clone(),
                    values,
                });
            }
        }
    }
    Ok(out)
}
