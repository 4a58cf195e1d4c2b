//! `hub push`: what a local hub sends its hosted hub, and the plan the hosted hub answers with.
//!
//! A push is the local hub's HTTP sources (with their manifests and connections), its policy,
//! its named profiles (each served at its own MCP address, checked as a load checks them), its
//! skill library (each skill's manifest here, the files' bytes sent before applying, in parts:
//! `skills.rs`), the sources it left out (stdio ones cannot run hosted) and, only with
//! `--secrets`, credential values. The hosted hub first answers with a [`Plan`] — what is added, changed, removed and
//! left out, which stored secrets are kept, dropped or still missing — and its [`hash`]. Applying
//! sends the same push with that hash; the hub computes the plan again from what it holds now
//! and refuses when the hash differs, so a plan that changed in between is never applied blind.
//!
//! Unlike an admin load, a push keeps the secrets the hosted hub already holds for the
//! connections that stay, so pushing without `--secrets` loses nothing.
//!
//! Both sides use this module: the local binary builds the push, the Worker plans and applies it.

use std::collections::{BTreeMap, BTreeSet};

use capabilities_core::policy::PolicyState;
use capabilities_core::profile::Profile;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::records::{Connection, Load, LoadError, OAUTH_SLOT, SecretValues, Source};
use crate::skills::{self, PushedSkill};

/// The largest number of sources one push may carry.
pub const MAX_SOURCES: usize = 500;

/// A source the local hub has and did not send, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub namespace: String,
    pub reason: String,
}

/// The body of `POST /hub/push`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Push {
    #[serde(default)]
    pub sources: Vec<Source>,
    #[serde(default)]
    pub policy: PolicyState,
    /// Credential values, sent only when the person asked (`withSecrets`).
    #[serde(default)]
    pub secrets: Vec<SecretValues>,
    /// Whether the person ran `hub push --secrets`; values without it are refused.
    #[serde(default)]
    pub with_secrets: bool,
    #[serde(default)]
    pub left_out: Vec<LeftOut>,
    /// The local hub's profiles besides `default`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Profile>,
    /// The local hub's skills, each with its files' digests (the bytes go in parts first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<PushedSkill>,
    /// The hash of the plan to apply; without it the hub only answers with the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<String>,
}

/// Why a push was refused; nothing was recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    #[error(
        "this push carries secret values but was not sent with --secrets; nothing was recorded (run `hub push \
         --secrets` to send them)"
    )]
    SecretsWithoutConsent,
    #[error("a push carries at most {MAX_SOURCES} sources")]
    TooMany,
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{0}")]
    Skill(String),
}

/// What the hosted hub holds before a push, as far as a plan needs it.
#[derive(Debug, Clone, Default)]
pub struct Current {
    pub sources: Vec<Source>,
    pub policy: PolicyState,
    /// The slots with a stored value: (namespace, connection, slot).
    pub filled: BTreeSet<(String, String, String)>,
    pub profiles: Vec<Profile>,
    pub skills: Vec<PushedSkill>,
}

/// A source that stays but differs, with what differs in a person's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    pub namespace: String,
    pub what: Vec<String>,
}

/// What applying a push would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub added: Vec<String>,
    pub changed: Vec<Changed>,
    pub removed: Vec<String>,
    pub unchanged: Vec<String>,
    pub left_out: Vec<LeftOut>,
    /// The policy's rules added and removed, by count; `reviewed` says whether the reviewed
    /// contracts differ.
    pub policy: PolicyPlan,
    pub secrets: SecretsPlan,
    /// Tools the hosted hub serves after the push.
    pub tools: usize,
    /// The profiles the hosted hub serves after the push, besides `default`.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// Which of them are new, which differ from the hosted hub's, which go.
    #[serde(default)]
    pub profile_changes: Changes,
    /// The skills added, changed (another digest) and removed; how many stay as they are.
    #[serde(default)]
    pub skills: SkillsPlan,
    /// What is applied but may not be what the person meant (a profile's pattern that matches
    /// no tool pushed).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Named things added, changed and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
}

/// What a push does to the skill library.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsPlan {
    pub added: Vec<String>,
    pub changed: Vec<SkillChanged>,
    pub removed: Vec<String>,
    pub unchanged: usize,
}

/// A skill whose files differ: its digest before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillChanged {
    pub name: String,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyPlan {
    pub rules_added: usize,
    pub rules_removed: usize,
    pub reviewed_changed: bool,
}

