//! Credentials end to end, with the real binary: `hub auth` fills a slot in a real Secret Service
//! (gnome-keyring in a private D-Bus session), the value reaches the everything server's
//! environment, and it never shows in the envelope, the journal or any file of the hub; without
//! a keychain the fallback file is private and announced.
//!
//! Needs Node.js with `cd node && npm ci`, and on PATH `dbus-run-session` (Debian package
//! `dbus-daemon`), `gnome-keyring-daemon` (`gnome-keyring`) and `secret-tool`
//! (`libsecret-tools`). The tests fail, never skip, without them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::packages;

const BIN: &str = env!("CARGO_BIN_EXE_capabilities");

/// One hub in a temporary directory; HOME and the D-Bus address point inside it too.
struct Hub {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Hub {
    fn new() -> Hub {
        let hub = Hub { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(hub.dir.path().join("home")).unwrap();
        hub
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    /// The environment every command gets: the hub's home, and HOME inside the temp dir.
    fn envs(&self) -> Vec<(&'static str, String)> {
        let home = self.dir.path().join("home").display().to_string();
        vec![
            ("CAPABILITIES_HOME", self.home().display().to_string()),
            ("HOME", home.clone()),
            ("XDG_RUNTIME_DIR", home),
            ("NO_COLOR", "1".to_owned()),
        ]
    }

    /// The binary with no D-Bus session reachable.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .arg("hub")
            .args(args)
            .envs(self.envs())
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", self.dir.path().join("no-bus").display()),
            )
            .env_remove("CAPABILITIES_KEYCHAIN");
        command
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Ran {
        let mut command = self.command(args);
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            use std::io::Write;
            let mut input = input;
            input.write_all(text.as_bytes()).unwrap();
        }
        let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// `sh -c script` in a private D-Bus session of its own, where the script starts
    /// gnome-keyring; the hub's binary is `$BIN`, `out` is `$OUT`, and the keychain is required.
    fn in_keychain_session(&self, script: &str, out: &Path) -> Command {
        let mut command = Command::new("dbus-run-session");
        command
            .args(["--", "sh", "-c", script])
            .envs(self.envs())
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("CAPABILITIES_KEYCHAIN", "keychain")
            .env("BIN", BIN)
            .env("OUT", out)
            .stdin(Stdio::null());
        command
    }

    /// Adds the everything server with one credential slot, `API_TOKEN`.
    fn add_everything(&self) {
        let script = packages().join("server-everything/dist/index.js");
        let added = self.run(
            &["add", "--yes", "--env", "API_TOKEN", "--", "node", script.to_str().unwrap(), "stdio"],
            None,
        );
        assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    }

    /// Every file under the hub's home, with its bytes.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    out.push((path, bytes));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.home(), &mut out);
        out
    }

    fn files_holding(&self, needle: &str) -> Vec<PathBuf> {
        self.files()
            .into_iter()
            .filter(|(_, bytes)| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
            .map(|(path, _)| path)
            .collect()
    }
}

fn require(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(found, "`{tool}` is not on PATH: install it with `apt-get install {package}`");
}

const NO_KEYCHAIN: &str = "warning: no OS keychain is reachable";

/// The real keychain: `hub auth` stores the value in gnome-keyring, a run hands it to the
/// source, the result and the journal show `[secret]`, no file of the hub holds it, and
/// `hub remove` deletes it from the keychain.
#[test]
fn a_filled_slot_lives_in_the_keychain_and_reaches_the_source_scrubbed() {
    require("dbus-run-session", "dbus-daemon");
    require("gnome-keyring-daemon", "gnome-keyring");
    require("secret-tool", "libsecret-tools");
    let hub = Hub::new();
    hub.add_everything();
    let canary = "canary-7f3a9c2e51d04b86";
    let out = hub.dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("value"), format!("{canary}\n")).unwrap();

