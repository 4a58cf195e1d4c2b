//! Registry indexes for `stack install`: static JSON, in a directory (`<dir>/index.json`) or at
//! a URL (https; http on loopback only). An index lists capabilities by slug, each pinned: an
//! npm package at an exact version (with the integrity the registry must serve), a remote MCP
//! server by URL, or a skill in a git repository at a commit. Nothing in an index runs: it is
//! read as data, checked, and installed the way `hub add` would.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// The name of the index file in a registry directory.
pub const INDEX: &str = "index.json";
/// The index format this build reads.
pub const VERSION: u32 = 1;
/// The environment variable naming the registry when neither `--registry` nor the stack's
/// link does.
pub const ENV: &str = "CAPABILITIES_REGISTRY";
/// The largest index read.
const MAX_INDEX: usize = 8 * 1024 * 1024;

/// An index.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub version: u32,
    #[serde(default)]
    pub capabilities: Vec<Entry>,
}

/// One capability in an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    pub slug: String,
    #[serde(default)]
    pub description: String,
    /// The namespace the source gets (a skill keeps its own name); the slug when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// An npm package, with `version` exact and, when given, `integrity` to check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// An isolated package granted the network.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net: bool,
    /// A remote MCP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A skill: its repository, the commit, and the folder in it (the root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// What an entry installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind<'e> {
    Npm { package: &'e str, version: &'e str, integrity: Option<&'e str> },
    Remote { url: &'e str },
    Skill { git: &'e str, commit: &'e str, path: Option<&'e str> },
}

impl Entry {
    /// What the entry installs; an error naming what is wrong with it.
    pub fn kind(&self) -> Result<Kind<'_>> {
        let slug = &self.slug;
        match (&self.npm, &self.url, &self.git) {
            (Some(package), None, None) => {
                let Some(version) = self.version.as_deref() else {
                    bail!("index entry `{slug}` names npm package `{package}` without an exact `version`");
                };
                if !is_exact_version(version) {
                    bail!("index entry `{slug}` pins `{version}`, which is not an exact version");
                }
                Ok(Kind::Npm { package, version, integrity: self.integrity.as_deref() })
            }
            (None, Some(url), None) => Ok(Kind::Remote { url }),
            (None, None, Some(git)) => {
                let Some(commit) = self.commit.as_deref() else {
                    bail!("index entry `{slug}` names git repository `{git}` without the `commit` to pin");
                };
                if commit.len() != 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
                    bail!(
                        "index entry `{slug}` pins `{commit}`, which is not a full commit id (40 hex digits)"
                    );
                }
                if let Some(path) = &self.path
                    && (path.starts_with('/') || path.split('/').any(|part| part == ".." || part.is_empty()))
                {
                    bail!("index entry `{slug}` has path `{path}`, which leaves its repository");
                }
                Ok(Kind::Skill { git, commit, path: self.path.as_deref() })
            }
            _ => bail!("index entry `{slug}` must name exactly one of `npm`, `url` and `git`"),
        }
    }

    /// One line for a person: what it is and what it installs.
    pub fn describe(&self) -> String {
        let what = match self.kind() {
            Ok(Kind::Npm { package, version, .. }) => format!("npm {package}@{version}"),
            Ok(Kind::Remote { url }) => url.to_owned(),
            Ok(Kind::Skill { git, commit, .. }) => format!("skill from {git} at {}", &commit[..12]),
            Err(err) => format!("{err:#}"),
        };
        if self.description.is_empty() { what } else { format!("{what} — {}", self.description) }
    }
}

/// `1.2.3`, `1.2.3-rc.1`, `1.2.3+build`: one version, not a range or a tag.
fn is_exact_version(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or("");
    let rest = &version[core.len()..];
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && rest.chars().all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
}

/// The registry to read: `given` (`--registry`), else the environment, else the stack link's.
pub fn choose(given: Option<&str>, linked: Option<&str>) -> Result<String> {
    let env = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty());
    given.map(str::to_owned).or(env).or(linked.map(str::to_owned)).context(
        "no registry index to read: pass `--registry <dir|url>`, set CAPABILITIES_REGISTRY, or link one with \
         `capabilities stack init <repository> --registry <dir|url>`",
    )
}

