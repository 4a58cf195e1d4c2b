//! Harness descriptors: where each agent harness keeps its MCP servers, as data over a closed
//! vocabulary (config path, file format, the key path holding servers, read/write support,
//! tier), plus reading their entries ([`read`]), editing their files ([`edit`]) and the backups
//! that make `capabilities rollback` exact ([`backup`]), skill folders the hub places included
//! ([`skill_files`]).

pub mod backup;
pub mod edit;
pub mod edit_yaml;
pub mod read;
pub mod skill_files;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// How a harness file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// JSON, or JSONC (comments and trailing commas): read and edited in place, comments,
    /// layout and unrelated keys kept.
    Json,
    Toml,
    /// YAML: read with `serde_norway`, edited in place with `yaml-edit` (comments, quoting and
    /// the other entries' layout kept).
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

/// How a harness spells a stdio server entry, for the entry the hub writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shape {
    /// `command`, `args`, `env` (Cursor's notation, which most harnesses follow).
    Plain,
    /// The same with `"type": <value>` first (`stdio` for VS Code, Claude Code, Crush).
    Typed(&'static str),
    /// GitHub Copilot CLI: `"type": "local"` and `"tools": ["*"]` (every tool offered).
    Copilot,
    /// OpenCode and Kilo: `"type": "local"`, the whole command line as one list in `command`,
    /// `environment` for the variables, `"enabled": true`.
    CommandList,
    /// Zed: `"source": "custom"` beside `command`, `args`, `env`.
    Zed,
    /// Goose: `cmd`, `args`, `envs`, `"type": "stdio"`, `name`, `enabled`, `timeout`.
    Goose,
    /// Continue: the servers are a list, each entry carrying its `name`.
    NamedList,
}

/// How `connect --replace` turns off a direct entry the hub imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Park {
    /// Move it under [`PARKED_KEY`] beside the servers (for harnesses without an off switch).
    Move,
    /// Set this flag in the entry (`enabled` to `false`, `disabled` to `true`), as the harness's
    /// own switch does.
    Flag(&'static str, bool),
}

/// How `connect` places the hub's skills in a harness's skill folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillsAs {
    /// A copy of the skill's files (the safe default: nothing depends on the harness following
    /// links).
    Copy,
    /// A symlink to the hub's own copy under `skills/<name>/` in the store, for harnesses whose
    /// own CLI was seen reading linked skill folders.
    Link,
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
    /// The user-scope config file, relative to `$HOME`.
    pub config: &'static str,
    /// The project-scope config file, relative to a project's root (`import` reads it in the
    /// current directory; `connect` writes the user file only).
    pub project: Option<&'static str>,
    pub format: Format,
    /// The key path holding the user-scope servers (`["mcpServers"]`, `["mcp_servers"]`).
    pub servers_key: &'static [&'static str],
    pub projects: Option<ProjectScopes>,
    pub support: Support,
    pub tier: Tier,
    pub shape: Shape,
    pub park: Park,
    /// What shows the harness is installed, relative to `$HOME`; the config file's directory
    /// when `None` (set where that directory belongs to another harness too).
    pub detect: Option<&'static str>,
    /// The harness's own command that lists its servers, if it has one.
    pub lists: Option<&'static str>,
    /// Where the harness keeps skills, relative to `$HOME` (each `<dir>/*/SKILL.md`). `connect`
    /// places the hub's skills in the first, and in none when another holds one of that name.
    pub skills: &'static [&'static str],
    /// Where it reads a project's own skills, relative to the project folder; `hub import`
    /// proposes those of the folder it runs in (connect places skills only at user level).
    pub project_skills: &'static [&'static str],
    /// How `connect` places skills there.
    pub skills_as: SkillsAs,
}

/// The key under which `connect --replace` parks the direct entries it turned off in JSON
/// files without an off switch ([`Park::Move`]), beside the servers key. Harnesses ignore keys
/// they do not know.
pub const PARKED_KEY: &str = "capabilitiesDisabledMcpServers";

/// The name of the hub's own entry in every harness.
pub const ENTRY_NAME: &str = "capabilities";

/// A path under VS Code's user directory (where its extensions keep their global storage).
macro_rules! vscode_user {
    ($rest:literal) => {
        if cfg!(target_os = "macos") {
            concat!("Library/Application Support/Code/User/", $rest)
        } else {
            concat!(".config/Code/User/", $rest)
        }
    };
}

