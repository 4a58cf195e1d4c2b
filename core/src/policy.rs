//! Policy: rules on a source or a tool, optionally narrowed to a connection, that decide each
//! call — allow, ask or deny.
//!
//! [`Policy::decide`] follows four steps, in order:
//!
//! 1. Any matching `deny`, at any specificity, wins. A narrower rule never loosens a deny, and a
//!    contract pin never switches a deny off.
//! 2. A tool nobody reviewed, or whose contract changed since review, asks.
//! 3. Otherwise the most specific matching rule decides: tool and connection, tool, source and
//!    connection, source. A rule pinned to a contract matches only while the tool still has it.
//! 4. With no rule, a tool that declares `readOnlyHint: true` runs; anything else asks.
//!
//! Conflicting hints: a tool that says both `readOnlyHint: true` and `destructiveHint: true`
//! counts as read-only. The MCP specification gives `destructiveHint` meaning only when
//! `readOnlyHint` is false, [`Annotations::is_destructive`] reads it the same way, and both hints
//! come from the same untrusted server, which could as easily have left the second one out;
//! asking there would add friction without closing any hole.
//!
//! The rule set is indexed by namespace, then tool, then connection, so a decision is a couple
//! of ordered-map lookups and never allocates.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::address::{Namespace, ToolAddress};
use crate::manifest::{Annotations, ContractDigest, Manifest, Tool};
pub use crate::ports::{Effect, PolicyView, Verdict};

/// What a rule attaches to. In JSON it is one key: `"source": "github"` or
/// `"tool": "github.createIssue"`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RuleTarget {
    Source(Namespace),
    Tool(ToolAddress),
}

impl RuleTarget {
    pub fn namespace(&self) -> &Namespace {
        match self {
            RuleTarget::Source(ns) => ns,
            RuleTarget::Tool(address) => &address.namespace,
        }
    }
}

impl fmt::Display for RuleTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleTarget::Source(ns) => write!(f, "{ns}"),
            RuleTarget::Tool(address) => write!(f, "{address}"),
        }
    }
}

/// One policy rule, stored as JSON in the hub's policies:
/// `{"tool": "github.createIssue", "connection": "work", "effect": "allow", "contract": "sha256:…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    #[serde(flatten)]
    pub target: RuleTarget,
    /// Narrows the rule to calls made with this connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    pub effect: Effect,
    /// The contract a person saw when making the rule ("always allow"). The rule stops matching
    /// once the tool's contract differs. Only tool rules carry one; a deny ignores it.
    #[serde(default, rename = "contract", skip_serializing_if = "Option::is_none")]
    pub pinned: Option<ContractDigest>,
}

impl Rule {
    pub fn on_source(namespace: Namespace, effect: Effect) -> Rule {
        Rule { target: RuleTarget::Source(namespace), connection: None, effect, pinned: None }
    }

    pub fn on_tool(address: ToolAddress, effect: Effect) -> Rule {
        Rule { target: RuleTarget::Tool(address), connection: None, effect, pinned: None }
    }

    /// The rule a person's "always allow" leaves: the tool, pinned to the contract they saw.
    pub fn always_allow(address: ToolAddress, connection: Option<String>, contract: ContractDigest) -> Rule {
        Rule { target: RuleTarget::Tool(address), connection, effect: Effect::Allow, pinned: Some(contract) }
    }

    pub fn with_connection(mut self, connection: impl Into<String>) -> Rule {
        self.connection = Some(connection.into());
        self
    }

    fn where_(&self) -> Where<'_> {
        Where { target: &self.target, connection: self.connection.as_deref() }
    }
}

/// `github.createIssue (connection work)`, for messages.
struct Where<'a> {
    target: &'a RuleTarget,
    connection: Option<&'a str>,
}

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.target)?;
        match self.connection {
            Some(c) => write!(f, " (connection {c})"),
            None => Ok(()),
        }
    }
}

/// Why a rule set was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    #[error("two rules on {0}: keep one of them and remove the other")]
    Duplicate(String),
    #[error(
        "the rule on source {0} is pinned to a contract, but only tool rules can be: remove \
         `contract` or put the rule on a tool"
    )]
    PinnedSourceRule(String),
    #[error("a rule on {0} names an empty connection: name one, or drop `connection`")]
    EmptyConnection(String),
    #[error(
        "a profile's rule on {0} allows, but a profile can only tighten the hub's policy: make it \
         `ask` or `deny`, or change the hub's own rule"
    )]
    LoosensPolicy(String),
}

