//! `capabilities hub connections`: a source's connections, their slots, which slots hold a
//! value (never the value) and which connection is the default.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::print_stdout;
use crate::config::{self, ConnectionsRecord, read_json};
use crate::error::Exit;
use crate::secrets::{SecretStore, SlotKey, StoreKind};
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ConnectionsArgs {
    /// The namespace of the source (see `capabilities hub list`).
    pub namespace: String,
}

pub fn run(settings: &Settings, args: ConnectionsArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let (namespace, _) = sources::named_source(&store, &args.namespace)?;
    let ns = namespace.as_str();
    let record: ConnectionsRecord = read_json(&store, &config::connections_path(ns))?.unwrap_or_default();
    // Open the store only when some slot needs looking at.
    let secrets = if record.connections.iter().any(|c| !c.slots.is_empty()) {
        Some(SecretStore::open(&store)?)
    } else {
        None
    };
    let mut rows = Vec::new();
    for connection in &record.connections {
        let mut slots = Vec::new();
        for slot in &connection.slots {
            let key = SlotKey { namespace: ns, connection: &connection.name, slot };
            let filled = match &secrets {
                Some(secrets) => secrets.get(&key)?.is_some(),
                None => false,
            };
            slots.push((slot.clone(), filled));
        }
        rows.push((connection.name.clone(), record.default.as_ref() == Some(&connection.name), slots));
    }

    if settings.json {
        let store_kind = secrets.as_ref().map(|s| match s.kind() {
            StoreKind::Keychain => "keychain",
            StoreKind::File => "file",
        });
        let connections: Vec<_> = rows
            .iter()
            .map(|(name, default, slots)| {
                json!({
                    "name": name,
                    "default": default,
                    "slots": slots.iter().map(|(slot, filled)| json!({"name": slot, "filled": filled})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let out = json!({
            "namespace": ns,
            "default": record.default,
            "store": store_kind,
            "connections": connections,
        });
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
        return Ok(Exit::Ok.into());
    }

    if rows.is_empty() {
        print_stdout(&format!("`{ns}` has no connections: it takes no credentials\n"))?;
        return Ok(Exit::Ok.into());
    }
    let width = rows.iter().map(|(name, ..)| name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (name, default, slots) in &rows {
        let marker = if *default { "*" } else { " " };
        let slots: Vec<String> = slots
            .iter()
            .map(|(slot, filled)| format!("{slot} ({})", if *filled { "filled" } else { "empty" }))
            .collect();
        let slots = if slots.is_empty() { "no slots".to_owned() } else { slots.join(", ") };
        let _ = writeln!(out, "{marker} {name:<width$}  {slots}");
    }
    if let Some(secrets) = &secrets {
        let _ = writeln!(out, "(* is the default; values live in {})", secrets.describe());
    }
    if rows.iter().any(|(_, _, slots)| slots.iter().any(|(_, filled)| !filled)) {
        let _ = writeln!(out, "fill empty slots with `capabilities hub auth {ns} --connection <name>`");
    }
    print_stdout(&out)?;
    Ok(Exit::Ok.into())
}
