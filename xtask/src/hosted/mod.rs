//! `cargo xtask hosted build|dev|bench`: the hosted hub as a Worker bundle workerd can load,
//! workerd serving it on loopback, and (in `bench`) its timing against the local hub.
//!
//! `build` compiles `capabilities-hosted` for wasm32 (the `hosted` profile: release, sized for
//! small), runs `wasm-bindgen` of exactly
//! the lockfile's version (installed under `<target>/tools` when missing, since worker-build
//! would download it), and writes `<target>/hosted/bundle/`: `index_bg.wasm`, `index.js`,
//! `shim.js` (the Worker's entry) and `workerd.capnp`. `dev` starts the real workerd from
//! `node/node_modules` on 127.0.0.1 with the tenants' Durable Object storage in a directory
//! of your choosing, so a restarted workerd finds its records again.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::setup::{ensure_c_toolchain, ensure_node_packages, ensure_wasm_target};
use crate::{WASM_TARGET, cargo, step, target_dir};

mod bench;
mod signin;

const USAGE: &str = "usage: cargo xtask hosted build | dev [--port N] [--dir PATH | --fixtures | --sign-in] | bench [rounds] [--debug] | bench-load [clients] [runs] [tenants] [--debug]";

/// The Worker's entry: workerd calls the Rust `fetch` with the Worker's env and context; the
/// Durable Object classes (the tenants' `Hub`, the authorization server's `Access`) come
/// straight from wasm-bindgen's output.
const SHIM: &str = r#"// The Worker's entry, written by `cargo xtask hosted build`.
import { WorkerEntrypoint } from "cloudflare:workers";
import * as exports from "./index.js";

class Entrypoint extends WorkerEntrypoint {}
Entrypoint.prototype.fetch = function fetch(request) {
  return exports.fetch.call(this, request, this.env, this.ctx);
};

export default Entrypoint;
export const Hub = exports.Hub;
export const Access = exports.Access;
"#;

/// workerd's configuration: the Worker, its Durable Object namespace on local disk (the
/// `storage` directory, overridden with `--directory-path storage=...`) and an outbound
/// network that reaches loopback too, for upstream sources in tests. Secrets come from the
/// environment of the workerd process.
const CONFIG: &str = r#"# workerd configuration for the hosted hub, written by `cargo xtask hosted build`.
# Run: workerd serve workerd.capnp --socket-addr http=127.0.0.1:8787 --directory-path storage=DIR
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "hub", worker = .hub),
    (name = "storage", disk = (path = "storage", writable = true)),
    (name = "outbound", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "hub")],
);

const hub :Workerd.Worker = (
  modules = [
    (name = "shim.js", esModule = embed "shim.js"),
    (name = "index.js", esModule = embed "index.js"),
    (name = "index_bg.wasm", wasm = embed "index_bg.wasm"),
$SNIPPETS  ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "HUB", durableObjectNamespace = "Hub"),
    (name = "HUB_ADMIN_TOKEN", fromEnvironment = "HUB_ADMIN_TOKEN"),
    (name = "HUB_SECRETS_KEY", fromEnvironment = "HUB_SECRETS_KEY"),
    (name = "HUB_APPROVAL_KEY", fromEnvironment = "HUB_APPROVAL_KEY"),
    (name = "HUB_ACCESS_TOKEN", fromEnvironment = "HUB_ACCESS_TOKEN"),
    (name = "ACCESS", durableObjectNamespace = "Access"),
    (name = "HUB_PUBLIC_URL", fromEnvironment = "HUB_PUBLIC_URL"),
    (name = "HUB_TOKEN_KEY", fromEnvironment = "HUB_TOKEN_KEY"),
    (name = "HUB_ACCESS_TTL_S", fromEnvironment = "HUB_ACCESS_TTL_S"),
    (name = "HUB_IDP", fromEnvironment = "HUB_IDP"),
    (name = "HUB_IDP_ISSUER", fromEnvironment = "HUB_IDP_ISSUER"),
    (name = "HUB_IDP_CLIENT_ID", fromEnvironment = "HUB_IDP_CLIENT_ID"),
    (name = "HUB_IDP_CLIENT_SECRET", fromEnvironment = "HUB_IDP_CLIENT_SECRET"),
    # Tests only: client ID metadata documents on https://127.0.0.1:<port>/ are read over http.
    (name = "HUB_TEST_LOOPBACK_CLIENT_DOCUMENTS", fromEnvironment = "HUB_TEST_LOOPBACK_CLIENT_DOCUMENTS"),
  ],
  durableObjectNamespaces = [
    (className = "Hub", uniqueKey = "capabilities-hub", enableSql = true),
    (className = "Access", uniqueKey = "capabilities-access", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "storage"),
  globalOutbound = "outbound",
);
"#;

