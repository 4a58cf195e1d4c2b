//! Managing sources from the CLI: reading a source's tools, keeping its records in the store
//! (`sources/`, `manifests/`, `connections/`, `policies/policy.json`), and the review screen
//! that pins the contracts a person accepted.

use std::fmt::Write as _;
use std::io::{BufRead, Write as _};

use anyhow::{Context, Result, bail};
use capabilities_core::address::Namespace;
use capabilities_core::manifest::{self, Manifest, ManifestDiff};
use capabilities_core::policy::{Effect, Policy, PolicyState, Proposal, RuleTarget, ToolClass, propose};
use capabilities_core::ports::Credentials;
use serde_json::Value;

use crate::config::{ConnectionsRecord, SourceRecord, read_json, write_json};
use crate::error::UsageError;
use crate::settings::Settings;
use crate::store::Store;
use crate::upstream::{PoolOptions, SourcePool, SourceSpec, SourceTransport};

pub const POLICY: &str = "policies/policy.json";

/// The source a person named on the command line, with its record; a usage error when the name
/// is not a namespace, and an error saying where to look when no such source exists.
pub fn named_source(store: &Store, name: &str) -> Result<(Namespace, SourceRecord)> {
    let namespace = Namespace::new(name).map_err(|e| {
        UsageError(format!("`{name}` is not a namespace ({e}); `capabilities hub list` shows them"))
    })?;
    let Some(record) = read_json::<SourceRecord>(store, &source_path(namespace.as_str()))? else {
        bail!("there is no source `{namespace}`; `capabilities hub list` shows the sources");
    };
    Ok((namespace, record))
}

pub fn source_path(namespace: &str) -> String {
    format!("sources/{namespace}.json")
}

pub fn manifest_path(namespace: &str) -> String {
    format!("manifests/{namespace}.json")
}

pub fn connections_path(namespace: &str) -> String {
    format!("connections/{namespace}.json")
}

/// Starts the source, lists its tools (every page) and stops it. A failure carries the tail of
/// what the source wrote to stderr.
pub fn read_tools(spec: &SourceSpec, credentials: &Credentials) -> Result<Vec<Value>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let pool = SourcePool::new(PoolOptions::default());
    pool.register(spec.clone());
    let listed = runtime.block_on(pool.list_tools(spec, credentials));
    let tail = pool.stderr_tail(&spec.namespace);
    pool.shutdown();
    match listed {
        Ok(tools) => Ok(tools),
        Err(err) => {
            let mut message = err.to_string();
            let tail = tail.trim();
            if !tail.is_empty() {
                let _ = write!(message, "\nits stderr ended with:\n{}", indent(tail));
            }
            let _ = write!(message, "\ncheck the command or URL, then run `capabilities hub add` again");
            bail!(message)
        }
    }
}

/// The manifest of `namespace` built from a raw tool list; problems are printed as warnings.
pub fn build_manifest(namespace: &Namespace, entries: &[Value]) -> Manifest {
    let (manifest, problems) = Manifest::from_tools_list(namespace.clone(), entries);
    for problem in problems {
        eprintln!("warning: {namespace}: {problem}");
    }
    manifest
}

/// The manifest stored for `namespace`, if any.
pub fn stored_manifest(store: &Store, namespace: &str) -> Result<Option<Manifest>> {
    read_json(store, &manifest_path(namespace))
}

pub fn load_policy(store: &Store) -> Result<PolicyState> {
    Ok(read_json::<PolicyState>(store, POLICY)?.unwrap_or_default())
}

pub fn save_policy(store: &Store, policy: &PolicyState) -> Result<()> {
    write_json(store, POLICY, policy)
}

/// Writes a new source's three records, all or nothing: on a failure the ones written are
/// removed again.
pub fn write_new_source(
    store: &Store,
    record: &SourceRecord,
    manifest: &Manifest,
    connections: &ConnectionsRecord,
) -> Result<()> {
    let ns = record.spec.namespace.as_str();
    let mut written: Vec<String> = Vec::new();
    let result = (|| -> Result<()> {
        write_json(store, &manifest_path(ns), manifest)?;
        written.push(manifest_path(ns));
        write_json(store, &connections_path(ns), connections)?;
        written.push(connections_path(ns));
        // The source record last: without it the others are never read.
        write_json(store, &source_path(ns), record)?;
        Ok(())
    })();
    if result.is_err() {
        for path in &written {
            let _ = std::fs::remove_file(store.root().join(path));
        }
    }
    result
}

