//! Managing sources from the CLI: reading a source's tools, writing and removing its records in
//! the store (paths in [`crate::config`]), noting what changed upstream, and how a source is
//! shown (its command line) or started by hand (credentials from the environment). The review
//! screen that pins the contracts a person accepted is `commands/review.rs`.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use capabilities_core::address::Namespace;
use capabilities_core::manifest::{self, Manifest, ManifestDiff};
use capabilities_core::ports::Credentials;
use serde_json::Value;

use crate::config::{
    ConnectionsRecord, SourceRecord, connections_path, load_policy, manifest_path, read_json, save_policy,
    source_path, write_json,
};
use crate::error::UsageError;
use crate::store::Store;
use crate::upstream::{PoolOptions, SourceError, SourcePool, SourceSpec, SourceTransport};

/// The source a person named on the command line, with its record; a usage error when the name
/// is not a namespace, and an error saying where to look when no such source exists.
pub fn named_source(store: &Store, name: &str) -> Result<(Namespace, SourceRecord)> {
    let namespace = Namespace::new(name).map_err(|e| {
        UsageError(format!("`{name}` is not a namespace ({e}); `capabilities hub list` shows them"))
    })?;
    let Some(record) = read_json::<SourceRecord>(store, &source_path(namespace.as_str()))? else {
        bail!("there is no source `{namespace}`; `capabilities hub list` shows the sources");
    };
    Ok((namespace, record))
}

/// Starts the source, lists its tools (every page) and stops it. A failure carries the tail of
/// what the source wrote to stderr.
pub fn read_tools(spec: &SourceSpec, credentials: &Credentials) -> Result<ToolList> {
    match list_tools(spec, credentials)? {
        Listed::Tools(tools) => Ok(tools),
        Listed::AuthRequired { .. } => bail!(
            "{}\nthe server wants a sign-in: run `capabilities hub auth {}`",
            SourceError::AuthRequired { namespace: spec.namespace.clone(), status: 401, challenge: None },
            spec.namespace
        ),
    }
}

/// What listing a source's tools came to: its tools, or the server's refusal of the
/// credentials (with its `WWW-Authenticate` challenge), which a sign-in may answer.
#[derive(Debug)]
pub enum Listed {
    Tools(ToolList),
    AuthRequired { status: u16, challenge: Option<String> },
}

