//! `capabilities rollback`: restore the harness files of the newest backup set, byte for byte.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::print_stdout;
use crate::error::Exit;
use crate::harness::backup::{self, Restored};
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// For a file changed since the hub wrote it (harnesses rewrite their own files), put back
    /// only its MCP server entries and keep the rest as it is now, instead of refusing.
    #[arg(long)]
    pub keep_edits: bool,
}

pub fn run(settings: &Settings, args: RollbackArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let Some((name, manifest, results)) = backup::rollback(&store, args.keep_edits)? else {
        eprintln!("nothing to roll back: no harness file was changed by the hub since the last rollback");
        return Ok(Exit::Ok.into());
    };
    let refused = results.iter().any(|r| matches!(r, Restored::Refused { .. }));
    if settings.json {
        let files: Vec<_> = results
            .iter()
            .map(|r| match r {
                Restored::Restored { harness, path } => {
                    json!({"harness": harness, "path": path, "action": "restored"})
                }
                Restored::Removed { harness, path } => {
                    json!({"harness": harness, "path": path, "action": "removed"})
                }
                Restored::Merged { harness, path } => {
                    json!({"harness": harness, "path": path, "action": "merged"})
                }
                Restored::Kept { harness, path, reason } => {
                    json!({"harness": harness, "path": path, "action": "kept", "reason": reason})
                }
                Restored::Refused { harness, path, reason } => {
                    json!({"harness": harness, "path": path, "action": "refused", "reason": reason})
                }
            })
            .collect();
        let value = json!({"set": name, "reason": manifest.reason, "rolledBack": !refused, "files": files});
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
    } else {
        let mut out = String::new();
        if refused {
            out.push_str(&format!(
                "did not roll back `{}` (set {name}); nothing was changed:\n",
                manifest.reason
            ));
        } else {
            out.push_str(&format!("rolled back `{}` (set {name}):\n", manifest.reason));
        }
        for r in &results {
            match r {
                Restored::Restored { harness, path } => {
                    out.push_str(&format!("  restored {harness}: {}\n", path.display()))
                }
                Restored::Removed { harness, path } => out
                    .push_str(&format!("  removed {harness}: {} (the hub had created it)\n", path.display())),
                Restored::Merged { harness, path } => out.push_str(&format!(
                    "  restored the MCP servers of {harness}: {} (kept the edits made since)\n",
                    path.display()
                )),
                Restored::Kept { harness, path, reason } => out.push_str(&format!(
                    "  kept {harness}: {}: {reason}; the files the hub placed and nobody changed were removed\n",
                    path.display()
                )),
                Restored::Refused { harness, path, reason } => {
                    out.push_str(&format!("  refused {harness}: {}: {reason}\n", path.display()))
                }
            }
        }
        if refused {
            out.push_str(&format!(
                "to put back only the MCP server entries and keep those edits, run `capabilities rollback --keep-edits`; \
                 the copies are under {}\n",
                backup::backups_dir(&store).join(&name).display()
            ));
        }
        print_stdout(&out)?;
    }
    Ok(if refused { Exit::Failure } else { Exit::Ok }.into())
}
