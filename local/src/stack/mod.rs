//! A person's stack: the hub's configuration without a single secret, kept in a git repository
//! they own so another machine can take it (`capabilities stack …`).
//!
//! The repository holds one file, `capabilities-stack.json` ([`StackFile`]: sources, the
//! policy, profiles, the capabilities installed from a registry index), and `skills/<name>/`
//! with each skill's files. A source is written as what it *is*, not where this machine keeps
//! it: an installed package by registry, name, exact version and integrity (the other machine
//! installs and checks it again), an isolated command by what it was granted (its state
//! directory is made anew). Paths under this hub's store or the person's home directory are
//! written as `${CAPABILITIES_HOME}/…` and `${HOME}/…` ([`Places`]) and put back as the other
//! machine's. Connections carry their names and slot names only; values stay in
//! each machine's keychain, and [`secret_in`] refuses a stack in which any stored value appears.
//!
//! The hub keeps its clone of the repository at `<store>/stack/` and the link in `stack.json`
//! (the remote, the branch, and the commit last pushed or pulled, so a push never overwrites
//! changes another machine pushed in between). Every git command is the system `git`, run with
//! prompts off.

pub mod registry;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use capabilities_core::policy::PolicyState;
use capabilities_core::profile::Profile;
use serde::{Deserialize, Serialize};

use crate::config::{HubConfig, read_json, write_json};
use crate::packages::{self, LockedPackage};
use crate::secrets::{SecretStore, SlotKey};
use crate::skills::Library;
use crate::store::Store;
use crate::upstream::SourceTransport;

/// The stack's file, at the repository's root.
pub const FILE: &str = "capabilities-stack.json";
/// The folder of skills in the repository.
pub const SKILLS: &str = "skills";
/// The version of the stack file this build writes and reads.
pub const VERSION: u32 = 1;
/// The link record, in the store.
const LINK: &str = "stack.json";
/// The clone, in the store.
const CLONE: &str = "stack";
/// The installed-from-a-registry record, in the store.
const INSTALLED: &str = "stack.lock.json";
/// A stack file larger than this is refused before parsing.
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// `capabilities-stack.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StackFile {
    pub version: u32,
    #[serde(default)]
    pub sources: BTreeMap<String, StackSource>,
    #[serde(default)]
    pub policy: PolicyState,
    /// Named profiles other than `default`'s built-in one, by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
    /// Skill name → its digest (`sha256:…` over its files, as the skills lock has it); the
    /// files are under `skills/<name>/`.
    #[serde(default)]
    pub skills: BTreeMap<String, String>,
    /// What `stack install` added from a registry index, by slug.
    #[serde(default)]
    pub installed: BTreeMap<String, InstalledCapability>,
}

/// One source as the stack carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StackSource {
    /// An installed package: the exact version and integrity to install and check again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<PinnedPackage>,
    /// Any other source: how it is reached (an isolated command without its isolation, which
    /// `isolated`, `net` and `read` say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<SourceTransport>,
    /// A package's arguments after its entry point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A package's plain environment values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A package's credential variables (names only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_slots: Vec<String>,
    /// Whether the source runs isolated (bubblewrap).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub isolated: bool,
    /// Isolated and granted the network.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net: bool,
    /// Isolated and granted these directories for reading.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<StackConnection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_connection: Option<String>,
}

/// A package pinned exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedPackage {
    pub registry: String,
    pub name: String,
    pub version: String,
    /// The registry's integrity (`sha512-…`) the other machine must see again.
    pub integrity: String,
}

/// A connection by name: the slots it fills, or that it signs in with OAuth. No value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StackConnection {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oauth: bool,
}

/// A capability `stack install` added from a registry index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstalledCapability {
    /// `source` or `skill`.
    pub kind: String,
    /// The namespace or skill name it became.
    pub name: String,
    /// The package version or git commit it was pinned to.
    pub pin: String,
    /// The index it came from.
    pub registry: String,
}

