//! Credential values of connections. Connection records name the slots; the values live in the
//! OS keychain under the service `capabilities.sh`, one item per slot, its account
//! `<namespace>/<connection>/<slot>`. Namespaces and connection names never hold a `/`, so the
//! account names one slot only.
//!
//! Without a reachable keychain (no D-Bus session, no Secret Service) the values go to
//! `secrets.json` in the hub's home, mode 600, and every use says so on stderr.
//! `CAPABILITIES_KEYCHAIN` chooses: `auto` (the default), `keychain` (fail without one) or
//! `file` (always the file, for tests and CI).
//!
//! [`LocalSecrets`] is the local hub's `Secrets` port: it reads values only when the engine asks,
//! right before an upstream request.

mod file;
mod keychain;
mod oauth;
mod prompt;
mod stamp;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use capabilities_core::address::Namespace;
use capabilities_core::oauth::{OAuthClient, TokenSet};
use capabilities_core::ports::{BoxFuture, Credentials, Secrets, SecretsError};
use capabilities_core::scrub::MIN_SECRET_BYTES;

pub use file::FILE_NAME;
pub use prompt::read_hidden;

use crate::config::{ConnectionsRecord, HubConfig};
use crate::store::Store;

/// The keychain service every item is stored under.
pub const SERVICE: &str = "capabilities.sh";

/// The environment variable that chooses the store: `auto`, `keychain` or `file`.
pub const KEYCHAIN_ENV: &str = "CAPABILITIES_KEYCHAIN";

/// Longest connection name.
pub const MAX_CONNECTION_LEN: usize = 64;

/// One slot of one connection of one source.
#[derive(Debug, Clone, Copy)]
pub struct SlotKey<'a> {
    pub namespace: &'a str,
    pub connection: &'a str,
    pub slot: &'a str,
}

impl SlotKey<'_> {
    /// The keychain account of this slot.
    pub fn account(&self) -> String {
        format!("{}/{}/{}", self.namespace, self.connection, self.slot)
    }
}

/// Checks a connection name: lowercase letters, digits, `_` and `-`, starting with a letter.
pub fn check_connection_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_CONNECTION_LEN
        && name.as_bytes()[0].is_ascii_lowercase()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a connection name: use up to {MAX_CONNECTION_LEN} lowercase letters, digits, \
             `_` or `-`, starting with a letter"
        ))
    }
}

/// Checks a value before it is stored. Shorter values could not be scrubbed from output
/// without blanking ordinary words, so they are refused.
pub fn check_value(slot: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("the value for `{slot}` is empty"));
    }
    if value.len() < MIN_SECRET_BYTES {
        return Err(format!(
            "the value for `{slot}` is shorter than {MIN_SECRET_BYTES} bytes, too short to scrub from \
             output; check that it is the whole credential"
        ));
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(format!("the value for `{slot}` holds a line break or NUL byte"));
    }
    Ok(())
}

/// Where values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Keychain,
    File,
}

/// Says where secrets go once per process: a server opens the store for every run, and its
/// log would otherwise carry the same line for each.
fn warn_once(line: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| eprintln!("{line}"));
}

/// An open secret store: the keychain, or the fallback file.
#[derive(Debug)]
pub struct SecretStore {
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    /// The keychain, and the stamp its writes change (see [`stamp`]).
    Keychain(PathBuf),
    File(file::FileStore),
}

impl SecretStore {
    /// Opens the store `CAPABILITIES_KEYCHAIN` chooses. Using the file prints a warning.
    pub fn open(store: &Store) -> Result<SecretStore, SecretsError> {
        let choice = std::env::var(KEYCHAIN_ENV).unwrap_or_default();
        let backend = match choice.trim() {
            "" | "auto" => match keychain::available() {
                Ok(()) => Backend::Keychain(stamp::path(store)),
                Err(_) => {
                    let file = file::FileStore::new(store);
                    warn_once(&format!(
                        "warning: no OS keychain is reachable, so secrets are kept in {} (mode 600); \
                         to keep them in a keychain, run a Secret Service such as gnome-keyring in \
                         your D-Bus session",
                        file.path().display()
                    ));
                    Backend::File(file)
                }
            },
            "keychain" => {
                keychain::available().map_err(|why| {
                    SecretsError::Unavailable(format!(
                        "{KEYCHAIN_ENV}=keychain but no OS keychain is reachable ({why}); start a \
                         Secret Service such as gnome-keyring, or unset {KEYCHAIN_ENV}"
                    ))
                })?;
                Backend::Keychain(stamp::path(store))
            }
            "file" => {
                let file = file::FileStore::new(store);
                warn_once(&format!(
                    "warning: {KEYCHAIN_ENV}=file, so secrets are kept in {} (mode 600) instead of a \
                     keychain; unset {KEYCHAIN_ENV} to use the OS keychain",
                    file.path().display()
                ));
                Backend::File(file)
            }
            other => {
                return Err(SecretsError::Unavailable(format!(
                    "{KEYCHAIN_ENV} is `{other}`; set it to `auto`, `keychain` or `file`"
                )));
            }
        };
        Ok(SecretStore { backend })
    }

