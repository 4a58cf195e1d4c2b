//! The tenant's records in its Durable Object's SQLite storage: configuration (sources with
//! their manifests and connections, the policy), sealed credential values, and runs with their
//! journals (the core's `RunStore` port). A call's intent returns only after `storage.sync()`, so
//! it is on disk before the call goes out; its outcome is synced with the next intent or the
//! run's record, before anything that depends on it leaves (group commit). It also keeps
//! the nonces of spent approval states, one row per use, and the last pushes (`hub push`). The
//! text behind handles is in `blobs.rs`, the skill library in `skills.rs`.

use std::collections::{BTreeMap, BTreeSet};

use capabilities_core::policy::PolicyState;
use capabilities_core::ports::{BoxFuture, RunStore, StoreError};
use capabilities_core::record::{CallOutcome, JournalEntry, RunRecord};
use serde::Deserialize;
use worker::{SqlStorageValue, Storage};

use capabilities_core::profile::Profile;

use crate::push::{Current, Push};
use crate::records::{Load, SecretValues, Source};
use crate::seal::SealKey;

const SCHEMA: [&str; 13] = [
    "CREATE TABLE IF NOT EXISTS settings (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, \
     PRIMARY KEY (run_id, seq))",
    "CREATE TABLE IF NOT EXISTS sources (namespace TEXT PRIMARY KEY, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS policy (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS secrets (namespace TEXT NOT NULL, connection TEXT NOT NULL, slot TEXT NOT NULL, \
     sealed TEXT NOT NULL, PRIMARY KEY (namespace, connection, slot))",
    "CREATE TABLE IF NOT EXISTS nonces (run_id TEXT NOT NULL, nonce TEXT NOT NULL, PRIMARY KEY (run_id, nonce))",
    "CREATE TABLE IF NOT EXISTS pushes (id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT NOT NULL)",
    // Named profiles besides the built-in `default` (core's `profile::Profile` as JSON).
    "CREATE TABLE IF NOT EXISTS profiles (name TEXT PRIMARY KEY, record TEXT NOT NULL)",
    // The text behind handles, in parts (`blobs.rs`).
    "CREATE TABLE IF NOT EXISTS blobs (run_id TEXT NOT NULL, handle TEXT NOT NULL, part INTEGER NOT NULL, \
     start INTEGER NOT NULL, len INTEGER NOT NULL, total INTEGER NOT NULL, created_ms INTEGER NOT NULL, \
     data TEXT NOT NULL, PRIMARY KEY (run_id, handle, part))",
    // The skill library `hub push` sends (`skills.rs`): each skill's manifest, and its files'
    // bytes by sha256, in parts, with the files that arrived whole and matched.
    "CREATE TABLE IF NOT EXISTS skills (name TEXT PRIMARY KEY, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS skill_parts (sha256 TEXT NOT NULL, part INTEGER NOT NULL, data TEXT NOT NULL, \
     PRIMARY KEY (sha256, part))",
    "CREATE TABLE IF NOT EXISTS skill_files (sha256 TEXT PRIMARY KEY, size INTEGER NOT NULL)",
];

#[derive(Deserialize)]
pub(super) struct Record {
    pub(super) record: String,
}

#[derive(Deserialize)]
struct Entry {
    entry: String,
}

#[derive(Deserialize)]
struct Sealed {
    slot: String,
    sealed: String,
}

#[derive(Deserialize)]
struct Run {
    id: String,
    status: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Count {
    pub(super) n: i64,
}

#[derive(Deserialize)]
struct Slot {
    namespace: String,
    connection: String,
    slot: String,
}

/// The last call the tenant's runs made to one source, for `hub status`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LastCall {
    pub(crate) address: String,
    pub(crate) at_ms: u64,
    /// `ok`, the failure's code, or `no_outcome` for a call still in flight (or cut off).
    pub(crate) outcome: String,
}

/// How many journal lines `hub status` reads back, newest first, to find each source's last call.
const RECENT_JOURNAL: i64 = 2000;

/// The tenant's SQLite storage.
#[derive(Clone)]
pub(crate) struct SqlStore {
    storage: std::rc::Rc<Storage>,
}

fn io(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Io(what.to_owned(), err.to_string())
}

fn text(value: &str) -> SqlStorageValue {
    SqlStorageValue::from(value)
}

impl SqlStore {
    /// Opens the storage, creating the tables on first use.
    pub(crate) fn open(storage: Storage) -> Result<SqlStore, StoreError> {
        let sql = storage.sql();
        for statement in SCHEMA {
            sql.exec(statement, None).map_err(|e| io("schema", e))?;
        }
        Ok(SqlStore { storage: std::rc::Rc::new(storage) })
    }

