//! The fallback store when no keychain is reachable: `secrets.json` in the hub's home, mode 600,
//! values by namespace, connection and slot. Every change rewrites the whole file atomically
//! under the record lock.
//!
//! A hub reads a slot for every call it sends, so the parsed file is kept until the file on disk
//! changes: each read compares the file's identity (device, inode, size, modification time) with
//! the one it was parsed from. Every change is a rename of a new file over the old one, so another
//! process's write is seen by the next read. A file changed in the last second is not kept
//! ([`SETTLED`], as for the configuration's listings): modification times are coarse, so an edit
//! in place made within the same tick would leave the time as it was.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::SlotKey;
use crate::config::SETTLED;
use crate::store::{Store, write_atomic};

/// The file's name under the hub's home.
pub const FILE_NAME: &str = "secrets.json";

#[derive(Debug, Clone)]
pub(super) struct FileStore {
    store: Store,
    /// The file as last parsed, with the identity it had then.
    parsed: Arc<Mutex<Option<Parsed>>>,
}

/// What tells one version of the file from another: device, inode, size, modification time.
type Identity = (u64, u64, u64, i64, i64);

/// A parse of the file and the identity the file had when it was read.
type Parsed = (Identity, Arc<SecretsFile>);

/// Namespace → connection → slot → value.
type Values = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct SecretsFile {
    #[serde(default)]
    values: Values,
}

impl FileStore {
    pub(super) fn new(store: &Store) -> FileStore {
        FileStore { store: store.clone(), parsed: Arc::default() }
    }

    pub(super) fn path(&self) -> PathBuf {
        self.store.root().join(FILE_NAME)
    }

    pub(super) fn get(&self, key: &SlotKey<'_>) -> Result<Option<String>, String> {
        let file = self.read()?;
        Ok(file
            .values
            .get(key.namespace)
            .and_then(|c| c.get(key.connection))
            .and_then(|s| s.get(key.slot))
            .cloned())
    }

    pub(super) fn set(&self, key: &SlotKey<'_>, value: &str) -> Result<(), String> {
        let _lock = self.store.lock(FILE_NAME).map_err(|e| e.to_string())?;
        let mut file = SecretsFile::clone(&*self.read()?);
        file.values
            .entry(key.namespace.to_owned())
            .or_default()
            .entry(key.connection.to_owned())
            .or_default()
            .insert(key.slot.to_owned(), value.to_owned());
        self.write(&file)
    }

    /// Deletes one slot's value; whether there was one.
    pub(super) fn delete(&self, key: &SlotKey<'_>) -> Result<bool, String> {
        let _lock = self.store.lock(FILE_NAME).map_err(|e| e.to_string())?;
        let mut file = SecretsFile::clone(&*self.read()?);
        let Some(connections) = file.values.get_mut(key.namespace) else { return Ok(false) };
        let Some(slots) = connections.get_mut(key.connection) else { return Ok(false) };
        let existed = slots.remove(key.slot).is_some();
        if slots.is_empty() {
            connections.remove(key.connection);
        }
        if connections.is_empty() {
            file.values.remove(key.namespace);
        }
        if existed {
            self.write(&file)?;
        }
        Ok(existed)
    }

    fn read(&self) -> Result<Arc<SecretsFile>, String> {
        let path = self.path();
        let now = std::time::SystemTime::now();
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Arc::default()),
            Err(err) => return Err(format!("reading {}: {err}", path.display())),
        };
        // Someone loosened the file's mode: close it again before anything else.
        if meta.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("setting mode 600 on {}: {e}", path.display()))?;
        }
        let identity = (meta.dev(), meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec());
        let mut parsed = self.parsed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, file)) = parsed.as_ref()
            && *seen == identity
        {
            return Ok(Arc::clone(file));
        }
        // Read after the identity was taken: should the file change in between, what is kept is
        // newer than its identity says, and the next read parses the file again.
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Arc::default()),
            Err(err) => return Err(format!("reading {}: {err}", path.display())),
        };
        // The parser's message could quote a value: name the file only.
        let file: Arc<SecretsFile> = Arc::new(serde_json::from_slice(&bytes).map_err(|_| {
            format!("{} is not valid JSON; fix it or remove it and fill the slots again", path.display())
        })?);
        let settled = meta.modified().is_ok_and(|changed| changed + SETTLED < now);
        *parsed = settled.then(|| (identity, Arc::clone(&file)));
        Ok(file)
    }

    fn write(&self, file: &SecretsFile) -> Result<(), String> {
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| format!("encoding {FILE_NAME}: {e}"))?;
        // A temp file created with mode 600, then renamed over the old one.
        write_atomic(&self.path(), &bytes).map_err(|e| format!("{e:#}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(slot: &'a str) -> SlotKey<'a> {
        SlotKey { namespace: "pets", connection: "default", slot }
    }

    #[test]
    fn a_change_made_elsewhere_is_read_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let ours = FileStore::new(&store);
        let theirs = FileStore::new(&store);
        ours.set(&key("token"), "first-value-0001").unwrap();
        assert_eq!(ours.get(&key("token")).unwrap().as_deref(), Some("first-value-0001"));
        // Another process (here, another store's cache) changes and removes values.
        theirs.set(&key("token"), "second-value-002").unwrap();
        assert_eq!(ours.get(&key("token")).unwrap().as_deref(), Some("second-value-002"));
        assert!(theirs.delete(&key("token")).unwrap());
        assert_eq!(ours.get(&key("token")).unwrap(), None);
        // A hand edit in place, the same length as before.
        theirs.set(&key("token"), "third-value-0003").unwrap();
        assert_eq!(ours.get(&key("token")).unwrap().as_deref(), Some("third-value-0003"));
        let text = fs::read_to_string(ours.path()).unwrap().replace("third-value-0003", "edited-value-004");
        fs::write(ours.path(), text).unwrap();
        assert_eq!(ours.get(&key("token")).unwrap().as_deref(), Some("edited-value-004"));
        // The same, once the kept parse is used.
        std::thread::sleep(SETTLED + std::time::Duration::from_millis(200));
        assert_eq!(ours.get(&key("token")).unwrap().as_deref(), Some("edited-value-004"));
        assert!(ours.parsed.lock().unwrap().is_some(), "a settled file's parse is kept");
        let text = fs::read_to_string(ours.path()).unwrap().replace("edited-value-004", "edited-again-005");
        fs::write(ours.path(), text).unwrap();
        assert_eq!(ours.get(&key("token")).unwrap().as_deref(), Some("edited-again-005"));
        fs::remove_file(ours.path()).unwrap();
        assert_eq!(ours.get(&key("token")).unwrap(), None);
    }
}
