//! Named profiles (`profiles/<name>.json`): which sources and tools a served endpoint reaches,
//! and rules over the hub's policy that may only tighten it. `default` is built in: every
//! source, the hub's policy as it is.
//!
//! A profile narrows the catalog the engine runs with, so a tool it does not serve is unknown
//! to the code, to `search` and `describe`, and to a call: enforced when the call is made, not
//! only when tools are listed.

use anyhow::{Result, bail};
use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::policy::{CompiledPolicy, Effect, Policy, Rule};
pub use capabilities_core::surface::direct::Naming;
use serde::{Deserialize, Serialize};

use crate::config::{HubConfig, read_json, write_json};
use crate::store::Store;

/// The profile every harness gets unless told otherwise.
pub const DEFAULT: &str = "default";

/// `profiles/<name>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub name: String,
    /// What it serves: a namespace (`github`), a tool address (`github.searchIssues`), or
    /// either with `*` standing for any run of characters (`github.list*`, `*`).
    pub serves: Vec<String>,
    /// Rules over the hub's policy, `ask` or `deny` only.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// What a client sees: the three tools (code), or each tool as its own (direct).
    #[serde(default, skip_serializing_if = "is_default")]
    pub mode: Mode,
    /// How direct mode names the tools.
    #[serde(default, skip_serializing_if = "is_default")]
    pub naming: Naming,
}

/// What a client of a profile sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `search`, `describe` and `execute`: the model writes code against every tool.
    #[default]
    Code,
    /// Each tool the profile serves, listed as an MCP tool of its own.
    Direct,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Code => "code",
            Mode::Direct => "direct",
        }
    }
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Profile {
    /// The built-in profile: everything, nothing tightened.
    pub fn everything() -> Profile {
        Profile::serving(DEFAULT, vec!["*".to_owned()])
    }

    /// A profile in code mode serving `serves`, with no rules.
    pub fn serving(name: &str, serves: Vec<String>) -> Profile {
        Profile {
            name: name.to_owned(),
            serves,
            rules: Vec::new(),
            mode: Mode::Code,
            naming: Naming::Prefixed,
        }
    }

    /// Whether the profile serves the tool at `address`.
    pub fn serves(&self, address: &ToolAddress) -> bool {
        let full = address.to_string();
        self.serves.iter().any(|pattern| match pattern.contains('.') {
            true => wildcard(pattern, &full),
            false => wildcard(pattern, address.namespace.as_str()),
        })
    }

    /// The patterns that match no tool of `config`, for a warning or an error.
    pub fn unmatched<'p>(&'p self, config: &HubConfig) -> Vec<&'p str> {
        let addresses: Vec<ToolAddress> = config
            .sources
            .iter()
            .filter_map(|(_, manifest, _)| manifest.as_ref())
            .flat_map(|m| m.tools.iter().map(|t| m.address(t)))
            .collect();
        self.serves
            .iter()
            .filter(|pattern| {
                let one = Profile::serving("", vec![(*pattern).clone()]);
                !addresses.iter().any(|a| one.serves(a))
            })
            .map(String::as_str)
            .collect()
    }

    /// Checks what a person typed: a valid name, patterns of namespace and tool characters,
    /// rules that only tighten.
    pub fn check(&self) -> Result<()> {
        check_name(&self.name)?;
        if self.serves.is_empty() {
            bail!("profile `{}` serves nothing: give it at least one --serves pattern", self.name);
        }
        for pattern in &self.serves {
            let ok = !pattern.is_empty()
                && pattern.len() <= 200
                && pattern.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.*".contains(&b))
                && pattern.matches('.').count() <= 1;
            if !ok {
                bail!(
                    "`{pattern}` is not a pattern: use a namespace (github), a tool address \
                     (github.searchIssues) or either with * (github.list*, *)"
                );
            }
        }
        CompiledPolicy::default().with_overlay(self.rules.clone())?;
        Ok(())
    }

    /// The catalog of `config` this profile serves.
    pub fn catalog(&self, config: &HubConfig) -> Catalog {
        Catalog::new(
            config
                .sources
                .iter()
                .filter_map(|(_, manifest, connections)| {
                    let mut manifest = manifest.clone()?;
                    let namespace = manifest.namespace.clone();
                    manifest
                        .tools
                        .retain(|tool| self.serves(&ToolAddress::new(namespace.clone(), tool.ident.clone())));
                    if manifest.tools.is_empty() {
                        return None;
                    }
                    Some(SourceView {
                        manifest,
                        connections: connections.connections.iter().map(|c| c.name.clone()).collect(),
                        default_connection: connections.default.clone(),
                    })
                })
                .collect(),
        )
    }

    /// A rule of this profile on `target` (`github` or `github.deleteRepo`) with `effect`.
    pub fn rule(target: &str, effect: Effect) -> Result<Rule> {
        if effect == Effect::Allow {
            bail!("a profile can only tighten the hub's policy: use ask or deny");
        }
        Ok(match target.split_once('.') {
            Some(_) => Rule::on_tool(
                ToolAddress::parse(target)
                    .map_err(|e| anyhow::anyhow!("`{target}` is not a tool address: {e}"))?,
                effect,
            ),
            None => Rule::on_source(
                Namespace::new(target).map_err(|e| anyhow::anyhow!("`{target}` is not a namespace: {e}"))?,
                effect,
            ),
        })
    }

    /// The rules as a policy, to show them.
    pub fn policy(&self) -> Result<Policy> {
        Ok(Policy::new(self.rules.clone())?)
    }
}