    pub fn kind(&self) -> StoreKind {
        match self.backend {
            Backend::Keychain(_) => StoreKind::Keychain,
            Backend::File(_) => StoreKind::File,
        }
    }

    /// Where values go, in words.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Keychain(_) => format!("the OS keychain (service `{SERVICE}`)"),
            Backend::File(file) => file.path().display().to_string(),
        }
    }

    /// The value of one slot, `None` when it is not filled.
    pub fn get(&self, key: &SlotKey<'_>) -> Result<Option<String>, SecretsError> {
        match &self.backend {
            Backend::Keychain(_) => keychain::get(&key.account()),
            Backend::File(file) => file.get(key),
        }
        .map_err(|why| unavailable(key, why))
    }

    pub fn set(&self, key: &SlotKey<'_>, value: &str) -> Result<(), SecretsError> {
        match &self.backend {
            Backend::Keychain(stamp) => {
                keychain::set(&key.account(), value).inspect(|()| stamp::change(stamp))
            }
            Backend::File(file) => file.set(key, value),
        }
        .map_err(|why| unavailable(key, why))
    }

    /// Deletes one slot's value; whether there was one.
    pub fn delete(&self, key: &SlotKey<'_>) -> Result<bool, SecretsError> {
        match &self.backend {
            Backend::Keychain(stamp) => keychain::delete(&key.account()).inspect(|_| stamp::change(stamp)),
            Backend::File(file) => file.delete(key),
        }
        .map_err(|why| unavailable(key, why))
    }

    /// Deletes the values of every slot of every connection in `record`; how many there were.
    pub fn forget_source(&self, namespace: &str, record: &ConnectionsRecord) -> Result<usize, SecretsError> {
        let mut deleted = 0;
        for connection in &record.connections {
            for slot in &connection.slots {
                let key = SlotKey { namespace, connection: &connection.name, slot };
                deleted += usize::from(self.delete(&key)?);
            }
            if connection.oauth.is_some() {
                let key =
                    SlotKey { namespace, connection: &connection.name, slot: crate::oauth::tokens::SLOT };
                deleted += usize::from(self.delete(&key)?);
            }
        }
        Ok(deleted)
    }
}

fn unavailable(key: &SlotKey<'_>, why: String) -> SecretsError {
    SecretsError::Unavailable(format!("slot `{}` of `{}/{}`: {why}", key.slot, key.namespace, key.connection))
}

/// What a serving hub read from the keychain, by what it asked for, each with the keychain's
/// stamp as it was before the read.
type Known<K, V> = Arc<Mutex<HashMap<K, (String, V)>>>;

/// The local hub's `Secrets` port. The store opens on the first slot a run needs, so runs that
/// call no source with credentials never touch the keychain.
pub struct LocalSecrets {
    sources: Arc<Vec<(String, ConnectionsRecord)>>,
    store: Store,
    /// Kept once it opens: a store that would not open (no keychain yet) is tried again by
    /// the next lookup.
    opened: Arc<OnceLock<SecretStore>>,
    /// Values read from the keychain, by namespace and connection asked for, with the stamp
    /// read before them: a keychain lookup is a D-Bus round trip to another process (about
    /// 1.4 ms, more than a whole call to an API on loopback), so a value is read again only
    /// once a write to the keychain has changed the stamp.
    known: Known<(String, Option<String>), Credentials>,
    /// The same for OAuth connections' tokens, by namespace and connection.
    known_tokens: Known<(String, String), TokenSet>,
}

