//! `capabilities hub dashboard`, end to end: the reference memory server as the source, a run
//! waiting for a person (`hub exec`), a tool waiting for review with a hostile description,
//! headless Chromium with JavaScript off as the person (`/usr/bin/chromium` through
//! playwright-core), and raw HTTP requests as the attacker.
//!
//! Needs Node.js, `cd node && npm ci` and Debian's `chromium`; the tests fail (never skip)
//! without them. Screenshots land in `target/tmp/dashboard/`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::serve::{hub_home, memory_hub};
use crate::support::{http, http_raw, playwright, repo};

const CREATE: &str = r#"await memory.createEntities({entities:[{name:"dash",entityType:"t",observations:["o"]}]}); return "made""#;
/// The tool left unreviewed, and what it says about itself: markup a page must not run.
const UNREVIEWED: &str = "memory.deleteRelations";
const HOSTILE: &str = r#"Removes <img src=x onerror=alert(1)> & "relations" <script>alert(2)</script>"#;

/// `capabilities hub dashboard --json --no-open`, stopped on drop.
struct Dashboard {
    child: Child,
    port: u16,
    /// The one-time address it printed.
    url: String,
}

impl Dashboard {
    fn start(home: &Path) -> Dashboard {
        let mut child = capabilities(home)
            .args(["--json", "hub", "dashboard", "--no-open"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let printed: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("dashboard said {line:?}: {e}"));
        assert_eq!(printed["reused"], json!(false), "{printed}");
        Dashboard {
            child,
            port: printed["port"].as_u64().unwrap() as u16,
            url: printed["url"].as_str().unwrap().to_owned(),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Spends the ticket in `url` over raw HTTP; the cookie the browser would keep.
    fn open(&self, url: &str) -> String {
        let path = url.strip_prefix(&self.origin()).unwrap();
        let (status, answer) =
            http_raw(self.port, &format!("GET {path} HTTP/1.1\nHost: {}", self.host()), "");
        assert_eq!(status, 303, "{answer}");
        let cookie =
            answer.lines().find_map(|l| l.strip_prefix("set-cookie: ")).expect("opening sets a cookie");
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
        cookie.split(';').next().unwrap().to_owned()
    }

    fn get(&self, path: &str, cookie: Option<&str>) -> (u16, String) {
        let cookie = cookie.map(|c| format!("\nCookie: {c}")).unwrap_or_default();
        http(self.port, &format!("GET {path} HTTP/1.1\nHost: {}{cookie}", self.host()), "")
    }

    /// A form POST with the given Host, Origin and cookie.
    fn post(&self, path: &str, host: &str, origin: Option<&str>, cookie: Option<&str>, form: &str) -> u16 {
        let origin = origin.map(|o| format!("\nOrigin: {o}")).unwrap_or_default();
        let cookie = cookie.map(|c| format!("\nCookie: {c}")).unwrap_or_default();
        let head = format!(
            "POST {path} HTTP/1.1\nHost: {host}{origin}{cookie}\nContent-Type: application/x-www-form-urlencoded"
        );
        http(self.port, &head, form).0
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn capabilities(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_capabilities"));
    command.env("CAPABILITIES_HOME", home).env("BROWSER", "true").env("NO_COLOR", "1");
    command
}

/// `hub exec --json`; the envelope.
fn exec(home: &Path, code: &str) -> Value {
    let out =
        capabilities(home).args(["--json", "hub", "exec", code]).stderr(Stdio::inherit()).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("exec printed {:?}: {e}", out.stdout))
}

/// A memory hub with a run waiting on `memory.createEntities`, a completed run, and
/// [`UNREVIEWED`] waiting for review with a [`HOSTILE`] description; the waiting run's id and
/// the completed one's.
fn busy_hub(home: &Path) -> (String, String) {
    memory_hub(home);
    let edit = |relative: &str, change: &dyn Fn(&mut Value)| {
        let path = home.join(relative);
        let mut value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut value);
        std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    };
    edit("policies/policy.json", &|policy| {
        policy["reviewed"].as_object_mut().unwrap().remove(UNREVIEWED).expect("the tool was reviewed");
    });
    edit("manifests/memory.json", &|manifest| {
        let tool = manifest["tools"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|t| t["record"]["name"] == json!("delete_relations"))
            .expect("the memory server has delete_relations");
        tool["record"]["description"] = json!(HOSTILE);
    });
    let waiting = exec(home, CREATE);
    assert_eq!(waiting["status"], json!("awaiting_approval"), "{waiting}");
    let done = exec(home, "return (await memory.readGraph({})).entities.length");
    assert_eq!(done["status"], json!("completed"), "{done}");
    (waiting["runId"].as_str().unwrap().to_owned(), done["runId"].as_str().unwrap().to_owned())
}

fn run_record(home: &Path, run_id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(home.join(format!("runs/{run_id}.json"))).unwrap()).unwrap()
}

fn decisions(home: &Path, run_id: &str) -> Vec<Value> {
    run_record(home, run_id)["decisions"].as_array().cloned().unwrap_or_default()
}

fn reviewed(home: &Path, address: &str) -> bool {
    let policy: Value =
        serde_json::from_slice(&std::fs::read(home.join("policies/policy.json")).unwrap()).unwrap();
    policy["reviewed"].get(address).is_some()
}

/// The value of hidden input `name` in the first form after `marker` in `page`.
fn hidden(page: &str, marker: &str, name: &str) -> String {
    let at = page.find(marker).unwrap_or_else(|| panic!("the page has {marker}"));
    let needle = format!(r#"name="{name}" value=""#);
    let start = page[at..].find(&needle).unwrap_or_else(|| panic!("a {name} field after {marker}"))
        + at
        + needle.len();
    page[start..].split('"').next().unwrap().replace("&quot;", "\"").replace("&amp;", "&")
}

/// `application/x-www-form-urlencoded`, as a browser writes it.
fn encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            let escape = |s: &str| -> String {
                s.bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                            (b as char).to_string()
                        }
                        b' ' => "+".to_owned(),
                        _ => format!("%{b:02X}"),
                    })
                    .collect()
            };
            format!("{}={}", escape(k), escape(v))
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Runs `steps` in Chromium from `url`; what each page said.
fn browse(url: &str, steps: Value) -> Vec<Value> {
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new("node")
        .arg(repo().join("local/tests/fixtures/dashboard-browser.mjs"))
        .args([url, shots.to_str().unwrap(), &steps.to_string()])
        .env("PLAYWRIGHT_CORE_DIR", playwright())
        .output()
        .unwrap();
    assert!(out.status.success(), "the browser failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_person_decides_a_call_and_reviews_a_tool_in_the_browser() {
    let home = hub_home();
    let (waiting, completed) = busy_hub(home.path());
    let dashboard = Dashboard::start(home.path());

    let pages = browse(
        &dashboard.url,
        json!([
            { "shot": "overview" },
            { "within": "#waiting article", "click": "Allow once", "shot": "call-allowed" },
            { "link": "Back to the dashboard" },
            { "within": format!("article[data-tool=\"{UNREVIEWED}\"]"), "click": "Approve", "shot": "tool-approved" },
            { "link": "Back to the dashboard", "shot": "after" },
        ]),
    );
    let text = |i: usize| pages[i]["text"].as_str().unwrap().to_owned();
    assert_eq!(pages.len(), 5, "{pages:?}");
    for page in &pages {
        assert_eq!(page["status"], json!(200), "{page}");
    }
    assert_eq!(
        pages[0]["url"],
        json!(format!("{}/", dashboard.origin())),
        "the ticket leaves the address bar"
    );

    let overview = text(0);
    for shown in [
        "1 call waiting for you",
        "memory.createEntities",
        waiting.as_str(),
        completed.as_str(),
        "awaiting_input",
        "completed",
        UNREVIEWED,
        HOSTILE,
        "Allow once",
        "Approve",
        "Reject",
    ] {
        assert!(overview.contains(shown), "the dashboard shows {shown}: {overview}");
    }
    let memory_row =
        overview.lines().find(|l| l.starts_with("memory\t")).expect("a row for the memory source");
    assert!(memory_row.contains("stdio") && memory_row.contains("1 tool(s) to review"), "{memory_row}");

    assert!(text(1).contains("allowed once"), "{}", text(1));
    let recorded = decisions(home.path(), &waiting);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        (recorded[0]["choice"].clone(), recorded[0]["channel"].clone()),
        (json!("once"), json!("page"))
    );

    assert!(text(3).contains("approved"), "{}", text(3));
    assert!(reviewed(home.path(), UNREVIEWED));

    let after = text(4);
    for shown in [
        "No call waits for a decision",
        "Every tool's contract has been reviewed",
        waiting.as_str(),
        completed.as_str(),
    ] {
        assert!(after.contains(shown), "after deciding, the dashboard shows {shown}: {after}");
    }

    // The run resumes from the terminal with the page's decision and completes.
    let out = capabilities(home.path())
        .args(["--json", "hub", "approve", &waiting, "--choice", "once"])
        .output()
        .unwrap();
    let resumed: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("approve printed no envelope ({e}): {}", String::from_utf8_lossy(&out.stderr))
    });
    assert_eq!(resumed["result"], json!("made"), "{resumed}");
}

