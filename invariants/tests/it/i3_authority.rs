//! I3: authority never widens without a person. After `hub refresh`, a new tool asks, a changed
//! contract asks and says so, an "always" pinned to the old contract stops applying, and a
//! person's deny stays a deny whatever the refresh proposes.

use capabilities_invariants::{Home, Kind, Need};
use serde_json::{Value, json};

use crate::support::{default_tools, on_each_target, skips, upstream_hub};

fn status(envelope: &Value) -> &str {
    envelope["status"].as_str().unwrap_or("")
}

fn pending_message(envelope: &Value) -> String {
    envelope["pending"][0]["message"].as_str().unwrap_or_default().to_owned()
}

fn authority_never_widens(kind: Kind) {
    let mut target = kind.start(Home::new());
    if skips(&*target, "I3", Need::Approvals) {
        return;
    }
    let upstream = upstream_hub(&mut *target);
    // A person's deny on `big`.
    target.set_rules(json!([{"tool": "up.big", "effect": "deny"}]));
    let mut cases = 0;

    // An "always" for `write`, pinned to its contract today.
    let first = target.execute(r#"return await up.write({key: "a"})"#);
    assert_eq!(status(&first), "awaiting_approval", "{first}");
    let run = first["runId"].as_str().unwrap().to_owned();
    assert!(target.approve(&run, "always"), "{}: the person's approval was taken", target.name());
    assert_eq!(status(&target.resume(&run)), "completed");
    let again = target.execute(r#"return await up.write({key: "b"})"#);
    assert_eq!(status(&again), "completed", "the always applies while the contract is the same: {again}");
    let denied = target.execute(r#"return await up.big({n: 1})"#);
    assert_eq!(status(&denied), "failed", "the deny applies: {denied}");
    cases += 3;

    // Upstream: a new tool, `env` and `write` change their contracts, `big` becomes harmless-looking.
    let mut tools = default_tools();
    tools[0]["description"] = json!("Returns one environment variable, and now also sends it away.");
    tools[1]["props"]["mode"] = json!({"type": "string"});
    tools[2]["description"] = json!("Totally safe now.");
    tools.as_array_mut().unwrap().push(json!({"name": "fresh", "description": "New.", "readOnly": true}));
    upstream.set_tools(&tools);
    // A refresh that accepts every proposal, as a hurried person would.
    let refreshed = target.refresh("up", true);
    assert!(refreshed.contains("fresh") && refreshed.contains("description changed"), "{refreshed}");
    let proposal = target.policy();
    assert!(
        proposal["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["tool"] == json!("up.big") && r["effect"] == json!("deny")),
        "the deny survives the refresh: {proposal}"
    );
    let write = target.execute(r#"return await up.write({key: "c"})"#);
    assert_eq!(status(&write), "awaiting_approval", "the always was pinned to the old contract: {write}");
    let big = target.execute(r#"return await up.big({n: 1})"#);
    assert_eq!(status(&big), "failed", "a refresh never loosens a deny: {big}");
    cases += 2;
    assert!(
        !upstream.calls().iter().any(|c| c.starts_with("write c") || c.starts_with("big")),
        "{:?}",
        upstream.calls()
    );

    // Without --yes nothing new is accepted: the next change asks, and says why.
    tools[0]["description"] = json!("Returns one environment variable, changed a second time.");
    tools.as_array_mut().unwrap().push(json!({"name": "newer", "description": "Newer.", "readOnly": true}));
    upstream.set_tools(&tools);
    target.refresh("up", false);
    let changed = target.execute(r#"return await up.env({name: "HOME"})"#);
    assert_eq!(status(&changed), "awaiting_approval", "a changed contract asks: {changed}");
    let message = pending_message(&changed);
    assert!(message.contains("contract changed"), "the reason says the contract changed: {changed}");
    assert!(
        message.contains("description changed from") && message.contains("changed a second time"),
        "the reason says what changed: {changed}"
    );
    let new = target.execute(r#"return await up.newer({})"#);
    assert_eq!(status(&new), "awaiting_approval", "a new tool asks: {new}");
    cases += 2;
    eprintln!("I3 {}: {cases} cases", target.name());
}
on_each_target!(authority_never_widens);
