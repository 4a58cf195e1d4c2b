//! The catalog: what a hub serves right now — each source's manifest and the names of its
//! connections. `search` and `describe` read it; policy decides what in it is visible.

use crate::address::{Namespace, ToolAddress};
use crate::manifest::{Manifest, Tool};
use crate::validate::{Checked, Checker};

/// One source as the surface sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceView {
    pub manifest: Manifest,
    /// Connection names, in the order a person listed them.
    pub connections: Vec<String>,
    /// The connection used when code names none.
    pub default_connection: Option<String>,
}

/// Every source a profile serves, in a stable order (by namespace).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub sources: Vec<SourceView>,
    /// Each tool's input-schema checker, by source and tool index, compiled on first use.
    checks: Checks,
}

#[derive(Debug, Clone, Default)]
struct Checks(Vec<Vec<Checker>>);

/// Checkers are a cache of what the manifests say, so they never make two catalogs differ.
impl PartialEq for Checks {
    fn eq(&self, _: &Checks) -> bool {
        true
    }
}

impl Catalog {
    pub fn new(mut sources: Vec<SourceView>) -> Catalog {
        sources.sort_by(|a, b| a.manifest.namespace.cmp(&b.manifest.namespace));
        let checks = Checks(
            sources.iter().map(|s| s.manifest.tools.iter().map(|_| Checker::default()).collect()).collect(),
        );
        Catalog { sources, checks }
    }

    fn checker(&self, address: &ToolAddress) -> Option<(&Tool, &Checker)> {
        let i = self.sources.iter().position(|s| s.manifest.namespace == address.namespace)?;
        let manifest = &self.sources[i].manifest;
        let j = manifest.tools.iter().position(|t| t.ident == address.tool)?;
        Some((&manifest.tools[j], self.checks.0.get(i)?.get(j)?))
    }

    /// `arguments` checked against the input schema of the tool at `address` (compiled on
    /// first use and kept). A tool the catalog does not have is `Valid`: resolving the address
    /// is not this check's job.
    pub fn check(&self, address: &ToolAddress, arguments: &serde_json::Value) -> Checked {
        match self.checker(address) {
            Some((tool, checker)) => checker.check(&tool.record.input_schema, arguments),
            None => Checked::Valid,
        }
    }

    /// Why calls to the tool at `address` cannot be checked, if they cannot (for review and
    /// doctor).
    pub fn schema_problem(&self, address: &ToolAddress) -> Option<String> {
        let (tool, checker) = self.checker(address)?;
        checker.problem(&tool.record.input_schema)
    }

    pub fn source(&self, namespace: &Namespace) -> Option<&SourceView> {
        self.sources.iter().find(|s| &s.manifest.namespace == namespace)
    }

    /// The source whose namespace is spelled `namespace`; `None` for any other text.
    pub fn source_named(&self, namespace: &str) -> Option<&SourceView> {
        self.sources.iter().find(|s| s.manifest.namespace.as_str() == namespace)
    }

    pub fn tool(&self, address: &ToolAddress) -> Option<&Tool> {
        self.source(&address.namespace)?.manifest.tool(&address.tool)
    }

    /// Every tool with its address, sources in namespace order, tools in listing order.
    pub fn tools(&self) -> impl Iterator<Item = (ToolAddress, &Tool)> {
        self.sources.iter().flat_map(|s| s.manifest.tools.iter().map(move |t| (s.manifest.address(t), t)))
    }
}