/// Secrets named `namespace/connection slot`; never a value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretsPlan {
    /// Values this push stores (new or replacing).
    pub sent: Vec<String>,
    /// Values the hosted hub keeps from before.
    pub kept: Vec<String>,
    /// Values the hosted hub drops: their connection or slot is gone.
    pub dropped: Vec<String>,
    /// Declared slots that will have no value on the hosted hub.
    pub missing: Vec<String>,
}

fn slot_name(namespace: &str, connection: &str, slot: &str) -> String {
    format!("{namespace}/{connection} {slot}")
}

/// Every slot a source's connections declare, `#oauth` for an OAuth connection.
fn declared(source: &Source) -> impl Iterator<Item = (&Connection, &str)> {
    source.connections.iter().flat_map(|c| {
        let oauth = c.oauth.as_ref().map(|_| OAUTH_SLOT);
        c.slots.iter().map(String::as_str).chain(oauth).map(move |slot| (c, slot))
    })
}

impl Push {
    /// Checks the push as a load is checked, and that values come only with consent.
    pub fn check(&self) -> Result<(), PushError> {
        if self.sources.len() > MAX_SOURCES {
            return Err(PushError::TooMany);
        }
        if !self.with_secrets && self.secrets.iter().any(|s| !s.values.is_empty()) {
            return Err(PushError::SecretsWithoutConsent);
        }
        self.as_load().check()?;
        skills::check_library(&self.skills).map_err(PushError::Skill)?;
        Ok(())
    }

    /// The push as a load: its sources, policy and values.
    pub fn as_load(&self) -> Load {
        Load {
            sources: self.sources.clone(),
            policy: self.policy.clone(),
            secrets: self.secrets.clone(),
            upstream_timeout_ms: None,
            profiles: self.profiles.clone(),
        }
    }

    fn sent(&self) -> BTreeSet<(String, String, String)> {
        self.secrets
            .iter()
            .flat_map(|s| {
                s.values.iter().map(|(slot, _)| (s.namespace.clone(), s.connection.clone(), slot.clone()))
            })
            .collect()
    }

    /// The stored values that survive this push: their connection still declares the slot, and
    /// an OAuth connection still signs in as the same client (tokens of another client are
    /// useless, so they go).
    pub fn kept(&self, current: &Current) -> BTreeSet<(String, String, String)> {
        let sent = self.sent();
        current
            .filled
            .iter()
            .filter(|key| !sent.contains(*key))
            .filter(|(ns, conn, slot)| {
                let new = self
                    .sources
                    .iter()
                    .find(|s| &s.namespace == ns)
                    .and_then(|s| s.connections.iter().find(|c| &c.name == conn));
                let Some(new) = new else { return false };
                if slot == OAUTH_SLOT {
                    let old = current
                        .sources
                        .iter()
                        .find(|s| &s.namespace == ns)
                        .and_then(|s| s.connections.iter().find(|c| &c.name == conn))
                        .and_then(|c| c.oauth.as_ref());
                    new.oauth.is_some() && new.oauth.as_ref() == old
                } else {
                    new.slots.contains(slot)
                }
            })
            .cloned()
            .collect()
    }