/// Removes a source's records and every policy entry on its namespace. Returns whether the
/// source existed.
pub fn remove_source(store: &Store, namespace: &Namespace) -> Result<bool> {
    let ns = namespace.as_str();
    let existed = store.root().join(source_path(ns)).is_file();
    for path in [source_path(ns), manifest_path(ns), connections_path(ns)] {
        match std::fs::remove_file(store.root().join(&path)) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err).with_context(|| format!("removing {path}")),
        }
    }
    let mut policy = load_policy(store)?;
    let before = (policy.rules.len(), policy.reviewed.len());
    policy.rules.retain(|rule| rule.target.namespace() != namespace);
    let prefix = format!("{ns}.");
    policy.reviewed.retain(|address, _| !address.starts_with(&prefix));
    policy.changes.retain(|address, _| !address.starts_with(&prefix));
    if before != (policy.rules.len(), policy.reviewed.len()) {
        save_policy(store, &policy)?;
    }
    Ok(existed)
}

/// The command line a stdio source runs, as a person would type it.
pub fn command_line(spec: &SourceSpec) -> Option<String> {
    match &spec.transport {
        SourceTransport::Stdio { command, args, env, .. } => {
            let mut words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={}", quote(v))).collect();
            words.push(quote(command));
            words.extend(args.iter().map(|a| quote(a)));
            Some(words.join(" "))
        }
        _ => None,
    }
}

fn quote(word: &str) -> String {
    let plain =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// The connection record a new source starts with: none without credential slots, else one
/// connection named `default` holding the slot names (values go to the keychain, never here).
pub fn connections_for(spec: &SourceSpec) -> ConnectionsRecord {
    let slots = slot_names(spec);
    if slots.is_empty() {
        return ConnectionsRecord::default();
    }
    ConnectionsRecord {
        connections: vec![crate::config::ConnectionRecord { name: "default".to_owned(), slots }],
        default: Some("default".to_owned()),
    }
}

fn slot_names(spec: &SourceSpec) -> Vec<String> {
    match &spec.transport {
        SourceTransport::Stdio { env_slots, .. } => env_slots.clone(),
        SourceTransport::Http { header_slots, .. } => header_slots.iter().map(|h| h.name.clone()).collect(),
    }
}

/// Credentials for listing a source's tools from the CLI: each slot's value from the variable
/// of the same name in this shell's environment, when it is set.
pub fn credentials_from_env(spec: &SourceSpec) -> Credentials {
    let slots = slot_names(spec);
    if slots.is_empty() {
        return Credentials::default();
    }
    let values =
        slots.iter().filter_map(|name| Some((name.clone(), std::env::var(env_name(name)).ok()?))).collect();
    Credentials { connection: Some("default".to_owned()), values }
}

/// The environment variable a slot's value is read from: the slot name, upper-cased, with
/// `-` as `_` (`Authorization` → `AUTHORIZATION`, `X-Api-Key` → `X_API_KEY`).
pub fn env_name(slot: &str) -> String {
    slot.to_ascii_uppercase().replace('-', "_")
}

/// A tool that waits for review: new, or changed since it was accepted.
#[derive(Debug, Clone)]
pub struct ReviewItem {
    pub proposal: Proposal,
    pub summary: String,
    /// What changed, for a tool accepted before (from a refresh's diff when there is one).
    pub changes: Option<Vec<String>>,
}

/// The tools of `manifest` whose current contract nobody accepted yet.
pub fn needs_review(
    manifest: &Manifest,
    policy: &PolicyState,
    diff: Option<&ManifestDiff>,
) -> Vec<ReviewItem> {
    propose(manifest)
        .into_iter()
        .zip(&manifest.tools)
        .filter_map(|(proposal, tool)| {
            let reviewed = policy.reviewed.get(&proposal.address.to_string());
            if reviewed == Some(&proposal.digest) {
                return None;
            }
            let changes = reviewed.map(|before| {
                let detail = diff.and_then(|d| d.changed.iter().find(|c| c.name == tool.record.name));
                match detail {
                    Some(changed) if !changed.changes.is_empty() => {
                        changed.changes.iter().map(ToString::to_string).collect()
                    }
                    _ => vec![format!("contract {} → {}", before.short(), proposal.digest.short())],
                }
            });
            Some(ReviewItem { summary: tool.record.first_sentence(), proposal, changes })
        })
        .collect()
}

/// The review screen's text: the tools grouped by class, each with the proposed decision.
pub fn render_review(items: &[ReviewItem]) -> String {
    let mut out = String::new();
    let groups = [
        (ToolClass::ReadOnly, "Read-only — proposed: allow"),
        (ToolClass::Writes, "Writes — proposed: ask"),
        (ToolClass::Destructive, "Destructive or undeclared — proposed: ask (flagged)"),
    ];
    for (class, title) in groups {
        let members: Vec<&ReviewItem> = items.iter().filter(|i| i.proposal.class == class).collect();
        if members.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title} ({})", members.len());
        for item in members {
            let flag = if item.proposal.flagged() { "!" } else { " " };
            let status = if item.changes.is_some() { "changed" } else { "new" };
            let _ =
                writeln!(out, " {flag} {} [{status}]  {}", item.proposal.address, clip(&item.summary, 80));
            for change in item.changes.iter().flatten() {
                let _ = writeln!(out, "      {change}");
            }
        }
    }
    out
}