    pub(super) fn rows<T: for<'de> Deserialize<'de>>(
        &self,
        what: &str,
        query: &str,
        bindings: Vec<SqlStorageValue>,
    ) -> Result<Vec<T>, StoreError> {
        self.storage.sql().exec(query, bindings).and_then(|c| c.to_array::<T>()).map_err(|e| io(what, e))
    }

    pub(super) fn exec(
        &self,
        what: &str,
        query: &str,
        bindings: Vec<SqlStorageValue>,
    ) -> Result<(), StoreError> {
        self.storage.sql().exec(query, bindings).map(drop).map_err(|e| io(what, e))
    }

    /// The sources and policy; records that do not parse are named in `problems`.
    pub(crate) fn config(&self) -> Result<(Vec<Source>, PolicyState, Vec<String>), StoreError> {
        let mut problems = Vec::new();
        let mut sources = Vec::new();
        for row in self.rows::<Record>("sources", "SELECT record FROM sources ORDER BY namespace", vec![])? {
            match serde_json::from_str::<Source>(&row.record) {
                Ok(source) => sources.push(source),
                Err(err) => problems.push(format!("a source record is corrupt ({err}); load the hub again")),
            }
        }
        let policy =
            match self.rows::<Record>("policy", "SELECT record FROM policy WHERE id = 1", vec![])?.pop() {
                None => PolicyState::default(),
                Some(row) => serde_json::from_str(&row.record).unwrap_or_else(|err| {
                    problems.push(format!(
                        "the policy record is corrupt ({err}); every tool asks until it is loaded again"
                    ));
                    PolicyState::default()
                }),
            };
        Ok((sources, policy, problems))
    }

    /// The profiles besides `default`, by name; records that do not parse are named in the
    /// second list (and not served).
    pub(crate) fn profiles(&self) -> Result<(Vec<Profile>, Vec<String>), StoreError> {
        let mut problems = Vec::new();
        let mut profiles = Vec::new();
        for row in self.rows::<Record>("profiles", "SELECT record FROM profiles ORDER BY name", vec![])? {
            match serde_json::from_str::<Profile>(&row.record) {
                Ok(profile) => profiles.push(profile),
                Err(err) => problems.push(format!("a profile record is corrupt ({err}); push the hub again")),
            }
        }
        Ok((profiles, problems))
    }

    /// Writes `profiles` in place of the stored ones.
    fn put_profiles_now(&self, profiles: &[Profile]) -> Result<(), StoreError> {
        self.exec("profiles", "DELETE FROM profiles", vec![])?;
        for profile in profiles {
            let record = serde_json::to_string(profile).map_err(|e| io("profiles", e))?;
            self.exec(
                "profiles",
                "INSERT INTO profiles (name, record) VALUES (?, ?)",
                vec![text(&profile.name), text(&record)],
            )?;
        }
        Ok(())
    }

    /// The tenant's lowered upstream timeout, if its load set one.
    pub(crate) fn upstream_timeout_ms(&self) -> Result<Option<u64>, StoreError> {
        let row = self.rows::<Record>("settings", "SELECT record FROM settings WHERE id = 1", vec![])?.pop();
        Ok(row
            .and_then(|r| serde_json::from_str::<serde_json::Value>(&r.record).ok())
            .and_then(|v| v["upstreamTimeoutMs"].as_u64()))
    }

    /// Replaces the whole configuration with `load` (already checked), sealing its secrets.
    /// Every statement runs in one synchronous stretch, so the object commits them together.
    pub(crate) fn replace(
        &self,
        load: &Load,
        key: &SealKey,
        tenant: &str,
        nonce: &mut dyn FnMut() -> [u8; 12],
    ) -> Result<(), StoreError> {
        for table in ["sources", "policy", "secrets", "settings"] {
            self.exec("load", &format!("DELETE FROM {table}"), vec![])?;
        }
        self.put_sources_now(&load.sources)?;
        let policy = serde_json::to_string(&load.policy).map_err(|e| io("load", e))?;
        self.exec("load", "INSERT INTO policy (id, record) VALUES (1, ?)", vec![text(&policy)])?;
        let settings = serde_json::json!({ "upstreamTimeoutMs": load.upstream_timeout_ms }).to_string();
        self.exec("load", "INSERT INTO settings (id, record) VALUES (1, ?)", vec![text(&settings)])?;
        self.put_sealed_now(&load.secrets, key, tenant, nonce)?;
        self.put_profiles_now(&load.profiles)
    }

