//! The hub's configuration records in the store: sources, their manifests, connections and the
//! policy, each one JSON file at a path named here. A record that cannot be read is reported by
//! name and skipped, never silently dropped and never a crash.

use std::fs;
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::{Context, Result};
use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::manifest::Manifest;
use capabilities_core::oauth::OAuthClient;
use capabilities_core::policy::PolicyState;
use serde::{Deserialize, Serialize};

use crate::store::{Store, write_atomic};
use crate::upstream::SourceSpec;

/// The policy file: the rules and the contracts a person reviewed.
pub const POLICY: &str = "policies/policy.json";

/// Where the record of source `namespace` lives.
pub fn source_path(namespace: &str) -> String {
    format!("sources/{namespace}.json")
}

/// Where the manifest of source `namespace` lives.
pub fn manifest_path(namespace: &str) -> String {
    format!("manifests/{namespace}.json")
}

/// Where the connections of source `namespace` live.
pub fn connections_path(namespace: &str) -> String {
    format!("connections/{namespace}.json")
}

/// The stored policy; the empty one when there is none yet.
pub fn load_policy(store: &Store) -> Result<PolicyState> {
    Ok(read_json::<PolicyState>(store, POLICY)?.unwrap_or_default())
}

/// Writes the policy file.
pub fn save_policy(store: &Store, policy: &PolicyState) -> Result<()> {
    write_json(store, POLICY, policy)
}

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
    /// An OAuth connection: the client it signed in as. Its tokens are a secret value, slot
    /// `#oauth` (see `oauth::tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthClient>,
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
            let source: SourceRecord = match read_json(store, &source_path(&name)) {
                Ok(Some(record)) => record,
                Ok(None) => continue,
                Err(err) => {
                    config.problems.push(format!("{err:#}"));
                    continue;
                }
            };
            let manifest = match read_json::<Manifest>(store, &manifest_path(&name)) {
                Ok(manifest) => manifest,
                Err(err) => {
                    config.problems.push(format!("{err:#}"));
                    None
                }
            };
            let connections = match read_json(store, &connections_path(&name)) {
                Ok(record) => record.unwrap_or_default(),
                Err(err) => {
                    config.problems.push(format!("{err:#}"));
                    ConnectionsRecord::default()
                }
            };
            config.sources.push((source, manifest, connections));
        }
        match read_json::<PolicyState>(store, POLICY) {
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

/// The directories whose records make up the configuration (`skills`: a skill installed,
/// replaced or removed renames a folder there, which `search` and `describe` must see).
const CONFIG_DIRS: [&str; 6] = ["sources", "manifests", "connections", "policies", "profiles", "skills"];

/// A directory's listing (or a file's parse, `secrets/file.rs`) is reused only once its
/// modification time is this old: a change made later moves the time on to a later value,
/// however coarse the filesystem's clock.
pub(crate) const SETTLED: std::time::Duration = std::time::Duration::from_secs(1);

/// What the configuration looked like on disk: each directory's modification time and each
/// record's name, size and modification time. Two equal stamps mean nothing was added,
/// removed or rewritten in between.
#[derive(Debug, Clone, Default)]
pub struct ConfigStamp(Vec<DirStamp>);

#[derive(Debug, Clone)]
struct DirStamp {
    modified: Option<SystemTime>,
    records: Vec<(String, u64, Option<SystemTime>)>,
    /// Whether the listing was taken when `modified` was already [`SETTLED`].
    settled: bool,
}

impl PartialEq for ConfigStamp {
    fn eq(&self, other: &ConfigStamp) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| a.modified == b.modified && a.records == b.records)
    }
}

/// Stamps the configuration records under `root` without reading them.
pub fn config_stamp(root: &std::path::Path) -> ConfigStamp {
    config_stamp_after(root, None)
}

