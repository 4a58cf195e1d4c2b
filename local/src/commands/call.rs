//! `capabilities hub call`: one tool call by a person, through policy like any call: reads run,
//! writes wait for an approval.

use std::process::ExitCode;

use anyhow::Result;
use capabilities_core::address::ToolAddress;
use clap::Args;

use super::exec::{exit_for, print_envelope};
use crate::error::UsageError;
use crate::host::Host;
use crate::settings::Settings;

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's address, `namespace.tool` (see `capabilities hub list`).
    pub address: String,
    /// The arguments as one JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
}

pub fn run(settings: &Settings, args: CallArgs) -> Result<ExitCode> {
    let code = code_for(&args.address, &args.arguments)?;
    let host = Host::open(&settings.home)?;
    let envelope = host.execute(&code)?;
    print_envelope(settings, &envelope)?;
    Ok(exit_for(&envelope).into())
}

/// The code of a one-call run: `return await ns.tool({...})`.
pub fn code_for(address: &str, arguments: &str) -> Result<String> {
    let address = ToolAddress::parse(address).map_err(|e| UsageError(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(arguments).map_err(|e| {
        UsageError(format!("the arguments are not JSON ({e}); give one object, like '{{\"q\": 1}}'"))
    })?;
    if !value.is_object() {
        return Err(UsageError("the arguments must be one JSON object, like '{\"q\": 1}'".into()).into());
    }
    Ok(format!("return await {}.{}({});", address.namespace, address.tool, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_one_line_of_code() {
        assert_eq!(code_for("memory.readGraph", "{}").unwrap(), "return await memory.readGraph({});");
        assert!(code_for("memory", "{}").is_err());
        assert!(code_for("memory.readGraph", "[1]").is_err());
        assert!(code_for("memory.readGraph", "{").is_err());
    }
}