/// The rules of one target, split by connection. At most one rule per connection.
#[derive(Debug, Clone, Default, PartialEq)]
struct Slot {
    any: Option<usize>,
    by_connection: Vec<(String, usize)>,
}

impl Slot {
    fn for_connection(&self, connection: Option<&str>) -> Option<usize> {
        let connection = connection?;
        self.by_connection.iter().find(|(name, _)| name == connection).map(|&(_, i)| i)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct SourceIndex {
    source: Slot,
    tools: BTreeMap<String, Slot>,
}

/// A validated, indexed rule set. Serialises as the plain list of its rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Rule>", into = "Vec<Rule>")]
pub struct Policy {
    rules: Vec<Rule>,
    index: BTreeMap<Namespace, SourceIndex>,
}

impl TryFrom<Vec<Rule>> for Policy {
    type Error = PolicyError;

    fn try_from(rules: Vec<Rule>) -> Result<Policy, PolicyError> {
        Policy::new(rules)
    }
}

impl From<Policy> for Vec<Rule> {
    fn from(policy: Policy) -> Vec<Rule> {
        policy.rules
    }
}

/// One call as policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub address: &'a ToolAddress,
    /// The connection the call uses (the default one when code names none), if the source has any.
    pub connection: Option<&'a str>,
    /// The tool's contract now.
    pub digest: &'a ContractDigest,
    pub annotations: &'a Annotations,
    /// The contract a person last reviewed for this tool; `None` if nobody ever did.
    pub reviewed: Option<&'a ContractDigest>,
}

impl<'a> Call<'a> {
    /// A call to `tool` at `address` with `connection`.
    pub fn to_tool(
        address: &'a ToolAddress,
        tool: &'a Tool,
        connection: Option<&'a str>,
        reviewed: Option<&'a ContractDigest>,
    ) -> Call<'a> {
        Call { address, connection, digest: &tool.digest, annotations: &tool.record.annotations, reviewed }
    }
}

/// The outcome for one call, with the reason a person reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision<'p> {
    pub effect: Effect,
    pub reason: Reason<'p>,
}

/// Why policy decided what it did. `Display` is the sentence a person reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason<'p> {
    /// A deny rule matched (step 1).
    DeniedByRule(&'p Rule),
    /// Nobody has reviewed this tool (step 2).
    NewTool,
    /// The contract differs from the one a person reviewed (step 2).
    ContractChanged { reviewed: ContractDigest, current: ContractDigest },
    /// The most specific matching allow or ask rule (step 3).
    ByRule(&'p Rule),
    /// No rule; the tool declares itself read-only (step 4).
    ReadOnly,
    /// No rule; the tool declares that it writes (step 4).
    Writes,
    /// No rule; the tool says nothing about whether it writes, so it counts as a write (step 4).
    Undeclared,
}

impl Reason<'_> {
    /// A stable machine name, for journals and envelopes.
    pub fn code(&self) -> &'static str {
        match self {
            Reason::DeniedByRule(_) => "denied_by_rule",
            Reason::NewTool => "new_tool",
            Reason::ContractChanged { .. } => "contract_changed",
            Reason::ByRule(_) => "rule",
            Reason::ReadOnly => "read_only",
            Reason::Writes => "writes",
            Reason::Undeclared => "undeclared",
        }
    }
}

impl fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::DeniedByRule(rule) => write!(f, "denied by rule on {}", rule.where_()),
            Reason::NewTool => f.write_str("new tool, not reviewed yet"),
            Reason::ContractChanged { reviewed, current } => write!(
                f,
                "contract changed since review (sha256:{}… → sha256:{}…)",
                reviewed.short(),
                current.short()
            ),
            Reason::ByRule(rule) => {
                let verb = match rule.effect {
                    Effect::Allow => "allowed",
                    Effect::Ask => "approval required",
                    Effect::Deny => "denied",
                };
                write!(f, "{verb} by rule on {}", rule.where_())
            }
            Reason::ReadOnly => f.write_str("read-only tool"),
            Reason::Writes => f.write_str("writes need approval"),
            Reason::Undeclared => f.write_str("tool does not say it is read-only, so it needs approval"),
        }
    }
}

