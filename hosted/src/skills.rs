//! The hub's skill library as `hub push` carries it and the hosted hub serves it. Plain Rust:
//! the local binary builds [`PushedSkill`]s from its store (`skills/<name>/`, `skills.lock.json`)
//! and checks them before sending; the Worker checks them again, stores them and answers the
//! MCP Skills extension (`io.modelcontextprotocol/skills`) from them.
//!
//! A push carries each skill's manifest — name, the lock's digest and description, the front
//! matter as the local hub's catalog reads it, and every file's path, sha256 and size — in the
//! plan and its hash; the bytes go separately in parts ([`Part`], `POST /hub/push/files`), each
//! file addressed by its sha256, which the Worker computes itself, so stored bytes always match
//! their digest. The answers are built here the way rmcp's `SkillCatalog` builds them on the
//! local hub (URIs `skill://<name>/<path>` percent-encoded alike, files sorted by URI, hidden
//! entries left out, text or base64 by the same MIME types; `resultType` only on the stateless
//! revision, where `rpc` adds it to every result), so both hubs answer alike for the same
//! library; `hosted/tests/it/skills.rs` compares them. One difference is known: a folder with
//! its own `SKILL.md` inside a skill is listed locally as a skill of its own, and here only as
//! files of the skill around it.
//!
//! Skills are text for the model: serving one grants nothing.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The most files one skill may hold (the extension's limit).
pub const MAX_FILES: usize = 512;
/// The most bytes one skill's files may hold together (the extension's limit).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The most skills one push carries.
pub const MAX_SKILLS: usize = 200;
/// The most files all the skills of one push hold together (their manifests travel in the
/// push itself, whose body is at most 4 MiB).
pub const MAX_LIBRARY_FILES: usize = 5_000;
/// The most bytes all the skills of one push hold together: what one tenant's storage keeps.
pub const MAX_LIBRARY_BYTES: u64 = 64 * 1024 * 1024;
/// The bytes of one stored part of a file (a storage row holds at most 2 MB; base64 grows it
/// by a third).
pub const PART_BYTES: usize = 1024 * 1024;
/// The most bytes of parts one upload request carries (its body is at most 4 MiB as base64).
pub const MAX_UPLOAD_BYTES: usize = 2 * PART_BYTES;
/// The longest description (characters).
pub const MAX_DESCRIPTION: usize = 1024;
/// The longest file path inside a skill (bytes).
const MAX_PATH: usize = 1024;

/// URIs the extension's files and folders have.
pub const SCHEME: &str = "skill://";
/// The skill's entry file.
pub const SKILL_MD: &str = "SKILL.md";
const MARKDOWN: &str = "text/markdown";
const DIRECTORY: &str = "inode/directory";

/// One skill of a push.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushedSkill {
    pub name: String,
    /// `sha256:<hex>` over its files: one `<path>\n<sha256 hex>\n` line each, sorted by path
    /// (the lock's digest).
    pub digest: String,
    /// The description the lock recorded (what `search` shows).
    pub description: String,
    /// `SKILL.md`'s front matter as the local hub's catalog reads it (`skills/list` shows it).
    pub frontmatter: Map<String, Value>,
    /// Every file, sorted by path.
    pub files: Vec<SkillFile>,
}

/// One file of a pushed skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillFile {
    /// Relative to the skill's folder, `/`-separated.
    pub path: String,
    /// Hex.
    pub sha256: String,
    pub size: u64,
}

/// One part of a file's bytes, as `POST /hub/push/files` takes it (`{ "parts": [...] }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// The whole file's sha256 (hex).
    pub sha256: String,
    /// The whole file's size.
    pub size: u64,
    /// Which part, from 0; every part but the last is [`PART_BYTES`] long.
    pub index: u64,
    pub base64: String,
}

/// How many parts a file of `size` bytes is stored in (one for an empty file).
pub fn part_count(size: u64) -> u64 {
    size.div_ceil(PART_BYTES as u64).max(1)
}

/// The parts of `bytes`, in order.
pub fn parts(bytes: &[u8]) -> Vec<Part> {
    let sha256 = hex(&Sha256::digest(bytes));
    let chunks: Vec<&[u8]> = if bytes.is_empty() { vec![bytes] } else { bytes.chunks(PART_BYTES).collect() };
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| Part {
            sha256: sha256.clone(),
            size: bytes.len() as u64,
            index: i as u64,
            base64: BASE64.encode(chunk),
        })
        .collect()
}

