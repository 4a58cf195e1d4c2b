//! Named profiles: which of a hub's sources and tools one endpoint serves, rules over the hub's
//! policy that may only tighten it, and what a client sees (the three tools, or each tool as its
//! own in direct mode). Both hubs read the same record and build their surface from it here, so
//! a profile serves the same tools locally and hosted.
//!
//! A profile narrows the catalog the engine runs with, so a tool it does not serve is unknown to
//! the code, to `search` and `describe`, and to a call: enforced when the call is made, not only
//! when tools are listed. `default` is built in: every source, the hub's policy as it is.

use serde::{Deserialize, Serialize};

use crate::address::{Namespace, ToolAddress};
use crate::catalog::{Catalog, SourceView};
use crate::limits::Limits;
use crate::policy::{CompiledPolicy, Effect, Policy, PolicyError, PolicyState, Rule};
use crate::surface::Surface;
use crate::surface::direct::DirectTools;
pub use crate::surface::direct::Naming;
use crate::wording::HostWords;

/// The profile every client gets unless told otherwise.
pub const DEFAULT: &str = crate::record::DEFAULT_PROFILE;

/// One profile, as the local hub keeps it (`profiles/<name>.json`) and `hub push` sends it.
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// Why a profile cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    #[error("`{0}` is not a profile name: use lowercase letters, digits, - and _, up to 32 characters")]
    Name(String),
    #[error("profile `{0}` serves nothing: give it at least one pattern")]
    ServesNothing(String),
    #[error(
        "`{0}` is not a pattern: use a namespace (github), a tool address (github.searchIssues) or either \
         with * (github.list*, *)"
    )]
    Pattern(String),
    #[error("`{0}` is not a tool address: {1}")]
    Tool(String, String),
    #[error("`{0}` is not a namespace: {1}")]
    Namespace(String, String),
    #[error("a profile can only tighten the hub's policy: use ask or deny")]
    Allows,
    #[error(transparent)]
    Policy(#[from] PolicyError),
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
        self.serves.iter().any(|pattern| matches(pattern, address))
    }

    /// The patterns that match no tool of `catalog` (the hub's whole catalog), for a warning or
    /// an error.
    pub fn unmatched<'p>(&'p self, catalog: &Catalog) -> Vec<&'p str> {
        self.serves
            .iter()
            .filter(|pattern| !catalog.tools().any(|(address, _)| matches(pattern, &address)))
            .map(String::as_str)
            .collect()
    }

    /// Checks the record: a valid name, patterns of namespace and tool characters, rules that
    /// only tighten.
    pub fn check(&self) -> Result<(), ProfileError> {
        check_name(&self.name)?;
        if self.serves.is_empty() {
            return Err(ProfileError::ServesNothing(self.name.clone()));
        }
        for pattern in &self.serves {
            let ok = !pattern.is_empty()
                && pattern.len() <= 200
                && pattern.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.*".contains(&b))
                && pattern.matches('.').count() <= 1;
            if !ok {
                return Err(ProfileError::Pattern(pattern.clone()));
            }
        }
        CompiledPolicy::default().with_overlay(self.rules.clone())?;
        Ok(())
    }

    /// The part of `catalog` (the hub's whole catalog) this profile serves.
    pub fn filter(&self, catalog: &Catalog) -> Catalog {
        Catalog::new(
            catalog
                .sources
                .iter()
                .filter_map(|source| {
                    let mut manifest = source.manifest.clone();
                    let namespace = manifest.namespace.clone();
                    manifest
                        .tools
                        .retain(|tool| self.serves(&ToolAddress::new(namespace.clone(), tool.ident.clone())));
                    (!manifest.tools.is_empty()).then(|| SourceView { manifest, ..source.clone() })
                })
                .collect(),
        )
    }

    /// `policy` with this profile's rules over it.
    pub fn overlay(&self, policy: CompiledPolicy) -> Result<CompiledPolicy, PolicyError> {
        match self.rules.is_empty() {
            true => Ok(policy),
            false => policy.with_overlay(self.rules.clone()),
        }
    }

    /// The surface this profile serves of a hub with `catalog` (all of it) and `policy`; the
    /// hub's policy error, if its rules do not compile (every tool then asks).
    pub fn surface(
        &self,
        catalog: &Catalog,
        policy: PolicyState,
        limits: Limits,
        words: HostWords,
    ) -> Result<(Surface, Option<PolicyError>), ProfileError> {
        let (mut surface, invalid) = Surface::from_config(self.filter(catalog), policy, limits, words);
        surface.policy = self.overlay(std::mem::take(&mut surface.policy))?;
        Ok((surface, invalid))
    }

    /// In direct mode, the tools of `surface` (this profile's) under their listed names; tools
    /// policy denies are not listed. `None` in code mode.
    pub fn direct(&self, surface: &Surface) -> Option<DirectTools> {
        (self.mode == Mode::Direct)
            .then(|| DirectTools::new(&surface.catalog, self.naming, |a| surface.effect(a) != Effect::Deny))
    }

    /// A rule of a profile on `target` (`github` or `github.deleteRepo`) with `effect`.
    pub fn rule(target: &str, effect: Effect) -> Result<Rule, ProfileError> {
        if effect == Effect::Allow {
            return Err(ProfileError::Allows);
        }
        Ok(match target.split_once('.') {
            Some(_) => Rule::on_tool(
                ToolAddress::parse(target)
                    .map_err(|e| ProfileError::Tool(target.to_owned(), e.to_string()))?,
                effect,
            ),
            None => Rule::on_source(
                Namespace::new(target)
                    .map_err(|e| ProfileError::Namespace(target.to_owned(), e.to_string()))?,
                effect,
            ),
        })
    }

    /// The rules as a policy, to show them.
    pub fn policy(&self) -> Result<Policy, PolicyError> {
        Policy::new(self.rules.clone())
    }
}

