//! `capabilities hub auth`: fill the credential slots of one connection of a source. Values are
//! typed at a prompt that does not echo, or piped in with `--stdin`; never given as arguments.
//! They go to the OS keychain (or its fallback file, see `secrets`).

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;

use capabilities_core::manifest::Manifest;
use capabilities_core::ports::Credentials;

use super::add::SignInArgs;
use super::{print_stdout, review};
use crate::config::{self, ConnectionRecord, ConnectionsRecord, read_json, write_json};
use crate::error::{Exit, UsageError};
use crate::oauth::flow;
use crate::secrets::{SecretStore, SlotKey, check_connection_name, check_value, read_hidden};
use crate::settings::Settings;
use crate::sources;
use crate::sources::Listed;
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport};

/// Most bytes `--stdin` reads.
const MAX_STDIN_BYTES: u64 = 64 * 1024;

#[derive(Debug, Args)]
pub struct AuthArgs {
    /// The namespace of the source (see `capabilities hub list`).
    pub namespace: String,
    /// The connection to fill; the source's default when left out. A name the source does not
    /// have yet adds a connection with the source's slots (`--connection work`).
    #[arg(long, value_name = "NAME")]
    pub connection: Option<String>,
    /// Read the values from stdin instead of prompting: one line per slot, in the order
    /// `capabilities hub connections` lists the slots. Each whole line is the value.
    #[arg(long)]
    pub stdin: bool,
    /// Accept the proposed policy for the tools a first sign-in reads, without prompting.
    #[arg(long, short)]
    pub yes: bool,
    #[command(flatten)]
    pub sign_in: SignInArgs,
}

pub fn run(settings: &Settings, args: AuthArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let (namespace, source) = sources::named_source(&store, &args.namespace)?;
    let ns = namespace.as_str();
    let source_slots = sources::connections_for(&source.spec)
        .connections
        .into_iter()
        .next()
        .map(|c| c.slots)
        .unwrap_or_default();
    let mut record: ConnectionsRecord = read_json(&store, &config::connections_path(ns))?.unwrap_or_default();
    let name =
        args.connection.clone().or_else(|| record.default.clone()).unwrap_or_else(|| "default".to_owned());
    check_connection_name(&name).map_err(UsageError)?;
    let existing = record.connections.iter().find(|c| c.name == name);
    let slots = existing.map_or_else(|| source_slots.clone(), |c| c.slots.clone());
    if slots.is_empty() && matches!(source.spec.transport, SourceTransport::Http { .. }) {
        return sign_in(settings, &store, &source.spec, &name, &args);
    }
    // An API source whose connections sign in: this one signs in too.
    if let SourceTransport::OpenApi(api) = &source.spec.transport
        && (existing.is_some_and(|c| c.oauth.is_some())
            || (existing.is_none() && record.connections.iter().any(|c| c.oauth.is_some())))
    {
        return sign_in_api(settings, &store, ns, api, &name, &args);
    }
    if slots.is_empty() {
        bail!(
            "`{ns}` takes no credentials: it declares no `--env` or `--header` slots; to add some, \
             remove it and add it again with them"
        );
    }
    let is_new = existing.is_none();
    if is_new {
        eprintln!("adding connection `{name}` to `{ns}` with slots {}", slots.join(", "));
    }

    let values = if args.stdin {
        read_stdin(&slots)?
    } else if settings.no_input {
        return Err(UsageError(format!(
            "filling `{ns}/{name}` needs its values: run this at a terminal, or pipe them with `--stdin`, \
             one line per slot in this order: {}",
            slots.join(", ")
        ))
        .into());
    } else {
        let mut values = Vec::new();
        for slot in &slots {
            values.push(read_hidden(&format!("{slot} for {ns}/{name} (input hidden): "))?);
        }
        values
    };
    for (slot, value) in slots.iter().zip(&values) {
        check_value(slot, value).map_err(|why| UsageError(format!("{why}; nothing was stored")))?;
    }

    let secrets = SecretStore::open(&store)?;
    for (slot, value) in slots.iter().zip(&values) {
        secrets.set(&SlotKey { namespace: ns, connection: &name, slot }, value)?;
    }
    if is_new {
        record.connections.push(ConnectionRecord { name: name.clone(), slots: slots.clone(), oauth: None });
        if record.default.is_none() {
            record.default = Some(name.clone());
        }
        write_json(&store, &config::connections_path(ns), &record)?;
    }
    print_stdout(&format!(
        "filled {} of `{ns}` connection `{name}` in {}\n",
        slots.join(", "),
        secrets.describe()
    ))?;
    Ok(Exit::Ok.into())
}