/// The digest of a skill: sha256 over one `<path>\n<sha256 hex>\n` line per file, sorted by
/// path (the local library's `skill_digest`).
pub fn skill_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut files: Vec<(&str, &str)> = files.into_iter().collect();
    files.sort();
    let mut hasher = Sha256::new();
    for (path, sha) in files {
        hasher.update(path.as_bytes());
        hasher.update(b"\n");
        hasher.update(sha.as_bytes());
        hasher.update(b"\n");
    }
    format!("sha256:{}", hex(&hasher.finalize()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Checks a skill name as the local library does: 1 to 64 lowercase ASCII letters, digits and
/// single hyphens, not first or last.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{name:?} is not a skill name: use 1 to 64 lowercase letters, digits and single hyphens, not at \
             the start or end (`release-notes`)"
        )),
    }
}

/// Checks a file's path inside a skill: relative, `/`-separated, no empty, `.` or `..` part,
/// no `\` or control character.
pub fn check_path(path: &str) -> Result<(), String> {
    let bad = path.is_empty()
        || path.len() > MAX_PATH
        || path.starts_with('/')
        || path.chars().any(|c| c.is_control() || c == '\\')
        || path.split('/').any(|part| part.is_empty() || part == "." || part == "..");
    match bad {
        true => Err(format!(
            "{path:?} is not a file path inside a skill: give it relative to the skill's folder, `/`-separated, \
             without `..`, `.` or empty parts"
        )),
        false => Ok(()),
    }
}

impl PushedSkill {
    /// Checks the skill's name, front matter, paths, digests and the extension's limits.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        check_name(name)?;
        let said = |key: &str| self.frontmatter.get(key).and_then(Value::as_str);
        if said("name") != Some(name.as_str()) {
            return Err(format!(
                "skill `{name}`: its front matter's `name` must be `{name}` (the skill's folder), not {}",
                self.frontmatter.get("name").map_or("missing".to_owned(), Value::to_string)
            ));
        }
        for description in [said("description"), Some(self.description.as_str())] {
            let Some(description) = description.filter(|d| !d.trim().is_empty()) else {
                return Err(format!("skill `{name}`: its front matter needs a `description`"));
            };
            if description.chars().count() > MAX_DESCRIPTION {
                return Err(format!(
                    "skill `{name}`: its description is longer than {MAX_DESCRIPTION} characters"
                ));
            }
        }
        if self.files.len() > MAX_FILES {
            return Err(format!(
                "skill `{name}` has {} files; a skill holds at most {MAX_FILES}",
                self.files.len()
            ));
        }
        let bytes: u64 = self.files.iter().map(|f| f.size).sum();
        if bytes > MAX_BYTES {
            return Err(format!(
                "skill `{name}` holds {bytes} bytes; a skill holds at most {} MiB",
                MAX_BYTES / (1024 * 1024)
            ));
        }
        let mut seen = BTreeSet::new();
        for file in &self.files {
            check_path(&file.path).map_err(|why| format!("skill `{name}`: {why}"))?;
            if !is_sha256_hex(&file.sha256) {
                return Err(format!(
                    "skill `{name}`: {}'s sha256 {:?} is not 64 lowercase hex digits",
                    file.path, file.sha256
                ));
            }
            if !seen.insert(file.path.as_str()) {
                return Err(format!("skill `{name}` lists {} twice", file.path));
            }
        }
        // A file and a folder of the same path cannot both be.
        for file in &self.files {
            if seen
                .iter()
                .any(|other| other.strip_prefix(file.path.as_str()).is_some_and(|r| r.starts_with('/')))
            {
                return Err(format!("skill `{name}`: {} is both a file and a folder", file.path));
            }
        }
        if !seen.contains(SKILL_MD) {
            return Err(format!("skill `{name}` has no {SKILL_MD}"));
        }
        let digest = skill_digest(self.files.iter().map(|f| (f.path.as_str(), f.sha256.as_str())));
        if digest != self.digest {
            return Err(format!(
                "skill `{name}`: its digest {} does not match its files (they give {digest}); run `capabilities \
                 hub skills list` to see what changed",
                self.digest
            ));
        }
        Ok(())
    }
}

