//! Harness descriptors: where each agent harness keeps its MCP servers, as data over a closed
//! vocabulary (config path, file format, the key path holding servers, read/write support,
//! tier), plus reading their entries ([`read`]), editing their files ([`edit`]) and the backups
//! that make `capabilities rollback` exact ([`backup`]).

pub mod backup;
pub mod edit;
pub mod read;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// How a harness file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// JSON; comments are tolerated when reading, and a file with comments is not rewritten.
    Json,
    Toml,
    Yaml,
}

/// What the hub may do with a harness file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Support {
    /// `import` reads it and `connect` writes the `capabilities` entry into it.
    ReadWrite,
    /// `import` reads it; `connect` prints what to add by hand.
    ReadOnly,
}

/// How well the hub knows a harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Tier {
    /// Checked against the harness's own CLI in the tests.
    Verified,
    /// Follows the harness's documented file format.
    Documented,
    /// A best effort from community documentation.
    BestEffort,
}

/// Where the harness keeps project-scoped servers inside the same file: a map of project paths
/// under `projects_key`, each holding servers under `servers_key`.
#[derive(Debug, Clone, Copy)]
pub struct ProjectScopes {
    pub projects_key: &'static str,
    pub servers_key: &'static str,
}

/// One harness, as data.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    /// The name used on the command line (`--from codex`, `--client cursor`).
    pub id: &'static str,
    pub name: &'static str,
    /// The config file, relative to `$HOME`.
    pub config: &'static str,
    pub format: Format,
    /// The key path holding the user-scope servers (`["mcpServers"]`, `["mcp_servers"]`).
    pub servers_key: &'static [&'static str],
    pub projects: Option<ProjectScopes>,
    pub support: Support,
    pub tier: Tier,
    /// Where the harness keeps skills, relative to `$HOME` (each `<dir>/*/SKILL.md`).
    pub skills: &'static [&'static str],
}

/// The key under which `connect --replace` parks the direct entries it turned off in JSON
/// files, beside the servers key. Harnesses ignore keys they do not know; TOML entries are
/// turned off with `enabled = false` instead, which Codex honours.
pub const PARKED_KEY: &str = "capabilitiesDisabledMcpServers";

/// The name of the hub's own entry in every harness.
pub const ENTRY_NAME: &str = "capabilities";

/// Every harness the hub knows.
pub const HARNESSES: &[Descriptor] = &[
    Descriptor {
        id: "claude-code",
        name: "Claude Code",
        config: ".claude.json",
        format: Format::Json,
        servers_key: &["mcpServers"],
        projects: Some(ProjectScopes { projects_key: "projects", servers_key: "mcpServers" }),
        support: Support::ReadWrite,
        tier: Tier::Verified,
        skills: &[".claude/skills"],
    },
    Descriptor {
        id: "codex",
        name: "Codex",
        config: ".codex/config.toml",
        format: Format::Toml,
        servers_key: &["mcp_servers"],
        projects: None,
        support: Support::ReadWrite,
        tier: Tier::Verified,
        skills: &[".codex/skills"],
    },
    Descriptor {
        id: "cursor",
        name: "Cursor",
        config: ".cursor/mcp.json",
        format: Format::Json,
        servers_key: &["mcpServers"],
        projects: None,
        support: Support::ReadWrite,
        tier: Tier::Documented,
        skills: &[".cursor/skills"],
    },
    Descriptor {
        id: "claude-desktop",
        name: "Claude Desktop",
        config: if cfg!(target_os = "macos") {
            "Library/Application Support/Claude/claude_desktop_config.json"
        } else {
            ".config/Claude/claude_desktop_config.json"
        },
        format: Format::Json,
        servers_key: &["mcpServers"],
        projects: None,
        support: Support::ReadWrite,
        tier: Tier::Documented,
        skills: &[],
    },
    Descriptor {
        id: "antigravity",
        name: "Antigravity",
        config: ".gemini/antigravity/mcp_config.json",
        format: Format::Json,
        servers_key: &["mcpServers"],
        projects: None,
        support: Support::ReadOnly,
        tier: Tier::BestEffort,
        skills: &[".gemini/antigravity/skills"],
    },
    Descriptor {
        id: "hermes",
        name: "Hermes",
        config: ".hermes/config.yaml",
        format: Format::Yaml,
        servers_key: &["mcp_servers"],
        projects: None,
        support: Support::ReadOnly,
        tier: Tier::Documented,
        skills: &[".hermes/skills"],
    },
    Descriptor {
        id: "pi",
        name: "pi",
        config: ".pi/agent/mcp.json",
        format: Format::Json,
        servers_key: &["mcpServers"],
        projects: None,
        support: Support::ReadOnly,
        tier: Tier::BestEffort,
        skills: &[".pi/agent/skills"],
    },
];

/// The harness named `id`, or a usage error listing the known ones.
pub fn find(id: &str) -> Result<&'static Descriptor, crate::error::UsageError> {
    HARNESSES.iter().find(|h| h.id == id).ok_or_else(|| {
        let known: Vec<&str> = HARNESSES.iter().map(|h| h.id).collect();
        crate::error::UsageError(format!("unknown harness `{id}`; known: {}", known.join(", ")))
    })
}

/// The harnesses named, or every one when `ids` is empty.
pub fn select(ids: &[String]) -> Result<Vec<&'static Descriptor>> {
    if ids.is_empty() {
        return Ok(HARNESSES.iter().collect());
    }
    let mut chosen: Vec<&'static Descriptor> = Vec::new();
    for id in ids {
        let found = find(id)?;
        if !chosen.iter().any(|h| h.id == found.id) {
            chosen.push(found);
        }
    }
    Ok(chosen)
}

/// `$HOME`, read from the environment so tests can point it elsewhere.
pub fn home_dir() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(std::env::home_dir)
        .context("no home directory: set HOME to find the harnesses' configs")
}

impl Descriptor {
    pub fn config_path(&self, home: &Path) -> PathBuf {
        home.join(self.config)
    }

    pub fn writable(&self) -> bool {
        self.support == Support::ReadWrite
    }

    /// Whether the harness looks installed: its config file or the directory holding it exists.
    pub fn present(&self, home: &Path) -> bool {
        let path = self.config_path(home);
        path.exists() || path.parent().is_some_and(|dir| dir != home && dir.is_dir())
    }

    /// The skills found for this harness (`<dir>/*/SKILL.md`).
    pub fn count_skills(&self, home: &Path) -> usize {
        self.skills
            .iter()
            .flat_map(|dir| std::fs::read_dir(home.join(dir)).into_iter().flatten().flatten())
            .filter(|entry| entry.path().join("SKILL.md").is_file())
            .count()
    }
}
