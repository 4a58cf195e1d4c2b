//! The hub's configuration records in the store: sources, their manifests, connections and the
//! policy. Each is one JSON file; a record that cannot be read is reported by name and skipped,
//! never silently dropped and never a crash.

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result};
use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::PolicyState;
use serde::{Deserialize, Serialize};

use crate::store::{Store, write_atomic};
use crate::upstream::SourceSpec;

/// `sources/<namespace>.json`: how to reach a source, and when a person added it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRecord {
    pub spec: SourceSpec,
    pub added_ms: u64,
}

/// One connection of a source: a name and the credential slots it fills. Values live in the
/// keychain, never here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionRecord {
    pub name: String,
    #[serde(default)]
    pub slots: Vec<String>,
}

/// `connections/<namespace>.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionsRecord {
    #[serde(default)]
    pub connections: Vec<ConnectionRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Everything configured, as read from the store.
#[derive(Debug, Clone, Default)]
pub struct HubConfig {
    pub sources: Vec<(SourceRecord, Option<Manifest>, ConnectionsRecord)>,
    pub policy: PolicyState,
    /// Records that could not be read, by path, with the reason.
    pub problems: Vec<String>,
}

impl HubConfig {
    pub fn load(store: &Store) -> HubConfig {
        let mut config = HubConfig::default();
        let dir = store.root().join("sources");
        let mut names: Vec<String> = fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok()?.strip_suffix(".json").map(str::to_owned))
            .collect();
        names.sort();
        for name in names {
            if Namespace::new(&name).is_err() {
                config
                    .problems
                    .push(format!("sources/{name}.json: not a valid namespace; the file is ignored"));
                continue;
            }
            let source: SourceRecord = match read_json(store, &format!("sources/{name}.json")) {
                Ok(Some(record)) => record,
                Ok(None) => continue,
                Err(err) => {
                    config.problems.push(format!("{err:#}"));
                    continue;
                }
            };
            let manifest = match read_json::<Manifest>(store, &format!("manifests/{name}.json")) {
                Ok(manifest) => manifest,
                Err(err) => {
                    config.problems.push(format!("{err:#}"));
                    None
                }
            };
            let connections = match read_json(store, &format!("connections/{name}.json")) {
                Ok(record) => record.unwrap_or_default(),
                Err(err) => {
                    config.problems.push(format!("{err:#}"));
                    ConnectionsRecord::default()
                }
            };
            config.sources.push((source, manifest, connections));
        }
        match read_json::<PolicyState>(store, "policies/policy.json") {
            Ok(policy) => config.policy = policy.unwrap_or_default(),
            Err(err) => config.problems.push(format!("{err:#}; every tool asks until it is fixed")),
        }
        config
    }

    /// The catalog the surface serves: every source with a manifest.
    pub fn catalog(&self) -> Catalog {
        Catalog::new(
            self.sources
                .iter()
                .filter_map(|(_, manifest, connections)| {
                    Some(SourceView {
                        manifest: manifest.clone()?,
                        connections: connections.connections.iter().map(|c| c.name.clone()).collect(),
                        default_connection: connections.default.clone(),
                    })
                })
                .collect(),
        )
    }
}

/// Reads `relative` under the store; `None` when it does not exist.
pub fn read_json<T: serde::de::DeserializeOwned>(store: &Store, relative: &str) -> Result<Option<T>> {
    let path: PathBuf = store.root().join(relative);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{relative} is corrupt (fix or remove it)")),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("reading {relative}")),
    }
}

/// Writes `relative` under the store atomically, under its record lock.
pub fn write_json<T: Serialize>(store: &Store, relative: &str, value: &T) -> Result<()> {
    let _lock = store.lock(relative).map_err(|e| anyhow::anyhow!("{e}"))?;
    let bytes = serde_json::to_vec_pretty(value)?;
    write_atomic(&store.root().join(relative), &bytes)
}

/// What the configuration looked like on disk: each record's name, size and modification time.
/// Two equal stamps mean nothing was added, removed or rewritten in between.
pub type ConfigStamp = Vec<(String, u64, Option<std::time::SystemTime>)>;

/// Stamps the configuration records under `root` without reading them.
pub fn config_stamp(root: &std::path::Path) -> ConfigStamp {
    let mut stamp = Vec::new();
    for dir in ["sources", "manifests", "connections", "policies"] {
        for entry in fs::read_dir(root.join(dir)).into_iter().flatten().flatten() {
            let meta = entry.metadata().ok();
            stamp.push((
                format!("{dir}/{}", entry.file_name().to_string_lossy()),
                meta.as_ref().map_or(0, |m| m.len()),
                meta.and_then(|m| m.modified().ok()),
            ));
        }
    }
    stamp.sort();
    stamp
}
