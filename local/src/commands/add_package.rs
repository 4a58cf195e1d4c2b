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
use crate::packages::{self, CheckStatus, LockedPackage, npm, pypi};
use crate::platform::now_ms;
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;
use crate::upstream::{Isolation, MISSING_BWRAP, SourceSpec, SourceTransport, find_bwrap};

pub(super) fn run(settings: &Settings, store: &Store, target: &str, args: &AddArgs) -> Result<ExitCode> {
    let (registry, reference) = match target.split_once(':') {
        Some(("npm", reference)) => ("npm", reference),
        Some(("pypi", reference)) => ("pypi", reference),
        _ => {
            return Err(UsageError(format!(
                "`{target}` names no registry: use `npm:<package>` or `pypi:<package>`"
            ))
            .into());
        }
    };
    if !args.header.is_empty() {
        return Err(UsageError("`--header` is for URLs; use `--env` for a package's server".into()).into());
    }
    if args.no_isolate && args.net {
        return Err(UsageError(
            "`--net` grants an isolated source the network; unisolated (`--no-isolate`) it has yours".into(),
        )
        .into());
    }
    if args.no_isolate && !args.read.is_empty() {
        return Err(UsageError(
            "`--read` grants an isolated source a directory; unisolated it reads yours".into(),
        )
        .into());
    }
    let (name, version) = match registry {
        "npm" => npm::parse(reference).map_err(|e| UsageError(format!("{e:#}")))?,
        _ => {
            let (name, version) = pypi::parse(reference).map_err(|e| UsageError(format!("{e:#}")))?;
            (name, version.unwrap_or_default())
        }
    };
    let runner = if registry == "npm" { "npx" } else { "uvx" };
    let namespace = match &args.namespace {
        Some(raw) => Namespace::new(raw).map_err(|e| {
            UsageError(format!("`{raw}` is not a valid namespace ({e}); pick another with `--namespace`"))
        })?,
        None => super::add::suggest(&runner_transport(runner, &name)),
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
    let (env, env_slots) = super::add::stdio_env(args);
    let read = granted_dirs(&args.read)?;
    // After `--`, the server's own arguments (a folder it serves, say).
    let server_args = args.command.clone();
    let wanted = Wanted { env, env_slots, args: server_args, read, isolate: !args.no_isolate, net: args.net };
    let spec_credentials = |spec: &SourceSpec| sources::credentials_from_env(spec);
    let (manifest, what) = if registry == "npm" {
        node_path()?;
        eprintln!("resolving {name}@{version}…");
        let resolved = npm::resolve(&name, &version)?;
        let dir = packages::package_dir(store.root(), "npm", &resolved.name, &resolved.version);
        eprintln!(
            "source `{ns}` installs npm {}@{} ({}) into {}, with install scripts off",
            resolved.name,
            resolved.version,
            resolved.integrity,
            dir.display()
        );
        consent(settings, args.yes)?;
        let manifest = install_resolved(store, &namespace, &resolved, wanted, spec_credentials)?;
        (manifest, format!("`{ns}` (npm {}@{})", resolved.name, resolved.version))
    } else {
        let python = pypi::python()?;
        let shown = if version.is_empty() { name.clone() } else { format!("{name}=={version}") };
        eprintln!("resolving {shown} (wheels only)…");
        let resolved = pypi::resolve(&python, &name, Some(version.as_str()).filter(|v| !v.is_empty()))?;
        let dir = packages::package_dir(store.root(), "pypi", &resolved.name, &resolved.version);
        eprintln!(
            "source `{ns}` installs PyPI {}=={} ({}, {} wheel{} pinned by sha256) into {}, from wheels only: no build or install code runs",
            resolved.name,
            resolved.version,
            resolved.integrity,
            resolved.requirements.len(),
            if resolved.requirements.len() == 1 { "" } else { "s" },
            dir.display()
        );
        consent(settings, args.yes)?;
        let manifest =
            install_resolved_pypi(store, &namespace, &python, &resolved, wanted, spec_credentials)?;
        (manifest, format!("`{ns}` (PyPI {}=={})", resolved.name, resolved.version))
    };
    super::add::added_then_review(settings, store, &what, &manifest, args.yes)
}

/// A person's yes to installing: `--yes`, or the answer at a prompt.
fn consent(settings: &Settings, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if settings.no_input {
        return Err(UsageError(
            "installing a package needs your consent: check the package above and pass `--yes`".into(),
        )
        .into());
    }
    if !review::ask(settings, "Install it? [y/N] ", false)? {
        bail!("nothing was installed");
    }
    Ok(())
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
    let entry = dir.join(&installed.bin);
    let mut args = vec![entry.to_string_lossy().into_owned()];
    args.extend(wanted.args.iter().cloned());
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
    let run = Installed { dir: &dir, fresh: installed.fresh, program: &node, args, extra_env: Vec::new() };
    register_installed(store, namespace, run, wanted, locked, credentials)
}

/// [`install_resolved`] for a PyPI package: wheels only, every hash required; the source runs
/// its console script's function with `python`, importing from the package's directory.
pub(super) fn install_resolved_pypi(
    store: &Store,
    namespace: &Namespace,
    python: &Path,
    resolved: &pypi::Resolved,
    wanted: Wanted,
    credentials: impl Fn(&SourceSpec) -> capabilities_core::ports::Credentials,
) -> Result<capabilities_core::manifest::Manifest> {
    let dir = packages::package_dir(store.root(), "pypi", &resolved.name, &resolved.version);
    let started = Instant::now();
    let installed = pypi::install(python, resolved, &dir)?;
    eprintln!("installed {}=={} in {} ms", resolved.name, resolved.version, started.elapsed().as_millis());
    eprintln!(
        "signatures and provenance: {} ({})",
        installed.signatures.status.as_str(),
        installed.signatures.detail
    );
    let mut args = vec!["-s".to_owned(), "-c".to_owned(), pypi::BOOT.to_owned()];
    args.push(dir.to_string_lossy().into_owned());
    args.push(installed.entry.clone());
    args.extend(wanted.args.iter().cloned());
    let locked = LockedPackage {
        registry: "pypi".to_owned(),
        name: resolved.name.clone(),
        version: resolved.version.clone(),
        integrity: resolved.integrity.clone(),
        tarball: resolved.url.clone(),
        bin: installed.entry.clone(),
        signatures: installed.signatures.clone(),
        provenance: installed.provenance.clone(),
        installed_ms: now_ms(),
    };
    let extra_env = vec![("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned())];
    let run = Installed { dir: &dir, fresh: installed.fresh, program: python, args, extra_env };
    register_installed(store, namespace, run, wanted, locked, credentials)
}

/// An installed package, and how its source runs it.
struct Installed<'a> {
    dir: &'a Path,
    /// Whether this install made `dir`.
    fresh: bool,
    program: &'a Path,
    args: Vec<String>,
    extra_env: Vec<(String, String)>,
}

/// Registers the source that runs an installed package (isolated unless told not to) and pins
/// it in the lock file. On any failure nothing of it is left: not the package (unless it was
/// there before), not the records.
fn register_installed(
    store: &Store,
    namespace: &Namespace,
    run: Installed<'_>,
    wanted: Wanted,
    locked: LockedPackage,
    credentials: impl Fn(&SourceSpec) -> capabilities_core::ports::Credentials,
) -> Result<capabilities_core::manifest::Manifest> {
    let ns = namespace.as_str();
    let undo = || {
        if run.fresh {
            let _ = std::fs::remove_dir_all(run.dir);
        }
    };
    let isolation = if wanted.isolate {
        let mut read_only = vec![run.dir.to_string_lossy().into_owned()];
        read_only.extend(home_install_dir(run.program));
        read_only.extend(wanted.read);
        match isolation(store, ns, read_only, wanted.net) {
            Ok(isolation) => Some(isolation),
            Err(err) => {
                undo();
                return Err(err);
            }
        }
    } else {
        None
    };
    let mut env = wanted.env;
    env.extend(run.extra_env);
    let spec = SourceSpec {
        namespace: ns.to_owned(),
        transport: SourceTransport::Stdio {
            command: run.program.to_string_lossy().into_owned(),
            args: run.args,
            env,
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
            undo();
            return Err(err);
        }
    };
    if let Err(err) = packages::set(store, ns, Some(locked)) {
        let _ = sources::remove_source(store, namespace);
        undo();
        return Err(err);
    }
    Ok(manifest)
}

/// The package a runner's command line fetches at each start: `npx -y <package>[@version]
/// [args…]` (npm) or `uvx <package>[==version] [args…]` (PyPI), as the registry, the reference
/// `hub add <registry>:<reference>` takes, and the server's arguments. `None` for anything else
/// (a local path, `--package`/`--from`/`--with`, another runner).
pub(super) fn fetched_package(transport: &SourceTransport) -> Option<(&'static str, String, Vec<String>)> {
    let SourceTransport::Stdio { command, args, isolation: None, cwd: None, .. } = transport else {
        return None;
    };
    let flags: &[&str] = match command.rsplit('/').next() {
        Some("npx") => &["-y", "--yes", "-q", "--quiet"],
        Some("uvx") => &["-q", "--quiet", "--no-progress"],
        _ => return None,
    };
    let mut rest = args.iter().skip_while(|a| flags.contains(&a.as_str()));
    let reference = rest.next()?;
    if reference.starts_with('-') {
        return None;
    }
    let server_args = rest.cloned().collect();
    if flags.contains(&"-y") {
        npm::parse(reference).ok()?;
        return Some(("npm", reference.clone(), server_args));
    }
    // uvx also takes `name@version`.
    let reference = match reference.split_once('@') {
        Some((name, version)) if !version.is_empty() => format!("{name}=={version}"),
        _ => reference.clone(),
    };
    pypi::parse(&reference).ok()?;
    Some(("pypi", reference, server_args))
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

/// `npx <name>` (or `uvx <name>`), so the namespace is proposed the way `hub add -- npx -y
/// <name>` proposes it.
pub(super) fn runner_transport(runner: &str, name: &str) -> SourceTransport {
    SourceTransport::Stdio {
        command: runner.to_owned(),
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

/// An interpreter installed under the home directory (nvm, volta, pyenv) is hidden inside the
/// isolation unless its installation is bound back: the directory above its `bin/`.
fn home_install_dir(program: &Path) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let real = std::fs::canonicalize(program).ok()?;
    if !real.starts_with(&home) {
        return None;
    }
    Some(real.parent()?.parent()?.to_string_lossy().into_owned())
}