impl LocalSecrets {
    pub fn new(config: &HubConfig, store: &Store) -> LocalSecrets {
        let sources = config
            .sources
            .iter()
            .map(|(source, _, connections)| (source.spec.namespace.clone(), connections.clone()));
        LocalSecrets {
            sources: Arc::new(sources.collect()),
            store: store.clone(),
            opened: Arc::default(),
            known: Arc::default(),
            known_tokens: Arc::default(),
        }
    }

    /// Whether finding `connection`'s values reads the secret store; without slots to fill, a
    /// lookup is a search of the records in memory.
    fn reads_store(&self, namespace: &str, connection: Option<&str>) -> bool {
        self.sources
            .iter()
            .find(|(ns, _)| ns == namespace)
            .and_then(|(_, record)| {
                let name = connection.or(record.default.as_deref())?;
                record.connections.iter().find(|c| c.name == name)
            })
            .is_some_and(|c| !c.slots.is_empty())
    }

    /// The values of `connection`'s slots, reading the store (blocking).
    fn lookup(&self, namespace: &str, connection: Option<&str>) -> Result<Credentials, SecretsError> {
        let Some((_, record)) = self.sources.iter().find(|(ns, _)| ns == namespace) else {
            return Ok(Credentials::default());
        };
        let Some(name) = connection.or(record.default.as_deref()) else {
            return Ok(Credentials::default());
        };
        let Some(connection) = record.connections.iter().find(|c| c.name == name) else {
            return Err(SecretsError::UnknownConnection {
                namespace: namespace.to_owned(),
                connection: name.to_owned(),
                known: record.connections.iter().map(|c| c.name.clone()).collect(),
            });
        };
        let mut credentials = Credentials { connection: Some(name.to_owned()), values: Vec::new() };
        if connection.slots.is_empty() {
            return Ok(credentials);
        }
        let store = self.store()?;
        let mut missing = Vec::new();
        for slot in &connection.slots {
            match store.get(&SlotKey { namespace, connection: name, slot })? {
                Some(value) => {
                    // A value edited in by hand could be too short to scrub: never send it.
                    check_value(slot, &value).map_err(|why| {
                        SecretsError::Unavailable(format!(
                            "{why}; fill it again with `capabilities hub auth {namespace} --connection {name}`"
                        ))
                    })?;
                    credentials.values.push((slot.clone(), value));
                }
                None => missing.push(slot.clone()),
            }
        }
        if !missing.is_empty() {
            return Err(SecretsError::Missing {
                namespace: namespace.to_owned(),
                connection: name.to_owned(),
                slots: missing,
            });
        }
        Ok(credentials)
    }

    /// The OAuth client of `connection` (or the default), when it is an OAuth connection.
    fn oauth_client(&self, namespace: &str, connection: Option<&str>) -> Option<(String, OAuthClient)> {
        let (_, record) = self.sources.iter().find(|(ns, _)| ns == namespace)?;
        let name = connection.or(record.default.as_deref())?;
        let found = record.connections.iter().find(|c| c.name == name)?;
        Some((found.name.clone(), found.oauth.clone()?))
    }

    /// Whether the store has opened and is the file: a read that never waits on another
    /// process. Until the store has opened once, a lookup takes the blocking path.
    fn reads_file(&self) -> bool {
        self.opened.get().is_some_and(|store| store.kind() == StoreKind::File)
    }

    /// The keychain's stamp ([`stamp`]) when the store has opened and is the keychain.
    fn keychain_stamp(&self) -> Option<String> {
        let keychain = self.opened.get().is_some_and(|store| store.kind() == StoreKind::Keychain);
        keychain.then(|| stamp::read(&stamp::path(&self.store))).flatten()
    }

