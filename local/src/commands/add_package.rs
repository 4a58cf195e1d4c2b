//! `capabilities hub add npm:<package>[@<version>]`: a verified install. The version is
//! resolved exactly, the package installed into the hub's own directory with lifecycle scripts
//! off and checked (integrity, `npm audit signatures`), and the source runs its installed entry
//! point with node, isolated unless `--no-isolate`. The lock file pins what was installed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use capabilities_core::address::Namespace;

use super::add::AddArgs;
use super::review;
use crate::config;
use crate::error::UsageError;
use crate::packages::{self, CheckStatus, LockedPackage, npm};
use crate::platform::now_ms;
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;
use crate::upstream::{Isolation, MISSING_BWRAP, SourceSpec, SourceTransport, find_bwrap};

pub(super) fn run(settings: &Settings, store: &Store, target: &str, args: &AddArgs) -> Result<ExitCode> {
    let Some(reference) = target.strip_prefix("npm:") else {
        return Err(UsageError(format!(
            "installing from PyPI is not supported yet (`{target}`): add the server as a command, \
             `capabilities hub add --isolate -- uvx <package>==<version>`"
        ))
        .into());
    };
    if !args.command.is_empty() {
        return Err(UsageError("give either `npm:<package>` or a command after `--`, not both".into()).into());
    }
    if !args.header.is_empty() {
        return Err(UsageError("`--header` is for URLs; use `--env` for a package's server".into()).into());
    }
    if args.no_isolate && args.net {
        return Err(UsageError(
            "`--net` grants an isolated source the network; unisolated (`--no-isolate`) it has yours".into(),
        )
        .into());
    }
    let (name, range) = npm::parse(reference).map_err(|e| UsageError(format!("{e:#}")))?;
    let namespace = match &args.namespace {
        Some(raw) => Namespace::new(raw).map_err(|e| {
            UsageError(format!("`{raw}` is not a valid namespace ({e}); pick another with `--namespace`"))
        })?,
        None => super::add::suggest(&runner_transport(&name)),
    };
    let ns = namespace.as_str();
    if store.root().join(config::source_path(ns)).is_file() {
        return Err(UsageError(format!(
            "a source named `{ns}` exists already: remove it with `capabilities hub remove {ns}`, \
             or pick another name with `--namespace`"
        ))
        .into());
    }
    if !args.no_isolate && find_bwrap().is_none() {
        bail!("cannot add `{ns}`: {MISSING_BWRAP}");
    }
    node_path()?;
    eprintln!("resolving {name}@{range}…");
    let resolved = npm::resolve(&name, &range)?;
    let dir = packages::package_dir(store.root(), "npm", &resolved.name, &resolved.version);
    eprintln!(
        "source `{ns}` installs npm {}@{} ({}) into {}, with install scripts off",
        resolved.name,
        resolved.version,
        resolved.integrity,
        dir.display()
    );
    if !args.yes {
        if settings.no_input {
            return Err(UsageError(
                "installing a package needs your consent: check the package above and pass `--yes`".into(),
            )
            .into());
        }
        if !review::ask(settings, "Install it? [y/N] ", false)? {
            bail!("nothing was installed");
        }
    }
    let (env, env_slots) = super::add::stdio_env(args);
    if args.no_isolate && !args.read.is_empty() {
        return Err(UsageError(
            "`--read` grants an isolated source a directory; unisolated it reads yours".into(),
        )
        .into());
    }
    let read = granted_dirs(&args.read)?;
    let wanted = Wanted { env, env_slots, args: Vec::new(), read, isolate: !args.no_isolate, net: args.net };
    let spec_credentials = |spec: &SourceSpec| sources::credentials_from_env(spec);
    let manifest = install_resolved(store, &namespace, &resolved, wanted, spec_credentials)?;
    let what = format!("`{ns}` (npm {}@{})", resolved.name, resolved.version);
    super::add::added_then_review(settings, store, &what, &manifest, args.yes)
}

/// What a verified source runs with besides its package.
pub(super) struct Wanted {
    pub env: std::collections::BTreeMap<String, String>,
    pub env_slots: Vec<String>,
    /// Arguments after the entry point.
    pub args: Vec<String>,
    /// Directories granted for reading (`--read`), absolute.
    pub read: Vec<String>,
    pub isolate: bool,
    pub net: bool,
}

