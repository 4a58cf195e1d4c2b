//! Every harness beyond the two checked with their own CLIs (in `harness`), against files
//! written in the shape its documentation gives (the descriptor rows in
//! `local/src/harness/mod.rs` cite where): `hub import` reads each one, `hub connect --replace`
//! writes the `capabilities` entry in the harness's own shape, turns the imported entry off the
//! harness's way and takes the plaintext credential the keychain now holds out of it, keeping
//! comments and unrelated keys; `capabilities rollback` gives every file its bytes back. Then
//! bad input: a file that is not JSON or YAML, a read-only file, a symlinked config. Gemini CLI,
//! which runs offline, is also checked with its own `gemini mcp add` and `gemini mcp list`
//! (pinned in node/package.json).
//!
//! Needs Node.js and `cd node && npm ci` at the repository root (the memory server is every
//! imported source); fails (never skips) without.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use expect_test::expect;
use serde_json::Value;

use crate::support::packages;

struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn ok(ran: &Ran) -> &Ran {
    assert_eq!(ran.code, 0, "stdout:\n{}\nstderr:\n{}", ran.stdout, ran.stderr);
    ran
}

fn memory_server() -> PathBuf {
    packages().join("server-memory/dist/index.js")
}

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

    fn run(&self, args: &[&str]) -> Ran {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(args)
            .env("HOME", self.home())
            .env("CAPABILITIES_HOME", self.hub())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .current_dir(self.home())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_capabilities")).unwrap();
        let clean = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .replace(bin.to_str().unwrap(), "$BIN")
                .replace(memory_server().to_str().unwrap(), "$MEMORY")
                .replace(self.home().to_str().unwrap(), "$HOME")
                .replace(self.hub().to_str().unwrap(), "$HUB")
        };
        Ran { code: out.status.code().unwrap_or(-1), stdout: clean(&out.stdout), stderr: clean(&out.stderr) }
    }

    /// Where each harness keeps its user file here, as `connect --list` says.
    fn paths(&self) -> BTreeMap<String, PathBuf> {
        let listed: Value =
            serde_json::from_str(&ok(&self.run(&["hub", "connect", "--list", "--json"])).stdout).unwrap();
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let path = row["path"].as_str().unwrap().replace("$HOME", self.home().to_str().unwrap());
                (row["harness"].as_str().unwrap().to_owned(), PathBuf::from(path))
            })
            .collect()
    }

    fn write(&self, path: &std::path::Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// One harness file in its documented shape: a memory server entry with a plaintext
/// `API_TOKEN`, among keys and comments of the harness's own. `@ARGS@` is the entry's
/// `"args"`-style list after the command, `@ENV@` its variables.
struct Fixture {
    harness: &'static str,
    text: &'static str,
    /// Text that must survive `connect` (a comment, an unrelated key).
    keeps: &'static str,
}

const FIXTURES: &[Fixture] = &[
    Fixture {
        harness: "gemini-cli",
        text: r#"{
  "ui": { "theme": "GitHub" },
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@, "timeout": 30000, "trust": false }
  }
}
"#,
        keeps: r#""ui": { "theme": "GitHub" },"#,
    },
    Fixture {
        harness: "qwen-code",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@ }
  },
  "model": { "name": "qwen3-coder-plus" }
}
"#,
        keeps: r#""model": { "name": "qwen3-coder-plus" }"#,
    },
    Fixture {
        harness: "opencode",
        text: r#"{
  "$schema": "https://opencode.ai/config.json",
  // servers I use everywhere
  "mcp": {
    "memory": {
      "type": "local",
      "command": @LINE@,
      "environment": @ENV@,
      "enabled": true,
    },
  },
}
"#,
        keeps: "// servers I use everywhere",
    },
    Fixture {
        harness: "kilo",
        text: r#"{
  "$schema": "https://app.kilo.ai/config.json",
  /* kilo's own */
  "mcp": {
    "memory": { "type": "local", "command": @LINE@, "environment": @ENV@ },
  },
}
"#,
        keeps: "/* kilo's own */",
    },
    Fixture {
        harness: "kilo-code-legacy",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@, "alwaysAllow": ["read_graph"], "disabled": false }
  }
}
"#,
        keeps: r#""alwaysAllow": ["read_graph"]"#,
    },
    Fixture {
        harness: "copilot-cli",
        text: r#"{
  "mcpServers": {
    "memory": { "type": "local", "command": "node", "args": @ARGS@, "env": @ENV@, "tools": ["*"] }
  }
}
"#,
        keeps: r#""mcpServers": {"#,
    },
    Fixture {
        harness: "vscode",
        text: r#"{
  // VS Code's user mcp.json
  "inputs": [
    { "type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true }
  ],
  "servers": {
    "memory": { "type": "stdio", "command": "node", "args": @ARGS@, "env": @ENV@ }
  }
}
"#,
        keeps: r#"{ "type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true }"#,
    },
    Fixture {
        harness: "cline",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@, "disabled": false, "autoApprove": [] }
  }
}
"#,
        keeps: r#""autoApprove": []"#,
    },
    Fixture {
        harness: "cline-vscode",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@, "disabled": false, "autoApprove": [] }
  }
}
"#,
        keeps: r#""autoApprove": []"#,
    },
    Fixture {
        harness: "roo-code",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@, "alwaysAllow": [], "disabled": false }
  }
}
"#,
        keeps: r#""alwaysAllow": []"#,
    },
    Fixture {
        harness: "windsurf",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "disabled": false, "env": @ENV@ }
  }
}
"#,
        keeps: r#""mcpServers": {"#,
    },
    Fixture {
        harness: "zed",
        text: r#"// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{
  "theme": { "mode": "system", "light": "One Light", "dark": "One Dark" },
  "buffer_font_size": 15,
  "context_servers": {
    "memory": {
      "source": "custom",
      "command": "node",
      "args": @ARGS@,
      "env": @ENV@,
    },
  },
}
"#,
        keeps: "// For information on how to configure Zed, see the Zed documentation.",
    },
    Fixture {
        harness: "amp",
        text: r#"{
  "amp.showCosts": false,
  "amp.mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@ }
  }
}
"#,
        keeps: r#""amp.showCosts": false,"#,
    },
    Fixture {
        harness: "crush",
        text: r#"{
  "$schema": "https://charm.land/crush.json",
  "lsp": { "go": { "command": "gopls" } },
  "mcp": {
    "memory": { "type": "stdio", "command": "node", "args": @ARGS@, "env": @ENV@, "timeout": 120 }
  }
}
"#,
        keeps: r#""lsp": { "go": { "command": "gopls" } },"#,
    },
    Fixture {
        harness: "augment",
        text: r#"{
  "model": "sonnet4.5",
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@ }
  }
}
"#,
        keeps: r#""model": "sonnet4.5","#,
    },
    Fixture {
        harness: "factory-droid",
        text: r#"{
  "mcpServers": {
    "memory": { "type": "stdio", "command": "node", "args": @ARGS@, "env": @ENV@, "disabled": false }
  }
}
"#,
        keeps: r#""mcpServers": {"#,
    },
    Fixture {
        harness: "lm-studio",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@ }
  }
}
"#,
        keeps: r#""mcpServers": {"#,
    },
    Fixture {
        harness: "kiro",
        text: r#"{
  "mcpServers": {
    "memory": { "command": "node", "args": @ARGS@, "env": @ENV@, "disabled": false, "autoApprove": [], "disabledTools": [] }
  }
}
"#,
        keeps: r#""disabledTools": []"#,
    },
    Fixture {
        harness: "hermes",
        text: r#"# Hermes agent settings
model: hermes-4   # the default
mcp_servers:
  memory:
    command: node
    args: @ARGS@
    env: @ENV@
    timeout: 120
"#,
        keeps: "model: hermes-4   # the default",
    },
    Fixture {
        harness: "goose",
        text: r#"# goose settings
GOOSE_PROVIDER: anthropic
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  memory:
    enabled: true
    name: memory
    type: stdio
    cmd: node
    args: @ARGS@
    envs: @ENV@
    timeout: 300
"#,
        keeps: "GOOSE_PROVIDER: anthropic",
    },
    Fixture {
        harness: "continue",
        text: r#"name: My Config
version: 0.0.1
schema: v1
mcpServers:
  - name: memory
    command: node
    args: @ARGS@
    env: @ENV@
"#,
        keeps: "name: My Config",
    },
];

