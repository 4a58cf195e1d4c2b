//! `capabilities hub doctor`: check the hub's home, its records, every source (started and
//! listed for real), and the harnesses connected to it; say what to do about each problem.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use capabilities_core::address::Namespace;
use capabilities_core::manifest::Manifest;
use capabilities_core::ports::{Credentials, Secrets, SecretsError};
use clap::Args;
use serde_json::json;

use super::print_stdout;
use crate::config::{ConnectionsRecord, HubConfig};
use crate::error::Exit;
use crate::harness::{self, edit, read};
use crate::secrets::LocalSecrets;
use crate::settings::Settings;
use crate::sources;
use crate::store::{SCHEMA_VERSION, Store};
use crate::upstream::{PoolOptions, SourceError, SourcePool};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// How long each source may take to start and list its tools, in seconds.
    #[arg(long, default_value_t = 20)]
    pub timeout: u64,
}

/// One finding.
#[derive(Debug, Clone)]
struct Check {
    area: &'static str,
    name: String,
    ok: bool,
    detail: String,
    /// What to do, for a problem.
    fix: Option<String>,
}

fn ok(area: &'static str, name: impl Into<String>, detail: impl Into<String>) -> Check {
    Check { area, name: name.into(), ok: true, detail: detail.into(), fix: None }
}

fn problem(
    area: &'static str,
    name: impl Into<String>,
    detail: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check { area, name: name.into(), ok: false, detail: detail.into(), fix: Some(fix.into()) }
}

pub fn run(settings: &Settings, args: DoctorArgs) -> Result<ExitCode> {
    let mut checks = Vec::new();
    // Permissions first: opening the store repairs them.
    checks.extend(permissions(&settings.home));
    let store = match Store::open(&settings.home) {
        Ok(store) => store,
        Err(err) => {
            checks.push(problem(
                "store",
                "open",
                format!("{err:#}"),
                "fix what the error says, then run `capabilities hub doctor` again",
            ));
            return finish(settings, &checks);
        }
    };
    checks.push(ok(
        "store",
        "schema",
        format!("schema version {} (this build writes {SCHEMA_VERSION})", store.hub.schema_version),
    ));
    let config = HubConfig::load(&store);
    for record in &config.problems {
        checks.push(problem(
            "store",
            "record",
            record.clone(),
            "fix or remove the file named, then run doctor again",
        ));
    }
    if config.problems.is_empty() {
        checks.push(ok("store", "records", format!("{} source record(s) readable", config.sources.len())));
    }
    checks.extend(run_checks(&store));
    checks.extend(source_checks(&config, &store, Duration::from_secs(args.timeout.max(1)))?);
    checks.extend(schema_checks(&config));
    checks.extend(isolation_checks(&config, &store));
    let token = store.root().join("http-token");
    if let Ok(meta) = std::fs::metadata(&token) {
        let mode = meta.permissions().mode() & 0o777;
        checks.push(if mode == 0o600 {
            ok("store", "http-token", "mode 600")
        } else {
            problem(
                "store",
                "http-token",
                format!("mode {mode:o}"),
                format!("run `chmod 600 {}`", token.display()),
            )
        });
    }
    checks.push(keychain_check(&store));
    checks.extend(harness_checks(&store));
    finish(settings, &checks)
}

