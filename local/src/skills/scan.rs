//! Reading one skill folder into memory, checked: its `SKILL.md`'s front matter, the format's
//! limits (512 files, 16 MiB), no symlink leaving the folder, no loops, no special files. What
//! comes back is exactly what the hub installs, with a sha256 per file and the skill's digest.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::front_matter::{self, FrontMatter};

/// The most files one skill may hold.
pub const MAX_FILES: usize = 512;
/// The most bytes one skill's files may hold together.
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The skill's entry file.
pub const SKILL_MD: &str = "SKILL.md";

/// A skill read from a folder.
#[derive(Debug, Clone)]
pub struct Scanned {
    pub front: FrontMatter,
    /// Every file, sorted by path.
    pub files: Vec<ScannedFile>,
    /// `sha256:<hex>` over every file's path and sha256 ([`skill_digest`]).
    pub digest: String,
}

/// One file of a skill.
#[derive(Debug, Clone)]
pub struct ScannedFile {
    /// Relative to the skill's folder, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
    /// Hex.
    pub sha256: String,
    /// Whether its owner may run it (kept when installed).
    pub executable: bool,
}

impl Scanned {
    pub fn name(&self) -> &str {
        &self.front.name
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes.len() as u64).sum()
    }
}

/// The digest of a skill: sha256 over one `<path>\n<sha256 hex>\n` line per file, sorted by path.
pub fn skill_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    // One definition for both hubs: the hosted one checks a pushed skill against it.
    capabilities_hosted::skills::skill_digest(files)
}

/// The name a skill at `dir` must have: the folder's own name as given, else (`.`) its real one.
pub fn folder_name(dir: &Path) -> Option<String> {
    let given = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned);
    given.or_else(|| dir.canonicalize().ok()?.file_name()?.to_str().map(str::to_owned))
}

fn is_loop(err: &io::Error) -> bool {
    err.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32)
}