    let script = r#"
        set -u
        printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null || exit 20
        "$BIN" hub auth everything --stdin <"$OUT/value" >"$OUT/auth.out" 2>"$OUT/auth.err" || exit 21
        "$BIN" --json hub connections everything >"$OUT/connections.json" 2>"$OUT/connections.err" || exit 22
        secret-tool lookup service capabilities.sh username everything/default/API_TOKEN >"$OUT/lookup" || exit 23
        "$BIN" --json hub exec 'return await everything.getEnv({})' >"$OUT/exec.json" 2>"$OUT/exec.err" || exit 24
        "$BIN" hub remove everything --yes >/dev/null 2>"$OUT/remove.err" || exit 25
        secret-tool lookup service capabilities.sh username everything/default/API_TOKEN >"$OUT/after"
        echo $? >"$OUT/after.rc"
    "#;
    let ran = hub.in_keychain_session(script, &out).output().unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    let report = format!(
        "exit {:?}\nstderr: {}\nauth: {}{}\nexec: {}{}",
        ran.status.code(),
        String::from_utf8_lossy(&ran.stderr),
        read("auth.out"),
        read("auth.err"),
        read("exec.json"),
        read("exec.err"),
    );
    assert!(ran.status.success(), "{report}");

    // Stored in the keychain, under an account naming namespace, connection and slot.
    assert_eq!(read("lookup").trim_end(), canary, "{report}");
    assert!(read("auth.out").contains("the OS keychain"), "{report}");
    assert!(!read("auth.err").contains(NO_KEYCHAIN), "{report}");
    let connections: Value = serde_json::from_str(&read("connections.json")).unwrap();
    assert_eq!(connections["store"], "keychain");
    assert_eq!(
        connections["connections"][0]["slots"][0],
        serde_json::json!({"name": "API_TOKEN", "filled": true})
    );

    // The source saw the value; what came back shows `[secret]` in its place.
    let exec = read("exec.json");
    let envelope: Value = serde_json::from_str(&exec).unwrap_or_else(|_| panic!("{report}"));
    assert_eq!(envelope["status"], "completed", "{report}");
    assert!(!exec.contains(canary), "{report}");
    let result = envelope["result"].to_string();
    assert!(result.contains("API_TOKEN") && result.contains("[secret]"), "{report}");

    // No file of the hub holds it, the journal included.
    assert!(!hub.home().join("secrets.json").exists());
    let journals: Vec<PathBuf> = hub
        .files()
        .into_iter()
        .map(|(path, _)| path)
        .filter(|p| p.to_string_lossy().ends_with(".journal.jsonl"))
        .collect();
    assert!(!journals.is_empty(), "the run kept a journal");
    assert_eq!(hub.files_holding(canary), Vec::<PathBuf>::new());

    // Removing the source deleted the keychain item.
    assert!(read("remove.err").contains("deleted 1 stored secret"), "{}", read("remove.err"));
    assert_ne!(read("after.rc").trim(), "0", "the item is still there: {}", read("after"));
}

/// Without a keychain, values go to `secrets.json`, mode 600, and every use warns; the value
/// still reaches the source and is scrubbed from the run.
#[test]
fn without_a_keychain_the_private_file_is_used_and_announced() {
    let hub = Hub::new();
    hub.add_everything();
    let canary = "canary-file-0c1d2e3f4a5b";

    let waiting = hub.run(&["--json", "exec", "return await everything.getEnv({})"], None);
    assert_eq!(waiting.code, 4, "{}{}", waiting.stdout, waiting.stderr);
    assert!(waiting.stdout.contains("hub auth everything --connection default"), "{}", waiting.stdout);

    let auth = hub.run(&["auth", "everything", "--stdin"], Some(&format!("{canary}\n")));
    assert_eq!(auth.code, 0, "{}{}", auth.stdout, auth.stderr);
    assert_eq!(auth.stderr.lines().filter(|l| l.starts_with(NO_KEYCHAIN)).count(), 1, "{}", auth.stderr);
    assert!(auth.stderr.contains("gnome-keyring"), "the warning says how to get a keychain: {}", auth.stderr);

    let file = hub.home().join("secrets.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(hub.files_holding(canary), vec![file.clone()]);

    let listed = hub.run(&["connections", "everything"], None);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.starts_with("* default  static: API_TOKEN (filled)\n"), "{}", listed.stdout);
    assert!(listed.stderr.contains(NO_KEYCHAIN), "warned again: {}", listed.stderr);

    let ran = hub.run(&["--json", "exec", "return await everything.getEnv({})"], None);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stderr.contains(NO_KEYCHAIN), "warned again: {}", ran.stderr);
    assert!(!ran.stdout.contains(canary), "{}", ran.stdout);
    assert!(ran.stdout.contains("[secret]"), "{}", ran.stdout);
    // Only the fallback file holds the value: not the run, not its journal.
    assert_eq!(hub.files_holding(canary), vec![file.clone()]);

