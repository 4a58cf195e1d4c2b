//! The `Secrets` port for OAuth connections: the stored access token while it is good; else a
//! refresh, by exactly one process at a time (the connection's lock file), the stored tokens
//! read again under the lock so that a token another process just rotated is used, not
//! refreshed again (which a rotating server would take for a replayed refresh token).

use capabilities_core::oauth::{self, OAuthClient, TokenError, TokenSet, sign_in_required};
use capabilities_core::ports::{Credentials, SecretsError};

use super::LocalSecrets;
use crate::oauth::tokens::{self, HttpTokenEndpoint};
use crate::platform::now_ms;

impl LocalSecrets {
    /// Credentials of an OAuth connection. `rejected` is the access token the source just
    /// refused, if it did: then only another token will do.
    pub(super) async fn oauth_credentials(
        &self,
        namespace: &str,
        connection: &str,
        client: &OAuthClient,
        rejected: Option<&str>,
    ) -> Result<Credentials, SecretsError> {
        let good =
            |tokens: &TokenSet| tokens.usable(now_ms()) && Some(tokens.access_token.as_str()) != rejected;
        let stored = self.read_tokens(namespace, connection).await?;
        if good(&stored) {
            return Ok(stored.credentials(connection));
        }
        let (lock, stored) = {
            let (ns, name) = (namespace.to_owned(), connection.to_owned());
            self.blocking(move |this| {
                let lock = tokens::lock(&this.store, &ns, &name)?;
                let stored = this.tokens_now(&ns, &name)?;
                Ok((lock, stored))
            })
            .await?
        };
        if good(&stored) {
            return Ok(stored.credentials(connection));
        }
        if let Some(reason) = &stored.needs_sign_in {
            return Err(sign_in_required(namespace, connection, reason));
        }
        let endpoint = HttpTokenEndpoint::new().map_err(SecretsError::Unavailable)?;
        let refreshed = oauth::refresh(client, &stored, &endpoint, now_ms()).await;
        let (ns, name) = (namespace.to_owned(), connection.to_owned());
        let result = match refreshed {
            Ok(fresh) => {
                let kept = fresh.clone();
                self.blocking(move |this| tokens::write(this.store()?, &ns, &name, &kept)).await?;
                Ok(fresh.credentials(connection))
            }
            Err(TokenError::Refused(said)) => {
                let why = format!("the authorization server refused to refresh its token ({said})");
                let refused = stored.refused(why.clone());
                self.blocking(move |this| tokens::write(this.store()?, &ns, &name, &refused)).await?;
                Err(sign_in_required(namespace, connection, &why))
            }
            Err(TokenError::Failed(why)) => Err(SecretsError::Unavailable(format!(
                "refreshing the OAuth token of `{namespace}/{connection}` failed: {why}; the next call tries \
                 again"
            ))),
        };
        drop(lock);
        result
    }

    /// Keeps the scopes a source asked for with the connection's tokens, for the next sign-in.
    pub(super) async fn note_wanted_scopes(
        &self,
        namespace: &str,
        connection: &str,
        wanted: Vec<String>,
    ) -> Result<(), SecretsError> {
        let (ns, name) = (namespace.to_owned(), connection.to_owned());
        self.blocking(move |this| {
            let _lock = tokens::lock(&this.store, &ns, &name)?;
            let mut stored = this.tokens_now(&ns, &name)?;
            let mut changed = false;
            for scope in wanted {
                if !stored.scopes.contains(&scope) && !stored.wanted_scopes.contains(&scope) {
                    stored.wanted_scopes.push(scope);
                    changed = true;
                }
            }
            if changed {
                tokens::write(this.store()?, &ns, &name, &stored)?;
            }
            Ok(())
        })
        .await
    }

    async fn read_tokens(&self, namespace: &str, connection: &str) -> Result<TokenSet, SecretsError> {
        // The file is read in place, as `resolve` reads it.
        if self.reads_file() {
            return self.tokens_now(namespace, connection);
        }
        // Kept from the keychain until its stamp changes, as `resolve` keeps values; a refresh
        // reads the keychain again under the connection's lock (`tokens_now`).
        let key = (namespace.to_owned(), connection.to_owned());
        self.kept(&self.known_tokens, key, |this, (ns, name)| this.tokens_now(ns, name)).await
    }

    /// The stored tokens (blocking); a connection never signed in needs signing in.
    fn tokens_now(&self, namespace: &str, connection: &str) -> Result<TokenSet, SecretsError> {
        match tokens::read(self.store()?, namespace, connection)? {
            Some(tokens) => {
                if let Some(reason) = &tokens.needs_sign_in {
                    return Err(sign_in_required(namespace, connection, reason));
                }
                Ok(tokens)
            }
            None => Err(sign_in_required(namespace, connection, "it has no tokens yet")),
        }
    }
}
