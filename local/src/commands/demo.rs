//! `capabilities hub demo`: a whole agent task through the hub, for real, in a throwaway hub.
//!
//! Two example sources shipped in this binary (an issue tracker and a team chat) are added as
//! stdio sources; then the steps a model takes — `search`, `describe`, one `execute` that reads
//! the open bugs and posts the top three — run through the same engine an agent reaches. The
//! post is a write, so the run pauses and the person at the terminal decides. At the end the
//! demo counts the tokens the model read.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use capabilities_core::approval::{Channel, Choice};
use capabilities_core::limits::Limits;
use capabilities_core::ports::Credentials;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::envelope::EnvelopeStatus;
use capabilities_core::tokens;
use clap::Args;
use serde_json::json;

use super::exec::{exit_for, print_envelope};
use super::review;
use crate::config;
use crate::error::UsageError;
use crate::host::Host;
use crate::platform::random_bytes;
use crate::settings::Settings;
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport};
use crate::{recorder, serve};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Allow the demo's one write (the chat post) without asking.
    #[arg(long, short)]
    pub yes: bool,
    /// Keep the throwaway hub afterwards and print where it is.
    #[arg(long)]
    pub keep: bool,
}

/// What the model writes for the task "post the top three open bugs to #eng".
const CODE: &str = r#"const { issues } = await tracker.listIssues({ state: "open", label: "bug" });
const top = issues.sort((a, b) => a.priority - b.priority).slice(0, 3);
const text = "Top open bugs:\n" + top.map((i) => `#${i.id} ${i.title}`).join("\n");
await chat.postMessage({ channel: "eng", text });
return { posted: top.map((i) => i.id), openBugs: issues.length };"#;

pub fn run(settings: &Settings, args: DemoArgs) -> Result<ExitCode> {
    if settings.no_input && !args.yes {
        return Err(UsageError(
            "the demo asks you to approve one chat post: pass `--yes` to allow it without asking".into(),
        )
        .into());
    }
    let started = Instant::now();
    let home = throwaway_home()?;
    let result = demo(settings, &args, &home);
    if args.keep {
        eprintln!("the demo's hub is kept at {}", home.display());
    } else {
        let _ = std::fs::remove_dir_all(&home);
    }
    let code = result?;
    say(&format!("\ndone in {:.1} s", started.elapsed().as_secs_f64()))?;
    Ok(code)
}

fn demo(settings: &Settings, args: &DemoArgs, home: &std::path::Path) -> Result<ExitCode> {
    let settings = Settings { home: home.to_owned(), json: false, ..settings.clone() };
    let limits = Limits::DEFAULT;
    let exe = std::env::current_exe().context("finding this binary to run the example sources")?;

    section("1. Two sources: an issue tracker and a team chat (stdio servers inside this binary)")?;
    let store = Store::open(home)?;
    for (namespace, which) in [("tracker", "tracker"), ("chat", "chat")] {
        let spec = SourceSpec {
            namespace: namespace.to_owned(),
            transport: SourceTransport::Stdio {
                command: exe.display().to_string(),
                args: vec!["example-server".to_owned(), which.to_owned()],
                env: Default::default(),
                env_slots: Vec::new(),
                cwd: None,
                isolation: None,
            },
        };
        let manifest = super::add::register(&store, &spec, &Credentials::default())?;
        let mut policy = config::load_policy(&store)?;
        let items = review::needs_review(&manifest, &policy, None);
        say(&review::render_review(&items))?;
        review::accept(&mut policy, &items);
        config::save_policy(&store, &policy)?;
    }
    say("accepted the proposal: reads run, the write asks you first")?;

    let host = Host::open(&settings.home)?;
    let mut read = Vec::new();
    let surface = serve::tools::surface_json(&limits).to_string();
    read.push(("the hub's three tools and instructions", tokens::count(&surface)));

    section("2. search: the model looks for tools by the task")?;
    let query = json!({ "query": "open bugs", "limit": 3 });
    say(&format!("search {query}"))?;
    let found = host.surface().search(&query).map_err(anyhow::Error::msg)?;
    say(&found)?;
    read.push(("search", tokens::count(&query.to_string()) + tokens::count(&found)));
    let query = json!({ "query": "post a chat message", "limit": 2 });
    say(&format!("search {query}"))?;
    let found = host.surface().search(&query).map_err(anyhow::Error::msg)?;
    say(&found)?;
    read.push(("search", tokens::count(&query.to_string()) + tokens::count(&found)));

    section("3. describe: typed declarations of just the tools it will use")?;
    let targets = json!({ "targets": ["tracker.listIssues", "chat.postMessage"] });
    say(&format!("describe {targets}"))?;
    let described = host.surface().describe(&targets).map_err(anyhow::Error::msg)?;
    say(&described)?;
    read.push(("describe", tokens::count(&targets.to_string()) + tokens::count(&described)));

    section("4. execute: one script reads the bugs and posts the top three")?;
    say(CODE)?;
    let envelope = host.execute(CODE)?;
    read.push(("execute", tokens::count(CODE) + envelope_tokens(&envelope)));
    let envelope = if envelope.status == EnvelopeStatus::AwaitingApproval {
        say(&format!("\nthe run paused: {}", envelope.to_line()))?;
        let Some(run) = store.load_run_sync(&envelope.run_id).map_err(|e| anyhow::anyhow!("{e}"))? else {
            bail!("the paused run `{}` is missing from the demo's store", envelope.run_id);
        };
        let mut decisions = Vec::new();
        for pending in run.undecided() {
            say(&format!(
                "\n{} wants to run with:\n{}\nwhy it asks: {}",
                pending.address, pending.preview, pending.reason
            ))?;
            let choice = if args.yes {
                say("allowed once (--yes)")?;
                Choice::Once
            } else if review::ask(&settings, "allow this post once? [Y/n] ", true)? {
                Choice::Once
            } else {
                Choice::Deny
            };
            decisions.push((pending.id.clone(), choice));
        }
        recorder::record(&store, &envelope.run_id, &decisions, Channel::Cli)?;
        say(&format!("\nresuming {}", envelope.run_id))?;
        let resumed = host.resume(&envelope.run_id)?;
        read.push(("execute (resume)", tokens::count(&envelope.run_id) + envelope_tokens(&resumed)));
        resumed
    } else {
        envelope
    };
    print_envelope(&settings, &envelope)?;

    section("5. What the model read")?;
    let code_mode: usize = read.iter().map(|(_, n)| n).sum();
    for (what, n) in &read {
        say(&format!("  {n:>6}  {what}"))?;
    }
    say(&format!("  {code_mode:>6}  tokens in all, with code mode"))?;
    say("  (`cargo xtask evals` measures code mode against loading every tool, over many tasks)")?;
    Ok(exit_for(&envelope).into())
}

/// Tokens of an envelope as the model reads it: the compact line `execute` answers with.
fn envelope_tokens(envelope: &Envelope) -> usize {
    tokens::count(&envelope.to_line())
}

/// A private directory for the demo's hub under the system's temporary directory.
fn throwaway_home() -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nonce: [u8; 6] = random_bytes()?;
    let home = std::env::temp_dir().join(format!("capabilities-demo-{}", hex::encode(nonce)));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&home)
        .with_context(|| format!("creating the demo's hub at {}", home.display()))?;
    Ok(home)
}

fn section(title: &str) -> Result<()> {
    say(&format!("\n── {title}"))
}

fn say(text: &str) -> Result<()> {
    let mut line = text.trim_end().to_owned();
    line.push('\n');
    super::print_stdout(&line)?;
    std::io::stdout().flush().ok();
    Ok(())
}