pub(crate) fn hosted(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("build") => build().map(drop),
        Some("dev") => dev(&args[1..]),
        Some("bench") => bench::bench(&args[1..]),
        Some("bench-load") => bench::bench_load(&args[1..]),
        _ => bail!("{USAGE}"),
    }
}

/// Where the bundle goes.
pub(crate) fn bundle_dir() -> PathBuf {
    target_dir().join("hosted/bundle")
}

/// Builds the bundle; returns its directory.
pub(crate) fn build() -> Result<PathBuf> {
    let started = Instant::now();
    ensure_wasm_target()?;
    ensure_c_toolchain()?;
    let bindgen = ensure_wasm_bindgen()?;
    step(
        "hosted worker for wasm32",
        cargo(&[
            "build",
            "--locked",
            "--profile",
            "hosted",
            "-p",
            "capabilities-hosted",
            "--target",
            WASM_TARGET,
        ]),
    )?;
    let wasm = target_dir().join(WASM_TARGET).join("hosted/capabilities_hosted.wasm");
    let out = bundle_dir();
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("clearing {}", out.display()))?;
    }
    let mut bind = Command::new(&bindgen);
    bind.args(["--target", "module", "--out-name", "index", "--no-typescript"])
        .args(["--remove-name-section", "--remove-producers-section", "--out-dir"])
        .arg(&out)
        .arg(&wasm);
    step("wasm-bindgen", bind)?;
    let index = out.join("index.js");
    let js = fs::read_to_string(&index).with_context(|| format!("reading {}", index.display()))?;
    // workerd imports a `.wasm` module as a compiled `WebAssembly.Module` with a plain import.
    fs::write(&index, js.replace("import source ", "import "))?;
    let mut snippets = String::new();
    for module in snippet_modules(&out, Path::new("snippets"))? {
        snippets.push_str(&format!("    (name = \"{module}\", esModule = embed \"{module}\"),\n"));
    }
    fs::write(out.join("shim.js"), SHIM)?;
    fs::write(out.join("workerd.capnp"), CONFIG.replace("$SNIPPETS", &snippets))?;
    let wasm_bytes = fs::metadata(out.join("index_bg.wasm"))?.len();
    let gzip = gzip_size(&out.join("index_bg.wasm"))?;
    eprintln!(
        "xtask: hosted bundle in {}: wasm {:.2} MB, gzip {:.2} MB (limit 3 MB), built in {:.0}s",
        out.display(),
        wasm_bytes as f64 / 1e6,
        gzip as f64 / 1e6,
        started.elapsed().as_secs_f32()
    );
    // The Workers free plan's limit (the paid plans take 10 MB).
    if gzip > 3_000_000 {
        bail!("the Worker bundle is over the Workers free plan's 3 MB limit after gzip");
    }
    Ok(out)
}

