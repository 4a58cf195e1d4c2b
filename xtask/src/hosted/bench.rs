//! `cargo xtask hosted bench [rounds] [--debug]`: `execute` of `return 1` over HTTP against the
//! local hub (`hub serve --http`, release build; `--debug` takes the debug build instead) and
//! against the hosted Worker under workerd, alternating, plus the cold start of a new tenant's
//! object. The timing is `hosted/benches/execute.mjs`; this builds what it times. And `cargo
//! xtask hosted bench-load`: `local/benches/load.mjs --hosted`, many clients over tenants.

use anyhow::{Result, bail};

use crate::{cargo, step, target_dir};

/// `hosted bench-load [clients] [runs] [tenants] [--debug]`.
pub(crate) fn bench_load(args: &[String]) -> Result<()> {
    let debug = args.iter().any(|a| a == "--debug");
    let numbers: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    for n in &numbers {
        if n.parse::<u32>().map_or(true, |n| n == 0) {
            bail!(
                "usage: cargo xtask hosted bench-load [clients] [runs] [tenants] [--debug]: `{n}` is not a positive number"
            );
        }
    }
    let pick = |i: usize, default: &'static str| numbers.get(i).map_or(default.to_owned(), |n| (*n).clone());
    let workerd = super::workerd()?;
    let binary = hub_binary(debug)?;
    let bundle = super::build()?;
    let mut node = std::process::Command::new("node");
    node.arg("local/benches/load.mjs")
        .arg(binary)
        .arg(pick(0, "32"))
        .arg(pick(1, "200"))
        .arg("--hosted")
        .arg(bundle)
        .arg(workerd)
        .arg(pick(2, "8"));
    step("hosted load bench", node)
}

fn hub_binary(debug: bool) -> Result<std::path::PathBuf> {
    if debug {
        step("build the hub (debug)", cargo(&["build", "--locked", "-p", "capabilities"]))?;
        Ok(target_dir().join("debug/capabilities"))
    } else {
        step("build the hub (release)", cargo(&["build", "--release", "--locked", "-p", "capabilities"]))?;
        Ok(target_dir().join("release/capabilities"))
    }
}

pub(crate) fn bench(args: &[String]) -> Result<()> {
    let debug = args.iter().any(|a| a == "--debug");
    let rounds = args.iter().find(|a| !a.starts_with("--")).map_or("200", String::as_str);
    if rounds.parse::<u32>().map_or(true, |n| n == 0) {
        bail!(
            "usage: cargo xtask hosted bench [rounds] [--debug]: rounds is a positive number, not `{rounds}`"
        );
    }
    let workerd = super::workerd()?;
    let binary = hub_binary(debug)?;
    let bundle = super::build()?;
    let mut node = std::process::Command::new("node");
    node.arg("hosted/benches/execute.mjs").arg(binary).arg(bundle).arg(workerd).arg(rounds);
    step("hosted bench", node)
}