/// [`read_tools`], telling a refusal of the credentials apart from every other failure.
pub fn list_tools(spec: &SourceSpec, credentials: &Credentials) -> Result<Listed> {
    if let SourceTransport::OpenApi(api) = &spec.transport {
        return Ok(Listed::Tools(crate::openapi::reread(&spec.namespace, api)?));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let pool = SourcePool::new(PoolOptions::default());
    pool.register(spec.clone());
    let listed = runtime.block_on(async {
        let entries = pool.list_tools(spec, credentials).await?;
        let description = pool.instructions(spec, credentials).await;
        Ok::<_, SourceError>(ToolList { entries, description, records: None })
    });
    let tail = pool.stderr_tail(&spec.namespace);
    pool.shutdown();
    match listed {
        Ok(tools) => Ok(Listed::Tools(tools)),
        Err(SourceError::AuthRequired { status, challenge, .. }) => {
            Ok(Listed::AuthRequired { status, challenge })
        }
        Err(err) => {
            let mut message = err.to_string();
            let tail = tail.trim();
            if !tail.is_empty() {
                let _ = write!(message, "\nits stderr ended with:\n{}", indent(tail));
            }
            let _ = write!(message, "\ncheck the command or URL, then run `capabilities hub add` again");
            bail!(message)
        }
    }
}

/// What a source listed: its raw tools, and what it says about itself.
#[derive(Debug, Clone, Default)]
pub struct ToolList {
    pub entries: Vec<Value>,
    /// The source's `initialize` instructions, as it sent them (an API: its document's
    /// description).
    pub description: Option<String>,
    /// An HTTP API's operations, read from its document (its `entries` are empty).
    pub records: Option<Vec<capabilities_core::manifest::ToolRecord>>,
}

/// The manifest of `namespace` built from a raw tool list; problems are printed as warnings.
pub fn build_manifest(namespace: &Namespace, listed: &ToolList) -> Manifest {
    let mut manifest = match &listed.records {
        Some(records) => Manifest::from_records(namespace.clone(), records.clone()),
        None => {
            let (manifest, problems) = Manifest::from_tools_list(namespace.clone(), &listed.entries);
            for problem in problems {
                eprintln!("warning: {namespace}: {problem}");
            }
            manifest
        }
    };
    manifest.description =
        listed.description.as_deref().and_then(capabilities_core::manifest::source_description);
    manifest
}

/// Writes a new source's three records, all or nothing: on a failure the ones written are
/// removed again.
pub fn write_new_source(
    store: &Store,
    record: &SourceRecord,
    manifest: &Manifest,
    connections: &ConnectionsRecord,
) -> Result<()> {
    let ns = record.spec.namespace.as_str();
    let mut written: Vec<String> = Vec::new();
    let result = (|| -> Result<()> {
        write_json(store, &manifest_path(ns), manifest)?;
        written.push(manifest_path(ns));
        write_json(store, &connections_path(ns), connections)?;
        written.push(connections_path(ns));
        // The source record last: without it the others are never read.
        write_json(store, &source_path(ns), record)?;
        Ok(())
    })();
    if result.is_err() {
        for path in &written {
            let _ = std::fs::remove_file(store.root().join(path));
        }
    }
    result
}

/// Removes a source's records and every policy entry on its namespace. Returns whether the
/// source existed.
pub fn remove_source(store: &Store, namespace: &Namespace) -> Result<bool> {
    let ns = namespace.as_str();
    let existed = store.root().join(source_path(ns)).is_file();
    for path in [source_path(ns), manifest_path(ns), connections_path(ns)] {
        match std::fs::remove_file(store.root().join(&path)) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err).with_context(|| format!("removing {path}")),
        }
    }
    let mut policy = load_policy(store)?;
    let before = (policy.rules.len(), policy.reviewed.len());
    policy.rules.retain(|rule| rule.target.namespace() != namespace);
    let prefix = format!("{ns}.");
    policy.reviewed.retain(|address, _| !address.starts_with(&prefix));
    policy.changes.retain(|address, _| !address.starts_with(&prefix));
    if before != (policy.rules.len(), policy.reviewed.len()) {
        save_policy(store, &policy)?;
    }
    // Its installed package stays in `packages/` (another source may run it); the pin goes.
    crate::packages::set(store, ns, None)?;
    Ok(existed)
}

/// The command line a stdio source runs, as a person would type it.
pub fn command_line(spec: &SourceSpec) -> Option<String> {
    match &spec.transport {
        SourceTransport::Stdio { command, args, env, .. } => {
            let mut words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={}", quote(v))).collect();
            words.push(quote(command));
            words.extend(args.iter().map(|a| quote(a)));
            Some(words.join(" "))
        }
        _ => None,
    }
}

/// How a stdio source is isolated, for the review screen: `None` when it runs as the person.
pub fn isolation_line(spec: &SourceSpec) -> Option<String> {
    match &spec.transport {
        SourceTransport::Stdio { isolation: Some(isolation), .. } => Some(isolation.describe()),
        _ => None,
    }
}