/// The secret each fixture's entry carries in plain text.
fn token(harness: &str) -> String {
    format!("sk-live-{harness}-0123456789abcdef")
}

impl Fixture {
    fn render(&self, machine: &Machine) -> String {
        let memory = memory_server();
        let memory = memory.to_str().unwrap();
        let args = serde_json::json!([memory, format!("--{}", self.harness)]).to_string();
        let line = serde_json::json!(["node", memory, format!("--{}", self.harness)]).to_string();
        let data = machine.dir.path().join(format!("memory-{}.jsonl", self.harness));
        let env = serde_json::json!({"MEMORY_FILE_PATH": data, "API_TOKEN": token(self.harness)}).to_string();
        self.text.replace("@ARGS@", &args).replace("@LINE@", &line).replace("@ENV@", &env)
    }
}

#[test]
fn every_documented_harness_is_imported_connected_with_its_secret_taken_out_and_rolled_back() {
    let machine = Machine::new();
    let paths = machine.paths();
    let mut before = BTreeMap::new();
    for fixture in FIXTURES {
        let path = &paths[fixture.harness];
        let text = fixture.render(&machine);
        machine.write(path, &text);
        before.insert(fixture.harness, text);
    }
    let ids: Vec<&str> = FIXTURES.iter().map(|f| f.harness).collect();
    let from = ids.join(",");

    let imported = machine.run(&["hub", "import", "--yes", "--from", &from]);
    ok(&imported);
    let read: Vec<&str> = imported.stdout.lines().filter(|l| l.starts_with("read ")).collect();
    expect![[r#"
        [
            "read gemini-cli: 1 server",
            "read qwen-code: 1 server",
            "read opencode: 1 server",
            "read kilo: 1 server",
            "read kilo-code-legacy: 1 server",
            "read copilot-cli: 1 server",
            "read vscode: 1 server",
            "read cline: 1 server",
            "read cline-vscode: 1 server",
            "read roo-code: 1 server",
            "read windsurf: 1 server",
            "read zed: 1 server",
            "read amp: 1 server",
            "read crush: 1 server",
            "read augment: 1 server",
            "read factory-droid: 1 server",
            "read lm-studio: 1 server",
            "read kiro: 1 server",
            "read hermes: 1 server",
            "read goose: 2 servers",
            "read continue: 1 server",
        ]
    "#]]
    .assert_debug_eq(&read);
    for fixture in FIXTURES {
        assert!(
            imported.stdout.contains(&format!("$MEMORY --{}\n", fixture.harness)),
            "{} was not proposed:\n{}",
            fixture.harness,
            imported.stdout
        );
    }
    assert!(
        imported.stdout.contains("skipped goose (user) developer: a `builtin` extension"),
        "{}",
        imported.stdout
    );
    assert_eq!(imported.stdout.matches(" with 9 tools").count(), FIXTURES.len(), "{}", imported.stdout);
    let last = imported.stderr.lines().last().unwrap_or_default();
    assert!(last.contains("`capabilities hub connect --replace`"), "{}", imported.stderr);
    assert!(last.contains("take the credentials now in the keychain out of their files"), "{last}");
    let kept = std::fs::read_to_string(machine.hub().join("secrets.json")).unwrap();
    for fixture in FIXTURES {
        assert!(
            kept.contains(&token(fixture.harness)),
            "{}'s token is in the hub's secret store",
            fixture.harness
        );
        assert_eq!(std::fs::read_to_string(&paths[fixture.harness]).unwrap(), before[fixture.harness]);
    }

    let connected = machine.run(&["hub", "connect", "--replace", "--client", &from]);
    ok(&connected);
    // Every entry runs the hub's link to the binary, which survives its upgrades (`install.rs`).
    let bin = machine.hub().join("bin/capabilities");
    let bin = bin.to_str().unwrap();
    let mut shapes = Vec::new();
    for fixture in FIXTURES {
        let text = std::fs::read_to_string(&paths[fixture.harness]).unwrap();
        assert!(text.contains(fixture.keeps), "{}: lost {:?}:\n{text}", fixture.harness, fixture.keeps);
        assert!(!text.contains("sk-live-"), "{} still holds the token:\n{text}", fixture.harness);
        let yaml = matches!(fixture.harness, "hermes" | "goose" | "continue");
        let doc: Value = if yaml { serde_norway::from_str(&text).unwrap() } else { jsonc(&text) };
        let key = servers_key(fixture.harness);
        // Continue lists its servers, each with its `name`; the others key them by name.
        let named = |servers: &Value, name: &str| match servers {
            Value::Array(items) => items.iter().find(|i| i["name"] == name).cloned(),
            other => other.get(name).cloned(),
        };
        let ours = named(&doc[key], "capabilities").unwrap_or_default();
        let command = ours.get("command").or_else(|| ours.get("cmd")).cloned().unwrap_or_default();
        let command = command.as_array().map_or(command.clone(), |line| line[0].clone());
        assert_eq!(command, bin, "{}: {ours}", fixture.harness);
        let memory =
            named(&doc[key], "memory").or_else(|| named(&doc["capabilitiesDisabledMcpServers"], "memory"));
        let memory =
            memory.unwrap_or_else(|| panic!("{}: the memory entry is gone:\n{text}", fixture.harness));
        let env = ["env", "environment", "envs"].iter().find_map(|k| memory.get(*k)).unwrap();
        assert!(
            env.get("API_TOKEN").is_none() && env.get("MEMORY_FILE_PATH").is_some(),
            "{}: {env}",
            fixture.harness
        );
        let off = if named(&doc[key], "memory").is_some() {
            let flag = ["disabled", "enabled"].into_iter().find(|f| memory.get(*f).is_some()).unwrap();
            format!("{flag}={}", memory[flag])
        } else {
            "moved".to_owned()
        };
        let mut ours: Vec<&String> = ours.as_object().unwrap().keys().collect();
        ours.sort();
        shapes.push(format!("{}: {ours:?}, memory {off}", fixture.harness));
    }
    expect![[r#"
        [
            "gemini-cli: [\"args\", \"command\", \"env\"], memory moved",
            "qwen-code: [\"args\", \"command\", \"env\"], memory moved",
            "opencode: [\"command\", \"enabled\", \"environment\", \"type\"], memory enabled=false",
            "kilo: [\"command\", \"enabled\", \"environment\", \"type\"], memory enabled=false",
            "kilo-code-legacy: [\"args\", \"command\", \"env\"], memory disabled=true",
            "copilot-cli: [\"args\", \"command\", \"env\", \"tools\", \"type\"], memory moved",
            "vscode: [\"args\", \"command\", \"env\", \"type\"], memory moved",
            "cline: [\"args\", \"command\", \"env\"], memory disabled=true",
            "cline-vscode: [\"args\", \"command\", \"env\"], memory disabled=true",
            "roo-code: [\"args\", \"command\", \"env\"], memory disabled=true",
            "windsurf: [\"args\", \"command\", \"env\"], memory disabled=true",
            "zed: [\"args\", \"command\", \"env\", \"source\"], memory enabled=false",
            "amp: [\"args\", \"command\", \"env\"], memory disabled=true",
            "crush: [\"args\", \"command\", \"env\", \"type\"], memory disabled=true",
            "augment: [\"args\", \"command\", \"env\"], memory moved",
            "factory-droid: [\"args\", \"command\", \"env\", \"type\"], memory disabled=true",
            "lm-studio: [\"args\", \"command\", \"env\"], memory moved",
            "kiro: [\"args\", \"command\", \"env\"], memory disabled=true",
            "hermes: [\"args\", \"command\", \"env\"], memory enabled=false",
            "goose: [\"args\", \"cmd\", \"enabled\", \"envs\", \"name\", \"timeout\", \"type\"], memory enabled=false",
            "continue: [\"args\", \"command\", \"env\", \"name\"], memory moved",
        ]
    "#]]
    .assert_debug_eq(&shapes);
    assert!(connected.stdout.contains("took out the credentials the keychain holds now: memory (API_TOKEN)"));

    // Connected again, nothing changes.
    let again = ok(&machine.run(&["hub", "connect", "--client", &from])).stdout.clone();
    assert!(!again.contains("connected "), "{again}");
    let listed = ok(&machine.run(&["hub", "connect", "--list", "--client", "zed,goose"])).stdout.clone();
    expect![[r#"
        zed               found     connected: $HOME/.config/zed/settings.json (json, connect writes it)
        goose             found     connected: $HOME/.config/goose/config.yaml (yaml, connect writes it)
    "#]]
    .assert_eq(&listed);

    let rolled = machine.run(&["rollback"]);
    ok(&rolled);
    for fixture in FIXTURES {
        let now = std::fs::read_to_string(&paths[fixture.harness]).unwrap();
        assert_eq!(now, before[fixture.harness], "rollback restores {} byte for byte", fixture.harness);
    }
}

/// The key holding the servers, for the checks above.
fn servers_key(harness: &str) -> &'static str {
    match harness {
        "opencode" | "kilo" | "crush" => "mcp",
        "vscode" => "servers",
        "zed" => "context_servers",
        "amp" => "amp.mcpServers",
        "hermes" => "mcp_servers",
        "goose" => "extensions",
        _ => "mcpServers",
    }
}

/// JSON with comments and trailing commas, read by the test without the hub's code.
fn jsonc(text: &str) -> Value {
    let mut plain = String::new();
    let mut in_string = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            plain.push(c);
            if c == '\\' {
                plain.extend(chars.next());
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            plain.push(c);
        } else if c == '/' && chars.peek() == Some(&'/') {
            for next in chars.by_ref() {
                if next == '\n' {
                    break;
                }
            }
        } else if c == '/' && chars.peek() == Some(&'*') {
            let mut last = ' ';
            for next in chars.by_ref() {
                if last == '*' && next == '/' {
                    break;
                }
                last = next;
            }
        } else {
            plain.push(c);
        }
    }
    // Trailing commas: a comma followed only by whitespace before `}` or `]`.
    let mut out = String::new();
    let bytes: Vec<char> = plain.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        if *c == ','
            && bytes[i + 1..].iter().find(|c| !c.is_whitespace()).is_some_and(|n| *n == '}' || *n == ']')
        {
            continue;
        }
        out.push(*c);
    }
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("{err}:\n{out}"))
}

#[test]
fn a_cursor_token_leaves_the_harness_file_with_connect_replace_and_rollback_brings_it_back() {
    let machine = Machine::new();
    let path = machine.home().join(".cursor/mcp.json");
    let data = machine.dir.path().join("memory.jsonl");
    let text = format!(
        "{{\n  \"mcpServers\": {{\n    \"memory\": {{\n      \"command\": \"node\",\n      \"args\": [{:?}],\n      \"env\": {{ \"API_TOKEN\": \"sk-live-0123456789abcdef\", \"MEMORY_FILE_PATH\": {:?} }}\n    }}\n  }}\n}}\n",
        memory_server().to_str().unwrap(),
        data.to_str().unwrap()
    );
    machine.write(&path, &text);
    let imported = machine.run(&["hub", "init", "--import", "--yes"]);
    ok(&imported);
    assert!(imported.stdout.contains("credentials in plain text: API_TOKEN"), "{}", imported.stdout);
    let last = imported.stderr.lines().last().unwrap_or_default();
    assert!(last.contains("run `capabilities hub connect --replace` to point them at the hub"), "{last}");

    let connected = machine.run(&["hub", "connect", "--replace", "--client", "cursor"]);
    ok(&connected);
    expect![[r#"
        connected cursor: $HOME/.cursor/mcp.json
          wrote the `capabilities` entry; turned off memory; took out the credentials the keychain holds now: memory (API_TOKEN); the backup is the only other copy
        backed up the files it changed under $HUB/backups/<set>; undo with `capabilities rollback`
    "#]]
    .assert_eq(&without_set(&connected.stdout));
    let now = std::fs::read_to_string(&path).unwrap();
    assert!(!now.contains("sk-live-"), "{now}");
    let doc: Value = serde_json::from_str(&now).unwrap();
    let parked = &doc["capabilitiesDisabledMcpServers"]["memory"];
    assert_eq!(
        parked["env"],
        serde_json::json!({"MEMORY_FILE_PATH": data}),
        "the entry stays, its secret does not"
    );
    assert!(doc["mcpServers"].get("memory").is_none());
    // The backup under the hub is the only other copy, readable by its owner only.
    let backups = machine.hub().join("backups");
    let set = std::fs::read_dir(&backups).unwrap().next().unwrap().unwrap().path();
    let copy = set.join("files/0");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), text);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);

    ok(&machine.run(&["rollback"]));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "rollback restores the file byte for byte");
}

