//! `capabilities hub push`: send this hub's HTTP sources (manifests, connections), its policy,
//! its named profiles (each served hosted at `/mcp/<profile>`), its skill library (each skill's
//! files with their sha256 and the lock's digest; the bytes the hosted hub lacks go in parts
//! before applying) and, only with `--secrets`, credential values the person agrees to one by
//! one, to the hosted hub signed in to. The hosted hub answers with a plan and its hash; applying sends the same
//! push with that hash, so a plan that changed in between is refused, never applied blind.
//! Sources that cannot run hosted (local commands, plain http to another machine) are left out
//! and named in the plan.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::oauth::SLOT as OAUTH_SLOT;
use capabilities_hosted::push::{self, LeftOut, Plan, Push};
use capabilities_hosted::records::{self, Connection, SecretValues, Source};
use capabilities_hosted::skills::{self as pushed, PushedSkill, SkillFile};
use clap::Args;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

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
    let (library, bytes) = skills(&store)?;
    body.skills = library;
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    eprintln!(
        "pushing {} source{}, {} profile{} and {} skill{} to {} ({} left out)",
        body.sources.len(),
        plural(body.sources.len()),
        body.profiles.len(),
        plural(body.profiles.len()),
        body.skills.len(),
        plural(body.skills.len()),
        link.login.hub,
        body.left_out.len()
    );
    if let Err(err) = capabilities_hosted::skills::check_library(&body.skills) {
        bail!("{err}; nothing was sent");
    }
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
    let missing: Vec<String> = serde_json::from_value(answer.body["missing"].clone()).unwrap_or_default();
    runtime.block_on(send_files(&link, &missing, &bytes))?;
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
        let k = &plan.skills;
        let skills = match k.added.len() + k.changed.len() + k.removed.len() + k.unchanged {
            0 => String::new(),
            _ => format!(
                "; skills: {} added, {} changed, {} removed, {} unchanged",
                k.added.len(),
                k.changed.len(),
                k.removed.len(),
                k.unchanged
            ),
        };
        print_stdout(&format!(
            "pushed: {} added, {} changed, {} removed, {} left out; {} tools hosted{profiles}{skills}\n",
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

/// Skill files' bytes by sha256 (hex).
type FileBytes = BTreeMap<String, Vec<u8>>;

/// The hub's skill library as a push carries it, and the bytes of every file by sha256. A
/// skill whose files differ from its lock entry, or that the hub's own endpoint does not
/// serve, is left out with a warning (so both hubs serve the same library).
fn skills(store: &Store) -> Result<(Vec<PushedSkill>, FileBytes)> {
    let library = crate::skills::Library::new(store);
    let lock = library.lock()?;
    let mut out = Vec::new();
    let mut bytes = BTreeMap::new();
    if lock.skills.is_empty() {
        return Ok((out, bytes));
    }
    // The front matter exactly as the local endpoint reads it (rmcp's catalog).
    let catalog = rmcp::handler::server::skill_catalog::SkillCatalog::from_dir(library.dir())
        .map_err(|e| anyhow::anyhow!("reading the skill library: {e}"))?;
    let served: BTreeMap<String, rmcp::model::Skill> =
        catalog.skills().into_iter().map(|s| (s.uri.clone(), s)).collect();
    'skills: for (name, locked) in lock.skills {
        let leave = |why: &str| eprintln!("warning: skill `{name}` is left out: {why}");
        let dir = library.dir().join(&name);
        let mut files = Vec::new();
        let mut these = Vec::new();
        for (path, sha) in &locked.files {
            let read = std::fs::read(dir.join(path));
            match read {
                Ok(data) if hex::encode(Sha256::digest(&data)) == *sha => {
                    files.push(SkillFile {
                        path: path.clone(),
                        sha256: sha.clone(),
                        size: data.len() as u64,
                    });
                    these.push((sha.clone(), data));
                }
                _ => {
                    leave(&format!(
                        "{path} changed or is missing since it was added (see `capabilities hub skills list`; add \
                         it again with `capabilities hub skills add --replace`)"
                    ));
                    continue 'skills;
                }
            }
        }
        let Some(skill) = served.get(&pushed::uri_of(&format!("{name}/{}", pushed::SKILL_MD))) else {
            leave("the hub's own endpoint does not serve it either (see `capabilities hub skills list`)");
            continue;
        };
        let Ok(Value::Object(frontmatter)) = serde_json::to_value(&skill.frontmatter) else {
            leave("its front matter cannot be read");
            continue;
        };
        out.push(PushedSkill {
            name: name.clone(),
            digest: locked.digest.clone(),
            description: locked.description.clone(),
            frontmatter,
            files,
        });
        bytes.extend(these);
    }
    Ok((out, bytes))
}

/// Sends the bytes of the skill files the hosted hub lacks, in parts, a few at a time.
async fn send_files(link: &Hosted, missing: &[String], bytes: &FileBytes) -> Result<()> {
    let mut batch: Vec<pushed::Part> = Vec::new();
    let mut size = 0;
    let mut sent = 0;
    let parts = missing.iter().filter_map(|sha| bytes.get(sha)).flat_map(|data| pushed::parts(data));
    for part in parts.map(Some).chain([None]) {
        let len = part.as_ref().map_or(0, |p| p.base64.len() / 4 * 3);
        if (part.is_none() || size + len > pushed::MAX_UPLOAD_BYTES) && !batch.is_empty() {
            let answer = link.call("/hub/push/files", Some(&json!({ "parts": batch }))).await?;
            if answer.status != 200 {
                bail!(
                    "{} refused the skill files (HTTP {}): {}",
                    link.login.hub,
                    answer.status,
                    said(&answer.body)
                );
            }
            sent += batch.len();
            batch.clear();
            size = 0;
        }
        if let Some(part) = part {
            size += len;
            batch.push(part);
        }
    }
    if sent > 0 {
        eprintln!(
            "sent {} skill file{} in {sent} part{}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            if sent == 1 { "" } else { "s" }
        );
    }
    Ok(())
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
