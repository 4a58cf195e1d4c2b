//! `capabilities hub remove`: forget a source, its manifest, connections and policy entries.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use super::print_stdout;
use super::review;
use crate::config::{self, ConnectionsRecord, read_json};
use crate::error::{Exit, UsageError};
use crate::secrets::SecretStore;
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The namespace of the source to remove (see `capabilities hub list`).
    pub namespace: String,
    /// Remove without asking.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: RemoveArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let (namespace, _) = sources::named_source(&store, &args.namespace)?;
    let ns = namespace.as_str();
    if !args.yes {
        if settings.no_input {
            return Err(UsageError(format!("removing `{ns}` needs your consent: pass `--yes`")).into());
        }
        let question = format!("Remove `{ns}`, its connections and its policy entries? [y/N] ");
        if !review::ask(settings, &question, false)? {
            bail!("`{ns}` was kept");
        }
    }
    let connections: ConnectionsRecord =
        read_json(&store, &config::connections_path(ns)).ok().flatten().unwrap_or_default();
    sources::remove_source(&store, &namespace)?;
    print_stdout(&format!("removed `{ns}`\n"))?;
    forget_secrets(&store, ns, &connections);
    Ok(Exit::Ok.into())
}

/// Deletes the values of the removed source's slots. The source is gone either way; a value
/// left behind is reported with what to do.
pub(super) fn forget_secrets(store: &Store, ns: &str, connections: &ConnectionsRecord) {
    if connections.connections.iter().all(|c| c.slots.is_empty()) {
        return;
    }
    match SecretStore::open(store).and_then(|secrets| secrets.forget_source(ns, connections)) {
        Ok(0) => {}
        Ok(n) => eprintln!("deleted {n} stored secret{} of `{ns}`", if n == 1 { "" } else { "s" }),
        Err(err) => eprintln!(
            "warning: the secrets of `{ns}` could not be deleted ({err}); delete the keychain items of \
             service `capabilities.sh` whose account starts with `{ns}/`"
        ),
    }
}