    /// What a push is planned against: the sources, the policy and which slots hold values.
    pub(crate) fn current(&self) -> Result<Current, StoreError> {
        let (sources, _, _) = self.config()?;
        let policy = self.policy().unwrap_or_default();
        let filled = self
            .rows::<Slot>("secrets", "SELECT namespace, connection, slot FROM secrets", vec![])?
            .into_iter()
            .map(|s| (s.namespace, s.connection, s.slot))
            .collect();
        let (profiles, _) = self.profiles()?;
        let skills = self.skills()?;
        Ok(Current { sources, policy, filled, profiles, skills })
    }

    /// Applies a checked push: sources and policy replaced, the stored values in `kept` kept,
    /// the others dropped, the pushed values sealed in, and `record` kept as the last push. One
    /// synchronous stretch, so the object commits it whole.
    pub(crate) fn apply_push(
        &self,
        push: &Push,
        kept: &BTreeSet<(String, String, String)>,
        key: &SealKey,
        tenant: &str,
        nonce: &mut dyn FnMut() -> [u8; 12],
        record: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let filled = self.current()?.filled;
        for (namespace, connection, slot) in filled.difference(kept) {
            self.exec(
                "push",
                "DELETE FROM secrets WHERE namespace = ? AND connection = ? AND slot = ?",
                vec![text(namespace), text(connection), text(slot)],
            )?;
        }
        self.exec("push", "DELETE FROM sources", vec![])?;
        self.put_sources_now(&push.sources)?;
        self.put_policy_now(&push.policy)?;
        self.put_profiles_now(&push.profiles)?;
        self.put_skills_now(&push.skills)?;
        self.put_sealed_now(&push.secrets, key, tenant, nonce)?;
        self.exec("push", "INSERT INTO pushes (record) VALUES (?)", vec![text(&record.to_string())])?;
        self.exec(
            "push",
            "DELETE FROM pushes WHERE id NOT IN (SELECT id FROM pushes ORDER BY id DESC LIMIT 20)",
            vec![],
        )
    }

    /// Writes `sources` into the (emptied) sources table.
    fn put_sources_now(&self, sources: &[Source]) -> Result<(), StoreError> {
        for source in sources {
            let record = serde_json::to_string(source).map_err(|e| io("sources", e))?;
            self.exec(
                "sources",
                "INSERT INTO sources (namespace, record) VALUES (?, ?)",
                vec![text(&source.namespace), text(&record)],
            )?;
        }
        Ok(())
    }

    /// Seals each value of `secrets` to its tenant, namespace, connection and slot, replacing
    /// any value the slot had.
    fn put_sealed_now(
        &self,
        secrets: &[SecretValues],
        key: &SealKey,
        tenant: &str,
        nonce: &mut dyn FnMut() -> [u8; 12],
    ) -> Result<(), StoreError> {
        for secret in secrets {
            for (slot, value) in &secret.values {
                let label = seal_label(tenant, &secret.namespace, &secret.connection, slot);
                let sealed = key.seal(&label, nonce(), value.as_bytes());
                self.exec(
                    "secrets",
                    "INSERT INTO secrets (namespace, connection, slot, sealed) VALUES (?, ?, ?, ?) \
                     ON CONFLICT (namespace, connection, slot) DO UPDATE SET sealed = excluded.sealed",
                    vec![text(&secret.namespace), text(&secret.connection), text(slot), text(&sealed)],
                )?;
            }
        }
        Ok(())
    }

    /// The last push's record, if the tenant was ever pushed to.
    pub(crate) fn last_push(&self) -> Result<Option<serde_json::Value>, StoreError> {
        let row = self
            .rows::<Record>("pushes", "SELECT record FROM pushes ORDER BY id DESC LIMIT 1", vec![])?
            .pop();
        Ok(row.and_then(|r| serde_json::from_str(&r.record).ok()))
    }