    /// What applying this push to `current` would do.
    pub fn plan(&self, current: &Current) -> Plan {
        let old: BTreeMap<&str, &Source> =
            current.sources.iter().map(|s| (s.namespace.as_str(), s)).collect();
        let new: BTreeMap<&str, &Source> = self.sources.iter().map(|s| (s.namespace.as_str(), s)).collect();
        let mut plan = Plan {
            added: vec![],
            changed: vec![],
            removed: old.keys().filter(|ns| !new.contains_key(*ns)).map(|ns| (*ns).to_owned()).collect(),
            unchanged: vec![],
            left_out: self.left_out.clone(),
            policy: policy_plan(&current.policy, &self.policy),
            secrets: SecretsPlan::default(),
            tools: self.sources.iter().map(|s| s.manifest.tools.len()).sum(),
            profiles: self.profiles.iter().map(|p| p.name.clone()).collect(),
            profile_changes: changes(&current.profiles, &self.profiles, |p| &p.name),
            skills: skills_plan(&current.skills, &self.skills),
            warnings: self.as_load().warnings(),
        };
        plan.left_out.sort_by(|a, b| a.namespace.cmp(&b.namespace));
        for (ns, source) in &new {
            match old.get(ns) {
                None => plan.added.push((*ns).to_owned()),
                Some(before) => {
                    let what = differences(before, source);
                    if what.is_empty() {
                        plan.unchanged.push((*ns).to_owned());
                    } else {
                        plan.changed.push(Changed { namespace: (*ns).to_owned(), what });
                    }
                }
            }
        }
        let sent = self.sent();
        let kept = self.kept(current);
        let name = |(ns, conn, slot): &(String, String, String)| slot_name(ns, conn, slot);
        plan.secrets.sent = sent.iter().map(name).collect();
        plan.secrets.kept = kept.iter().map(name).collect();
        plan.secrets.dropped =
            current.filled.iter().filter(|k| !kept.contains(*k) && !sent.contains(*k)).map(name).collect();
        plan.secrets.missing = self
            .sources
            .iter()
            .flat_map(|s| {
                declared(s).map(move |(c, slot)| (s.namespace.clone(), c.name.clone(), slot.to_owned()))
            })
            .filter(|k| !kept.contains(k) && !sent.contains(k))
            .map(|k| name(&k))
            .collect();
        plan
    }
}

/// What is added, changed and removed from `before` to `after`, things named by `name`.
fn changes<T: Serialize>(before: &[T], after: &[T], name: impl Fn(&T) -> &String) -> Changes {
    let old: BTreeMap<&String, String> =
        before.iter().map(|t| (name(t), serde_json::to_string(t).unwrap_or_default())).collect();
    let new: BTreeMap<&String, String> =
        after.iter().map(|t| (name(t), serde_json::to_string(t).unwrap_or_default())).collect();
    Changes {
        added: new.keys().filter(|n| !old.contains_key(*n)).map(|n| (*n).clone()).collect(),
        changed: new
            .iter()
            .filter(|(n, t)| old.get(*n).is_some_and(|o| o != *t))
            .map(|(n, _)| (*n).clone())
            .collect(),
        removed: old.keys().filter(|n| !new.contains_key(*n)).map(|n| (*n).clone()).collect(),
    }
}

/// The skills added, changed (by digest) and removed.
fn skills_plan(before: &[PushedSkill], after: &[PushedSkill]) -> SkillsPlan {
    let old: BTreeMap<&str, &PushedSkill> = before.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut plan = SkillsPlan::default();
    let mut names: Vec<&PushedSkill> = after.iter().collect();
    names.sort_by(|a, b| a.name.cmp(&b.name));
    for skill in names {
        match old.get(skill.name.as_str()) {
            None => plan.added.push(skill.name.clone()),
            // The front matter as read, too: a reader of another version may read it otherwise.
            Some(was) if was.digest != skill.digest || *was != skill => plan.changed.push(SkillChanged {
                name: skill.name.clone(),
                from: was.digest.clone(),
                to: skill.digest.clone(),
            }),
            Some(_) => plan.unchanged += 1,
        }
    }
    let new: BTreeSet<&str> = after.iter().map(|s| s.name.as_str()).collect();
    plan.removed = old.keys().filter(|n| !new.contains(*n)).map(|n| (*n).to_owned()).collect();
    plan
}

fn policy_plan(before: &PolicyState, after: &PolicyState) -> PolicyPlan {
    let key = |r: &capabilities_core::policy::Rule| serde_json::to_string(r).unwrap_or_default();
    let old: BTreeSet<String> = before.rules.iter().map(key).collect();
    let new: BTreeSet<String> = after.rules.iter().map(key).collect();
    PolicyPlan {
        rules_added: new.difference(&old).count(),
        rules_removed: old.difference(&new).count(),
        reviewed_changed: before.reviewed != after.reviewed,
    }
}

