//! The fallback store when no keychain is reachable: `secrets.json` in the hub's home, mode 600,
//! values by namespace, connection and slot. Every change rewrites the whole file atomically
//! under the record lock.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::SlotKey;
use crate::store::{Store, write_atomic};

/// The file's name under the hub's home.
pub const FILE_NAME: &str = "secrets.json";

#[derive(Debug, Clone)]
pub(super) struct FileStore {
    store: Store,
}

/// Namespace → connection → slot → value.
type Values = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

#[derive(Debug, Default, Serialize, Deserialize)]
struct SecretsFile {
    #[serde(default)]
    values: Values,
}

impl FileStore {
    pub(super) fn new(store: &Store) -> FileStore {
        FileStore { store: store.clone() }
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
        let mut file = self.read()?;
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
        let mut file = self.read()?;
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

    fn read(&self) -> Result<SecretsFile, String> {
        let path = self.path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(SecretsFile::default()),
            Err(err) => return Err(format!("reading {}: {err}", path.display())),
        };
        // Someone loosened the file's mode: close it again before anything else.
        if let Ok(meta) = fs::metadata(&path) {
            if meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                    .map_err(|e| format!("setting mode 600 on {}: {e}", path.display()))?;
            }
        }
        // The parser's message could quote a value: name the file only.
        serde_json::from_slice(&bytes).map_err(|_| {
            format!("{} is not valid JSON; fix it or remove it and fill the slots again", path.display())
        })
    }

    fn write(&self, file: &SecretsFile) -> Result<(), String> {
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| format!("encoding {FILE_NAME}: {e}"))?;
        // A temp file created with mode 600, then renamed over the old one.
        write_atomic(&self.path(), &bytes).map_err(|e| format!("{e:#}"))
    }
}
