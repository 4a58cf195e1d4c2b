//! `capabilities hub review`: decide the tools that are new or changed since they were last
//! accepted. The review screen and the terminal prompts live here too, for every command that
//! reviews tools (`add`, `import`, `refresh`, `demo`) or asks a question at the terminal.

use std::fmt::Write as _;
use std::io::{BufRead, Write as _};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capabilities_core::manifest::{Manifest, ManifestDiff};
use capabilities_core::policy::{Effect, Policy, PolicyState, Proposal, RuleTarget, ToolClass, propose};
use capabilities_core::validate::Checker;
use clap::Args;

use crate::config::{HubConfig, POLICY, load_policy, save_policy};
use crate::error::{Exit, UsageError};
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Accept the proposal without prompting.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: ReviewArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let config = HubConfig::load(&store);
    for problem in &config.problems {
        eprintln!("warning: {problem}");
    }
    let items: Vec<_> = config
        .sources
        .iter()
        .filter_map(|(_, manifest, _)| manifest.as_ref())
        .flat_map(|manifest| needs_review(manifest, &config.policy, None))
        .collect();
    review(settings, &store, &items, args.yes)?;
    Ok(Exit::Ok.into())
}

/// A tool that waits for review: new, or changed since it was accepted.
#[derive(Debug, Clone)]
pub struct ReviewItem {
    pub proposal: Proposal,
    pub summary: String,
    /// What changed, for a tool accepted before (from a refresh's diff when there is one).
    pub changes: Option<Vec<String>>,
    /// Why the hub cannot check calls against its input schema, when it cannot (they run
    /// unchecked).
    pub unchecked: Option<String>,
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
            let unchecked = Checker::default().problem(&tool.record.input_schema);
            Some(ReviewItem { summary: tool.record.first_sentence(), proposal, changes, unchecked })
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
            if let Some(why) = &item.unchecked {
                let _ = writeln!(out, "      arguments go unchecked: {}", clip(why, 160));
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
        .with_context(|| format!("{POLICY} is invalid; fix it, then review again"))?;
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

/// Records a person's review of one tool from the dashboard, through [`accept`] (approve) or
/// [`accept_adjusted`] with a deny (reject), under the policy's lock. `digest` is the contract
/// the person saw: when the tool no longer waits for review with that contract, nothing is
/// recorded.
pub fn review_one(store: &Store, address: &str, digest: &str, approve: bool) -> Result<ReviewItem> {
    let _lock = store.lock("policy").map_err(|e| anyhow::anyhow!("{e}"))?;
    let config = HubConfig::load(store);
    let item = config
        .sources
        .iter()
        .filter_map(|(_, manifest, _)| manifest.as_ref())
        .flat_map(|manifest| needs_review(manifest, &config.policy, None))
        .find(|item| {
            item.proposal.address.to_string() == address && item.proposal.digest.to_string() == digest
        });
    let Some(item) = item else {
        bail!(
            "`{address}` does not wait for review with that contract (reviewed meanwhile, changed or \
             removed); reload to see what waits"
        );
    };
    let mut policy = load_policy(store)?;
    let items = std::slice::from_ref(&item);
    if approve {
        accept(&mut policy, items);
    } else {
        accept_adjusted(&mut policy, items, &[Effect::Deny])?;
    }
    save_policy(store, &policy)?;
    Ok(item)
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

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources;
    use capabilities_core::address::Namespace;
    use expect_test::expect;
    use serde_json::Value;

    /// A tool whose input schema cannot be compiled is named in review: its calls will run
    /// unchecked.
    #[test]
    fn review_names_a_schema_that_cannot_be_checked() {
        let entries = vec![
            serde_json::json!({ "name": "fine", "description": "Reads.", "inputSchema": { "type": "object" },
                                "annotations": { "readOnlyHint": true } }),
            serde_json::json!({ "name": "remote", "description": "Reads more.",
                                "inputSchema": { "type": "object", "properties": { "x": { "$ref": "https://example.com/x.json" } } },
                                "annotations": { "readOnlyHint": true } }),
        ];
        let listed = sources::ToolList { entries, description: None, records: None };
        let manifest = sources::build_manifest(&Namespace::new("docs").unwrap(), &listed);
        let text = render_review(&needs_review(&manifest, &PolicyState::default(), None));
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.contains("docs.remote")).unwrap();
        assert!(lines[at + 1].contains("arguments go unchecked"), "{text}");
        assert!(!text.lines().any(|l| l.contains("docs.fine") && l.contains("unchecked")), "{text}");
        assert_eq!(text.matches("arguments go unchecked").count(), 1, "{text}");
    }

    #[test]
    fn adjusting_a_proposal_leaves_only_the_rules_that_differ_from_the_default() {
        let entries: Vec<Value> =
            serde_json::from_str(include_str!("../../../core/tests/data/tools/memory.json")).unwrap();
        let listed = sources::ToolList { entries, description: None, records: None };
        let manifest = sources::build_manifest(&Namespace::new("memory").unwrap(), &listed);
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
}