/// What differs between a source as the hosted hub has it and as pushed.
fn differences(before: &Source, after: &Source) -> Vec<String> {
    let mut what = Vec::new();
    if before.url != after.url {
        what.push(format!("URL {} → {}", before.url, after.url));
    }
    if before.reviewed_origin != after.reviewed_origin {
        what.push(format!("reviewed origin {} → {}", before.reviewed_origin, after.reviewed_origin));
    }
    let tools = |s: &Source| -> BTreeMap<String, String> {
        s.manifest.tools.iter().map(|t| (t.record.name.clone(), t.digest.to_string())).collect()
    };
    let (old, new) = (tools(before), tools(after));
    let added = new.keys().filter(|k| !old.contains_key(*k)).count();
    let removed = old.keys().filter(|k| !new.contains_key(*k)).count();
    let changed = new.iter().filter(|(k, d)| old.get(*k).is_some_and(|o| o != *d)).count();
    if added + removed + changed > 0 {
        what.push(format!("tools: {added} added, {changed} changed, {removed} removed"));
    }
    if before.manifest.description != after.manifest.description {
        what.push("description".to_owned());
    }
    if before.connections != after.connections || before.default_connection != after.default_connection {
        what.push("connections".to_owned());
    }
    what
}

/// The hash a plan is applied with: SHA-256 over what the hosted hub holds (sources, policy,
/// which slots have values) and the push itself (without `apply`; values only as digests), so
/// it changes when either side does.
pub fn hash(current: &Current, push: &Push) -> String {
    let values: Vec<Value> = push
        .secrets
        .iter()
        .map(|s| {
            let values: Vec<Value> =
                s.values.iter().map(|(slot, v)| json!([slot, hex(&Sha256::digest(v.as_bytes()))])).collect();
            json!({ "namespace": s.namespace, "connection": s.connection, "values": values })
        })
        .collect();
    let document = json!({
        "v": 1,
        "current": {
            "sources": current.sources,
            "policy": current.policy,
            "filled": current.filled.iter().collect::<Vec<_>>(),
            "profiles": current.profiles,
            "skills": current.skills,
        },
        "push": {
            "sources": push.sources,
            "policy": push.policy,
            "secrets": values,
            "withSecrets": push.with_secrets,
            "leftOut": push.left_out,
            "profiles": push.profiles,
            "skills": push.skills,
        },
    });
    let canonical = capabilities_core::canonical::to_string(&document);
    format!("sha256:{}", hex(&Sha256::digest(canonical.as_bytes())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A plan in a person's words, one line per fact, for the terminal.
pub fn describe(plan: &Plan) -> Vec<String> {
    let mut lines = Vec::new();
    let list = |names: &[String]| names.join(", ");
    if !plan.added.is_empty() {
        lines.push(format!("add {}", list(&plan.added)));
    }
    for changed in &plan.changed {
        lines.push(format!("change {}: {}", changed.namespace, changed.what.join("; ")));
    }
    if !plan.removed.is_empty() {
        lines.push(format!("remove {}", list(&plan.removed)));
    }
    if !plan.unchanged.is_empty() {
        lines.push(format!("unchanged {}", list(&plan.unchanged)));
    }
    for left in &plan.left_out {
        lines.push(format!("left out {}: {}", left.namespace, left.reason));
    }
    let p = &plan.policy;
    if p.rules_added + p.rules_removed > 0 || p.reviewed_changed {
        let reviewed = if p.reviewed_changed { ", reviewed contracts updated" } else { "" };
        lines.push(format!("policy: {} rules added, {} removed{reviewed}", p.rules_added, p.rules_removed));
    }
    let s = &plan.secrets;
    if !s.sent.is_empty() {
        lines.push(format!("store secrets {}", list(&s.sent)));
    }
    if !s.kept.is_empty() {
        lines.push(format!("keep secrets {}", list(&s.kept)));
    }
    if !s.dropped.is_empty() {
        lines.push(format!("drop secrets {}", list(&s.dropped)));
    }
    if !s.missing.is_empty() {
        lines.push(format!("no value for {} (send them with `hub push --secrets`)", list(&s.missing)));
    }
    let p = &plan.profile_changes;
    for (verb, names) in [("add", &p.added), ("change", &p.changed), ("remove", &p.removed)] {
        if !names.is_empty() {
            lines.push(format!("{verb} profile{} {}", if names.len() == 1 { "" } else { "s" }, list(names)));
        }
    }
    if !plan.profiles.is_empty() {
        lines.push(format!("profiles {} (besides default)", list(&plan.profiles)));
    }
    let k = &plan.skills;
    if !k.added.is_empty() {
        lines.push(format!("add skill{} {}", if k.added.len() == 1 { "" } else { "s" }, list(&k.added)));
    }
    for changed in &k.changed {
        lines.push(format!(
            "change skill {}: {} → {}",
            changed.name,
            short(&changed.from),
            short(&changed.to)
        ));
    }
    if !k.removed.is_empty() {
        lines.push(format!(
            "remove skill{} {}",
            if k.removed.len() == 1 { "" } else { "s" },
            list(&k.removed)
        ));
    }
    if k.unchanged > 0 {
        lines.push(format!("{} skill{} unchanged", k.unchanged, if k.unchanged == 1 { "" } else { "s" }));
    }
    for warning in &plan.warnings {
        lines.push(format!("warning: {warning}"));
    }
    lines.push(format!("{} tools hosted after the push", plan.tools));
    lines
}

/// A digest as a person reads it: `sha256:` and its first 12 hex digits.
fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use capabilities_core::address::Namespace;
    use capabilities_core::manifest::Manifest;

    fn source(ns: &str, tools: &[&str], slots: &[&str]) -> Source {
        let entries: Vec<Value> = tools
            .iter()
            .map(|t| json!({ "name": t, "description": format!("{t} things"), "inputSchema": {"type": "object"} }))
            .collect();
        let (manifest, _) = Manifest::from_tools_list(Namespace::new(ns).unwrap(), &entries);
        Source {
            namespace: ns.into(),
            url: format!("https://{ns}.example.com/mcp"),
            reviewed_origin: format!("https://{ns}.example.com"),
            manifest,
            connections: vec![Connection {
                name: "default".into(),
                slots: slots.iter().map(|s| (*s).to_owned()).collect(),
                oauth: None,
            }],
            default_connection: Some("default".into()),
            api: None,
        }
    }

    fn filled(keys: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
        keys.iter().map(|(a, b, c)| ((*a).into(), (*b).into(), (*c).into())).collect()
    }

    #[test]
    fn a_plan_says_what_is_added_changed_removed_and_kept() {
        let current = Current {
            sources: vec![
                source("crm", &["a", "b"], &["x-api-key"]),
                source("old", &["z"], &["authorization"]),
            ],
            policy: PolicyState::default(),
            filled: filled(&[("crm", "default", "x-api-key"), ("old", "default", "authorization")]),
            profiles: Vec::new(),
            skills: Vec::new(),
        };
        let push = Push {
            sources: vec![
                source("crm", &["a", "b", "c"], &["x-api-key"]),
                source("docs", &["d"], &["authorization"]),
            ],
            left_out: vec![LeftOut { namespace: "memory".into(), reason: "stdio".into() }],
            ..Push::default()
        };
        push.check().unwrap();
        let plan = push.plan(&current);
        assert_eq!(plan.added, ["docs"]);
        assert_eq!(plan.removed, ["old"]);
        assert_eq!(plan.changed[0].what, ["tools: 1 added, 0 changed, 0 removed"]);
        assert_eq!(plan.secrets.kept, ["crm/default x-api-key"]);
        assert_eq!(plan.secrets.dropped, ["old/default authorization"]);
        assert_eq!(plan.secrets.missing, ["docs/default authorization"]);
        assert_eq!(plan.tools, 4);
        let lines = describe(&plan).join("\n");
        assert!(lines.contains("left out memory: stdio"), "{lines}");
    }

    #[test]
    fn the_hash_changes_with_either_side_and_values_need_consent() {
        let current = Current::default();
        let mut push = Push { sources: vec![source("crm", &["a"], &["x-api-key"])], ..Push::default() };
        let first = hash(&current, &push);
        assert_eq!(first, hash(&current, &push));
        push.apply = Some(first.clone());
        assert_eq!(first, hash(&current, &push), "apply is not part of the hash");
        let moved = Current { sources: vec![source("other", &["a"], &[])], ..Current::default() };
        assert_ne!(first, hash(&moved, &push));
        push.secrets = vec![SecretValues {
            namespace: "crm".into(),
            connection: "default".into(),
            values: vec![("x-api-key".into(), "sk-1".into())],
        }];
        assert_eq!(push.check(), Err(PushError::SecretsWithoutConsent));
        push.with_secrets = true;
        push.check().unwrap();
        let with_one = hash(&current, &push);
        push.secrets[0].values[0].1 = "sk-2".into();
        assert_ne!(with_one, hash(&current, &push), "a changed value changes the hash");
        assert!(!with_one.contains("sk-1"));
        assert_eq!(push.plan(&current).secrets.sent, ["crm/default x-api-key"]);
    }

    #[test]
    fn profiles_are_sent_checked_and_hashed() {
        let current = Current::default();
        let mut push = Push { sources: vec![source("crm", &["a"], &[])], ..Push::default() };
        let without = hash(&current, &push);
        push.profiles = vec![Profile::serving("sales", vec!["crm".into(), "memory".into()])];
        push.check().unwrap();
        assert_ne!(without, hash(&current, &push), "profiles are part of the plan");
        let plan = push.plan(&current);
        assert_eq!(plan.profiles, ["sales"]);
        let lines = describe(&plan).join("\n");
        assert!(lines.contains("profiles sales (besides default)"), "{lines}");
        assert!(
            lines.contains("warning: profile `sales` serves `memory`, which matches no tool sent"),
            "{lines}"
        );
        let rule =
            |effect: &str| serde_json::from_value(json!({ "source": "crm", "effect": effect })).unwrap();
        push.profiles[0].rules = vec![rule("allow")];
        let refused = push.check().unwrap_err().to_string();
        assert!(
            refused.starts_with("profile `sales`: ") && refused.contains("can only tighten"),
            "{refused}"
        );
        push.profiles[0].rules = vec![rule("deny")];
        push.profiles.push(push.profiles[0].clone());
        assert_eq!(
            push.check().unwrap_err().to_string(),
            "profile `sales` is sent twice; send each profile once"
        );
        push.profiles = vec![Profile::everything()];
        assert!(push.check().unwrap_err().to_string().contains("`default` is built in"));
        push.profiles = vec![Profile::serving("Bad Name", vec!["crm".into()])];
        assert!(push.check().unwrap_err().to_string().contains("is not a profile name"));
    }

    fn pushed(name: &str, body: &str) -> PushedSkill {
        let sha = skills::hex(&Sha256::digest(body.as_bytes()));
        let files =
            vec![skills::SkillFile { path: "SKILL.md".into(), sha256: sha.clone(), size: body.len() as u64 }];
        let mut frontmatter = serde_json::Map::new();
        frontmatter.insert("name".into(), json!(name));
        frontmatter.insert("description".into(), json!("Does things."));
        PushedSkill {
            name: name.into(),
            digest: skills::skill_digest([("SKILL.md", sha.as_str())]),
            description: "Does things.".into(),
            frontmatter,
            files,
        }
    }

    #[test]
    fn the_plan_says_which_skills_and_profiles_are_added_changed_and_removed() {
        let current = Current {
            skills: vec![pushed("keep", "a"), pushed("edit", "b"), pushed("gone", "c")],
            profiles: vec![
                Profile::serving("same", vec!["crm".into()]),
                Profile::serving("moved", vec!["crm".into()]),
                Profile::serving("old", vec!["crm".into()]),
            ],
            ..Current::default()
        };
        let push = Push {
            sources: vec![source("crm", &["a"], &[])],
            skills: vec![pushed("keep", "a"), pushed("edit", "b2"), pushed("new", "d")],
            profiles: vec![
                Profile::serving("same", vec!["crm".into()]),
                Profile::serving("moved", vec!["crm.a".into()]),
                Profile::serving("fresh", vec!["crm".into()]),
            ],
            ..Push::default()
        };
        push.check().unwrap();
        let plan = push.plan(&current);
        assert_eq!(plan.skills.added, ["new"]);
        assert_eq!(plan.skills.removed, ["gone"]);
        assert_eq!(plan.skills.unchanged, 1);
        assert_eq!(plan.skills.changed[0].name, "edit");
        assert_eq!(plan.skills.changed[0].from, current.skills[1].digest);
        assert_eq!(plan.profile_changes.added, ["fresh"]);
        assert_eq!(plan.profile_changes.changed, ["moved"]);
        assert_eq!(plan.profile_changes.removed, ["old"]);
        let lines = describe(&plan).join("\n");
        assert!(lines.contains("add skill new\nchange skill edit: sha256:"), "{lines}");
        assert!(lines.contains("remove skill gone\n1 skill unchanged"), "{lines}");
        assert!(lines.contains("add profile fresh\nchange profile moved\nremove profile old"), "{lines}");
        let before = hash(&current, &push);
        let mut other = push.clone();
        other.skills[0] = pushed("keep", "a2");
        assert_ne!(before, hash(&current, &other), "the skills are part of the hash");
        other.skills[0].digest = current.skills[0].digest.clone();
        assert!(other.check().unwrap_err().to_string().contains("does not match its files"));
    }
}