/// Installs `resolved` (checked; refused with the reason), registers source `namespace` to run
/// its entry point, and pins it in the lock file. On any failure nothing of it is left: not
/// the package (unless another source runs the same version), not the records.
pub(super) fn install_resolved(
    store: &Store,
    namespace: &Namespace,
    resolved: &npm::Resolved,
    wanted: Wanted,
    credentials: impl Fn(&SourceSpec) -> capabilities_core::ports::Credentials,
) -> Result<capabilities_core::manifest::Manifest> {
    let ns = namespace.as_str();
    let node = node_path()?;
    let dir = packages::package_dir(store.root(), "npm", &resolved.name, &resolved.version);
    let started = Instant::now();
    let installed = npm::install(resolved, &dir)?;
    eprintln!("installed {}@{} in {} ms", resolved.name, resolved.version, started.elapsed().as_millis());
    eprintln!(
        "registry signatures: {} ({})",
        installed.signatures.status.as_str(),
        installed.signatures.detail
    );
    eprintln!("provenance: {} ({})", installed.provenance.status.as_str(), installed.provenance.detail);
    if installed.signatures.status == CheckStatus::Unavailable {
        eprintln!(
            "warning: nothing vouches for `{}` beyond the registry's integrity; the lock file records that",
            resolved.name
        );
    }
    let undo = |fresh: bool| {
        if fresh {
            let _ = std::fs::remove_dir_all(&dir);
        }
    };
    let entry = dir.join(&installed.bin);
    let isolation = if wanted.isolate {
        let mut read_only = vec![dir.to_string_lossy().into_owned()];
        read_only.extend(node_home_dir(&node));
        read_only.extend(wanted.read);
        match isolation(store, ns, read_only, wanted.net) {
            Ok(isolation) => Some(isolation),
            Err(err) => {
                undo(installed.fresh);
                return Err(err);
            }
        }
    } else {
        None
    };
    let mut args = vec![entry.to_string_lossy().into_owned()];
    args.extend(wanted.args);
    let spec = SourceSpec {
        namespace: ns.to_owned(),
        transport: SourceTransport::Stdio {
            command: node.to_string_lossy().into_owned(),
            args,
            env: wanted.env,
            env_slots: wanted.env_slots,
            cwd: None,
            isolation,
        },
    };
    match sources::isolation_line(&spec) {
        Some(line) => eprintln!("`{ns}` runs {line}"),
        None => eprintln!("`{ns}` runs unisolated, as you (`--no-isolate`)"),
    }
    let manifest = match super::add::register(store, &spec, &credentials(&spec)) {
        Ok(manifest) => manifest,
        Err(err) => {
            undo(installed.fresh);
            return Err(err);
        }
    };
    let locked = LockedPackage {
        registry: "npm".to_owned(),
        name: resolved.name.clone(),
        version: resolved.version.clone(),
        integrity: resolved.integrity.clone(),
        tarball: resolved.tarball.clone(),
        bin: installed.bin.clone(),
        signatures: installed.signatures.clone(),
        provenance: installed.provenance.clone(),
        installed_ms: now_ms(),
    };
    if let Err(err) = packages::set(store, ns, Some(locked)) {
        let _ = sources::remove_source(store, namespace);
        undo(installed.fresh);
        return Err(err);
    }
    Ok(manifest)
}

/// The npm package a `npx` command line fetches at each start (`npx -y <package>[@version]
/// [args…]`): the reference and the server's arguments. `None` for anything else (a local
/// path, `--package`, another runner).
pub(super) fn npx_package(transport: &SourceTransport) -> Option<(String, Vec<String>)> {
    let SourceTransport::Stdio { command, args, isolation: None, cwd: None, .. } = transport else {
        return None;
    };
    if command.rsplit('/').next() != Some("npx") {
        return None;
    }
    let mut rest = args.iter().skip_while(|a| ["-y", "--yes", "-q", "--quiet"].contains(&a.as_str()));
    let reference = rest.next()?;
    npm::parse(reference).ok()?;
    Some((reference.clone(), rest.cloned().collect()))
}

/// `--read` directories as absolute paths, each checked to exist.
pub(super) fn granted_dirs(dirs: &[String]) -> Result<Vec<String>> {
    dirs.iter()
        .map(|dir| {
            std::fs::canonicalize(dir)
                .map(|p| p.to_string_lossy().into_owned())
                .map_err(|e| UsageError(format!("`--read {dir}`: {e}")).into())
        })
        .collect()
}

/// The isolation a new source of `namespace` gets: its state directory, the store hidden.
pub(super) fn isolation(
    store: &Store,
    namespace: &str,
    read_only: Vec<String>,
    net: bool,
) -> Result<Isolation> {
    if find_bwrap().is_none() {
        bail!("cannot isolate `{namespace}`: {MISSING_BWRAP}");
    }
    let state = packages::state_dir(store.root(), namespace);
    Ok(Isolation {
        read_only,
        state: state.to_string_lossy().into_owned(),
        hidden: vec![store.root().to_string_lossy().into_owned()],
        net,
    })
}

/// `npx <name>`, so the namespace is proposed the way `hub add -- npx -y <name>` proposes it.
pub(super) fn runner_transport(name: &str) -> SourceTransport {
    SourceTransport::Stdio {
        command: "npx".to_owned(),
        args: vec![name.to_owned()],
        env: Default::default(),
        env_slots: Vec::new(),
        cwd: None,
        isolation: None,
    }
}

/// `node` on `PATH`, as an absolute path.
fn node_path() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())
        .ok_or_else(|| anyhow::anyhow!("`node` is not on PATH: install Node.js to run npm packages"))
}

/// A node installed under the home directory (nvm, volta) is hidden inside the isolation
/// unless its installation is bound back: the directory above its `bin/`.
fn node_home_dir(node: &Path) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let real = std::fs::canonicalize(node).ok()?;
    if !real.starts_with(&home) {
        return None;
    }
    Some(real.parent()?.parent()?.to_string_lossy().into_owned())
}
