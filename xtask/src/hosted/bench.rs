//! `cargo xtask hosted bench [rounds] [--debug]`: `execute` of `return 1` over HTTP against the
//! local hub (`hub serve --http`, release build; `--debug` takes the debug build instead) and
//! against the hosted Worker under workerd, alternating, plus the cold start of a new tenant's
//! object. The timing is `hosted/benches/execute.mjs`; this builds what it times.

use anyhow::{Result, bail};

use crate::{cargo, step, target_dir};

pub(crate) fn bench(args: &[String]) -> Result<()> {
    let debug = args.iter().any(|a| a == "--debug");
    let rounds = args.iter().find(|a| !a.starts_with("--")).map_or("200", String::as_str);
    if rounds.parse::<u32>().map_or(true, |n| n == 0) {
        bail!(
            "usage: cargo xtask hosted bench [rounds] [--debug]: rounds is a positive number, not `{rounds}`"
        );
    }
    let workerd = super::workerd()?;
    let binary = if debug {
        step("build the hub (debug)", cargo(&["build", "--locked", "-p", "capabilities"]))?;
        target_dir().join("debug/capabilities")
    } else {
        step("build the hub (release)", cargo(&["build", "--release", "--locked", "-p", "capabilities"]))?;
        target_dir().join("release/capabilities")
    };
    let bundle = super::build()?;
    let mut node = std::process::Command::new("node");
    node.arg("hosted/benches/execute.mjs").arg(binary).arg(bundle).arg(workerd).arg(rounds);
    step("hosted bench", node)
}