    let removed = hub.run(&["remove", "everything", "--yes"], None);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(hub.files_holding(canary), Vec::<PathBuf>::new());
}

/// A named connection is added with the source's slots; unknown sources, sources without
/// slots and bad input are refused; no flag takes a value.
#[test]
fn auth_refuses_what_it_cannot_fill_and_never_takes_a_value_as_an_argument() {
    let hub = Hub::new();
    hub.add_everything();
    let file_store = [("CAPABILITIES_KEYCHAIN", "file")];
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut command = hub.command(args);
        command.envs(file_store);
        command.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
            use std::io::Write;
            input.write_all(text.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };

    let unknown = run(&["auth", "nothing", "--stdin"], Some("abcdefgh\n"));
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("there is no source `nothing`"), "{}", unknown.stderr);

    let bad_name = run(&["auth", "everything", "--connection", "Work!", "--stdin"], Some("abcdefgh\n"));
    assert_eq!(bad_name.code, 2, "{}", bad_name.stderr);

    let prompt = run(&["auth", "everything"], None);
    assert_eq!(prompt.code, 2, "{}", prompt.stderr);
    assert!(prompt.stderr.contains("--stdin"), "{}", prompt.stderr);

    let short = run(&["auth", "everything", "--stdin"], Some("abc\n"));
    assert_eq!(short.code, 2, "{}", short.stderr);
    assert!(short.stderr.contains("too short to scrub"), "{}", short.stderr);

    let added = run(&["auth", "everything", "--connection", "work", "--stdin"], Some("work-token-1234\n"));
    assert_eq!(added.code, 0, "{}", added.stderr);
    let listed = run(&["--json", "connections", "everything"], None);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed["default"], "default");
    let names: Vec<_> = listed["connections"].as_array().unwrap().iter().map(|c| c["name"].clone()).collect();
    assert_eq!(names, ["default", "work"]);
    assert_eq!(listed["connections"][0]["slots"][0]["filled"], false);
    assert_eq!(listed["connections"][1]["slots"][0]["filled"], true);
    assert!(!serde_json::to_string(&listed).unwrap().contains("work-token-1234"));

    // Values only through stdin or the prompt: no flag takes one.
    let help = run(&["auth", "--help"], None);
    assert_eq!(help.code, 0);
    let flags: Vec<&str> = (help.stdout.lines())
        .filter(|line| line.trim_start().starts_with('-'))
        .flat_map(str::split_whitespace)
        .filter(|w| w.starts_with("--"))
        .map(|w| w.trim_end_matches(','))
        .collect();
    assert_eq!(
        flags,
        [
            "--connection",
            "--json",
            "--no-input",
            "--stdin",
            "--yes",
            "--client-id",
            "--client-secret-stdin",
            "--client-metadata-url",
            "--no-browser",
            "--scope",
            "--help",
            "--version"
        ],
        "{}",
        help.stdout
    );
    let value_flag = run(&["auth", "everything", "--value", "abcdefgh"], None);
    assert_eq!(value_flag.code, 2);
}

