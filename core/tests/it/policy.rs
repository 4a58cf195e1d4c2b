//! Policy decisions: each of the four steps, their precedence, pinned rules across a refresh,
//! the listing view and the review proposal, as tables.

use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::manifest::{Annotations, ContractDigest, Manifest};
use capabilities_core::policy::{Call, Effect, Policy, Rule, propose};
use expect_test::{Expect, expect};
use serde_json::Value;

const A: ContractDigest = ContractDigest([0xaa; 32]);
const B: ContractDigest = ContractDigest([0xbb; 32]);

fn digest(name: &str) -> Option<ContractDigest> {
    match name {
        "A" => Some(A),
        "B" => Some(B),
        _ => None,
    }
}

fn hints(name: &str) -> Annotations {
    let (read_only_hint, destructive_hint) = match name {
        "ro" => (Some(true), None),
        "rw" => (Some(false), Some(false)),
        "rw!" => (Some(false), Some(true)),
        "ro!" => (Some(true), Some(true)),
        "none" => (None, None),
        other => panic!("unknown hints `{other}`"),
    };
    Annotations { read_only_hint, destructive_hint, ..Annotations::default() }
}

/// `rules` is the policy as stored (JSON), with `@A`/`@B` standing for two contract digests.
/// Each call is `address connection current/reviewed hints`: `-` for no connection or never
/// reviewed; hints `ro`, `rw`, `rw!` (destructive), `ro!` (read-only and destructive), `none`.
fn check(rules: &str, calls: &[&str], expect: Expect) {
    let rules = rules.replace("@A", &A.to_string()).replace("@B", &B.to_string());
    let policy: Policy = serde_json::from_str(&rules).unwrap();
    let mut out = String::new();
    for call in calls {
        let parts: Vec<&str> = call.split_whitespace().collect();
        let [address, connection, digests, hint] = parts[..] else { panic!("bad call `{call}`") };
        let address = ToolAddress::parse(address).unwrap();
        let (current, reviewed) = digests.split_once('/').unwrap();
        let current = digest(current).unwrap();
        let reviewed = digest(reviewed);
        let annotations = hints(hint);
        let call_ = Call {
            address: &address,
            connection: (connection != "-").then_some(connection),
            digest: &current,
            annotations: &annotations,
            reviewed: reviewed.as_ref(),
        };
        let decision = policy.decide(&call_);
        out.push_str(&format!("{call:<38} => {}: {}\n", decision.effect, decision.reason));
    }
    expect.assert_eq(&out);
}