impl StackSource {
    /// One line for the plan: what it runs or reaches.
    pub fn describe(&self) -> String {
        let mut line = match (&self.package, &self.transport) {
            (Some(p), _) => format!("{} {}@{}", p.registry, p.name, p.version),
            (None, Some(SourceTransport::Stdio { command, args, .. })) => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(SourceTransport::Http { url, .. })) => url.clone(),
            (None, Some(SourceTransport::OpenApi(api))) => {
                format!("OpenAPI {}", api.document.as_deref().unwrap_or(&api.base_url))
            }
            (None, None) => "nothing (invalid)".to_owned(),
        };
        if self.isolated {
            line.push_str(if self.net { ", isolated with the network" } else { ", isolated" });
            for dir in &self.read {
                line.push_str(&format!(", reads {dir}"));
            }
        }
        let slots: Vec<&str> =
            self.connections.iter().flat_map(|c| c.slots.iter().map(String::as_str)).collect();
        if !slots.is_empty() {
            line.push_str(&format!("; asks for {}", slots.join(", ")));
        }
        if self.connections.iter().any(|c| c.oauth) {
            line.push_str("; signs in with OAuth");
        }
        line
    }
}

/// The link to the stack repository (`stack.json` in the store).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// The repository as the person named it (a URL or a path).
    pub remote: String,
    pub branch: String,
    /// The commit last pushed or pulled here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced: Option<String>,
    /// The registry index `stack install` reads unless told otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
}

pub fn read_link(store: &Store) -> Result<Option<Link>> {
    read_json(store, LINK)
}

pub fn write_link(store: &Store, link: &Link) -> Result<()> {
    write_json(store, LINK, link)
}

/// The link, or an error saying how to make one.
pub fn require_link(store: &Store) -> Result<Link> {
    read_link(store)?.context(
        "no stack repository is linked: run `capabilities stack init <repository>` (a git URL or path)",
    )
}

/// The hub's clone of the stack repository.
pub fn clone_dir(store: &Store) -> PathBuf {
    store.root().join(CLONE)
}

/// The capabilities `stack install` added, by slug.
pub fn installed(store: &Store) -> Result<BTreeMap<String, InstalledCapability>> {
    Ok(read_json(store, INSTALLED)?.unwrap_or_default())
}

pub fn write_installed(store: &Store, installed: &BTreeMap<String, InstalledCapability>) -> Result<()> {
    write_json(store, INSTALLED, installed)
}

/// This hub's configuration as a stack, with the bytes of each skill's files.
pub fn export(store: &Store, config: &HubConfig) -> Result<(StackFile, SkillBytes)> {
    let mut stack = export_config(store, config)?;
    let (digests, files) = export_skills(store)?;
    stack.skills = digests;
    Ok((stack, files))
}

/// Each skill's files, by skill name: path and bytes.
pub type SkillBytes = BTreeMap<String, Vec<(String, Vec<u8>)>>;

/// The stack without its skills: sources, policy, profiles, what was installed from an index.
pub fn export_config(store: &Store, config: &HubConfig) -> Result<StackFile> {
    let lock = packages::load(store)?;
    let places = Places::here(store);
    let mut stack = StackFile { version: VERSION, policy: config.policy.clone(), ..StackFile::default() };
    for (record, _, connections) in &config.sources {
        let ns = record.spec.namespace.clone();
        let mut source = export_source(store, &record.spec.transport, lock.packages.get(&ns), connections);
        map_paths(&mut source, |path| places.portable(path));
        stack.sources.insert(ns, source);
    }
    // Profiles a person made or changed; the built-in `default` has no file and needs none.
    for name in crate::profiles::names(store) {
        if !store.root().join(crate::profiles::profile_path(&name)).is_file() {
            continue;
        }
        if let Some(profile) = crate::profiles::load(store, &name)? {
            stack.profiles.insert(name, profile);
        }
    }
    // Only what is still here: a source removed with `hub remove` leaves its record behind.
    let skills = crate::skills::Library::new(store).lock()?.skills;
    stack.installed = installed(store)?
        .into_iter()
        .filter(|(_, what)| match what.kind.as_str() {
            "source" => stack.sources.contains_key(&what.name),
            "skill" => skills.contains_key(&what.name),
            _ => false,
        })
        .collect();
    Ok(stack)
}