    /// Each namespace's last call in the recent journal lines, with its outcome.
    pub(crate) fn last_calls(&self) -> Result<BTreeMap<String, LastCall>, StoreError> {
        #[derive(Deserialize)]
        struct Line {
            run_id: String,
            entry: String,
        }
        let rows = self.rows::<Line>(
            "journal",
            "SELECT run_id, entry FROM journal ORDER BY rowid DESC LIMIT ?",
            vec![SqlStorageValue::from(RECENT_JOURNAL)],
        )?;
        let mut outcomes: BTreeMap<(String, u32), String> = BTreeMap::new();
        let mut last: BTreeMap<String, LastCall> = BTreeMap::new();
        for row in rows {
            let Ok(entry) = serde_json::from_str::<JournalEntry>(&row.entry) else { continue };
            match entry {
                JournalEntry::Outcome { seq, outcome, .. } => {
                    let code = match outcome {
                        CallOutcome::Ok { .. } => "ok".to_owned(),
                        CallOutcome::Err { failure } => failure.code.clone(),
                    };
                    outcomes.insert((row.run_id, seq), code);
                }
                JournalEntry::Call { seq, address, at_ms, .. } => {
                    let Some((namespace, _)) = address.split_once('.') else { continue };
                    let outcome = outcomes
                        .get(&(row.run_id.clone(), seq))
                        .cloned()
                        .unwrap_or_else(|| "no_outcome".into());
                    let newer = last.get(namespace).is_none_or(|l| l.at_ms < at_ms);
                    if newer {
                        last.insert(
                            namespace.to_owned(),
                            LastCall { address: address.clone(), at_ms, outcome },
                        );
                    }
                }
            }
        }
        Ok(last)
    }

    /// Every run's id and status, newest first.
    pub(crate) fn runs(&self) -> Result<Vec<serde_json::Value>, StoreError> {
        let rows = self.rows::<Run>(
            "runs",
            "SELECT id, json_extract(record, '$.status') AS status, json_extract(record, '$.createdMs') AS created \
             FROM runs ORDER BY created DESC",
            vec![],
        )?;
        Ok(rows.into_iter().map(|r| serde_json::json!({ "runId": r.id, "status": r.status })).collect())
    }

    /// The sealed values of one connection, by slot.
    pub(crate) fn sealed(
        &self,
        namespace: &str,
        connection: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self.rows::<Sealed>(
            "secrets",
            "SELECT slot, sealed FROM secrets WHERE namespace = ? AND connection = ?",
            vec![text(namespace), text(connection)],
        )?;
        Ok(rows.into_iter().map(|r| (r.slot, r.sealed)).collect())
    }

    /// The sealed value of one slot, if it has one.
    pub(crate) fn sealed_slot(
        &self,
        namespace: &str,
        connection: &str,
        slot: &str,
    ) -> Result<Option<String>, StoreError> {
        let rows = self.rows::<Sealed>(
            "secrets",
            "SELECT slot, sealed FROM secrets WHERE namespace = ? AND connection = ? AND slot = ?",
            vec![text(namespace), text(connection), text(slot)],
        )?;
        Ok(rows.into_iter().next().map(|r| r.sealed))
    }

    /// Puts `sealed` in place of one slot's value, but only while that value is still `old`
    /// (what the caller read before it awaited); `false`, writing nothing, when it is not (a
    /// load replaced it meanwhile). Read and write run in one synchronous stretch, so nothing
    /// interleaves; [`SqlStore::sync`] makes it durable.
    pub(crate) fn replace_sealed_now(
        &self,
        namespace: &str,
        connection: &str,
        slot: &str,
        old: &str,
        sealed: &str,
    ) -> Result<bool, StoreError> {
        if self.sealed_slot(namespace, connection, slot)?.as_deref() != Some(old) {
            return Ok(false);
        }
        self.exec(
            "secrets",
            "UPDATE secrets SET sealed = ? WHERE namespace = ? AND connection = ? AND slot = ?",
            vec![text(sealed), text(namespace), text(connection), text(slot)],
        )?;
        Ok(true)
    }

    /// Run `id`, read now (no await: the caller's checks and writes stay in one stretch).
    pub(crate) fn run_now(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let what = format!("runs/{id}");
        let Some(row) =
            self.rows::<Record>(&what, "SELECT record FROM runs WHERE id = ?", vec![text(id)])?.pop()
        else {
            return Ok(None);
        };
        serde_json::from_str(&row.record).map(Some).map_err(|e| StoreError::Corrupt(what, e.to_string()))
    }

    /// Writes `run` now; [`SqlStore::sync`] makes it durable.
    pub(crate) fn put_run_now(&self, run: &RunRecord) -> Result<(), StoreError> {
        let what = format!("runs/{}", run.id);
        let record = serde_json::to_string(run).map_err(|e| io(&what, e))?;
        self.exec(
            &what,
            "INSERT INTO runs (id, record) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET record = excluded.record",
            vec![text(&run.id), text(&record)],
        )
    }