#[test]
fn no_rule_reads_run_and_everything_else_asks() {
    check(
        "[]",
        &[
            "github.searchIssues - A/A ro",
            "github.createIssue - A/A rw",
            "github.deleteRepo - A/A rw!",
            "github.createIssue - A/A none",
            // readOnlyHint true wins over destructiveHint true: see the policy module docs.
            "github.odd - A/A ro!",
            "github.searchIssues work A/A ro",
        ],
        expect![[r#"
            github.searchIssues - A/A ro           => allow: read-only tool
            github.createIssue - A/A rw            => ask: writes need approval
            github.deleteRepo - A/A rw!            => ask: writes need approval
            github.createIssue - A/A none          => ask: tool does not say it is read-only, so it needs approval
            github.odd - A/A ro!                   => allow: read-only tool
            github.searchIssues work A/A ro        => allow: read-only tool
        "#]],
    );
}

#[test]
fn new_or_changed_tools_ask_even_when_a_rule_allows() {
    check(
        r#"[{"source": "github", "effect": "allow"}, {"tool": "github.searchIssues", "effect": "allow"}]"#,
        &[
            "github.searchIssues - A/- ro",
            "github.searchIssues - B/A ro",
            "github.createIssue - B/A none",
            "github.createIssue - A/A none",
        ],
        expect![[r#"
            github.searchIssues - A/- ro           => ask: new tool, not reviewed yet
            github.searchIssues - B/A ro           => ask: contract changed since review (sha256:aaaaaaaaaaaa… → sha256:bbbbbbbbbbbb…)
            github.createIssue - B/A none          => ask: contract changed since review (sha256:aaaaaaaaaaaa… → sha256:bbbbbbbbbbbb…)
            github.createIssue - A/A none          => allow: allowed by rule on github
        "#]],
    );
}

#[test]
fn any_matching_deny_wins() {
    check(
        r#"[
            {"source": "github", "connection": "work", "effect": "deny"},
            {"tool": "github.createIssue", "connection": "work", "effect": "allow", "contract": "@A"},
            {"tool": "github.createIssue", "effect": "allow"},
            {"tool": "github.deleteRepo", "effect": "deny"},
            {"source": "slack", "effect": "deny"},
            {"tool": "slack.postMessage", "connection": "bot", "effect": "allow"}
        ]"#,
        &[
            // A source deny beats an allow on the tool and connection.
            "github.createIssue work A/A rw",
            "github.createIssue personal A/A rw",
            "github.createIssue - A/A rw",
            // A tool deny beats read-only, and needs no review to apply.
            "github.deleteRepo - A/A ro",
            "github.deleteRepo - B/- ro",
            "slack.postMessage bot A/A rw",
            "slack.search - A/A ro",
        ],
        expect![[r#"
            github.createIssue work A/A rw         => deny: denied by rule on github (connection work)
            github.createIssue personal A/A rw     => allow: allowed by rule on github.createIssue
            github.createIssue - A/A rw            => allow: allowed by rule on github.createIssue
            github.deleteRepo - A/A ro             => deny: denied by rule on github.deleteRepo
            github.deleteRepo - B/- ro             => deny: denied by rule on github.deleteRepo
            slack.postMessage bot A/A rw           => deny: denied by rule on slack
            slack.search - A/A ro                  => deny: denied by rule on slack
        "#]],
    );
}

#[test]
fn the_most_specific_rule_decides() {
    check(
        r#"[
            {"tool": "github.createIssue", "connection": "work", "effect": "allow"},
            {"tool": "github.createIssue", "effect": "ask"},
            {"source": "github", "connection": "work", "effect": "allow"},
            {"source": "github", "effect": "ask"}
        ]"#,
        &[
            "github.createIssue work A/A rw",
            "github.createIssue personal A/A rw",
            "github.createIssue - A/A rw",
            "github.listIssues work A/A rw",
            "github.listIssues personal A/A rw",
            // A rule beats the tool's own hints, in both directions.
            "github.listIssues - A/A ro",
            "linear.listIssues - A/A ro",
        ],
        expect![[r#"
            github.createIssue work A/A rw         => allow: allowed by rule on github.createIssue (connection work)
            github.createIssue personal A/A rw     => ask: approval required by rule on github.createIssue
            github.createIssue - A/A rw            => ask: approval required by rule on github.createIssue
            github.listIssues work A/A rw          => allow: allowed by rule on github (connection work)
            github.listIssues personal A/A rw      => ask: approval required by rule on github
            github.listIssues - A/A ro             => ask: approval required by rule on github
            linear.listIssues - A/A ro             => allow: read-only tool
        "#]],
    );
}

#[test]
fn a_pinned_always_allow_stops_at_a_contract_change() {
    let before = r#"[
        {"tool": "github.createIssue", "connection": "work", "effect": "allow", "contract": "@A"},
        {"tool": "github.mergePr", "effect": "allow", "contract": "@A"},
        {"source": "github", "effect": "ask"}
    ]"#;
    check(
        before,
        &[
            // Before the refresh.
            "github.createIssue work A/A rw",
            "github.mergePr - A/A rw",
            // The refresh changed both contracts: they ask again.
            "github.createIssue work B/A rw",
            "github.mergePr - B/A rw",
            // A person reviewed the new contracts but did not renew the pins: the pinned rules
            // no longer match and the next rule (or the default) decides.
            "github.createIssue work B/B rw",
            "github.mergePr - B/B rw",
        ],
        expect![[r#"
            github.createIssue work A/A rw         => allow: allowed by rule on github.createIssue (connection work)
            github.mergePr - A/A rw                => allow: allowed by rule on github.mergePr
            github.createIssue work B/A rw         => ask: contract changed since review (sha256:aaaaaaaaaaaa… → sha256:bbbbbbbbbbbb…)
            github.mergePr - B/A rw                => ask: contract changed since review (sha256:aaaaaaaaaaaa… → sha256:bbbbbbbbbbbb…)
            github.createIssue work B/B rw         => ask: approval required by rule on github
            github.mergePr - B/B rw                => ask: approval required by rule on github
        "#]],
    );
}

#[test]
fn a_refresh_never_loosens_a_deny() {
    check(
        r#"[
            {"tool": "github.deleteRepo", "effect": "deny", "contract": "@A"},
            {"tool": "github.createIssue", "connection": "work", "effect": "deny"},
            {"tool": "github.createIssue", "effect": "allow", "contract": "@B"}
        ]"#,
        &[
            "github.deleteRepo - A/A rw!",
            "github.deleteRepo - B/A ro",
            "github.deleteRepo - B/B ro",
            "github.createIssue work B/B rw",
            "github.createIssue - B/B rw",
        ],
        expect![[r#"
            github.deleteRepo - A/A rw!            => deny: denied by rule on github.deleteRepo
            github.deleteRepo - B/A ro             => deny: denied by rule on github.deleteRepo
            github.deleteRepo - B/B ro             => deny: denied by rule on github.deleteRepo
            github.createIssue work B/B rw         => deny: denied by rule on github.createIssue (connection work)
            github.createIssue - B/B rw            => allow: allowed by rule on github.createIssue
        "#]],
    );
}

#[test]
fn rule_sets_are_stored_as_plain_json_and_refused_when_ambiguous() {
    let check_json = |json: &str, expect: Expect| {
        let json = json.replace("@A", &A.to_string());
        let out = match serde_json::from_str::<Policy>(&json) {
            Ok(policy) => serde_json::to_string_pretty(&policy).unwrap(),
            Err(e) => format!("error: {e}"),
        };
        expect.assert_eq(&out);
    };
    check_json(
        r#"[{"source":"github","effect":"ask"},{"tool":"github.createIssue","connection":"work","effect":"allow","contract":"@A"}]"#,
        expect![[r#"
            [
              {
                "source": "github",
                "effect": "ask"
              },
              {
                "tool": "github.createIssue",
                "connection": "work",
                "effect": "allow",
                "contract": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              }
            ]"#]],
    );
    check_json(
        r#"[{"tool":"github.createIssue","connection":"work","effect":"allow"},{"tool":"github.createIssue","connection":"work","effect":"deny"}]"#,
        expect![
            "error: two rules on github.createIssue (connection work): keep one of them and remove the other"
        ],
    );
    check_json(
        r#"[{"source":"github","effect":"allow","contract":"@A"}]"#,
        expect![
            "error: the rule on source github is pinned to a contract, but only tool rules can be: remove `contract` or put the rule on a tool"
        ],
    );
    check_json(
        r#"[{"source":"github","effect":"maybe"}]"#,
        expect!["error: unknown variant `maybe`, expected one of `allow`, `ask`, `deny` at line 1 column 36"],
    );
}

#[test]
fn an_always_allow_lands_by_replacing_the_rule_it_overrides() {
    let ns = Namespace::new("github").unwrap();
    let address = ToolAddress::new(ns.clone(), "createIssue");
    let mut policy =
        Policy::new(vec![Rule::on_tool(address.clone(), Effect::Ask).with_connection("work")]).unwrap();
    let replaced = policy.set(Rule::always_allow(address.clone(), Some("work".into()), A)).unwrap();
    assert_eq!(replaced.map(|r| r.effect), Some(Effect::Ask));
    let annotations = Annotations::default();
    let call = Call {
        address: &address,
        connection: Some("work"),
        digest: &A,
        annotations: &annotations,
        reviewed: Some(&A),
    };
    assert_eq!(
        policy.decide(&call).reason.to_string(),
        "allowed by rule on github.createIssue (connection work)"
    );
    assert_eq!(policy.decide(&call).reason.code(), "rule");
}

fn manifest(namespace: &str, json: &str) -> Manifest {
    let entries: Vec<Value> = serde_json::from_str(json).unwrap();
    Manifest::from_tools_list(Namespace::new(namespace).unwrap(), &entries).0
}

#[test]
fn listing_uses_the_default_connection() {
    let github = manifest("github", include_str!("../data/tools/github.json"));
    let policy: Policy = serde_json::from_str(
        r#"[
            {"source": "github", "connection": "work", "effect": "deny"},
            {"tool": "github.mergePullRequest", "effect": "deny"},
            {"tool": "github.searchIssues", "effect": "allow"},
            {"tool": "github.getIssue", "connection": "personal", "effect": "allow"}
        ]"#,
    )
    .unwrap();
    let mut out = String::new();
    for connection in [Some("personal"), Some("work"), None] {
        let mut line = format!("{connection:?}:");
        for ident in ["searchIssues", "getIssue", "mergePullRequest", "createIssue"] {
            let tool = github.tool(ident).unwrap();
            let effect =
                policy.effect_for_listing(&github.address(tool), tool, connection, Some(&tool.digest));
            line.push_str(&format!(" {ident}={effect}"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    let first = &github.tools[0];
    out.push_str(&format!(
        "unreviewed: {}",
        policy.effect_for_listing(&github.address(first), first, Some("personal"), None)
    ));
    expect![[r#"
        Some("personal"): searchIssues=allow getIssue=allow mergePullRequest=deny createIssue=ask
        Some("work"): searchIssues=deny getIssue=deny mergePullRequest=deny createIssue=deny
        None: searchIssues=allow getIssue=ask mergePullRequest=deny createIssue=ask
        unreviewed: ask"#]]
    .assert_eq(&out);
}

#[test]
fn review_proposes_allow_for_reads_and_flags_destructive_tools() {
    let mut out = String::new();
    for (ns, json) in [
        ("memory", include_str!("../data/tools/memory.json")),
        ("github", include_str!("../data/tools/github.json")),
    ] {
        for proposal in propose(&manifest(ns, json)).iter().take(9) {
            let flag = if proposal.flagged() { "  [destructive]" } else { "" };
            let rule = match proposal.rule_for(Effect::Allow) {
                Some(rule) if rule.pinned == Some(proposal.digest) => "allow needs a pinned rule",
                Some(_) => "allow needs a rule",
                None => "allow is the default",
            };
            out.push_str(&format!(
                "{:<28} {:<12} {:<5} ({rule}){flag}\n",
                proposal.address.to_string(),
                serde_json::to_value(proposal.class).unwrap().as_str().unwrap(),
                proposal.effect
            ));
        }
    }
    expect![[r#"
        memory.createEntities        writes       ask (allow needs a pinned rule)
        memory.createRelations       writes       ask (allow needs a pinned rule)
        memory.addObservations       writes       ask (allow needs a pinned rule)
        memory.deleteEntities        destructive  ask (allow needs a pinned rule)  [destructive]
        memory.deleteObservations    destructive  ask (allow needs a pinned rule)  [destructive]
        memory.deleteRelations       destructive  ask (allow needs a pinned rule)  [destructive]
        memory.readGraph             readOnly     allow (allow is the default)
        memory.searchNodes           readOnly     allow (allow is the default)
        memory.openNodes             readOnly     allow (allow is the default)
        github.createOrUpdateFile    destructive  ask (allow needs a pinned rule)  [destructive]
        github.searchRepositories    destructive  ask (allow needs a pinned rule)  [destructive]
        github.createRepository      destructive  ask (allow needs a pinned rule)  [destructive]
        github.getFileContents       destructive  ask (allow needs a pinned rule)  [destructive]
        github.pushFiles             destructive  ask (allow needs a pinned rule)  [destructive]
        github.createIssue           destructive  ask (allow needs a pinned rule)  [destructive]
        github.createPullRequest     destructive  ask (allow needs a pinned rule)  [destructive]
        github.forkRepository        destructive  ask (allow needs a pinned rule)  [destructive]
        github.createBranch          destructive  ask (allow needs a pinned rule)  [destructive]
    "#]]
    .assert_eq(&out);
}

#[test]
fn a_changed_contract_asks_and_says_what_changed() {
    use capabilities_core::address::Namespace;
    use capabilities_core::manifest::{Manifest, diff};
    use capabilities_core::policy::{CompiledPolicy, PolicyState};
    use capabilities_core::ports::PolicyView;
    use serde_json::json;

    let ns = Namespace::new("up").unwrap();
    let tool = |description: &str, props: serde_json::Value| json!({"name": "save", "description": description, "inputSchema": {"type": "object", "properties": props}});
    let (before, _) =
        Manifest::from_tools_list(ns.clone(), &[tool("Saves a note.", json!({"text": {"type": "string"}}))]);
    let (after, _) = Manifest::from_tools_list(
        ns.clone(),
        &[tool("Saves a note and mails it.", json!({"text": {"type": "string"}, "to": {"type": "string"}}))],
    );
    let changed = diff(&before, &after);
    let address = before.address(&before.tools[0]);
    let mut state = PolicyState::default();
    state.pin(address.to_string(), before.tools[0].digest);
    for tool in &changed.changed {
        let lines: Vec<String> = tool.changes.iter().map(ToString::to_string).collect();
        state.note_changes(&address.to_string(), &tool.after, &lines);
    }
    let policy = CompiledPolicy::new(state.clone()).unwrap();
    let verdict = policy.decide(&address, None, &after.tools[0]);
    expect_test::expect![[r#"Ask: contract changed since review (sha256:785965386f5c… → sha256:97fb522e9a1f…): description changed from "Saves a note." to "Saves a note and mails it."; input schema: new optional parameter `to` (string)"#]]
    .assert_eq(&format!("{:?}: {}", verdict.effect, verdict.reason));

    // Accepting the new contract forgets the change.
    state.pin(address.to_string(), after.tools[0].digest);
    assert!(state.changes.is_empty());
}