/// How each source runs (isolated, as the person, or remote), and whether each installed
/// package is still what the lock file pins.
fn isolation_checks(config: &HubConfig, store: &Store) -> Vec<Check> {
    use crate::upstream::SourceTransport;
    let lock = match crate::packages::load(store) {
        Ok(lock) => lock,
        Err(err) => {
            return vec![problem(
                "isolation",
                crate::packages::LOCK,
                format!("{err:#}"),
                "fix or remove it; its sources run, but receipts and `hub refresh` cannot name their packages",
            )];
        }
    };
    let mut checks = Vec::new();
    for (record, _, _) in &config.sources {
        let ns = record.spec.namespace.as_str();
        let package = lock.packages.get(ns).map(|p| {
            format!("{} ({}, signatures {})", p.reference(), p.integrity, p.signatures.status.as_str())
        });
        let detail = match (&record.spec.transport, &package) {
            (SourceTransport::Stdio { isolation: Some(isolation), .. }, _) => isolation.describe(),
            (SourceTransport::Stdio { .. }, _) => {
                "unisolated: runs as you, with your files and network".to_owned()
            }
            _ => "remote: nothing of it runs on this machine".to_owned(),
        };
        let detail = match &package {
            Some(package) => format!("{package}; {detail}"),
            None => detail,
        };
        let isolated = matches!(&record.spec.transport, SourceTransport::Stdio { isolation: Some(_), .. });
        if isolated && crate::upstream::find_bwrap().is_none() {
            checks.push(problem(
                "isolation",
                ns,
                detail,
                "install bubblewrap (`apt-get install bubblewrap`), or add the source again with `--no-isolate`",
            ));
            continue;
        }
        if let Some(locked) = lock.packages.get(ns) {
            let dir =
                crate::packages::package_dir(store.root(), &locked.registry, &locked.name, &locked.version);
            let version = crate::packages::installed_version(store.root(), locked);
            if version.as_deref() != Some(locked.version.as_str()) {
                checks.push(problem(
                    "isolation",
                    ns,
                    format!(
                        "the lock pins {} but {} holds {}",
                        locked.reference(),
                        dir.display(),
                        version.as_deref().unwrap_or("nothing readable")
                    ),
                    format!("remove the source and add `{}` again", add_reference(locked)),
                ));
                continue;
            }
        }
        checks.push(ok("isolation", ns, detail));
    }
    checks
}

/// How `hub add` names a locked package: `npm:<name>@<version>`, `pypi:<name>==<version>`.
fn add_reference(locked: &crate::packages::LockedPackage) -> String {
    if locked.registry == "pypi" {
        format!("pypi:{}=={}", locked.name, locked.version)
    } else {
        format!("npm:{}@{}", locked.name, locked.version)
    }
}

/// Run records and journals: one that cannot be read is named, since `hub runs` and a resume
/// cannot use it.
fn run_checks(store: &Store) -> Vec<Check> {
    let (runs, unreadable) = super::runs::scan(store);
    if unreadable.is_empty() {
        return vec![ok(
            "store",
            "runs",
            format!("{} run record(s) and their journals readable", runs.len()),
        )];
    }
    unreadable
        .into_iter()
        .map(|u| {
            problem(
                "store",
                "run",
                format!("{}: {}", u.file, u.reason),
                format!(
                    "the run cannot be shown or resumed; remove {} (and the run's other files), then run doctor again",
                    store.root().join(&u.file).display()
                ),
            )
        })
        .collect()
}

/// Tools whose input schema the hub cannot check calls against: they still run, unchecked, so
/// this is said, not failed.
fn schema_checks(config: &HubConfig) -> Vec<Check> {
    let catalog = config.catalog();
    let unchecked: Vec<String> = catalog
        .tools()
        .filter_map(|(address, _)| catalog.schema_problem(&address).map(|why| format!("{address}: {why}")))
        .collect();
    if unchecked.is_empty() {
        return vec![ok("sources", "schemas", "every tool's input schema can be checked before a call")];
    }
    vec![ok(
        "sources",
        "schemas",
        format!(
            "{} tool(s) run with their arguments unchecked, because their input schema cannot be compiled: {}",
            unchecked.len(),
            unchecked.join("; ")
        ),
    )]
}