    /// The runs waiting for input, newest first.
    pub(crate) fn waiting_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let rows = self.rows::<Record>(
            "runs",
            "SELECT record FROM runs WHERE json_extract(record, '$.status') = 'awaiting_input' \
             ORDER BY json_extract(record, '$.createdMs') DESC",
            vec![],
        )?;
        rows.iter()
            .map(|r| {
                serde_json::from_str(&r.record)
                    .map_err(|e| StoreError::Corrupt("runs".to_owned(), e.to_string()))
            })
            .collect()
    }

    /// Marks `nonce` of run `run_id` spent; `false` when it already was.
    pub(crate) fn spend_nonce(&self, run_id: &str, nonce: &str) -> Result<bool, StoreError> {
        let what = format!("nonces/{run_id}");
        let seen = self
            .rows::<Count>(
                &what,
                "SELECT COUNT(*) AS n FROM nonces WHERE run_id = ? AND nonce = ?",
                vec![text(run_id), text(nonce)],
            )?
            .pop()
            .map_or(0, |c| c.n);
        if seen > 0 {
            return Ok(false);
        }
        self.exec(
            &what,
            "INSERT INTO nonces (run_id, nonce) VALUES (?, ?)",
            vec![text(run_id), text(nonce)],
        )?;
        Ok(true)
    }

    /// The stored policy (the default when none was loaded).
    pub(crate) fn policy(&self) -> Result<PolicyState, StoreError> {
        match self.rows::<Record>("policy", "SELECT record FROM policy WHERE id = 1", vec![])?.pop() {
            None => Ok(PolicyState::default()),
            Some(row) => serde_json::from_str(&row.record)
                .map_err(|e| StoreError::Corrupt("policy".to_owned(), e.to_string())),
        }
    }

    /// Replaces the stored policy now; [`SqlStore::sync`] makes it durable.
    pub(crate) fn put_policy_now(&self, policy: &PolicyState) -> Result<(), StoreError> {
        let record = serde_json::to_string(policy).map_err(|e| io("policy", e))?;
        self.exec(
            "policy",
            "INSERT INTO policy (id, record) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET record = excluded.record",
            vec![text(&record)],
        )
    }

    pub(crate) async fn sync(&self, what: &str) -> Result<(), StoreError> {
        self.storage.sync().await.map_err(|e| io(what, e))
    }
}

/// What a sealed value is bound to: tenant, namespace, connection and slot.
pub(crate) fn seal_label(tenant: &str, namespace: &str, connection: &str, slot: &str) -> String {
    format!("{tenant}/{namespace}/{connection}/{slot}")
}

impl SqlStore {
    /// Adds `entry` as the run's next journal row; what it wrote, for errors.
    fn insert_journal(&self, id: &str, entry: &JournalEntry) -> Result<String, StoreError> {
        let what = format!("journal/{id}");
        let line = serde_json::to_string(entry).map_err(|e| io(&what, e))?;
        let next = self
            .rows::<Count>(&what, "SELECT COUNT(*) AS n FROM journal WHERE run_id = ?", vec![text(id)])?
            .pop()
            .map_or(0, |c| c.n);
        self.exec(
            &what,
            "INSERT INTO journal (run_id, seq, entry) VALUES (?, ?, ?)",
            vec![text(id), SqlStorageValue::from(next), text(&line)],
        )?;
        Ok(what)
    }
}

impl RunStore for SqlStore {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.put_run_now(run)?;
            self.sync(&format!("runs/{}", run.id)).await
        })
    }

    fn load_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>> {
        Box::pin(async move { self.run_now(id) })
    }

    fn append_journal<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let what = self.insert_journal(id, entry)?;
            // Durable with every write before it, deferred outcome lines included.
            self.sync(&what).await
        })
    }

    fn append_journal_deferred<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        // Written now, made durable by the run's next `storage.sync()`: the next call's intent
        // or the run's record, before anything that depends on it leaves.
        Box::pin(async move { self.insert_journal(id, entry).map(|_| ()) })
    }

    fn read_journal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<JournalEntry>, StoreError>> {
        Box::pin(async move {
            let what = format!("journal/{id}");
            let rows = self.rows::<Entry>(
                &what,
                "SELECT entry FROM journal WHERE run_id = ? ORDER BY seq",
                vec![text(id)],
            )?;
            rows.iter()
                .map(|r| {
                    serde_json::from_str(&r.entry)
                        .map_err(|e| StoreError::Corrupt(what.clone(), e.to_string()))
                })
                .collect()
        })
    }
}