    /// What `read` finds under `key`, read off the run's thread, or kept in `known` from an
    /// earlier read when the keychain's stamp is still the one read before it.
    async fn kept<K, V>(
        &self,
        known: &Mutex<HashMap<K, (String, V)>>,
        key: K,
        read: impl FnOnce(&LocalSecrets, &K) -> Result<V, SecretsError> + Send + 'static,
    ) -> Result<V, SecretsError>
    where
        K: Eq + std::hash::Hash + Clone + Send + 'static,
        V: Clone + Send + 'static,
    {
        // Read before the value, so a write that lands in between changes it again.
        let stamp = self.keychain_stamp();
        if let Some(stamp) = &stamp
            && let Some((seen, value)) = known.lock().unwrap_or_else(PoisonError::into_inner).get(&key)
            && seen == stamp
        {
            return Ok(value.clone());
        }
        let asked = key.clone();
        let value = self.blocking(move |this| read(this, &asked)).await?;
        if let Some(stamp) = stamp {
            known.lock().unwrap_or_else(PoisonError::into_inner).insert(key, (stamp, value.clone()));
        }
        Ok(value)
    }

    /// The secret store, opened on first use (blocking).
    fn store(&self) -> Result<&SecretStore, SecretsError> {
        if let Some(store) = self.opened.get() {
            return Ok(store);
        }
        let store = SecretStore::open(&self.store)?;
        Ok(self.opened.get_or_init(|| store))
    }

    /// Runs `work` off the run's thread when a runtime is there: keychain calls and lock files
    /// block.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&LocalSecrets) -> Result<T, SecretsError> + Send + 'static,
    ) -> Result<T, SecretsError> {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let this = self.share();
                handle.spawn_blocking(move || work(&this)).await.map_err(|e| {
                    SecretsError::Unavailable(format!("reading the secret store stopped: {e}"))
                })?
            }
            Err(_) => work(self),
        }
    }

    fn share(&self) -> LocalSecrets {
        LocalSecrets {
            sources: self.sources.clone(),
            store: self.store.clone(),
            opened: self.opened.clone(),
            known: self.known.clone(),
            known_tokens: self.known_tokens.clone(),
        }
    }
}

impl Secrets for LocalSecrets {
    fn resolve<'a>(
        &'a self,
        namespace: &'a Namespace,
        connection: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Credentials, SecretsError>> {
        let namespace = namespace.to_string();
        let connection = connection.map(str::to_owned);
        Box::pin(async move {
            if let Some((name, client)) = self.oauth_client(&namespace, connection.as_deref()) {
                return self.oauth_credentials(&namespace, &name, &client, None).await;
            }
            if !self.reads_store(&namespace, connection.as_deref()) {
                return self.lookup(&namespace, connection.as_deref());
            }
            // Keychain calls block (D-Bus round trips): keep them off the run's thread. The
            // file is read in place: a hop to another thread and back would cost more.
            if self.reads_file() {
                return self.lookup(&namespace, connection.as_deref());
            }
            self.kept(&self.known, (namespace, connection), |this, (namespace, connection)| {
                this.lookup(namespace, connection.as_deref())
            })
            .await
        })
    }

    fn rejected<'a>(
        &'a self,
        namespace: &'a Namespace,
        rejected: &'a Credentials,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Credentials>, SecretsError>> {
        Box::pin(async move {
            let Some((name, client)) = self.oauth_client(namespace.as_str(), rejected.connection.as_deref())
            else {
                return Ok(None);
            };
            // A token that lacks a scope is not cured by a refresh: a person signs in for more.
            let wanted = challenge.map(TokenSet::challenge_scopes).unwrap_or_default();
            if !wanted.is_empty() {
                self.note_wanted_scopes(namespace.as_str(), &name, wanted).await?;
                return Ok(None);
            }
            let token =
                rejected.values.iter().find(|(slot, _)| slot == oauth_slot()).map(|(_, v)| v.as_str());
            self.oauth_credentials(namespace.as_str(), &name, &client, token).await.map(Some)
        })
    }
}

fn oauth_slot() -> &'static str {
    crate::oauth::tokens::SLOT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_name_one_slot() {
        let key = SlotKey { namespace: "github", connection: "work", slot: "Authorization" };
        assert_eq!(key.account(), "github/work/Authorization");
    }

    #[test]
    fn connection_names_and_values_are_checked() {
        assert!(check_connection_name("work-2").is_ok());
        for bad in ["", "Work", "a/b", "2nd", &"x".repeat(65)] {
            assert!(check_connection_name(bad).is_err(), "{bad}");
        }
        assert!(check_value("T", "abcd").is_ok());
        for bad in ["", "abc", "ab\ncd"] {
            assert!(check_value("T", bad).is_err(), "{bad:?}");
        }
    }
}
