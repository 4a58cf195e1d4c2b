//! The catalog: what a hub serves right now — each source's manifest and the names of its
//! connections. `search` and `describe` read it; policy decides what in it is visible.

use crate::address::{Namespace, ToolAddress};
use crate::manifest::{Manifest, Tool};

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
}

impl Catalog {
    pub fn new(mut sources: Vec<SourceView>) -> Catalog {
        sources.sort_by(|a, b| a.manifest.namespace.cmp(&b.manifest.namespace));
        Catalog { sources }
    }

    pub fn source(&self, namespace: &Namespace) -> Option<&SourceView> {
        self.sources.iter().find(|s| &s.manifest.namespace == namespace)
    }

    pub fn tool(&self, address: &ToolAddress) -> Option<&Tool> {
        self.source(&address.namespace)?.manifest.tool(&address.tool)
    }

    /// Every tool with its address, sources in namespace order, tools in listing order.
    pub fn tools(&self) -> impl Iterator<Item = (ToolAddress, &Tool)> {
        self.sources.iter().flat_map(|s| s.manifest.tools.iter().map(move |t| (s.manifest.address(t), t)))
    }
}