/// `workerd serve` on the bundle, in the foreground.
fn dev(args: &[String]) -> Result<()> {
    let mut port = "8787".to_owned();
    let mut dir = None;
    let mut fixtures = false;
    let mut sign_in = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--port" => port = rest.next().context("--port needs a number")?.clone(),
            "--dir" => dir = Some(PathBuf::from(rest.next().context("--dir needs a path")?)),
            "--fixtures" => fixtures = true,
            "--sign-in" => sign_in = true,
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let bundle = build()?;
    if fixtures {
        if dir.is_some() {
            bail!("--fixtures keeps its tenant in a scratch directory; leave out --dir");
        }
        // The eval fixtures over HTTP, loaded into one tenant with the evals' policy.
        let mut serve = cargo(&["run", "--locked", "-q", "-p", "capabilities-evals", "--bin", "evals", "--"]);
        serve.args(["--serve-hosted", &port]);
        return step("workerd with the fixtures", serve);
    }
    let dir = dir.unwrap_or_else(|| target_dir().join("hosted/dev-storage"));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let workerd = workerd()?;
    let mut serve = Command::new(&workerd);
    // Kept alive while workerd serves: the test identity provider.
    let _idp = if sign_in { Some(signin::setup(&port, &mut serve)?) } else { None };
    eprintln!("xtask: serving http://127.0.0.1:{port}/t/<tenant>/mcp, storage in {}", dir.display());
    if std::env::var_os("HUB_ADMIN_TOKEN").is_none() {
        eprintln!("xtask: HUB_ADMIN_TOKEN is not set: the admin endpoint stays off");
    }
    if std::env::var_os("HUB_ACCESS_TOKEN").is_none() && !sign_in {
        eprintln!(
            "xtask: HUB_ACCESS_TOKEN is not set: /mcp answers anything on this machine without a token"
        );
    }
    serve
        .arg("serve")
        .arg(bundle.join("workerd.capnp"))
        .arg("--socket-addr")
        .arg(format!("http=127.0.0.1:{port}"))
        .arg("--directory-path")
        .arg(format!("storage={}", dir.display()));
    step("workerd", serve)
}

/// workerd from the pinned npm packages.
pub(crate) fn workerd() -> Result<PathBuf> {
    ensure_node_packages()?;
    let path = Path::new("node/node_modules/.bin/workerd");
    if !path.exists() {
        bail!("workerd is missing from node/node_modules: run `cd node && npm ci`");
    }
    Ok(path.canonicalize()?)
}

/// The wasm-bindgen CLI of exactly the version in Cargo.lock, installed under
/// `<target>/tools` when missing.
fn ensure_wasm_bindgen() -> Result<PathBuf> {
    let lock = fs::read_to_string("Cargo.lock").context("reading Cargo.lock")?;
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"wasm-bindgen\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"')))
        .context("Cargo.lock has no wasm-bindgen package")?
        .to_owned();
    let root = target_dir().join("tools");
    let bin = root.join("bin/wasm-bindgen");
    let installed = Command::new(&bin).arg("--version").output().ok().filter(|o| o.status.success());
    if let Some(out) = installed {
        if String::from_utf8_lossy(&out.stdout).split_whitespace().nth(1) == Some(version.as_str()) {
            return Ok(bin);
        }
    }
    let exact = format!("={version}");
    let install = |locked: bool| {
        let mut cmd = cargo(&["install", "--root"]);
        cmd.arg(&root).args(["wasm-bindgen-cli", "--version", &exact, "--force"]);
        if locked {
            cmd.arg("--locked");
        }
        cmd
    };
    // The CLI's own lockfile can name a dependency version the registry no longer serves (it
    // does today): then install it again with its dependencies resolved anew.
    if step(&format!("install wasm-bindgen-cli {version} (locked)"), install(true)).is_err() {
        eprintln!(
            "xtask: the locked install failed (its Cargo.lock names a dependency version this \
             registry does not serve); installing wasm-bindgen-cli {version} unlocked, which \
             resolves its dependencies anew"
        );
        step(&format!("install wasm-bindgen-cli {version} (unlocked)"), install(false))?;
        eprintln!("xtask: wasm-bindgen-cli {version} installed unlocked in {}", root.display());
    }
    Ok(bin)
}

/// The JS files wasm-bindgen wrote under `snippets/`, as paths relative to the bundle.
fn snippet_modules(bundle: &Path, relative: &Path) -> Result<Vec<String>> {
    let dir = bundle.join(relative);
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(&dir) else { return Ok(found) };
    for entry in entries {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            found.extend(snippet_modules(bundle, &path)?);
        } else if path.extension().is_some_and(|e| e == "js") {
            found.push(path.to_string_lossy().replace('\\', "/"));
        }
    }
    found.sort();
    Ok(found)
}

fn gzip_size(path: &Path) -> Result<u64> {
    let out = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .context("gzip is needed to report the bundle size")?;
    if !out.status.success() {
        bail!("gzip failed on {}", path.display());
    }
    Ok(out.stdout.len() as u64)
}