/// [`config_stamp`], listing again only the directories changed since `seen`: for one whose
/// modification time is what `seen` holds and was settled then, the records it named are
/// stamped one by one, which saves opening and reading the directory on every call.
pub fn config_stamp_after(root: &std::path::Path, seen: Option<&ConfigStamp>) -> ConfigStamp {
    let now = SystemTime::now();
    let mut dirs = Vec::with_capacity(CONFIG_DIRS.len());
    for (i, dir) in CONFIG_DIRS.into_iter().enumerate() {
        let path = root.join(dir);
        let modified = fs::metadata(&path).and_then(|m| m.modified()).ok();
        let settled = modified.is_some_and(|t| now.duration_since(t).is_ok_and(|age| age >= SETTLED));
        let before = seen.and_then(|s| s.0.get(i)).filter(|d| d.settled && d.modified == modified);
        let records = match before {
            Some(before) => before
                .records
                .iter()
                .map(|(name, _, _)| {
                    let meta = fs::metadata(path.join(name)).ok();
                    (name.clone(), meta.as_ref().map_or(0, |m| m.len()), meta.and_then(|m| m.modified().ok()))
                })
                .collect(),
            None => {
                let mut records: Vec<_> = fs::read_dir(&path)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|entry| {
                        let meta = entry.metadata().ok();
                        (
                            entry.file_name().to_string_lossy().into_owned(),
                            meta.as_ref().map_or(0, |m| m.len()),
                            meta.and_then(|m| m.modified().ok()),
                        )
                    })
                    .collect();
                records.sort();
                records
            }
        };
        dirs.push(DirStamp { modified, records, settled });
    }
    ConfigStamp(dirs)
}

/// Tells whether the configuration may have changed since it was last asked, from the kernel's
/// change notices for the configuration directories (inotify) read without waiting: one system
/// call when nothing changed, where a stamp costs one per directory and record. The notices of
/// a change are queued by the very call that makes it, so a change another process finished
/// before this is asked is always seen. Only on Linux and on a filesystem whose changes all pass
/// through this kernel (not a network filesystem): elsewhere [`ConfigWatch::new`] gives `None`
/// and callers stamp as before.
pub struct ConfigWatch {
    #[cfg(target_os = "linux")]
    inotify: nix::sys::inotify::Inotify,
    /// Set once the watch can no longer tell (its queue overflowed, a watched directory went,
    /// a read failed): from then on it always answers "changed".
    #[cfg(target_os = "linux")]
    blind: bool,
}