/// The skill library: each skill's digest, and its files. A skill whose files changed on disk
/// since it was added is refused: the stack would carry files nobody added.
pub fn export_skills(store: &Store) -> Result<(BTreeMap<String, String>, SkillBytes)> {
    let library = Library::new(store);
    let mut digests = BTreeMap::new();
    let mut files = BTreeMap::new();
    for (name, locked, status) in library.list()? {
        let Some(locked) = locked else { continue };
        if status != crate::skills::Status::Ok {
            bail!(
                "skill `{name}` has changed on disk since it was added ({}): add it again with \
                 `capabilities hub skills add`, or remove it, before pushing",
                status.word()
            );
        }
        let dir = library.dir().join(&name);
        let mut bytes = Vec::new();
        for path in locked.files.keys() {
            let data =
                std::fs::read(dir.join(path)).with_context(|| format!("reading skill `{name}`'s {path}"))?;
            bytes.push((path.clone(), data));
        }
        digests.insert(name.clone(), locked.digest.clone());
        files.insert(name, bytes);
    }
    Ok((digests, files))
}

/// The arguments before a package's own in its source's command line: `<entry>` for npm,
/// `-s -c <boot> <dir> <module:function>` for PyPI (see `commands/add_package.rs`).
fn runner_args(registry: &str) -> usize {
    if registry == "pypi" { 5 } else { 1 }
}

fn export_source(
    store: &Store,
    transport: &SourceTransport,
    package: Option<&LockedPackage>,
    connections: &crate::config::ConnectionsRecord,
) -> StackSource {
    let mut source = StackSource {
        package: None,
        transport: None,
        args: Vec::new(),
        env: BTreeMap::new(),
        env_slots: Vec::new(),
        isolated: false,
        net: false,
        read: Vec::new(),
        connections: connections
            .connections
            .iter()
            .map(|c| StackConnection {
                name: c.name.clone(),
                slots: c.slots.clone(),
                oauth: c.oauth.is_some(),
            })
            .collect(),
        default_connection: connections.default.clone(),
    };
    match (transport, package) {
        (SourceTransport::Stdio { command, args, env, env_slots, isolation, .. }, Some(package)) => {
            source.package = Some(PinnedPackage {
                registry: package.registry.clone(),
                name: package.name.clone(),
                version: package.version.clone(),
                integrity: package.integrity.clone(),
            });
            source.args = args.iter().skip(runner_args(&package.registry)).cloned().collect();
            source.env = env.clone();
            if package.registry == "pypi" {
                source.env.remove("PYTHONDONTWRITEBYTECODE");
            }
            source.env_slots = env_slots.clone();
            if let Some(isolation) = isolation {
                source.isolated = true;
                source.net = isolation.net;
                // The package's own directory and node's installation are bound again on the
                // other machine; what is left is what the person granted.
                let node = Path::new(command).parent().and_then(Path::parent);
                source.read = isolation
                    .read_only
                    .iter()
                    .filter(|dir| !Path::new(dir).starts_with(store.root()))
                    .filter(|dir| node.is_none_or(|node| Path::new(dir) != node))
                    .cloned()
                    .collect();
            }
        }
        (SourceTransport::Stdio { isolation: Some(isolation), .. }, None) => {
            let mut bare = transport.clone();
            if let SourceTransport::Stdio { isolation, .. } = &mut bare {
                *isolation = None;
            }
            source.transport = Some(bare);
            source.isolated = true;
            source.net = isolation.net;
            source.read = isolation.read_only.clone();
        }
        _ => source.transport = Some(transport.clone()),
    }
    source
}

/// Where this machine keeps the hub's store and the person's home: the two prefixes a stack
/// writes as variables, so paths under them mean the same on another machine.
#[derive(Debug, Clone)]
pub struct Places {
    hub: String,
    home: Option<String>,
}

const HUB_VAR: &str = "${CAPABILITIES_HOME}";
const HOME_VAR: &str = "${HOME}";

impl Places {
    pub fn here(store: &Store) -> Places {
        let home =
            std::env::var("HOME").ok().map(|h| h.trim_end_matches('/').to_owned()).filter(|h| !h.is_empty());
        Places { hub: store.root().to_string_lossy().trim_end_matches('/').to_owned(), home }
    }

    /// `path` with this machine's store and home written as variables.
    pub fn portable(&self, path: &str) -> String {
        let path = replace_prefix(path, &self.hub, HUB_VAR);
        match &self.home {
            Some(home) => replace_prefix(&path, home, HOME_VAR),
            None => path,
        }
    }

