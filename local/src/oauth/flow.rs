//! Signing a connection in from the CLI, as `hub add`, `hub auth` and `hub import` share it:
//! sign in, read the tools with the new token, and sign in again with more scopes when the
//! server answers `insufficient_scope` (a few times at most); then store the tokens and the
//! connection's record, tokens first, so a failure leaves nothing half-stored.

use anyhow::{Context, Result, anyhow, bail};
use capabilities_core::oauth::TokenSet;
use capabilities_core::ports::Credentials;

use super::tokens::{self, SLOT};
use super::{SignInOptions, SignedIn, sign_in};
use crate::config::{self, ConnectionRecord, ConnectionsRecord, read_json, write_json};
use crate::secrets::SecretStore;
use crate::sources::{self, Listed};
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport};

/// Most sign-ins one command runs when the server keeps asking for more scopes.
pub const MAX_SIGN_INS: usize = 3;

/// A signed-in connection and the tools its token reads.
#[derive(Debug)]
pub struct Connected {
    pub signed_in: SignedIn,
    pub tools: crate::sources::ToolList,
}

/// The credentials an access token makes.
pub fn bearer(connection: &str, access_token: &str) -> Credentials {
    Credentials {
        connection: Some(connection.to_owned()),
        values: vec![(SLOT.to_owned(), access_token.to_owned())],
    }
}

/// Signs `connection` of the HTTP source `spec` in, starting from the server's `challenge`,
/// and reads the tools with the token. Nothing is stored.
pub fn connect(
    spec: &SourceSpec,
    connection: &str,
    challenge: Option<String>,
    options: &SignInOptions,
) -> Result<Connected> {
    let SourceTransport::Http { url, .. } = &spec.transport else {
        bail!("`{}` is a local command; only a server reached by URL signs in with OAuth", spec.namespace);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut challenge = challenge;
    let mut options = options.clone();
    for attempt in 1..=MAX_SIGN_INS {
        let signed_in = runtime
            .block_on(sign_in(url, challenge.as_deref(), &options))
            .map_err(|why| anyhow!("signing `{}` in failed: {why}", spec.namespace))?;
        match sources::list_tools(spec, &bearer(connection, &signed_in.tokens.access_token))? {
            Listed::Tools(tools) => return Ok(Connected { signed_in, tools }),
            Listed::AuthRequired { status: 403, challenge: Some(header) }
                if header.contains("insufficient_scope") && attempt < MAX_SIGN_INS =>
            {
                eprintln!(
                    "the server asks for more scopes; signing in again ({} of {MAX_SIGN_INS})",
                    attempt + 1
                );
                options.scopes = union(&signed_in.client.scopes, TokenSet::challenge_scopes(&header));
                challenge = Some(header);
            }
            Listed::AuthRequired { status, .. } => bail!(
                "`{}` refused the token it just issued (HTTP {status}), {attempt} sign-in(s) in; nothing was \
                 stored. Check that the account may use this server",
                spec.namespace
            ),
        }
    }
    unreachable!("the last attempt returns")
}

/// Stores a signed-in connection: its tokens in the secret store, then its record (a new
/// connection is added; the first becomes the default). The tokens go again if the record
/// cannot be written.
pub fn store_connection(
    store: &Store,
    namespace: &str,
    connection: &str,
    signed_in: &SignedIn,
) -> Result<String> {
    let secrets = SecretStore::open(store)?;
    tokens::write(&secrets, namespace, connection, &signed_in.tokens)?;
    let written = (|| -> Result<()> {
        let _lock = store.lock(&format!("connections-{namespace}")).map_err(|e| anyhow!("{e}"))?;
        let path = config::connections_path(namespace);
        let mut record: ConnectionsRecord = read_json(store, &path)?.unwrap_or_default();
        let entry = ConnectionRecord {
            name: connection.to_owned(),
            slots: Vec::new(),
            oauth: Some(signed_in.client.clone()),
        };
        match record.connections.iter_mut().find(|c| c.name == connection) {
            Some(existing) => *existing = entry,
            None => record.connections.push(entry),
        }
        if record.default.is_none() {
            record.default = Some(connection.to_owned());
        }
        write_json(store, &path, &record)
    })();
    if let Err(err) = written {
        let _ = tokens::forget(&secrets, namespace, connection);
        return Err(err);
    }
    Ok(secrets.describe())
}

pub fn union(had: &[String], more: Vec<String>) -> Vec<String> {
    let mut all = had.to_vec();
    for scope in more {
        if !all.contains(&scope) {
            all.push(scope);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_up_asks_for_the_union() {
        let header =
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="x""#;
        assert_eq!(TokenSet::challenge_scopes(header), ["mcp:basic", "mcp:write"]);
        assert_eq!(TokenSet::challenge_scopes("Bearer error=insufficient_scope, scope=a"), ["a"]);
        assert!(TokenSet::challenge_scopes(r#"Bearer error="invalid_token", scope="a""#).is_empty());
        assert_eq!(
            union(&["mcp:basic".into(), "offline_access".into()], TokenSet::challenge_scopes(header)),
            ["mcp:basic", "offline_access", "mcp:write"]
        );
    }
}