/// Pins each tool's current contract as reviewed. The proposal needs no rule: with a reviewed
/// contract the policy's default already allows read-only tools and asks for the rest.
pub fn accept(policy: &mut PolicyState, items: &[ReviewItem]) {
    for item in items {
        policy.pin(item.proposal.address.to_string(), item.proposal.digest);
    }
}

/// Pins every tool like [`accept`], with the effect the person chose for each: a choice that
/// differs from what policy does by default becomes a tool rule (an allow pinned to the
/// contract); choosing the default drops an earlier tool rule.
pub fn accept_adjusted(policy: &mut PolicyState, items: &[ReviewItem], chosen: &[Effect]) -> Result<()> {
    accept(policy, items);
    let mut rules = Policy::new(std::mem::take(&mut policy.rules))
        .context("policies/policy.json is invalid; fix it, then review again")?;
    for (item, effect) in items.iter().zip(chosen) {
        rules.remove(&RuleTarget::Tool(item.proposal.address.clone()), None);
        if let Some(rule) = item.proposal.rule_for(*effect) {
            rules.set(rule)?;
        }
    }
    policy.rules = rules.rules().to_vec();
    Ok(())
}

/// Shows the review for `items` on stderr and, when the person accepts (or `yes`), pins them in
/// the stored policy. Returns whether they were accepted.
pub fn review(settings: &Settings, store: &Store, items: &[ReviewItem], yes: bool) -> Result<bool> {
    if items.is_empty() {
        eprintln!("nothing to review");
        return Ok(true);
    }
    eprint!("{}", render_review(items));
    let answer = if yes {
        Answer::Accept
    } else if settings.no_input {
        eprintln!(
            "left unreviewed: these tools ask on every call until you run `capabilities hub review` \
             (or pass `--yes` to accept the proposal)"
        );
        Answer::Leave
    } else {
        match read_line("Accept the proposal? [Y]es, [n]o, [e]dit each tool: ")?.to_ascii_lowercase().as_str()
        {
            "" | "y" | "yes" => Answer::Accept,
            "e" | "edit" => Answer::Edit,
            _ => Answer::Leave,
        }
    };
    let mut policy = load_policy(store)?;
    match answer {
        Answer::Accept => accept(&mut policy, items),
        Answer::Edit => {
            let mut chosen = Vec::with_capacity(items.len());
            for item in items {
                chosen.push(choose_effect(item)?);
            }
            accept_adjusted(&mut policy, items, &chosen)?;
        }
        Answer::Leave => {
            if !settings.no_input {
                eprintln!("left unreviewed: they ask on every call until `capabilities hub review`");
            }
            return Ok(false);
        }
    }
    save_policy(store, &policy)?;
    eprintln!("accepted {} tool{}", items.len(), if items.len() == 1 { "" } else { "s" });
    Ok(true)
}

enum Answer {
    Accept,
    Edit,
    Leave,
}

fn choose_effect(item: &ReviewItem) -> Result<Effect> {
    let proposed = match item.proposal.effect {
        Effect::Allow => "allow",
        Effect::Ask => "ask",
        _ => "deny",
    };
    loop {
        let prompt = format!("  {} [a]llow, a[s]k, [d]eny (Enter: {proposed}): ", item.proposal.address);
        match read_line(&prompt)?.to_ascii_lowercase().as_str() {
            "" => return Ok(item.proposal.effect),
            "a" | "allow" => return Ok(Effect::Allow),
            "s" | "ask" => return Ok(Effect::Ask),
            "d" | "deny" => return Ok(Effect::Deny),
            _ => eprintln!("  answer a, s or d"),
        }
    }
}

