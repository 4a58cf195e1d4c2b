//! Helpers every test module shares: where the repository is, and the npm packages the tests
//! run (checked, so a missing install fails loudly with what to do).

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the local crate sits in the repository").to_owned()
}

/// `node/node_modules/@modelcontextprotocol`, after checking that node and the packages are there.
pub fn packages() -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|out| out.status.success()),
        "`node` is not on PATH: install Node.js 20 or later, then run `cd node && npm ci`"
    );
    let dir = repo().join("node/node_modules/@modelcontextprotocol");
    for package in ["server-everything", "server-memory", "sdk"] {
        assert!(
            dir.join(package).join("package.json").is_file(),
            "{} is missing: run `cd node && npm ci` at the repository root",
            dir.join(package).display()
        );
    }
    dir
}
