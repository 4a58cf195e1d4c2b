//! `capabilities hub connections`: a source's connections, each static (slots, which hold a
//! value, never the value) or OAuth (issuer, scopes, when the token expires, whether it needs a
//! sign-in), and which connection is the default.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::print_stdout;
use capabilities_core::oauth::{OAuthClient, TokenSet};

use crate::config::{self, ConnectionsRecord, read_json};
use crate::error::Exit;
use crate::oauth::tokens;
use crate::platform::now_ms;
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
    // Open the store only when some slot (or an OAuth connection's tokens) needs looking at.
    let secrets = if record.connections.iter().any(|c| !c.slots.is_empty() || c.oauth.is_some()) {
        Some(SecretStore::open(&store)?)
    } else {
        None
    };
    let now = now_ms();
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
        let oauth = match (&connection.oauth, &secrets) {
            (Some(client), Some(secrets)) => {
                let tokens = tokens::read(secrets, ns, &connection.name).unwrap_or(None);
                Some(OAuthState::of(client, tokens.as_ref(), now))
            }
            _ => None,
        };
        rows.push(Row {
            name: connection.name.clone(),
            default: record.default.as_ref() == Some(&connection.name),
            slots,
            oauth,
        });
    }

    if settings.json {
        let store_kind = secrets.as_ref().map(|s| match s.kind() {
            StoreKind::Keychain => "keychain",
            StoreKind::File => "file",
        });
        let connections: Vec<_> = rows
            .iter()
            .map(|row| {
                let mut entry = json!({
                    "name": row.name,
                    "default": row.default,
                    "kind": if row.oauth.is_some() { "oauth" } else { "static" },
                    "slots": row.slots.iter().map(|(slot, filled)| json!({"name": slot, "filled": filled})).collect::<Vec<_>>(),
                });
                if let Some(oauth) = &row.oauth {
                    entry["oauth"] = json!({
                        "issuer": oauth.issuer,
                        "scopes": oauth.scopes,
                        "expiresMs": oauth.expires_ms,
                        "needsSignIn": oauth.needs_sign_in,
                        "wantedScopes": oauth.wanted_scopes,
                    });
                }
                entry
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
        print_stdout(&format!(
            "`{ns}` has no connections: it takes no credentials, or (a server that wants a sign-in) \
             has not signed in yet; sign in with `capabilities hub auth {ns}`\n"
        ))?;
        return Ok(Exit::Ok.into());
    }
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for row in &rows {
        let marker = if row.default { "*" } else { " " };
        let what = match &row.oauth {
            Some(oauth) => oauth.describe(now),
            None => {
                let slots: Vec<String> = row
                    .slots
                    .iter()
                    .map(|(slot, filled)| format!("{slot} ({})", if *filled { "filled" } else { "empty" }))
                    .collect();
                let slots = if slots.is_empty() { "no slots".to_owned() } else { slots.join(", ") };
                format!("static: {slots}")
            }
        };
        let _ = writeln!(out, "{marker} {:<width$}  {what}", row.name);
    }
    if let Some(secrets) = &secrets {
        let _ = writeln!(out, "(* is the default; values live in {})", secrets.describe());
    }
    if rows.iter().any(|row| row.slots.iter().any(|(_, filled)| !filled)) {
        let _ = writeln!(out, "fill empty slots with `capabilities hub auth {ns} --connection <name>`");
    }
    for row in rows.iter().filter(|row| {
        row.oauth.as_ref().is_some_and(|o| o.needs_sign_in.is_some() || !o.wanted_scopes.is_empty())
    }) {
        let _ = writeln!(
            out,
            "sign `{}` in again with `capabilities hub auth {ns} --connection {}`",
            row.name, row.name
        );
    }
    print_stdout(&out)?;
    Ok(Exit::Ok.into())
}

struct Row {
    name: String,
    default: bool,
    slots: Vec<(String, bool)>,
    oauth: Option<OAuthState>,
}

/// What a person sees of an OAuth connection: never a token.
pub struct OAuthState {
    pub issuer: String,
    pub scopes: Vec<String>,
    pub expires_ms: Option<u64>,
    pub needs_sign_in: Option<String>,
    pub wanted_scopes: Vec<String>,
    pub can_refresh: bool,
}

impl OAuthState {
    pub fn of(client: &OAuthClient, tokens: Option<&TokenSet>, _now: u64) -> OAuthState {
        let needs_sign_in = match tokens {
            None => Some("it has no tokens".to_owned()),
            Some(tokens) => tokens.needs_sign_in.clone(),
        };
        let scopes = tokens
            .map(|t| t.scopes.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| client.scopes.clone());
        OAuthState {
            issuer: client.issuer.clone(),
            scopes,
            expires_ms: tokens.and_then(|t| t.expires_ms),
            needs_sign_in,
            wanted_scopes: tokens.map(|t| t.wanted_scopes.clone()).unwrap_or_default(),
            can_refresh: tokens.is_some_and(|t| t.refresh_token.is_some()),
        }
    }

    /// One line: kind, issuer, scopes, and when the token expires or why it needs a sign-in.
    pub fn describe(&self, now: u64) -> String {
        let mut line = format!("oauth via {}", self.issuer);
        if !self.scopes.is_empty() {
            let _ = write!(line, ", scopes {}", self.scopes.join(" "));
        }
        match (&self.needs_sign_in, self.expires_ms) {
            (Some(why), _) => {
                let _ = write!(line, "; needs sign-in ({why})");
            }
            (None, Some(expires)) if expires > now => {
                let _ = write!(line, "; token expires in {}", duration((expires - now) / 1000));
            }
            (None, Some(_)) if self.can_refresh => {
                line.push_str("; token expired, refreshed on the next call")
            }
            (None, Some(_)) => line.push_str("; token expired and cannot be refreshed: sign in again"),
            (None, None) => line.push_str("; token without an expiry"),
        }
        if !self.wanted_scopes.is_empty() {
            let _ = write!(line, "; the server wants {} too", self.wanted_scopes.join(" "));
        }
        line
    }
}

fn duration(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}
