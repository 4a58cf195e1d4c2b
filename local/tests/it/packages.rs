//! Verified installs and isolated stdio servers, for real: the memory server installed from the
//! registry with its signatures checked; a local package served by a tiny registry on loopback
//! whose `postinstall` must not run, then tampered with; a version that does not exist; and,
//! inside bubblewrap, a server that cannot read `~/.ssh` or reach a loopback listener unless
//! granted the network, and one that tries to escape (writes outside its directory, fills
//! `/tmp`, allocates far past its memory limit, forks hundreds of processes, detaches
//! children) and is refused or contained while the hub keeps serving. Needs `npm`, `node`,
//! `bwrap` (`apt-get install bubblewrap`), and as root `setpriv` (util-linux).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::support::repo;

/// A hub in a temporary directory with a home of its own (`HOME`), an npm cache of its own
/// and, when given, a registry.
struct Hub {
    dir: tempfile::TempDir,
    registry: Option<String>,
    /// `PATH` for the hub, when not the test's.
    path: Option<PathBuf>,
    /// The uid the hub runs as (through `setpriv`), when not the test's.
    user: Option<u32>,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Hub {
    fn new() -> Hub {
        for tool in ["npm", "node", "bwrap"] {
            let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap();
            assert!(
                found.status.success(),
                "`{tool}` is not on PATH: install it (bubblewrap: `apt-get install bubblewrap`)"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.ssh")).unwrap();
        std::fs::write(dir.path().join("home/.ssh/id_test"), "PRIVATE KEY").unwrap();
        Hub { dir, registry: None, path: None, user: None }
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `capabilities hub <args>` as this hub runs it.
    fn command(&self, args: &[&str]) -> Command {
        let binary = env!("CARGO_BIN_EXE_capabilities");
        let mut command = match self.user {
            Some(uid) => {
                let mut command = Command::new("setpriv");
                command.arg(format!("--reuid={uid}")).arg(format!("--regid={uid}")).args([
                    "--clear-groups",
                    "--",
                    binary,
                ]);
                command
            }
            None => Command::new(binary),
        };
        command
            .arg("hub")
            .args(args)
            .env("CAPABILITIES_HOME", self.store())
            .env("HOME", self.home())
            .env("npm_config_cache", self.dir.path().join("npm-cache"))
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        if let Some(registry) = &self.registry {
            command.env("npm_config_registry", registry);
        }
        if let Some(path) = &self.path {
            command.env("PATH", path);
        }
        command
    }

    fn run(&self, args: &[&str]) -> Ran {
        let Output { status, stdout, stderr } = self.command(args).output().unwrap();
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    fn exec(&self, code: &str) -> Value {
        let ran = self.run(&["--json", "exec", code]);
        assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
        let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
        envelope["result"].clone()
    }

    fn lock(&self) -> Value {
        let text = std::fs::read_to_string(self.store().join("packages.lock.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// What `packages/npm/` holds, partial installs included.
    fn installed(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.store().join("packages/npm"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// The signature check as this registry allows it: verified where the registry publishes
/// keys, else said to be unavailable (the mirror these tests run against publishes none:
/// `/-/npm/v1/keys` is 404, packuments carry no `dist.signatures`, and npm cannot reach the
/// sigstore TUF repository).
fn assert_checked(check: &Value) {
    let status = check["status"].as_str().unwrap();
    let detail = check["detail"].as_str().unwrap();
    assert!(
        status == "verified" || (status == "unavailable" && detail.contains("npm could not verify anything")),
        "{check}"
    );
}

#[test]
fn the_memory_server_installs_verified_and_runs_isolated_with_receipts() {
    let hub = Hub::new();
    let state = hub.store().join("state/memory");
    let memory = format!("MEMORY_FILE_PATH={}", state.join("memory.jsonl").display());
    let added =
        hub.run(&["add", "npm:@modelcontextprotocol/server-memory@2026.8.31", "--env", &memory, "--yes"]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    assert_eq!(
        added.stdout,
        "added `memory` (npm @modelcontextprotocol/server-memory@2026.8.31) with 9 tools\n"
    );
    assert!(added.stderr.contains("with install scripts off"), "{}", added.stderr);
    assert!(added.stderr.contains("isolated (bubblewrap)"), "{}", added.stderr);

    let lock = hub.lock();
    let locked = &lock["packages"]["memory"];
    assert_eq!(locked["name"], "@modelcontextprotocol/server-memory");
    assert_eq!(locked["version"], "2026.8.31");
    assert_eq!(
        locked["integrity"],
        "sha512-ljj/3S4aGjxdNSQWw6gucKKGnTLdBPWxzapyY/MT2tOVyZwvxChvevXSLPwx59nKJAlVpUVW+cOlnVRXRwiqMQ=="
    );
    assert_eq!(locked["bin"], "node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    assert_checked(&locked["signatures"]);
    assert_eq!(hub.installed(), ["@modelcontextprotocol+server-memory@2026.8.31"]);

    let source: Value =
        serde_json::from_str(&std::fs::read_to_string(hub.store().join("sources/memory.json")).unwrap())
            .unwrap();
    let transport = &source["spec"]["transport"];
    assert!(transport["args"][0].as_str().unwrap().starts_with(hub.store().to_str().unwrap()));
    assert_eq!(transport["isolation"]["state"], state.to_str().unwrap());
    assert_eq!(transport["isolation"].get("net"), None);

    let code = r#"await memory.createEntities({entities:[{name:"a",entityType:"t",observations:["x"]}]}); return (await memory.readGraph({})).entities.length"#;
    let paused = hub.run(&["exec", code]);
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    let start = paused.stdout.find("run_").unwrap();
    let id: String =
        paused.stdout[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let approved = hub.run(&["--json", "approve", &id, "--choice", "once"]);
    assert_eq!(approved.code, 0, "{}{}", approved.stdout, approved.stderr);
    // The server wrote into its own state directory, the only place it can.
    assert!(std::fs::read_to_string(state.join("memory.jsonl")).unwrap().contains(r#""name":"a""#));

    let shown = hub.run(&["runs", "show", &id, "--receipts"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("receipts:"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("source    npm:@modelcontextprotocol/server-memory@2026.8.31 sha512-ljj/"),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("allowed once by a person"), "{}", shown.stdout);
    let json = hub.run(&["--json", "runs", "show", &id, "--receipts"]);
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    let receipts = value["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 2, "{value}");
    for receipt in receipts {
        assert_eq!(receipt["source"]["kind"], "package");
        assert_eq!(receipt["status"], "ok");
        assert!(receipt["input"].as_str().unwrap().starts_with("sha256:"));
        assert!(receipt["output"].as_str().unwrap().starts_with("sha256:"));
        assert!(receipt["contract"].as_str().is_some_and(|c| !c.is_empty()), "{receipt}");
        assert!(receipt["ms"].is_u64());
    }
    assert_eq!(receipts[1]["decision"], "by policy, no person asked");

    let doctor = hub.run(&["doctor"]);
    assert!(doctor.stdout.contains("isolated (bubblewrap)"), "{}{}", doctor.stdout, doctor.stderr);

    let refreshed = hub.run(&["refresh", "memory"]);
    assert_eq!(refreshed.code, 0, "{}{}", refreshed.stdout, refreshed.stderr);
    assert!(
        refreshed
            .stdout
            .contains("memory: npm:@modelcontextprotocol/server-memory@2026.8.31 is the latest version")
            || refreshed.stdout.contains("is available (locked at 2026.8.31); nothing was upgraded"),
        "{}",
        refreshed.stdout
    );
}

#[test]
fn a_version_that_does_not_exist_is_refused_and_nothing_is_installed() {
    let hub = Hub::new();
    let added = hub.run(&["add", "npm:@modelcontextprotocol/server-memory@0.0.0-nope", "--yes"]);
    assert_eq!(added.code, 1, "{}{}", added.stdout, added.stderr);
    assert!(added.stderr.contains("No match found for version 0.0.0-nope"), "{}", added.stderr);
    assert!(hub.installed().is_empty());
    assert!(!hub.store().join("sources/memory.json").exists());

    let pypi = hub.run(&["add", "pypi:mcp-server-time==0.0.0", "--yes"]);
    assert_eq!(pypi.code, 1, "{}", pypi.stderr);
    assert!(
        pypi.stderr.contains("pip cannot resolve `mcp-server-time==0.0.0` from wheels"),
        "{}",
        pypi.stderr
    );
    let range = hub.run(&["add", "pypi:mcp-server-time>=1", "--yes"]);
    assert_eq!(range.code, 2, "{}", range.stderr);
    assert!(range.stderr.contains("give one exact version or none"), "{}", range.stderr);
    assert!(
        !hub.store().join("packages/pypi").exists()
            || std::fs::read_dir(hub.store().join("packages/pypi")).unwrap().next().is_none()
    );
}

#[test]
fn the_filesystem_server_reads_only_the_folder_it_was_granted_and_a_hand_edited_lock_is_named() {
    let hub = Hub::new();
    let notes = hub.dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "buy milk").unwrap();
    let granted = notes.to_str().unwrap().to_owned();
    let added = hub.run(&[
        "add",
        "npm:@modelcontextprotocol/server-filesystem@2026.8.31",
        "--namespace",
        "files",
        "--read",
        &granted,
        "--yes",
        "--",
        &granted,
    ]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    assert_eq!(hub.lock()["packages"]["files"]["version"], "2026.8.31");
    // The folder after `--` is the server's own argument; bound read-only, it is all it reads.
    let read = hub.exec(&format!("return await files.readTextFile({{path: {:?}}})", notes.join("todo.txt")));
    assert!(read.to_string().contains("buy milk"), "{read}");
    let ssh = hub.home().join(".ssh/id_test");
    let refused = hub.exec(&format!(
        "try {{ return await files.readTextFile({{path: {ssh:?}}}) }} catch (e) {{ return 'refused: ' + e.message }}"
    ));
    assert!(refused.to_string().contains("refused"), "{refused}");

    // A lock file edited by hand: doctor names the mismatch and what to do.
    let path = hub.store().join("packages.lock.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"version\": \"2026.8.31\"", "\"version\": \"2026.9.9\"");
    std::fs::write(&path, text).unwrap();
    let doctor = hub.run(&["doctor"]);
    assert!(
        doctor.stdout.contains("the lock pins npm:@modelcontextprotocol/server-filesystem@2026.9.9"),
        "{}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains("add `npm:@modelcontextprotocol/server-filesystem@2026.9.9` again"),
        "{}",
        doctor.stdout
    );

    // A package that is not an MCP server: refused, nothing left.
    let pad = hub.run(&["add", "npm:left-pad@1.3.0", "--yes"]);
    assert_eq!(pad.code, 1, "{}{}", pad.stdout, pad.stderr);
    assert!(pad.stderr.contains("not a stdio MCP server package"), "{}", pad.stderr);
    assert!(!hub.installed().iter().any(|n| n.starts_with("left-pad")), "{:?}", hub.installed());
    assert!(!hub.store().join("sources/left_pad.json").exists());
}

/// What `packages/pypi/` holds, partial installs included.
fn installed_pypi(hub: &Hub) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(hub.store().join("packages/pypi"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_pypi_server_installs_from_wheels_with_every_hash_pinned_and_runs_isolated() {
    let hub = Hub::new();
    let python = Command::new("python3").args(["-m", "pip", "--version"]).output();
    assert!(python.is_ok_and(|o| o.status.success()), "python3 with pip is needed: install python3-pip");
    let added = hub.run(&["add", "pypi:mcp-server-time==2026.10.19", "--yes"]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    assert_eq!(added.stdout, "added `time` (PyPI mcp-server-time==2026.10.19) with 2 tools\n");
    assert!(added.stderr.contains("from wheels only: no build or install code runs"), "{}", added.stderr);
    assert!(added.stderr.contains("isolated (bubblewrap)"), "{}", added.stderr);
    let locked = &hub.lock()["packages"]["time"];
    assert_eq!(locked["registry"], "pypi");
    assert_eq!(locked["version"], "2026.10.19");
    assert_eq!(
        locked["integrity"],
        "sha256:5c099a001c6ca78260bda419f2e9b2aabee1adc4fe6ca56d8959871ad8da58a1"
    );
    assert_eq!(locked["bin"], "mcp_server_time:main");
    assert_eq!(locked["signatures"]["status"], "unavailable");
    assert_eq!(installed_pypi(&hub), ["mcp-server-time@2026.10.19"]);
    // Every wheel it installed is pinned by its sha256.
    let pins = std::fs::read_to_string(
        hub.store().join("packages/pypi/mcp-server-time@2026.10.19/requirements.lock.txt"),
    )
    .unwrap();
    assert!(pins.lines().count() > 5, "{pins}");
    assert!(pins.lines().all(|l| l.contains("==") && l.contains(" --hash=sha256:")), "{pins}");
    let result = hub.exec(r#"return (await time.getCurrentTime({timezone: "UTC"})).timezone"#);
    assert_eq!(result, "UTC");
    let doctor = hub.run(&["doctor"]);
    assert!(!doctor.stdout.contains("not 600") && !doctor.stdout.contains("not 700"), "{}", doctor.stdout);
    assert!(!doctor.stdout.contains("the lock pins"), "{}", doctor.stdout);
    let refreshed = hub.run(&["refresh", "time"]);
    assert!(
        refreshed.stdout.contains("time: pypi:mcp-server-time@2026.10.19 is the latest version")
            || refreshed.stdout.contains("is available (locked at 2026.10.19); nothing was upgraded"),
        "{}{}",
        refreshed.stdout,
        refreshed.stderr
    );

    // A wheel with no console script is not a server: refused, nothing left.
    let six = hub.run(&["add", "pypi:six==1.17.0", "--yes"]);
    assert_eq!(six.code, 1, "{}{}", six.stdout, six.stderr);
    assert!(six.stderr.contains("not a stdio MCP server package"), "{}", six.stderr);
    assert_eq!(installed_pypi(&hub), ["mcp-server-time@2026.10.19"]);
    assert!(!hub.store().join("sources/six.json").exists());
}

/// `marker-server@1.0.0`, packed from the fixture with a `postinstall` that writes `marker`.
struct Tarball {
    bytes: Vec<u8>,
    integrity: String,
}

fn pack(dir: &Path, marker: &Path) -> Tarball {
    let package = dir.join("marker-server");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::copy(repo().join("local/tests/fixtures/marker-server/server.js"), package.join("server.js"))
        .unwrap();
    let script = format!("node -e \"require('fs').writeFileSync('{}', 'ran')\"", marker.display());
    let manifest = serde_json::json!({
        "name": "marker-server",
        "version": "1.0.0",
        "bin": { "marker-server": "server.js" },
        "scripts": { "postinstall": script },
    });
    std::fs::write(package.join("package.json"), manifest.to_string()).unwrap();
    let out = Command::new("npm")
        .args(["pack", "--json", "--pack-destination"])
        .arg(dir)
        .current_dir(&package)
        .env("npm_config_cache", dir.join("npm-cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let packed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = dir.join(packed[0]["filename"].as_str().unwrap());
    Tarball {
        bytes: std::fs::read(file).unwrap(),
        integrity: packed[0]["integrity"].as_str().unwrap().to_owned(),
    }
}

/// A registry on loopback serving one package: its packument (with `integrity`) and the bytes
/// of `tarball`. Every other path is 404. Lives as long as the test.
fn serve_registry(tarball: Vec<u8>, integrity: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    let packument = serde_json::json!({
        "name": "marker-server",
        "dist-tags": { "latest": "1.0.0" },
        "versions": { "1.0.0": {
            "name": "marker-server",
            "version": "1.0.0",
            "bin": { "marker-server": "server.js" },
            "scripts": { "postinstall": "node -e 1" },
            "dist": { "integrity": integrity, "tarball": format!("{base}marker-server/-/marker-server-1.0.0.tgz") },
        } },
    })
    .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                    break;
                }
            }
            let path = request.split(' ').nth(1).unwrap_or("");
            let (status, body, kind): (&str, Vec<u8>, &str) = match path {
                "/marker-server" => ("200 OK", packument.clone().into_bytes(), "application/json"),
                "/marker-server/-/marker-server-1.0.0.tgz" => {
                    ("200 OK", tarball.clone(), "application/octet-stream")
                }
                _ => ("404 Not Found", b"{}".to_vec(), "application/json"),
            };
            let mut stream = stream;
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
            let _ = reader.read(&mut [0u8; 0]);
        }
    });
    base
}

#[test]
fn install_scripts_never_run_and_the_isolated_server_keeps_to_its_box() {
    let mut hub = Hub::new();
    let marker = hub.dir.path().join("marker");
    let tarball = pack(&hub.dir.path().join("pack"), &marker);
    hub.registry = Some(serve_registry(tarball.bytes, tarball.integrity.clone()));

    let added = hub.run(&["add", "npm:marker-server@1.0.0", "--namespace", "boxed", "--yes"]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    assert!(!marker.exists(), "the postinstall script ran");
    assert_eq!(hub.lock()["packages"]["boxed"]["integrity"], tarball.integrity.as_str());
    let netted = hub.run(&["add", "npm:marker-server@1.0.0", "--namespace", "netted", "--net", "--yes"]);
    assert_eq!(netted.code, 0, "{}{}", netted.stdout, netted.stderr);
    assert!(netted.stderr.contains("network granted"), "{}", netted.stderr);
    let open = hub.run(&["add", "npm:marker-server@1.0.0", "--namespace", "open", "--no-isolate", "--yes"]);
    assert_eq!(open.code, 0, "{}{}", open.stdout, open.stderr);
    assert!(!marker.exists(), "the postinstall script ran");
    assert_eq!(hub.installed(), ["marker-server@1.0.0"]);

    let key = hub.home().join(".ssh/id_test");
    let read =
        |ns: &str| hub.exec(&format!("return await {ns}.readFile({{ path: {:?} }})", key.to_str().unwrap()));
    assert_eq!(read("boxed"), "error: ENOENT");
    assert_eq!(read("netted"), "error: ENOENT");
    assert_eq!(read("open"), "read: PRIVATE KEY");
    let proc = |ns: &str, file: &str| -> String {
        hub.exec(&format!("return await {ns}.readFile({{ path: '/proc/self/{file}' }})"))
            .as_str()
            .unwrap()
            .to_owned()
    };
    let status = proc("boxed", "status");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
    let limits = proc("boxed", "limits");
    let line = |name: &str| limits.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_owned();
    assert!(line("Max open files").split_whitespace().any(|w| w == "4096"), "{limits}");
    assert!(line("Max core file size").split_whitespace().any(|w| w == "0"), "{limits}");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || for _ in listener.incoming() {});
    let connect = |ns: &str| hub.exec(&format!("return await {ns}.connect({{ port: {port} }})"));
    assert_eq!(connect("boxed"), "error: ECONNREFUSED");
    assert_eq!(connect("netted"), "connected");
    assert_eq!(connect("open"), "connected");

    let doctor = hub.run(&["doctor"]);
    assert!(doctor.stdout.contains("unisolated: runs as you"), "{}", doctor.stdout);
}

#[test]
fn a_tampered_tarball_is_refused_and_nothing_is_left_installed() {
    let mut hub = Hub::new();
    let marker = hub.dir.path().join("marker");
    let tarball = pack(&hub.dir.path().join("pack"), &marker);
    let mut tampered = tarball.bytes.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0xff;
    hub.registry = Some(serve_registry(tampered, tarball.integrity));

    let added = hub.run(&["add", "npm:marker-server@1.0.0", "--namespace", "boxed", "--yes"]);
    assert_eq!(added.code, 1, "{}{}", added.stdout, added.stderr);
    assert!(added.stderr.contains("does not match the integrity the registry published"), "{}", added.stderr);
    assert!(hub.installed().is_empty(), "{:?}", hub.installed());
    assert!(!hub.store().join("sources/boxed.json").exists());
    assert!(!marker.exists());
}

#[test]
fn import_offers_an_npx_entry_as_a_verified_isolated_install() {
    let hub = Hub::new();
    let entry = serde_json::json!({ "mcpServers": {
        "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"] },
        "time": { "command": "uvx", "args": ["mcp-server-time@2026.10.19"] },
    } });
    std::fs::write(hub.home().join(".claude.json"), entry.to_string()).unwrap();

    let offered = hub.run(&["import", "--from", "claude-code"]);
    assert_eq!(offered.code, 2, "{}{}", offered.stdout, offered.stderr);
    assert!(
        offered.stdout.contains(
            "`capabilities hub import --verified` installs npm:@modelcontextprotocol/server-memory@2026.8.31 pinned and isolated instead"
        ),
        "{}",
        offered.stdout
    );

    assert!(
        offered.stdout.contains(
            "uvx fetches whatever version the registry serves at each start and runs it as you: \
             `capabilities hub import --verified` installs pypi:mcp-server-time==2026.10.19 pinned and isolated instead"
        ),
        "{}",
        offered.stdout
    );

    let imported = hub.run(&["import", "--from", "claude-code", "--verified", "--yes"]);
    assert_eq!(imported.code, 0, "{}{}", imported.stdout, imported.stderr);
    assert!(imported.stdout.contains("installed verified instead of npx"), "{}", imported.stdout);
    assert!(imported.stdout.contains("added `memory` with 9 tools"), "{}", imported.stdout);
    assert_eq!(hub.lock()["packages"]["memory"]["version"], "2026.8.31");
    let source: Value =
        serde_json::from_str(&std::fs::read_to_string(hub.store().join("sources/memory.json")).unwrap())
            .unwrap();
    assert!(source["spec"]["transport"]["isolation"].is_object(), "{source}");
    assert_ne!(source["spec"]["transport"]["command"], "npx");
    assert!(imported.stdout.contains("installed verified instead of uvx"), "{}", imported.stdout);
    assert!(imported.stdout.contains("added `time` with 2 tools"), "{}", imported.stdout);
    assert_eq!(hub.lock()["packages"]["time"]["registry"], "pypi");
    assert_eq!(hub.exec(r#"return (await time.getCurrentTime({timezone: "UTC"})).timezone"#), "UTC");
}

#[test]
fn without_bubblewrap_an_install_says_how_to_get_it_or_how_to_run_unisolated() {
    let mut hub = Hub::new();
    // A PATH with node and npm but no bwrap.
    let bin = hub.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["node", "npm", "sh"] {
        let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap();
        let path = String::from_utf8(found.stdout).unwrap();
        std::os::unix::fs::symlink(path.trim(), bin.join(tool)).unwrap();
    }
    hub.path = Some(bin);
    let added = hub.run(&["add", "npm:@modelcontextprotocol/server-memory@2026.8.31", "--yes"]);
    assert_eq!(added.code, 1, "{}{}", added.stdout, added.stderr);
    assert!(added.stderr.contains("`apt-get install bubblewrap`"), "{}", added.stderr);
    assert!(added.stderr.contains("`--no-isolate` to run it unisolated on purpose"), "{}", added.stderr);
    assert!(hub.installed().is_empty());
    let command = hub.run(&["add", "--isolate", "--yes", "--", "node", "-e", "1"]);
    assert_eq!(command.code, 1, "{}{}", command.stdout, command.stderr);
    assert!(command.stderr.contains("`apt-get install bubblewrap`"), "{}", command.stderr);
}

/// `escape`: the fixture server that tries to escape, added as an isolated command with its
/// fixture directory granted.
fn add_escape(hub: &Hub) {
    let fixtures = repo().join("local/tests/fixtures");
    let server = fixtures.join("escape-server.js");
    let (fixtures, server) = (fixtures.to_str().unwrap(), server.to_str().unwrap());
    let added = hub.run(&[
        "add",
        "--isolate",
        "--read",
        fixtures,
        "--namespace",
        "escape",
        "--yes",
        "--",
        "node",
        server,
    ]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    assert!(added.stderr.contains("isolated (bubblewrap)"), "{}", added.stderr);
}

/// Runs `calls`, each a line of code inside `attempt(() => ...)` that answers a string: `ok:
/// <value>` or `<error code>: <message>` when the call failed, so one run shows every outcome.
fn attempts(hub: &Hub, calls: &[String]) -> Vec<String> {
    let list: Vec<String> = calls.iter().map(|call| format!("await attempt(() => {call})")).collect();
    let code = format!(
        "const attempt = async (call) => {{ try {{ return 'ok: ' + await call(); }} \
         catch (e) {{ return e.code + ': ' + e.message; }} }};\nreturn [{}];",
        list.join(",\n")
    );
    let result = hub.exec(&code);
    serde_json::from_value(result.clone()).unwrap_or_else(|_| panic!("not a list of strings: {result}"))
}

/// A path as a JavaScript string.
fn js(path: &Path) -> String {
    serde_json::to_string(path.to_str().unwrap()).unwrap()
}

#[test]
fn an_isolated_server_that_writes_out_fills_tmp_or_eats_memory_is_refused_and_the_hub_keeps_serving() {
    let hub = Hub::new();
    add_escape(&hub);
    let state = hub.store().join("state/escape");
    let outside = [
        PathBuf::from("/etc/escape-test"),
        hub.home().join("escape-test"),
        hub.store().join("escape-test"),
        repo().join("local/tests/fixtures/escape-test"),
        PathBuf::from("/dev/escape-test"),
    ];
    let mut calls: Vec<String> =
        outside.iter().map(|path| format!("escape.writeFile({{ path: {} }})", js(path))).collect();
    calls.push(format!("escape.writeFile({{ path: {} }})", js(&hub.dir.path().join("escape-test"))));
    calls.push(format!("escape.writeFile({{ path: {} }})", js(&state.join("escape-test"))));
    calls.push("escape.fill({ dir: '/tmp', max_mib: 1024 })".to_owned());
    calls.push("escape.fill({ dir: '/dev/shm', max_mib: 1024 })".to_owned());
    calls.push("escape.allocate({ max_gib: 16 })".to_owned());
    calls.push("escape.ping({})".to_owned());
    let outcomes = attempts(&hub, &calls);
    let refused = |path: &Path| {
        format!("tool_error: escape.writeFile: EROFS: read-only file system, open '{}'", path.display())
    };
    let mut expected: Vec<String> = outside.iter().map(|path| refused(path)).collect();
    // The test's directory is under the host's /tmp, which the sandbox replaces: the write
    // lands in the sandbox's own /tmp and is gone with it.
    expected.push(format!("ok: wrote {}", hub.dir.path().join("escape-test").display()));
    expected.push(format!("ok: wrote {}", state.join("escape-test").display()));
    expected.extend(
        [
            "tool_error: escape.fill: ENOSPC: no space left on device, write (after 256 MiB)",
            "tool_error: escape.fill: ENOSPC: no space left on device, write (after 64 MiB)",
            "tool_error: escape.allocate: RangeError: Array buffer allocation failed (after 3 GiB)",
            "ok: pong",
        ]
        .map(String::from),
    );
    assert_eq!(outcomes, expected);
    for path in &outside {
        assert!(!path.exists(), "{} was written outside the sandbox", path.display());
    }
    assert!(!hub.dir.path().join("escape-test").exists());
    assert_eq!(std::fs::read_to_string(state.join("escape-test")).unwrap(), "escaped");

    let limits = hub.exec("return await escape.readFile({ path: '/proc/self/limits' })");
    let limits = limits.as_str().unwrap();
    let line = |name: &str| limits.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_owned();
    assert!(line("Max data size").split_whitespace().any(|w| w == "4294967296"), "{limits}");
    assert!(line("Max file size").split_whitespace().any(|w| w == "1073741824"), "{limits}");

    // Another hub, another start of the source: still serving.
    let called = hub.run(&["call", "escape.ping"]);
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    assert!(called.stdout.contains("pong"), "{}", called.stdout);
}

/// The pid namespace of process `pid` (`pid:[inode]`), if it still runs.
fn pid_namespace(pid: &str) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok().map(|p| p.to_string_lossy().into_owned())
}

/// Every process on this machine: its pid, pid namespace and command line.
fn processes() -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let (Some(ns), Ok(cmdline)) = (pid_namespace(&pid), std::fs::read(entry.path().join("cmdline")))
        else {
            continue;
        };
        found.push((pid, ns, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
    }
    found
}

/// Polls `check` every 50 ms for up to `secs` seconds; whether it held.
fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    check()
}

#[test]
fn children_an_isolated_server_detaches_or_orphans_die_when_its_source_stops() {
    let hub = Hub::new();
    add_escape(&hub);
    let ours = pid_namespace("self").unwrap();
    let token = hub.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    let marker = format!("escape-child-{token}");
    // The marker is joined inside the run, so the hub's own command line never holds it.
    let code = format!(
        "const started = await escape.spawnDetached({{ count: 5, marker: 'escape-child-' + {} }});\n\
         await escape.waitRelease({{ name: 'release' }});\nreturn started;",
        serde_json::to_string(&token).unwrap()
    );
    let exec = hub.command(&["--json", "exec", &code]).stdout(Stdio::piped()).spawn().unwrap();

    // Five children in sessions of their own and one orphan, running on this machine in a pid
    // namespace of their own, while the server waits.
    let mut sandbox = None;
    let started = eventually(20, || {
        let marked: Vec<_> = processes().into_iter().filter(|(_, _, cmd)| cmd.contains(&marker)).collect();
        sandbox = marked.first().map(|(_, ns, _)| ns.clone());
        marked.len() == 6 && marked.iter().all(|(_, ns, _)| Some(ns) == sandbox.as_ref())
    });
    assert!(started, "the server's children never all ran: {:?}", processes());
    let sandbox = sandbox.unwrap();
    assert_ne!(sandbox, ours);
    let running = processes().into_iter().filter(|(_, ns, _)| *ns == sandbox).count();
    assert!(running > 6, "{running} processes in the sandbox");

    std::fs::write(hub.store().join("state/escape/release"), "").unwrap();
    let output = exec.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["result"], "started 6", "{envelope}");
    let left = || processes().into_iter().filter(|(_, ns, _)| *ns == sandbox).collect::<Vec<_>>();
    assert!(eventually(5, || left().is_empty()), "still running after the source stopped: {:?}", left());

    let called = hub.run(&["call", "escape.ping"]);
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    assert!(called.stdout.contains("pong"), "{}", called.stdout);
}

/// The uid of the test's process.
fn uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid()
}

#[test]
fn a_fork_bomb_in_an_isolated_server_of_a_person_stops_at_its_process_limit() {
    let mut hub = Hub::new();
    // Linux never limits root's processes, so as root (CI) the hub runs as `nobody`, the way
    // a person runs it.
    if uid() == 0 {
        let found = Command::new("sh").arg("-c").arg("command -v setpriv").output().unwrap();
        assert!(found.status.success(), "`setpriv` is not on PATH: install util-linux");
        let chown = Command::new("chown").arg("-R").arg("65534:65534").arg(hub.dir.path()).status().unwrap();
        assert!(chown.success());
        hub.user = Some(65534);
    }
    add_escape(&hub);
    let outcomes = attempts(
        &hub,
        &[
            "escape.fork({ count: 700 })".to_owned(),
            "escape.ping({})".to_owned(),
            "escape.readFile({ path: '/proc/self/limits' })".to_owned(),
        ],
    );
    let forked = &outcomes[0];
    let prefix = "tool_error: escape.fork: EAGAIN: spawn /bin/sleep EAGAIN (after ";
    let count: u32 = forked
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(" of 700 processes)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the fork bomb was not stopped: {forked}"));
    // 512 tasks in all: the server's own threads take the rest.
    assert!((400..512).contains(&count), "{forked}");
    assert_eq!(outcomes[1], "ok: pong");
    let processes = outcomes[2].lines().find(|l| l.starts_with("Max processes")).unwrap_or_default();
    assert_eq!(
        processes.split_whitespace().collect::<Vec<_>>(),
        ["Max", "processes", "512", "512", "processes"]
    );
}