/// Where credentials go: the OS keychain, or the fallback file (which works, with a warning).
fn keychain_check(store: &Store) -> Check {
    use crate::secrets::{SecretStore, StoreKind};
    match SecretStore::open(store) {
        Ok(secrets) if secrets.kind() == StoreKind::Keychain => ok("secrets", "keychain", secrets.describe()),
        Ok(secrets) if std::env::var("CAPABILITIES_KEYCHAIN").is_ok_and(|v| v.trim() == "file") => {
            ok("secrets", "keychain", format!("{} (CAPABILITIES_KEYCHAIN=file)", secrets.describe()))
        }
        Ok(secrets) => ok(
            "secrets",
            "keychain",
            format!(
                "{} — no OS keychain is reachable; start a Secret Service such as gnome-keyring to use one",
                secrets.describe()
            ),
        ),
        Err(err) => problem(
            "secrets",
            "keychain",
            err.to_string(),
            "unset CAPABILITIES_KEYCHAIN or start a Secret Service such as gnome-keyring",
        ),
    }
}

/// Modes of the home (700), its directories (700) and files (600), read without repairing.
fn permissions(home: &Path) -> Vec<Check> {
    if !home.exists() {
        return vec![ok(
            "store",
            "home",
            format!("{} does not exist yet; it is created now", home.display()),
        )];
    }
    let mut loose = Vec::new();
    let mut stack = vec![home.to_owned()];
    while let Some(dir) = stack.pop() {
        if let Ok(meta) = std::fs::symlink_metadata(&dir) {
            let mode = meta.permissions().mode() & 0o777;
            if mode != 0o700 {
                loose.push(format!("{} is {mode:o}, not 700", dir.display()));
            }
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            // A link's own mode means nothing (`bin/capabilities`, the link to the binary).
            if meta.is_symlink() {
                continue;
            }
            if meta.is_dir() {
                // Installed packages keep the modes they were installed with, and a source's
                // state is its own: only those folders' own modes are checked.
                let leaf = ["runs", "blobs", "packages", "state"].iter().any(|n| entry.file_name() == *n);
                if !leaf {
                    stack.push(entry.path());
                } else if meta.permissions().mode() & 0o777 != 0o700 {
                    loose.push(format!(
                        "{} is {:o}, not 700",
                        entry.path().display(),
                        meta.permissions().mode() & 0o777
                    ));
                }
            } else if meta.permissions().mode() & 0o077 != 0 {
                loose.push(format!(
                    "{} is {:o}, not 600",
                    entry.path().display(),
                    meta.permissions().mode() & 0o777
                ));
            }
        }
    }
    if loose.is_empty() {
        vec![ok("store", "permissions", format!("{}: directories 700, files 600", home.display()))]
    } else {
        vec![problem(
            "store",
            "permissions",
            loose.join("\n"),
            "any hub command repairs these modes; check who else could read the files meanwhile",
        )]
    }
}