#[test]
fn attacks_on_the_dashboard_are_refused_and_record_nothing() {
    let home = hub_home();
    let (waiting, _) = busy_hub(home.path());
    let dashboard = Dashboard::start(home.path());
    let (host, origin) = (dashboard.host(), dashboard.origin());

    // A second `hub dashboard` reuses the running one and hands it a fresh ticket.
    let out = capabilities(home.path()).args(["--json", "hub", "dashboard", "--no-open"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (again["reused"].clone(), again["port"].clone()),
        (json!(true), json!(dashboard.port)),
        "{again}"
    );
    let second_url = again["url"].as_str().unwrap().to_owned();
    assert_ne!(second_url, dashboard.url);

    // Tickets: a wrong Host does not spend one; each opens once; unknown ones open nothing.
    let path = dashboard.url.strip_prefix(&origin).unwrap().to_owned();
    let wrong_host =
        http(dashboard.port, &format!("GET {path} HTTP/1.1\nHost: localhost:{}", dashboard.port), "").0;
    assert_eq!(wrong_host, 403, "wrong Host on the ticket");
    let cookie = dashboard.open(&dashboard.url);
    assert_eq!(dashboard.get(&path, None).0, 404, "a replayed ticket");
    assert_eq!(dashboard.get(&format!("/open/{}", "a".repeat(64)), None).0, 404, "an unknown ticket");
    assert_eq!(dashboard.get("/open/../../hub.json", None).0, 404, "a ticket that is a path");
    let other_cookie = dashboard.open(&second_url);
    assert_ne!(cookie, other_cookie);

    // The page: only with the cookie, only under its own Host; hostile text stays text.
    assert_eq!(dashboard.get("/", None).0, 403, "no cookie");
    assert_eq!(
        dashboard.get("/", Some("capabilities-dashboard-1=00")).0,
        403,
        "another dashboard's cookie name"
    );
    let forged = format!("capabilities-dashboard-{}={}", dashboard.port, "0".repeat(64));
    assert_eq!(dashboard.get("/", Some(&forged)).0, 403, "a forged cookie");
    let (status, page) = dashboard.get("/", Some(&cookie));
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("<img") && !page.contains("<script>alert"), "markup from upstream is escaped");
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"), "and shown as text");
    let rebound = http(
        dashboard.port,
        &format!("GET / HTTP/1.1\nHost: attacker.example:{}\nCookie: {cookie}", dashboard.port),
        "",
    );
    assert_eq!(rebound.0, 403, "DNS rebinding: a foreign Host");

    let call = hidden(&page, "data-call=", "call");
    let decide_csrf = hidden(&page, "data-call=", "csrf");
    let tool = format!("data-tool=\"{UNREVIEWED}\"");
    let digest = hidden(&page, &tool, "digest");
    let review_csrf = hidden(&page, &tool, "csrf");
    let decide = |csrf: &str, run: &str, choice: &str| {
        encode(&[("csrf", csrf), ("run", run), ("call", call.as_str()), ("choice", choice)])
    };
    let review = |csrf: &str, digest: &str, verdict: &str| {
        encode(&[("csrf", csrf), ("address", UNREVIEWED), ("digest", digest), ("verdict", verdict)])
    };
    let once = decide(&decide_csrf, &waiting, "once");
    let approve = review(&review_csrf, &digest, "approve");
    let other_page = dashboard.get("/", Some(&other_cookie)).1;
    let other_csrf = hidden(&other_page, "data-call=", "csrf");

    let post = |path: &str, host: &str, origin: Option<&str>, cookie: Option<&str>, form: &str| {
        dashboard.post(path, host, origin, cookie, form)
    };
    let c = Some(cookie.as_str());
    let o = Some(origin.as_str());
    let attacks = [
        ("wrong Host", post("/decide", &format!("localhost:{}", dashboard.port), o, c, &once), 403),
        ("foreign Origin", post("/decide", &host, Some("http://attacker.example"), c, &once), 403),
        ("Origin null", post("/decide", &host, Some("null"), c, &once), 403),
        ("no Origin", post("/decide", &host, None, c, &once), 403),
        ("no cookie", post("/decide", &host, o, None, &once), 403),
        ("a forged cookie", post("/decide", &host, o, Some(&forged), &once), 403),
        (
            "no CSRF token",
            post("/decide", &host, o, c, &format!("run={waiting}&call={call}&choice=once")),
            403,
        ),
        ("a wrong CSRF token", post("/decide", &host, o, c, &decide(&"0".repeat(64), &waiting, "once")), 403),
        (
            "another browser's CSRF token",
            post("/decide", &host, o, c, &decide(&other_csrf, &waiting, "once")),
            403,
        ),
        (
            "the review form's token",
            post("/decide", &host, o, c, &decide(&review_csrf, &waiting, "once")),
            403,
        ),
        (
            "the token for another run",
            post("/decide", &host, o, c, &decide(&decide_csrf, "run_0000000000000000", "once")),
            403,
        ),
        ("a repeated field", post("/decide", &host, o, c, &format!("{once}&choice=deny")), 400),
        (
            "a choice that is not one",
            post("/decide", &host, o, c, &decide(&decide_csrf, &waiting, "yes")),
            400,
        ),
        ("an oversized form", post("/decide", &host, o, c, &format!("{once}&pad={}", "x".repeat(9000))), 413),
        (
            "review: no CSRF token",
            post("/review", &host, o, c, &format!("address={UNREVIEWED}&digest={digest}&verdict=approve")),
            403,
        ),
        (
            "review: the decide form's token",
            post("/review", &host, o, c, &review(&decide_csrf, &digest, "approve")),
            403,
        ),
        (
            "review: another contract",
            post(
                "/review",
                &host,
                o,
                c,
                &review(&review_csrf, &format!("sha256:{}", "0".repeat(64)), "approve"),
            ),
            403,
        ),
        ("review: foreign Origin", post("/review", &host, Some("http://attacker.example"), c, &approve), 403),
        (
            "review: a verdict that is not one",
            post("/review", &host, o, c, &review(&review_csrf, &digest, "maybe")),
            400,
        ),
        ("GET that tries to decide", dashboard.get(&format!("/decide?{once}"), Some(&cookie)).0, 405),
        ("GET that tries to review", dashboard.get(&format!("/review?{approve}"), Some(&cookie)).0, 405),
        ("GET of the page with a decision", dashboard.get(&format!("/?{once}"), Some(&cookie)).0, 200),
        ("POST to the page", post("/", &host, o, c, &once), 405),
        ("POST to a ticket", post(&path, &host, o, c, &once), 404),
    ];
    for (attack, got, want) in attacks {
        assert_eq!(got, want, "{attack}");
    }
    assert!(decisions(home.path(), &waiting).is_empty(), "nothing decided by any attack");
    assert!(!reviewed(home.path(), UNREVIEWED), "nothing reviewed by any attack");

    // The real forms count once; sent again they change nothing.
    assert_eq!(post("/decide", &host, o, c, &once), 200);
    assert_eq!(post("/decide", &host, o, c, &decide(&decide_csrf, &waiting, "deny")), 409, "a decided call");
    assert_eq!(decisions(home.path(), &waiting).len(), 1);
    assert_eq!(post("/review", &host, o, c, &review(&review_csrf, &digest, "reject")), 200);
    assert_eq!(post("/review", &host, o, c, &approve), 409, "a reviewed tool");
    let policy: Value =
        serde_json::from_slice(&std::fs::read(home.path().join("policies/policy.json")).unwrap()).unwrap();
    let rules = policy["rules"].to_string();
    assert!(
        reviewed(home.path(), UNREVIEWED) && rules.contains(UNREVIEWED) && rules.contains("deny"),
        "{policy}"
    );
}

#[test]
fn a_stopped_dashboard_is_not_reused() {
    let home = hub_home();
    let mut first = Dashboard::start(home.path());
    let running = home.path().join("dashboard.json");
    assert!(running.is_file(), "the dashboard records itself for reuse");
    let status = Command::new("kill").args(["-TERM", &first.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = first.child.wait().unwrap();
    assert!(exit.success(), "SIGTERM stops it cleanly: {exit}");
    assert!(!running.exists(), "and it removes its record");

    // A record left by a dashboard that died without a word names a port nobody serves.
    std::fs::write(&running, json!({"port": first.port, "pid": 1, "instance": "gone"}).to_string()).unwrap();
    let second = Dashboard::start(home.path());
    assert_eq!(
        second.get(&first.url.replace(&first.origin(), ""), None).0,
        404,
        "the old address opens nothing"
    );
    let cookie = second.open(&second.url);
    assert_eq!(second.get("/", Some(&cookie)).0, 200);
}
