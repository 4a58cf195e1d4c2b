//! Code mode on the hosted hub: the Worker bundle (`cargo xtask hosted build`) in real workerd,
//! one tenant whose sources are the fixture servers speaking HTTP on loopback (and the store API
//! behind Prism, added as a push carries an HTTP API), configured and
//! approved by the person through the Worker's admin API. [`serve`] keeps such a tenant up for a
//! real MCP client to try (`cargo xtask hosted dev --fixtures`).

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use capabilities_invariants::{ADMIN_TOKEN, Home, Hosted, SourceSpec, Target, Transport};
use serde_json::{Value, json};

use crate::fixtures::{SOURCES, rules};

/// A hosted tenant with the five fixture sources and the suite's policy.
pub struct HostedHub {
    tenant: RefCell<Hosted>,
    fixtures: Vec<Child>,
}

impl HostedHub {
    /// Starts a fixture server over HTTP per source, on the state files in `state`, then workerd,
    /// (on `port`, or a free one) and loads the sources (reviewed as proposed) and `rules` into
    /// the tenant.
    pub fn start(repo: &Path, state: &Path, rules: Value, port: Option<u16>) -> Result<HostedHub> {
        let mut fixtures = Vec::new();
        let mut urls = Vec::new();
        for source in SOURCES {
            let (child, port) = fixture(repo, source, &state.join(format!("{source}.json")))?;
            fixtures.push(child);
            urls.push((source, format!("http://127.0.0.1:{port}/mcp")));
        }
        // From here on, dropping the hub ends the fixtures.
        let tenant = match port {
            Some(port) => Hosted::start_on(Home::new(), port),
            None => Hosted::start(Home::new()),
        };
        let hub = HostedHub { tenant: RefCell::new(tenant), fixtures };
        {
            let mut tenant = hub.tenant.borrow_mut();
            for (namespace, url) in urls {
                tenant.add_source(&SourceSpec {
                    namespace: namespace.to_owned(),
                    transport: Transport::Http { url },
                    slots: Vec::new(),
                });
            }
            tenant.set_rules(rules);
        }
        Ok(hub)
    }

    /// Adds an HTTP API described by `document` to the tenant, its requests going to
    /// `base_url` with `key`, reviewed as proposed (reads run, writes ask).
    pub fn add_api(&self, namespace: &str, document: &Path, base_url: &str, key: &str) {
        self.tenant.borrow_mut().add_source(&SourceSpec {
            namespace: namespace.to_owned(),
            transport: Transport::OpenApi {
                document: document.display().to_string(),
                base_url: base_url.to_owned(),
                credential: Some(key.to_owned()),
            },
            slots: Vec::new(),
        });
    }

    /// One MCP request to the tenant's endpoint; its `result`, or an error naming the method.
    pub fn request(&self, method: &str, params: Value) -> Result<Value> {
        let answer = self.tenant.borrow_mut().request(method, params);
        if let Some(error) = answer.get("error") {
            bail!("the hosted hub answered {method} with an error: {error}");
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// `initialize`, as a 2025-11-25 client opens the endpoint.
    pub fn initialize(&self) -> Result<Value> {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "capabilities-evals", "version": "0"}}),
        )
    }

    /// The person decides on the waiting run through the admin API.
    pub fn approve(&self, run: &str, choice: &str) -> Result<()> {
        if !self.tenant.borrow_mut().approve(run, choice) {
            bail!("the hosted hub refused the admin approval `{choice}` of run {run}");
        }
        Ok(())
    }

    /// The runs waiting for a person, from the admin API (`GET admin/pending`).
    pub fn pending(&self) -> Result<Value> {
        let (status, body) = self.tenant.borrow().admin("GET", "pending", None);
        if status != 200 {
            bail!("the hosted hub's admin/pending answered HTTP {status}: {body}");
        }
        serde_json::from_str(&body).context("admin/pending answers JSON")
    }
}

/// Serves a tenant with the five fixture sources and the suite's policy on `port` until stdin
/// ends (or the process is interrupted), printing how to reach it.
pub fn serve(repo: &Path, port: u16) -> Result<()> {
    let work = crate::scratch()?;
    let state = work.join("state");
    std::fs::create_dir_all(&state).with_context(|| format!("creating {}", state.display()))?;
    let hub = HostedHub::start(repo, &state, rules(), Some(port))?;
    let (origin, tenant) = {
        let tenant = hub.tenant.borrow();
        (tenant.origin(), tenant.tenant().to_owned())
    };
    let admin = format!("{origin}/t/{tenant}/admin");
    eprintln!(
        "evals: the hosted hub serves the fixture sources {} (state in {})\n\
         \n  MCP endpoint  {origin}/t/{tenant}/mcp   (no access token)\
         \n  add it       claude mcp add --transport http hub {origin}/t/{tenant}/mcp\
         \n  waiting runs curl -H 'authorization: Bearer {ADMIN_TOKEN}' {admin}/pending\
         \n  approve      curl -H 'authorization: Bearer {ADMIN_TOKEN}' -H 'content-type: application/json' \\\
         \n                 -d '{{\"run\":\"<run id>\",\"choice\":\"once\"}}' {admin}/approve\
         \n\nReads run; tracker, chat and docs writes run; calendar and CRM writes and deletions ask.\
         \nCtrl-D (or Ctrl-C) stops it.",
        SOURCES.join(", "),
        state.display()
    );
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line)? > 0 {
        line.clear();
    }
    drop(hub);
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

impl Drop for HostedHub {
    fn drop(&mut self) {
        for child in &mut self.fixtures {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `node <source>.mjs --http` on `state`; the child and the port it reports on its first line.
fn fixture(repo: &Path, source: &str, state: &Path) -> Result<(Child, u16)> {
    let mut child = Command::new("node")
        .arg(repo.join(format!("evals/fixtures/servers/{source}.mjs")))
        .arg("--http")
        .env("FIXTURE_STATE", state)
        // The server ends when its stdin closes, so it never outlives the harness.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("running node: install Node.js 20 or later")?;
    let mut line = String::new();
    let stdout = child.stdout.take().context("the fixture has stdout")?;
    BufReader::new(stdout).read_line(&mut line).with_context(|| format!("reading {source}'s port"))?;
    let port = serde_json::from_str::<Value>(&line).ok().and_then(|v| v["listening"].as_u64());
    match port.and_then(|p| u16::try_from(p).ok()) {
        Some(port) => Ok((child, port)),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the {source} fixture over HTTP did not report its port (it printed {line:?})")
        }
    }
}
