//! The fixed surface the hub serves: the three tool definitions (`search`, `describe`,
//! `execute`) and the server instructions, from the core (shared with the hosted hub) as rmcp
//! types.

use capabilities_core::limits::Limits;
use rmcp::model::Tool;
use serde_json::Value;

pub use capabilities_core::surface::tools::{
    DESCRIBE, EXECUTE, INSTRUCTIONS, MAX_DESCRIBE_TARGETS, SEARCH, envelope_schema, surface_json,
};

/// The three tools, in the order `tools/list` returns them.
pub fn definitions(limits: &Limits) -> Vec<Tool> {
    capabilities_core::surface::tools::definitions(limits)
        .into_iter()
        .filter_map(|definition: Value| serde_json::from_value(definition).ok())
        .collect()
}

/// The definition named `name`, if it is one of the three.
pub fn definition(name: &str, limits: &Limits) -> Option<Tool> {
    definitions(limits).into_iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_surface_fits_its_token_budget() {
        let limits = Limits::DEFAULT;
        let text = serde_json::to_string(&surface_json(&limits)).unwrap();
        let tokens = capabilities_core::tokens::count(&text);
        eprintln!("fixed surface: {tokens} tokens");
        assert!(tokens <= limits.surface_tokens.min(1500), "the fixed surface is {tokens} tokens");
    }

    #[test]
    fn exactly_three_tools() {
        let names: Vec<String> = definitions(&Limits::DEFAULT).iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["search", "describe", "execute"]);
        assert!(definition("execute", &Limits::DEFAULT).is_some_and(|t| t.output_schema.is_some()));
        assert!(definition("hub", &Limits::DEFAULT).is_none());
    }
}