impl Policy {
    /// Validates and indexes a rule set. At most one rule per target and connection; pins only
    /// on tool rules.
    pub fn new(rules: Vec<Rule>) -> Result<Policy, PolicyError> {
        let mut index: BTreeMap<Namespace, SourceIndex> = BTreeMap::new();
        for (i, rule) in rules.iter().enumerate() {
            if rule.connection.as_deref() == Some("") {
                return Err(PolicyError::EmptyConnection(rule.target.to_string()));
            }
            let source = index.entry(rule.target.namespace().clone()).or_default();
            let slot = match &rule.target {
                RuleTarget::Source(ns) => {
                    if rule.pinned.is_some() {
                        return Err(PolicyError::PinnedSourceRule(ns.to_string()));
                    }
                    &mut source.source
                }
                RuleTarget::Tool(address) => source.tools.entry(address.tool.clone()).or_default(),
            };
            let taken = match &rule.connection {
                None => slot.any.replace(i).is_some(),
                Some(c) if slot.by_connection.iter().any(|(name, _)| name == c) => true,
                Some(c) => {
                    slot.by_connection.push((c.clone(), i));
                    false
                }
            };
            if taken {
                return Err(PolicyError::Duplicate(rule.where_().to_string()));
            }
        }
        Ok(Policy { rules, index })
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Adds a rule, replacing the one on the same target and connection. Returns the replaced
    /// rule. This is how a recorded "always allow" or a person's edit lands.
    pub fn set(&mut self, rule: Rule) -> Result<Option<Rule>, PolicyError> {
        let mut rules = self.rules.clone();
        let old = rules
            .iter()
            .position(|r| r.target == rule.target && r.connection == rule.connection)
            .map(|i| rules.remove(i));
        rules.push(rule);
        *self = Policy::new(rules)?;
        Ok(old)
    }

    /// Removes the rule on this target and connection, if there is one.
    pub fn remove(&mut self, target: &RuleTarget, connection: Option<&str>) -> Option<Rule> {
        let i =
            self.rules.iter().position(|r| &r.target == target && r.connection.as_deref() == connection)?;
        let mut rules = self.rules.clone();
        let old = rules.remove(i);
        // Removing a rule keeps a valid set valid; should that ever fail, keep every rule rather
        // than lose a deny.
        *self = Policy::new(rules).ok()?;
        Some(old)
    }

    /// Matching rules, most specific first: tool and connection, tool, source and connection,
    /// source.
    fn matching(&self, address: &ToolAddress, connection: Option<&str>) -> [Option<&Rule>; 4] {
        let Some(source) = self.index.get(&address.namespace) else {
            return [None; 4];
        };
        let tool = source.tools.get(address.tool.as_str());
        let at = |i: Option<usize>| i.and_then(|i| self.rules.get(i));
        [
            at(tool.and_then(|s| s.for_connection(connection))),
            at(tool.and_then(|s| s.any)),
            at(source.source.for_connection(connection)),
            at(source.source.any),
        ]
    }

    /// Decides one call. See the module docs for the four steps.
    pub fn decide(&self, call: &Call<'_>) -> Decision<'_> {
        let matching = self.matching(call.address, call.connection);
        if let Some(rule) = matching.iter().flatten().find(|r| r.effect == Effect::Deny) {
            return Decision { effect: Effect::Deny, reason: Reason::DeniedByRule(rule) };
        }
        match call.reviewed {
            None => return Decision { effect: Effect::Ask, reason: Reason::NewTool },
            Some(reviewed) if reviewed != call.digest => {
                return Decision {
                    effect: Effect::Ask,
                    reason: Reason::ContractChanged { reviewed: *reviewed, current: *call.digest },
                };
            }
            Some(_) => {}
        }
        let rule = matching.iter().flatten().find(|r| r.pinned.as_ref().is_none_or(|pin| pin == call.digest));
        if let Some(rule) = rule {
            return Decision { effect: rule.effect, reason: Reason::ByRule(rule) };
        }
        match call.annotations.read_only_hint {
            Some(true) => Decision { effect: Effect::Allow, reason: Reason::ReadOnly },
            Some(false) => Decision { effect: Effect::Ask, reason: Reason::Writes },
            None => Decision { effect: Effect::Ask, reason: Reason::Undeclared },
        }
    }

    /// What `search` shows for a tool: the decision for a call with the source's default
    /// connection. Deny hides the tool; ask marks it.
    pub fn effect_for_listing(
        &self,
        address: &ToolAddress,
        tool: &Tool,
        default_connection: Option<&str>,
        reviewed: Option<&ContractDigest>,
    ) -> Effect {
        self.decide(&Call::to_tool(address, tool, default_connection, reviewed)).effect
    }

    /// The strictest effect any rule matching this call names, ignoring contract pins (a
    /// profile's rules only tighten, so a pin has nothing to switch off).
    fn strictest(&self, address: &ToolAddress, connection: Option<&str>) -> Option<&Rule> {
        self.matching(address, connection).into_iter().flatten().max_by_key(|r| r.effect)
    }
}

/// How the review screen groups a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ToolClass {
    /// Declares `readOnlyHint: true`.
    ReadOnly,
    /// Declares it writes but not destructively (`destructiveHint: false`).
    Writes,
    /// May delete or overwrite: says so, or says nothing ([`Annotations::is_destructive`]).
    Destructive,
}

impl ToolClass {
    pub fn of(annotations: &Annotations) -> ToolClass {
        if annotations.is_read_only() {
            ToolClass::ReadOnly
        } else if annotations.is_destructive() {
            ToolClass::Destructive
        } else {
            ToolClass::Writes
        }
    }
}

/// What review proposes for one tool: read-only tools are allowed, everything else asks, and
/// possibly destructive tools are flagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    pub address: ToolAddress,
    pub digest: ContractDigest,
    pub class: ToolClass,
    pub effect: Effect,
}