fn quote(word: &str) -> String {
    let plain =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// The connection record a new source starts with: none without credential slots, else one
/// connection named `default` holding the slot names (values go to the keychain, never here).
pub fn connections_for(spec: &SourceSpec) -> ConnectionsRecord {
    let slots = slot_names(spec);
    if slots.is_empty() {
        return ConnectionsRecord::default();
    }
    ConnectionsRecord {
        connections: vec![crate::config::ConnectionRecord { name: "default".to_owned(), slots, oauth: None }],
        default: Some("default".to_owned()),
    }
}

fn slot_names(spec: &SourceSpec) -> Vec<String> {
    match &spec.transport {
        SourceTransport::Stdio { env_slots, .. } => env_slots.clone(),
        SourceTransport::Http { header_slots, .. } => header_slots.iter().map(|h| h.name.clone()).collect(),
        SourceTransport::OpenApi(api) => {
            api.auth.iter().map(|_| capabilities_core::openapi::HttpAuth::SLOT.to_owned()).collect()
        }
    }
}

/// Credentials for reading a source's tools from the CLI: an OAuth connection's stored token
/// (refreshed when it expired), else [`credentials_from_env`].
pub fn cli_credentials(
    config: &crate::config::HubConfig,
    store: &Store,
    spec: &SourceSpec,
) -> Result<Credentials> {
    let oauth = config.sources.iter().any(|(record, _, connections)| {
        record.spec.namespace == spec.namespace
            && connections
                .connections
                .iter()
                .any(|c| Some(&c.name) == connections.default.as_ref() && c.oauth.is_some())
    });
    if !oauth {
        return Ok(credentials_from_env(spec));
    }
    use capabilities_core::ports::Secrets as _;
    let namespace = Namespace::new(&spec.namespace).map_err(|e| anyhow::anyhow!("{e}"))?;
    let secrets = crate::secrets::LocalSecrets::new(config, store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(secrets.resolve(&namespace, None)).map_err(|e| match e {
        capabilities_core::ports::SecretsError::SignInRequired { connection, reason, .. } => anyhow::anyhow!(
            "connection `{connection}` needs a sign-in ({reason}): run `capabilities hub auth {namespace} --connection {connection}`"
        ),
        other => anyhow::anyhow!("{other}"),
    })
}

/// Credentials for listing a source's tools from the CLI: each slot's value from the variable
/// of the same name in this shell's environment, when it is set.
pub fn credentials_from_env(spec: &SourceSpec) -> Credentials {
    let slots = slot_names(spec);
    if slots.is_empty() {
        return Credentials::default();
    }
    let values =
        slots.iter().filter_map(|name| Some((name.clone(), std::env::var(env_name(name)).ok()?))).collect();
    Credentials { connection: Some("default".to_owned()), values }
}

/// The environment variable a slot's value is read from: the slot name, upper-cased, with
/// `-` as `_` (`Authorization` → `AUTHORIZATION`, `X-Api-Key` → `X_API_KEY`).
pub fn env_name(slot: &str) -> String {
    slot.to_ascii_uppercase().replace('-', "_")
}

/// Keeps what `diff` changed in each tool whose reviewed contract is no longer the current one,
/// so a call that asks because of the change can say what it was.
pub fn note_changes(store: &Store, manifest: &Manifest, diff: &ManifestDiff) -> Result<()> {
    if diff.changed.is_empty() {
        return Ok(());
    }
    let _lock = store.lock("policy").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut policy = load_policy(store)?;
    let before = policy.changes.clone();
    for changed in &diff.changed {
        let Some(tool) = manifest.tools.iter().find(|t| t.record.name == changed.name) else { continue };
        let lines: Vec<String> = changed.changes.iter().map(ToString::to_string).collect();
        policy.note_changes(&manifest.address(tool).to_string(), &changed.after, &lines);
    }
    if policy.changes != before {
        save_policy(store, &policy)?;
    }
    Ok(())
}

/// What changed between the stored manifest (if any) and a fresh one.
pub fn diff_against(before: Option<&Manifest>, after: &Manifest) -> ManifestDiff {
    let empty = Manifest { namespace: after.namespace.clone(), description: None, tools: Vec::new() };
    manifest::diff(before.unwrap_or(&empty), after)
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    use expect_test::expect;

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let spec = SourceSpec {
            namespace: "memory".into(),
            transport: SourceTransport::Stdio {
                command: "node".into(),
                args: vec!["/a b/index.js".into(), "--x".into()],
                env: [("MEMORY_FILE_PATH".to_owned(), "/tmp/m.jsonl".to_owned())].into(),
                env_slots: vec![],
                cwd: None,
                isolation: None,
            },
        };
        expect![[r#"MEMORY_FILE_PATH=/tmp/m.jsonl node '/a b/index.js' --x"#]]
            .assert_eq(&command_line(&spec).unwrap());
    }
}
