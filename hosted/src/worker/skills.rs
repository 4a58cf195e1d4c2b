//! The tenant's skill library in its Durable Object's SQLite: each pushed skill's manifest
//! (`skills`), the files' bytes in parts of at most 1 MiB (`skill_parts`, base64 text: a row
//! holds at most 2 MB) and which files arrived whole and matched their sha256
//! (`skill_files`). Files are addressed by their sha256, which this side computes: a part
//! whose file does not hash to what it claims is dropped and refused, so a stored file is
//! always the bytes its digest names. A push is applied only when every file of its skills is
//! here; applying drops the parts no skill names any more.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use capabilities_core::ports::StoreError;
use capabilities_core::surface::skills::SkillDoc;
use worker::SqlStorageValue;

use super::store::{Count, Record, SqlStore};
use crate::skills::{self, Part, PushedSkill};

/// What the staged parts may hold at most, base64 included: twice the largest library.
const MAX_STAGED: u64 = 2 * skills::MAX_LIBRARY_BYTES * 4 / 3;

fn text(value: &str) -> SqlStorageValue {
    SqlStorageValue::from(value)
}

fn int(n: u64) -> SqlStorageValue {
    SqlStorageValue::from(i64::try_from(n).unwrap_or(i64::MAX))
}

fn io(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Io(what.to_owned(), err.to_string())
}

impl SqlStore {
    /// The skills pushed, by name; a record that does not parse is left out with a warning.
    pub(crate) fn skills(&self) -> Result<Vec<PushedSkill>, StoreError> {
        let rows = self.rows::<Record>("skills", "SELECT record FROM skills ORDER BY name", vec![])?;
        Ok(rows
            .into_iter()
            .filter_map(|row| match serde_json::from_str(&row.record) {
                Ok(skill) => Some(skill),
                Err(err) => {
                    worker::console_warn!("a skill record is corrupt ({err}); push the hub again");
                    None
                }
            })
            .collect())
    }

    /// Writes `library` in place of the stored skills and drops the files none of them names.
    pub(super) fn put_skills_now(&self, library: &[PushedSkill]) -> Result<(), StoreError> {
        self.exec("skills", "DELETE FROM skills", vec![])?;
        for skill in library {
            let record = serde_json::to_string(skill).map_err(|e| io("skills", e))?;
            self.exec(
                "skills",
                "INSERT INTO skills (name, record) VALUES (?, ?)",
                vec![text(&skill.name), text(&record)],
            )?;
        }
        let named: BTreeSet<&str> =
            library.iter().flat_map(|s| &s.files).map(|f| f.sha256.as_str()).collect();
        for sha in self.stored_files()?.difference(&named.iter().map(|s| (*s).to_owned()).collect()) {
            self.drop_file(sha)?;
        }
        Ok(())
    }

    fn stored_files(&self) -> Result<BTreeSet<String>, StoreError> {
        let mut all: BTreeSet<String> = BTreeSet::new();
        for query in
            ["SELECT sha256 AS record FROM skill_files", "SELECT DISTINCT sha256 AS record FROM skill_parts"]
        {
            all.extend(self.rows::<Record>("skill files", query, vec![])?.into_iter().map(|r| r.record));
        }
        Ok(all)
    }

    fn drop_file(&self, sha: &str) -> Result<(), StoreError> {
        self.exec("skill files", "DELETE FROM skill_parts WHERE sha256 = ?", vec![text(sha)])?;
        self.exec("skill files", "DELETE FROM skill_files WHERE sha256 = ?", vec![text(sha)])
    }

    /// The files of `library` whose bytes are not here yet (sha256s, each once).
    pub(crate) fn missing_files(&self, library: &[PushedSkill]) -> Result<Vec<String>, StoreError> {
        let mut missing = BTreeSet::new();
        for file in library.iter().flat_map(|s| &s.files) {
            let here = self.rows::<Count>(
                "skill files",
                "SELECT COUNT(*) AS n FROM skill_files WHERE sha256 = ? AND size = ?",
                vec![text(&file.sha256), int(file.size)],
            )?;
            if here.first().is_none_or(|c| c.n == 0) {
                missing.insert(file.sha256.clone());
            }
        }
        Ok(missing.into_iter().collect())
    }