/// Signs connection `name` of an HTTP source in with OAuth (again, or for the first time), and
/// reads the tools with it when the source has none yet (an imported server that wanted a
/// sign-in).
fn sign_in(
    settings: &Settings,
    store: &Store,
    spec: &SourceSpec,
    name: &str,
    args: &AuthArgs,
) -> Result<ExitCode> {
    let ns = spec.namespace.as_str();
    let challenge = match sources::list_tools(spec, &Credentials::default())? {
        Listed::AuthRequired { challenge, .. } => challenge,
        Listed::Tools(_) => bail!(
            "`{ns}` answers without credentials, so there is nothing to sign in to; to send a static key, \
             remove it and add it again with `--header`"
        ),
    };
    eprintln!("signing in to `{ns}` as connection `{name}` (OAuth)");
    let mut options = args.sign_in.options(settings)?;
    if options.scopes.is_empty() {
        options.scopes = wanted_scopes(store, ns, name)?;
    }
    let connected = flow::connect(spec, name, challenge, &options)?;
    let kept = flow::store_connection(store, ns, name, &connected.signed_in)?;
    let scopes = connected.signed_in.tokens.scopes.join(" ");
    print_stdout(&format!(
        "signed in `{ns}` connection `{name}`{}; the tokens are in {kept}\n",
        if scopes.is_empty() { String::new() } else { format!(" with scopes {scopes}") }
    ))?;
    let before: Option<Manifest> = read_json(store, &config::manifest_path(ns))?;
    if before.as_ref().is_none_or(|m| m.tools.is_empty()) && !connected.tools.entries.is_empty() {
        let namespace = capabilities_core::address::Namespace::new(ns).map_err(|e| anyhow::anyhow!("{e}"))?;
        let manifest = sources::build_manifest(&namespace, &connected.tools);
        write_json(store, &config::manifest_path(ns), &manifest)?;
        print_stdout(&format!("read {} tools of `{ns}`\n", manifest.tools.len()))?;
        let policy = config::load_policy(store)?;
        let items = review::needs_review(&manifest, &policy, None);
        review::review(settings, store, &items, args.yes)?;
    }
    Ok(Exit::Ok.into())
}

/// Signs connection `name` of an HTTP API source in again (or for the first time), with the
/// OAuth scheme of its document, read again from where it was added from.
fn sign_in_api(
    settings: &Settings,
    store: &Store,
    ns: &str,
    api: &capabilities_core::openapi::HttpApi,
    name: &str,
    args: &AuthArgs,
) -> Result<ExitCode> {
    let Some(location) = &api.document else {
        bail!("`{ns}` keeps no document location to read its OAuth scheme from; remove it and add it again");
    };
    let fetched = crate::openapi::fetch(location, true)?;
    let plan = match crate::oauth::api::plan(&fetched.document) {
        Some(plan) => plan.map_err(UsageError)?,
        None => bail!(
            "the document of `{ns}` ({location}) no longer declares an OAuth 2.0 or OpenID Connect scheme; \
             remove the source and add it again"
        ),
    };
    eprintln!("signing in to `{ns}` as connection `{name}` ({})", plan.describe());
    let mut options = args.sign_in.options(settings)?;
    if options.scopes.is_empty() {
        options.scopes = wanted_scopes(store, ns, name)?;
    }
    if options.scopes.is_empty() {
        options.scopes = crate::oauth::api::scopes(&fetched.document, &plan, &[]);
    }
    let signed_in = super::add_api::sign_in_now(ns, &api.base_url, &plan, &options)?;
    let kept = flow::store_connection(store, ns, name, &signed_in)?;
    let scopes = signed_in.tokens.scopes.join(" ");
    print_stdout(&format!(
        "signed in `{ns}` connection `{name}`{}; the tokens are in {kept}\n",
        if scopes.is_empty() { String::new() } else { format!(" with scopes {scopes}") }
    ))?;
    Ok(Exit::Ok.into())
}

/// What the connection had plus what a source asked for since (a step-up), when it asked for
/// anything; empty otherwise, so the server's challenge and metadata decide.
fn wanted_scopes(store: &Store, ns: &str, name: &str) -> Result<Vec<String>> {
    let record: ConnectionsRecord = read_json(store, &config::connections_path(ns))?.unwrap_or_default();
    let Some(client) = record.connections.iter().find(|c| c.name == name).and_then(|c| c.oauth.clone())
    else {
        return Ok(Vec::new());
    };
    let secrets = SecretStore::open(store)?;
    let stored = crate::oauth::tokens::read(&secrets, ns, name).ok().flatten().unwrap_or_default();
    if stored.wanted_scopes.is_empty() {
        return Ok(Vec::new());
    }
    eprintln!("asking for the scopes `{ns}` wanted: {}", stored.wanted_scopes.join(" "));
    let had = if stored.scopes.is_empty() { client.scopes } else { stored.scopes };
    Ok(flow::union(&had, stored.wanted_scopes))
}

/// One value per slot from stdin, a line each.
pub(super) fn read_stdin(slots: &[String]) -> Result<Vec<String>> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_STDIN_BYTES)
        .read_to_string(&mut text)
        .context("reading the values from stdin (UTF-8 text, one line per slot)")?;
    parse_lines(&text, slots).map_err(|why| UsageError(why).into())
}

/// Splits `text` into one value per slot; trailing empty lines do not count.
fn parse_lines(text: &str, slots: &[String]) -> Result<Vec<String>, String> {
    let mut lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    if lines.len() != slots.len() {
        return Err(format!(
            "stdin has {} line{}, and `--stdin` takes one per slot in this order: {}",
            lines.len(),
            if lines.len() == 1 { "" } else { "s" },
            slots.join(", ")
        ));
    }
    Ok(lines.into_iter().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_takes_one_line_per_slot() {
        let slots = vec!["A".to_owned(), "B".to_owned()];
        assert_eq!(parse_lines("one=1\r\ntwo\n\n", &slots).unwrap(), ["one=1", "two"]);
        assert_eq!(
            parse_lines("only\n", &slots).unwrap_err(),
            "stdin has 1 line, and `--stdin` takes one per slot in this order: A, B"
        );
    }
}
