//! `capabilities hub add`: register one source from a URL or a stdio command line, read its
//! tools, and review them.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::address::Namespace;
use capabilities_core::manifest::Manifest;
use capabilities_core::ports::Credentials;
use clap::Args;

use super::print_stdout;
use super::review;
use crate::config::{self, ConnectionRecord, ConnectionsRecord, SourceRecord};
use crate::error::{Exit, UsageError};
use crate::oauth::tokens;
use crate::oauth::{SignInOptions, flow};
use crate::platform::now_ms;
use crate::secrets::SecretStore;
use crate::settings::Settings;
use crate::sources;
use crate::sources::Listed;
use crate::store::Store;
use crate::upstream::{HeaderSlot, SourceSpec, SourceTransport};

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The URL of a streamable HTTP MCP server, or of an OpenAPI document (a URL ending in
    /// `.json`, `.yaml` or `.yml`, or a file): the API's operations become tools. For a local
    /// server, give its command line after `--` instead: `capabilities hub add -- npx -y @scope/server`.
    pub url: Option<String>,
    /// The command line of a local stdio server (after `--`); with `npm:` or `pypi:`, the
    /// installed server's own arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// The namespace the tools live under in code (`ns.tool(...)`); proposed from the URL's
    /// host or the package name when left out.
    #[arg(long)]
    pub namespace: Option<String>,
    /// For a stdio server: `NAME` declares an environment variable that carries a credential
    /// (its value is never stored here); `NAME=VALUE` sets a plain, non-secret value. To read
    /// the tools now, a credential's value is taken from the same variable in this shell.
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// For an HTTP server: a header that carries a credential. `Authorization` is sent as
    /// `Bearer <value>`, any other header as the bare value. To read the tools now, the value is
    /// taken from the environment variable named like the header (`X-Api-Key` → `X_API_KEY`).
    #[arg(long = "header", value_name = "NAME")]
    pub header: Vec<String>,
    /// Consent to run the command and accept the proposed policy without prompting.
    #[arg(long, short)]
    pub yes: bool,
    /// Run a stdio command isolated with bubblewrap (the default for `npm:` installs): the
    /// filesystem read-only, the home directory hidden, a private writable state directory, no
    /// network unless `--net`.
    #[arg(long, conflicts_with = "no_isolate")]
    pub isolate: bool,
    /// Run an `npm:` install unisolated, on purpose (as you, with your files and network).
    #[arg(long)]
    pub no_isolate: bool,
    /// Grant an isolated source the network (it has loopback only otherwise).
    #[arg(long)]
    pub net: bool,
    /// Grant an isolated source reading a directory (bound read-only; repeatable), for
    /// example a server's own checkout under your home directory.
    #[arg(long = "read", value_name = "DIR")]
    pub read: Vec<String>,
    #[command(flatten)]
    pub sign_in: SignInArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// For an HTTP API described by an OpenAPI document.
#[derive(Debug, Clone, Default, Args)]
pub struct ApiArgs {
    /// Read the URL as an OpenAPI document even when its name does not say so.
    #[arg(long)]
    pub openapi: bool,
    /// Where calls go, instead of the document's first server URL.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// A value for one of the server URL's variables (`--server-var region=eu`); the rest take
    /// their defaults.
    #[arg(long = "server-var", value_name = "NAME=VALUE")]
    pub server_var: Vec<String>,
    /// How the API's credential is sent, when the document says nothing (or to override it):
    /// `bearer`, `basic` (`user:password`), `header:NAME`, `query:NAME`, `cookie:NAME`, `none`,
    /// or `oauth`: sign in with the document's OAuth 2.0 or OpenID Connect scheme (the default
    /// when it declares no key or token scheme).
    #[arg(long, value_name = "HOW")]
    pub auth: Option<String>,
    /// Read the credential from stdin (one line) instead of a prompt.
    #[arg(long)]
    pub stdin: bool,
    /// Allow a document or base URL on plain http to another machine.
    #[arg(long)]
    pub allow_http: bool,
}

/// How to sign in when the server asks for OAuth.
#[derive(Debug, Clone, Default, Args)]
pub struct SignInArgs {
    /// A client id registered with the server's authorization server beforehand (otherwise the
    /// hub uses a client ID metadata document or registers itself). Its secret is asked for at
    /// a prompt that does not echo (leave it empty for a public client).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// Read that client's secret from stdin (one line) instead of the prompt.
    #[arg(long, requires = "client_id")]
    pub client_secret_stdin: bool,
    /// The URL of the client ID metadata document to sign in with, when the authorization
    /// server takes them.
    #[arg(long, value_name = "URL", env = crate::oauth::CLIENT_METADATA_ENV)]
    pub client_metadata_url: Option<String>,
    /// Print the sign-in URL instead of opening a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// A scope to ask for, instead of the ones the server or the API's document names
    /// (repeatable: `--scope read --scope write`).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scope: Vec<String>,
}

impl SignInArgs {
    /// The options a sign-in runs with; a client secret is read now, from stdin or a prompt.
    pub fn options(&self, settings: &Settings) -> Result<SignInOptions> {
        let client_secret = if self.client_secret_stdin {
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .map_err(|e| anyhow::anyhow!("reading the client secret from stdin: {e}"))?;
            let secret = line.trim_end_matches(['\r', '\n']).to_owned();
            if secret.is_empty() {
                return Err(UsageError(
                    "stdin held no client secret; leave `--client-secret-stdin` out for a public client"
                        .into(),
                )
                .into());
            }
            Some(secret)
        } else if self.client_id.is_some() && !settings.no_input {
            let secret =
                crate::secrets::read_hidden("client secret (input hidden; empty for a public client): ")?;
            (!secret.is_empty()).then_some(secret)
        } else {
            None
        };
        Ok(SignInOptions {
            client_id: self.client_id.clone(),
            client_secret,
            client_metadata_url: self.client_metadata_url.clone(),
            no_browser: self.no_browser,
            timeout: sign_in_timeout(),
            scopes: self.scope.clone(),
        })
    }
}

/// A shorter wait for the browser, for tests: `CAPABILITIES_SIGN_IN_TIMEOUT_SECS`.
fn sign_in_timeout() -> Option<std::time::Duration> {
    let secs = std::env::var("CAPABILITIES_SIGN_IN_TIMEOUT_SECS").ok()?.parse().ok()?;
    Some(std::time::Duration::from_secs(secs))
}

pub fn run(settings: &Settings, args: AddArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    if let Some(target) =
        args.url.as_deref().filter(|t| args.api.openapi || crate::openapi::looks_like_document(t))
    {
        return super::add_api::run(settings, &store, target, &args);
    }
    if let Some(target) = args.url.as_deref().filter(|t| t.starts_with("npm:") || t.starts_with("pypi:")) {
        return super::add_package::run(settings, &store, target, &args);
    }
    let mut transport = transport(&args)?;
    let namespace = match &args.namespace {
        Some(raw) => Namespace::new(raw).map_err(|e| {
            UsageError(format!("`{raw}` is not a valid namespace ({e}); pick another with `--namespace`"))
        })?,
        None => suggest(&transport),
    };
    let ns = namespace.as_str();
    if store.root().join(config::source_path(ns)).is_file() {
        return Err(UsageError(format!(
            "a source named `{ns}` exists already: re-read its tools with `capabilities hub refresh {ns}`, \
             remove it with `capabilities hub remove {ns}`, or pick another name with `--namespace`"
        ))
        .into());
    }
    match &mut transport {
        SourceTransport::Stdio { isolation, .. } if args.isolate => {
            let granted = super::add_package::granted_dirs(&args.read)?;
            *isolation = Some(super::add_package::isolation(&store, ns, granted, args.net)?);
        }
        SourceTransport::Stdio { .. } if args.net => {
            return Err(
                UsageError("`--net` grants an isolated source the network: add `--isolate`".into()).into()
            );
        }
        SourceTransport::Stdio { .. } if !args.read.is_empty() => {
            return Err(
                UsageError("`--read` grants an isolated source a directory: add `--isolate`".into()).into()
            );
        }
        SourceTransport::Stdio { .. } => {}
        _ if args.isolate || args.net || args.no_isolate || !args.read.is_empty() => {
            return Err(UsageError(
                "`--isolate`, `--no-isolate`, `--net` and `--read` are for stdio servers (a command after `--`, or `npm:<package>`)"
                    .into(),
            )
            .into());
        }
        _ => {}
    }
    let spec = SourceSpec { namespace: ns.to_owned(), transport };
    if let Some(line) = sources::command_line(&spec) {
        match sources::isolation_line(&spec) {
            Some(isolated) => {
                eprintln!("source `{ns}` runs this command on your machine, {isolated}:\n  {line}")
            }
            None => eprintln!("source `{ns}` runs this command on your machine, as you:\n  {line}"),
        }
        if !args.yes {
            if settings.no_input {
                return Err(UsageError(
                    "running a local command needs your consent: check the command above and pass `--yes`"
                        .into(),
                )
                .into());
            }
            if !review::ask(settings, "Run it? [y/N] ", false)? {
                bail!("nothing was added; run `capabilities hub add` again to change the command");
            }
        }
    }
    let manifest = register_signing_in(settings, &store, &spec, &args.sign_in)?;
    added_then_review(settings, &store, &format!("`{ns}`"), &manifest, args.yes)
}

/// Says what `hub add` added (`what`: the namespace, and where it came from) and how many tools,
/// then asks about the tools policy does not settle: the end of every kind of `add`.
pub(super) fn added_then_review(
    settings: &Settings,
    store: &Store,
    what: &str,
    manifest: &Manifest,
    yes: bool,
) -> Result<ExitCode> {
    let n = manifest.tools.len();
    print_stdout(&format!("added {what} with {n} tool{}\n", if n == 1 { "" } else { "s" }))?;
    let policy = config::load_policy(store)?;
    let items = review::needs_review(manifest, &policy, None);
    review::review(settings, store, &items, yes)?;
    Ok(Exit::Ok.into())
}

/// Reads a source's tools with `credentials` and writes its records (source, manifest,
/// connections): the part of `add` that `import` shares. The caller has the person's consent
/// to run a stdio command and reviews the manifest's tools afterwards.
pub fn register(store: &Store, spec: &SourceSpec, credentials: &Credentials) -> Result<Manifest> {
    let ns = spec.namespace.as_str();
    let namespace =
        Namespace::new(ns).map_err(|e| UsageError(format!("`{ns}` is not a valid namespace ({e})")))?;
    eprintln!("reading the tools of `{ns}`…");
    let entries = sources::read_tools(spec, credentials)?;
    let manifest = sources::build_manifest(&namespace, &entries);
    let record = SourceRecord { spec: spec.clone(), added_ms: now_ms() };
    sources::write_new_source(store, &record, &manifest, &sources::connections_for(spec))?;
    Ok(manifest)
}

/// [`register`] for `add`: a server that answers the first request with 401 (and takes no
/// static credential) is signed in with OAuth, then registered with the tokens.
pub(super) fn register_signing_in(
    settings: &Settings,
    store: &Store,
    spec: &SourceSpec,
    sign_in: &SignInArgs,
) -> Result<Manifest> {
    let credentials = sources::credentials_from_env(spec);
    let oauth =
        matches!(&spec.transport, SourceTransport::Http { header_slots, .. } if header_slots.is_empty());
    if !oauth {
        return register(store, spec, &credentials);
    }
    let ns = spec.namespace.as_str();
    eprintln!("reading the tools of `{ns}`…");
    let challenge = match sources::list_tools(spec, &credentials)? {
        Listed::Tools(tools) => return register_tools(store, spec, &tools),
        Listed::AuthRequired { challenge, .. } => challenge,
    };
    eprintln!("`{ns}` asks you to sign in (OAuth)");
    // A 401 without a challenge may as well want an API key.
    let bare = challenge.is_none();
    let connected =
        flow::connect(spec, "default", challenge, &sign_in.options(settings)?).map_err(|err| {
            if bare {
                anyhow::anyhow!(
                    "{err:#}\nif `{ns}` takes an API key rather than an OAuth sign-in, add it with `--header \
                 Authorization` (or the header its documentation names)"
                )
            } else {
                err
            }
        })?;
    register_connected(store, spec, "default", &connected)
}

/// Writes a new OAuth source: its tokens, then its records; the tokens go again when the
/// records cannot be written.
pub fn register_connected(
    store: &Store,
    spec: &SourceSpec,
    connection: &str,
    connected: &flow::Connected,
) -> Result<Manifest> {
    let ns = spec.namespace.as_str();
    let namespace =
        Namespace::new(ns).map_err(|e| UsageError(format!("`{ns}` is not a valid namespace ({e})")))?;
    let manifest = sources::build_manifest(&namespace, &connected.tools);
    let secrets = SecretStore::open(store)?;
    tokens::write(&secrets, ns, connection, &connected.signed_in.tokens)?;
    let record = SourceRecord { spec: spec.clone(), added_ms: now_ms() };
    let connections = ConnectionsRecord {
        connections: vec![ConnectionRecord {
            name: connection.to_owned(),
            slots: Vec::new(),
            oauth: Some(connected.signed_in.client.clone()),
        }],
        default: Some(connection.to_owned()),
    };
    if let Err(err) = sources::write_new_source(store, &record, &manifest, &connections) {
        let _ = tokens::forget(&secrets, ns, connection);
        return Err(err);
    }
    eprintln!("signed in; the tokens are in {}", secrets.describe());
    Ok(manifest)
}

pub(super) fn register_tools(
    store: &Store,
    spec: &SourceSpec,
    entries: &sources::ToolList,
) -> Result<Manifest> {
    let ns = spec.namespace.as_str();
    let namespace =
        Namespace::new(ns).map_err(|e| UsageError(format!("`{ns}` is not a valid namespace ({e})")))?;
    let manifest = sources::build_manifest(&namespace, entries);
    let record = SourceRecord { spec: spec.clone(), added_ms: now_ms() };
    sources::write_new_source(store, &record, &manifest, &sources::connections_for(spec))?;
    Ok(manifest)
}

fn transport(args: &AddArgs) -> Result<SourceTransport> {
    match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => {
            Err(UsageError("give either a URL or a command after `--`, not both".into()).into())
        }
        (None, None) => {
            Err(UsageError("nothing to add: give a server's URL, or its command line after `--`".into())
                .into())
        }
        (Some(url), None) => {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(UsageError(format!(
                    "`{url}` is not an http(s) URL; for a local server put its command line after `--`"
                ))
                .into());
            }
            if !args.env.is_empty() {
                return Err(
                    UsageError("`--env` is for stdio servers; use `--header` for a URL".into()).into()
                );
            }
            let header_slots = args
                .header
                .iter()
                .map(|name| {
                    if name.eq_ignore_ascii_case("authorization") {
                        HeaderSlot::bearer()
                    } else {
                        HeaderSlot { name: name.clone(), prefix: String::new() }
                    }
                })
                .collect();
            Ok(SourceTransport::Http { url: url.clone(), header_slots })
        }
        (None, Some((command, rest))) => {
            if !args.header.is_empty() {
                return Err(
                    UsageError("`--header` is for URLs; use `--env` for a stdio server".into()).into()
                );
            }
            let (env, env_slots) = stdio_env(args);
            Ok(SourceTransport::Stdio {
                command: command.clone(),
                args: rest.to_vec(),
                env,
                env_slots,
                cwd: None,
                isolation: None,
            })
        }
    }
}