    /// Stores the parts of one upload. Each part is checked against its file's size; a file
    /// whose last part arrives is hashed, and kept only when it matches its sha256 (else its
    /// parts are dropped and the upload refused). Says how many files are now whole.
    pub(crate) fn put_parts(&self, parts: &[Part]) -> Result<Result<usize, String>, StoreError> {
        let mut decoded = Vec::with_capacity(parts.len());
        let mut bytes = 0;
        for part in parts {
            match skills::part_bytes(part) {
                Ok(data) => {
                    bytes += data.len();
                    decoded.push((part, data));
                }
                Err(why) => return Ok(Err(format!("{why}; nothing was stored"))),
            }
        }
        if bytes > skills::MAX_UPLOAD_BYTES {
            return Ok(Err(format!(
                "one upload carries at most {} bytes of parts; send fewer at a time",
                skills::MAX_UPLOAD_BYTES
            )));
        }
        let staged = self.rows::<Count>(
            "skill parts",
            "SELECT COALESCE(SUM(LENGTH(data)), 0) AS n FROM skill_parts",
            vec![],
        )?;
        if staged.first().map_or(0, |c| u64::try_from(c.n).unwrap_or(0)) + bytes as u64 > MAX_STAGED {
            return Ok(Err(
                "the hub holds too many skill files not yet pushed; push again to clear them".to_owned()
            ));
        }
        let mut touched = BTreeSet::new();
        for (part, data) in &decoded {
            self.exec(
                "skill parts",
                "INSERT INTO skill_parts (sha256, part, data) VALUES (?, ?, ?) \
                 ON CONFLICT (sha256, part) DO UPDATE SET data = excluded.data",
                vec![text(&part.sha256), int(part.index), text(&BASE64.encode(data))],
            )?;
            touched.insert((part.sha256.as_str(), part.size));
        }
        let mut whole = 0;
        for (sha, size) in touched {
            let count = skills::part_count(size);
            let here = self.rows::<Count>(
                "skill parts",
                "SELECT COUNT(*) AS n FROM skill_parts WHERE sha256 = ? AND part < ?",
                vec![text(sha), int(count)],
            )?;
            if here.first().map_or(0, |c| c.n) < i64::try_from(count).unwrap_or(i64::MAX) {
                continue;
            }
            let bytes = self.file_bytes(sha)?;
            if bytes.len() as u64 != size || !skills::matches(sha, &bytes) {
                self.drop_file(sha)?;
                return Ok(Err(format!(
                    "the bytes sent for skill file {sha} do not match that sha256 (or its size); nothing of it was \
                     stored"
                )));
            }
            self.exec(
                "skill files",
                "INSERT INTO skill_files (sha256, size) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING",
                vec![text(sha), int(size)],
            )?;
            whole += 1;
        }
        Ok(Ok(whole))
    }

    /// The bytes of a stored file, its parts joined in order.
    pub(crate) fn file_bytes(&self, sha: &str) -> Result<Vec<u8>, StoreError> {
        let rows = self.rows::<Record>(
            "skill parts",
            "SELECT data AS record FROM skill_parts WHERE sha256 = ? ORDER BY part",
            vec![text(sha)],
        )?;
        let mut bytes = Vec::new();
        for row in rows {
            bytes.extend(BASE64.decode(row.record).map_err(|e| io("skill parts", e))?);
        }
        Ok(bytes)
    }

    /// The library as `search` and `describe` show it: each skill whose `SKILL.md` is here
    /// and UTF-8, with its files and their sizes.
    pub(crate) fn skill_docs(&self, library: &[PushedSkill]) -> Vec<SkillDoc> {
        library
            .iter()
            .filter_map(|skill| {
                let entry = skill.files.iter().find(|f| f.path == skills::SKILL_MD)?;
                let skill_md = String::from_utf8(self.file_bytes(&entry.sha256).ok()?).ok()?;
                let mut files: Vec<(String, u64)> =
                    skill.files.iter().map(|f| (f.path.clone(), f.size)).collect();
                files.sort();
                Some(SkillDoc::new(skill.name.clone(), skill.description.clone(), skill_md, files))
            })
            .collect()
    }
}

/// Where `hub.skill` inside code reads the pushed skills' files: the stored bytes of the file
/// the surface already checked is one of that skill's, checked again against its sha256.
pub(super) struct StoredSkillFiles {
    pub(super) store: SqlStore,
    pub(super) skills: std::rc::Rc<Vec<PushedSkill>>,
}

impl std::fmt::Debug for StoredSkillFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSkillFiles").field("skills", &self.skills.len()).finish()
    }
}

impl capabilities_core::ports::SkillFiles for StoredSkillFiles {
    fn read<'a>(
        &'a self,
        skill: &'a str,
        path: &'a str,
    ) -> capabilities_core::ports::BoxFuture<'a, Result<Vec<u8>, StoreError>> {
        Box::pin(async move {
            let what = format!("skills/{skill}/{path}");
            let file = self
                .skills
                .iter()
                .find(|s| s.name == skill)
                .and_then(|s| s.files.iter().find(|f| f.path == path))
                .ok_or_else(|| io(&what, "not in the pushed library"))?;
            let bytes = self.file_bytes(&file.sha256)?;
            match skills::matches(&file.sha256, &bytes) {
                true => Ok(bytes),
                false => Err(io(&what, "damaged in storage; push the hub again")),
            }
        })
    }
}

impl StoredSkillFiles {
    fn file_bytes(&self, sha: &str) -> Result<Vec<u8>, StoreError> {
        self.store.file_bytes(sha)
    }
}