impl Proposal {
    pub fn for_tool(address: ToolAddress, tool: &Tool) -> Proposal {
        let class = ToolClass::of(&tool.record.annotations);
        let effect = if class == ToolClass::ReadOnly { Effect::Allow } else { Effect::Ask };
        Proposal { address, digest: tool.digest, class, effect }
    }

    /// Shown with a warning on the review screen.
    pub fn flagged(&self) -> bool {
        self.class == ToolClass::Destructive
    }

    /// The rule a person's choice for this tool needs, if any. Choosing what policy would do
    /// without a rule needs none; an allow is pinned to the reviewed contract.
    pub fn rule_for(&self, chosen: Effect) -> Option<Rule> {
        let default = if self.class == ToolClass::ReadOnly { Effect::Allow } else { Effect::Ask };
        if chosen == default {
            return None;
        }
        let rule = Rule::on_tool(self.address.clone(), chosen);
        Some(Rule { pinned: (chosen == Effect::Allow).then_some(self.digest), ..rule })
    }
}

/// The proposal for every tool of a manifest, in listing order.
pub fn propose(manifest: &Manifest) -> Vec<Proposal> {
    manifest.tools.iter().map(|tool| Proposal::for_tool(manifest.address(tool), tool)).collect()
}

impl PolicyView for CompiledPolicy {
    fn decide(&self, address: &ToolAddress, connection: Option<&str>, tool: &Tool) -> Verdict {
        let key = address.text();
        let reviewed = self.reviewed.get(&key);
        let decision = self.policy.decide(&Call::to_tool(address, tool, connection, reviewed));
        let mut reason = decision.reason.to_string();
        if let (Reason::ContractChanged { .. }, Some(changes)) = (&decision.reason, self.changes.get(&key)) {
            reason = format!("{reason}: {}", changes.join("; "));
        }
        if let Some(rule) = self.tightened(address, connection, decision.effect) {
            let verb = if rule.effect == Effect::Deny { "denied" } else { "approval required" };
            return Verdict {
                effect: rule.effect,
                reason: format!("{verb} by the profile's rule on {}", rule.where_()),
            };
        }
        Verdict { effect: decision.effect, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: &str) -> Rule {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn rule_json_round_trips() {
        let json = r#"{"tool":"github.createIssue","connection":"work","effect":"allow","contract":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}"#;
        assert_eq!(serde_json::to_string(&rule(json)).unwrap(), json);
        let json = r#"{"source":"github","effect":"deny"}"#;
        assert_eq!(serde_json::to_string(&rule(json)).unwrap(), json);
    }

    #[test]
    fn bad_rule_sets_are_refused() {
        let dup = vec![
            rule(r#"{"source":"github","effect":"deny"}"#),
            rule(r#"{"source":"github","effect":"ask"}"#),
        ];
        assert_eq!(
            Policy::new(dup).unwrap_err().to_string(),
            "two rules on github: keep one of them and remove the other"
        );
        let pinned = vec![rule(
            r#"{"source":"github","effect":"allow","contract":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}"#,
        )];
        assert!(matches!(Policy::new(pinned), Err(PolicyError::PinnedSourceRule(_))));
        let empty = vec![rule(r#"{"tool":"github.x","connection":"","effect":"allow"}"#)];
        assert!(matches!(Policy::new(empty), Err(PolicyError::EmptyConnection(_))));
        let bad: Result<Policy, _> = serde_json::from_str(r#"[{"source":"Bad Name","effect":"deny"}]"#);
        assert!(bad.is_err());
    }

    #[test]
    fn a_profiles_overlay_only_tightens() {
        let (manifest, _) = Manifest::from_tools_list(
            Namespace::new("gh").unwrap(),
            &[
                serde_json::json!({ "name": "read", "inputSchema": { "type": "object" }, "annotations": { "readOnlyHint": true } }),
                serde_json::json!({ "name": "write", "inputSchema": { "type": "object" } }),
            ],
        );
        let mut state = PolicyState::default();
        for tool in &manifest.tools {
            state.reviewed.insert(manifest.address(tool).to_string(), tool.digest);
        }
        state.rules.push(rule(r#"{"tool":"gh.write","effect":"allow"}"#));
        let hub = CompiledPolicy::new(state).unwrap();
        let effect = |policy: &CompiledPolicy, ident: &str| {
            let tool = manifest.tool(ident).unwrap();
            policy.decide(&manifest.address(tool), None, tool)
        };
        assert_eq!(effect(&hub, "write").effect, Effect::Allow);
        let profile = hub
            .clone()
            .with_overlay(vec![
                rule(r#"{"source":"gh","effect":"ask"}"#),
                rule(r#"{"tool":"gh.read","effect":"deny"}"#),
            ])
            .unwrap();
        let write = effect(&profile, "write");
        assert_eq!(
            (write.effect, write.reason.as_str()),
            (Effect::Ask, "approval required by the profile's rule on gh")
        );
        assert_eq!(effect(&profile, "read").effect, Effect::Deny);
        let tool = manifest.tool("read").unwrap();
        assert_eq!(profile.listing_effect(&manifest.address(tool), tool, None), Effect::Deny);
        // An ask overlay over a hub deny stays a deny.
        let mut state = PolicyState::default();
        state.rules.push(rule(r#"{"source":"gh","effect":"deny"}"#));
        let denied = CompiledPolicy::new(state)
            .unwrap()
            .with_overlay(vec![rule(r#"{"source":"gh","effect":"ask"}"#)])
            .unwrap();
        assert_eq!(effect(&denied, "read").effect, Effect::Deny);
        let loosens = hub.with_overlay(vec![rule(r#"{"tool":"gh.write","effect":"allow"}"#)]).unwrap_err();
        assert!(loosens.to_string().contains("can only tighten"), "{loosens}");
    }

    #[test]
    fn set_replaces_and_remove_removes() {
        let mut policy =
            Policy::new(vec![Rule::on_source(Namespace::new("github").unwrap(), Effect::Ask)]).unwrap();
        let old = policy.set(Rule::on_source(Namespace::new("github").unwrap(), Effect::Deny)).unwrap();
        assert_eq!(old.map(|r| r.effect), Some(Effect::Ask));
        assert_eq!(policy.rules().len(), 1);
        let target = RuleTarget::Source(Namespace::new("github").unwrap());
        assert!(policy.remove(&target, None).is_some());
        assert!(policy.rules().is_empty());
        assert!(policy.remove(&target, None).is_none());
    }
}

/// A hub's policy together with the contracts people reviewed: all a decision needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyState {
    pub rules: Vec<Rule>,
    /// Address → the contract a person accepted in review (or by an "always" decision).
    pub reviewed: std::collections::BTreeMap<String, ContractDigest>,
    /// Address → what refreshes found changed in the tool's contract since the reviewed one, in
    /// a person's words; said again when a call asks because of it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub changes: std::collections::BTreeMap<String, Vec<String>>,
}

/// The most change lines kept for one tool; later ones are folded into a count.
const MAX_CHANGE_LINES: usize = 8;

/// Why an "always" choice could not become a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllowAlwaysError {
    /// The stored rules do not compile, so no rule can be added to them.
    #[error("the stored policy is invalid: {0}")]
    Invalid(PolicyError),
    #[error("the run names tool `{0}` that is not an address")]
    NotAnAddress(String),
    #[error("{0}")]
    Rule(PolicyError),
}

impl PolicyState {
    /// A person chose "always" for `address` on `connection`: a rule that allows it, pinned to
    /// the `contract` they saw, and that contract marked reviewed.
    pub fn allow_always(
        &mut self,
        address: &str,
        connection: Option<String>,
        contract: ContractDigest,
    ) -> Result<(), AllowAlwaysError> {
        let parsed =
            ToolAddress::parse(address).map_err(|_| AllowAlwaysError::NotAnAddress(address.to_owned()))?;
        let mut policy = Policy::new(std::mem::take(&mut self.rules)).map_err(AllowAlwaysError::Invalid)?;
        let set = policy.set(Rule::always_allow(parsed, connection, contract));
        self.rules = policy.rules().to_vec();
        set.map_err(AllowAlwaysError::Rule)?;
        self.pin(address.to_owned(), contract);
        Ok(())
    }

    /// Pins `digest` as the contract a person accepted for `address`; what changed before no
    /// longer matters.
    pub fn pin(&mut self, address: String, digest: ContractDigest) {
        self.changes.remove(&address);
        self.reviewed.insert(address, digest);
    }

    /// Notes what a refresh found changed in `address`'s contract, when that contract is not the
    /// reviewed one `current` (a change back to the reviewed contract clears the note).
    pub fn note_changes(&mut self, address: &str, current: &ContractDigest, changes: &[String]) {
        match self.reviewed.get(address) {
            Some(reviewed) if reviewed == current => {
                self.changes.remove(address);
            }
            Some(_) => {
                let lines = self.changes.entry(address.to_owned()).or_default();
                for change in changes {
                    if !lines.contains(change) {
                        lines.push(change.clone());
                    }
                }
                lines.truncate(MAX_CHANGE_LINES);
            }
            None => {}
        }
    }
}

/// [`PolicyState`] ready to decide: its rules indexed.
#[derive(Debug, Clone, Default)]
pub struct CompiledPolicy {
    pub policy: Policy,
    pub reviewed: std::collections::BTreeMap<String, ContractDigest>,
    pub changes: std::collections::BTreeMap<String, Vec<String>>,
    /// A profile's rules over the hub's: `ask` and `deny` only, each making a call stricter
    /// than the hub's policy alone would, never looser.
    pub overlay: Policy,
}

impl CompiledPolicy {
    pub fn new(state: PolicyState) -> Result<CompiledPolicy, PolicyError> {
        Ok(CompiledPolicy {
            policy: Policy::new(state.rules)?,
            reviewed: state.reviewed,
            changes: state.changes,
            overlay: Policy::default(),
        })
    }

    /// This policy with a profile's rules over it. A rule that allows is refused: an overlay
    /// may only tighten.
    pub fn with_overlay(mut self, rules: Vec<Rule>) -> Result<CompiledPolicy, PolicyError> {
        if let Some(rule) = rules.iter().find(|r| r.effect == Effect::Allow) {
            return Err(PolicyError::LoosensPolicy(rule.where_().to_string()));
        }
        self.overlay = Policy::new(rules)?;
        Ok(self)
    }

    /// The hub's effect, made stricter by the overlay's matching rule if it has one.
    fn tightened(&self, address: &ToolAddress, connection: Option<&str>, effect: Effect) -> Option<&Rule> {
        self.overlay.strictest(address, connection).filter(|r| r.effect > effect)
    }

    /// What `search` and `describe` show for a tool with its source's default connection.
    pub fn listing_effect(
        &self,
        address: &ToolAddress,
        tool: &Tool,
        default_connection: Option<&str>,
    ) -> Effect {
        let reviewed = self.reviewed.get(&address.to_string());
        let effect = self.policy.effect_for_listing(address, tool, default_connection, reviewed);
        self.tightened(address, default_connection, effect).map_or(effect, |r| r.effect)
    }
}