/// At a terminal, `hub auth` prompts for each slot and does not echo what is typed.
#[test]
fn the_prompt_does_not_echo_the_value() {
    require("script", "bsdutils");
    let hub = Hub::new();
    hub.add_everything();
    let typed = "typed-secret-5e6f7a8b";
    let log = hub.dir.path().join("terminal.log");
    let line = format!("'{BIN}' hub auth everything");
    let mut command = Command::new("script");
    command.args(["-qfec", &line]).arg(&log).envs(hub.envs()).env("CAPABILITIES_KEYCHAIN", "file");
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Type only once the prompt is up: turning echo off drops what was typed before.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("(input hidden)") {
        assert!(
            std::time::Instant::now() < deadline,
            "no prompt: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(format!("{typed}\n").as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let transcript = std::fs::read_to_string(&log).unwrap();
    assert!(out.status.success(), "{transcript}");
    assert!(transcript.contains("API_TOKEN for everything/default (input hidden): "), "{transcript}");
    assert!(transcript.contains("filled API_TOKEN of `everything` connection `default`"), "{transcript}");
    assert!(!transcript.contains(typed), "the value was echoed: {transcript}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(typed));
    assert_eq!(hub.files_holding(typed), vec![hub.home().join("secrets.json")]);
}

/// A stored value too short to scrub (edited in by hand) is never sent to the source.
#[test]
fn a_value_too_short_to_scrub_is_not_used() {
    let hub = Hub::new();
    hub.add_everything();
    let auth = hub.run(&["auth", "everything", "--stdin"], Some("long-enough-value\n"));
    assert_eq!(auth.code, 0, "{}", auth.stderr);
    let file = hub.home().join("secrets.json");
    let text = std::fs::read_to_string(&file).unwrap().replace("long-enough-value", "ab");
    std::fs::write(&file, text).unwrap();
    let ran = hub.run(&["--json", "exec", "return await everything.getEnv({})"], None);
    assert_eq!(ran.code, 3, "{}{}", ran.stdout, ran.stderr);
    let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
    let error = envelope["error"].to_string();
    assert!(error.contains("too short to scrub"), "{}", ran.stdout);
    assert!(error.contains("hub auth everything --connection default"), "{}", ran.stdout);
}

/// An HTTP source's header slots, filled with `hub auth`, ride on the request; the result shows
/// `[secret]` where the headers echo them.
#[test]
fn header_slots_filled_by_auth_reach_an_http_source() {
    let server = crate::support::HttpFixture::start();
    let url = format!("http://127.0.0.1:{}/mcp", server.port);

    let hub = Hub::new();
    let added = hub.run(
        &[
            "add",
            &url,
            "--namespace",
            "fixture",
            "--header",
            "Authorization",
            "--header",
            "X-Api-Key",
            "--yes",
        ],
        None,
    );
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    let (token, key) = ("bearer-canary-2468", "key-canary-1357");
    let auth = hub.run(&["auth", "fixture", "--stdin"], Some(&format!("{token}\n{key}\n")));
    assert_eq!(auth.code, 0, "{}", auth.stderr);

    let mut ran = hub.run(&["--json", "exec", "return await fixture.headers({})"], None);
    if ran.code == 4 {
        let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
        let id = envelope["runId"].as_str().unwrap().to_owned();
        ran = hub.run(&["--json", "approve", &id, "--choice", "once"], None);
    }
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
    let result = envelope["result"].to_string();
    assert!(result.contains("Bearer [secret]"), "{result}");
    assert!(result.contains("x-api-key") && result.contains("[secret]"), "{result}");
    for value in [token, key] {
        assert!(!ran.stdout.contains(value), "{}", ran.stdout);
        assert_eq!(hub.files_holding(value), vec![hub.home().join("secrets.json")]);
    }
}

/// An HTTP API on loopback that answers `GET /pet/<id>` as petstore does and keeps the
/// `api_key` header of every request it gets.
fn recording_api() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let keys = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&keys);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = std::sync::Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).map_or(true, |n| n == 0) {
                        return;
                    }
                    let mut key = None;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).map_or(true, |n| n <= 2) {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("api_key")
                        {
                            key = Some(value.trim().to_owned());
                        }
                    }
                    seen.lock().unwrap().push(key.unwrap_or_default());
                    let body = br#"{"id":7,"name":"doggie","photoUrls":[],"status":"available"}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body);
                }
            });
        }
    });
    (port, keys)
}

