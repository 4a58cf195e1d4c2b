//! The MCP surface: the three tools (`search`, `describe`, `execute`), their arguments and the
//! text and envelopes they return. The only module that knows MCP's wire shapes.

pub mod approval;
pub mod describe;
pub mod direct;
pub mod envelope;
pub mod search;
pub mod skills;
pub mod tools;

use serde_json::Value;

use crate::address::ToolAddress;
use crate::catalog::Catalog;
use crate::index::Index;
use crate::limits::Limits;
use crate::policy::{CompiledPolicy, Effect, PolicyError, PolicyState};
use crate::ports::{LocalBoxFuture, Lookup, SkillFiles};
use crate::record::ToolFailure;
use crate::wording::HostWords;

/// What `search` and `describe` read: the catalog, its index and the policy that hides or marks
/// tools. Built once per catalog change; shared by the MCP tools and by `hub.*` inside code.
#[derive(Debug)]
pub struct Surface {
    pub catalog: Catalog,
    pub index: Index,
    pub policy: CompiledPolicy,
    pub limits: Limits,
    /// How this hub names where a person acts.
    pub words: HostWords,
    /// The hub's skills, found by `search` and read with `describe("skill:<name>")`.
    pub skills: Vec<skills::SkillDoc>,
    /// Where `hub.skill` reads their files; none: code cannot read them on this hub.
    pub skill_files: Option<Box<dyn SkillFiles>>,
    /// The words of `skills`, indexed on the first search (the host sets `skills` once, before).
    skill_index: std::sync::OnceLock<skills::SkillIndex>,
}

impl Surface {
    pub fn new(catalog: Catalog, policy: CompiledPolicy, limits: Limits, words: HostWords) -> Surface {
        let index = Index::build(&catalog);
        Surface {
            catalog,
            index,
            policy,
            limits,
            words,
            skills: Vec::new(),
            skill_files: None,
            skill_index: std::sync::OnceLock::new(),
        }
    }

    /// The surface of a hub's configuration. A stored policy that does not compile gives way to
    /// the empty one, under which every tool asks, and comes back as the second value so the
    /// host can say so in its own words.
    pub fn from_config(
        catalog: Catalog,
        policy: PolicyState,
        limits: Limits,
        words: HostWords,
    ) -> (Surface, Option<PolicyError>) {
        let (policy, problem) = match CompiledPolicy::new(policy) {
            Ok(policy) => (policy, None),
            Err(err) => (CompiledPolicy::default(), Some(err)),
        };
        (Surface::new(catalog, policy, limits, words), problem)
    }

    /// What policy would do with a call to `address` on its default connection.
    pub fn effect(&self, address: &ToolAddress) -> Effect {
        let Some(source) = self.catalog.source(&address.namespace) else { return Effect::Deny };
        let Some(tool) = source.manifest.tool(&address.tool) else { return Effect::Deny };
        self.policy.listing_effect(address, tool, source.default_connection.as_deref())
    }

    /// The `search` tool: its arguments checked, its text rendered.
    pub fn search(&self, arguments: &Value) -> Result<String, String> {
        let args =
            search::SearchArgs::parse(arguments, &self.catalog, &self.limits).map_err(|e| e.to_string())?;
        let mut text = search::render(&self.catalog, &self.index, &args, &|a| self.effect(a), &self.words);
        // Skills go after the tools: a namespace's search is about its tools.
        if args.namespace.is_none() {
            let index = self.skill_index.get_or_init(|| skills::SkillIndex::new(&self.skills));
            for line in skills::search_lines(&index.matching(&self.skills, &args.query)) {
                text.push('\n');
                text.push_str(&line);
            }
        }
        Ok(text)
    }

    /// The `describe` tool: `{ "targets": [...] }`.
    pub fn describe(&self, arguments: &Value) -> Result<String, String> {
        let targets = match arguments.get("targets") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| t.as_str().map(str::to_owned).ok_or("every target must be a string"))
                .collect::<Result<Vec<String>, _>>()?,
            Some(Value::String(one)) => vec![one.clone()],
            _ => {
                return Err("describe takes `targets`: a list of 1 to 10 addresses (`github.createIssue`), \
                            namespaces (`github`) or type names (`github.Issue`)"
                    .to_owned());
            }
        };
        // `skill:<name>` targets are read apart: a skill is not in the catalog.
        let (named, targets): (Vec<String>, Vec<String>) =
            targets.into_iter().partition(|t| t.starts_with(skills::PREFIX));
        let mut parts = Vec::new();
        for target in &named {
            if let Some(skill) = skills::target(&self.skills, target) {
                parts.push(skills::describe(skill?, self.limits.describe_tokens));
            }
        }
        if !targets.is_empty() || parts.is_empty() {
            parts.push(
                describe::describe(
                    &self.catalog,
                    &targets,
                    &|a| self.effect(a) != Effect::Deny,
                    self.limits.describe_tokens,
                )
                .map_err(|e| e.to_string())?,
            );
        }
        Ok(parts.join("\n\n"))
    }
}

impl Lookup for Surface {
    fn search(&self, args: Value) -> Result<String, String> {
        Surface::search(self, &args)
    }

    fn describe(&self, args: Value) -> Result<String, String> {
        Surface::describe(self, &args)
    }

    fn skill(&self, args: Value) -> LocalBoxFuture<'_, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let (skill, path) = skills::request(&self.skills, &args)?;
            let Some(files) = &self.skill_files else { return Err(skills::no_skills()) };
            let bytes = files.read(&skill.name, &path).await.map_err(|e| skills::unreadable(&e))?;
            skills::answer(&skill.name, &path, bytes)
        })
    }
}