/// Checks the skills of one push: each one, no name twice, and the library's limits.
pub fn check_library(skills: &[PushedSkill]) -> Result<(), String> {
    if skills.len() > MAX_SKILLS {
        return Err(format!("a push carries at most {MAX_SKILLS} skills, not {}", skills.len()));
    }
    let mut names = BTreeSet::new();
    for skill in skills {
        skill.check()?;
        if !names.insert(skill.name.as_str()) {
            return Err(format!("skill `{}` is sent twice; send each skill once", skill.name));
        }
    }
    let files: usize = skills.iter().map(|s| s.files.len()).sum();
    if files > MAX_LIBRARY_FILES {
        return Err(format!("a push carries at most {MAX_LIBRARY_FILES} skill files, not {files}"));
    }
    let bytes: u64 = skills.iter().flat_map(|s| &s.files).map(|f| f.size).sum();
    if bytes > MAX_LIBRARY_BYTES {
        return Err(format!(
            "the skills hold {bytes} bytes; one push carries at most {} MiB of skills",
            MAX_LIBRARY_BYTES / (1024 * 1024)
        ));
    }
    Ok(())
}

/// Checks the bytes of a file against its part's claim and returns them.
pub fn part_bytes(part: &Part) -> Result<Vec<u8>, String> {
    if !is_sha256_hex(&part.sha256) {
        return Err(format!("{:?} is not a sha256 (64 lowercase hex digits)", part.sha256));
    }
    if part.size > MAX_BYTES {
        return Err(format!("a skill file holds at most {} MiB", MAX_BYTES / (1024 * 1024)));
    }
    if part.index >= part_count(part.size) {
        return Err(format!("file {} has no part {}", part.sha256, part.index));
    }
    let bytes = BASE64
        .decode(&part.base64)
        .map_err(|e| format!("part {} of {} is not base64: {e}", part.index, part.sha256))?;
    let last = part.index + 1 == part_count(part.size);
    let expected = if last { part.size - part.index * PART_BYTES as u64 } else { PART_BYTES as u64 };
    if bytes.len() as u64 != expected {
        return Err(format!(
            "part {} of {} holds {} bytes, not {expected}: it does not match the file's size",
            part.index,
            part.sha256,
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Whether a whole file's bytes are what its sha256 says.
pub fn matches(sha256: &str, bytes: &[u8]) -> bool {
    hex(&Sha256::digest(bytes)) == sha256
}

// --- The extension's answers, as rmcp's `SkillCatalog` gives them on the local hub. ---

/// `skill://` and the path, its bytes percent-encoded but for letters, digits and `-._~/`.
pub fn uri_of(path: &str) -> String {
    let mut uri = String::from(SCHEME);
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// Entries whose name starts with `.` are neither listed nor served (as locally).
fn hidden(path: &str) -> bool {
    path.split('/').any(|part| part.starts_with('.'))
}

fn name_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// The served files of a skill: `(path inside the library, file)`, sorted by URI.
fn served(skill: &PushedSkill) -> Vec<(String, &SkillFile)> {
    let mut files: Vec<(String, &SkillFile)> = skill
        .files
        .iter()
        .filter(|f| !hidden(&f.path))
        .map(|f| (format!("{}/{}", skill.name, f.path), f))
        .collect();
    files.sort_by_cached_key(|(path, _)| uri_of(path));
    files
}

/// One skill as `skills/list` and `skills/get` show it.
pub fn skill_json(skill: &PushedSkill) -> Value {
    let mut frontmatter = Map::new();
    // rmcp's front matter puts `name` and `description` first, then the other keys as read.
    for key in ["name", "description"] {
        frontmatter.insert(key.to_owned(), skill.frontmatter.get(key).cloned().unwrap_or(Value::Null));
    }
    for (key, value) in &skill.frontmatter {
        if key != "name" && key != "description" {
            frontmatter.insert(key.clone(), value.clone());
        }
    }
    let resources: Vec<Value> = served(skill)
        .into_iter()
        .map(|(path, f)| json!({ "uri": uri_of(&path), "digest": format!("sha256:{}", f.sha256), "size": f.size }))
        .collect();
    json!({
        "uri": uri_of(&format!("{}/{SKILL_MD}", skill.name)),
        "frontmatter": frontmatter,
        "resources": resources,
    })
}

/// The answer to `skills/list`: every skill on one page, by URI.
pub fn list(skills: &[PushedSkill]) -> Value {
    let mut listed: Vec<Value> = skills.iter().map(skill_json).collect();
    listed.sort_by(|a, b| a["uri"].as_str().cmp(&b["uri"].as_str()));
    json!({ "skills": listed })
}

/// The answer to `skills/get`, or the invalid-params message.
pub fn get(skills: &[PushedSkill], uri: &str) -> Result<Value, String> {
    skills
        .iter()
        .map(skill_json)
        .find(|s| s["uri"] == uri)
        .map(|skill| json!({ "skill": skill }))
        .ok_or_else(|| format!("unknown skill {uri}"))
}

/// The `SKILL.md` of every skill, for `resources/list`.
pub fn resources(skills: &[PushedSkill]) -> Vec<Value> {
    let mut listed: Vec<Value> = skills
        .iter()
        .map(|skill| {
            let size = skill.files.iter().find(|f| f.path == SKILL_MD).map_or(0, |f| f.size);
            json!({
                "uri": uri_of(&format!("{}/{SKILL_MD}", skill.name)),
                "name": skill.frontmatter.get("name").cloned().unwrap_or(Value::Null),
                "description": skill.frontmatter.get("description").cloned().unwrap_or(Value::Null),
                "mimeType": MARKDOWN,
                "size": size,
            })
        })
        .collect();
    listed.sort_by(|a, b| a["uri"].as_str().cmp(&b["uri"].as_str()));
    listed
}

/// The skill and file a `skill://` URI names, if it names a served file.
pub fn file<'s>(skills: &'s [PushedSkill], uri: &str) -> Option<(&'s PushedSkill, &'s SkillFile)> {
    skills.iter().find_map(|skill| {
        served(skill).into_iter().find(|(path, _)| uri_of(path) == uri).map(|(_, f)| (skill, f))
    })
}

/// The answer to `resources/read` of a skill file with `bytes`: text when its MIME type is
/// textual and it is UTF-8 without NUL, else base64.
pub fn contents(uri: &str, path: &str, bytes: &[u8]) -> Value {
    let mime = mime_type_of(path);
    let text = mime
        .is_some_and(is_textual)
        .then_some(bytes)
        .filter(|b| !b.contains(&0))
        .and_then(|b| std::str::from_utf8(b).ok());
    let mut content = Map::new();
    content.insert("uri".into(), json!(uri));
    match text {
        Some(text) => {
            content.insert("mimeType".into(), json!(mime.unwrap_or("text/plain")));
            content.insert("text".into(), json!(text));
        }
        None => {
            if let Some(mime) = mime {
                content.insert("mimeType".into(), json!(mime));
            }
            content.insert("blob".into(), json!(BASE64.encode(bytes)));
        }
    }
    json!({ "contents": [content] })
}

/// The answer to `resources/directory/read`: the direct children of a skill's folder or a
/// folder inside it, by name; or the invalid-params message.
pub fn directory(skills: &[PushedSkill], uri: &str) -> Result<Value, String> {
    for skill in skills {
        // The folders of the skill: its own and every one its served files sit in.
        let files: Vec<(String, &SkillFile)> = served(skill);
        let mut folders: BTreeSet<String> = BTreeSet::from([skill.name.clone()]);
        for (path, _) in &files {
            let mut dir = path.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                folders.insert(parent.to_owned());
                dir = parent;
            }
        }
        let Some(folder) = folders.iter().find(|f| uri_of(f) == uri) else { continue };
        // name → child, sorted by name as a walk of the folder lists them.
        let mut children: BTreeMap<&str, Value> = BTreeMap::new();
        for (path, file) in &files {
            let Some(rest) = path.strip_prefix(folder.as_str()).and_then(|r| r.strip_prefix('/')) else {
                continue;
            };
            match rest.split_once('/') {
                None => {
                    let mut child = Map::new();
                    child.insert("uri".into(), json!(uri_of(path)));
                    child.insert("name".into(), json!(name_of(path)));
                    if let Some(mime) = mime_type_of(path) {
                        child.insert("mimeType".into(), json!(mime));
                    }
                    child.insert("size".into(), json!(file.size));
                    children.insert(name_of(path), Value::Object(child));
                }
                Some((sub, _)) => {
                    let sub_path = format!("{folder}/{sub}");
                    children.entry(sub).or_insert_with(
                        || json!({ "uri": uri_of(&sub_path), "name": sub, "mimeType": DIRECTORY }),
                    );
                }
            }
        }
        return Ok(json!({ "resources": children.into_values().collect::<Vec<_>>() }));
    }
    Err(format!("not a directory: {uri}"))
}

fn is_textual(mime_type: &str) -> bool {
    mime_type.starts_with("text/")
        || matches!(
            mime_type,
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "image/svg+xml"
        )
}

fn mime_type_of(path: &str) -> Option<&'static str> {
    let extension = name_of(path).rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    Some(match extension.as_deref()? {
        "md" | "markdown" => MARKDOWN,
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "application/x-sh",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, files: &[(&str, &[u8])]) -> PushedSkill {
        let files: Vec<SkillFile> = files
            .iter()
            .map(|(path, bytes)| SkillFile {
                path: (*path).to_owned(),
                sha256: hex(&Sha256::digest(bytes)),
                size: bytes.len() as u64,
            })
            .collect();
        let mut frontmatter = Map::new();
        frontmatter.insert("name".into(), json!(name));
        frontmatter.insert("description".into(), json!("Does things."));
        PushedSkill {
            name: name.to_owned(),
            digest: skill_digest(files.iter().map(|f| (f.path.as_str(), f.sha256.as_str()))),
            description: "Does things.".into(),
            frontmatter,
            files,
        }
    }

    #[test]
    fn hostile_skills_are_refused_with_what_to_fix() {
        let good = skill("notes", &[("SKILL.md", b"---\nname: notes\n---\n"), ("a/b.sh", b"x")]);
        good.check().unwrap();
        let refused = |edit: &dyn Fn(&mut PushedSkill)| {
            let mut s = good.clone();
            edit(&mut s);
            s.check().unwrap_err()
        };
        for path in ["../x", "/etc/passwd", "a/../../x", "a//b", "./a", "a\\b", ""] {
            let why = refused(&|s| s.files[1].path = path.to_owned());
            assert!(why.contains("is not a file path inside a skill"), "{path}: {why}");
        }
        assert!(refused(&|s| s.files[1].sha256 = "0".repeat(64)).contains("does not match its files"));
        assert!(refused(&|s| s.name = "Bad Name".into()).contains("is not a skill name"));
        assert!(refused(&|s| s.name = "other".into()).contains("must be `other`"));
        assert!(refused(&|s| s.files.remove(0).path.clear()).contains("has no SKILL.md"));
        assert!(refused(&|s| s.files[1].size = MAX_BYTES).contains("at most 16 MiB"));
        let many = |s: &mut PushedSkill| {
            s.files = (0..=MAX_FILES)
                .map(|i| SkillFile { path: format!("f{i}"), sha256: "0".repeat(64), size: 1 })
                .collect()
        };
        assert!(refused(&many).contains("at most 512"));
        assert!(check_library(&[good.clone(), good.clone()]).unwrap_err().contains("sent twice"));
    }

    #[test]
    fn parts_carry_a_file_and_are_checked_against_its_size() {
        let bytes = vec![7u8; PART_BYTES + 10];
        let parts = parts(&bytes);
        assert_eq!(parts.len(), 2);
        let mut joined = Vec::new();
        for part in &parts {
            joined.extend(part_bytes(part).unwrap());
        }
        assert!(matches(&parts[0].sha256, &joined));
        let mut short = parts[1].clone();
        short.size += 1;
        assert!(part_bytes(&short).unwrap_err().contains("does not match the file's size"));
        assert_eq!(crate::skills::parts(b"").len(), 1);
    }

    #[test]
    fn answers_are_built_like_the_local_catalog() {
        let s = skill(
            "notes",
            &[
                ("SKILL.md", b"---\nname: notes\n---\nhi\n"),
                ("scripts/run.sh", b"echo\n"),
                (".hidden", b"x"),
                ("b b.bin", b"\0"),
            ],
        );
        let listed = list(std::slice::from_ref(&s));
        let uris: Vec<&str> = listed["skills"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            uris,
            ["skill://notes/SKILL.md", "skill://notes/b%20b.bin", "skill://notes/scripts/run.sh"]
        );
        let dir = directory(std::slice::from_ref(&s), "skill://notes").unwrap();
        let names: Vec<&str> =
            dir["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["SKILL.md", "b b.bin", "scripts"]);
        assert!(directory(std::slice::from_ref(&s), "skill://notes/nope").is_err());
        assert_eq!(contents("u", "b b.bin", b"\0")["contents"][0]["blob"], "AA==");
        assert_eq!(contents("u", "run.sh", b"echo\n")["contents"][0]["mimeType"], "application/x-sh");
        assert!(file(std::slice::from_ref(&s), "skill://notes/.hidden").is_none());
    }
}