/// A serving hub keeps what it read from the keychain (a D-Bus round trip each time would cost
/// more than a call to an API on loopback), yet a key changed with `hub auth` in another
/// process is the one its next call sends.
#[test]
fn a_serving_hub_sends_the_key_hub_auth_just_changed() {
    require("dbus-run-session", "dbus-daemon");
    require("gnome-keyring-daemon", "gnome-keyring");
    let hub = Hub::new();
    let (port, keys) = recording_api();
    let document =
        crate::support::repo().join("node/node_modules/@readme/oas-examples/3.0/json/petstore.json");
    let out = hub.dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (first, second) = ("first-key-5d1c9a7e", "second-key-8b2f4e60");
    std::fs::write(out.join("first"), format!("{first}\n")).unwrap();
    std::fs::write(out.join("second"), format!("{second}\n")).unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let call = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"execute","arguments":{{"code":"return (await pets.getPetById({{ petId: 7 }})).status"}}}}}}"#
        )
    };
    // The served hub reads requests from a FIFO; each answer is awaited before the next step.
    let script = r#"
        set -u
        printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null || exit 20
        "$BIN" hub add "$DOC" --namespace pets --base-url "$BASE" --stdin --yes <"$OUT/first" >"$OUT/add.out" 2>&1 || exit 21
        mkfifo "$OUT/in"
        "$BIN" hub serve --stdio <"$OUT/in" >"$OUT/serve.out" 2>"$OUT/serve.err" &
        exec 3>"$OUT/in"
        answered() {
            i=0
            until grep -q "\"id\":$1," "$OUT/serve.out"; do
                i=$((i + 1)); [ "$i" -gt 300 ] && exit 22
                sleep 0.1
            done
        }
        printf '%s\n%s\n' "$INIT" "$INITIALIZED" >&3
        answered 1
        printf '%s\n' "$CALL2" >&3
        answered 2
        printf '%s\n' "$CALL3" >&3
        answered 3
        "$BIN" hub auth pets --stdin <"$OUT/second" >"$OUT/auth.out" 2>&1 || exit 23
        printf '%s\n' "$CALL4" >&3
        answered 4
        exec 3>&-
        wait
    "#;
    let ran = hub
        .in_keychain_session(script, &out)
        .env("DOC", &document)
        .env("BASE", format!("http://127.0.0.1:{port}"))
        .env("INIT", init)
        .env("INITIALIZED", initialized)
        .env("CALL2", call(2))
        .env("CALL3", call(3))
        .env("CALL4", call(4))
        .output()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    let report = script_report(&ran, &out, &["add.out", "auth.out", "serve.out", "serve.err"]);
    assert!(ran.status.success(), "{report}");
    let answers: Vec<Value> = read("serve.out").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for answer in &answers[1..] {
        assert_eq!(answer["result"]["structuredContent"]["status"], "completed", "{report}");
        assert_eq!(answer["result"]["structuredContent"]["result"], 200, "{report}");
    }
    assert_eq!(*keys.lock().unwrap(), [first, first, second], "{report}");
    assert!(hub.files_holding(first).is_empty() && hub.files_holding(second).is_empty(), "{report}");
}

/// A script's exit and stderr, and each of `files` in `out` by name: what a failed assertion
/// shows.
fn script_report(ran: &Output, out: &Path, files: &[&str]) -> String {
    let mut report =
        format!("exit {:?}\nstderr: {}", ran.status.code(), String::from_utf8_lossy(&ran.stderr));
    for name in files {
        let text = std::fs::read_to_string(out.join(name)).unwrap_or_default();
        report.push_str(&format!("\n{name}: {text}"));
    }
    report
}