/// Reads and checks the index at `location`.
pub fn load(location: &str) -> Result<Index> {
    let bytes = if location.starts_with("https://") || location.starts_with("http://") {
        crate::upstream::check_url(location).map_err(|why| anyhow::anyhow!("the registry: {why}"))?;
        crate::openapi::download(location, MAX_INDEX)?
    } else {
        let dir = Path::new(location);
        let path = if dir.is_dir() { dir.join(INDEX) } else { dir.to_owned() };
        let meta = std::fs::metadata(&path)
            .with_context(|| format!("reading the registry index {}: is the path right?", path.display()))?;
        if meta.len() > MAX_INDEX as u64 {
            bail!("the registry index {} is larger than {} MiB", path.display(), MAX_INDEX / (1024 * 1024));
        }
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?
    };
    let index: Index = serde_json::from_slice(&bytes)
        .with_context(|| format!("the registry index at {location} is not an index this build reads"))?;
    if index.version != VERSION {
        bail!(
            "the registry index at {location} has version {}; this build reads version {VERSION}",
            index.version
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for entry in &index.capabilities {
        if !seen.insert(entry.slug.as_str()) {
            bail!("the registry index at {location} lists `{}` twice", entry.slug);
        }
    }
    Ok(index)
}

impl Index {
    /// The entry of `slug`, or an error listing what there is.
    pub fn find(&self, slug: &str, location: &str) -> Result<&Entry> {
        if let Some(entry) = self.capabilities.iter().find(|e| e.slug == slug) {
            return Ok(entry);
        }
        let mut near: Vec<&str> = self
            .capabilities
            .iter()
            .map(|e| e.slug.as_str())
            .filter(|s| s.contains(slug) || slug.contains(*s))
            .collect();
        if near.is_empty() {
            near = self.capabilities.iter().map(|e| e.slug.as_str()).take(10).collect();
        }
        if near.is_empty() {
            bail!("the registry index at {location} lists no capabilities");
        }
        bail!("the registry index at {location} has no `{slug}`; it has {}", near.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(json: serde_json::Value) -> Entry {
        serde_json::from_value(json).expect("an entry")
    }

    #[test]
    fn entries_must_pin_exactly_one_thing() {
        let npm = entry(serde_json::json!({"slug": "memory", "npm": "@scope/memory", "version": "1.2.3"}));
        assert_eq!(
            npm.kind().expect("valid"),
            Kind::Npm { package: "@scope/memory", version: "1.2.3", integrity: None }
        );
        let range = entry(serde_json::json!({"slug": "m", "npm": "m", "version": "^1.2.3"}));
        assert!(format!("{:#}", range.kind().unwrap_err()).contains("not an exact version"));
        let tag = entry(serde_json::json!({"slug": "m", "npm": "m", "version": "latest"}));
        assert!(format!("{:#}", tag.kind().unwrap_err()).contains("not an exact version"));
        let pre = entry(serde_json::json!({"slug": "m", "npm": "m", "version": "2.0.0-rc.1"}));
        assert!(pre.kind().is_ok());
        let floating = entry(serde_json::json!({"slug": "m", "npm": "m"}));
        assert!(format!("{:#}", floating.kind().unwrap_err()).contains("without an exact"));
        let both =
            entry(serde_json::json!({"slug": "m", "npm": "m", "version": "1.0.0", "url": "https://x"}));
        assert!(format!("{:#}", both.kind().unwrap_err()).contains("exactly one"));
        let short = entry(serde_json::json!({"slug": "s", "git": "https://g/x.git", "commit": "abc"}));
        assert!(format!("{:#}", short.kind().unwrap_err()).contains("full commit"));
        let escape = entry(serde_json::json!({
            "slug": "s", "git": "https://g/x.git", "commit": "a".repeat(40), "path": "../etc"
        }));
        assert!(format!("{:#}", escape.kind().unwrap_err()).contains("leaves its repository"));
    }
}