/// `--env` split into plain values and credential slots.
pub(super) fn stdio_env(args: &AddArgs) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = BTreeMap::new();
    let mut env_slots = Vec::new();
    for item in &args.env {
        match item.split_once('=') {
            Some((name, value)) => {
                env.insert(name.to_owned(), value.to_owned());
            }
            None => env_slots.push(item.clone()),
        }
    }
    (env, env_slots)
}

/// A namespace proposed from the URL's host or the server's package name.
pub fn suggest(transport: &SourceTransport) -> Namespace {
    match transport {
        SourceTransport::OpenApi(api) => {
            suggest(&SourceTransport::Http { url: api.base_url.clone(), header_slots: Vec::new() })
        }
        SourceTransport::Http { url, .. } => {
            let host = url.split("://").nth(1).unwrap_or(url).split(['/', ':', '?']).next().unwrap_or("");
            let mut labels: Vec<&str> = host.split('.').collect();
            if labels.len() > 1 {
                labels.pop();
            }
            labels.retain(|l| !["www", "api", "mcp"].contains(l));
            Namespace::suggest(labels.last().copied().unwrap_or(host))
        }
        SourceTransport::Stdio { command, args, .. } => Namespace::suggest(&package_name(command, args)),
    }
}

/// The package a command line runs: a `node_modules/` path's package, the first argument of a
/// package runner (`npx`, `uvx`, …), or the command itself.
fn package_name(command: &str, args: &[String]) -> String {
    for word in std::iter::once(command).chain(args.iter().map(String::as_str)) {
        if let Some((_, after)) = word.rsplit_once("node_modules/") {
            let mut parts = after.split('/');
            let first = parts.next().unwrap_or("");
            return if first.starts_with('@') {
                parts.next().unwrap_or(first).to_owned()
            } else {
                first.to_owned()
            };
        }
    }
    let program = command.rsplit('/').next().unwrap_or(command);
    let runners = ["npx", "uvx", "bunx", "pnpx", "pipx", "uv", "deno", "docker", "node", "python", "python3"];
    if runners.contains(&program) {
        if let Some(arg) =
            args.iter().find(|a| !a.starts_with('-') && !["run", "x", "exec"].contains(&a.as_str()))
        {
            let name = arg.rsplit('/').next().unwrap_or(arg);
            return name.split('@').find(|s| !s.is_empty()).unwrap_or(name).to_owned();
        }
    }
    program.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(line: &str) -> String {
        let mut words = line.split(' ').map(str::to_owned);
        let command = words.next().unwrap();
        let transport = SourceTransport::Stdio {
            command,
            args: words.collect(),
            env: BTreeMap::new(),
            env_slots: vec![],
            cwd: None,
            isolation: None,
        };
        suggest(&transport).to_string()
    }

    fn http(url: &str) -> String {
        suggest(&SourceTransport::Http { url: url.to_owned(), header_slots: vec![] }).to_string()
    }

    #[test]
    fn namespaces_are_proposed_from_packages_and_hosts() {
        assert_eq!(stdio("npx -y @modelcontextprotocol/server-memory"), "memory");
        assert_eq!(
            stdio("node node/node_modules/@modelcontextprotocol/server-memory/dist/index.js"),
            "memory"
        );
        assert_eq!(stdio("uvx mcp-server-git@1.2"), "git");
        assert_eq!(http("https://mcp.linear.app/sse"), "linear");
        assert_eq!(http("https://api.githubcopilot.com/mcp/"), "githubcopilot");
    }
}