impl ConfigWatch {
    /// Watches the configuration directories under `root`; `None` where that cannot be relied
    /// on. The first [`ConfigWatch::changed`] answers for what happened since this call.
    #[cfg(target_os = "linux")]
    pub fn new(root: &std::path::Path) -> Option<ConfigWatch> {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        use nix::sys::statfs;

        let local = [
            statfs::TMPFS_MAGIC,
            statfs::EXT4_SUPER_MAGIC,
            statfs::XFS_SUPER_MAGIC,
            statfs::BTRFS_SUPER_MAGIC,
            statfs::OVERLAYFS_SUPER_MAGIC,
        ];
        let kind = statfs::statfs(root).ok()?.filesystem_type();
        if !local.contains(&kind) {
            return None;
        }
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let what = AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR;
        for dir in CONFIG_DIRS {
            inotify.add_watch(&root.join(dir), what).ok()?;
        }
        Some(ConfigWatch { inotify, blind: false })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new(_root: &std::path::Path) -> Option<ConfigWatch> {
        None
    }

    /// Whether anything in the configuration directories changed since the last call (or since
    /// the watch began): `false` only when certainly nothing did.
    #[cfg(target_os = "linux")]
    pub fn changed(&mut self) -> bool {
        use nix::sys::inotify::AddWatchFlags;
        if self.blind {
            return true;
        }
        let mut changed = false;
        loop {
            match self.inotify.read_events() {
                Ok(events) => {
                    changed = true;
                    let lost = AddWatchFlags::IN_Q_OVERFLOW
                        | AddWatchFlags::IN_IGNORED
                        | AddWatchFlags::IN_DELETE_SELF
                        | AddWatchFlags::IN_MOVE_SELF;
                    if events.iter().any(|e| e.mask.intersects(lost)) {
                        self.blind = true;
                        return true;
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => return changed,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => {
                    self.blind = true;
                    return true;
                }
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn changed(&mut self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store's configuration directories with one source record in them.
    fn configuration() -> (tempfile::TempDir, std::path::PathBuf) {
        let root = tempfile::tempdir().expect("a temp dir");
        for dir in CONFIG_DIRS {
            fs::create_dir(root.path().join(dir)).expect("a config dir");
        }
        let record = root.path().join("sources/a.json");
        fs::write(&record, "{}").expect("a record");
        (root, record)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_watch_sees_every_kind_of_change_and_nothing_else() {
        let (root, record) = configuration();
        // A filesystem it cannot rely on gives no watch; the test's temp dir is a local one.
        let Some(mut watch) = ConfigWatch::new(root.path()) else {
            panic!("no watch on {}", root.path().display())
        };
        assert!(!watch.changed(), "nothing changed yet");
        // Outside the configuration: not a change.
        fs::create_dir(root.path().join("runs")).expect("runs");
        fs::write(root.path().join("runs/x.json"), "{}").expect("a run");
        assert!(!watch.changed());
        // Each kind of change, seen by the first look after it and not again.
        type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let changes: [Change; 6] = [
            ("rewritten in place", Box::new(|| fs::write(&record, "{\"x\":1}").expect("a rewrite"))),
            ("a new record", Box::new(|| fs::write(root.path().join(POLICY), "{}").expect("a record"))),
            (
                "renamed into place",
                Box::new(|| {
                    let tmp = root.path().join("profiles/.p.tmp");
                    fs::write(&tmp, "{}").expect("a temp file");
                    fs::rename(&tmp, root.path().join("profiles/p.json")).expect("a rename");
                }),
            ),
            (
                "touched",
                Box::new(|| {
                    let then = SystemTime::now() - std::time::Duration::from_secs(5);
                    fs::File::open(&record).and_then(|f| f.set_modified(then)).expect("a touch");
                }),
            ),
            ("removed", Box::new(|| fs::remove_file(root.path().join(POLICY)).expect("a removal"))),
            ("a folder added", Box::new(|| fs::create_dir(root.path().join("skills/s")).expect("a skill"))),
        ];
        for (what, change) in changes {
            change();
            assert!(watch.changed(), "{what}: not seen");
            assert!(!watch.changed(), "{what}: seen twice");
        }
        // A configuration directory moved away: the watch can no longer tell, and says so
        // every time after.
        fs::rename(root.path().join("connections"), root.path().join("elsewhere")).expect("a move");
        assert!(watch.changed());
        assert!(watch.changed(), "blind from then on");
    }

    /// Sets `path`'s modification time `secs` seconds back, as if it settled long ago.
    fn age(path: &std::path::Path, secs: u64) {
        let then = SystemTime::now() - std::time::Duration::from_secs(secs);
        fs::File::open(path).and_then(|f| f.set_modified(then)).expect("an old modification time");
    }

    #[test]
    fn stamps_see_every_change_whether_or_not_a_listing_is_reused() {
        let (root, record) = configuration();
        age(&record, 20);
        for dir in CONFIG_DIRS {
            age(&root.path().join(dir), 10);
        }
        let first = config_stamp(root.path());
        let again = config_stamp_after(root.path(), Some(&first));
        assert_eq!(first, again, "nothing changed");

        // Rewritten in place: the directory keeps its time, the record does not.
        fs::write(&record, "{\"x\":1}").expect("a rewrite");
        let rewritten = config_stamp_after(root.path(), Some(&again));
        assert_ne!(again, rewritten);

        // A new record moves the directory's time on, so it is listed again.
        fs::write(root.path().join(POLICY), "{}").expect("a new record");
        let added = config_stamp_after(root.path(), Some(&rewritten));
        assert_ne!(rewritten, added);
        assert_eq!(added, config_stamp(root.path()));

        // Removed, even right after it was listed.
        fs::remove_file(root.path().join(POLICY)).expect("a removal");
        assert_ne!(added, config_stamp_after(root.path(), Some(&added)));
    }
}