/// The fields most rows share; each row names what differs.
const BASE: Descriptor = Descriptor {
    id: "",
    name: "",
    config: "",
    project: None,
    format: Format::Json,
    servers_key: &["mcpServers"],
    projects: None,
    support: Support::ReadWrite,
    tier: Tier::Documented,
    shape: Shape::Plain,
    park: Park::Move,
    detect: None,
    lists: None,
    skills: &[],
    project_skills: &[],
    skills_as: SkillsAs::Copy,
};

/// Every harness the hub knows. Each row cites where its format comes from.
pub const HARNESSES: &[Descriptor] = &[
    // Claude Code's own CLI (`claude mcp add -s user|local`, `claude mcp list`), pinned in
    // node/package.json; `.mcp.json` is its project scope (code.claude.com/docs/en/mcp).
    Descriptor {
        id: "claude-code",
        name: "Claude Code",
        config: ".claude.json",
        project: Some(".mcp.json"),
        projects: Some(ProjectScopes { projects_key: "projects", servers_key: "mcpServers" }),
        tier: Tier::Verified,
        shape: Shape::Typed("stdio"),
        lists: Some("claude mcp list"),
        // Its debug log (`claude --debug-file`) counts a linked skill folder as a user skill.
        skills: &[".claude/skills"],
        project_skills: &[".claude/skills"],
        skills_as: SkillsAs::Link,
        ..BASE
    },
    // Codex's own CLI (`codex mcp add`, `codex mcp list --json`), pinned in node/package.json;
    // `enabled = false` is its off switch (developers.openai.com/codex/mcp).
    Descriptor {
        id: "codex",
        name: "Codex",
        config: ".codex/config.toml",
        format: Format::Toml,
        servers_key: &["mcp_servers"],
        tier: Tier::Verified,
        park: Park::Flag("enabled", false),
        lists: Some("codex mcp list"),
        // Skills: `~/.agents/skills`, and the older `~/.codex/skills` it still reads.
        skills: &[".agents/skills", ".codex/skills"],
        project_skills: &[".agents/skills"],
        ..BASE
    },
    // docs.cursor.com/context/model-context-protocol: `~/.cursor/mcp.json`, project
    // `.cursor/mcp.json`, `mcpServers` with `command`/`args`/`env` or `url`/`headers`.
    Descriptor {
        id: "cursor",
        name: "Cursor",
        config: ".cursor/mcp.json",
        project: Some(".cursor/mcp.json"),
        skills: &[".cursor/skills"],
        project_skills: &[".cursor/skills"],
        ..BASE
    },
    // modelcontextprotocol.io/quickstart/user: `claude_desktop_config.json`, `mcpServers`.
    Descriptor {
        id: "claude-desktop",
        name: "Claude Desktop",
        config: if cfg!(target_os = "macos") {
            "Library/Application Support/Claude/claude_desktop_config.json"
        } else {
            ".config/Claude/claude_desktop_config.json"
        },
        ..BASE
    },
    // Community notes only (antigravity.google has no file reference yet); `serverUrl` for HTTP.
    Descriptor {
        id: "antigravity",
        name: "Antigravity",
        config: ".gemini/antigravity/mcp_config.json",
        support: Support::ReadOnly,
        tier: Tier::BestEffort,
        skills: &[".gemini/antigravity/skills"],
        project_skills: &[".agent/skills"],
        ..BASE
    },
    // hermes-agent.nousresearch.com/docs (user-guide/features/mcp, reference/mcp-config-reference):
    // `~/.hermes/config.yaml`, `mcp_servers` keyed by name with `command`/`args`/`env` or
    // `url`/`headers`, `timeout`, and `enabled: false` to skip one.
    Descriptor {
        id: "hermes",
        name: "Hermes",
        config: ".hermes/config.yaml",
        format: Format::Yaml,
        servers_key: &["mcp_servers"],
        park: Park::Flag("enabled", false),
        skills: &[".hermes/skills"],
        ..BASE
    },
    // pi's MCP adapter README: `~/.pi/agent/mcp.json`, `command` as a string or a list.
    Descriptor {
        id: "pi",
        name: "pi",
        config: ".pi/agent/mcp.json",
        support: Support::ReadOnly,
        tier: Tier::BestEffort,
        skills: &[".pi/agent/skills"],
        project_skills: &[".pi/skills"],
        ..BASE
    },
    // google-gemini/gemini-cli docs/tools/mcp-server.md and docs/cli/configuration.md:
    // `~/.gemini/settings.json`, project `.gemini/settings.json`, `mcpServers` with
    // `command`/`args`/`env`/`cwd`, `httpUrl` for streamable HTTP, `url` for SSE, `headers`.
    // `~/.gemini/` also holds Antigravity's folder, so only the settings file shows it. Its own
    // CLI (`gemini mcp add|list`, pinned in node/package.json) checks what connect writes.
    Descriptor {
        id: "gemini-cli",
        name: "Gemini CLI",
        config: ".gemini/settings.json",
        project: Some(".gemini/settings.json"),
        tier: Tier::Verified,
        detect: Some(".gemini/settings.json"),
        lists: Some("gemini mcp list"),
        skills: &[".gemini/skills"],
        project_skills: &[".gemini/skills"],
        ..BASE
    },
    // QwenLM/qwen-code docs/tools/mcp-server.md (a Gemini CLI fork, the same settings shape):
    // `~/.qwen/settings.json`, project `.qwen/settings.json`.
    Descriptor {
        id: "qwen-code",
        name: "Qwen Code",
        config: ".qwen/settings.json",
        project: Some(".qwen/settings.json"),
        lists: Some("qwen mcp list"),
        tier: Tier::Verified,
        ..BASE
    },
    // opencode.ai/docs/mcp-servers and opencode.ai/docs/config: `~/.config/opencode/opencode.json`
    // (JSONC allowed), project `opencode.json`, servers under `mcp`, `"type": "local"` with the
    // command line as one list and `environment`, or `"type": "remote"` with `url`/`headers`;
    // `"enabled": false` turns one off. Its schema refuses unknown keys, so nothing is parked
    // beside the servers.
    Descriptor {
        id: "opencode",
        name: "OpenCode",
        config: ".config/opencode/opencode.json",
        project: Some("opencode.json"),
        servers_key: &["mcp"],
        shape: Shape::CommandList,
        park: Park::Flag("enabled", false),
        lists: Some("opencode mcp list"),
        skills: &[".config/opencode/skills"],
        project_skills: &[".opencode/skills"],
        tier: Tier::Verified,
        ..BASE
    },
    // Kilo-Org/kilocode packages/kilo-docs/pages/automate/mcp/using-in-kilo-code.md: the Kilo CLI
    // and extension keep servers in `~/.config/kilo/kilo.jsonc` (project `kilo.jsonc`) under
    // `mcp`, in OpenCode's shape.
    Descriptor {
        id: "kilo",
        name: "Kilo Code",
        config: ".config/kilo/kilo.jsonc",
        project: Some("kilo.jsonc"),
        servers_key: &["mcp"],
        shape: Shape::CommandList,
        park: Park::Flag("enabled", false),
        lists: Some("kilo mcp list"),
        tier: Tier::Verified,
        ..BASE
    },
    // kilo.ai/docs/features/mcp/using-mcp-in-kilo-code (the extension before it moved to
    // kilo.jsonc): `mcp_settings.json` in VS Code's global storage, project `.kilocode/mcp.json`,
    // `mcpServers` with `disabled`, `type: "streamable-http"` for HTTP.
    Descriptor {
        id: "kilo-code-legacy",
        name: "Kilo Code (VS Code extension, mcp_settings.json)",
        config: vscode_user!("globalStorage/kilocode.kilo-code/settings/mcp_settings.json"),
        project: Some(".kilocode/mcp.json"),
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers:
    // `~/.copilot/mcp-config.json`, `mcpServers`, `"type": "local"` (or `stdio`) with
    // `command`/`args`/`env` and `"tools": ["*"]`, `"type": "http"` with `url`/`headers`.
    Descriptor {
        id: "copilot-cli",
        name: "GitHub Copilot CLI",
        config: ".copilot/mcp-config.json",
        shape: Shape::Copilot,
        skills: &[".copilot/skills"],
        project_skills: &[".github/skills"],
        tier: Tier::Verified,
        ..BASE
    },
    // code.visualstudio.com/docs/copilot/reference/mcp-configuration: `mcp.json` in the user
    // profile (JSONC), project `.vscode/mcp.json`, servers under `servers` with
    // `"type": "stdio"` or `"type": "http"`, `inputs` beside them.
    Descriptor {
        id: "vscode",
        name: "VS Code (Copilot)",
        config: vscode_user!("mcp.json"),
        project: Some(".vscode/mcp.json"),
        servers_key: &["servers"],
        shape: Shape::Typed("stdio"),
        ..BASE
    },
    // docs.cline.bot/mcp/configuring-mcp-servers: the CLI's
    // `~/.cline/data/settings/cline_mcp_settings.json`, `mcpServers` with `disabled`,
    // `autoApprove`, `"type": "streamableHttp"` with `url` for HTTP. npm `cline` 3.0.65 writes
    // entries nested under `transport` and reads the flat ones too (its `@cline/core` loader,
    // which the tests drive: the CLI itself has no `mcp list`).
    Descriptor {
        id: "cline",
        name: "Cline CLI",
        config: ".cline/data/settings/cline_mcp_settings.json",
        tier: Tier::Verified,
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // The same docs: the VS Code extension keeps the same file in its global storage.
    Descriptor {
        id: "cline-vscode",
        name: "Cline (VS Code extension)",
        config: vscode_user!("globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // docs.roocode.com/features/mcp/using-mcp-in-roo: global `mcp_settings.json` in VS Code's
    // global storage, project `.roo/mcp.json`, `mcpServers` with `disabled`, `alwaysAllow`,
    // `"type": "streamable-http"` with `url`/`headers` for HTTP.
    Descriptor {
        id: "roo-code",
        name: "Roo Code",
        config: vscode_user!("globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
        project: Some(".roo/mcp.json"),
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // docs.windsurf.com/windsurf/cascade/mcp: `~/.codeium/windsurf/mcp_config.json`,
    // `mcpServers`, `serverUrl` for remote servers, `disabled`.
    Descriptor {
        id: "windsurf",
        name: "Windsurf",
        config: ".codeium/windsurf/mcp_config.json",
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // zed.dev/docs/ai/mcp: `~/.config/zed/settings.json` (JSONC, with everything else Zed keeps),
    // project `.zed/settings.json`, servers under `context_servers` with `command`/`args`/`env`
    // or `url`/`headers`, `"enabled": false` to turn one off.
    Descriptor {
        id: "zed",
        name: "Zed",
        config: ".config/zed/settings.json",
        project: Some(".zed/settings.json"),
        servers_key: &["context_servers"],
        shape: Shape::Zed,
        park: Park::Flag("enabled", false),
        ..BASE
    },
    // block.github.io/goose/docs/guides/config-files (no npm CLI; fixtures only):
    // `~/.config/goose/config.yaml`,
    // `extensions` keyed by name, each with `type` (`stdio`, `streamable_http`, `builtin`),
    // `cmd`/`args`/`envs` or `uri`, `enabled`.
    Descriptor {
        id: "goose",
        name: "Goose",
        config: ".config/goose/config.yaml",
        format: Format::Yaml,
        servers_key: &["extensions"],
        shape: Shape::Goose,
        park: Park::Flag("enabled", false),
        ..BASE
    },
    // ampcode.com/manual (MCP): `~/.config/amp/settings.json`, project `.amp/settings.json`,
    // servers under the one key `amp.mcpServers` with `command`/`args`/`env` or `url`/`headers`,
    // `disabled`.
    Descriptor {
        id: "amp",
        name: "Amp",
        config: ".config/amp/settings.json",
        project: Some(".amp/settings.json"),
        servers_key: &["amp.mcpServers"],
        park: Park::Flag("disabled", true),
        lists: Some("amp mcp list"),
        tier: Tier::Verified,
        ..BASE
    },
    // charmbracelet/crush README (MCPs) and its schema charm.land/crush.json:
    // `~/.config/crush/crush.json`, project `crush.json` or `.crush.json`, servers under `mcp`
    // with `"type": "stdio"` (`command`/`args`/`env`) or `http`/`sse` (`url`/`headers`),
    // `disabled`.
    Descriptor {
        id: "crush",
        name: "Crush",
        config: ".config/crush/crush.json",
        project: Some("crush.json"),
        servers_key: &["mcp"],
        shape: Shape::Typed("stdio"),
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // docs.continue.dev/customize/deep-dives/mcp and the config.yaml reference:
    // `~/.continue/config.yaml`, `mcpServers` as a list of entries with `name`, `command`/`args`/
    // `env`, or `type: streamable-http` with `url`. It has no off switch: `--replace` moves an
    // entry to a list under PARKED_KEY, which its CLI (`cn`, npm `@continuedev/cli`) ignores.
    Descriptor {
        id: "continue",
        name: "Continue",
        config: ".continue/config.yaml",
        format: Format::Yaml,
        shape: Shape::NamedList,
        tier: Tier::Verified,
        ..BASE
    },
    // docs.augmentcode.com/cli/integrations and the Auggie CLI 0.5.4 notes: servers in
    // `~/.augment/settings.json` under `mcpServers` (`auggie mcp add|list|remove`).
    Descriptor {
        id: "augment",
        name: "Augment (Auggie CLI)",
        config: ".augment/settings.json",
        tier: Tier::Verified,
        lists: Some("auggie mcp list"),
        ..BASE
    },
    // docs.factory.ai/cli/configuration/mcp: `~/.factory/mcp.json`, project `.factory/mcp.json`,
    // `mcpServers` with `"type": "stdio"` or `"http"`, `disabled`. Its own CLI (`droid mcp
    // add|list`, npm `@factory/cli` pinned in node/package.json) writes and health-checks that.
    Descriptor {
        id: "factory-droid",
        name: "Factory Droid",
        config: ".factory/mcp.json",
        project: Some(".factory/mcp.json"),
        tier: Tier::Verified,
        lists: Some("droid mcp list"),
        shape: Shape::Typed("stdio"),
        park: Park::Flag("disabled", true),
        ..BASE
    },
    // lmstudio.ai/docs/app/mcp: `~/.lmstudio/mcp.json`, "Cursor's mcp.json notation".
    Descriptor { id: "lm-studio", name: "LM Studio", config: ".lmstudio/mcp.json", ..BASE },
    // kiro.dev/docs/mcp/configuration: `~/.kiro/settings/mcp.json`, project
    // `.kiro/settings/mcp.json`, `mcpServers` with `disabled`, `autoApprove`, `url` for remote.
    Descriptor {
        id: "kiro",
        name: "Kiro",
        config: ".kiro/settings/mcp.json",
        project: Some(".kiro/settings/mcp.json"),
        park: Park::Flag("disabled", true),
        ..BASE
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

    /// Whether the harness looks installed: its config file exists, or what `detect` names, or
    /// else the directory holding the config.
    pub fn present(&self, home: &Path) -> bool {
        let path = self.config_path(home);
        if path.exists() {
            return true;
        }
        match self.detect {
            Some(detect) => home.join(detect).exists(),
            None => path.parent().is_some_and(|dir| dir != home && dir.is_dir()),
        }
    }

    /// The project-scope config under `dir`, when the harness has one and it is not the user
    /// file itself (a project at `$HOME`).
    pub fn project_path(&self, dir: &Path, home: &Path) -> Option<PathBuf> {
        let path = dir.join(self.project?);
        let user = self.config_path(home);
        let same =
            path == user || matches!((path.canonicalize(), user.canonicalize()), (Ok(a), Ok(b)) if a == b);
        (!same && path.is_file()).then_some(path)
    }

    /// The skill folders found for this harness (`<dir>/*/SKILL.md`) under `home`, and under
    /// `project` when given (its project-level folders), each with where it was found as a
    /// person reads it (`~/.claude/skills`, `./.claude/skills`), sorted; a link that leads
    /// nowhere (or in a loop) is listed too, for the importer to report.
    pub fn skill_folders(&self, home: &Path, project: Option<&Path>) -> Vec<(String, PathBuf)> {
        let mut found = Vec::new();
        let user = self.skills.iter().map(|dir| (format!("~/{dir}"), home.join(dir)));
        let project = project
            .filter(|p| *p != home)
            .into_iter()
            .flat_map(|p| self.project_skills.iter().map(move |dir| (format!("./{dir}"), p.join(dir))));
        for (label, dir) in user.chain(project) {
            let mut entries: Vec<PathBuf> =
                std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
            entries.sort();
            for path in entries {
                if path.join("SKILL.md").is_file() || std::fs::metadata(&path).is_err() {
                    found.push((label.clone(), path));
                }
            }
        }
        found
    }
}