/// Asks a yes/no question on stderr and reads one line. Enter takes `default`.
pub fn ask(settings: &Settings, question: &str, default: bool) -> Result<bool> {
    if settings.no_input {
        return Err(UsageError(format!("{} needs an answer: pass `--yes`", question.trim_end())).into());
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{question}");
    let _ = stderr.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).context("reading your answer")?;
    Ok(match line.trim().to_ascii_lowercase().as_str() {
        "" => default,
        "y" | "yes" => true,
        _ => false,
    })
}

/// Reads one line from stdin after printing `prompt` on stderr.
pub fn read_line(prompt: &str) -> Result<String> {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{prompt}");
    let _ = stderr.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).context("reading your answer")? == 0 {
        bail!("stdin closed before an answer; pass the answer as a flag instead");
    }
    Ok(line.trim().to_owned())
}

/// Keeps what `diff` changed in each tool whose reviewed contract is no longer the current one,
/// so a call that asks because of the change can say what it was.
pub fn note_changes(store: &Store, manifest: &Manifest, diff: &ManifestDiff) -> Result<()> {
    if diff.changed.is_empty() {
        return Ok(());
    }
    let _lock = store.lock("policy").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut policy = load_policy(store)?;
    let before = policy.changes.clone();
    for changed in &diff.changed {
        let Some(tool) = manifest.tools.iter().find(|t| t.record.name == changed.name) else { continue };
        let lines: Vec<String> = changed.changes.iter().map(ToString::to_string).collect();
        policy.note_changes(&manifest.address(tool).to_string(), &changed.after, &lines);
    }
    if policy.changes != before {
        save_policy(store, &policy)?;
    }
    Ok(())
}

/// What changed between the stored manifest (if any) and a fresh one.
pub fn diff_against(before: Option<&Manifest>, after: &Manifest) -> ManifestDiff {
    let empty = Manifest { namespace: after.namespace.clone(), tools: Vec::new() };
    manifest::diff(before.unwrap_or(&empty), after)
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn adjusting_a_proposal_leaves_only_the_rules_that_differ_from_the_default() {
        let entries: Vec<Value> =
            serde_json::from_str(include_str!("../../core/tests/data/tools/memory.json")).unwrap();
        let manifest = build_manifest(&Namespace::new("memory").unwrap(), &entries);
        let items = needs_review(&manifest, &PolicyState::default(), None);
        let chosen: Vec<Effect> = items
            .iter()
            .map(|i| match i.proposal.address.to_string().as_str() {
                "memory.readGraph" => Effect::Deny,       // read-only, refused
                "memory.createEntities" => Effect::Allow, // a write, allowed for this contract
                _ => i.proposal.effect,
            })
            .collect();
        let mut policy = PolicyState::default();
        accept_adjusted(&mut policy, &items, &chosen).unwrap();
        assert_eq!(policy.reviewed.len(), 9);
        let rules: Vec<String> = policy
            .rules
            .iter()
            .map(|r| format!("{} {:?} pinned={}", r.target, r.effect, r.pinned.is_some()))
            .collect();
        expect![[r#"
            [
                "memory.createEntities Allow pinned=true",
                "memory.readGraph Deny pinned=false",
            ]
        "#]]
        .assert_debug_eq(&rules);
        // Choosing the defaults again drops the rules.
        let defaults: Vec<Effect> = items.iter().map(|i| i.proposal.effect).collect();
        accept_adjusted(&mut policy, &items, &defaults).unwrap();
        assert!(policy.rules.is_empty());
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let spec = SourceSpec {
            namespace: "memory".into(),
            transport: SourceTransport::Stdio {
                command: "node".into(),
                args: vec!["/a b/index.js".into(), "--x".into()],
                env: [("MEMORY_FILE_PATH".to_owned(), "/tmp/m.jsonl".to_owned())].into(),
                env_slots: vec![],
                cwd: None,
            },
        };
        expect![[r#"MEMORY_FILE_PATH=/tmp/m.jsonl node '/a b/index.js' --x"#]]
            .assert_eq(&command_line(&spec).unwrap());
    }
}