fn without_set(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        match line.find("/backups/") {
            Some(at) => {
                let rest = &line[at + "/backups/".len()..];
                let end = rest.find(';').unwrap_or(rest.len());
                out.push_str(&format!("{}/backups/<set>{}\n", &line[..at], &rest[end..]));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn bad_harness_files_are_named_and_never_clobbered() {
    let machine = Machine::new();
    let paths = machine.paths();
    let memory = memory_server();
    let entry = format!(
        "{{ \"command\": \"node\", \"args\": [{:?}], \"env\": {{ \"MEMORY_FILE_PATH\": {:?} }} }}",
        memory.to_str().unwrap(),
        machine.dir.path().join("m.jsonl").to_str().unwrap()
    );
    // Not JSON, not YAML.
    let broken_vscode = "{ \"servers\": { \"memory\": ";
    machine.write(&paths["vscode"], broken_vscode);
    let broken_goose = "extensions:\n  memory: [unclosed\n";
    machine.write(&paths["goose"], broken_goose);
    // A read-only file.
    let crush = format!("{{ \"mcp\": {{ \"memory\": {entry} }} }}\n");
    machine.write(&paths["crush"], &crush);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&paths["crush"], std::fs::Permissions::from_mode(0o444)).unwrap();
    // A symlinked config, as dotfiles managers leave them.
    let dotfiles = machine.dir.path().join("dotfiles/zed-settings.json");
    let zed = format!("// mine\n{{ \"context_servers\": {{ \"memory\": {entry} }}, }}\n");
    machine.write(&dotfiles, &zed);
    std::fs::create_dir_all(paths["zed"].parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&dotfiles, &paths["zed"]).unwrap();

    let imported = machine.run(&["hub", "import", "--yes", "--from", "vscode,goose,crush,zed"]);
    ok(&imported);
    let problems: Vec<&str> = imported.stdout.lines().filter(|l| l.starts_with("problem:")).collect();
    expect![[r#"
        [
            "problem: $HOME/.config/Code/User/mcp.json (VS Code (Copilot)) could not be read; fix it and try again: not valid JSON: Expected value after colon in object property on line 1 column 26",
            "problem: $HOME/.config/goose/config.yaml (Goose) could not be read; fix it and try again: not valid YAML: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 11",
        ]
    "#]]
    .assert_debug_eq(&problems);
    assert!(imported.stdout.contains("added `memory` with 9 tools"), "{}", imported.stdout);

    let connected = machine.run(&["hub", "connect", "--replace", "--client", "vscode,crush,zed"]);
    assert_eq!(connected.code, 1, "{}", connected.stdout);
    let lines: Vec<&str> = connected.stdout.lines().filter(|l| !l.starts_with("backed up")).collect();
    expect![[r#"
        [
            "failed vscode: $HOME/.config/Code/User/mcp.json",
            "  $HOME/.config/Code/User/mcp.json could not be read; fix it, or add the entry by hand: not valid JSON: Expected value after colon in object property on line 1 column 26",
            "failed crush: $HOME/.config/crush/crush.json",
            "  $HOME/.config/crush/crush.json is read-only; make it writable (`chmod u+w`) to connect, or add the entry by hand",
            "connected zed: $HOME/.config/zed/settings.json",
            "  wrote the `capabilities` entry; turned off memory",
        ]
    "#]]
    .assert_debug_eq(&lines);
    assert_eq!(std::fs::read_to_string(&paths["vscode"]).unwrap(), broken_vscode);
    assert_eq!(std::fs::read_to_string(&paths["crush"]).unwrap(), crush);
    assert!(
        std::fs::symlink_metadata(&paths["zed"]).unwrap().file_type().is_symlink(),
        "the link stays a link"
    );
    let through = std::fs::read_to_string(&dotfiles).unwrap();
    assert!(through.starts_with("// mine\n") && through.contains("\"capabilities\""), "{through}");

    ok(&machine.run(&["rollback"]));
    assert_eq!(std::fs::read_to_string(&dotfiles).unwrap(), zed, "rollback restores the link's target");
    assert!(std::fs::symlink_metadata(&paths["zed"]).unwrap().file_type().is_symlink());
}

/// Gemini CLI's own CLI (pinned in node/package.json) from node/node_modules/.bin.
fn gemini(machine: &Machine, args: &[&str]) -> Ran {
    let path = crate::support::repo().join("node/node_modules/.bin/gemini");
    assert!(path.exists(), "{} is missing: run `cd node && npm ci` at the repository root", path.display());
    let out = Command::new(path)
        .args(args)
        .env("HOME", machine.home())
        .env_remove("CAPABILITIES_HOME")
        .current_dir(machine.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // It prints its listing to stderr or stdout depending on the version: read both.
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: text.replace(machine.home().to_str().unwrap(), "$HOME"),
        stderr: String::new(),
    }
}

#[test]
fn gemini_clis_own_listing_connects_to_the_hub_after_connect_replace() {
    let machine = Machine::new();
    // Gemini CLI starts project and user servers only in folders the person trusts.
    let trusted = serde_json::json!({ machine.home().to_str().unwrap(): "TRUST_FOLDER" });
    machine.write(&machine.home().join(".gemini/trustedFolders.json"), &trusted.to_string());
    let memory = memory_server();
    let data = format!("MEMORY_FILE_PATH={}", machine.dir.path().join("memory.jsonl").display());
    ok(&gemini(
        &machine,
        &["mcp", "add", "-s", "user", "-e", &data, "memory", "node", memory.to_str().unwrap()],
    ));
    let settings = machine.home().join(".gemini/settings.json");
    let before = std::fs::read_to_string(&settings).unwrap();
    let listed = ok(&gemini(&machine, &["mcp", "list"])).stdout.clone();
    assert!(listed.lines().any(|l| l.contains("memory:") && l.contains("Connected")), "{listed}");

    let imported = machine.run(&["hub", "import", "--yes", "--from", "gemini-cli"]);
    ok(&imported);
    assert!(imported.stdout.contains("from gemini-cli (user) memory"), "{}", imported.stdout);
    ok(&machine.run(&["hub", "connect", "--replace", "--client", "gemini-cli"]));
    let listed = ok(&gemini(&machine, &["mcp", "list"])).stdout.clone();
    assert!(listed.lines().any(|l| l.contains("capabilities:") && l.contains("Connected")), "{listed}");
    assert!(!listed.contains("memory:"), "the direct entry is parked, and Gemini CLI ignores it: {listed}");

    ok(&machine.run(&["rollback"]));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        before,
        "rollback restores the file byte for byte"
    );
}

#[test]
fn hostile_yaml_is_refused_with_a_reason_and_left_untouched() {
    let machine = Machine::new();
    let paths = machine.paths();
    let bomb =
        (1..9).fold("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n".to_owned(), |text, n| {
            let prev = format!("*a{}", n - 1);
            format!("{text}a{n}: &a{n} [{}]\n", [prev.as_str(); 9].join(", "))
        });
    let huge = format!("# {}\nmcp_servers: {{}}\n", "x".repeat(17 * 1024 * 1024));
    let cases: Vec<(&str, String, &str)> = vec![
        ("an alias bomb", bomb, "repetition limit exceeded"),
        ("duplicate keys", "mcp_servers:\n  a: {command: x}\nmcp_servers: {}\n".into(), "duplicate entry"),
        ("tabs", "mcp_servers:\n\tmemory:\n\t\tcommand: x\n".into(), "cannot start any token"),
        ("a list at the top", "- mcp_servers\n".into(), "top level is not a mapping"),
        (
            "an anchor other keys alias",
            "mcp_servers: &s\n  a: {command: x}\ncopy: *s\n".into(),
            "anchor or alias",
        ),
        ("a huge file", huge, "too large to rewrite safely"),
    ];
    for (what, text, says) in cases {
        machine.write(&paths["hermes"], &text);
        let ran = machine.run(&["hub", "connect", "--client", "hermes"]);
        assert_eq!(ran.code, 1, "{what}: {}", ran.stdout);
        assert!(ran.stdout.contains("failed hermes: $HOME/.hermes/config.yaml"), "{what}: {}", ran.stdout);
        assert!(ran.stdout.contains(says), "{what}: {}", ran.stdout);
        assert!(std::fs::read_to_string(&paths["hermes"]).unwrap() == text, "{what}: the file is untouched");
    }
}