    /// `path` with the variables written as this machine's store and home.
    pub fn local(&self, path: &str) -> String {
        let path = replace_prefix(path, HUB_VAR, &self.hub);
        match &self.home {
            Some(home) => replace_prefix(&path, HOME_VAR, home),
            None => path,
        }
    }
}

/// Replaces each `from` in `text` that ends a path component (followed by `/`, the end, or a
/// character that cannot be in a name here) and starts one.
fn replace_prefix(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before_ok = at == 0 || rest[..at].ends_with(['=', ':', ' ', '"', '\'']);
        let after = &rest[at + from.len()..];
        let after_ok = after.is_empty() || after.starts_with(['/', ':', ' ', '"', '\'']);
        out.push_str(&rest[..at]);
        out.push_str(if before_ok && after_ok { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Applies `f` to every path a source's record may carry: arguments, plain environment
/// values, granted directories, a command, its working directory, an API's document.
pub fn map_paths(source: &mut StackSource, f: impl Fn(&str) -> String) {
    for arg in &mut source.args {
        *arg = f(arg);
    }
    for value in source.env.values_mut() {
        *value = f(value);
    }
    for dir in &mut source.read {
        *dir = f(dir);
    }
    match &mut source.transport {
        Some(SourceTransport::Stdio { command, args, env, cwd, .. }) => {
            *command = f(command);
            for arg in args {
                *arg = f(arg);
            }
            for value in env.values_mut() {
                *value = f(value);
            }
            if let Some(cwd) = cwd {
                *cwd = f(cwd);
            }
        }
        Some(SourceTransport::OpenApi(api)) => {
            if let Some(document) = &mut api.document {
                *document = f(document);
            }
        }
        Some(SourceTransport::Http { .. }) | None => {}
    }
}

/// Writes `stack` and its skills into the clone's working tree, replacing what an earlier push
/// wrote there. Other files in the repository (a README, say) are left alone.
pub fn write_tree(dir: &Path, stack: &StackFile, skills: &SkillBytes) -> Result<()> {
    let mut text = serde_json::to_string_pretty(stack)?;
    text.push('\n');
    std::fs::write(dir.join(FILE), text).with_context(|| format!("writing {}", dir.join(FILE).display()))?;
    let skills_dir = dir.join(SKILLS);
    match std::fs::remove_dir_all(&skills_dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("clearing {}", skills_dir.display())),
    }
    for (name, files) in skills {
        for (path, bytes) in files {
            let target = skills_dir.join(name).join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&target, bytes).with_context(|| format!("writing {}", target.display()))?;
        }
    }
    Ok(())
}

/// Reads the stack in `dir` (a checkout of the repository); an empty stack when the repository
/// has none yet.
pub fn read_tree(dir: &Path) -> Result<Option<StackFile>> {
    let path = dir.join(FILE);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    if !meta.is_file() {
        bail!("{FILE} in the stack repository is not a plain file; fix the repository");
    }
    if meta.len() > MAX_FILE {
        bail!(
            "{FILE} in the stack repository is {} bytes, more than a stack can be; fix the repository",
            meta.len()
        );
    }
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let stack: StackFile = serde_json::from_slice(&bytes)
        .with_context(|| format!("{FILE} in the stack repository is not a stack this build reads"))?;
    if stack.version != VERSION {
        bail!(
            "{FILE} has version {}; this build reads version {VERSION}: update capabilities on this machine",
            stack.version
        );
    }
    for (ns, source) in &stack.sources {
        capabilities_core::address::Namespace::new(ns)
            .map_err(|e| anyhow::anyhow!("{FILE}: source `{ns}` is not a namespace ({e})"))?;
        if source.package.is_some() == source.transport.is_some() {
            bail!("{FILE}: source `{ns}` must name either a package or a transport");
        }
        if let Some(package) = &source.package
            && !["npm", "pypi"].contains(&package.registry.as_str())
        {
            bail!(
                "{FILE}: source `{ns}` comes from registry `{}`, which this build cannot install",
                package.registry
            );
        }
    }
    for name in stack.skills.keys() {
        crate::skills::front_matter::check_name(name).with_context(|| format!("{FILE}: skill `{name}`"))?;
    }
    for (name, profile) in &stack.profiles {
        if &profile.name != name {
            bail!("{FILE}: profile `{name}` names itself `{}`", profile.name);
        }
        profile.check().map_err(|e| anyhow::anyhow!("{FILE}: profile `{name}`: {e}"))?;
    }
    // What `stack install` added must be part of this stack, so a pulled record never makes
    // `stack uninstall` take away something else.
    for (slug, what) in &stack.installed {
        let present = match what.kind.as_str() {
            "source" => stack.sources.contains_key(&what.name),
            "skill" => stack.skills.contains_key(&what.name),
            _ => false,
        };
        if !present {
            bail!(
                "{FILE}: installed capability `{slug}` names {} `{}`, which the stack does not hold",
                what.kind,
                what.name
            );
        }
    }
    Ok(Some(stack))
}

/// A stored credential value that appears in `bytes`, named `namespace/connection/slot`.
pub fn secret_in(store: &Store, config: &HubConfig, texts: &[&[u8]]) -> Result<Option<String>> {
    let secrets = SecretStore::open(store)?;
    for (record, _, connections) in &config.sources {
        let namespace = record.spec.namespace.as_str();
        for connection in &connections.connections {
            let slots = connection
                .slots
                .iter()
                .map(String::as_str)
                .chain(connection.oauth.as_ref().map(|_| crate::oauth::tokens::SLOT));
            for slot in slots {
                let key = SlotKey { namespace, connection: &connection.name, slot };
                let Ok(Some(value)) = secrets.get(&key) else { continue };
                let mut needles = vec![value.clone()];
                if let Ok(tokens) = capabilities_core::oauth::TokenSet::from_json(&value) {
                    needles = vec![tokens.access_token.clone()];
                    needles.extend(tokens.refresh_token.clone());
                }
                for needle in needles.iter().filter(|n| n.len() >= 6) {
                    if texts.iter().any(|text| contains(text, needle.as_bytes())) {
                        return Ok(Some(format!("{namespace}/{}/{slot}", connection.name)));
                    }
                }
            }
        }
    }
    Ok(None)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Runs `git` with `args` in `dir`, never prompting; its stdout, or an error with its stderr.
pub fn git<I, S>(dir: Option<&Path>, args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    command
        .args(&args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let out = match command.output() {
        Ok(out) => out,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            bail!("stacks use the system `git`, which is not on PATH: install git (`apt-get install git`)")
        }
        Err(err) => return Err(err).context("running git"),
    };
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        bail!("`git {shown}` failed: {}", said.trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `git` answers in `dir` with status 0, without an error for a non-zero one.
pub fn git_ok<I, S>(dir: &Path, args: I) -> bool
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The remote branch's commit, fetched; `None` when the repository has no such branch yet.
pub fn fetch(dir: &Path, branch: &str) -> Result<Option<String>> {
    let listed = git(Some(dir), ["ls-remote", "--heads", "origin", branch])?;
    if listed.is_empty() {
        return Ok(None);
    }
    git(
        Some(dir),
        ["fetch", "--quiet", "origin", &format!("+refs/heads/{branch}:refs/remotes/origin/{branch}")],
    )?;
    Ok(Some(git(Some(dir), ["rev-parse", &format!("refs/remotes/origin/{branch}")])?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_store_and_home_travel_as_variables() {
        let a = Places { hub: "/home/al/.capabilities/hub".into(), home: Some("/home/al".into()) };
        let b = Places { hub: "/srv/hub".into(), home: Some("/home/bob".into()) };
        let path = "MEMORY=/home/al/.capabilities/hub/state/memory/m.jsonl";
        let portable = a.portable(path);
        assert_eq!(portable, "MEMORY=${CAPABILITIES_HOME}/state/memory/m.jsonl");
        assert_eq!(b.local(&portable), "MEMORY=/srv/hub/state/memory/m.jsonl");
        assert_eq!(a.portable("/home/al/notes"), "${HOME}/notes");
        assert_eq!(b.local("${HOME}/notes"), "/home/bob/notes");
        // Only whole components: another person's home is not this one's.
        assert_eq!(a.portable("/home/alice/x"), "/home/alice/x");
        assert_eq!(a.portable("/home/al"), "${HOME}");
        assert_eq!(a.portable("/opt/tool"), "/opt/tool");
    }
}