/// Where profile `name` lives.
pub fn profile_path(name: &str) -> String {
    format!("profiles/{name}.json")
}

/// Profile names are file names: lowercase letters, digits, `-` and `_`, up to 32.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if !ok {
        bail!("`{name}` is not a profile name: use lowercase letters, digits, - and _, up to 32 characters");
    }
    Ok(())
}

/// Profile `name`; `None` when there is none. `default` is always there.
pub fn load(store: &Store, name: &str) -> Result<Option<Profile>> {
    check_name(name)?;
    if let Some(profile) = read_json::<Profile>(store, &profile_path(name))? {
        if profile.name != name {
            bail!("profiles/{name}.json names profile `{}`: rename the file or fix its name", profile.name);
        }
        profile.check()?;
        return Ok(Some(profile));
    }
    Ok((name == DEFAULT).then(Profile::everything))
}

/// Profile `name`, or an error that lists the profiles there are.
pub fn require(store: &Store, name: &str) -> Result<Profile> {
    match load(store, name)? {
        Some(profile) => Ok(profile),
        None => bail!(
            "there is no profile `{name}`; the profiles are {} (`capabilities hub profiles create {name} --serves …` makes it)",
            names(store).join(", ")
        ),
    }
}

/// Writes a profile.
pub fn save(store: &Store, profile: &Profile) -> Result<()> {
    profile.check()?;
    write_json(store, &profile_path(&profile.name), profile)
}

/// Every profile's name, `default` first.
pub fn names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store.root().join("profiles"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok()?.strip_suffix(".json").map(str::to_owned))
        .filter(|n| check_name(n).is_ok() && n != DEFAULT)
        .collect();
    names.sort();
    names.insert(0, DEFAULT.to_owned());
    names
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first)
        || !text[first.len()..].ends_with(last)
        || text.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> ToolAddress {
        ToolAddress::parse(text).unwrap()
    }

    #[test]
    fn patterns_match_namespaces_and_tools() {
        let p = Profile::serving("work", vec!["gh.list*".into(), "notes".into()]);
        assert!(p.serves(&address("gh.listIssues")));
        assert!(!p.serves(&address("gh.createIssue")));
        assert!(p.serves(&address("notes.anything")));
        assert!(!p.serves(&address("notes2.anything")), "a namespace, not a prefix");
        assert!(Profile::everything().serves(&address("x.y")));
        assert!(wildcard("a*b*c", "aXbYc") && !wildcard("a*b*c", "ac") && wildcard("*", ""));
        assert!(!wildcard("ab*ba", "aba"), "the ends may not overlap");
    }

    #[test]
    fn bad_profiles_are_refused() {
        let mut p = Profile::serving("Work", vec!["gh".into()]);
        assert!(p.check().unwrap_err().to_string().contains("not a profile name"));
        p.name = "work".into();
        p.serves = vec!["../x".into()];
        assert!(p.check().unwrap_err().to_string().contains("not a pattern"));
        p.serves = vec![];
        assert!(p.check().unwrap_err().to_string().contains("serves nothing"));
        assert!(Profile::rule("gh", Effect::Allow).is_err());
        p.serves = vec!["gh".into()];
        p.rules = vec![Rule::on_source(Namespace::new("gh").unwrap(), Effect::Allow)];
        assert!(p.check().unwrap_err().to_string().contains("only tighten"));
    }
}