/// Reads and checks the skill in `dir`; the folder's name must equal its `name`.
pub fn scan(dir: &Path) -> Result<Scanned> {
    let shown = dir.display();
    let root = match dir.canonicalize() {
        Ok(root) => root,
        Err(err) if is_loop(&err) => {
            bail!("{shown} is a symlink loop: point it at a real folder, or remove it")
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => bail!(
            "{shown} does not exist (or is a symlink to nothing): give the folder that holds the skill's SKILL.md"
        ),
        Err(err) => return Err(err).with_context(|| format!("reading {shown}")),
    };
    if !root.is_dir() {
        bail!(
            "{shown} is not a folder: give the folder that holds the skill's SKILL.md, or the SKILL.md itself"
        );
    }
    if !root.join(SKILL_MD).is_file() {
        bail!(
            "{shown} has no SKILL.md: a skill is a folder with a SKILL.md that starts with front matter \
             (`name`, `description`)"
        );
    }
    let folder = folder_name(dir).with_context(|| format!("{shown} has no folder name"))?;
    let mut walk = Walk { root: root.clone(), files: Vec::new(), bytes: 0 };
    walk.dir(&root, "")?;
    let files = walk.files;
    let skill_md = files
        .iter()
        .find(|f| f.path == SKILL_MD)
        .with_context(|| format!("{shown}/SKILL.md is not a file in the skill: make it a regular file"))?;
    let text = std::str::from_utf8(&skill_md.bytes)
        .map_err(|_| anyhow::anyhow!("{shown}/SKILL.md is not UTF-8 text: save it as UTF-8"))?;
    let front = front_matter::parse(text).with_context(|| format!("reading {shown}/SKILL.md"))?;
    if front.name != folder {
        bail!(
            "the skill in {shown} is named `{}` in its SKILL.md but its folder is `{folder}`: rename the \
             folder to `{}` or change `name:` to `{folder}`",
            front.name,
            front.name
        );
    }
    let digest = skill_digest(files.iter().map(|f| (f.path.as_str(), f.sha256.as_str())));
    Ok(Scanned { front, files, digest })
}

struct Walk {
    root: PathBuf,
    files: Vec<ScannedFile>,
    bytes: u64,
}

impl Walk {
    fn dir(&mut self, dir: &Path, prefix: &str) -> Result<()> {
        let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .collect::<io::Result<_>>()
            .with_context(|| format!("reading {}", dir.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            let path = entry.path();
            let Some(name) = name.to_str() else {
                bail!("{} has a name that is not UTF-8: rename it", path.display());
            };
            // A skill fetched with git carries the repository's own folder; it is not the skill.
            if name == ".git" {
                continue;
            }
            if name.chars().any(|c| c.is_control() || c == '\\') {
                bail!(
                    "{:?} in {} has a control character or `\\` in its name: rename it",
                    name,
                    dir.display()
                );
            }
            let rel = if prefix.is_empty() { name.to_owned() } else { format!("{prefix}/{name}") };
            let meta = fs::symlink_metadata(&path).with_context(|| format!("reading {}", path.display()))?;
            if meta.file_type().is_symlink() {
                let target = match path.canonicalize() {
                    Ok(target) => target,
                    Err(err) if is_loop(&err) => {
                        bail!(
                            "{} is a symlink loop: remove it or point it at a file in the skill",
                            path.display()
                        )
                    }
                    Err(_) => bail!(
                        "{} is a symlink to nothing: remove it or point it at a file in the skill",
                        path.display()
                    ),
                };
                if !target.starts_with(&self.root) {
                    bail!(
                        "{} is a symlink to {}, outside the skill: copy what it points at into the skill folder instead",
                        path.display(),
                        target.display()
                    );
                }
                if !target.is_file() {
                    bail!(
                        "{} is a symlink to a folder: replace it with the folder itself (a link to a folder \
                         above it would be a loop)",
                        path.display()
                    );
                }
                self.file(&target, rel)?;
            } else if meta.is_dir() {
                self.dir(&path, &rel)?;
            } else if meta.is_file() {
                self.file(&path, rel)?;
            } else {
                bail!("{} is not a regular file or folder: remove it from the skill", path.display());
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, rel: String) -> Result<()> {
        if self.files.len() >= MAX_FILES {
            bail!(
                "the skill at {} has more than {MAX_FILES} files: a skill holds at most {MAX_FILES}; move \
                 the rest out (or into another skill)",
                self.root.display()
            );
        }
        let file = fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let meta = file.metadata().with_context(|| format!("reading {}", path.display()))?;
        let room = MAX_BYTES - self.bytes;
        let mut bytes = Vec::with_capacity(meta.len().min(room) as usize);
        // Read one byte past the room left, so a file that grew since its size was read is caught.
        file.take(room + 1).read_to_end(&mut bytes).with_context(|| format!("reading {}", path.display()))?;
        if bytes.len() as u64 > room {
            bail!(
                "the skill at {} holds more than {} MiB: a skill holds at most {} MiB; move large files out",
                self.root.display(),
                MAX_BYTES / (1024 * 1024),
                MAX_BYTES / (1024 * 1024)
            );
        }
        self.bytes += bytes.len() as u64;
        use std::os::unix::fs::PermissionsExt;
        let executable = meta.permissions().mode() & 0o100 != 0;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        self.files.push(ScannedFile { path: rel, bytes, sha256, executable });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_digest_depends_on_paths_and_contents_not_order() {
        let a = skill_digest([("SKILL.md", "aa"), ("b.txt", "bb")]);
        assert_eq!(a, skill_digest([("b.txt", "bb"), ("SKILL.md", "aa")]));
        assert_ne!(a, skill_digest([("SKILL.md", "aa"), ("c.txt", "bb")]));
        assert_ne!(a, skill_digest([("SKILL.md", "aa"), ("b.txt", "bc")]));
    }
}