/// Profile names are file names and URL segments: lowercase letters, digits, `-` and `_`, up
/// to 32, starting with a letter or digit.
pub fn check_name(name: &str) -> Result<(), ProfileError> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    match ok {
        true => Ok(()),
        false => Err(ProfileError::Name(name.to_owned())),
    }
}

/// Whether one pattern matches `address`: with a `.` against the whole address, else against
/// its namespace.
fn matches(pattern: &str, address: &ToolAddress) -> bool {
    match pattern.contains('.') {
        true => wildcard(pattern, &address.to_string()),
        false => wildcard(pattern, address.namespace.as_str()),
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
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
    use crate::manifest::Manifest;
    use serde_json::json;

    fn address(text: &str) -> ToolAddress {
        ToolAddress::parse(text).unwrap()
    }

    fn catalog() -> Catalog {
        let source = |ns: &str, tools: &[&str]| {
            let entries: Vec<serde_json::Value> =
                tools.iter().map(|t| json!({ "name": t, "inputSchema": {"type": "object"} })).collect();
            let (manifest, _) = Manifest::from_tools_list(Namespace::new(ns).unwrap(), &entries);
            SourceView { manifest, connections: vec![], default_connection: None }
        };
        Catalog::new(vec![source("gh", &["listIssues", "createIssue"]), source("notes", &["read"])])
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
    fn a_profile_filters_the_catalog_and_names_what_matches_nothing() {
        let p = Profile::serving("work", vec!["gh.list*".into(), "crm".into()]);
        let served: Vec<String> = p.filter(&catalog()).tools().map(|(a, _)| a.to_string()).collect();
        assert_eq!(served, ["gh.listIssues"]);
        assert_eq!(p.unmatched(&catalog()), ["crm"]);
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
        assert_eq!(Profile::rule("gh", Effect::Allow), Err(ProfileError::Allows));
        p.serves = vec!["gh".into()];
        p.rules = vec![Rule::on_source(Namespace::new("gh").unwrap(), Effect::Allow)];
        assert!(p.check().unwrap_err().to_string().contains("only tighten"));
        let text = r#"{"name":"p","serves":["gh"],"mode":"direct","naming":"bare"}"#;
        let read: Profile = serde_json::from_str(text).unwrap();
        assert_eq!((read.mode, read.naming), (Mode::Direct, Naming::Bare));
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"name":"p","serves":["gh"],"rules":[],"mode":"direct","naming":"bare"}"#
        );
    }
}