/// Starts every source, lists its tools within `timeout`, and reports each.
fn source_checks(config: &HubConfig, store: &Store, timeout: Duration) -> Result<Vec<Check>> {
    if config.sources.is_empty() {
        return Ok(vec![ok(
            "sources",
            "none",
            "no sources yet; add one with `capabilities hub import` or `capabilities hub add`",
        )]);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let options = PoolOptions { start_timeout: timeout, list_timeout: timeout, ..PoolOptions::default() };
    let pool = SourcePool::with_sources(options, config.sources.iter().map(|(r, _, _)| r.spec.clone()));
    let secrets = LocalSecrets::new(config, store);
    let listed = runtime.block_on(futures_util::future::join_all(config.sources.iter().map(
        |(record, _, connections)| {
            let pool = pool.clone();
            let spec = record.spec.clone();
            let secrets = &secrets;
            let oauth = connections
                .connections
                .iter()
                .find(|c| Some(&c.name) == connections.default.as_ref())
                .is_some_and(|c| c.oauth.is_some());
            async move {
                // An OAuth connection is checked with its stored tokens (refreshed if they expired),
                // a static one with the values this shell's environment has.
                let credentials = if oauth {
                    match Namespace::new(&spec.namespace) {
                        Ok(namespace) => secrets.resolve(&namespace, None).await,
                        Err(e) => Err(SecretsError::Unavailable(e.to_string())),
                    }
                } else {
                    Ok(sources::credentials_from_env(&spec))
                };
                let result = match &credentials {
                    Ok(credentials) => {
                        Some(tokio::time::timeout(timeout * 2, pool.list_tools(&spec, credentials)).await)
                    }
                    Err(_) => None,
                };
                (spec, credentials, result)
            }
        },
    )));
    let mut checks = Vec::new();
    for ((spec, credentials, result), (_, manifest, connections)) in listed.into_iter().zip(&config.sources) {
        let ns = spec.namespace.clone();
        let check = match (credentials, result) {
            (Ok(credentials), Some(result)) => {
                source_check(&pool, &ns, &credentials, result, manifest.as_ref(), connections, timeout)
            }
            (Err(SecretsError::SignInRequired { connection, reason, .. }), _) => problem(
                "sources",
                ns.clone(),
                format!("connection `{connection}` needs a sign-in: {reason}"),
                format!("run `capabilities hub auth {ns} --connection {connection}`"),
            ),
            (Err(err), _) => problem(
                "sources",
                ns.clone(),
                err.to_string(),
                format!("check the secret store (see `keychain` above), then `capabilities hub auth {ns}`"),
            ),
            (Ok(_), None) => {
                problem("sources", ns.clone(), "it was not checked".to_owned(), "run doctor again".to_owned())
            }
        };
        checks.push(check);
    }
    pool.shutdown();
    runtime.shutdown_background();
    Ok(checks)
}

/// The check of one source that listed (or failed to list) its tools.
fn source_check(
    pool: &SourcePool,
    ns: &str,
    credentials: &Credentials,
    result: Result<Result<Vec<serde_json::Value>, SourceError>, tokio::time::error::Elapsed>,
    manifest: Option<&Manifest>,
    connections: &ConnectionsRecord,
    timeout: Duration,
) -> Check {
    let ns = ns.to_owned();
    let missing: Vec<String> = connections
        .connections
        .iter()
        .flat_map(|c| c.slots.clone())
        .filter(|slot| !credentials.values.iter().any(|(name, _)| name == slot))
        .collect();
    let tail = pool.stderr_tail(&ns);
    let with_tail = |message: String| {
        let tail = tail.trim();
        if tail.is_empty() {
            message
        } else {
            let lines: Vec<&str> = tail.lines().collect();
            let last = &lines[lines.len().saturating_sub(8)..];
            format!("{message}\nstderr ended with:\n  {}", last.join("\n  "))
        }
    };
    match result {
        Ok(Ok(tools)) => {
            let stored = manifest.as_ref().map_or(0, |m| m.tools.len());
            let mut detail = format!("started; lists {} tool(s), {stored} in the manifest", tools.len());
            if manifest.as_ref().is_none_or(|m| m.tools.len() != tools.len()) {
                detail.push_str(&format!(" — run `capabilities hub refresh {ns}`"));
            }
            ok("sources", ns, detail)
        }
        Ok(Err(err @ SourceError::AuthRequired { .. })) => {
            let fix = format!("sign in (again) with `capabilities hub auth {ns}`");
            problem("sources", ns, err.to_string(), fix)
        }
        Ok(Err(err)) => {
            let fix = if missing.is_empty() {
                format!(
                    "check its command or URL with `capabilities hub list`, then `capabilities hub refresh {ns}`"
                )
            } else {
                format!(
                    "it may need its credential ({}): run `capabilities hub auth {ns}`",
                    missing.join(", ")
                )
            };
            problem("sources", ns, with_tail(err.to_string()), fix)
        }
        Err(_) => problem(
            "sources",
            ns.clone(),
            with_tail(format!("did not list its tools within {} s", (timeout * 2).as_secs())),
            format!("check that it starts by hand, then `capabilities hub refresh {ns}`"),
        ),
    }
}

/// Which harnesses have the hub's entry, and whether the command it runs still exists.
fn harness_checks(store: &Store) -> Vec<Check> {
    let Ok(home) = harness::home_dir() else {
        return vec![problem(
            "harnesses",
            "home",
            "HOME is not set",
            "set HOME to find the harnesses' configs",
        )];
    };
    let this = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
    // An entry may serve any profile there is; one naming no profile differs.
    let expected: Vec<_> = crate::profiles::names(store)
        .iter()
        .filter_map(|p| super::connect::hub_entry(store.root(), p).ok())
        .collect();
    let mut checks = Vec::new();
    for harness in harness::HARNESSES {
        let not_connected = || {
            ok(
                "harnesses",
                harness.id,
                format!(
                    "found, not connected ({}); connect with `capabilities hub connect --client {}`",
                    harness.config, harness.id
                ),
            )
        };
        let doc = match read::load(harness, &home) {
            Ok(Some((_, doc))) => doc,
            Ok(None) if harness.present(&home) => {
                checks.push(not_connected());
                continue;
            }
            Ok(None) => continue,
            Err(err) => {
                checks.push(problem(
                    "harnesses",
                    harness.id,
                    format!("{err:#}"),
                    "fix the file, then run doctor again",
                ));
                continue;
            }
        };
        let Some(command) = edit::entry_command(harness, &doc) else {
            checks.push(not_connected());
            continue;
        };
        let path = Path::new(&command);
        // The hub's own link or the npm launcher count as this binary: connect writes them.
        let ours = this.as_deref().is_some_and(|t| path.canonicalize().ok().as_deref() == Some(t))
            || expected.iter().any(|e| e.command == command);
        checks.push(if !path.is_file() {
            // A link whose binary was moved or deleted (an upgrade that installed elsewhere).
            let gone = match std::fs::read_link(path) {
                Ok(target) => format!("{command}, a link to {}, which is gone", target.display()),
                Err(_) => format!("{command}, which does not exist"),
            };
            problem(
                "harnesses",
                harness.id,
                format!("its `capabilities` entry runs {gone}"),
                format!(
                    "run `capabilities hub connect --client {}` with the binary you use now; it points \
                     the entry (and {}) at that binary",
                    harness.id,
                    crate::install::stable_path(store.root()).display()
                ),
            )
        } else if !ours {
            ok("harnesses", harness.id, format!("connected, through another binary: {command}"))
        } else if !expected.is_empty() && !expected.iter().any(|e| edit::has_entry(harness, &doc, e)) {
            // The same binary, but other arguments or hub home (a changed profile, a moved hub).
            problem(
                "harnesses",
                harness.id,
                "its `capabilities` entry differs from what connect writes now (its profile or hub home changed)",
                format!("run `capabilities hub connect --client {}` to write it again", harness.id),
            )
        } else {
            ok("harnesses", harness.id, "connected".to_owned())
        });
    }
    checks
}

fn finish(settings: &Settings, checks: &[Check]) -> Result<ExitCode> {
    let healthy = checks.iter().all(|c| c.ok);
    if settings.json {
        let value = json!({
            "healthy": healthy,
            "checks": checks.iter().map(|c| json!({
                "area": c.area, "name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix,
            })).collect::<Vec<_>>(),
        });
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
    } else {
        let mut out = String::new();
        let mut area = "";
        for check in checks {
            if check.area != area {
                area = check.area;
                out.push_str(&format!("{area}\n"));
            }
            let mark = if check.ok { "ok  " } else { "FAIL" };
            let mut lines = check.detail.lines();
            out.push_str(&format!("  {mark} {}: {}\n", check.name, lines.next().unwrap_or("")));
            for line in lines {
                out.push_str(&format!("       {line}\n"));
            }
            if let Some(fix) = &check.fix {
                out.push_str(&format!("       next: {fix}\n"));
            }
        }
        let problems = checks.iter().filter(|c| !c.ok).count();
        out.push_str(&if healthy { "all good\n".to_owned() } else { format!("{problems} problem(s)\n") });
        print_stdout(&out)?;
    }
    Ok(if healthy { Exit::Ok } else { Exit::Failure }.into())
}
